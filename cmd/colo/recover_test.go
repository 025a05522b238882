package main

import (
	"bytes"
	"colo/app/smoke"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"colo/checkpoint"
)

// TestTrainRestartsAfterKill kills machine 1 of a BSP job of processes
// with SIGKILL right after the checkpoint of a seeded random round:
// colo train --restarts 1 --recovery restart stops the others, restarts the whole job from
// the last complete checkpoint, and ends with the same passes and test
// measures, bit for bit, as the run without failure.
func TestTrainRestartsAfterKill(t *testing.T) {
	if testing.Short() {
		t.Skip("runs processes")
	}
	args := []string{news20Test(t), "--machines", "2", "--batch", "1500", "--max-passes", "3", "--epsilon", "0", "--placement", "random", "--processes"}
	want, _ := trainBinary(t, 60*time.Second, args...)
	if want.Rounds < 12 {
		t.Fatalf("%d rounds, want at least 12", want.Rounds)
	}
	rng := rand.New(rand.NewPCG(18, 3))
	kill := 2 * (1 + rng.IntN(want.Rounds/2-2)) // a checkpoint round, not the last
	dir := filepath.Join(t.TempDir(), "ck")
	out := filepath.Join(t.TempDir(), "proc.json")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, coloBin, append(append([]string{"train"}, args...),
		"--checkpoint", dir, "--checkpoint-every", "2", "--checkpoint-wait", "--restarts", "1", "--recovery", "restart", "--link-bandwidth", "20mbit", "--json", out)...)
	var errOut bytes.Buffer
	cmd.Stderr = &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	manifest := filepath.Join(checkpoint.RoundDir(dir, kill), checkpoint.ManifestName)
	var killed time.Time
	for killed.IsZero() && ctx.Err() == nil {
		if _, err := os.Stat(manifest); err == nil {
			if pid := nodePID(cmd.Process.Pid, "machine", 1); pid > 0 && syscall.Kill(pid, syscall.SIGKILL) == nil {
				killed = time.Now()
			}
		}
		time.Sleep(2 * time.Millisecond)
	}
	err := cmd.Wait()
	if err != nil || killed.IsZero() {
		t.Fatalf("colo train after killing machine 1 at round %d: %v\n%s", kill, err, errOut.String())
	}
	if !strings.Contains(errOut.String(), "restart 1 of 1") {
		t.Fatalf("no restart reported:\n%s", errOut.String())
	}
	got, _ := readResult(t, out)
	if got.Rounds != want.Rounds || len(got.RoundsDetail) != len(want.RoundsDetail) {
		t.Fatalf("%d rounds, want %d", got.Rounds, want.Rounds)
	}
	for i, p := range want.RoundsDetail {
		if q := got.RoundsDetail[i]; q.TrainLoss != p.TrainLoss || q.TrainAccuracy != p.TrainAccuracy {
			t.Errorf("pass %d: loss %v accuracy %v, without failure %v %v", p.Pass, q.TrainLoss, q.TrainAccuracy, p.TrainLoss, p.TrainAccuracy)
		}
	}
	if *got.Accuracy != *want.Accuracy || *got.LogLoss != *want.LogLoss || *got.AUC != *want.AUC {
		t.Errorf("test measures %v, without failure %v", got.Eval, want.Eval)
	}
	t.Logf("killed machine 1 after the checkpoint of round %d; %v to the end; %s", kill, time.Since(killed).Round(time.Millisecond), strings.TrimSpace(fmt.Sprint(lineWith(errOut.String(), "ran again"))))
}

// lineWith returns the last line of s that contains word.
func lineWith(s, word string) string {
	lines := strings.Split(s, "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.Contains(lines[i], word) {
			return lines[i]
		}
	}
	return ""
}

// TestLaunchRestartsAfterKill kills machine 1 of colo launch's smoke
// cluster with SIGKILL a seeded 0–99 ms after it started: with
// --restarts 1 the cluster runs again from the start and the smoke job's
// exact sums are checked; with --restarts 0 the launch fails naming the
// killed machine.
func TestLaunchRestartsAfterKill(t *testing.T) {
	if testing.Short() {
		t.Skip("runs processes")
	}
	rng := rand.New(rand.NewPCG(18, 4))
	for _, restarts := range []string{"1", "0"} {
		delay := time.Duration(rng.IntN(100)) * time.Millisecond
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		cmd := exec.CommandContext(ctx, coloBin, "launch", "--json", "-n", "2", "--rounds", "1000", "--batch", "5000", "--keys", "100000", "--restarts", restarts)
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		var pid int
		for pid == 0 && ctx.Err() == nil {
			pid = nodePID(cmd.Process.Pid, "machine", 1)
			time.Sleep(time.Millisecond)
		}
		time.Sleep(delay)
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatalf("kill machine 1: %v", err)
		}
		err := cmd.Wait()
		cancel()
		var s smoke.Summary
		if jerr := json.Unmarshal(out.Bytes(), &s); jerr != nil {
			t.Fatalf("--restarts %s: %v: %s\n%s", restarts, jerr, out.String(), errOut.String())
		}
		if restarts == "0" {
			if err == nil || len(s.Restarts) != 0 || !strings.Contains(s.Error, "machine 1") {
				t.Errorf("--restarts 0, machine 1 killed: exit %v, %d restarts, error %q", err, len(s.Restarts), s.Error)
			}
			continue
		}
		if err != nil || !s.Checked || len(s.Restarts) != 1 || !strings.Contains(s.Restarts[0].Error, "machine 1") {
			t.Fatalf("--restarts 1, machine 1 killed after %v: exit %v, checked %v, restarts %+v\n%s", delay, err, s.Checked, s.Restarts, errOut.String())
		}
		if !strings.Contains(errOut.String(), "restart 1 of 1 after") {
			t.Errorf("no restart logged:\n%s", errOut.String())
		}
		t.Logf("machine 1 killed %v after its start: failure noticed %.3f s after the launch, the new cluster running %.3f s later", delay, s.Restarts[0].Seconds, s.Restarts[0].RestartSeconds)
	}
}
