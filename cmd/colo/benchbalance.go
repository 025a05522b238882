package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"colo/app"
	"colo/balance"
	"colo/bench/balancing"
	"colo/internal/textio"
)

func runBenchBalance(e *env, args []string) error {
	f := newFlags(e, "bench balance", "colo bench balance [flags] DATA --labels L -o DIR",
		"The experiment of seed 002: trains an mlp of three sizes (a hundredth of\n"+
			"MobileNet, ResNet-50 and AlexNet) on 12 co-located machines whose links\n"+
			"are drawn at random (--bandwidth-random, --bandwidth-change), for --rounds\n"+
			"rounds per scheme of --schemes, --runs times interleaved, and writes the\n"+
			"images per minute, the mean round time against Oracle's, the round times\n"+
			"(SRIT) and, with --slices, Aware's round time against the granularity:\n"+
			"DIR/balance.json, balance.csv, speed.svg, srit.svg, granularity.svg, and\n"+
			"each figure as PNG too.\n"+
			"Every training flag of colo train applies.")
	st := newStudy(f, map[string]string{"app": "mlp", "machines": "12", "batch": "384", "bandwidth-random": "200mbit", "updater": "adam", "lr": "0.001"}) // seed 002's Table 1: Adam 0.001, 32 samples a worker
	t := &st.t
	schemes := f.String("schemes", strings.Join(balance.Schemes(), ","), "comma-separated schemes: average, elastic, aware, oracle")
	sizes := f.String("sizes", "3", "how many of the three model sizes, smallest first, or a list of their names (mobilenet/100, resnet50/100, alexnet/100)")
	runs := f.Int("runs", 3, "trainings per size and scheme, interleaved; medians are reported")
	rounds := f.Int("rounds", 40, "rounds of each training")
	slices := f.String("slices", "", "granularities (keys) of Aware's sweep on the smallest model, such as 256,1024,4096,16384; the sweep adds a run of --slice auto, whose measured α marks Eq. 4")
	data, job, err := st.job(f, args)
	if err != nil {
		return err
	}
	chosen, err := pickSizes(*sizes)
	if err != nil {
		return err
	}
	cfg := balancing.Config{Job: job, Schemes: textio.SplitList(*schemes), Sizes: chosen, Runs: *runs, Rounds: *rounds,
		Balance: balance.DefaultConfig(), Progress: func(r balancing.RunResult) {
			fmt.Fprintf(e.errOut, "%s %s run %d: %.0f images/min, round %.3f s, %d keys moved\n", r.Size, r.Scheme, r.Run, r.ImagesPerMinute, r.ASRIT, r.KeysMoved)
		}}
	cfg.Balance.Every, cfg.Balance.Probe = t.bal.Every, t.bal.Probe
	if cfg.Balance.Slice, cfg.Balance.Auto, err = t.bal.SliceSetting(); err != nil {
		return usageError("%v", err)
	}
	if *slices != "" {
		xs, err := textio.ParseInts(*slices)
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
	var res *balancing.Result
	return st.run(e, data, job, fmt.Sprintf("%d machines, links from %s, %d rounds, %d runs of %s", job.Config.Machines, t.bal.Random, *rounds, *runs, strings.Join(cfg.Schemes, ", ")),
		func(ctx context.Context, d *app.Data) (any, error) {
			res, err = balancing.Run(ctx, cfg, d)
			if res != nil {
				res.Dataset = filepath.Base(data)
			}
			return res, err
		},
		func(dir string) error { return balancing.WriteDir(dir, res) }, "balance.json",
		func(w io.Writer) error { return balancing.WriteTable(w, res.Table) }, balancing.Files())
}

// pickSizes reads --sizes: a count of the sizes, smallest first, or a
// list of their names.
func pickSizes(v string) ([]balancing.Size, error) {
	sizes := balancing.Sizes()
	if n, err := strconv.Atoi(v); err == nil {
		if n < 1 || n > len(sizes) {
			return nil, usageError("--sizes %d: want 1 to %d", n, len(sizes))
		}
		return sizes[:n], nil
	}
	var out []balancing.Size
	var names []string
	for _, s := range sizes {
		names = append(names, s.Name)
	}
	for _, name := range textio.SplitList(v) {
		i := slices.IndexFunc(sizes, func(s balancing.Size) bool { return s.Name == name })
		if i < 0 {
			return nil, usageError("--sizes: no size %q: want a count or names among %s", name, strings.Join(names, ", "))
		}
		out = append(out, sizes[i])
	}
	return out, nil
}
