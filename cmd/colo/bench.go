package main

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"colo/bench"
	"colo/internal/cli"
	"colo/internal/textio"
	"colo/partition"
)

// benchNames are the benchmarks of colo bench.
var benchNames = []string{"partition", "kv", "sharding", "balance", "rcd"}

func runBench(e *env, args []string) error {
	if len(args) > 0 && args[0] == "kv" {
		return runBenchKV(e, args[1:])
	}
	if len(args) > 0 && args[0] == "sharding" {
		return runBenchSharding(e, args[1:])
	}
	if len(args) > 0 && args[0] == "balance" {
		return runBenchBalance(e, args[1:])
	}
	if len(args) > 0 && args[0] == "rcd" {
		return runBenchRCD(e, args[1:])
	}
	if len(args) == 0 || args[0] != "partition" {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "-help") {
			fmt.Fprintln(e.out, "Usage: colo bench partition [flags] DATA... -o DIR\n       colo bench kv [flags]\n       colo bench sharding [flags] DATA -o DIR\n       colo bench balance [flags] DATA -o DIR\n       colo bench rcd [flags] DATA [-o DIR]\n\nRun 'colo bench NAME -h' for the flags.")
			return nil
		}
		if len(args) > 0 {
			if s := cli.Suggest(args[0], benchNames); s != "" {
				return usageError("unknown benchmark %q: did you mean %s?", args[0], s)
			}
		}
		return usageError("want 'colo bench partition DATA...', 'colo bench kv', 'colo bench sharding DATA', 'colo bench balance DATA' or 'colo bench rcd DATA'")
	}
	f := newFlags(e, "bench partition", "colo bench partition [flags] DATA[@FORMAT]... -o DIR",
		"Runs every algorithm of --algos on every dataset for every K of --machines and\n"+
			"writes "+
			"DIR/bench.csv and DIR/bench.json (time, M_max, T_max, T_sum, max|U_i|, the\n"+
			"objective, the random baseline and the improvements over it) and\n"+
			"DIR/improvement.svg and .png (T_max improvement over random against k). A dataset's\n"+
			"format may follow its path after @ (e.g. facebook_combined.txt.gz@snap-undirected);\n"+
			"otherwise --format or detection applies. Algorithms: "+fmt.Sprint(partition.Names())+", each\n"+
			"optionally followed by +refine.")
	var df dataFlags
	df.register(f)
	ks := f.String("machines", "2,4,8,16,32,64", "comma-separated numbers of machines K")
	f.Alias("k", "machines")
	algos := f.String("algos", "random,parsa,tsh1,tsh2,mbp,parsa+refine", "comma-separated algorithms")
	out := f.String("o", "", "output directory (required)")
	var opt partition.Options
	f.Uint64Var(&opt.Seed, "seed", 1, "random seed")
	f.Int64Var(&opt.Theta, "theta", 0, "memory bound θ on |N(U_i)| (0: none)")
	algoFlags(f, &opt)
	j := f.JSONOption("the results")
	pos, err := f.parse(args[1:], 1, -1)
	if err != nil {
		return err
	}
	if *out == "" {
		return usageError("-o DIR is required")
	}
	if err := checkOutputs(output{"-o", *out, true}, output{"--json", j.Path, false}); err != nil {
		return err
	}
	cfg := bench.Config{Seed: opt.Seed, Options: opt, Algos: textio.SplitList(*algos)}
	for _, s := range textio.SplitList(*ks) {
		k, err := strconv.Atoi(s)
		if err != nil || k < 1 {
			return usageError("--machines %q: want positive numbers of machines separated by commas", *ks)
		}
		cfg.Ks = append(cfg.Ks, k)
	}
	if err := cfg.Validate(); err != nil {
		return usageError("%v", err)
	}
	var data []bench.Dataset
	for _, arg := range pos {
		path, format, _ := strings.Cut(arg, "@")
		d := df
		if format != "" {
			d.format = format
			if _, err := d.options(); err != nil {
				return usageError("%s: %v", arg, err)
			}
		}
		g, took, err := d.load(path)
		if err != nil {
			return err
		}
		fmt.Fprintf(e.errOut, "%s: %s; loaded in %.2f s\n", path, g.Words(), took.Seconds())
		data = append(data, bench.Dataset{Name: bench.DatasetName(path), Graph: g})
	}
	cfg.Progress = func(d, a string, k int) { fmt.Fprintf(e.errOut, "%s k=%d %s\n", d, k, a) }
	rs, err := bench.Run(data, cfg)
	if err != nil {
		return err
	}
	settings := fmt.Sprintf("seed %d", opt.Seed)
	if opt.Theta > 0 {
		settings += fmt.Sprintf(", θ %d", opt.Theta)
	}
	if err := bench.WriteDir(*out, rs, settings); err != nil {
		return err
	}
	if err := stampFile(e, filepath.Join(*out, bench.Files()[1])); err != nil {
		return err
	}
	if j.Path != "" {
		if err := writeJSON(e, j.Path, rs); err != nil {
			return err
		}
	}
	if err := bench.WriteTable(e.out, rs); err != nil {
		return err
	}
	fmt.Fprintf(e.out, "\nwritten to %s (%s)\n", *out, strings.Join(bench.Files(), ", "))
	return nil
}
