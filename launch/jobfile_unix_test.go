//go:build unix

package launch

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"colo/internal/colotest"
)

// TestReadJobFileRefusesNonRegular checks that a job file that is not a
// regular file is refused at once, naming the path and what it is: a
// named pipe nobody writes to (opening it would wait for ever), a
// directory, a device that never ends.
func TestReadJobFileRefusesNonRegular(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "job.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	job := filepath.Join(dir, "job.json")
	if err := os.WriteFile(job, []byte(`{"kind": "smoke", "job": {}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ path, want string }{
		{fifo, "is a named pipe (FIFO), not a regular file"},
		{dir, "is a directory, not a regular file"},
		{"/dev/zero", "is a device, not a regular file"},
	} {
		done := make(chan error, 1)
		go func() {
			_, err := ReadEnvelopeFile(tc.path)
			done <- err
		}()
		var err error
		select {
		case err = <-done:
		case <-time.After(colotest.HangTimeout(t)):
			// Open the pipe's other end so that the reader ends.
			if f, oerr := os.OpenFile(fifo, os.O_WRONLY, 0); oerr == nil {
				f.Close()
			}
			t.Fatalf("ReadEnvelopeFile(%s) still waits after %v", tc.path, colotest.HangTimeout(t))
		}
		if err == nil || !strings.Contains(err.Error(), tc.path+" "+tc.want) {
			t.Errorf("ReadEnvelopeFile(%s) = %v, want an error saying %q", tc.path, err, tc.path+" "+tc.want)
		}
	}
	env, err := ReadEnvelopeFile(job)
	if err != nil || env.Kind != "smoke" {
		t.Fatalf("ReadEnvelopeFile(%s) = %+v, %v; want the smoke job", job, env, err)
	}
}
