package rcd

import (
	"fmt"
	"strings"

	"colo/gossip"
	"colo/internal/plot"
)

// Series is one named loss curve.
type Series struct {
	Name  string
	Curve []gossip.Point
}

// Figure draws the training loss of each series on a logarithmic axis
// against seconds (or epochs when byEpoch), with the target as a dashed
// line (none when target ≤ 0), under title, which should name the
// dataset and the settings.
func Figure(title string, series []Series, byEpoch bool, target float64) *plot.Figure {
	p := plot.Panel{X: plot.Axis{Label: "seconds"}, Y: plot.Axis{Label: "training loss", Log: true}}
	if byEpoch {
		p.X.Label = "epochs"
	}
	for i, s := range series {
		l := plot.Series{Name: s.Name, Color: i}
		for _, q := range s.Curve {
			x := q.Seconds
			if byEpoch {
				x = q.Epoch
			}
			l.X, l.Y = append(l.X, x), append(l.Y, q.TrainLoss)
		}
		p.Series = append(p.Series, l)
	}
	if target > 0 {
		p.Rules = []plot.Rule{{At: target, Label: fmt.Sprintf("target %.3f", target)}}
	}
	return &plot.Figure{Title: title, Panels: []plot.Panel{p}, Width: 720, Height: 420}
}

// Title names the dataset and the settings of res.
func (res *Result) Title() string {
	speeds := make([]string, len(res.Speeds))
	for i, s := range res.Speeds {
		speeds[i] = plot.Label(s)
	}
	lr := fmt.Sprintf("lr %g", res.LR)
	if res.LRDecay != "" && res.LRDecay != "none" {
		lr += " " + res.LRDecay
	}
	if res.BatchWeighted {
		lr += ", batch-weighted"
	}
	return fmt.Sprintf("%s: %d workers of speeds %s, %s, %d epochs, batch %d, %s", res.Dataset, res.Workers, strings.Join(speeds, ":"), res.Topology, res.Epochs, res.Batch, lr)
}
