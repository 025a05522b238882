package balancing

import (
	"fmt"
	"slices"

	"colo/internal/plot"
)

// schemesOf returns the sizes and the schemes of the table, in order.
func schemesOf(res *Result) (sizes, schemes []string) {
	for _, r := range res.Table {
		if len(sizes) == 0 || sizes[len(sizes)-1] != r.Size {
			sizes = append(sizes, r.Size)
		}
		if !slices.Contains(schemes, r.Scheme) {
			schemes = append(schemes, r.Scheme)
		}
	}
	return sizes, schemes
}

// settings names the dataset and the settings of res, for the titles.
func (res *Result) settings() string {
	s := fmt.Sprintf("%s: %d machines, batch %d, links up to %s Mbit/s", res.Dataset, res.Machines, res.Batch, plot.Label(res.RandomBandwidth*8/1e6))
	if res.BandwidthChange != "" && res.BandwidthChange != "0s" {
		s += ", drawn again every " + res.BandwidthChange
	}
	return s
}

// speedFigure is Fig. 4: images per minute per scheme, grouped by size.
func speedFigure(res *Result) *plot.Figure {
	sizes, schemes := schemesOf(res)
	p := plot.Panel{Title: "training speed per scheme (Eq. 16)", X: plot.Axis{Label: "model (a hundredth of the seed's)", Categories: sizes},
		Y: plot.Axis{Label: "images per minute"}}
	for si, s := range schemes {
		b := plot.Bars{Name: s, Values: make([]float64, len(sizes)), Color: si}
		for _, r := range res.Table {
			if r.Scheme == s {
				b.Values[slices.Index(sizes, r.Size)] = r.ImagesPerMinute
			}
		}
		p.Bars = append(p.Bars, b)
	}
	return &plot.Figure{Title: res.settings(), Panels: []plot.Panel{p}}
}

// sritFigure is Fig. 5: the round time of each decision window of the
// first run of every scheme on the last size.
func sritFigure(res *Result) *plot.Figure {
	sizes, schemes := schemesOf(res)
	p := plot.Panel{Title: "single-round iteration time (SRIT)", X: plot.Axis{Label: "round"}, Y: plot.Axis{Label: "seconds", Zero: true}}
	if len(sizes) > 0 {
		last := sizes[len(sizes)-1]
		p.Title += ", " + last
		for si, s := range schemes {
			for _, r := range res.Runs {
				if r.Size == last && r.Scheme == s && r.Run == 1 {
					l := plot.Series{Name: s, Color: si}
					for i, t := range r.SRIT {
						if t > 0 { // the first round is not timed
							l.X, l.Y = append(l.X, float64(i+1)), append(l.Y, t)
						}
					}
					p.Series = append(p.Series, l)
					break
				}
			}
		}
	}
	return &plot.Figure{Title: res.settings(), Panels: []plot.Panel{p}}
}

// granularityFigure is Fig. 6: Aware's ASRIT against the slice
// granularity on a log scale, with Eq. 4's value marked.
func granularityFigure(res *Result) *plot.Figure {
	p := plot.Panel{Title: "aware: round time against slice granularity", X: plot.Axis{Label: "slice (keys, log scale)", Log: true},
		Y: plot.Axis{Label: "ASRIT (s)", Zero: true}}
	l := plot.Series{Name: "aware, --slice N", Points: true, Color: 2}
	m := plot.Series{Name: "aware, --slice auto", Points: true, NoLine: true, Color: 3}
	for _, r := range res.Granularity {
		if r.Calibration != nil {
			m.X, m.Y = append(m.X, float64(r.Slice)), append(m.Y, r.ASRIT)
			continue
		}
		l.X, l.Y = append(l.X, float64(r.Slice)), append(l.Y, r.ASRIT)
	}
	p.Series = []plot.Series{l}
	if len(m.X) > 0 {
		p.Series = append(p.Series, m)
	}
	if res.Eq4 > 0 {
		p.Rules = append(p.Rules, plot.Rule{Vertical: true, At: res.Eq4, Label: fmt.Sprintf("Eq. 4, measured α: %.0f", res.Eq4)})
	}
	if res.PaperEq4 > 0 {
		p.Rules = append(p.Rules, plot.Rule{Vertical: true, At: res.PaperEq4, Label: fmt.Sprintf("Eq. 4, seed's α: %.0f", res.PaperEq4)})
	}
	return &plot.Figure{Title: res.settings(), Panels: []plot.Panel{p}}
}
