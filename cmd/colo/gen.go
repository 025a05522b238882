package main

import (
	"fmt"
	"io"
	"strings"

	"colo/graph"
)

func runGen(e *env, args []string) error {
	f := newFlags(e, "gen", "colo gen sparse|powerlaw|PRESET [flags] -o OUT",
		"Generates a synthetic dataset and writes it as libsvm text.\n"+
			"  sparse    n × m entries, each nonzero with probability 1 - gamma\n"+
			"  powerlaw  CTR-like: Zipf parameter popularity (--alpha), geometric\n"+
			"            sample degrees around --avg-degree\n"+
			"  presets   "+strings.Join(graph.SparsePresetNames(), ", ")+" (seed 000 §6:\n"+
			"            10^4 × 10^4 with gamma 0.999, 0.995, 0.991)\n"+
			"Labels are ±1 from a hidden random linear model.")
	n := f.Int("n", 10000, "number of samples")
	m := f.Int("m", 0, "number of parameters (default: n for sparse, n/2 for powerlaw)")
	gamma := f.Float64("gamma", 0.999, "sparse: sparsity, the probability that an entry is zero")
	deg := f.Float64("avg-degree", 30, "powerlaw: mean nonzeros per sample")
	alpha := f.Float64("alpha", 1.2, "powerlaw: Zipf exponent of parameter popularity (> 1)")
	seed := f.Uint64("seed", 1, "random seed")
	out := f.String("o", "", "output file, or - for standard output (required)")
	pos, err := f.parse(args, 1, 1)
	if err != nil {
		return err
	}
	if *out == "" {
		return usageError("-o OUT is required")
	}
	if err := checkOutputs(output{"-o", *out, false}); err != nil {
		return err
	}
	var g *graph.Graph
	switch kind := pos[0]; kind {
	case "sparse":
		c := graph.SparseConfig{Samples: *n, Params: *m, Gamma: *gamma, Seed: *seed}
		if c.Params == 0 {
			c.Params = *n
		}
		g, err = graph.Sparse(c)
	case "powerlaw":
		c := graph.DefaultPowerLaw(*n, *seed)
		c.AvgDegree, c.Alpha = *deg, *alpha
		if *m != 0 {
			c.Params = *m
		}
		g, err = graph.PowerLaw(c)
	default:
		c, ok := graph.SparsePreset(kind, *seed)
		if !ok {
			return usageError("unknown generator %q: want sparse, powerlaw or one of %s", kind, strings.Join(graph.SparsePresetNames(), ", "))
		}
		g, err = graph.Sparse(c)
	}
	if err != nil {
		return usageError("%v", err)
	}
	if err := writeOutput(e, *out, func(w io.Writer) error { return graph.WriteLibSVM(w, g) }); err != nil {
		return err
	}
	if *out != "-" {
		fmt.Fprintf(e.errOut, "wrote %s: %s\n", *out, g.Words())
	}
	return nil
}
