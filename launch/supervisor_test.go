package launch

import (
	"bytes"
	"colo/internal/colotest"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// coloBin is the colo binary TestMain builds for the tests that run a
// real cluster; empty when go is not on PATH.
var coloBin string

// helperEnv makes the test binary the parent of TestOrphans instead of a
// test run.
const helperEnv = "LAUNCH_TEST_PARENT"

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) != "" {
		orphanParent()
		return
	}
	if os.Getenv(memberEnv) != "" {
		fakeMember()
		return
	}
	os.Exit(colotest.Main(m, &coloBin))
}

// shell returns a supervisor that runs /bin/sh on loopback, so that a
// Spec's Args are {"-c", script}.
func shell(t *testing.T) *Supervisor {
	t.Helper()
	if _, err := os.Stat("/bin/sh"); err != nil {
		t.Skip("no /bin/sh")
	}
	return NewSupervisor("/bin/sh", Loopback{})
}

// sh is the Spec of a shell script.
func sh(name, script string) Spec { return Spec{Name: name, Args: []string{"-c", script}} }

// gone fails t unless every process of s has been reaped: kill(pid, 0)
// finds no such process.
func gone(t *testing.T, s *Supervisor) {
	t.Helper()
	for _, p := range s.Procs() {
		if pid := p.Pid(); pid != 0 {
			if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
				t.Errorf("%s (pid %d) is still there after Wait: kill 0: %v", p.Name(), pid, err)
			}
		}
	}
}

// failure returns err as a *Failure, or fails t.
func failure(t *testing.T, err error) *Failure {
	t.Helper()
	var f *Failure
	if !errors.As(err, &f) {
		t.Fatalf("Wait: %v (%T), want a *Failure", err, err)
	}
	return f
}

// TestFailureKillsAfterGrace: a process exits non-zero; the one that
// hangs is killed once the grace period is over. The error names the
// first, with its last three stderr lines, then the killed one.
func TestFailureKillsAfterGrace(t *testing.T) {
	s := shell(t)
	s.Grace = 200 * time.Millisecond
	a := s.Start(context.Background(), sh("machine 0", "echo one >&2; echo two >&2; echo three >&2; echo boom >&2; exit 3"))
	b := s.Start(context.Background(), sh("machine 1", "exec sleep 1000"))
	t0 := time.Now()
	err := s.Wait(context.Background())
	took := time.Since(t0)
	f := failure(t, err)
	if want := "machine 0 failed: exit status 3: two | three | boom (then machine 1 killed)"; err.Error() != want {
		t.Errorf("error %q\nwant  %q", err, want)
	}
	if f.Procs[0] != a || len(f.Procs) != 2 || f.Procs[1] != b {
		t.Errorf("failed %v", f.Procs)
	}
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 3 {
		t.Errorf("the failure does not unwrap to exit status 3: %v", err)
	}
	if a.Killed() || !b.Killed() {
		t.Errorf("killed: machine 0 %v, machine 1 %v", a.Killed(), b.Killed())
	}
	if took < s.Grace {
		t.Errorf("machine 1 killed %v after Wait began, before the grace period %v", took, s.Grace)
	}
	gone(t, s)
}

// TestOthersEndWithinGrace: processes that end on their own after the
// first failure are named with their last line, not as killed, and Wait
// does not wait for the grace period. OnExit releases them once Wait has
// seen the first end, so the order is certain.
func TestOthersEndWithinGrace(t *testing.T) {
	s := shell(t)
	s.Grace = time.Hour
	flag := filepath.Join(t.TempDir(), "failed")
	waitFlag := fmt.Sprintf("until [ -e %s ]; do sleep 0.01; done; ", flag)
	s.OnExit = func(p *Proc) {
		if p.Name() == "machine 1" {
			os.WriteFile(flag, nil, 0o644)
		}
	}
	s.Start(context.Background(), sh("scheduler", waitFlag+"echo 'job failed: machine 1 lost' >&2; exit 1"))
	s.Start(context.Background(), sh("machine 0", waitFlag+"echo done"))
	s.Start(context.Background(), sh("machine 1", "echo 'loading' >&2; echo 'panic: no data' >&2; exit 2"))
	err := s.Wait(context.Background())
	if want := "machine 1 failed: exit status 2: loading | panic: no data (then scheduler: job failed: machine 1 lost)"; err == nil || err.Error() != want {
		t.Errorf("error %q\nwant  %q", err, want)
	}
	for _, p := range failure(t, err).Procs {
		if p.Killed() {
			t.Errorf("%s killed", p.Name())
		}
	}
	gone(t, s)
}

// TestKilledMidJob: a process killed from outside is named as failed by
// the signal, the one that noticed with its last line.
func TestKilledMidJob(t *testing.T) {
	s := shell(t)
	s.Grace = time.Hour
	flag := filepath.Join(t.TempDir(), "killed")
	s.OnExit = func(*Proc) { os.WriteFile(flag, nil, 0o644) }
	victim := s.Start(context.Background(), sh("worker 1", "exec sleep 1000"))
	s.Start(context.Background(), sh("scheduler", fmt.Sprintf("until [ -e %s ]; do sleep 0.01; done; echo 'worker 1 lost' >&2; exit 1", flag)))
	if err := syscall.Kill(victim.Pid(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	err := s.Wait(context.Background())
	if want := "worker 1 failed: signal: killed (then scheduler: worker 1 lost)"; err == nil || err.Error() != want {
		t.Errorf("error %q\nwant  %q", err, want)
	}
	if victim.Killed() {
		t.Error("the supervisor claims it killed worker 1")
	}
	gone(t, s)
}

// TestContextStops: a done context kills every process; the error wraps
// the cause.
func TestContextStops(t *testing.T) {
	s := shell(t)
	s.Grace = time.Hour
	procs := []*Proc{
		s.Start(context.Background(), sh("scheduler", "exec sleep 1000")),
		s.Start(context.Background(), sh("machine 0", "exec sleep 1000")),
	}
	cause := errors.New("deadline of the test")
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(cause)
	err := s.Wait(ctx)
	if !errors.Is(err, cause) || !strings.Contains(err.Error(), "the cluster was stopped") {
		t.Errorf("Wait: %v", err)
	}
	for _, p := range procs {
		if !p.Killed() || p.Err() == nil {
			t.Errorf("%s: killed %v, err %v", p.Name(), p.Killed(), p.Err())
		}
	}
	gone(t, s)
	if again := s.Wait(context.Background()); again != err {
		t.Errorf("second Wait: %v, first %v", again, err)
	}
}

// failHost is a Starter that cannot start host bad.
type failHost struct {
	Loopback
	bad int
}

func (f failHost) Command(ctx context.Context, bin string, s Spec) *exec.Cmd {
	cmd := f.Loopback.Command(ctx, bin, s)
	if s.Host == f.bad {
		cmd.Err = fmt.Errorf("host %d is down", s.Host)
	}
	return cmd
}

// TestStartFailure: a process that cannot start is a failure Wait
// reports, and the others are killed after the grace period.
func TestStartFailure(t *testing.T) {
	s := NewSupervisor("/bin/sh", failHost{bad: 2})
	s.Grace = 0
	ok := s.Start(context.Background(), Spec{Name: "machine 0", Host: 1, Args: []string{"-c", "exec sleep 1000"}})
	bad := s.Start(context.Background(), Spec{Name: "machine 1", Host: 2, Args: []string{"-c", "exit 0"}})
	if bad.Err() == nil || bad.Pid() != 0 {
		t.Fatalf("machine 1 started: pid %d, err %v", bad.Pid(), bad.Err())
	}
	err := s.Wait(context.Background())
	if want := "machine 1 failed: start: host 2 is down (then machine 0 killed)"; err == nil || err.Error() != want {
		t.Errorf("error %q\nwant  %q", err, want)
	}
	if !ok.Killed() {
		t.Error("machine 0 not killed")
	}
	gone(t, s)

	s = NewSupervisor("/nonexistent/colo", Loopback{})
	p := s.Start(context.Background(), Spec{Name: "scheduler"})
	if err := s.Wait(context.Background()); err == nil || !strings.Contains(err.Error(), "scheduler failed: start: ") || !strings.Contains(err.Error(), "/nonexistent/colo") {
		t.Errorf("missing binary: %v", err)
	}
	if p.Pid() != 0 {
		t.Error("a pid without a process")
	}
}

// TestSucceed: processes that exit 0 give no error; what they print is
// kept when asked.
func TestSucceed(t *testing.T) {
	s := shell(t)
	s.Environ = []string{"PATH=" + os.Getenv("PATH"), "COLO_ROLE=server", "COLOUR=blue"}
	kept := s.Start(context.Background(), Spec{Name: "a", Stdout: true, Env: []string{"X=1"},
		Args: []string{"-c", `echo "role=$COLO_ROLE colour=$COLOUR x=$X"; echo note >&2`}})
	dropped := s.Start(context.Background(), sh("b", "echo lost"))
	if err := s.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got, want := string(kept.Stdout()), "role= colour=blue x=1\n"; got != want {
		t.Errorf("stdout %q, want %q (COLO_* removed, the rest and Spec.Env kept)", got, want)
	}
	if kept.Stderr() != "note\n" || kept.Err() != nil {
		t.Errorf("stderr %q err %v", kept.Stderr(), kept.Err())
	}
	if dropped.Stdout() != nil {
		t.Errorf("stdout kept without Spec.Stdout: %q", dropped.Stdout())
	}
	gone(t, s)
}

// TestBoundedOutput: a chatty process's output is kept to its last
// bytes.
func TestBoundedOutput(t *testing.T) {
	s := shell(t)
	s.StdoutLimit, s.StderrLimit = 1000, 500
	p := s.Start(context.Background(), Spec{Name: "chatty", Stdout: true, Args: []string{"-c",
		`i=0; while [ $i -lt 5000 ]; do echo "line $i"; echo "err $i" >&2; i=$((i+1)); done`}})
	if err := s.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if out := p.Stdout(); len(out) != 1000 || !bytes.HasSuffix(out, []byte("line 4998\nline 4999\n")) {
		t.Errorf("stdout: %d bytes ending %q", len(out), out[max(0, len(out)-30):])
	}
	if e := p.Stderr(); len(e) != 500 || !strings.HasSuffix(e, "err 4999\n") {
		t.Errorf("stderr: %d bytes ending %q", len(e), e[max(0, len(e)-30):])
	}
}

// TestTail checks the bounded buffer against the whole output on random
// writes, some longer than the bound.
func TestTail(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, limit := range []int{1, 7, 64} {
		tl := newTail(limit)
		var all []byte
		for i := range 500 {
			p := make([]byte, rng.IntN(3*limit))
			for j := range p {
				p[j] = byte(rng.IntN(256))
			}
			if n, err := tl.Write(p); n != len(p) || err != nil {
				t.Fatalf("Write: %d, %v", n, err)
			}
			all = append(all, p...)
			want := all[max(0, len(all)-limit):]
			if got := tl.Bytes(); !bytes.Equal(got, want) {
				t.Fatalf("limit %d, write %d: %x, want %x", limit, i, got, want)
			}
			if cap(tl.b) > 4*limit+64 {
				t.Fatalf("limit %d: buffer of %d bytes", limit, cap(tl.b))
			}
		}
	}
}

// pidOf finds "pid N" in s.
func pidOf(t *testing.T, s string) int {
	t.Helper()
	m := regexp.MustCompile(`pid (\d+)`).FindStringSubmatch(s)
	if m == nil {
		t.Fatalf("no pid in %q", s)
	}
	pid, _ := strconv.Atoi(m[1])
	return pid
}

// TestStartScheduler: the address comes from the first line; anything
// else kills the scheduler and says what it printed, with its stderr.
func TestStartScheduler(t *testing.T) {
	s := shell(t)
	addr, err := s.StartScheduler(context.Background(), Spec{Name: "scheduler", Stdout: true, Args: []string{"-c",
		"echo 'scheduler listening on 127.0.0.1:41234'; echo 'job finished'"}})
	if err != nil || addr != "127.0.0.1:41234" {
		t.Fatalf("StartScheduler: %q, %v", addr, err)
	}
	if err := s.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if out := string(s.Procs()[0].Stdout()); out != "scheduler listening on 127.0.0.1:41234\njob finished\n" {
		t.Errorf("stdout %q", out)
	}

	for _, c := range []struct {
		name, script string
		silent       bool // the context ends once the scheduler runs
		want         []string
	}{
		{"garbage", `echo "pid $$" >&2; echo 'hello'; exec sleep 1000`, false,
			[]string{`scheduler did not start: it printed "hello", not "scheduler listening on ADDR": pid `}},
		{"exits", `echo "pid $$" >&2; echo 'bad flag' >&2; exit 2`, false,
			[]string{"scheduler did not start: it ended (exit status 2) before printing its address: pid ", " | bad flag"}},
		{"partial line", `echo "pid $$" >&2; printf 'sched'`, false,
			[]string{`scheduler did not start: it ended (exit status 0) after printing "sched", not`}},
		{"silent", `echo "pid $$" >&2; exec sleep 1000`, true,
			[]string{"scheduler did not start: it had not printed its address: context deadline exceeded: pid "}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := shell(t)
			ctx := context.Background()
			if c.silent {
				// The deadline passes once the scheduler runs (it said
				// its pid), not at a time it may not have started by.
				expiring, expire := context.WithCancelCause(ctx)
				defer expire(nil)
				ctx = expiring
				go func() {
					for {
						if ps := s.Procs(); len(ps) > 0 && strings.Contains(ps[0].Stderr(), "pid ") {
							expire(context.DeadlineExceeded)
							return
						}
						select {
						case <-expiring.Done():
							return
						case <-time.After(5 * time.Millisecond):
						}
					}
				}()
			}
			addr, err := s.StartScheduler(ctx, sh("scheduler", c.script))
			if err == nil {
				t.Fatalf("started at %q", addr)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			pid := pidOf(t, err.Error())
			if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
				t.Errorf("the scheduler (pid %d) is still there: %v", pid, err)
			}
			if n := len(s.Procs()); n != 0 {
				t.Errorf("the supervisor still has %d processes", n)
			}
		})
	}
}

// orphanParent is the parent process of TestOrphans: it starts a child
// that sleeps, prints the child's pid and waits until its standard input
// closes.
func orphanParent() {
	s := NewSupervisor("/bin/sh", Loopback{})
	p := s.Start(context.Background(), sh("child", "exec sleep 1000"))
	if err := p.Err(); err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	fmt.Println(p.Pid())
	io.Copy(io.Discard, os.Stdin)
	os.Exit(0)
}

// TestFailureBeforeJobStarted: a process that fails before the scheduler
// says the job started ends the cluster at once, without the grace
// period (an hour, so that a Wait that took it cannot pass for one that
// did not, however loaded the machine): the others could only wait for
// it until their join timeout. After "job started: …", the others have
// the grace period again.
func TestFailureBeforeJobStarted(t *testing.T) {
	s := shell(t)
	s.Grace = time.Hour
	if _, err := s.StartScheduler(context.Background(), sh("scheduler", "echo 'scheduler listening on 127.0.0.1:1'; exec sleep 1000")); err != nil {
		t.Fatal(err)
	}
	s.Start(context.Background(), sh("machine 0", "exec sleep 1000"))
	s.Start(context.Background(), sh("machine 1", "echo 'no such file' >&2; exit 1"))
	t0 := time.Now()
	err := s.Wait(context.Background())
	if took := time.Since(t0); took > colotest.HangTimeout(t) {
		t.Errorf("Wait took %v, with a grace period of %v", took, s.Grace)
	}
	f := failure(t, err)
	if want := "machine 1 failed: exit status 1: no such file (then "; !strings.HasPrefix(err.Error(), want) || len(f.Procs) != 3 {
		t.Fatalf("error %q, want it to start with %q and name 3 processes", err, want)
	}
	for _, p := range f.Procs[1:] {
		if !p.Killed() {
			t.Errorf("%s not killed", p.Name())
		}
	}
	gone(t, s)

	s = shell(t)
	s.Grace = 200 * time.Millisecond
	flag := filepath.Join(t.TempDir(), "started")
	if _, err := s.StartScheduler(context.Background(), sh("scheduler", "echo 'scheduler listening on 127.0.0.1:1'; echo 'job started: 2 servers, 2 workers'; exec sleep 1000")); err != nil {
		t.Fatal(err)
	}
	s.Start(context.Background(), sh("machine 1", fmt.Sprintf("until [ -e %s ]; do sleep 0.01; done; exit 1", flag)))
	for !s.jobStarted.Load() {
		time.Sleep(5 * time.Millisecond)
	}
	os.WriteFile(flag, nil, 0o644)
	t0 = time.Now()
	err = s.Wait(context.Background())
	if took := time.Since(t0); took < s.Grace {
		t.Errorf("the scheduler was killed %v after the failure, within the grace period %v", took, s.Grace)
	}
	if want := "machine 1 failed: exit status 1 (then scheduler killed)"; err == nil || err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
}

// TestEndedBeforeJobStarted: members that exit without an error before
// the job started never joined it; the scheduler that then fails waiting
// for its nodes is named with them. Once the job started, one that ends
// well is not named.
func TestEndedBeforeJobStarted(t *testing.T) {
	for _, c := range []struct {
		started bool
		want    string
	}{
		{false, "scheduler failed: exit status 1: sched: 0 of 4 nodes registered (then machine 1 killed); machine 0 and machine 2 had exited without an error before the job started, never joining it"},
		{true, "scheduler failed: exit status 1: sched: job failed (then machine 1 killed)"},
	} {
		s := shell(t)
		s.Grace = 200 * time.Millisecond // before the job started, Wait kills the others at once
		dir := t.TempDir()
		started := ""
		if c.started {
			started = "echo 'job started: 3 machines'; "
		}
		// The scheduler fails once Wait has had the exits of machines
		// 0 and 2 (OnExit marks each), so that neither is still
		// running, to be killed, when it does.
		s.OnExit = func(p *Proc) {
			if r, ok := strings.CutPrefix(p.Name(), "machine "); ok {
				if err := os.WriteFile(filepath.Join(dir, r), nil, 0o644); err != nil {
					t.Error(err)
				}
			}
		}
		script := fmt.Sprintf("echo 'scheduler listening on 127.0.0.1:1'; %suntil [ -e %s/0 ] && [ -e %s/2 ]; do sleep 0.01; done; echo '%s' >&2; exit 1",
			started, dir, dir, map[bool]string{false: "sched: 0 of 4 nodes registered", true: "sched: job failed"}[c.started])
		if _, err := s.StartScheduler(context.Background(), sh("scheduler", script)); err != nil {
			t.Fatal(err)
		}
		for _, r := range []string{"0", "2"} {
			s.Start(context.Background(), sh("machine "+r, "exit 0"))
		}
		s.Start(context.Background(), sh("machine 1", "exec sleep 1000"))
		err := s.Wait(context.Background())
		if err == nil || err.Error() != c.want {
			t.Errorf("job started %v: %v\nwant %s", c.started, err, c.want)
		}
		gone(t, s)
	}
}

// TestNodeFailsBeforeRegistering runs a real scheduler and two machines,
// one of which exits at once on a bad flag: the cluster ends naming it,
// not after the join timeout: within half of it, two minutes, so that a
// loaded machine's slow start is not taken for the wait.
func TestNodeFailsBeforeRegistering(t *testing.T) {
	colotest.Need(t, coloBin)
	s := NewSupervisor(coloBin, Loopback{})
	s.Grace = time.Minute
	const joinTimeout = 4 * time.Minute
	common := []string{"--token", "t", "--num-servers", "2", "--num-workers", "2", "--join-timeout", joinTimeout.String()}
	addr, err := s.StartScheduler(context.Background(), Spec{Name: "scheduler", Args: append([]string{"node", "--role", "scheduler", "--scheduler", "127.0.0.1:0"}, common...)})
	if err != nil {
		t.Fatal(err)
	}
	s.Start(context.Background(), Spec{Name: "machine 0", Args: append([]string{"node", "--role", "machine", "--rank", "0", "--scheduler", addr}, common...)})
	s.Start(context.Background(), Spec{Name: "machine 1", Args: append([]string{"node", "--role", "machine", "--rank", "1", "--scheduler", addr, "--no-such-flag"}, common...)})
	t0 := time.Now()
	err = s.Wait(context.Background())
	took := time.Since(t0)
	if want := "machine 1 failed: exit status 2: "; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("error %v, want it to start with %q", err, want)
	}
	if took > joinTimeout/2 {
		t.Errorf("the cluster ended %v after machine 1 failed, join timeout %v", took, joinTimeout)
	}
	gone(t, s)
	t.Logf("ended after %v: %v", took.Round(time.Millisecond), err)
}

// TestReplace: once the job started, a process killed by a signal the
// supervisor did not send is replaced by the Spec Replace returns, and
// the cluster succeeds when the replacement and the others do; a
// process that exits with an error is not replaced and fails the
// cluster, nor is one killed when Replace declines.
func TestReplace(t *testing.T) {
	dir := t.TempDir()
	done := filepath.Join(dir, "replaced")
	s := shell(t)
	s.Grace = 200 * time.Millisecond
	var asked []string
	s.Replace = func(p *Proc) (Spec, bool) {
		asked = append(asked, p.Name())
		return sh(p.Name()+" again", fmt.Sprintf("touch %s", done)), true
	}
	if _, err := s.StartScheduler(context.Background(), sh("scheduler", fmt.Sprintf("echo 'scheduler listening on 127.0.0.1:1'; echo 'job started: 2 machines'; until [ -e %s ]; do sleep 0.01; done", done))); err != nil {
		t.Fatal(err)
	}
	s.Start(context.Background(), sh("machine 0", fmt.Sprintf("until [ -e %s ]; do sleep 0.01; done", done)))
	s.Start(context.Background(), sh("machine 1", "sleep 0.1; kill -9 $$"))
	if err := s.Wait(context.Background()); err != nil {
		t.Fatalf("Wait: %v", err)
	}
	if len(asked) != 1 || asked[0] != "machine 1" {
		t.Fatalf("Replace asked for %q, want machine 1 once", asked)
	}
	if ps := s.Procs(); len(ps) != 4 || ps[3].Name() != "machine 1 again" || ps[3].Err() != nil {
		t.Fatalf("processes %v, want the replacement last, succeeded", ps)
	}
	gone(t, s)

	for _, c := range []struct{ script, want string }{
		{"exit 1", "machine 1 failed: exit status 1 (then "},
		{"kill -9 $$", "machine 1 failed: signal: killed (then "},
	} {
		s = shell(t)
		s.Grace = 100 * time.Millisecond
		asked = nil
		s.Replace = func(p *Proc) (Spec, bool) {
			asked = append(asked, p.Name())
			return Spec{}, false
		}
		if _, err := s.StartScheduler(context.Background(), sh("scheduler", "echo 'scheduler listening on 127.0.0.1:1'; echo 'job started: 2 machines'; exec sleep 1000")); err != nil {
			t.Fatal(err)
		}
		s.Start(context.Background(), sh("machine 1", "sleep 0.1; "+c.script))
		err := s.Wait(context.Background())
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.script, err, c.want)
		}
		if c.script == "exit 1" && len(asked) != 0 {
			t.Errorf("a process that exited 1 was offered for replacement")
		}
		gone(t, s)
	}
}

// TestNoReplaceAfterJobEnded: a process killed by a signal after the
// scheduler ended the job (it printed "job finished: …", or exited
// without an error) is not replaced, as no scheduler would take its
// replacement in (one started with --standby waited out its join timeout
// for the scheduler of a takeover that never came): it fails the
// cluster, named first, and the caller restarts the job from its last
// checkpoint if it may.
func TestNoReplaceAfterJobEnded(t *testing.T) {
	for _, c := range []struct {
		name, scheduler string
		// line: the machine dies once the supervisor read the scheduler's
		// line; otherwise once Wait saw the scheduler exit.
		line bool
	}{
		{"finished line", "echo 'job finished: 2 servers, 2 workers'; until [ -e %s ]; do sleep 0.01; done", true},
		{"scheduler exited", "exit 0 # %s", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			die, over := filepath.Join(dir, "die"), filepath.Join(dir, "over")
			s := shell(t)
			s.Grace = 100 * time.Millisecond
			var asked []string
			s.Replace = func(p *Proc) (Spec, bool) {
				asked = append(asked, p.Name())
				return sh(p.Name()+" again", "exit 3"), true
			}
			s.OnExit = func(p *Proc) {
				if !c.line && p.Name() == "scheduler" {
					os.WriteFile(die, nil, 0o644)
				}
				if p.Name() == "machine 1" {
					os.WriteFile(over, nil, 0o644)
				}
			}
			script := "echo 'scheduler listening on 127.0.0.1:1'; echo 'job started: 2 servers, 2 workers'; " + fmt.Sprintf(c.scheduler, over)
			if _, err := s.StartScheduler(context.Background(), sh("scheduler", script)); err != nil {
				t.Fatal(err)
			}
			s.Start(context.Background(), sh("machine 1", fmt.Sprintf("until [ -e %s ]; do sleep 0.01; done; kill -9 $$", die)))
			if c.line {
				// The machine dies once the line was read.
				go func() {
					for !s.jobFinished.Load() {
						time.Sleep(time.Millisecond)
					}
					os.WriteFile(die, nil, 0o644)
				}()
			}
			err := s.Wait(context.Background())
			if want := "machine 1 failed: signal: killed"; err == nil || !strings.HasPrefix(err.Error(), want) {
				t.Errorf("Wait: %v, want it to start with %q", err, want)
			}
			if len(asked) != 0 {
				t.Errorf("Replace asked for %q after the job ended", asked)
			}
			gone(t, s)
		})
	}
}

// TestFailureSaysRepeatsOnce: a node that passes on another's failure
// ends its line with that failure's message; the error tells the message
// once, and keeps who passed it on and about whom.
func TestFailureSaysRepeatsOnce(t *testing.T) {
	cause := "distparsa: memory cap 40.0 MiB is below the 59.8 MiB a machine of this run needs"
	proc := func(name, stderr string, err error) *Proc {
		p := &Proc{spec: Spec{Name: name}, stderr: newTail(1 << 10), err: err}
		p.stderr.Write([]byte(stderr))
		return p
	}
	f := &Failure{Procs: []*Proc{
		proc("scheduler", "starting\nscheduler: worker 0 failed: "+cause+"\ncolo node: job failed: worker 0 failed: "+cause+"\n", errors.New("exit status 1")),
		proc("machine 0", "colo node: worker 0 failed: "+cause+"\n", errors.New("exit status 1")),
		proc("machine 2", "colo node: worker 2 failed: "+cause+"\n", errors.New("exit status 1")),
		proc("machine 1", "colo node: lost the scheduler\n", errors.New("exit status 1")),
	}}
	want := "scheduler failed: exit status 1: starting | scheduler: worker 0 failed: " + cause +
		" | colo node: job failed: the same (then machine 0: colo node: the same; " +
		"machine 2: colo node: worker 2 failed: the same; machine 1: colo node: lost the scheduler)"
	if got := f.Error(); got != want {
		t.Errorf("error %q\nwant  %q", got, want)
	}
	// Short lines are never taken for repeats.
	f = &Failure{Procs: []*Proc{proc("machine 0", "boom\nboom\n", errors.New("exit status 2")), proc("machine 1", "boom\n", errors.New("exit status 2"))}}
	if got, want := f.Error(), "machine 0 failed: exit status 2: boom | boom (then machine 1: boom)"; got != want {
		t.Errorf("error %q\nwant  %q", got, want)
	}
}

// TestBackedUpBeforeSurvive: the new copies the scheduler reported in
// place ("backup made: …") are told to BackedUp, and those read before a
// server died are told before Survive is asked about it, as Survive's
// decision depends on them (replica.Holders).
func TestBackedUpBeforeSurvive(t *testing.T) {
	dir := t.TempDir()
	die, over := filepath.Join(dir, "die"), filepath.Join(dir, "over")
	s := shell(t)
	s.Grace = 100 * time.Millisecond
	var mu sync.Mutex
	var told []string
	s.BackedUp = func(server, backup int) {
		mu.Lock()
		defer mu.Unlock()
		told = append(told, fmt.Sprintf("%d on %d", server, backup))
	}
	var knew []string
	s.Survive = func(p *Proc) bool {
		mu.Lock()
		knew = slices.Clone(told)
		mu.Unlock()
		os.WriteFile(over, nil, 0o644)
		return true
	}
	script := "echo 'scheduler listening on 127.0.0.1:1'; echo 'job started: 3 servers, 3 workers'; " +
		"echo 'backup made: server 2 holds a copy of server 0'\"'\"'s ranges'; echo 'backup made: server 1 holds a copy of server 2'\"'\"'s ranges'; " +
		fmt.Sprintf("until [ -e %s ]; do sleep 0.01; done", over)
	if _, err := s.StartScheduler(context.Background(), sh("scheduler", script)); err != nil {
		t.Fatal(err)
	}
	s.Start(context.Background(), sh("server 1", fmt.Sprintf("until [ -e %s ]; do sleep 0.01; done; kill -9 $$", die)))
	go func() {
		// The server dies once the supervisor read both lines.
		for {
			s.mu.Lock()
			n := len(s.pauses)
			s.mu.Unlock()
			mu.Lock()
			n += len(told)
			mu.Unlock()
			if n >= 2 {
				break
			}
			time.Sleep(time.Millisecond)
		}
		os.WriteFile(die, nil, 0o644)
	}()
	if err := s.Wait(context.Background()); err != nil {
		t.Fatalf("Wait: %v", err)
	}
	if want := []string{"0 on 2", "2 on 1"}; !slices.Equal(knew, want) {
		t.Errorf("Survive was asked knowing the copies %q, want %q", knew, want)
	}
}

// TestKillHungScheduler: with KillHung, a scheduler that printed lines
// of life and then falls silent while the job runs (a stopped or hung
// one) is killed after two thirds of its timeout and offered to Replace
// with the reason; one that keeps printing, or never printed a line of
// life, is left alone.
func TestKillHungScheduler(t *testing.T) {
	const alive = "echo 'scheduler alive: timeout 300ms'"
	for _, c := range []struct {
		name, scheduler string
		hung            bool
	}{
		{"silent", "echo 'job started: 1 servers, 1 workers'; " + alive + "; exec sleep 1000", true},
		// It stops itself: SIGSTOP.
		{"stopped", "echo 'job started: 1 servers, 1 workers'; " + alive + "; kill -STOP $$; exec sleep 1000", true},
		// Lines every 0.1 s for 3 s, twice the 1 s it may be silent.
		{"lively", "echo 'job started: 1 servers, 1 workers'; for i in $(seq 30); do echo 'scheduler alive: timeout 1.5s'; sleep 0.1; done", false},
		{"no lines of life", "echo 'job started: 1 servers, 1 workers'; sleep 0.9", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := shell(t)
			s.KillHung = true
			var asked []string
			s.Replace = func(p *Proc) (Spec, bool) {
				asked = append(asked, p.Declared())
				return sh("scheduler", "exit 0"), true
			}
			start := time.Now()
			if _, err := s.StartScheduler(context.Background(), sh("scheduler", "echo 'scheduler listening on 127.0.0.1:1'; "+c.scheduler)); err != nil {
				t.Fatal(err)
			}
			if err := s.Wait(context.Background()); err != nil {
				t.Fatalf("Wait: %v", err)
			}
			took := time.Since(start)
			if !c.hung {
				if len(asked) != 0 {
					t.Fatalf("a scheduler not hung was killed: %q", asked)
				}
				return
			}
			if len(asked) != 1 || !strings.Contains(asked[0], "hung or stopped") || !strings.Contains(asked[0], "timeout of 300ms") {
				t.Fatalf("Replace asked with the reasons %q, want one saying it hung", asked)
			}
			if took < 200*time.Millisecond {
				t.Errorf("killed %v after its start, before two thirds of its timeout", took)
			}
			gone(t, s)
		})
	}
}

// TestLostLines: the line naming a process that died by itself and the
// process's exit, read in either order, never ask to kill its
// replacement, and a later line naming the replacement (hung) does; a
// line read early for a process that was not replaced is not taken for
// the line of a later death.
func TestLostLines(t *testing.T) {
	type event struct {
		kind       string // "line", "exit", "exit replaced"
		diedBefore bool   // for a line: the named process had ended by itself
	}
	for _, tc := range []struct {
		name   string
		events []event
		kills  []bool // for each line, in order
	}{
		{"exit first", []event{{"exit replaced", false}, {"line", false}, {"line", false}}, []bool{false, true}},
		{"line first", []event{{"line", true}, {"exit replaced", false}, {"line", false}}, []bool{false, true}},
		{"hung, killed", []event{{"line", false}}, []bool{true}},
		{"twice, line first each time", []event{{"line", true}, {"exit replaced", false}, {"line", true}, {"exit replaced", false}, {"line", false}}, []bool{false, false, true}},
		{"twice, mixed", []event{{"exit replaced", false}, {"line", false}, {"line", true}, {"exit replaced", false}, {"line", false}}, []bool{false, false, true}},
		{"early, not replaced, then replaced", []event{{"line", true}, {"exit", false}, {"exit replaced", false}, {"line", false}, {"line", false}}, []bool{false, false, true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var l lostLines
			var kills []bool
			for _, e := range tc.events {
				switch e.kind {
				case "line":
					news := l.line("node 1")
					if news && e.diedBefore {
						l.diedBefore("node 1")
					}
					kills = append(kills, news && !e.diedBefore)
				case "exit":
					l.exited("node 1", false)
				case "exit replaced":
					l.exited("node 1", true)
				}
			}
			if !slices.Equal(kills, tc.kills) {
				t.Errorf("kills %v, want %v", kills, tc.kills)
			}
		})
	}
}
