// Package colotest holds what the tests of several packages share: the
// bound of their waits for events (HangTimeout), and, to run real
// clusters of processes, the colo binary, built once per test
// process from this module's cmd/colo, and a temporary directory of the
// test process's own that holds it and everything the tests and their
// processes make in $TMPDIR (t.TempDir's directories among them).
//
// A test process that dies before its cleanups run (go test's -timeout
// panics, a SIGKILL) leaves that one directory behind, named after its
// process id; the next test process that starts removes the directories
// of processes no longer running (Sweep).
//
//	var coloBin string
//
//	func TestMain(m *testing.M) { os.Exit(colotest.Main(m, &coloBin)) }
//
//	func TestCluster(t *testing.T) {
//		colotest.Need(t, coloBin)
//		exec.Command(coloBin, "launch", …)
//	}
//
// Race tells a test whether it runs under the race detector.
//
// HangTimeout bounds a test's wait for an event, so that a hang fails
// the test naming what it waited for, while code that is merely slow on
// a loaded machine never does:
//
//	select {
//	case m := <-ep.Recv():
//		…
//	case <-time.After(colotest.HangTimeout(t)):
//		t.Fatal("no message")
//	}
//
// It is imported only by tests.
package colotest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Package is the import path of the colo command.
const Package = "colo/cmd/colo"

// prefix starts the name of a test process's temporary directory, which
// goes on with the process's id and a dash.
const prefix = "colo-test-"

// Main removes what test processes no longer running left in the
// system's temporary directory (Sweep), makes a temporary directory of
// this process's own and points $TMPDIR at it, builds the colo binary
// into it and sets *bin to its path (left empty when go is not on PATH:
// the tests that need it skip, see Need), runs m's tests, removes the
// directory and returns the exit code for os.Exit. A failed build is
// reported and returns 1 without running the tests.
func Main(m *testing.M, bin *string) int {
	parent := os.TempDir()
	Sweep(parent)
	dir, err := os.MkdirTemp(parent, prefix+strconv.Itoa(os.Getpid())+"-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	if err := os.Setenv("TMPDIR", dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	binDir := filepath.Join(dir, "bin")
	if err := os.Mkdir(binDir, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if path, err := Build(binDir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	} else {
		*bin = path
	}
	return m.Run()
}

// Build builds the colo binary into dir and returns its path: "" and no
// error when go is not on PATH.
func Build(dir string) (string, error) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		return "", nil
	}
	bin := filepath.Join(dir, "colo")
	if out, err := exec.Command(gobin, "build", "-o", bin, Package).CombinedOutput(); err != nil {
		return "", fmt.Errorf("build %s: %v\n%s", Package, err, out)
	}
	return bin, nil
}

// maxHang is HangTimeout's bound when the test has no nearer deadline.
const maxHang = time.Minute

// HangTimeout is how long a test waits for an event it expects (a
// message, a failure report, a log line, a process's end) before it
// calls the wait a hang and fails. It only turns a hang into a failure:
// no event a test awaits takes that long on a machine of two cores at a
// load of 40, under -race, so it does not fire while the code is merely
// slow. It is a minute, or, when go test's -timeout ends sooner, nine
// tenths of the time left to it, so that the test's own failure, not
// go test's panic, reports the hang; never less than a second.
//
// A test whose property is about time (a timeout that must fire) bounds
// that by its own configured timeout with a wide margin, not by this.
func HangTimeout(tb testing.TB) time.Duration {
	d := maxHang
	if t, ok := tb.(interface{ Deadline() (time.Time, bool) }); ok {
		if end, ok := t.Deadline(); ok {
			left := time.Until(end)
			d = min(d, left-left/10)
		}
	}
	return max(d, time.Second)
}

// Need skips t when bin, the path Main set, is empty.
func Need(t testing.TB, bin string) {
	t.Helper()
	if bin == "" {
		t.Skip("go is not on PATH: cannot build the colo binary")
	}
}

// Sweep removes the temporary directories that Main made in parent for
// test processes that are no longer running (no /proc/<pid>): a process
// that died before its cleanups ran. The directories of running
// processes, and every other name, are left alone.
func Sweep(parent string) {
	if _, err := os.Stat("/proc/self"); err != nil {
		return // no /proc: no way to tell which processes run
	}
	ents, err := os.ReadDir(parent)
	if err != nil {
		return
	}
	for _, e := range ents {
		rest, ok := strings.CutPrefix(e.Name(), prefix)
		if !ok || !e.IsDir() {
			continue
		}
		id, _, ok := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(id)
		if !ok || err != nil || pid <= 0 || pid == os.Getpid() {
			continue
		}
		if _, err := os.Stat("/proc/" + id); err == nil || !os.IsNotExist(err) {
			continue // running, or no way to tell
		}
		os.RemoveAll(filepath.Join(parent, e.Name()))
	}
}
