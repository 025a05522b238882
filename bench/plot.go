package bench

import (
	"slices"

	"colo/internal/plot"
)

// Figure draws the improvement in T_max over random placement against k
// on a log₂ axis, one panel per dataset side by side and one line per
// algorithm, under a title that names the settings. Runs whose
// improvement is undefined are left out.
func Figure(rs []Result, settings string) *plot.Figure {
	var datasets, algos []string
	var ks []float64
	for _, r := range rs {
		if !slices.Contains(datasets, r.Dataset) {
			datasets = append(datasets, r.Dataset)
		}
		if !slices.Contains(algos, r.Algo) {
			algos = append(algos, r.Algo)
		}
		if !slices.Contains(ks, float64(r.K)) {
			ks = append(ks, float64(r.K))
		}
	}
	slices.Sort(ks)
	f := &plot.Figure{Title: "T_max improvement over random placement, " + settings, Width: 120 + 340*max(1, len(datasets)), Height: 360}
	for _, d := range datasets {
		p := plot.Panel{Title: d, X: plot.Axis{Label: "k (machines)", Log: true, Ticks: ks}, Y: plot.Axis{Label: "T_max improvement over random", Unit: "%", Zero: true}}
		if len(ks) > 0 {
			p.X.Min, p.X.Max = ks[0]/1.15, ks[len(ks)-1]*1.15
		}
		for ai, a := range algos {
			l := plot.Series{Name: a, Color: ai, Points: true}
			for _, k := range ks {
				for _, r := range rs {
					if r.Dataset == d && r.Algo == a && float64(r.K) == k && r.Improvement.TMax != nil {
						l.X, l.Y = append(l.X, k), append(l.Y, *r.Improvement.TMax)
					}
				}
			}
			p.Series = append(p.Series, l)
		}
		f.Panels = append(f.Panels, p)
	}
	return f
}
