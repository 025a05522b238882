package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"colo/app"
	"colo/bench/sharding"
	"colo/internal/textio"
)

func runBenchSharding(e *env, args []string) error {
	f := newFlags(e, "bench sharding", "colo bench sharding [flags] DATA --labels L --test T --test-labels TL -o DIR",
		"The study of seed 004: trains a dense model --runs times per sharding scheme\n"+
			"(each run another seed: shards, initial parameters, batches), by default\n"+
			"asynchronously on 12 machines, and writes Table II (mean and variance of\n"+
			"the final training and validation loss and accuracy per scheme), the\n"+
			"variance of each figure against the first scheme's, the spread of the\n"+
			"per-class validation accuracy, and box plots of the validation accuracy:\n"+
			"DIR/sharding.json, sharding.csv, runs.csv and validation_accuracy.svg and .png.\n"+
			"Every training flag of colo train applies.")
	st := newStudy(f, map[string]string{"app": "mlp", "machines": "12", "consistency": "async"})
	schemes := f.String("schemes", "random,stratified,distaware", "comma-separated sharding schemes (distaware:K for K neighbourhoods); the first is the baseline")
	runs := f.Int("runs", 5, "trainings per scheme")
	data, job, err := st.job(f, args)
	if err != nil {
		return err
	}
	cfg := sharding.Config{Job: job, Schemes: textio.SplitList(*schemes), Runs: *runs,
		Progress: func(s string, r int, rr *sharding.RunResult) {
			fmt.Fprintf(e.errOut, "%s run %d/%d: validation accuracy %.2f%%, training loss %.4f, %.1f s\n", s, r, *runs, 100*rr.ValAccuracy, rr.TrainLoss, rr.Seconds)
		}}
	if err := cfg.Validate(); err != nil {
		return usageError("%v", err)
	}
	var res *sharding.Result
	return st.run(e, data, job, fmt.Sprintf("%s on %d machines, %s, %d epochs, %d runs of %s",
		job.App, job.Config.Machines, job.Config.Clock.Name(), job.Config.MaxPasses, *runs, strings.Join(cfg.Schemes, ", ")),
		func(ctx context.Context, d *app.Data) (any, error) {
			res, err = sharding.Run(ctx, cfg, d)
			if res != nil {
				res.Dataset = filepath.Base(data)
			}
			return res, err
		},
		func(dir string) error { return sharding.WriteDir(dir, res) }, "sharding.json",
		func(w io.Writer) error { return sharding.WriteTable(w, res.Table) }, sharding.Files())
}
