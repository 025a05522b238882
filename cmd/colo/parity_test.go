package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"colo/app/smoke"
	"colo/distparsa"
	"colo/gossip"
	"colo/gossip/job"
	"colo/launch"
	"colo/ps/sched"
	"colo/train"
	"colo/train/deploy"
)

// fashionDir is Fashion-MNIST in the shared data beside the repository.
var fashionDir = filepath.Join("..", "..", "..", "shared", "data", "fashion-mnist")

// parityJob is one job of TestLaunchParity: colo train's arguments, and
// the shape of its cluster.
type parityJob struct {
	name            string
	args            []string
	machines, apart int // apart: servers apart from the machines' workers
}

// TestLaunchParity trains an lr job on 20 Newsgroups and an mlp job on
// Fashion-MNIST, each co-located on 4 machines and with 2 servers apart
// from 2 workers, under BSP: through colo train in this process, colo
// train --processes, and the job colo train --write-job writes run by
// colo node --job-file under mpirun and under the DMLC_* variables that
// dmlc-core's local tracker sets (DMLC_ROLE, DMLC_TASK_ID,
// DMLC_PS_ROOT_URI, DMLC_PS_ROOT_PORT, DMLC_NUM_SERVER, DMLC_NUM_WORKER;
// the scheduler, the servers and the workers separate processes, which
// has no co-located machines). Every path gives the same losses, bit for
// bit.
func TestLaunchParity(t *testing.T) {
	if testing.Short() {
		t.Skip("runs clusters of processes")
	}
	mpirun, err := exec.LookPath("mpirun")
	if err == nil {
		if out, verr := exec.Command(mpirun, "--version").CombinedOutput(); verr != nil || !strings.Contains(string(out), "Open MPI") {
			mpirun = ""
		}
	}
	lr := []string{news20(t), "--test", news20Test(t), "--max-passes", "2", "--placement", "random"}
	jobs := []parityJob{
		{name: "lr co-located", args: append(lr, "--machines", "4"), machines: 4},
		{name: "lr apart", args: append(lr, "--machines", "2", "--servers", "2"), machines: 2, apart: 2},
	}
	images := filepath.Join(fashionDir, "t10k-images-idx3-ubyte.gz")
	if _, err := os.Stat(images); err != nil {
		t.Logf("no mlp jobs: Fashion-MNIST is not in ../shared/data (%v)", err)
	} else {
		mlp := []string{images, "--labels", filepath.Join(fashionDir, "t10k-labels-idx1-ubyte.gz"), "--app", "mlp",
			"--hidden", "32", "--max-steps", "12", "--eval-every", "0"}
		jobs = append(jobs,
			parityJob{name: "mlp co-located", args: append(mlp, "--machines", "4"), machines: 4},
			parityJob{name: "mlp apart", args: append(mlp, "--machines", "2", "--servers", "2"), machines: 2, apart: 2})
	}
	for _, j := range jobs {
		t.Run(j.name, func(t *testing.T) {
			want := trainInProcess(t, j.args...)
			if len(want.RoundsDetail) == 0 {
				t.Fatal("no passes in process")
			}
			got, _ := trainBinary(t, 3*time.Minute, append(j.args, "--processes")...)
			sameLosses(t, "--processes", want, passesOf(got))
			jobFile := filepath.Join(t.TempDir(), "job.json")
			if code, _, errOut := colo(t, append([]string{"train", "--write-job", jobFile}, j.args...)...); code != 0 {
				t.Fatalf("--write-job: exit %d: %s", code, errOut)
			}
			if mpirun == "" {
				t.Log("mpirun (Open MPI) is not on PATH: apt-get install openmpi-bin (.ci/run installs it); the job is not run under mpirun")
			} else {
				sameLosses(t, "mpirun", want, underMPI(t, mpirun, jobFile, j))
			}
			if j.apart > 0 {
				sameLosses(t, "DMLC", want, underDMLC(t, jobFile, j))
			}
		})
	}
}

// passesOf returns a result's passes.
func passesOf(r *train.Result) []train.Pass {
	var out []train.Pass
	for _, p := range r.RoundsDetail {
		out = append(out, train.Pass{Pass: p.Pass, TrainLoss: p.TrainLoss})
	}
	return out
}

// sameLosses fails unless got has the passes and losses of want, bit for
// bit.
func sameLosses(t *testing.T, how string, want *train.Result, got []train.Pass) {
	t.Helper()
	if len(got) != len(want.RoundsDetail) {
		t.Fatalf("%s: %d passes, in process %d", how, len(got), len(want.RoundsDetail))
	}
	for i, p := range want.RoundsDetail {
		if got[i].TrainLoss != p.TrainLoss {
			t.Errorf("%s: pass %d: loss %v, in process %v", how, p.Pass, got[i].TrainLoss, p.TrainLoss)
		}
	}
}

// freePort returns a loopback port that was free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// portTaken reports whether text (a process's standard error, or an
// error quoting it) says that the loopback port could not be bound
// because another socket had it: a port that freePort found free, which
// another process took before the scheduler bound it. The launches that
// must tell every process the scheduler's port beforehand (mpirun's,
// DMLC's) run again on another port then, up to 5 times, and log it.
func portTaken(text string, port int) bool {
	return strings.Contains(text, "listen tcp 127.0.0.1:"+strconv.Itoa(port)+": bind: address already in use")
}

// worker0Passes returns the passes of worker 0 from the JSON lines of
// colo node --json (other lines are skipped).
func worker0Passes(t *testing.T, out []byte) []train.Pass {
	t.Helper()
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if !bytes.HasPrefix(line, []byte("{")) {
			continue
		}
		var s launch.NodeSummary
		if err := json.Unmarshal(line, &s); err != nil {
			t.Fatalf("a summary: %v: %s", err, line)
		}
		for _, n := range s.Nodes {
			if n == "worker 0" && len(s.Train) > 0 {
				var w train.WorkerResult
				if err := json.Unmarshal(s.Train, &w); err != nil {
					t.Fatal(err)
				}
				return w.Passes
			}
		}
	}
	t.Fatalf("no summary of worker 0 in:\n%s", out)
	return nil
}

// underMPI runs the job file under mpirun: one command line for every
// rank, rank 0 the scheduler.
func underMPI(t *testing.T, mpirun, jobFile string, j parityJob) []train.Pass {
	t.Helper()
	np := 1 + j.machines + j.apart
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var outDir string
	for try := 1; ; try++ {
		port := freePort(t)
		args := []string{"--allow-run-as-root", "--oversubscribe", "-np", strconv.Itoa(np),
			"-x", "COLO_TOKEN=parity", "-x", "COLO_SCHEDULER=127.0.0.1:" + strconv.Itoa(port), "-x", "COLO_JSON=true"}
		if j.apart > 0 {
			args = append(args, "-x", fmt.Sprintf("COLO_NUM_SERVERS=%d", j.apart), "-x", fmt.Sprintf("COLO_NUM_WORKERS=%d", j.machines))
		}
		// Each rank's output in a file of its own: mpirun forwards the
		// ranks' standard outputs in chunks, so two summaries on its own
		// standard output can interleave within a line.
		outDir = t.TempDir()
		args = append(args, "--output-filename", outDir)
		cmd := exec.CommandContext(ctx, mpirun, append(args, coloBin, "node", "--job-file", jobFile)...)
		cmd.Env = noColoEnv(cmd.Environ())
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err == nil {
			break
		}
		// Rank 0, the scheduler, binds the port.
		var rank0 []byte
		if f, _ := filepath.Glob(filepath.Join(outDir, "*", "rank.0", "stderr")); len(f) == 1 {
			rank0, _ = os.ReadFile(f[0])
		}
		if !portTaken(string(rank0), port) || try == 5 {
			t.Fatalf("mpirun: %v\nstdout:\n%s\nstderr:\n%s", err, out, stderr.Bytes())
		}
		t.Logf("port %d was taken before rank 0's scheduler bound it; another port: %s", port, rank0)
	}
	files, _ := filepath.Glob(filepath.Join(outDir, "*", "rank.*", "stdout"))
	if len(files) != np {
		t.Fatalf("mpirun --output-filename: %d files of standard output, want %d: %v", len(files), np, files)
	}
	var all []byte
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		all = append(append(all, b...), '\n')
	}
	return worker0Passes(t, all)
}

// underDMLC runs the job file as dmlc-core's local tracker would: the
// scheduler, then the workers (DMLC_TASK_ID 0…W−1) and the servers (W…),
// each with the same DMLC_* variables and the job in COLO_JOB_FILE.
func underDMLC(t *testing.T, jobFile string, j parityJob) []train.Pass {
	t.Helper()
	var port int
	env := func(role string, task int) []string {
		e := []string{"DMLC_ROLE=" + role, "DMLC_PS_ROOT_URI=127.0.0.1", "DMLC_PS_ROOT_PORT=" + strconv.Itoa(port),
			"DMLC_NUM_SERVER=" + strconv.Itoa(j.apart), "DMLC_NUM_WORKER=" + strconv.Itoa(j.machines),
			"COLO_JOB_FILE=" + jobFile, "COLO_TOKEN=dmlc-parity", "COLO_JSON=true"}
		if task >= 0 {
			e = append(e, "DMLC_TASK_ID="+strconv.Itoa(task))
		}
		return e
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	sup := launch.NewSupervisor(coloBin, launch.Loopback{})
	for try := 1; ; try++ {
		port = freePort(t)
		_, err := sup.StartScheduler(ctx, launch.Spec{Name: "scheduler", Args: []string{"node"}, Env: env("scheduler", -1)})
		if err == nil {
			break
		}
		if !portTaken(err.Error(), port) || try == 5 {
			t.Fatal(err)
		}
		t.Logf("port %d was taken before the scheduler bound it; another port: %v", port, err)
	}
	var w0 *launch.Proc
	for i := range j.machines {
		p := sup.Start(ctx, launch.Spec{Name: fmt.Sprintf("worker %d", i), Host: 1 + j.apart + i, Args: []string{"node"}, Env: env("worker", i), Stdout: true})
		if i == 0 {
			w0 = p
		}
	}
	for i := range j.apart {
		sup.Start(ctx, launch.Spec{Name: fmt.Sprintf("server %d", i), Host: 1 + i, Args: []string{"node"}, Env: env("server", j.machines+i)})
	}
	if err := sup.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	return worker0Passes(t, w0.Stdout())
}

// noColoEnv returns env without COLO_* and DMLC_* variables.
func noColoEnv(env []string) []string {
	var out []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, "COLO_") && !strings.HasPrefix(kv, "DMLC_") {
			out = append(out, kv)
		}
	}
	return out
}

// TestJobFile: the job colo train --write-job writes goes through its
// envelope unchanged; colo node refuses, naming the field or flag, a job
// file with an unknown field, a wrong type or a missing required field,
// and a flag that would describe the job beside it. Every kind refuses
// an unknown field of its job.
func TestJobFile(t *testing.T) {
	data := news20(t)
	jobFile := filepath.Join(t.TempDir(), "job.json")
	if code, _, errOut := colo(t, "train", data, "--machines", "2", "--placement", "random", "--write-job", jobFile); code != 0 {
		t.Fatalf("--write-job: exit %d: %s", code, errOut)
	}
	env, err := launch.ReadEnvelopeFile(jobFile)
	if err != nil {
		t.Fatal(err)
	}
	j, err := deploy.DecodeJob(env.Job)
	if err != nil || env.Kind != "train" || j.App != "lr" || j.Config.Machines != 2 || len(j.Route) == 0 || j.Width != 20 || !filepath.IsAbs(j.Data.Train) {
		t.Fatalf("the job written: kind %s, app %s, %d machines, %d bytes of route, width %d, data %s: %v", env.Kind, j.App, j.Config.Machines, len(j.Route), j.Width, j.Data.Train, err)
	}
	again, err := launch.NewEnvelope(deploy.Name, j)
	if err != nil || !bytes.Equal(compactJSON(t, again.Job), compactJSON(t, env.Job)) {
		t.Fatalf("the job does not round-trip: %v", err)
	}
	b, _ := os.ReadFile(jobFile)
	edit := func(old, new string) string {
		if !strings.Contains(string(b), old) {
			t.Fatalf("the job has no %s", old)
		}
		p := filepath.Join(t.TempDir(), "job.json")
		if err := os.WriteFile(p, []byte(strings.Replace(string(b), old, new, 1)), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	bare := filepath.Join(t.TempDir(), "bare.json") // a train.Job, as older colo train --processes wrote it
	if err := os.WriteFile(bare, env.Job, 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := colo(t, "node", "--role", "machine", "--rank", "9", "--scheduler", "127.0.0.1:1", "--job-file", bare); code == 0 || !strings.Contains(errOut, "--rank 9: the placement random has 2 machines") {
		t.Errorf("a bare training job: exit %d: %s", code, errOut)
	}
	node := []string{"node", "--role", "machine", "--rank", "0", "--scheduler", "127.0.0.1:1"}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--job-file", jobFile, "--lr", "0.3"}, "--lr: the job is --job-file's"},
		{[]string{"--job-file", edit(`"app": "lr"`, `"app": "lr", "bogus": 1`)}, `unknown field "bogus"`},
		{[]string{"--job-file", edit(`"machines": 2`, `"machines": "two"`)}, "config.machines"},
		{[]string{"--job-file", edit(`"app": "lr"`, `"app": ""`)}, "app is empty"},
		{[]string{"--job-file", edit(`"kind": "train"`, `"kind": "sorting"`)}, `kind "sorting": want smoke, train, parsa, gossip`},
	} {
		code, _, errOut := colo(t, append(node, c.args...)...)
		if code == 0 || !strings.Contains(errOut, c.want) {
			t.Errorf("colo node %v: exit %d: %s\nwant %q", c.args[2:], code, errOut, c.want)
		}
	}
	for _, k := range nodeKinds(nil) {
		var cfg sched.Config
		if err := k.Scheduler(json.RawMessage(`{"bogus": 1}`), &cfg); err == nil || !strings.Contains(err.Error(), `unknown field "bogus"`) {
			t.Errorf("kind %s: a job with an unknown field: %v", k.Name(), err)
		}
		if err := k.Scheduler(json.RawMessage(`[1]`), &cfg); err == nil || !strings.Contains(err.Error(), "job of kind "+k.Name()) {
			t.Errorf("kind %s: a job of the wrong type: %v", k.Name(), err)
		}
	}
}

// compactJSON returns b without its insignificant spaces.
func compactJSON(t *testing.T, b []byte) []byte {
	t.Helper()
	var out bytes.Buffer
	if err := json.Compact(&out, b); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// TestKindsRoundTrip: a job of every kind colo node runs goes through its
// envelope, written and read again, and configures the scheduler as its
// fields say.
func TestKindsRoundTrip(t *testing.T) {
	sj := smoke.DefaultJob()
	sj.Keys, sj.Consistency, sj.Tau = 777, "bounded", 2
	pj := distparsa.Job{Data: "x.svm", HashBits: 20, K: 3, Seed: 5, Init: "global", Out: "out", Keys: 99, Config: distparsa.DefaultConfig()}
	pj.Config.Workers = 3
	gc := gossip.DefaultConfig()
	gc.Workers = 2
	gj := job.ProcSpec{Gossip: gc, Shards: [][]int32{{0, 2}, {1}}, Link: 1e6}
	for _, c := range []struct {
		kind string
		job  any
		want func(sched.Config) bool
	}{
		{"smoke", sj, func(c sched.Config) bool { return c.NumKeys == 777 && c.Clock.Tau == 2 }},
		{"parsa", pj, func(c sched.Config) bool {
			return c.NumServers == 3 && c.NumWorkers == 3 && c.NumKeys == 99 && c.Width == 3
		}},
		{"gossip", gj, func(c sched.Config) bool { return c.NumServers == 2 && c.NumWorkers == 2 }},
	} {
		env, err := launch.NewEnvelope(c.kind, c.job)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), "job.json")
		if err := env.WriteFile(path); err != nil {
			t.Fatal(err)
		}
		got, err := launch.ReadEnvelopeFile(path)
		if err != nil || got.Kind != c.kind || !bytes.Equal(compactJSON(t, got.Job), compactJSON(t, env.Job)) {
			t.Fatalf("%s: read back %s %s: %v", c.kind, got.Kind, got.Job, err)
		}
		k, err := nodeKinds(nil).Lookup(got.Kind)
		if err != nil {
			t.Fatal(err)
		}
		cfg := sched.DefaultConfig()
		if err := k.Scheduler(got.Job, &cfg); err != nil || !c.want(cfg) {
			t.Errorf("%s: scheduler %+v: %v", c.kind, cfg, err)
		}
	}
}
