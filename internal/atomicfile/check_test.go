package atomicfile

import (
	"os"
	"path/filepath"
	"testing"
)

// TestCheck: writable places pass without anything left behind; a file
// in a missing directory, a directory in place of a file, a file in place
// of a directory and a read-only directory are refused with their path.
func TestCheck(t *testing.T) {
	root := t.TempDir()
	file := filepath.Join(root, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	ro := filepath.Join(root, "ro")
	if err := os.Mkdir(ro, 0o555); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{filepath.Join(root, "new.json"), file} {
		if err := CheckFile(p); err != nil {
			t.Errorf("CheckFile(%s): %v", p, err)
		}
	}
	for _, p := range []string{root, filepath.Join(root, "a", "b", "c")} {
		if err := CheckDir(p); err != nil {
			t.Errorf("CheckDir(%s): %v", p, err)
		}
	}
	if _, err := os.Stat(filepath.Join(root, "a")); err == nil {
		t.Error("CheckDir made a directory")
	}
	for _, c := range []struct {
		err  error
		want string
	}{
		{CheckFile(filepath.Join(root, "missing", "x.json")), "cannot write " + root + "/missing/x.json: directory " + root + "/missing does not exist"},
		{CheckFile(root), "cannot write " + root + ": it is a directory"},
		{CheckFile(filepath.Join(file, "x.json")), "cannot write " + file + "/x.json: " + file + " is not a directory"},
		{CheckDir(filepath.Join(file, "out")), "cannot write into " + file + "/out: " + file + " is not a directory"},
	} {
		if c.err == nil || c.err.Error() != c.want {
			t.Errorf("got %v\nwant %s", c.err, c.want)
		}
	}
	if os.Geteuid() != 0 { // root writes anywhere
		want := "cannot write into " + ro + "/out: open " + ro + "/.colo-probe-"
		if err := CheckDir(filepath.Join(ro, "out")); err == nil || len(err.Error()) < len(want) || err.Error()[:len(want)] != want {
			t.Errorf("read-only: %v, want %s…", err, want)
		}
	}
	entries, _ := os.ReadDir(root)
	if len(entries) != 2 {
		t.Errorf("left behind: %v", entries)
	}
}
