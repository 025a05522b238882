package deploy

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// coloBin is the colo binary TestMain builds for the tests that run a
// real cluster; empty when go is not on PATH.
var coloBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "deploy-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if _, err := exec.LookPath("go"); err == nil {
		bin := filepath.Join(dir, "colo")
		if out, err := exec.Command("go", "build", "-o", bin, "colo/cmd/colo").CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "build colo: %v\n%s", err, out)
			os.RemoveAll(dir)
			os.Exit(1)
		}
		coloBin = bin
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// needColo skips t without the colo binary.
func needColo(t *testing.T) {
	t.Helper()
	if coloBin == "" {
		t.Skip("go is not on PATH: cannot build the colo binary")
	}
}
