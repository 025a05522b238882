package main

import (
	"fmt"
	"time"

	"colo/app"
	"colo/app/sparse"
	"colo/datasets"
	"colo/graph"
	"colo/internal/textio"
	"colo/metrics"
	"colo/train"
	"colo/train/deploy"
	"colo/train/watch"
)

func runDemo(e *env, args []string) error {
	f := newFlags(e, "demo", "colo demo [flags]",
		"Trains multinomial logistic regression on the 20 Newsgroups sample that\n"+
			"ships inside colo (11,269 training and 7,505 test documents, 20 classes)\n"+
			"on a parameter server of 4 in-process machines joined by emulated\n"+
			"100 Mbit/s links, once with the data and parameters placed at random and\n"+
			"once placed by Parsa, and prints time, traffic and test accuracy side by\n"+
			"side. 'colo train' runs the same on any dataset.")
	k := f.Int("machines", 4, "number of machines K")
	f.Alias("k", "machines")
	seed := f.Uint64("seed", 1, "random seed")
	passes := f.Int("passes", 20, "passes over the data (full-batch rounds)")
	link := f.String("link-bandwidth", "100mbit", "emulated rate of each machine's link")
	compare := f.String("compare", "random,"+defaultAlgo(), "placements to compare")
	j := f.JSONOption("the runs (under \"results\")")
	svgOut := f.String("svg", "", "write the training loss against time to this SVG file, and a PNG beside it")
	var mf metrics.Flags
	mf.Register(f.FlagSet)
	var wf watchFlags
	wf.register(f.FlagSet)
	if _, err := f.parse(args, 0, 0); err != nil {
		return err
	}
	if err := checkOutputs(output{"--json", j.Path, false}, output{"--svg", *svgOut, false}); err != nil {
		return err
	}
	if err := wf.check(true); err != nil {
		return err
	}
	t := trainFlags{
		app: "lr", machines: *k, consistency: "bsp", bandwidth: *link, updater: "adagrad", l2: -1,
		epsilon: train.DefaultConfig().Epsilon, maxPasses: *passes, features: string(sparse.FeaturesLog1pL2), seed: *seed,
		place: "random", directions: train.DefaultConfig().Directions,
	}
	job, err := t.job(datasets.News20Train+" (embedded)", dataFlags{indexBase: -1, hashBits: graph.DefaultHashBits})
	if err != nil {
		return err
	}
	specs := textio.SplitList(*compare)
	if len(specs) == 0 {
		return usageError("--compare %q names no placement", *compare)
	}
	for _, s := range specs {
		if err := app.CheckPlacement("lr", s); err != nil {
			return usageError("--compare: %v", err)
		}
	}
	w, err := startWatchers(e, mf, wf) // a taken address fails before the data loads
	if err != nil {
		return err
	}
	runs, err := demoRuns(e, job, specs, *passes, *k, w)
	if err := w.End(err); err != nil {
		return err
	}
	return reportRuns(e, runs, "20 Newsgroups", j.Path, *svgOut)
}

// demoRuns loads the embedded sample and trains it once per placement
// of specs.
func demoRuns(e *env, job train.Job, specs []string, passes, k int, w *watch.Watchers) ([]*train.Result, error) {
	start := time.Now()
	opt := graph.DefaultLoadOptions()
	g, err := graph.Read(datasets.OpenNews20Train(), datasets.News20Train, opt)
	if err != nil {
		return nil, err
	}
	test, err := graph.Read(datasets.OpenNews20Test(), datasets.News20Test, opt)
	if err != nil {
		return nil, err
	}
	opened, err := app.OpenData(job, &app.Data{Graph: g, TestGraph: test})
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(e.out, "20 Newsgroups: %s (test: %d documents); loaded in %.2f s\n",
		g.Words(), test.NumSamples(), time.Since(start).Seconds())
	fmt.Fprintf(e.out, "softmax regression, AdaGrad, %d full-batch rounds, BSP, %d machines, %s\n\n",
		passes, k, job.Config.LinkWords())
	return trainRuns(e, job, opened, specs, deploy.InProcess{Watch: w.Watch}, w)
}
