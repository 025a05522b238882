package sharding

import (
	"fmt"
	"html"
	"io"
	"math"
	"strings"

	"colo/internal/plot"
)

// BoxPlot draws, for each scheme, a box plot of the final validation
// accuracy over its runs (whiskers at the extremes, the box from the
// first to the third quartile, the line at the median, every run a dot),
// as an SVG document.
func BoxPlot(w io.Writer, res *Result) error {
	var schemes []string
	byScheme := map[string][]float64{}
	for _, r := range res.Runs {
		if _, ok := byScheme[r.Scheme]; !ok {
			schemes = append(schemes, r.Scheme)
		}
		byScheme[r.Scheme] = append(byScheme[r.Scheme], 100*r.ValAccuracy)
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, xs := range byScheme {
		for _, x := range xs {
			lo, hi = min(lo, x), max(hi, x)
		}
	}
	if math.IsInf(lo, 1) {
		lo, hi = 0, 100
	}
	step := plot.NiceStep((hi - lo) / 5)
	lo, hi = math.Floor(lo/step)*step, math.Ceil(hi/step)*step
	if hi <= lo {
		hi = lo + step
	}
	const bw, ph, ml, mr, mt, mb = 90.0, 300.0, 60.0, 20.0, 55.0, 50.0
	pw := bw * float64(max(1, len(schemes)))
	var b strings.Builder
	plot.Open(&b, pw+ml+mr, ph+mt+mb, 11)
	fmt.Fprintf(&b, `<text x="%.0f" y="20" text-anchor="middle" font-size="13">final validation accuracy (%%)</text>`+"\n", (pw+ml+mr)/2)
	fmt.Fprintf(&b, `<text x="%.0f" y="38" text-anchor="middle">%d runs per scheme, %s, %d workers, %s</text>`+"\n",
		(pw+ml+mr)/2, len(res.Runs)/max(1, len(schemes)), html.EscapeString(res.App), res.Machines, html.EscapeString(res.Consistency))
	y := func(v float64) float64 { return mt + ph - (v-lo)/(hi-lo)*ph }
	for v := lo; v <= hi+step/2; v += step {
		fmt.Fprintf(&b, `<line x1="%.0f" x2="%.0f" y1="%.1f" y2="%.1f" stroke="#ddd"/>`+"\n", ml, ml+pw, y(v), y(v))
		fmt.Fprintf(&b, `<text x="%.0f" y="%.1f" text-anchor="end" dominant-baseline="middle">%s</text>`+"\n", ml-6, y(v), plot.Label(v))
	}
	for i, s := range schemes {
		q := quartiles(byScheme[s])
		cx := ml + bw*(float64(i)+0.5)
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="black"/>`+"\n", cx, cx, y(q[0]), y(q[4]))
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.0f" height="%.1f" fill="#9ecae1" stroke="black"/>`+"\n", cx-bw/4, y(q[3]), bw/2, max(0.5, y(q[1])-y(q[3])))
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="black" stroke-width="2"/>`+"\n", cx-bw/4, cx+bw/4, y(q[2]), y(q[2]))
		for _, v := range byScheme[s] {
			fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="2.5" fill="#d62728"/>`+"\n", cx+bw/3, y(v))
		}
		fmt.Fprintf(&b, `<text x="%.1f" y="%.0f" text-anchor="middle">%s</text>`+"\n", cx, mt+ph+20, html.EscapeString(s))
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}
