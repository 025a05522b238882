package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestOutputKinds: the commands' outputs go through atomicfile: a 0600
// file stays 0600, /dev/null stays the device it is (and gets no PNG
// beside it), --json=/dev/stdout is standard output as --json=- is, and
// an output that cannot be written (--metrics-file in sysfs, which takes
// no new file even from root; --checkpoint under a file) fails before the
// data is loaded.
func TestOutputKinds(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "d.svm")
	if code, _, errOut := colo(t, "gen", "sparse", "-n", "200", "-m", "100", "-o", data); code != 0 {
		t.Fatalf("gen: exit %d: %s", code, errOut)
	}

	private := filepath.Join(dir, "private.svm")
	if err := os.WriteFile(private, []byte("old\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := colo(t, "gen", "sparse", "-n", "200", "-m", "100", "-o", private); code != 0 {
		t.Fatalf("gen -o %s: exit %d: %s", private, code, errOut)
	}
	if st, err := os.Stat(private); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("%s: mode %v (%v), want 0600 kept", private, st.Mode(), err)
	}
	if b, _ := os.ReadFile(private); strings.HasPrefix(string(b), "old") || !strings.Contains(string(b), ":") {
		t.Errorf("%s holds %.40q, want libsvm", private, b)
	}

	const null = "/dev/null"
	before, err := os.Lstat(null)
	if err != nil || before.Mode()&os.ModeCharDevice == 0 {
		t.Skipf("no character device %s here", null)
	}
	if code, _, errOut := colo(t, "gen", "sparse", "-n", "200", "-m", "100", "-o", null); code != 0 {
		t.Fatalf("gen -o %s: exit %d: %s", null, code, errOut)
	}
	if code, _, errOut := colo(t, "train", data, "--svg", null, "--json="+null); code != 0 {
		t.Fatalf("train --svg %s: exit %d: %s", null, code, errOut)
	}
	after, err := os.Lstat(null)
	if err != nil || after.Mode() != before.Mode() || after.Sys().(*syscall.Stat_t).Rdev != before.Sys().(*syscall.Stat_t).Rdev {
		t.Errorf("%s changed: %v -> %v (%v)", null, before.Mode(), after.Mode(), err)
	}
	if _, err := os.Lstat(null + ".png"); err == nil {
		os.Remove(null + ".png")
		t.Errorf("train --svg %s wrote %s.png", null, null)
	}

	code, out, errOut := colo(t, "train", data, "--json=/dev/stdout")
	var rec map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &rec) != nil || rec["command"] != "colo train" {
		t.Errorf("train --json=/dev/stdout: exit %d, standard output %.80q, want the JSON alone (%s)", code, out, errOut)
	}

	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--metrics-file", "/sys/colo.prom"}, "--metrics-file: cannot write /sys/colo.prom: open /sys/.colo-probe-"},
		{[]string{"--checkpoint", filepath.Join(file, "ck"), "--checkpoint-every", "5"}, "--checkpoint: cannot write into " + file + "/ck: " + file + " is not a directory"},
	} {
		if c.args[0] == "--metrics-file" {
			if _, err := os.Stat("/sys"); err != nil {
				continue
			}
		}
		code, _, errOut := colo(t, append([]string{"train", data}, c.args...)...)
		if code != 1 || !strings.Contains(errOut, c.want) {
			t.Errorf("train %q: exit %d, %q; want 1 and %q", c.args, code, errOut, c.want)
		}
		if strings.Contains(errOut, "load ") {
			t.Errorf("train %q loaded the data before failing: %q", c.args, errOut)
		}
	}
}
