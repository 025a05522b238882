package main

import (
	"context"
	"fmt"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"colo/app"
	"colo/balance"
	"colo/bench/balancing"
)

func runBenchBalance(e *env, args []string) error {
	f := newFlags(e, "bench balance", "colo bench balance [flags] DATA --labels L -o DIR",
		"The experiment of seed 002: trains an mlp of three sizes (a hundredth of\n"+
			"MobileNet, ResNet-50 and AlexNet) on 12 co-located machines whose links\n"+
			"are drawn at random (--bandwidth-random, --bandwidth-change), for --rounds\n"+
			"rounds per scheme of --schemes, --runs times interleaved, and writes the\n"+
			"images per minute, the mean round time against Oracle's, the round times\n"+
			"(SRIT) and, with --slices, Aware's round time against the granularity:\n"+
			"DIR/balance.json, balance.csv, speed.svg, srit.svg, granularity.svg.\n"+
			"Every training flag of colo train applies.")
	var t trainFlags
	t.register(f)
	var df dataFlags
	df.register(f)
	for name, v := range map[string]string{"app": "mlp", "machines": "12", "batch": "384", "bandwidth-random": "200mbit", "updater": "adam", "lr": "0.001"} {
		f.Lookup(name).Value.Set(v) // the experiment's defaults (seed 002 Table 1: Adam 0.001, 32 a worker), shown by -h
		f.Lookup(name).DefValue = v
	}
	schemes := f.String("schemes", strings.Join(balance.Schemes, ","), "comma-separated schemes: average, elastic, aware, oracle")
	sizes := f.Int("sizes", 3, "how many of the three model sizes, smallest first")
	runs := f.Int("runs", 3, "trainings per size and scheme, interleaved; medians are reported")
	rounds := f.Int("rounds", 40, "rounds of each training")
	slices := f.String("slices", "", "granularities (keys) of Aware's sweep on the smallest model, such as 256,1024,4096,16384")
	out := f.String("o", "", "output directory (required)")
	pos, err := f.parse(args, 1, 1)
	if err != nil {
		return err
	}
	if *out == "" {
		return usageError("-o DIR is required")
	}
	if err := checkOutputs(output{"-o", *out, true}, output{"--json", t.json.path, false}); err != nil {
		return err
	}
	job, err := t.job(pos[0], df)
	if err != nil {
		return err
	}
	cfg := balancing.Config{Job: job, Schemes: splitList(*schemes), Sizes: balancing.Sizes[:min(max(*sizes, 1), 3)], Runs: *runs, Rounds: *rounds,
		Balance: balance.DefaultConfig(), Progress: func(r balancing.RunResult) {
			fmt.Fprintf(e.errOut, "%s %s run %d: %.0f images/min, round %.3f s, %d keys moved\n", r.Size, r.Scheme, r.Run, r.ImagesPerMinute, r.ASRIT, r.KeysMoved)
		}}
	cfg.Balance.Every, cfg.Balance.Slice, cfg.Balance.Probe = t.bal.Every, t.bal.Slice, t.bal.Probe
	if *slices != "" {
		xs, err := parseInts(*slices)
		if err != nil {
			return usageError("--slices: %v", err)
		}
		for _, x := range xs {
			cfg.Slices = append(cfg.Slices, uint64(x))
		}
	}
	job.Config.Balance = nil
	if err := cfg.Validate(); err != nil {
		return usageError("%v", err)
	}
	opened, err := app.Open(job)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.errOut, "%s: %s; %d machines, links from %s, %d rounds, %d runs of %s\n", pos[0], describeData(opened.Data),
		job.Config.Machines, t.bal.Random, *rounds, *runs, strings.Join(cfg.Schemes, ", "))
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	res, err := balancing.Run(ctx, cfg, opened.Data)
	if err != nil {
		return err
	}
	if err := balancing.WriteDir(*out, res); err != nil {
		return err
	}
	if err := stampFile(e, filepath.Join(*out, "balance.json")); err != nil {
		return err
	}
	if p := t.json.path; p != "" {
		if err := writeJSON(e, p, res); err != nil {
			return err
		}
	}
	if err := balancing.WriteTable(e.out, res.Table); err != nil {
		return err
	}
	fmt.Fprintf(e.out, "\nwritten to %s (%s)\n", *out, strings.Join(balancing.Files, ", "))
	return nil
}
