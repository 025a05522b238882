package tempdir

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestMakeRemove: Make makes a directory under $TMPDIR with the prefix;
// Remove removes it with what it holds and leaves the error as it was.
func TestMakeRemove(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	dir, err := Make("colo-test-")
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(dir) != tmp || !strings.HasPrefix(filepath.Base(dir), "colo-test-") {
		t.Fatalf("made %s, want colo-test-* in %s", dir, tmp)
	}
	if err := os.WriteFile(filepath.Join(dir, "job.json"), []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	err = boom
	Remove(dir, &err)
	if err != boom {
		t.Errorf("error became %v", err)
	}
	if _, serr := os.Stat(dir); !errors.Is(serr, os.ErrNotExist) {
		t.Errorf("%s still there: %v", dir, serr)
	}
}

// TestRemoveNamesTheDirectory: a directory that cannot be removed is
// named in the error, joined to the error there was. (os.RemoveAll
// refuses a path ending in ".", for root too, touching nothing.)
func TestRemoveNamesTheDirectory(t *testing.T) {
	dir := t.TempDir() + "/."
	boom := errors.New("boom")
	err := boom
	Remove(dir, &err)
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), "temporary directory "+dir+" left behind: ") {
		t.Errorf("got %v, want boom and the directory named", err)
	}
}

// TestStopOnSignals: each of the signals that stop a command ends Stop's
// context instead of the process.
func TestStopOnSignals(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP} {
		ctx, stop := Stop(context.Background())
		if err := syscall.Kill(os.Getpid(), sig); err != nil {
			t.Fatal(err)
		}
		<-ctx.Done()
		stop()
		if !strings.Contains(context.Cause(ctx).Error(), sig.String()) {
			t.Errorf("%v: context ended with %v", sig, context.Cause(ctx))
		}
	}
}

// TestRemoveOnSignal: a process stopped by a signal while RemoveOnSignal
// watches removes the directory and ends by that signal. The test runs
// itself as that process (COLO_TEMPDIR_CHILD).
func TestRemoveOnSignal(t *testing.T) {
	if os.Getenv("COLO_TEMPDIR_CHILD") != "" {
		dir, err := Make("colo-child-")
		if err != nil {
			os.Exit(3)
		}
		RemoveOnSignal(dir)
		fmt.Println(dir)
		select {} // until the signal
	}
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP} {
		tmp := t.TempDir()
		cmd := exec.Command(os.Args[0], "-test.run=^TestRemoveOnSignal$")
		cmd.Env = append(os.Environ(), "COLO_TEMPDIR_CHILD=1", "TMPDIR="+tmp)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		dir, err := bufio.NewReader(out).ReadString('\n') // the directory exists and the handler is on
		if err != nil {
			t.Fatal(err)
		}
		dir = strings.TrimSpace(dir)
		if _, err := os.Stat(dir); err != nil {
			t.Fatalf("%v: %v", sig, err)
		}
		cmd.Process.Signal(sig)
		err = cmd.Wait()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != sig && exit.ExitCode() != 128+int(sig) {
			t.Errorf("%v: the child ended with %v, want the signal", sig, err)
		}
		if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%v: %s still there (%v)", sig, dir, err)
		}
	}
}
