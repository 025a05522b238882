package colotest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// TestSweep removes the directory of a test process that has ended and
// leaves that of this process, of a running one (init, process 1),
// names that are not a process's directory, and a file.
func TestSweep(t *testing.T) {
	if _, err := os.Stat("/proc/self"); err != nil {
		t.Skip("no /proc")
	}
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh on PATH")
	}
	ended := exec.Command(sh, "-c", "exit 0")
	if err := ended.Run(); err != nil {
		t.Fatal(err)
	}
	dead := strconv.Itoa(ended.Process.Pid)
	parent := t.TempDir()
	gone := prefix + dead + "-12345"
	kept := []string{prefix + strconv.Itoa(os.Getpid()) + "-1", prefix + "1-2", prefix + "x-3", prefix + dead, "colo-bin-" + dead}
	for _, name := range append(kept, gone) {
		if err := os.MkdirAll(filepath.Join(parent, name, "sub"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(parent, name, "sub", "f"), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	file := prefix + dead + "-file"
	if err := os.WriteFile(filepath.Join(parent, file), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	kept = append(kept, file)
	Sweep(parent)
	if _, err := os.Stat(filepath.Join(parent, gone)); !os.IsNotExist(err) {
		t.Errorf("%s, of process %s that ended: %v, want it removed", gone, dead, err)
	}
	for _, name := range kept {
		if _, err := os.Stat(filepath.Join(parent, name)); err != nil {
			t.Errorf("%s: %v, want it left", name, err)
		}
	}
}

// TestMainTempDir: the tests of a process that Main runs make their
// temporary files in its directory, named after the process.
func TestMainTempDir(t *testing.T) {
	want := prefix + strconv.Itoa(os.Getpid()) + "-"
	if got := filepath.Base(os.TempDir()); len(got) <= len(want) || got[:len(want)] != want {
		t.Errorf("$TMPDIR %s, want a directory named %s…", os.TempDir(), want)
	}
	if got := filepath.Dir(t.TempDir()); filepath.Dir(got) != os.TempDir() {
		t.Errorf("t.TempDir in %s, want it in %s", got, os.TempDir())
	}
}

var coloBin string

func TestMain(m *testing.M) { os.Exit(Main(m, &coloBin)) }

// TestHangTimeout: a minute at most, within go test's deadline when it
// has one (with a tenth of the time left to spare), and a minute for a
// testing.TB that has no deadline.
func TestHangTimeout(t *testing.T) {
	d := HangTimeout(t)
	if d <= 0 || d > maxHang {
		t.Fatalf("HangTimeout = %v, want in (0, %v]", d, maxHang)
	}
	if end, ok := t.Deadline(); ok {
		if left := time.Until(end); d > left-left/20 {
			t.Fatalf("HangTimeout = %v with %v left before go test's deadline", d, left)
		}
	}
	noDeadline := struct{ testing.TB }{t}
	if d := HangTimeout(noDeadline); d != maxHang {
		t.Fatalf("HangTimeout without a deadline = %v, want %v", d, maxHang)
	}
}
