package main

import (
	"fmt"
	"text/tabwriter"

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
	w := tabwriter.NewWriter(e.out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(e.out, "%s (%s): %s\n", pos[0], g.Meta().Format, describe(g))
	fmt.Fprintf(e.out, "loaded in %.3f s; %.1f MB in memory\n\n", took.Seconds(), float64(st.MemoryBytes)/1e6)
	fmt.Fprintf(w, "degree\tmin\tmean\tmax\t\n")
	fmt.Fprintf(w, "samples\t%d\t%.2f\t%d\t\n", st.SampleDeg.Min, st.SampleDeg.Mean, st.SampleDeg.Max)
	fmt.Fprintf(w, "parameters\t%d\t%.2f\t%d\t\n", st.ParamDeg.Min, st.ParamDeg.Mean, st.ParamDeg.Max)
	w.Flush()
	fmt.Fprintf(e.out, "\ndegree histogram\n")
	fmt.Fprintf(w, "degree\tsamples\tparameters\t\n")
	for b := 0; b < max(len(st.SampleDeg.Histogram), len(st.ParamDeg.Histogram)); b++ {
		fmt.Fprintf(w, "%s\t%s\t%s\t\n", bucketLabel(b), commas(at(st.SampleDeg.Histogram, b)), commas(at(st.ParamDeg.Histogram, b)))
	}
	return w.Flush()
}

func at(h []int64, i int) int64 {
	if i < len(h) {
		return h[i]
	}
	return 0
}

// bucketLabel names histogram bucket b (see graph.DegreeStats).
func bucketLabel(b int) string {
	switch b {
	case 0:
		return "0"
	case 1:
		return "1"
	}
	return fmt.Sprintf("%d-%d", 1<<(b-1), 1<<b-1)
}
