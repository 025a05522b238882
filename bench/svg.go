package bench

import (
	"fmt"
	"html"
	"io"
	"math"
	"slices"
	"strings"

	"colo/internal/plot"
)

// palette colours the algorithms, in the order they first appear.
var palette = []string{"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22"}

// PlotSVG draws the improvement in T_max over random placement against k,
// one panel per dataset side by side and one line per algorithm, as an
// SVG document. Runs whose improvement is undefined are left out.
func PlotSVG(w io.Writer, rs []Result) error {
	var datasets, algos []string
	var ks []int
	for _, r := range rs {
		if !slices.Contains(datasets, r.Dataset) {
			datasets = append(datasets, r.Dataset)
		}
		if !slices.Contains(algos, r.Algo) {
			algos = append(algos, r.Algo)
		}
		if !slices.Contains(ks, r.K) {
			ks = append(ks, r.K)
		}
	}
	slices.Sort(ks)
	const pw, ph, ml, mr, mt, mb = 300.0, 220.0, 55.0, 15.0, 30.0, 40.0
	legendH := 20.0 * float64(len(algos))
	width := float64(max(1, len(datasets))) * (pw + ml + mr)
	height := ph + mt + mb + legendH + 10
	var b strings.Builder
	plot.Open(&b, width, height, 11)
	xOf := func(k int) float64 {
		if len(ks) < 2 {
			return pw / 2
		}
		lo, hi := math.Log2(float64(ks[0])), math.Log2(float64(ks[len(ks)-1]))
		return (math.Log2(float64(k)) - lo) / (hi - lo) * pw
	}
	for di, d := range datasets {
		x0 := float64(di)*(pw+ml+mr) + ml
		ymax, ymin := 0.0, 0.0
		for _, r := range rs {
			if r.Dataset == d && r.Improvement.TMax != nil {
				ymax = max(ymax, *r.Improvement.TMax)
				ymin = min(ymin, *r.Improvement.TMax)
			}
		}
		step := plot.NiceStep((ymax - ymin) / 5)
		ymax = math.Ceil(ymax/step) * step
		ymin = math.Floor(ymin/step) * step
		if ymax == ymin {
			ymax = ymin + step
		}
		yOf := func(v float64) float64 { return mt + ph - (v-ymin)/(ymax-ymin)*ph }
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle" font-size="13">%s</text>`+"\n", x0+pw/2, mt-12, html.EscapeString(d))
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="none" stroke="#444"/>`+"\n", x0, mt, pw, ph)
		for v := ymin; v <= ymax+step/2; v += step {
			y := yOf(v)
			fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ddd"/>`+"\n", x0, y, x0+pw, y)
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="end">%s%%</text>`+"\n", x0-4, y+4, plot.Label(v))
		}
		for _, k := range ks {
			x := x0 + xOf(k)
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%d</text>`+"\n", x, mt+ph+14, k)
		}
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">k (machines)</text>`+"\n", x0+pw/2, mt+ph+30)
		if di == 0 {
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle" transform="rotate(-90 %.1f %.1f)">T_max improvement over random</text>`+"\n",
				12.0, mt+ph/2, 12.0, mt+ph/2)
		}
		for ai, a := range algos {
			var pts []string
			for _, k := range ks {
				for _, r := range rs {
					if r.Dataset == d && r.Algo == a && r.K == k && r.Improvement.TMax != nil {
						pts = append(pts, fmt.Sprintf("%.1f,%.1f", x0+xOf(k), yOf(*r.Improvement.TMax)))
					}
				}
			}
			col := palette[ai%len(palette)]
			if len(pts) > 1 {
				fmt.Fprintf(&b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="1.8"/>`+"\n", strings.Join(pts, " "), col)
			}
			for _, p := range pts {
				xy := strings.Split(p, ",")
				fmt.Fprintf(&b, `<circle cx="%s" cy="%s" r="2.5" fill="%s"/>`+"\n", xy[0], xy[1], col)
			}
		}
	}
	for ai, a := range algos {
		y := mt + ph + mb + 14 + 20*float64(ai)
		col := palette[ai%len(palette)]
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="2"/>`+"\n", ml, y-4, ml+24, y-4, col)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f">%s</text>`+"\n", ml+30, y, html.EscapeString(a))
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}
