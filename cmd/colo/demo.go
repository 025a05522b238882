package main

import (
	"fmt"
	"time"

	"colo/datasets"
	"colo/graph"
	"colo/partition"
	"colo/placement"
)

func runDemo(e *env, args []string) error {
	f := newFlags(e, "demo", "colo demo [flags]",
		"Loads the 20 Newsgroups training set that ships inside colo (11,269\n"+
			"documents, 53,975 words), places it on 4 machines and prints the cost\n"+
			"table of each placement algorithm next to random placement.")
	k := f.Int("k", 4, "number of machines")
	seed := f.Uint64("seed", 1, "random seed")
	if _, err := f.parse(args, 0, 0); err != nil {
		return err
	}
	start := time.Now()
	g, err := graph.Read(datasets.OpenNews20Train(), datasets.News20Train, graph.DefaultLoadOptions())
	if err != nil {
		return err
	}
	fmt.Fprintf(e.out, "20 Newsgroups train: %s; loaded in %.2f s\n", describe(g), time.Since(start).Seconds())
	algos := []string{"random"}
	if d := defaultAlgo(); d != "random" {
		algos = append(algos, d)
	}
	for _, name := range algos {
		run, err := partition.Lookup(name)
		if err != nil {
			return err
		}
		opt := partition.Options{K: *k, Seed: *seed, Balanced: name == "random"}
		bar := newProgressBar(e, name)
		opt.Progress = bar.update
		t0 := time.Now()
		p, err := run(g, opt)
		bar.finish()
		if err != nil {
			return err
		}
		took := time.Since(t0)
		s, err := placement.NewSummary(g, p, 0)
		if err != nil {
			return err
		}
		label := name
		if name == "random" {
			label = "random (balanced samples, random parameters)"
		}
		fmt.Fprintf(e.out, "\n== %s on %d machines: %.3f s\n\n", label, *k, took.Seconds())
		if err := printCostTable(e.out, s); err != nil {
			return err
		}
	}
	return nil
}
