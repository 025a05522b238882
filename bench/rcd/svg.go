package rcd

import (
	"fmt"
	"html"
	"io"
	"math"
	"strings"

	"colo/gossip"
	"colo/internal/plot"
)

// Series is one named loss curve.
type Series struct {
	Name  string
	Curve []gossip.Point
}

var palette = []string{"#d62728", "#1f77b4", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf"}

// PlotCurves draws the training loss of each series on a logarithmic axis
// against seconds (or epochs when byEpoch), with the target as a dashed
// line (none when target ≤ 0), as an SVG document.
func PlotCurves(w io.Writer, series []Series, byEpoch bool, target float64) error {
	const width, height, ml, mr, mt, mb = 720.0, 420.0, 70.0, 200.0, 30.0, 50.0
	xMax, lMin, lMax := 0.0, math.Inf(1), math.Inf(-1)
	xOf := func(p gossip.Point) float64 {
		if byEpoch {
			return p.Epoch
		}
		return p.Seconds
	}
	for _, s := range series {
		for _, p := range s.Curve {
			xMax = max(xMax, xOf(p))
			if p.TrainLoss > 0 && !math.IsInf(p.TrainLoss, 0) {
				lMin, lMax = min(lMin, p.TrainLoss), max(lMax, p.TrainLoss)
			}
		}
	}
	if target > 0 {
		lMin, lMax = min(lMin, target), max(lMax, target)
	}
	if math.IsInf(lMin, 1) {
		lMin, lMax = 0.1, 1
	}
	if xMax <= 0 {
		xMax = 1
	}
	lo, hi := math.Floor(math.Log10(lMin)), math.Ceil(math.Log10(lMax))
	if hi <= lo {
		hi = lo + 1
	}
	pw, ph := width-ml-mr, height-mt-mb
	x := func(v float64) float64 { return ml + pw*v/xMax }
	y := func(l float64) float64 { return mt + ph*(hi-math.Log10(l))/(hi-lo) }
	var b strings.Builder
	plot.Open(&b, width, height, 12)
	fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="none" stroke="#444"/>`+"\n", ml, mt, pw, ph)
	for e := lo; e <= hi; e++ {
		for _, m := range []float64{1, 2, 5} {
			v := m * math.Pow(10, e)
			if v < math.Pow(10, lo) || v > math.Pow(10, hi) {
				continue
			}
			fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#ddd"/>`+"\n", ml, ml+pw, y(v), y(v))
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="end">%s</text>`+"\n", ml-6, y(v)+4, plot.Label(v))
		}
	}
	step := plot.NiceStep(xMax / 6)
	for t := 0.0; t <= xMax+1e-9; t += step {
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", x(t), mt+ph+16, plot.Label(t))
	}
	label := "seconds"
	if byEpoch {
		label = "epochs"
	}
	fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", ml+pw/2, height-12, label)
	fmt.Fprintf(&b, `<text x="14" y="%.1f" text-anchor="middle" transform="rotate(-90 14 %.1f)">training loss</text>`+"\n", mt+ph/2, mt+ph/2)
	if target > 0 {
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#444" stroke-dasharray="6 4"/>`+"\n", ml, ml+pw, y(target), y(target))
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="end" fill="#444">target %.3f</text>`+"\n", ml+pw-4, y(target)-4, target)
	}
	for i, s := range series {
		c := palette[i%len(palette)]
		var pts []string
		for _, p := range s.Curve {
			if p.TrainLoss > 0 && !math.IsInf(p.TrainLoss, 0) {
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(xOf(p)), y(p.TrainLoss)))
			}
		}
		if len(pts) > 0 {
			fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>`+"\n", c, strings.Join(pts, " "))
		}
		ly := mt + 10 + 18*float64(i)
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="%s" stroke-width="2"/>`+"\n", width-mr+10, width-mr+30, ly, ly, c)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f">%s</text>`+"\n", width-mr+36, ly+4, html.EscapeString(s.Name))
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}
