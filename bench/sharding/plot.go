package sharding

import (
	"fmt"

	"colo/internal/plot"
)

// BoxFigure draws, for each scheme, a box plot of the final validation
// accuracy over its runs (whiskers at the extremes, the box from the
// first to the third quartile, the line at the median, every run a dot).
func BoxFigure(res *Result) *plot.Figure {
	var schemes []string
	byScheme := map[string][]float64{}
	for _, r := range res.Runs {
		if _, ok := byScheme[r.Scheme]; !ok {
			schemes = append(schemes, r.Scheme)
		}
		byScheme[r.Scheme] = append(byScheme[r.Scheme], 100*r.ValAccuracy)
	}
	p := plot.Panel{X: plot.Axis{Categories: schemes}, Y: plot.Axis{Label: "final validation accuracy (%)"}}
	for i, s := range schemes {
		p.Boxes = append(p.Boxes, plot.Box{At: float64(i), Q: quartiles(byScheme[s]), Points: byScheme[s]})
	}
	title := fmt.Sprintf("%s: %s on %d workers, %s, %d epochs, batch %d, %d runs per scheme", res.Dataset, res.App, res.Machines, res.Consistency,
		res.Epochs, res.Batch, len(res.Runs)/max(1, len(schemes)))
	return &plot.Figure{Title: title, Panels: []plot.Panel{p}, Width: max(360, 110*len(schemes)+120)}
}
