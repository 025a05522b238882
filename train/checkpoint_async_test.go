package train_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

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
	if m, _, err := checkpoint.Latest(dir); err != nil || m.Round != 12 || m.Volatile {
		t.Fatalf("newest complete checkpoint: %+v, %v; want round 12, durable", m, err)
	}

	want4 := run(linearJob(2, 4, 10))
	job = linearJob(2, 4, 10)
	job.Config.Checkpoint = train.Checkpoint{Resume: dir}
	same("resumed from round 12", run(job), want4)
}

// TestCheckpointDurable takes a checkpoint after every round of 12: the
// first is durable, the others volatile (the job is much shorter than
// train.DurableEvery), pruning keeps the first beside the newest two, and
// the last is made durable at the end; with Checkpoint.Durable every one
// is durable. The volatile checkpoints read back as any other.
func TestCheckpointDurable(t *testing.T) {
	a := newLinear(40, 6, 3)
	p := spread(len(a.X), a.Dim, 2)
	for _, durable := range []bool{false, true} {
		dir := filepath.Join(t.TempDir(), "ck")
		job := linearJob(2, 3, 10)
		job.Config.Checkpoint = train.Checkpoint{Dir: dir, Every: 1, Wait: true, Durable: durable}
		// A clock that stands still: only the first checkpoint is due to
		// be durable, however slow the machine.
		train.SetCheckpointClock(&job.Config, func() time.Time { return time.Unix(1e9, 0) })
		var seen []string
		train.SetWriteGate(&job.Config, func(rank, round int) {
			if rank != 0 || round != 7 {
				return
			}
			// The writers of round 6 are done: its manifest and pruning.
			for _, r := range []int{1, 5, 6} {
				m, err := checkpoint.Open(dir, r)
				if err != nil {
					seen = append(seen, err.Error())
					continue
				}
				seen = append(seen, fmt.Sprintf("%d:%v", r, m.Volatile))
			}
		})
		if _, err := train.Run(context.Background(), job, a, p, deploy.InProcess{}); err != nil {
			t.Fatal(err)
		}
		want := []string{"1:false", "5:true", "6:true"}
		if durable {
			// Round 1 was pruned: 5 and 6 are durable.
			want = []string{"", "5:false", "6:false"}
		}
		if len(seen) != 3 || durable && !strings.Contains(seen[0], "is incomplete") {
			t.Fatalf("durable %v: before round 7's checkpoint: %q, want %q", durable, seen, want)
		}
		if !durable && !slices.Equal(seen, want) || durable && !slices.Equal(seen[1:], want[1:]) {
			t.Errorf("durable %v: before round 7's checkpoint: %q, want %q", durable, seen, want)
		}
		rounds, err := checkpoint.Rounds(dir)
		if err != nil || !slices.Equal(rounds, []int{12, 11}) {
			t.Errorf("durable %v: checkpoints of rounds %v (%v), want [12 11]", durable, rounds, err)
		}
		for _, r := range rounds {
			m, err := checkpoint.Open(dir, r)
			if err == nil {
				err = m.Verify()
			}
			if err != nil || m.Volatile != (r == 11 && !durable) {
				t.Errorf("durable %v: round %d: volatile %v (%v), want %v", durable, r, m != nil && m.Volatile, err, r == 11 && !durable)
			}
		}
	}
}
