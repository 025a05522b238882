package main

import (
	"context"
	"fmt"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"colo/app"
	"colo/bench/sharding"
)

func runBenchSharding(e *env, args []string) error {
	f := newFlags(e, "bench sharding", "colo bench sharding [flags] DATA --labels L --test T --test-labels TL -o DIR",
		"The study of seed 004: trains a dense model --runs times per sharding scheme\n"+
			"(each run another seed: shards, initial parameters, batches), by default\n"+
			"asynchronously on 12 machines, and writes Table II (mean and variance of\n"+
			"the final training and validation loss and accuracy per scheme), the\n"+
			"variance of each figure against the first scheme's, the spread of the\n"+
			"per-class validation accuracy, and box plots of the validation accuracy:\n"+
			"DIR/sharding.json, sharding.csv, runs.csv and validation_accuracy.svg.\n"+
			"Every training flag of colo train applies.")
	var t trainFlags
	t.register(f)
	var df dataFlags
	df.register(f)
	for name, v := range map[string]string{"app": "mlp", "machines": "12", "consistency": "async"} {
		f.Lookup(name).Value.Set(v) // the study's defaults, shown by -h
		f.Lookup(name).DefValue = v
	}
	schemes := f.String("schemes", "random,stratified,distaware", "comma-separated sharding schemes (distaware:K for K neighbourhoods); the first is the baseline")
	runs := f.Int("runs", 5, "trainings per scheme")
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
	cfg := sharding.Config{Job: job, Schemes: splitList(*schemes), Runs: *runs,
		Progress: func(s string, r int, rr *sharding.RunResult) {
			fmt.Fprintf(e.errOut, "%s run %d/%d: validation accuracy %.2f%%, training loss %.4f, %.1f s\n", s, r, *runs, 100*rr.ValAccuracy, rr.TrainLoss, rr.Seconds)
		}}
	if err := cfg.Validate(); err != nil {
		return usageError("%v", err)
	}
	opened, err := app.Open(job)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.errOut, "%s: %s; %s on %d machines, %s, %d epochs, %d runs of %s\n", pos[0], describeData(opened.Data),
		job.App, job.Config.Machines, job.Config.Clock.Name(), job.Config.MaxPasses, *runs, strings.Join(cfg.Schemes, ", "))
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	res, err := sharding.Run(ctx, cfg, opened.Data)
	if err != nil {
		return err
	}
	if err := sharding.WriteDir(*out, res); err != nil {
		return err
	}
	if err := stampFile(e, filepath.Join(*out, "sharding.json")); err != nil {
		return err
	}
	if p := t.json.path; p != "" {
		if err := writeJSON(e, p, res); err != nil {
			return err
		}
	}
	if err := sharding.WriteTable(e.out, res.Table); err != nil {
		return err
	}
	fmt.Fprintf(e.out, "\nwritten to %s (%s)\n", *out, strings.Join(sharding.Files, ", "))
	return nil
}
