// Package colotest holds what the tests of several packages share to run
// real clusters of processes: the colo binary, built once per test
// process from this module's cmd/colo.
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
// It is imported only by tests.
package colotest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Package is the import path of the colo command.
const Package = "colo/cmd/colo"

// Main builds the colo binary into a temporary directory and sets *bin to
// its path (left empty when go is not on PATH: the tests that need it
// skip, see Need), runs m's tests, removes the directory and returns the
// exit code for os.Exit. A failed build is reported and returns 1
// without running the tests.
func Main(m *testing.M, bin *string) int {
	dir, err := os.MkdirTemp("", "colo-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	if path, err := Build(dir); err != nil {
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

// Need skips t when bin, the path Main set, is empty.
func Need(t testing.TB, bin string) {
	t.Helper()
	if bin == "" {
		t.Skip("go is not on PATH: cannot build the colo binary")
	}
}
