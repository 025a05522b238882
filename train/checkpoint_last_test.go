package train_test

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"colo/checkpoint"
	"colo/train"
	"colo/train/deploy"
)

// TestCheckpointLastDurable: the last checkpoint of a job whose last
// round is not a checkpoint's (every 5 rounds of 12: rounds 5 and 10)
// is made durable at its end, as one of the last round is: volatile, a
// machine's crash after the job could tear it.
func TestCheckpointLastDurable(t *testing.T) {
	a := newLinear(40, 6, 3)
	p := spread(len(a.X), a.Dim, 2)
	dir := filepath.Join(t.TempDir(), "ck")
	job := linearJob(2, 3, 10) // 4 rounds a pass, 12 in all
	job.Config.Checkpoint = train.Checkpoint{Dir: dir, Every: 5, Wait: true}
	// A clock that stands still: only the first checkpoint is due to be
	// durable in the loop.
	train.SetCheckpointClock(&job.Config, func() time.Time { return time.Unix(1e9, 0) })
	if _, err := train.Run(context.Background(), job, a, p, deploy.InProcess{}); err != nil {
		t.Fatal(err)
	}
	rounds, err := checkpoint.Rounds(dir)
	if err != nil || !slices.Equal(rounds, []int{10, 5}) {
		t.Fatalf("checkpoints of rounds %v (%v), want [10 5]", rounds, err)
	}
	m, _, err := checkpoint.Latest(dir)
	if err != nil || m.Round != 10 || m.Volatile {
		t.Fatalf("newest complete checkpoint: %+v, %v; want round 10, durable", m, err)
	}
}
