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
	"sync"
	"syscall"
	"time"
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
	return MakeIn("", prefix)
}

// MakeIn is Make in the directory parent ("": the system's).
func MakeIn(parent, prefix string) (string, error) {
	dir, err := os.MkdirTemp(parent, prefix+"*")
	if err != nil {
		if parent == "" {
			parent = os.TempDir()
		}
		return "", fmt.Errorf("temporary directory in %s: %w", parent, err)
	}
	return dir, nil
}

// RemoveOnSignal is for work that cannot be cancelled (a computation
// that takes no context): until stop is called, one of Signals removes
// dirs and then ends the process by that signal, as its default handling
// would have (or, when another handler catches it, with status 128 + the
// signal's number, as a shell reports it), so that the exit status still
// says which.
func RemoveOnSignal(dirs ...string) (stop func()) {
	c := make(chan os.Signal, 1)
	signal.Notify(c, Signals()...)
	done := make(chan struct{})
	go func() {
		select {
		case sig := <-c:
			for _, d := range dirs {
				os.RemoveAll(d)
			}
			signal.Stop(c)
			if s, ok := sig.(syscall.Signal); ok {
				syscall.Kill(os.Getpid(), s) // the default handling, now restored
				time.Sleep(time.Second)      // for its delivery
				os.Exit(128 + int(s))        // as a shell reports the signal, if it was caught
			}
			os.Exit(1)
		case <-done:
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			signal.Stop(c)
			close(done)
		})
	}
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
