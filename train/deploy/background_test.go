package deploy

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"colo/app"
	"colo/checkpoint"
	"colo/train"
)

// outcome is what a deployment returned.
type outcome struct {
	res *train.Result
	err error
}

// background is a deployment running in its own goroutine, for the tests
// that kill or stop its processes while it trains.
type background struct {
	done chan outcome
}

// deployInBackground starts deploying job on d.
func deployInBackground(t *testing.T, job train.Job, opened *app.Opened, d train.Deployer) *background {
	t.Helper()
	b := &background{done: make(chan outcome, 1)}
	go func() {
		res, err := deploy(t, job, opened, d)
		b.done <- outcome{res, err}
	}()
	return b
}

// awaitCheckpoint returns once the newest checkpoint in dir is of round
// at least round, and the child processes that each match accepts then
// run (one each: see child). It fails the test if the job ends before,
// or if a match finds no process once the checkpoint is there: the
// checkpoint, written while the job trains, is the event that the tests
// killing a process mid-training wait for.
func (b *background) awaitCheckpoint(t *testing.T, dir string, round int, matches ...func(line string) bool) []int {
	t.Helper()
	poll := time.NewTicker(2 * time.Millisecond)
	defer poll.Stop()
	for {
		select {
		case r := <-b.done:
			t.Fatalf("the job ended (%v) before the checkpoint of round %d", r.err, round)
		case <-poll.C:
		}
		if m, _, err := checkpoint.Latest(dir); err != nil || m.Round < round {
			continue
		}
		pids := make([]int, len(matches))
		for i, match := range matches {
			if pids[i] = child(match); pids[i] == 0 {
				t.Fatalf("the checkpoint of round %d is written, and child process %d of %d is not found", round, i+1, len(matches))
			}
		}
		return pids
	}
}

// wait returns the deployment's outcome; what says what was done to it,
// for the failure of a deployment that still runs after limit (a guard
// against a hang, not a measure of time).
func (b *background) wait(t *testing.T, limit time.Duration, what string) outcome {
	t.Helper()
	select {
	case r := <-b.done:
		return r
	case <-time.After(limit):
		t.Fatalf("the job still runs %v after %s", limit, what)
		return outcome{}
	}
}

// signal sends sig to each process, failing the test if it cannot.
func signal(t *testing.T, sig syscall.Signal, pids ...int) {
	t.Helper()
	for _, pid := range pids {
		if err := syscall.Kill(pid, sig); err != nil {
			t.Fatalf("signal %v to process %d: %v", sig, pid, err)
		}
	}
}

// child returns a child process of this one whose command line match
// accepts, 0 if none.
func child(match func(line string) bool) int {
	for pid, line := range children(os.Getpid()) {
		if match(line) {
			return pid
		}
	}
	return 0
}

// role matches the command line of the first process of role and rank
// the deployment started (not a replacement started with --recover, nor
// a scheduler started with --takeover); a rank below 0 matches any. The
// arguments of a line of children end with a space each.
func role(name string, rank int) func(line string) bool {
	return func(line string) bool {
		return strings.Contains(line, " --role "+name+" ") &&
			(rank < 0 || strings.Contains(line, " --rank "+strconv.Itoa(rank)+" ")) &&
			!strings.Contains(line, " --recover ") && !strings.Contains(line, " --takeover ")
	}
}
