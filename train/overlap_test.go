package train_test

import (
	"context"
	"fmt"
	"math"
	"slices"
	"testing"

	"colo/ps/clock"
	"colo/ps/worker"
	"colo/train"
	"colo/train/deploy"
)

// withModel wraps an application so that worker 0 pulls the servers'
// whole model after training, before the application's own evaluation.
type withModel struct {
	train.App
	model []float32
}

func (a *withModel) Evaluate(ctx context.Context, w *worker.Worker, part train.Part) (train.Eval, error) {
	if w.Rank() == 0 {
		m, err := train.PullModel(w, a.NumKeys())
		if err != nil {
			return train.Eval{}, err
		}
		a.model = m
	}
	return a.App.Evaluate(ctx, w, part)
}

// sameRuns fails unless two runs trained the same passes with the same
// losses and the same model, bit for bit, with the same traffic.
func sameRuns(t *testing.T, seq, ovl *train.Result, seqModel, ovlModel []float32) {
	t.Helper()
	if len(seq.RoundsDetail) != len(ovl.RoundsDetail) || seq.Rounds != ovl.Rounds {
		t.Fatalf("sequential %d passes, %d rounds; overlapped %d passes, %d rounds", len(seq.RoundsDetail), seq.Rounds, len(ovl.RoundsDetail), ovl.Rounds)
	}
	for i, p := range seq.RoundsDetail {
		q := ovl.RoundsDetail[i]
		if math.Float64bits(p.TrainLoss) != math.Float64bits(q.TrainLoss) || p.Samples != q.Samples || p.Rounds != q.Rounds {
			t.Fatalf("pass %d: sequential loss %v (%d samples, %d rounds), overlapped %v (%d, %d)", i+1, p.TrainLoss, p.Samples, p.Rounds, q.TrainLoss, q.Samples, q.Rounds)
		}
	}
	if len(seqModel) == 0 || len(seqModel) != len(ovlModel) {
		t.Fatalf("models of %d and %d values", len(seqModel), len(ovlModel))
	}
	for i := range seqModel {
		if math.Float32bits(seqModel[i]) != math.Float32bits(ovlModel[i]) {
			t.Fatalf("value %d: sequential %v, overlapped %v", i, seqModel[i], ovlModel[i])
		}
	}
	if seq.BytesInter != ovl.BytesInter || seq.MessagesInter != ovl.MessagesInter {
		t.Errorf("between machines: sequential %d bytes in %d messages, overlapped %d in %d", seq.BytesInter, seq.MessagesInter, ovl.BytesInter, ovl.MessagesInter)
	}
	if seq.Overlap || !ovl.Overlap {
		t.Errorf("overlap reported %v and %v, want false and true", seq.Overlap, ovl.Overlap)
	}
}

// TestOverlapMatchesSequentialBSP trains the dense test model on one and
// three machines, with several batches per pass and one, with and
// without ε (which keeps pulls from being sent past a pass's end), once
// with the rounds overlapped and once one after another: under BSP both
// give the same passes, losses, model and traffic.
func TestOverlapMatchesSequentialBSP(t *testing.T) {
	a := newLinear(240, 12, 7)
	for _, k := range []int{1, 3} {
		for _, batch := range []int{0, 60} {
			for _, eps := range []float64{0, 1e-3} {
				t.Run(fmt.Sprintf("k%d/batch%d/eps%g", k, batch, eps), func(t *testing.T) {
					var res [2]*train.Result
					var models [2][]float32
					for i, seq := range []bool{true, false} {
						job := linearJob(k, 12, batch)
						job.Config.Epsilon, job.Config.Sequential = eps, seq
						app := &withModel{App: a}
						r, err := train.Run(context.Background(), job, app, spread(len(a.X), a.Dim, k), deploy.InProcess{})
						if err != nil {
							t.Fatal(err)
						}
						res[i], models[i] = r, app.model
					}
					sameRuns(t, res[0], res[1], models[0], models[1])
				})
			}
		}
	}
}

// TestOverlapPhases: the breakdown of a run's time is filled in, pass
// by pass and in the Result, and fits in the training time.
func TestOverlapPhases(t *testing.T) {
	a := newLinear(240, 12, 7)
	job := linearJob(3, 5, 60)
	res, err := train.Run(context.Background(), job, a, spread(len(a.X), a.Dim, 3), deploy.InProcess{})
	if err != nil {
		t.Fatal(err)
	}
	var sum train.Phases
	for _, p := range res.RoundsDetail {
		ph := p.Phases
		if ph.Compute <= 0 || ph.Pull <= 0 || ph.Barrier <= 0 || ph.Push < 0 {
			t.Errorf("pass %d: phases %+v", p.Pass, ph)
		}
		sum = sum.Add(ph)
	}
	if sum != res.Phases {
		t.Errorf("result phases %+v, the passes' sum %+v", res.Phases, sum)
	}
	if total := sum.Compute + sum.Pull + sum.Push + sum.Barrier; total > res.TrainSeconds {
		t.Errorf("phases of %.4f s in %.4f s of training", total, res.TrainSeconds)
	}
}

// TestOverlapAsyncTrains: asynchronous training with the next pull sent
// before each batch is computed (Config.PullAhead), or right after its
// push, still fits the model.
func TestOverlapAsyncTrains(t *testing.T) {
	a := newLinear(240, 12, 7)
	for _, c := range []struct {
		k     int
		ahead bool
	}{{1, false}, {3, false}, {1, true}, {3, true}} {
		k := c.k
		job := linearJob(k, 30, 60)
		job.Config.Clock = clock.Config{Mode: clock.Async}
		job.Config.PullAhead = c.ahead
		job.Config.Rule.LR = 0.1
		res, err := train.Run(context.Background(), job, a, spread(len(a.X), a.Dim, k), deploy.InProcess{})
		if err != nil {
			t.Fatalf("k=%d: %v", k, err)
		}
		first, last := res.RoundsDetail[0].TrainLoss, res.RoundsDetail[len(res.RoundsDetail)-1].TrainLoss
		if !res.Overlap || !(last < 1e-2*first) {
			t.Errorf("k=%d: overlap %v, loss %v → %v", k, res.Overlap, first, last)
		}
		if !slices.IsSortedFunc(res.RoundsDetail, func(p, q train.Pass) int { return p.Rounds - q.Rounds }) {
			t.Errorf("k=%d: rounds out of order", k)
		}
	}
}
