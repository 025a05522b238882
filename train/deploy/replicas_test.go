package deploy

import (
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"colo/checkpoint"
	"colo/internal/colotest"
	"colo/train"
)

// TestProcessesServerKilledReplicas kills server 1 of three servers apart
// (SIGKILL) while 20 Newsgroups trains on three workers under BSP with one backup per
// server: the job goes on without a restart or a rollback, server 2
// serving server 1's keys, and trains the same passes, rounds, losses and
// test measures, bit for bit, as the run in process without replicas
// and without failure. The kill comes once the job's checkpoint of round
// 10 (of 60) is complete.
func TestProcessesServerKilledReplicas(t *testing.T) {
	colotest.Need(t, coloBin)
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc to find the server's process")
	}
	job, opened, _ := newsJob(t, 3, 60, true)
	job.Config.Servers = 3
	t0 := time.Now()
	want, err := deploy(t, job, opened, InProcess{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("in process: %v", time.Since(t0).Round(time.Millisecond))
	dir := t.TempDir()
	job.Config.Replicas, job.Config.Checkpoint = 1, train.Checkpoint{Dir: dir, Every: 5}
	type outcome struct {
		res *train.Result
		err error
	}
	done := make(chan outcome, 1)
	pd := &Processes{Bin: coloBin, Graph: opened.Data.Graph, Logf: t.Logf}
	go func() {
		res, err := deploy(t, job, opened, pd)
		done <- outcome{res, err}
	}()
	victim := 0
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no checkpoint of round 10 and server 1 process after 30 s")
		}
		if victim == 0 {
			for pid, line := range children(os.Getpid()) {
				if strings.Contains(line, "--role server") && strings.Contains(line, "--rank 1 ") {
					victim = pid
				}
			}
		}
		if m, _, err := checkpoint.Latest(dir); err == nil && m.Round >= 10 && victim != 0 {
			break
		}
	}
	if err := syscall.Kill(victim, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	var got outcome
	select {
	case got = <-done:
		t.Logf("the job ended %v after the kill", time.Since(killed).Round(time.Millisecond))
	case <-time.After(60 * time.Second):
		t.Fatal("the job still runs 60 s after the kill")
	}
	if got.err != nil {
		t.Fatalf("the job failed: %v", got.err)
	}
	if len(pd.Failovers) != 1 || !strings.Contains(pd.Failovers[0].Failure.Error(), "server 1") {
		t.Fatalf("failovers %v, want server 1's", pd.Failovers)
	}
	if len(pd.Recovered) != 0 {
		t.Fatalf("the job restarted: %v", pd.Recovered)
	}
	res := got.res
	if res.Passes != want.Passes || res.Rounds != want.Rounds || len(res.RoundsDetail) != len(want.RoundsDetail) {
		t.Fatalf("%d passes, %d rounds; without failure %d, %d", res.Passes, res.Rounds, want.Passes, want.Rounds)
	}
	for i, p := range want.RoundsDetail {
		if q := res.RoundsDetail[i]; q.TrainLoss != p.TrainLoss || q.TrainAccuracy != p.TrainAccuracy {
			t.Errorf("pass %d: loss %v accuracy %v, without failure %v %v", p.Pass, q.TrainLoss, q.TrainAccuracy, p.TrainLoss, p.TrainAccuracy)
		}
	}
	if res.Accuracy == nil || *res.Accuracy != *want.Accuracy || *res.LogLoss != *want.LogLoss || *res.AUC != *want.AUC {
		t.Errorf("test measures %+v, without failure %+v", res.Eval, want.Eval)
	}
}
