package train

import (
	"fmt"
	"html"
	"io"
	"math"
	"strings"

	"colo/internal/plot"
)

// palette colours the runs in order.
var palette = []string{"#d62728", "#1f77b4", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf"}

// validationLoss returns the validation log loss of a check, 0 without.
func validationLoss(c Check) float64 {
	if c.Validation.LogLoss == nil {
		return 0
	}
	return *c.Validation.LogLoss
}

// checks returns the evaluator's scores of r, none without one.
func checks(r *Result) []Check {
	if r.Evaluator == nil {
		return nil
	}
	return r.Evaluator.Checks
}

// PlotLoss draws the training loss (and, dashed, the validation loss the
// evaluator measured) against wall-clock time (partition
// time included, so that a run's line starts when its training starts)
// for each run, as an SVG document with a logarithmic loss axis.
// Its title names the settings of the first run; PlotLossTitled takes
// one that also names the dataset.
func PlotLoss(w io.Writer, runs []*Result) error {
	return PlotLossTitled(w, Settings(runs), runs)
}

// Settings describes the training settings of the first of runs for a
// plot's title: the application, the machines, the consistency model, the
// update rule, the batch and the links.
func Settings(runs []*Result) string {
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

// PlotLossTitled is PlotLoss with the given title above the plot.
func PlotLossTitled(w io.Writer, title string, runs []*Result) error {
	const width, height, ml, mr, mt, mb = 640.0, 400.0, 70.0, 20.0, 40.0, 50.0
	tMax, lMin, lMax := 0.0, math.Inf(1), math.Inf(-1)
	for _, r := range runs {
		for _, p := range r.RoundsDetail {
			tMax = max(tMax, r.PartitionSeconds+r.StartSeconds+p.Seconds)
			if l := p.TrainLoss; l > 0 && !math.IsInf(l, 0) {
				lMin, lMax = min(lMin, l), max(lMax, l)
			}
		}
		for _, c := range checks(r) {
			tMax = max(tMax, r.PartitionSeconds+r.StartSeconds+c.Seconds)
			if l := validationLoss(c); l > 0 && !math.IsInf(l, 0) {
				lMin, lMax = min(lMin, l), max(lMax, l)
			}
		}
	}
	if math.IsInf(lMin, 1) {
		lMin, lMax = 0.1, 1
	}
	if tMax <= 0 {
		tMax = 1
	}
	lo, hi := math.Floor(math.Log10(lMin)), math.Ceil(math.Log10(lMax))
	if hi <= lo {
		hi = lo + 1
	}
	pw, ph := width-ml-mr, height-mt-mb
	x := func(t float64) float64 { return ml + pw*t/tMax }
	y := func(l float64) float64 { return mt + ph*(hi-math.Log10(l))/(hi-lo) }
	var b strings.Builder
	plot.Open(&b, width, height, 12)
	fmt.Fprintf(&b, `<text x="%.1f" y="20" text-anchor="middle" font-size="13">%s</text>`+"\n", width/2, html.EscapeString(title))
	fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="none" stroke="#444"/>`+"\n", ml, mt, pw, ph)
	for e := lo; e <= hi; e++ {
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#ddd"/>`+"\n", ml, ml+pw, y(math.Pow(10, e)), y(math.Pow(10, e)))
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="end">1e%.0f</text>`+"\n", ml-6, y(math.Pow(10, e))+4, e)
	}
	step := plot.NiceStep(tMax / 6)
	for t := 0.0; t <= tMax+1e-9; t += step {
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", x(t), mt+ph+16, plot.Label(t))
	}
	fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">seconds (partition + training)</text>`+"\n", ml+pw/2, height-12)
	fmt.Fprintf(&b, `<text x="14" y="%.1f" text-anchor="middle" transform="rotate(-90 14 %.1f)">training loss (validation dashed)</text>`+"\n", mt+ph/2, mt+ph/2)
	for i, r := range runs {
		c := palette[i%len(palette)]
		var pts []string
		for _, p := range r.RoundsDetail {
			if p.TrainLoss > 0 && !math.IsInf(p.TrainLoss, 0) {
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(r.PartitionSeconds+r.StartSeconds+p.Seconds), y(p.TrainLoss)))
			}
		}
		if len(pts) > 0 {
			fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>`+"\n", c, strings.Join(pts, " "))
		}
		var vpts []string
		for _, c := range checks(r) {
			if l := validationLoss(c); l > 0 && !math.IsInf(l, 0) {
				vpts = append(vpts, fmt.Sprintf("%.1f,%.1f", x(r.PartitionSeconds+r.StartSeconds+c.Seconds), y(l)))
			}
		}
		if len(vpts) > 0 {
			fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2" stroke-dasharray="6 4" points="%s"/>`+"\n", c, strings.Join(vpts, " "))
		}
		ly := mt + 14 + 16*float64(i)
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="%s" stroke-width="2"/>`+"\n", ml+pw-170, ml+pw-150, ly-4, ly-4, c)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f">%s (%.1f s)</text>`+"\n", ml+pw-145, ly, html.EscapeString(r.Placement), r.TotalSeconds)
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}
