package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"colo/datasets"
	"colo/train"
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
		{[]string{"--role", "scheduler", "--num-servers", "2", "--num-workers", "2", "--placement", "/nonexistent/p", "--data", data}, "--placement: /nonexistent/p/summary.json: missing: /nonexistent/p is incomplete"},
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
