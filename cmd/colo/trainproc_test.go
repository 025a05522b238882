package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"colo/datasets"
	"colo/launch/netns"
	"colo/ps/proto"
	"colo/train"
	"colo/transport"
	"colo/transport/tcp"
)

// news20Test writes the embedded 20 Newsgroups test file to a temporary
// file and returns its path.
func news20Test(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "20news.test.libsvm.xz")
	b, err := io.ReadAll(datasets.OpenNews20Test())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// readResult reads the JSON summary of colo train.
func readResult(t *testing.T, path string) (*train.Result, map[string]any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var r train.Result
	var fields map[string]any
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &fields); err != nil {
		t.Fatal(err)
	}
	return &r, fields
}

// trainInProcess runs colo train in this process and returns its result.
func trainInProcess(t *testing.T, args ...string) *train.Result {
	t.Helper()
	out := filepath.Join(t.TempDir(), "in.json")
	code, _, errOut := colo(t, append(append([]string{"train"}, args...), "--json", out)...)
	if code != 0 {
		t.Fatalf("colo train %v: exit %d: %s", args, code, errOut)
	}
	r, _ := readResult(t, out)
	return r
}

// trainBinary runs colo train as a process of the test binary, stopped
// after limit, and returns its result and JSON fields.
func trainBinary(t *testing.T, limit time.Duration, args ...string) (*train.Result, map[string]any) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "proc.json")
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, coloBin, append(append([]string{"train"}, args...), "--json", out)...)
	var errOut bytes.Buffer
	cmd.Stderr = &errOut
	start := time.Now()
	if err := cmd.Run(); err != nil {
		t.Fatalf("colo train %v: %v after %v\n%s", args, err, time.Since(start).Round(time.Millisecond), errOut.String())
	}
	t.Logf("colo train %s: %v", strings.Join(args[len(args)-3:], " "), time.Since(start).Round(time.Millisecond))
	return readResult(t, out)
}

// sameTraining fails unless two runs trained identically: the same passes,
// losses, test measures and traffic, bit for bit.
func sameTraining(t *testing.T, want, got *train.Result) {
	t.Helper()
	if got.Passes != want.Passes || got.Rounds != want.Rounds || len(got.RoundsDetail) != len(want.RoundsDetail) {
		t.Fatalf("%d passes, %d rounds; in-process %d, %d", got.Passes, got.Rounds, want.Passes, want.Rounds)
	}
	for i, p := range want.RoundsDetail {
		if q := got.RoundsDetail[i]; q.TrainLoss != p.TrainLoss || q.TrainAccuracy != p.TrainAccuracy {
			t.Errorf("pass %d: loss %v accuracy %v, in-process %v %v", p.Pass, q.TrainLoss, q.TrainAccuracy, p.TrainLoss, p.TrainAccuracy)
		}
	}
	if got.FinalTrainLoss != want.FinalTrainLoss {
		t.Errorf("final train loss %v, in-process %v", got.FinalTrainLoss, want.FinalTrainLoss)
	}
	if got.Accuracy == nil || *got.Accuracy != *want.Accuracy || *got.LogLoss != *want.LogLoss || *got.AUC != *want.AUC {
		t.Errorf("test accuracy %v, in-process %v", got.Eval, want.Eval)
	}
	// The traffic of the training rounds is counted at frame size on both
	// transports.
	if got.BytesInter != want.BytesInter || got.BytesInner != want.BytesInner || got.InterValues != want.InterValues {
		t.Errorf("traffic inter %d inner %d values %d, in-process %d %d %d",
			got.BytesInter, got.BytesInner, got.InterValues, want.BytesInter, want.BytesInner, want.InterValues)
	}
	if got.TMax != want.TMax || got.TSum != want.TSum || got.Placement != want.Placement || got.Machines != want.Machines {
		t.Errorf("placement %s T_max %d T_sum %d on %d, in-process %s %d %d on %d",
			got.Placement, got.TMax, got.TSum, got.Machines, want.Placement, want.TMax, want.TSum, want.Machines)
	}
}

// TestTrainProcesses trains on the 20 Newsgroups sample with a scheduler
// and two machines as processes on loopback: BSP sums in rank order, so
// the passes, the test measures and the traffic equal the in-process
// run's exactly.
func TestTrainProcesses(t *testing.T) {
	args := []string{news20(t), "--test", news20Test(t), "--machines", "2", "--max-passes", "2", "--placement", "random"}
	want := trainInProcess(t, args...)
	got, fields := trainBinary(t, 60*time.Second, append(args, "--processes")...)
	sameTraining(t, want, got)
	for _, f := range []string{"start_seconds", "train_seconds", "eval_seconds", "total_seconds", "partition_seconds",
		"bytes_inter", "inter_values", "final_train_loss", "test_accuracy", "test_auc", "rounds_detail"} {
		if _, ok := fields[f]; !ok {
			t.Errorf("no %s in the summary", f)
		}
	}
	if !(got.StartSeconds > 0 && got.TrainSeconds > 0 && got.TotalSeconds >= got.StartSeconds+got.TrainSeconds) {
		t.Errorf("times: start %v train %v total %v", got.StartSeconds, got.TrainSeconds, got.TotalSeconds)
	}
	t.Logf("processes: start %.2f s, train %.2f s, total %.2f s; in process: start %.3f s, train %.2f s, total %.2f s",
		got.StartSeconds, got.TrainSeconds, got.TotalSeconds, want.StartSeconds, want.TrainSeconds, want.TotalSeconds)
}

// TestTrainNetns trains with each machine in its own network namespace,
// its link shaped to 200 Mbit/s, and checks the training equals the
// in-process run's. It needs root and iproute2.
func TestTrainNetns(t *testing.T) {
	if err := netns.Available(); err != nil {
		t.Skipf("network namespaces unavailable: %v", err)
	}
	args := []string{news20(t), "--machines", "2", "--max-passes", "1", "--placement", "random"}
	want := trainInProcess(t, args...)
	got, _ := trainBinary(t, 60*time.Second, append(args, "--netns", "--link-bandwidth", "200mbit")...)
	sameTraining(t, want, got)
	if got.LinkBandwidth != 25e6 {
		t.Errorf("link bandwidth %v bytes/s, want 25e6", got.LinkBandwidth)
	}
}

// children returns the processes whose parent is pid, with their
// command lines (arguments separated by spaces).
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

// TestTrainProcessesMachineKilled kills machine 1 in the middle of a long
// job: colo train --processes ends within seconds, naming it.
func TestTrainProcessesMachineKilled(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc to find the machine's process")
	}
	cmd := exec.Command(coloBin, "train", news20(t), "--machines", "2", "--max-passes", "100000", "--epsilon", "0",
		"--placement", "random", "--processes")
	var errOut bytes.Buffer
	cmd.Stderr = &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var waitErr error
	go func() {
		waitErr = cmd.Wait()
		close(done)
	}()
	t.Cleanup(func() {
		select {
		case <-done:
			return
		default:
		}
		kids := children(cmd.Process.Pid)
		cmd.Process.Kill()
		<-done
		for pid := range kids {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	victim := 0
	for deadline := time.Now().Add(10 * time.Second); victim == 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no machine 1 process after 10 s: %s", errOut.String())
		}
		for pid, line := range children(cmd.Process.Pid) {
			if strings.Contains(line, "--job train") && strings.Contains(line, "--rank 1 ") {
				victim = pid
			}
		}
	}
	// Loading takes about half a second: the kill comes in mid-training.
	time.Sleep(1500 * time.Millisecond)
	if err := syscall.Kill(victim, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	select {
	case <-done:
		took := time.Since(killed)
		if waitErr == nil {
			t.Fatalf("colo train succeeded without machine 1: %s", errOut.String())
		}
		// Whichever process notices first, the error names the killed
		// machine: as a process, or as the worker the scheduler lost.
		if msg := errOut.String(); !strings.Contains(msg, "machine 1 failed") && !strings.Contains(msg, "worker 1 (node 5") {
			t.Fatalf("the error does not name machine 1: %s", msg)
		}
		if took > 5*time.Second {
			t.Errorf("ended %v after the kill", took)
		}
		t.Logf("ended %v after the kill: %s", took.Round(time.Millisecond), strings.TrimSpace(errOut.String()))
	case <-time.After(15 * time.Second):
		t.Fatalf("colo train still running 15 s after the kill: %s", errOut.String())
	}
}

// TestTrainJobFlags checks the errors of colo node's training job and of
// the scheduler's placement, which name what is wrong.
func TestTrainJobFlags(t *testing.T) {
	data := news20(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--role", "machine", "--job", "train", "--num-workers", "2", "--data", data, "--placement", "x"}, "--rank"},
		{[]string{"--role", "server", "--job", "train"}, "--role machine"},
		{[]string{"--role", "machine", "--job", "train", "--rank", "0", "--num-workers", "2", "--data", data}, "--placement"},
		{[]string{"--role", "machine", "--job", "train", "--rank", "0", "--num-workers", "2", "--data", data, "--placement", "/nonexistent/p"}, "/nonexistent/p/data.part"},
		{[]string{"--role", "scheduler", "--num-servers", "2", "--num-workers", "2", "--placement", "/nonexistent/p"}, "--data"},
		{[]string{"--role", "scheduler", "--num-servers", "2", "--num-workers", "2", "--placement", "/nonexistent/p", "--data", data}, "/nonexistent/p/param.part"},
	} {
		code, _, errOut := colo(t, append([]string{"node", "--scheduler", "127.0.0.1:0"}, c.args...)...)
		if code == 0 || !strings.Contains(errOut, c.want) {
			t.Errorf("colo node %v: exit %d, %q does not name %s", c.args, code, errOut, c.want)
		}
	}
	code, _, errOut := colo(t, "train", data, "--netns")
	if code != 2 || !strings.Contains(errOut, "--link-bandwidth") {
		t.Errorf("train --netns without a rate: exit %d: %s", code, errOut)
	}
}

// TestTuneLinks checks the rates colo node gives its TCP links: every
// link to another machine's node is limited, by the smaller of the link
// rate and the matrix's entry between the two ranks; the scheduler's is
// not.
func TestTuneLinks(t *testing.T) {
	matrix := writeFile(t, "bw", "0 1mbit\n8mbit 0\n")
	nf := nodeFlags{linkRate: "4mbit", matrix: matrix, numServers: 2, numWorkers: 2}
	tune, err := nf.tuneLinks()
	if err != nil {
		t.Fatal(err)
	}
	rate := func(self, peer transport.NodeID) float64 {
		tc := tcp.DefaultConfig()
		tc.ID = self
		tune(&tc)
		return tc.Rate(peer)
	}
	for _, c := range []struct {
		self, peer transport.NodeID
		want       float64
	}{
		{proto.WorkerID(0), proto.ServerID(1), 1e6 / 8},
		{proto.ServerID(1), proto.WorkerID(0), 4e6 / 8},
		{proto.ServerID(0), proto.WorkerID(1), 1e6 / 8},
		{proto.WorkerID(1), proto.ServerID(0), 4e6 / 8},
		{proto.WorkerID(0), proto.SchedulerID, 0},
		{proto.Provisional(7), proto.SchedulerID, 0},
	} {
		if got := rate(c.self, c.peer); got != c.want {
			t.Errorf("%s → %s: %v bytes/s, want %v", proto.Name(c.self), proto.Name(c.peer), got, c.want)
		}
	}
	nf = nodeFlags{}
	if tune, err := nf.tuneLinks(); tune != nil || err != nil {
		t.Errorf("no rates: %v %v", tune != nil, err)
	}
}
