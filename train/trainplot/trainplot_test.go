package trainplot_test

import (
	"strings"
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

// TestWriteTable sets two runs side by side: a column a run, the rows of
// the measures the first run has, and the second against the first.
func TestWriteTable(t *testing.T) {
	acc := 0.5
	runs := []*train.Result{
		{Placement: "random", TotalSeconds: 4, Passes: 3, BytesInter: 2e6, TMax: 1234, TSum: 5000, Eval: train.Eval{Accuracy: &acc, On: "test"}},
		{Placement: "parsa", TotalSeconds: 2, Passes: 3, BytesInter: 1e6, TMax: 600, TSum: 2500, Eval: train.Eval{Accuracy: &acc, On: "test"}},
	}
	var b strings.Builder
	if err := trainplot.WriteTable(&b, runs); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"placement  random  parsa", "T_max (cost model)   1,234    600", "test accuracy %   50.00  50.00", "speed-up (total)   1.00x  2.00x", "inter traffic vs first    100%    50%"} {
		if !strings.Contains(strings.Join(strings.Fields(b.String()), " "), strings.Join(strings.Fields(want), " ")) {
			t.Errorf("no row %q in:\n%s", want, b.String())
		}
	}
	if strings.Contains(b.String(), "RMSE") || strings.Contains(b.String(), "R_max") {
		t.Errorf("rows of measures the runs lack:\n%s", b.String())
	}
}
