package main

import (
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
