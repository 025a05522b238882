// Package trainplot draws the charts of training runs: the training and
// validation losses of each run against wall-clock time (LossFigure),
// titled by the runs' settings (Settings), which colo train writes with
// --svg, and the table that sets runs side by side (WriteTable). It keeps the plotting library out of the training engine
// (package train), which only counts.
//
//	f := trainplot.LossFigure("news20: "+trainplot.Settings(runs), runs)
//	err := f.Save("loss.svg")
package trainplot

import (
	"fmt"

	"colo/internal/plot"
	"colo/train"
)

// validationLoss returns the validation log loss of a check, 0 without.
func validationLoss(c train.Check) float64 {
	if c.Validation.LogLoss == nil {
		return 0
	}
	return *c.Validation.LogLoss
}

// checks returns the evaluator's scores of r, none without one.
func checks(r *train.Result) []train.Check {
	if r.Evaluator == nil {
		return nil
	}
	return r.Evaluator.Checks
}

// Settings describes the training settings of the first of runs for a
// plot's title: the application, the machines, the consistency model, the
// update rule, the batch and the links.
func Settings(runs []*train.Result) string {
	if len(runs) == 0 {
		return "training loss"
	}
	r := runs[0]
	batch := "full batches"
	if r.Batch > 0 {
		batch = fmt.Sprintf("batch %d", r.Batch)
	}
	link := "unlimited links"
	if r.LinkBandwidth > 0 {
		link = plot.Label(r.LinkBandwidth*8/1e6) + " Mbit/s links"
	}
	return fmt.Sprintf("%s on %d machines, %s, %s, %s, %s", r.App, r.Machines, r.Consistency, r.Updater, batch, link)
}

// LossFigure is the chart of the training loss (and, dashed, the
// validation loss the evaluator measured) of each run against wall-clock
// time, partition time included so that a run's line starts when its
// training starts, on a logarithmic loss axis. The title should name the
// dataset and the settings (Settings).
func LossFigure(title string, runs []*train.Result) *plot.Figure {
	p := plot.Panel{X: plot.Axis{Label: "seconds (partition + training)"}, Y: plot.Axis{Label: "training loss (validation dashed)", Log: true}}
	for i, r := range runs {
		off := r.PartitionSeconds + r.StartSeconds
		name := fmt.Sprintf("%s (%.1f s)", r.Placement, r.TotalSeconds)
		tr := plot.Series{Name: name, Color: i}
		for _, q := range r.RoundsDetail {
			tr.X, tr.Y = append(tr.X, off+q.Seconds), append(tr.Y, q.TrainLoss)
		}
		val := plot.Series{Name: name + " validation", Color: i, Dashed: true}
		for _, c := range checks(r) {
			val.X, val.Y = append(val.X, off+c.Seconds), append(val.Y, validationLoss(c))
		}
		p.Series = append(p.Series, tr, val)
	}
	return &plot.Figure{Title: title, Panels: []plot.Panel{p}}
}
