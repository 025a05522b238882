package trainplot_test

import (
	"testing"

	"colo/internal/plot/plottest"
	"colo/train"
	"colo/train/trainplot"
)

// TestLossFigure draws a run with training and validation losses: the
// title, both series in the legend, and the run's lines.
func TestLossFigure(t *testing.T) {
	l1, l2 := 0.9, 0.6
	r := &train.Result{Placement: "random", TotalSeconds: 2.5, App: "logreg", Machines: 4, Consistency: "bsp", Updater: "sgd", RoundsDetail: []train.Pass{
		{Pass: 1, Seconds: 1, TrainLoss: 1.2},
		{Pass: 2, Seconds: 2, TrainLoss: 0.5},
	}, Evaluator: &train.EvaluatorReport{Checks: []train.Check{
		{Step: 10, Seconds: 1, Validation: train.Eval{LogLoss: &l1}},
		{Step: 20, Seconds: 2.5, Validation: train.Eval{LogLoss: &l2}},
	}}}
	runs := []*train.Result{r}
	title := "news20: " + trainplot.Settings(runs)
	if want := "news20: logreg on 4 machines, bsp, sgd, full batches, unlimited links"; title != want {
		t.Errorf("title %q, want %q", title, want)
	}
	f := trainplot.LossFigure(title, runs)
	if n := len(f.Panels[0].Series); n != 2 || !f.Panels[0].Series[1].Dashed || f.Panels[0].Series[0].Dashed {
		t.Fatalf("want a solid and a dashed line: %+v", f.Panels[0].Series)
	}
	if s := f.Panels[0].Series[1]; len(s.X) != 2 || s.X[1] != 2.5 || s.Y[1] != 0.6 {
		t.Errorf("validation series %+v, want the checks' times and losses", s)
	}
	plottest.Check(t, f, "random (2.5 s)", "random (2.5 s) validation", "training loss (validation dashed)")
}
