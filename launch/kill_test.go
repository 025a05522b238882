package launch

import (
	"colo/internal/colotest"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestKillProcessMidJob kills a worker process, then a server process, in
// the middle of a long smoke job: the scheduler and every surviving node
// end with an error naming it, the scheduler having noticed its link
// close, not its silence, and the supervisor names the killed process
// first. The heartbeat timeout is a loaded machine's (10 s: at 1 s a
// node could be declared dead for being slow), and the job must end
// within it.
func TestKillProcessMidJob(t *testing.T) {
	colotest.Need(t, coloBin)
	const timeout = 10 * time.Second
	for _, victim := range []string{"worker", "server"} {
		t.Run(victim, func(t *testing.T) {
			sup := NewSupervisor(coloBin, Loopback{})
			sup.Grace = timeout + 2*time.Second
			env := []string{"COLO_TOKEN=t0k"}
			common := []string{"--num-servers", "2", "--num-workers", "2", "--keys", "10000"}
			ctx, cancel := context.WithTimeout(context.Background(), colotest.HangTimeout(t))
			defer cancel()
			addr, err := sup.StartScheduler(ctx, Spec{Name: "scheduler", Env: env, Args: append([]string{"node", "--role", "scheduler",
				"--scheduler", "127.0.0.1:0", "--heartbeat", "50ms", "--timeout", timeout.String()}, common...)})
			if err != nil {
				t.Fatal(err)
			}
			procs := map[string]*Proc{}
			for _, role := range []string{"server", "worker"} {
				for r := range 2 {
					name := fmt.Sprintf("%s %d", role, r)
					procs[name] = sup.Start(ctx, Spec{Name: name, Host: r + 1, Env: env, Args: append([]string{"node", "--role", role,
						"--rank", strconv.Itoa(r), "--scheduler", addr, "--rounds", "1000000", "--batch", "100"}, common...)})
				}
			}
			// Once the job runs (the scheduler said so), kill the victim
			// without warning. Before that, nobody could end on their
			// own and the supervisor kills them all at the first exit.
			name := victim + " 1"
			dead := procs[name]
			waitJobStarted(t, sup, dead)
			killed := time.Now()
			syscall.Kill(dead.Pid(), syscall.SIGKILL)
			err = sup.Wait(ctx)
			took := time.Since(killed)
			var f *Failure
			if !errors.As(err, &f) || f.Procs[0] != dead {
				t.Fatalf("Wait: %v, want a failure of %s first", err, name)
			}
			for _, p := range sup.Procs() {
				if p == dead {
					continue
				}
				if p.Err() == nil || p.Killed() || !strings.Contains(p.Stderr(), name) {
					t.Errorf("%s: %v (killed %v), stderr does not name %s: %s", p.Name(), p.Err(), p.Killed(), name, p.Stderr())
				}
			}
			if s := sup.Procs()[0].Stderr(); !strings.Contains(s, name+" (node") || !strings.Contains(s, "failed: link lost") {
				t.Errorf("the scheduler did not notice %s's link close:\n%s", name, s)
			}
			if took > timeout {
				t.Errorf("the job ended %v after the kill, timeout %v", took, timeout)
			}
			t.Logf("ended %v after the kill", took.Round(time.Millisecond))
		})
	}
}

// TestHungProcessNamed stops a worker process (SIGSTOP) in the middle of
// a smoke job without recovery: the scheduler declares it failed after
// the timeout and ends the job, exiting before it; the supervisor kills
// the stopped worker after the grace period and still names it first,
// with the scheduler's reason, not the scheduler that exited first.
func TestHungProcessNamed(t *testing.T) {
	colotest.Need(t, coloBin)
	const timeout = time.Second
	sup := NewSupervisor(coloBin, Loopback{})
	// The grace lets the scheduler say why it ends the job, though a
	// worker whose link to the stopped one timed out (at the same
	// timeout) ended first: with a grace of one timeout, at load 20 it
	// was killed before it said so, and the worker came first (1 run in 14).
	sup.Grace = 5 * time.Second
	sup.ProcessOf = func(nodes []string) string { return nodes[0] }
	env := []string{"COLO_TOKEN=t0k"}
	common := []string{"--num-servers", "1", "--num-workers", "2", "--keys", "10000"}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	addr, err := sup.StartScheduler(ctx, Spec{Name: "scheduler", Env: env, Args: append([]string{"node", "--role", "scheduler",
		"--scheduler", "127.0.0.1:0", "--heartbeat", "50ms", "--timeout", timeout.String()}, common...)})
	if err != nil {
		t.Fatal(err)
	}
	var hung *Proc
	for i, name := range []string{"server 0", "worker 0", "worker 1"} {
		role, rank, _ := strings.Cut(name, " ")
		p := sup.Start(ctx, Spec{Name: name, Host: i + 1, Env: env, Args: append([]string{"node", "--role", role,
			"--rank", rank, "--scheduler", addr, "--rounds", "1000000", "--batch", "100"}, common...)})
		if name == "worker 1" {
			hung = p
		}
	}
	// Once the job runs (the scheduler said so), stop worker 1.
	waitJobStarted(t, sup, hung)
	if err := syscall.Kill(hung.Pid(), syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	err = sup.Wait(ctx)
	var f *Failure
	// Its silence is noticed by the scheduler's heartbeats or, first on a
	// loaded machine, by a link to it whose read timed out.
	silent := func(s string) bool { return strings.Contains(s, "no heartbeat") || strings.Contains(s, "i/o timeout") }
	if !errors.As(err, &f) || f.Procs[0] != hung || !silent(f.Reason) {
		t.Fatalf("Wait: %v, want a failure of worker 1 first, for its silence", err)
	}
	if msg := err.Error(); !strings.HasPrefix(msg, "worker 1 failed, the scheduler said: ") || !silent(msg) {
		t.Errorf("the failure reads %q", msg)
	}
	t.Log(err)
}

// TestStoppedNodeWakesReplaced stops a worker (SIGSTOP) past the timeout,
// lets the scheduler declare it failed and end the job, then lets it run
// again (SIGCONT): it exits at once saying it was replaced, blaming no
// other node (before, it waited another timeout and blamed the
// scheduler: "no heartbeat for 1s").
func TestStoppedNodeWakesReplaced(t *testing.T) {
	colotest.Need(t, coloBin)
	const timeout = time.Second
	sup := NewSupervisor(coloBin, Loopback{})
	sup.Grace = 30 * time.Second // the woken worker ends by itself first
	env := []string{"COLO_TOKEN=t0k"}
	common := []string{"--num-servers", "1", "--num-workers", "2", "--keys", "10000"}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	addr, err := sup.StartScheduler(ctx, Spec{Name: "scheduler", Env: env, Args: append([]string{"node", "--role", "scheduler",
		"--scheduler", "127.0.0.1:0", "--heartbeat", "50ms", "--timeout", timeout.String()}, common...)})
	if err != nil {
		t.Fatal(err)
	}
	sched := sup.Procs()[0]
	var hung *Proc
	for i, name := range []string{"server 0", "worker 0", "worker 1"} {
		role, rank, _ := strings.Cut(name, " ")
		p := sup.Start(ctx, Spec{Name: name, Host: i + 1, Env: env, Args: append([]string{"node", "--role", role,
			"--rank", rank, "--scheduler", addr, "--rounds", "1000000", "--batch", "100"}, common...)})
		if name == "worker 1" {
			hung = p
		}
	}
	waitJobStarted(t, sup, hung)
	if err := syscall.Kill(hung.Pid(), syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { waited <- sup.Wait(ctx) }()
	select {
	case <-sched.Done():
	case <-ctx.Done():
		syscall.Kill(hung.Pid(), syscall.SIGKILL)
		t.Fatal("the scheduler did not end the job")
	}
	woke := time.Now()
	if err := syscall.Kill(hung.Pid(), syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	<-hung.Done()
	took := time.Since(woke)
	<-waited
	if hung.Killed() || !strings.Contains(hung.Stderr(), "did not run for") || strings.Contains(hung.Stderr(), "scheduler (node") {
		t.Fatalf("worker 1 (killed %v) ended: %v\n%s", hung.Killed(), hung.Err(), hung.Stderr())
	}
	t.Logf("worker 1 ended %v after it woke: %s", took.Round(time.Millisecond), lastLines(hung.Stderr(), 1))
}

// waitJobStarted waits until the scheduler of sup said that the job
// started, failing t if p ends first.
func waitJobStarted(t *testing.T, sup *Supervisor, p *Proc) {
	t.Helper()
	for !sup.jobStarted.Load() {
		select {
		case <-p.Done():
			t.Fatalf("%s ended before the job started: %v\n%s", p.Name(), p.Err(), p.Stderr())
		case <-time.After(10 * time.Millisecond):
		}
	}
}
