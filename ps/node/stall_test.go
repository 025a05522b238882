package node

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"colo/transport"
	"colo/transport/tcp"
)

// stalledChild is set in the process that TestWholeProcessStopped runs
// and stops.
const stalledChild = "COLO_TEST_STOPPED_PROCESS"

// TestWholeProcessStopped runs a scheduler and two machines in one
// process (a child of the test), stops that process whole (SIGSTOP: a
// machine frozen or starved, the scheduler with its nodes) for longer
// than the timeout, and lets it run again: every node finds it did not
// run for longer than the timeout, but the scheduler did not run either
// and declared nobody failed; the nodes hear it again and the job goes
// on and ends well. (Before, each node took its own stop for the
// scheduler's verdict and ended as replaced.) A send in flight at the
// stop can still fail the job when its deadline passed during the stop:
// that is logged, not failed.
func TestWholeProcessStopped(t *testing.T) {
	const timeout = time.Second
	if os.Getenv(stalledChild) != "" {
		runStoppedChild(t, timeout)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^TestWholeProcessStopped$", "-test.count", "1", "-test.cpu", "2")
	cmd.Env = append(os.Environ(), stalledChild+"=1")
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var errOut strings.Builder
	cmd.Stderr = &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	lines := bufio.NewScanner(out)
	var seen strings.Builder
	running := false
	for !running && lines.Scan() {
		seen.WriteString(lines.Text() + "\n")
		running = lines.Text() == "running"
	}
	if !running {
		cmd.Wait()
		t.Fatalf("the child ended before its job ran:\n%s%s", seen.String(), errOut.String())
	}
	if err := syscall.Kill(cmd.Process.Pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	// Longer than the timeout by every clock of the child.
	time.Sleep(timeout + timeout/2)
	if err := syscall.Kill(cmd.Process.Pid, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	in.Close() // the child pushes a few rounds more and ends its job
	rest, _ := io.ReadAll(out)
	seen.Write(rest)
	err = cmd.Wait()
	got := seen.String() + errOut.String()
	switch {
	case err == nil:
	case strings.Contains(got, "node: replaced"):
		t.Fatalf("the child stopped for %v: %v: a node took its own stop for the scheduler's verdict\n%s", timeout+timeout/2, err, got)
	case strings.Contains(got, "i/o timeout") || strings.Contains(got, "deadline exceeded"):
		// A send in flight at the stop, whose deadline (the timeout)
		// passed during it: the scheduler takes a control send that
		// timed out for its peer's failure. A limit of deadlines on the
		// wall clock, not of the nodes' verdict on their own stop.
		t.Logf("the job failed through a send whose deadline passed during the stop: %v", lastLine(got))
	default:
		t.Fatalf("the child stopped for %v: %v\n%s", timeout+timeout/2, err, got)
	}
}

// lastLine returns the last line of s that is not blank.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// runStoppedChild is the child of TestWholeProcessStopped: a BSP job of
// two machines that pushes a few rounds, says "running" and waits,
// heartbeats going on, until its standard input closes; then it pushes a
// few rounds more and ends. (Stopped while it pushes, a send could fail
// on the clock of its own link, a deadline that passed during the
// stop.)
func runStoppedChild(t *testing.T, timeout time.Duration) {
	s, ns := recoverClusterOn(t, 0, timeout, func(ep *tcp.Endpoint) transport.Endpoint { return ep })
	for range 5 {
		pushBoth(t, ns, 1, 2, 10, 20)
	}
	os.Stdout.WriteString("running\n")
	io.Copy(io.Discard, os.Stdin)
	for range 5 {
		pushBoth(t, ns, 1, 2, 10, 20)
	}
	for _, n := range ns {
		n.Finish(nil)
	}
	for _, n := range ns {
		if err := n.Wait(); err != nil {
			t.Fatalf("end of job: %v", err)
		}
	}
	if err := s.Wait(); err != nil {
		t.Fatalf("scheduler: %v", err)
	}
}
