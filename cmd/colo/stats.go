package main

import (
	"fmt"

	"colo/graph"
)

func runStats(e *env, args []string) error {
	f := newFlags(e, "stats", "colo stats [flags] FILE",
		"Prints the number of samples, parameters and edges of a dataset, the\n"+
			"degree distribution of both sides and the time it took to load.")
	var df dataFlags
	df.register(f)
	j := f.JSONOption("the statistics")
	pos, err := f.parse(args, 1, 1)
	if err != nil {
		return err
	}
	if err := checkOutputs(output{"--json", j.Path, false}); err != nil {
		return err
	}
	g, took, err := df.load(pos[0])
	if err != nil {
		return err
	}
	st := graph.ComputeStats(g)
	if j.Path != "" {
		out := struct {
			graph.Stats
			File        string  `json:"file"`
			Format      string  `json:"format"`
			LoadSeconds float64 `json:"load_seconds"`
		}{st, pos[0], g.Meta().Format, took.Seconds()}
		if err := writeJSON(e, j.Path, out); err != nil {
			return err
		}
	}
	fmt.Fprintf(e.out, "%s (%s): %s\n", pos[0], g.Meta().Format, g.Words())
	fmt.Fprintf(e.out, "loaded in %.3f s; %.1f MB in memory\n\n", took.Seconds(), float64(st.MemoryBytes)/1e6)
	return st.WriteTable(e.out)
}
