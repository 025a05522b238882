package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestSignalRemovesTempDirs: colo train --processes stopped by SIGINT
// (the terminal), SIGTERM (a supervisor) or SIGHUP (a closed terminal)
// while its nodes run stops the cluster, exits 1 saying which signal, and
// leaves nothing in $TMPDIR.
func TestSignalRemovesTempDirs(t *testing.T) {
	if testing.Short() {
		t.Skip("starts clusters of processes")
	}
	data := filepath.Join(t.TempDir(), "d.svm")
	if out, err := exec.Command(coloBin, "gen", "sparse", "-n", "400", "-m", "200", "-o", data).CombinedOutput(); err != nil {
		t.Fatalf("gen: %v: %s", err, out)
	}
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP} {
		tmp := t.TempDir()
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		cmd := exec.CommandContext(ctx, coloBin, "train", data, "--processes", "--max-passes", "1000000", "--epsilon", "0")
		cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
		var errOut bytes.Buffer
		cmd.Stderr = &errOut
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Signal once the temporary directory is there and a node runs.
		for ctx.Err() == nil {
			ents, _ := os.ReadDir(tmp)
			if len(ents) > 0 && len(children(cmd.Process.Pid)) > 0 {
				break
			}
			time.Sleep(time.Millisecond)
		}
		if err := cmd.Process.Signal(sig); err != nil {
			t.Fatal(err)
		}
		err := cmd.Wait()
		cancel()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.Contains(errOut.String(), sig.String()+" signal received") {
			t.Errorf("%v: %v, want exit 1 naming the signal; standard error:\n%s", sig, err, errOut.String())
		}
		if ents, _ := os.ReadDir(tmp); len(ents) > 0 {
			var names []string
			for _, e := range ents {
				names = append(names, e.Name())
			}
			t.Errorf("%v: left in $TMPDIR: %q", sig, names)
		}
	}
}
