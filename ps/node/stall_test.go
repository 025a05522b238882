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
// scheduler's verdict and ended as replaced.)
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
	in.Close() // the child ends its job after a few more rounds
	rest, _ := io.ReadAll(out)
	seen.Write(rest)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("the child stopped for %v: %v\n%s%s", timeout+timeout/2, err, seen.String(), errOut.String())
	}
}

// runStoppedChild is the child of TestWholeProcessStopped: a BSP job of
// two machines that pushes round after round, says "running" after a
// few, and ends once its standard input closes and a few rounds more ran
// after that.
func runStoppedChild(t *testing.T, timeout time.Duration) {
	s, ns := recoverClusterOn(t, 0, timeout, func(ep *tcp.Endpoint) transport.Endpoint { return ep })
	closed := make(chan struct{})
	go func() {
		io.Copy(io.Discard, os.Stdin)
		close(closed)
	}()
	after := -1
	for r := 0; after < 0 || r < after; r++ {
		pushBoth(t, ns, 1, 2, 10, 20)
		if r == 5 {
			os.Stdout.WriteString("running\n")
		}
		select {
		case <-closed:
			if after < 0 {
				after = r + 5
			}
		default:
		}
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
