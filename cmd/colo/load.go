package main

import (
	"fmt"
	"time"

	"colo/app"
	"colo/dataset"
	"colo/graph"
	"colo/internal/textio"
)

// loadGraph loads a dataset and reports how long it took.
func loadGraph(path string, opt graph.LoadOptions) (*graph.Graph, time.Duration, error) {
	start := time.Now()
	g, err := graph.Load(path, opt)
	if err != nil {
		return nil, 0, err
	}
	return g, time.Since(start), nil
}

// describe is a one-line description of a graph for human output.
func describe(g *graph.Graph) string {
	return fmt.Sprintf("%s samples, %s parameters, %s edges",
		commas(int64(g.NumSamples())), commas(int64(g.NumParams())), commas(g.NumEdges()))
}

// describeData is a one-line description of a job's training data.
func describeData(d *app.Data) string {
	if d.Graph != nil {
		return describe(d.Graph)
	}
	s := d.Samples
	label := ""
	if s.Format == dataset.FormatCSV {
		label = fmt.Sprintf(", labels from column %d", s.LabelCol)
		if s.LabelName != "" {
			label = fmt.Sprintf(", labels from column %d %q", s.LabelCol, s.LabelName)
		}
	}
	return fmt.Sprintf("%s samples × %d features, %d classes%s", commas(int64(s.Len())), s.Dim, s.Classes, label)
}

// commas formats n with thousands separators (textio.Commas).
func commas(n int64) string { return textio.Commas(n) }
