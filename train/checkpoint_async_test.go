package train_test

import (
	"context"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"colo/checkpoint"
	"colo/train"
	"colo/train/deploy"
)

// TestCheckpointSkippedWhileWriting holds the writers of the first
// checkpoint (round 1 of 12, a checkpoint due after every round) until
// the last pass ends: every checkpoint due meanwhile is skipped on every
// worker and counted, training never waits for the writers, the last
// round's checkpoint, skipped too, is taken at the end, and the job
// trains bit for bit as without checkpoints. Resumed from that final
// checkpoint for one more pass, it ends as a job of four passes run
// without a stop.
func TestCheckpointSkippedWhileWriting(t *testing.T) {
	a := newLinear(40, 6, 3)
	p := spread(len(a.X), a.Dim, 2)
	run := func(job train.Job) *train.Result {
		t.Helper()
		res, err := train.Run(context.Background(), job, a, p, deploy.InProcess{})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	same := func(what string, got, want *train.Result) {
		t.Helper()
		if len(got.RoundsDetail) != len(want.RoundsDetail) {
			t.Fatalf("%s: %d passes, want %d", what, len(got.RoundsDetail), len(want.RoundsDetail))
		}
		for i, q := range want.RoundsDetail {
			if g := got.RoundsDetail[i]; g.TrainLoss != q.TrainLoss || g.Rounds != q.Rounds {
				t.Errorf("%s: pass %d: loss %v after %d rounds, want %v after %d", what, i+1, g.TrainLoss, g.Rounds, q.TrainLoss, q.Rounds)
			}
		}
		if *got.RMSE != *want.RMSE {
			t.Errorf("%s: RMSE %v, want %v", what, *got.RMSE, *want.RMSE)
		}
	}
	want := run(linearJob(2, 3, 10)) // 4 rounds a pass, 12 in all

	dir := filepath.Join(t.TempDir(), "ck")
	job := linearJob(2, 3, 10)
	job.Config.Checkpoint = train.Checkpoint{Dir: dir, Every: 1}
	release := make(chan struct{})
	var once sync.Once
	job.Config.Progress = func(p train.Pass) {
		if p.Pass == 3 {
			once.Do(func() { close(release) })
		}
	}
	train.SetWriteGate(&job.Config, func(rank, round int) {
		if round == 1 {
			<-release
		}
	})
	got := run(job)
	same("held writers", got, want)
	if got.Checkpoints != 2 || got.CheckpointsSkipped != 10 {
		t.Errorf("%d checkpoints taken and %d skipped, want 2 (rounds 1 and 12) and 10", got.Checkpoints, got.CheckpointsSkipped)
	}
	rounds, err := checkpoint.Rounds(dir)
	if err != nil || !slices.Equal(rounds, []int{12, 1}) {
		t.Errorf("checkpoints of rounds %v (%v), want [12 1]", rounds, err)
	}
	if m, _, err := checkpoint.Latest(dir); err != nil || m.Round != 12 {
		t.Fatalf("newest complete checkpoint: %+v, %v; want round 12", m, err)
	}

	want4 := run(linearJob(2, 4, 10))
	job = linearJob(2, 4, 10)
	job.Config.Checkpoint = train.Checkpoint{Resume: dir}
	same("resumed from round 12", run(job), want4)
}
