package deploy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"colo/app"
	"colo/balance"
	"colo/datasets"
	"colo/internal/colotest"
	"colo/launch"
	"colo/train"
	"colo/transport/tcp/tcptest"
)

// news20Files writes the embedded 20 Newsgroups sample to temporary files
// and returns the training and test paths.
func news20Files(t *testing.T) (string, string) {
	t.Helper()
	dir := t.TempDir()
	write := func(name string, r io.Reader) string {
		b, err := io.ReadAll(r)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	return write("train.libsvm.xz", datasets.OpenNews20Train()), write("test.libsvm.xz", datasets.OpenNews20Test())
}

// newsJob returns logistic regression on 20 Newsgroups, random
// placement, on k machines for the given passes, opened and placed.
func newsJob(t *testing.T, k, passes int, test bool) (train.Job, *app.Opened, func() *train.Deployment) {
	t.Helper()
	tr, te := news20Files(t)
	job, err := app.DefaultJob("lr")
	if err != nil {
		t.Fatal(err)
	}
	job.Data.Train, job.Placement = tr, "random"
	if test {
		job.Data.Test = te
	}
	job.Config.Machines, job.Config.MaxPasses, job.Config.Epsilon = k, passes, 0
	opened, err := app.Open(job)
	if err != nil {
		t.Fatal(err)
	}
	return job, opened, nil
}

// sameTraining fails unless two runs trained identically: the same
// passes, losses, test measures (sameModel) and training traffic, bit
// for bit.
func sameTraining(t *testing.T, want, got *train.Result) {
	t.Helper()
	sameModel(t, "in process", want, got)
	if got.BytesInter != want.BytesInter || got.BytesInner != want.BytesInner || got.InterValues != want.InterValues {
		t.Errorf("traffic inter %d inner %d values %d, in process %d %d %d",
			got.BytesInter, got.BytesInner, got.InterValues, want.BytesInter, want.BytesInner, want.InterValues)
	}
}

// deploy trains the job on d.
func deploy(t *testing.T, job train.Job, opened *app.Opened, d train.Deployer) (*train.Result, error) {
	t.Helper()
	p, _, err := opened.Place(job)
	if err != nil {
		t.Fatal(err)
	}
	return train.Run(context.Background(), job, opened.App, p, d)
}

// TestProcessesMatchInProcess trains 20 Newsgroups on a scheduler and two
// machines as processes on loopback: BSP sums in rank order, so the
// passes, the test measures and the traffic equal the in-process run's
// exactly.
func TestProcessesMatchInProcess(t *testing.T) {
	colotest.Need(t, coloBin)
	job, opened, _ := newsJob(t, 2, 2, true)
	want, err := deploy(t, job, opened, InProcess{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := deploy(t, job, opened, &Processes{Bin: coloBin, Graph: opened.Data.Graph, Cache: opened.WriteCache})
	if err != nil {
		t.Fatal(err)
	}
	sameTraining(t, want, got)
	if !(got.StartSeconds > 0 && got.TrainSeconds > 0 && got.TotalSeconds >= got.StartSeconds+got.TrainSeconds) {
		t.Errorf("times: start %v train %v total %v", got.StartSeconds, got.TrainSeconds, got.TotalSeconds)
	}
}

// TestProcessesNetns trains with each machine in its own network
// namespace, its link shaped to 200 Mbit/s: the same training as in
// process. It needs root and iproute2.
func TestProcessesNetns(t *testing.T) {
	colotest.Need(t, coloBin)
	if err := launch.CheckNetns(); err != nil {
		t.Skipf("network namespaces unavailable: %v", err)
	}
	job, opened, _ := newsJob(t, 2, 1, true)
	job.Config.LinkBandwidth = 25e6
	want, err := deploy(t, job, opened, InProcess{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := deploy(t, job, opened, &Processes{Bin: coloBin, Graph: opened.Data.Graph, Netns: true})
	if err != nil {
		t.Fatal(err)
	}
	sameTraining(t, want, got)
}

// TestProcessesRefuse: what the deployment cannot run is refused before
// anything starts.
func TestProcessesRefuse(t *testing.T) {
	job, opened, _ := newsJob(t, 2, 1, false)
	for _, c := range []struct {
		d    *Processes
		edit func(*train.Job)
		want string
	}{
		{&Processes{Bin: "/nonexistent", Graph: opened.Data.Graph, Netns: true}, nil, "link bandwidth"},
	} {
		j := job
		if c.edit != nil {
			c.edit(&j)
		}
		if _, err := deploy(t, j, opened, c.d); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("want an error naming %q, got %v", c.want, err)
		}
	}
}

// children returns the processes whose parent is pid, with their command
// lines.
func children(pid int) map[int]string {
	out := map[int]string{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		c, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid …: comm may hold spaces, so split after ')'.
		i := bytes.LastIndexByte(stat, ')')
		f := strings.Fields(string(stat[i+1:]))
		if len(f) < 2 || f[1] != strconv.Itoa(pid) {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		out[c] = strings.ReplaceAll(string(cmdline), "\x00", " ")
	}
	return out
}

// TestProcessesMachineKilled kills machine 1 in the middle of a long job,
// once its checkpoint of round 2 is written: the deployment ends on the
// kill itself (the supervisor sees the process die, the scheduler its
// links close) with a *launch.Failure naming it, and no process of the
// cluster is left.
func TestProcessesMachineKilled(t *testing.T) {
	colotest.Need(t, coloBin)
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc to find the machine's process")
	}
	job, opened, _ := newsJob(t, 2, 100000, false)
	dir := filepath.Join(t.TempDir(), "ck")
	job.Config.Checkpoint = train.Checkpoint{Dir: dir, Every: 2}
	// The timeout of silence, the other way a killed machine is noticed,
	// is ten minutes, and the job's 100,000 passes outlast the test: only
	// the kill's own events end it within the guard of a minute, which is
	// 30 times the supervisor's grace of 2 s for the other processes to
	// end before they are killed, so that no load reaches it.
	run := deployInBackground(t, job, opened, &Processes{Bin: coloBin, Graph: opened.Data.Graph, Timeout: 10 * time.Minute})
	victim := run.awaitCheckpoint(t, dir, 2, role("machine", 1))[0]
	all := children(os.Getpid())
	signal(t, syscall.SIGKILL, victim)
	killed := time.Now()
	err := run.wait(t, time.Minute, "machine 1 was killed").err
	took := time.Since(killed)
	var f *launch.Failure
	if err == nil || !errors.As(err, &f) {
		t.Fatalf("the job ended with %v, want a *launch.Failure", err)
	}
	// Whichever process notices first, the error names the killed
	// machine: as a process, or as the worker the scheduler lost.
	if msg := err.Error(); !strings.Contains(msg, "machine 1 failed") && !strings.Contains(msg, "worker 1 (node 5") {
		t.Fatalf("the error does not name machine 1: %s", msg)
	}
	for pid, line := range all {
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) && isColo(pid) {
			t.Errorf("process %d (%s) still runs after the deployment ended", pid, line)
		}
	}
	t.Logf("ended %v after the kill: %v", took.Round(time.Millisecond), err)
}

// isColo reports whether pid runs the colo binary (and is not a zombie
// left to the init process).
func isColo(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(stat, ')')
	f := strings.Fields(string(stat[i+1:]))
	return len(f) > 0 && f[0] != "Z"
}

// TestProcessesDense trains a dense model, placed by a sharding scheme
// (written once for the processes), as processes on loopback with an
// evaluator process: the same training as in process, bit for bit (BSP),
// and the evaluator's last score is the final evaluation.
func TestProcessesDense(t *testing.T) {
	colotest.Need(t, coloBin)
	var csv strings.Builder
	for i := range 300 {
		c := i % 3
		fmt.Fprintf(&csv, "%d", c)
		for j := range 16 {
			fmt.Fprintf(&csv, ",%.3f", float64((i*7+j*13)%10)/10+float64(c*(j%3)))
		}
		csv.WriteString("\n")
	}
	path := filepath.Join(t.TempDir(), "blobs.csv")
	if err := os.WriteFile(path, []byte(csv.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	job, err := app.DefaultJob("mlp")
	if err != nil {
		t.Fatal(err)
	}
	job.Data.Train, job.Placement = path, "stratified"
	job.Config.Machines, job.Config.MaxPasses, job.Config.Batch = 2, 2, 30
	if err := app.SetOptions(&job, map[string]any{"hidden": []int{8}, "header": "no"}); err != nil {
		t.Fatal(err)
	}
	opened, err := app.Open(job)
	if err != nil {
		t.Fatal(err)
	}
	want, err := deploy(t, job, opened, InProcess{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := deploy(t, job, opened, &Processes{Bin: coloBin})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("processes: loss %v accuracy %v in %.2f s", got.FinalTrainLoss, *got.Accuracy, got.TotalSeconds)
	for _, r := range []*train.Result{want, got} {
		if r.Evaluator == nil || len(r.Evaluator.Checks) == 0 {
			t.Fatalf("no evaluator: %+v", r.Evaluator)
		}
		last := r.Evaluator.Checks[len(r.Evaluator.Checks)-1]
		if !last.Final || *last.Validation.Accuracy != *r.Accuracy || last.Step != int64(2*r.Rounds) {
			t.Errorf("the evaluator's last score %+v (accuracy %v), the final evaluation's accuracy %v after %d rounds",
				last, *last.Validation.Accuracy, *r.Accuracy, r.Rounds)
		}
	}
	if got.FinalTrainLoss != want.FinalTrainLoss || *got.Accuracy != *want.Accuracy || got.BytesInter != want.BytesInter {
		t.Errorf("processes: loss %v accuracy %v bytes %d; in process %v %v %d",
			got.FinalTrainLoss, *got.Accuracy, got.BytesInter, want.FinalTrainLoss, *want.Accuracy, want.BytesInter)
	}
	// In network namespaces (root and iproute2 only), links shaped.
	if launch.CheckNetns() == nil {
		job.Config.LinkBandwidth = 25e6
		ns, err := deploy(t, job, opened, &Processes{Bin: coloBin, Netns: true})
		if err != nil {
			t.Fatal(err)
		}
		if ns.FinalTrainLoss != want.FinalTrainLoss || *ns.Accuracy != *want.Accuracy {
			t.Errorf("namespaces: loss %v accuracy %v; in process %v %v", ns.FinalTrainLoss, *ns.Accuracy, want.FinalTrainLoss, *want.Accuracy)
		}
		// Random rates that tc changes while the job runs, and the
		// balancer moving keys by its measurements: the same training.
		// (Three machines: on two every split takes the same time.)
		job3 := job
		job3.Config.Machines, job3.Config.LinkBandwidth = 3, 0
		want3, err := deploy(t, job3, opened, InProcess{})
		if err != nil {
			t.Fatal(err)
		}
		job3.Config.RandomBandwidth, job3.Config.BandwidthChange = 25e6, 100*time.Millisecond
		bc := balance.DefaultConfig()
		bc.Scheme, bc.Slice, bc.Probe, bc.MinGain = balance.Aware, 16, 16, 0
		job3.Config.Balance = &bc
		moving, err := deploy(t, job3, opened, &Processes{Bin: coloBin, Netns: true})
		if err != nil {
			t.Fatal(err)
		}
		if moving.FinalTrainLoss != want3.FinalTrainLoss || *moving.Accuracy != *want3.Accuracy || moving.Balance == nil || len(moving.Balance.Decisions) != moving.Rounds {
			t.Errorf("namespaces, changing rates, aware: loss %v accuracy %v balance %+v; in process %v %v",
				moving.FinalTrainLoss, *moving.Accuracy, moving.Balance, want3.FinalTrainLoss, *want3.Accuracy)
		}
		t.Logf("namespaces, changing rates, aware: %d keys moved", moving.Balance.KeysMoved)
		job.Config.LinkBandwidth = 0
	}
	// Two servers apart from the two workers: the same training, and the
	// servers' counters reach the result.
	job.Config.Servers = 2
	apart, err := deploy(t, job, opened, &Processes{Bin: coloBin})
	if err != nil {
		t.Fatal(err)
	}
	if apart.FinalTrainLoss != want.FinalTrainLoss || *apart.Accuracy != *want.Accuracy || apart.Servers != 2 ||
		apart.Staleness == nil || apart.Staleness.Pushes != uint64(2*2*apart.Rounds) {
		t.Errorf("servers apart: loss %v accuracy %v servers %d staleness %+v; in process %v %v",
			apart.FinalTrainLoss, *apart.Accuracy, apart.Servers, apart.Staleness, want.FinalTrainLoss, *want.Accuracy)
	}
}

// TestProcessesTLS trains 20 Newsgroups on a scheduler and two machines
// as processes whose links are all mutual TLS: the same training, bit for
// bit, as in process.
func TestProcessesTLS(t *testing.T) {
	colotest.Need(t, coloBin)
	ca, err := tcptest.NewCA("cluster")
	if err != nil {
		t.Fatal(err)
	}
	f, err := ca.WriteNode(t.TempDir(), "node")
	if err != nil {
		t.Fatal(err)
	}
	job, opened, _ := newsJob(t, 2, 2, true)
	want, err := deploy(t, job, opened, InProcess{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := deploy(t, job, opened, &Processes{Bin: coloBin, Graph: opened.Data.Graph, TLS: launch.TLSFlags{Cert: f.Cert, Key: f.Key, CA: f.CA}})
	if err != nil {
		t.Fatal(err)
	}
	sameTraining(t, want, got)
	// Files that do not go together are refused before anything starts.
	if _, err := deploy(t, job, opened, &Processes{Bin: coloBin, Graph: opened.Data.Graph, TLS: launch.TLSFlags{Cert: f.Cert}}); err == nil || !strings.Contains(err.Error(), "--tls-key is missing") {
		t.Fatalf("half the TLS files: %v", err)
	}
}

// TestFallbackJoinsEvent: a run that fails within one detection window
// of a replacement (which could not work) restarts the whole job in the
// same event; one that fails later, or after a whole-job restart, is a
// new event.
func TestFallbackJoinsEvent(t *testing.T) {
	t0 := time.Unix(1000, 0)
	pd := &Processes{Timeout: 3 * time.Second}
	for _, tc := range []struct {
		name string
		recs []Recovery
		at   time.Duration
		want bool
	}{
		{"no failure before", nil, 0, false},
		{"just after a replacement", []Recovery{{Replaced: "worker 0", Noticed: t0}}, 50 * time.Millisecond, true},
		{"at the window's end", []Recovery{{Replaced: "worker 0", Noticed: t0}}, 3 * time.Second, true},
		{"after the window", []Recovery{{Replaced: "worker 0", Noticed: t0}}, 3*time.Second + 1, false},
		{"after a whole-job restart", []Recovery{{Replaced: "worker 0", Noticed: t0}, {Noticed: t0, Joined: true}}, time.Millisecond, false},
	} {
		pd.Recovered = tc.recs
		if got := pd.fallback(t0.Add(tc.at)); got != tc.want {
			t.Errorf("%s: fallback %v, want %v", tc.name, got, tc.want)
		}
	}
}
