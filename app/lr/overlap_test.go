package lr

import (
	"context"
	"fmt"
	"math"
	"testing"

	"colo/app/sparse"
	"colo/ps/worker"
	"colo/train"
)

// modelApp wraps an application so that worker 0 pulls the servers'
// whole model after training, before the application's evaluation.
type modelApp struct {
	train.App
	model []float32
}

func (a *modelApp) Evaluate(ctx context.Context, w *worker.Worker, part train.Part) (train.Eval, error) {
	if w.Rank() == 0 {
		m, err := train.PullModel(w, a.NumKeys())
		if err != nil {
			return train.Eval{}, err
		}
		a.model = m
	}
	return a.App.Evaluate(ctx, w, part)
}

// TestOverlapMatchesSequential trains sparse multinomial logistic
// regression under BSP on one and three machines, with several batches
// per pass, with the rounds overlapped and one after another: the
// passes, losses, test log loss and model are the same to the bit.
func TestOverlapMatchesSequential(t *testing.T) {
	g := randomProblem(t, 900, 200, 3, 5)
	app, err := New(g, nil, sparse.FeaturesL2)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []int{1, 3} {
		for _, eps := range []float64{0, 1e-4} {
			t.Run(fmt.Sprintf("k%d/eps%g", k, eps), func(t *testing.T) {
				p, cost := place(t, g, "random", k)
				var runs [2]*train.Result
				var models [2][]float32
				for i, seq := range []bool{true, false} {
					cfg := testConfig(k, 6)
					cfg.Batch, cfg.Epsilon, cfg.Sequential = 200, eps, seq
					m := &modelApp{App: app}
					if runs[i], err = trainOn(m, p, "random", cost, cfg); err != nil {
						t.Fatal(err)
					}
					models[i] = m.model
				}
				a, b := runs[0], runs[1]
				if len(a.RoundsDetail) != len(b.RoundsDetail) || a.Rounds != b.Rounds {
					t.Fatalf("%d and %d passes", len(a.RoundsDetail), len(b.RoundsDetail))
				}
				for i, pa := range a.RoundsDetail {
					if pb := b.RoundsDetail[i]; math.Float64bits(pa.TrainLoss) != math.Float64bits(pb.TrainLoss) || pa.TrainAccuracy != pb.TrainAccuracy {
						t.Fatalf("pass %d: losses %v and %v", i+1, pa.TrainLoss, pb.TrainLoss)
					}
				}
				if *a.LogLoss != *b.LogLoss || a.BytesInter != b.BytesInter {
					t.Errorf("test log loss %v and %v, %d and %d bytes between machines", *a.LogLoss, *b.LogLoss, a.BytesInter, b.BytesInter)
				}
				if len(models[0]) != app.NumKeys()*app.Width() || len(models[1]) != len(models[0]) {
					t.Fatalf("models of %d and %d values", len(models[0]), len(models[1]))
				}
				for i := range models[0] {
					if math.Float32bits(models[0][i]) != math.Float32bits(models[1][i]) {
						t.Fatalf("value %d: %v and %v", i, models[0][i], models[1][i])
					}
				}
			})
		}
	}
}
