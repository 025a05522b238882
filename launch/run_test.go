package launch

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// memberEnv makes the test binary a fake member of a Cluster (fakeMember)
// instead of a test run.
const memberEnv = "LAUNCH_TEST_MEMBER"

// fakeJob is the job of the fake kind: what each member does, by name
// ("machine 1": "exit"); a member not named writes its report and ends.
type fakeJob struct {
	Do map[string]string `json:"do"`
}

// fakeMember is a member of a Cluster as colo node would be, driven by
// the fakeJob of its envelope: the scheduler prints its address and that
// the job started, then waits for every member's report; a member writes
// its Report and ends, or as its job says exits with status 3 ("exit"),
// hangs ("hang") or kills itself with SIGKILL ("die", unless it is a
// replacement, started with --recover), each once the members not named
// have written their reports. A Worker program (no arguments)
// reads the same from its COLO_* environment.
func fakeMember() {
	fs := flag.NewFlagSet("node", flag.ContinueOnError)
	role := fs.String("role", os.Getenv("COLO_ROLE"), "")
	jobFile := fs.String("job-file", os.Getenv("COLO_JOB_FILE"), "")
	result := fs.String("result", os.Getenv("COLO_RESULT"), "")
	rank := fs.Int("rank", -1, "")
	recover := fs.Bool("recover", os.Getenv("COLO_RECOVER") == "1", "")
	fs.String("scheduler", os.Getenv("COLO_SCHEDULER"), "")
	fs.String("host", "", "")
	fs.Int("num-servers", 0, "")
	fs.Int("num-workers", 0, "")
	fs.Int("num-evaluators", 0, "")
	fs.Duration("heartbeat", 0, "")
	fs.Duration("timeout", 0, "")
	fs.Duration("join-timeout", 0, "")
	fs.Duration("recover-wait", 0, "")
	args := os.Args[1:]
	if len(args) > 0 && args[0] == "node" {
		args = args[1:]
	}
	if err := fs.Parse(args); err != nil {
		os.Exit(2)
	}
	if *rank < 0 {
		fmt.Sscan(os.Getenv("COLO_RANK"), rank)
	}
	env, err := ReadEnvelopeFile(*jobFile)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	var job fakeJob
	if err := DecodeJob(env.Kind, env.Job, &job); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	if *role == "scheduler" {
		if os.Getenv("COLO_TOKEN") == "" || strings.Contains(strings.Join(os.Args, " "), os.Getenv("COLO_TOKEN")) {
			fmt.Fprintln(os.Stderr, "no token in the environment, or the token on the command line")
			os.Exit(2)
		}
		fmt.Print(schedulerPrefix + "127.0.0.1:1\n" + jobStartedPrefix + "fake\n")
		// The job ends when every member has reported.
		want := 0
		fmt.Sscan(os.Getenv("LAUNCH_TEST_MEMBERS"), &want)
		for {
			got, _ := filepath.Glob(filepath.Join(filepath.Dir(*jobFile), "*-*.json"))
			if len(got) >= want {
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	name := fmt.Sprintf("%s %d", *role, *rank)
	if len(os.Args) == 1 { // a Worker program
		fmt.Printf("%s says hello\n", name)
	}
	if do := job.Do[name]; do != "" && (do != "die" || !*recover) {
		// It fails once the members that end well have reported: they
		// would be killed the grace period after it, before their
		// reports on a loaded machine.
		want := 0
		fmt.Sscan(os.Getenv("LAUNCH_TEST_MEMBERS"), &want)
		for {
			got, _ := filepath.Glob(filepath.Join(filepath.Dir(*jobFile), "*-*.json"))
			if len(got) >= want-len(job.Do) {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	switch job.Do[name] {
	case "exit":
		fmt.Fprintf(os.Stderr, "%s: boom\n", name)
		os.Exit(3)
	case "hang":
		select {}
	case "die":
		if !*recover {
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {}
		}
	}
	rep := Report{Kind: env.Kind, Rank: *rank, Node: NodeSummary{Role: *role}, Report: json.RawMessage(fmt.Sprintf(`{"name":%q,"recovered":%v}`, name, *recover))}
	b, _ := json.Marshal(rep)
	if err := os.WriteFile(*result, b, 0o600); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
}

// fakeStarter is Loopback that keeps every command it made, so that a
// test can check none of their processes outlived the cluster.
type fakeStarter struct {
	Loopback
	mu   sync.Mutex
	cmds []*exec.Cmd
}

func (f *fakeStarter) Command(ctx context.Context, bin string, s Spec) *exec.Cmd {
	cmd := f.Loopback.Command(ctx, bin, s)
	f.mu.Lock()
	f.cmds = append(f.cmds, cmd)
	f.mu.Unlock()
	return cmd
}

// noOrphan fails t unless every process f started has been reaped.
func (f *fakeStarter) noOrphan(t *testing.T) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, cmd := range f.cmds {
		if cmd.Process == nil {
			continue
		}
		if cmd.ProcessState == nil {
			t.Errorf("%v (pid %d) was not reaped", cmd.Args, cmd.Process.Pid)
		} else if alive(cmd.Process.Pid) {
			t.Errorf("%v (pid %d) is still running", cmd.Args, cmd.Process.Pid)
		}
	}
}

// fakeCluster returns a Cluster of the fake kind on f, whose scheduler
// waits for reports members.
func fakeCluster(t *testing.T, f *fakeStarter, job fakeJob, reports int) *Cluster {
	t.Helper()
	env, err := NewEnvelope("fake", job)
	if err != nil {
		t.Fatal(err)
	}
	return &Cluster{Envelope: env, Machines: 3, Bin: os.Args[0], Starter: f, Grace: 300 * time.Millisecond,
		Env: []string{memberEnv + "=1", fmt.Sprintf("LAUNCH_TEST_MEMBERS=%d", reports)}}
}

// TestClusterRuns: every member reports; the outcome lists them in order
// with their reports, and the job's directory is gone.
func TestClusterRuns(t *testing.T) {
	f := &fakeStarter{}
	c := fakeCluster(t, f, fakeJob{}, 5)
	c.Machines, c.Servers, c.Workers = 0, 2, 3
	// A temporary directory of the test's own, so that another process's
	// job directory in the shared one cannot be taken for this job's.
	t.Setenv("TMPDIR", t.TempDir())
	var dir string
	c.OnStart = func(string) {
		m, _ := filepath.Glob(filepath.Join(os.TempDir(), "colo-job-*", "job.json"))
		if len(m) > 0 {
			dir = filepath.Dir(m[len(m)-1])
		}
	}
	out, err := c.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, m := range out.Members {
		names = append(names, m.Name)
		var r struct{ Name string }
		if m.ReportErr != nil || m.Report.Decode(&r) != nil || r.Name != m.Name || m.Report.Kind != "fake" {
			t.Errorf("%s: report %+v, %v", m.Name, m.Report, m.ReportErr)
		}
	}
	if got, want := strings.Join(names, ","), "worker 0,worker 1,worker 2,server 0,server 1"; got != want {
		t.Errorf("members %s, want %s", got, want)
	}
	if c.Hosts() != 6 {
		t.Errorf("Hosts %d, want 6", c.Hosts())
	}
	if dir == "" {
		t.Error("no job directory seen while the cluster ran")
	} else if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the job's directory %s is still there: %v", dir, err)
	}
	f.noOrphan(t)
}

// TestClusterFailures: a member that exits non-zero is named with its
// last line; one that hangs is killed after the grace period; one killed
// by a signal mid-job comes first, as the cause; none outlives Run.
func TestClusterFailures(t *testing.T) {
	for _, tc := range []struct {
		name string
		do   map[string]string
		want []string
	}{
		{"exit", map[string]string{"machine 1": "exit"}, []string{"machine 1 failed: exit status 3: machine 1: boom", "scheduler killed"}},
		{"hang", map[string]string{"machine 0": "exit", "machine 2": "hang"}, []string{"machine 0 failed: exit status 3: machine 0: boom", "machine 2 killed"}},
		{"killed", map[string]string{"machine 2": "die"}, []string{"machine 2 failed: signal: killed", "scheduler killed"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeStarter{}
			c := fakeCluster(t, f, fakeJob{Do: tc.do}, 3)
			t0 := time.Now()
			out, err := c.Run(context.Background())
			var fail *Failure
			if !errors.As(err, &fail) {
				t.Fatalf("Run: %v, want a *Failure", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\nwant it to say %q", err, w)
				}
			}
			if out == nil || len(out.Members) != 3 {
				t.Fatalf("outcome %+v", out)
			}
			for _, m := range out.Members {
				if (tc.do[m.Name] == "") != (m.Report != nil) {
					t.Errorf("%s: report %v (%v)", m.Name, m.Report, m.ReportErr)
				}
			}
			if took := time.Since(t0); took > 30*time.Second {
				t.Errorf("took %v", took)
			}
			f.noOrphan(t)
		})
	}
}

// TestClusterReplace: a member killed mid-job is started again with
// --recover when Replace says so, and the job ends well.
func TestClusterReplace(t *testing.T) {
	f := &fakeStarter{}
	c := fakeCluster(t, f, fakeJob{Do: map[string]string{"machine 1": "die"}}, 3)
	var asked []string
	c.Replace = func(name string, err error) bool {
		asked = append(asked, name+": "+err.Error())
		return true
	}
	out, err := c.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(asked) != 1 || asked[0] != "machine 1: signal: killed" {
		t.Errorf("Replace asked %q", asked)
	}
	var r struct{ Recovered bool }
	if m := out.Members[1]; m.Report == nil || m.Report.Decode(&r) != nil || !r.Recovered {
		t.Errorf("machine 1: %+v %v", m.Report, m.ReportErr)
	}
	f.noOrphan(t)
}

// TestClusterWorkerProgram runs the workers as another program, which
// joins through its COLO_* environment.
func TestClusterWorkerProgram(t *testing.T) {
	f := &fakeStarter{}
	c := fakeCluster(t, f, fakeJob{}, 3)
	c.Machines, c.Servers, c.Workers = 0, 1, 2
	c.Worker = &Command{Path: os.Args[0], Env: []string{memberEnv + "=1"}}
	c.JoinTimeout = 90 * time.Second
	out, err := c.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range out.Members {
		var r struct{ Name string }
		if m.Report == nil || m.Report.Decode(&r) != nil || r.Name != m.Name {
			t.Errorf("%s: %+v %v", m.Name, m.Report, m.ReportErr)
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, cmd := range f.cmds {
		if len(cmd.Args) > 1 && cmd.Args[1] == "node" && strings.Contains(strings.Join(cmd.Args, " "), "--role worker") {
			t.Errorf("a worker ran colo node: %v", cmd.Args)
		}
		// The cluster's join timeout reaches every process: the
		// scheduler and the servers as --join-timeout, the workers'
		// program as COLO_JOIN_TIMEOUT.
		if node := len(cmd.Args) > 1 && cmd.Args[1] == "node"; node && !strings.Contains(strings.Join(cmd.Args, " "), "--join-timeout 1m30s") {
			t.Errorf("%v: no --join-timeout 1m30s", cmd.Args)
		} else if !node && !slices.Contains(cmd.Env, "COLO_JOIN_TIMEOUT=1m30s") {
			t.Errorf("worker %v: no COLO_JOIN_TIMEOUT=1m30s in its environment", cmd.Args)
		}
	}
}

// syncBuffer is a buffer safe for concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// TestClusterWorkerOutput: a Worker program's standard output and error
// go to Output, rank by rank, and a failing worker's error still names
// it with the last lines of its standard error.
func TestClusterWorkerOutput(t *testing.T) {
	f := &fakeStarter{}
	c := fakeCluster(t, f, fakeJob{Do: map[string]string{"worker 1": "exit"}}, 3)
	c.Machines, c.Servers, c.Workers = 0, 1, 2
	outs := []*syncBuffer{{}, {}}
	c.Worker = &Command{Path: os.Args[0], Env: []string{memberEnv + "=1"}, Output: func(rank int) io.Writer { return outs[rank] }}
	_, err := c.Run(context.Background())
	var fail *Failure
	if !errors.As(err, &fail) || fail.Procs[0].Name() != "worker 1" || !strings.Contains(err.Error(), "worker 1: boom") {
		t.Errorf("Run: %v, want worker 1's failure with its standard error", err)
	}
	if got := outs[0].String(); got != "worker 0 says hello\n" {
		t.Errorf("worker 0's output %q", got)
	}
	if got := outs[1].String(); !strings.Contains(got, "worker 1 says hello\n") || !strings.Contains(got, "worker 1: boom\n") {
		t.Errorf("worker 1's output %q, want its standard output and error", got)
	}
	f.noOrphan(t)
}

// TestClusterStopped: ctx done stops every process.
func TestClusterStopped(t *testing.T) {
	f := &fakeStarter{}
	c := fakeCluster(t, f, fakeJob{Do: map[string]string{"machine 0": "hang", "machine 1": "hang", "machine 2": "hang"}}, 3)
	ctx, cancel := context.WithCancel(context.Background())
	c.OnStart = func(string) { cancel() }
	if _, err := c.Run(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Run: %v, want it stopped", err)
	}
	f.noOrphan(t)
}

// TestEnvelope: a job round-trips through its envelope; an envelope or a
// job with an unknown field, a wrong type or a missing part is refused,
// naming it.
func TestEnvelope(t *testing.T) {
	e, err := NewEnvelope("fake", fakeJob{Do: map[string]string{"machine 0": "exit"}})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "job.json")
	if err := e.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	got, err := ReadEnvelopeFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var job fakeJob
	if err := DecodeJob(got.Kind, got.Job, &job); err != nil || got.Kind != "fake" || job.Do["machine 0"] != "exit" {
		t.Fatalf("round trip: %+v %+v %v", got, job, err)
	}
	for _, tc := range []struct{ in, want string }{
		{`{"kind":"fake","job":{},"extra":1}`, `unknown field "extra"`},
		{`{"job":{}}`, `no "kind"`},
		{`{"kind":"fake"}`, `no "job"`},
		{`{"kind":3,"job":{}}`, `Envelope.kind of type string`},
		{`{"kind":"fake","job":{}} {}`, `data after`},
	} {
		if _, err := ReadEnvelope(strings.NewReader(tc.in), "F"); err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "F") {
			t.Errorf("%s: %v, want %q", tc.in, err, tc.want)
		}
	}
	for _, tc := range []struct{ in, want string }{
		{`{"do":{},"undo":1}`, `unknown field "undo"`},
		{`{"do":3}`, `do: a JSON number, want an object`},
	} {
		if err := DecodeJob("fake", json.RawMessage(tc.in), &job); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.in, err, tc.want)
		}
	}
	if _, err := (Kinds{}).Lookup("fake"); err == nil {
		t.Error("an unknown kind was found")
	}
}
