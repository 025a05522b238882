package train_test

import (
	"encoding/xml"
	"strings"
	"testing"

	"colo/train"
)

// TestPlotLoss draws a run with training and validation losses: one
// solid and one dashed line, and a document that parses.
func TestPlotLoss(t *testing.T) {
	l1, l2 := 0.9, 0.6
	r := &train.Result{Placement: "random", RoundsDetail: []train.Pass{
		{Pass: 1, Seconds: 1, TrainLoss: 1.2},
		{Pass: 2, Seconds: 2, TrainLoss: 0.5},
	}, Evaluator: &train.EvaluatorReport{Checks: []train.Check{
		{Step: 10, Seconds: 1, Validation: train.Eval{LogLoss: &l1}},
		{Step: 20, Seconds: 2.5, Validation: train.Eval{LogLoss: &l2}},
	}}}
	var b strings.Builder
	if err := train.PlotLoss(&b, []*train.Result{r}); err != nil {
		t.Fatal(err)
	}
	svg := b.String()
	if err := xml.Unmarshal([]byte(svg), new(struct{})); err != nil {
		t.Fatalf("not XML: %v", err)
	}
	if strings.Count(svg, "<polyline") != 2 || strings.Count(svg, "stroke-dasharray") != 1 {
		t.Errorf("want a solid and a dashed line:\n%s", svg)
	}
}
