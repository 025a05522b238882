// Package tempdir makes the temporary directories of a run and removes
// them on every exit the process sees: the return of the function that
// made them (Remove, deferred) and the signals that stop a command
// (Stop: SIGINT from the terminal, SIGTERM from a supervisor, SIGHUP from
// a closed terminal or a dropped ssh session), which it turns into a
// cancelled context so that the deferred removals run. Only SIGKILL, and
// a crash of the machine, leave a directory behind; a directory that
// cannot be removed is named in the error.
//
// Example:
//
//	func run(ctx context.Context) (err error) {
//		ctx, stop := tempdir.Stop(ctx)
//		defer stop()
//		dir, err := tempdir.Make("colo-job-")
//		if err != nil {
//			return err
//		}
//		defer tempdir.Remove(dir, &err)
//		… work in dir until done or ctx ends …
//	}
package tempdir

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

// Signals are the signals that stop a command: Stop catches them.
func Signals() []os.Signal {
	return []os.Signal{os.Interrupt, syscall.SIGTERM, syscall.SIGHUP}
}

// Stop returns a context that ends when ctx does or when one of Signals
// arrives, and stop, which restores their default handling. A command
// that makes temporary files (here or in the processes it starts) runs
// under it so that a signal unwinds it through its deferred removals
// instead of ending the process where it stands.
func Stop(ctx context.Context) (context.Context, context.CancelFunc) {
	return signal.NotifyContext(ctx, Signals()...)
}

// Make creates a new directory in the system's temporary directory
// ($TMPDIR, or /tmp) whose name starts with prefix. The error names where.
func Make(prefix string) (string, error) {
	dir, err := os.MkdirTemp("", prefix+"*")
	if err != nil {
		return "", fmt.Errorf("temporary directory in %s: %w", os.TempDir(), err)
	}
	return dir, nil
}

// Remove removes dir and everything in it. When that fails, the error
// naming dir (so that the user can remove it) is joined to *err; err may
// be nil to get nothing back. Defer it right after Make.
func Remove(dir string, err *error) {
	rerr := os.RemoveAll(dir)
	if rerr == nil || err == nil {
		return
	}
	*err = errors.Join(*err, fmt.Errorf("temporary directory %s left behind: %w", dir, rerr))
}
