package main

import (
	"fmt"
	"time"

	"colo/graph"
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

// commas formats n with thousands separators.
func commas(n int64) string {
	s := fmt.Sprint(n)
	neg := n < 0
	if neg {
		s = s[1:]
	}
	var out []byte
	for i := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	if neg {
		return "-" + string(out)
	}
	return string(out)
}
