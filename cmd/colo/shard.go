package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"colo/dataset"
	"colo/internal/datasum"
	"colo/shard"
)

func runShard(e *env, args []string) error {
	f := newFlags(e, "shard", "colo shard [flags] DATA [--labels LABELS] --machines N --scheme S -o DIR",
		"Splits the labelled dense dataset DATA among N workers and writes DIR/shards.txt\n"+
			"(one line per sample, in file order: its worker 0..N-1, or * for a sample every\n"+
			"worker gets) and DIR/summary.json (shard sizes against their targets, per-shard\n"+
			"class counts, per-class coverage and mean distances, and the settings).\n"+
			"DATA is idx (MNIST; the labels come from the idx file given with --labels),\n"+
			"libsvm with class labels, or CSV with a label column; gzip, xz, zstd and bzip2\n"+
			"are undone. Schemes: random, roundrobin (sample i to worker i mod N),\n"+
			"stratified (round-robin inside each class), distaware (PCA + k-means, round-\n"+
			"robin inside each cluster, small clusters broadcast) and submodular (ratio-\n"+
			"constrained submodular partitioning of each class). See docs/shard.md.")
	o := shard.DefaultOptions()
	o.Workers = 0
	o.Scheme = ""
	labels := f.String("labels", "", "idx label file (required for idx data)")
	format := f.String("format", "", "data format: idx, libsvm or csv (detected from the content when empty)")
	labelCol := f.String("label-col", "", "csv: label column, a number from 0 (negative counts from the end) or a header name (empty: the header's column named label, class, target or y, required when the header has none; column 0 without a header)")
	header := f.String("header", "auto", "csv: whether the first record is a header: auto, yes or no")
	sep := f.String("sep", ",", "csv: field separator (one character; \\t for tab)")
	var memBudget string
	registerMemoryBudget(f, &memBudget)
	spec := f.String("spec", "", "read DATA as a table (Parquet, CSV, JSON lines) through feature columns, its training rows one-hot\n(`SPEC` as colo partition --spec takes it; docs/ctr.md)")
	f.IntVar(&o.Workers, "machines", 0, "number of machines N, one worker each (required)")
	f.Alias("k", "machines")
	f.Alias("workers", "machines")
	scheme := f.String("scheme", "", "sharding scheme: random, roundrobin, stratified, distaware or submodular (required)")
	seed := f.Uint64("seed", 1, "random seed")
	out := f.String("o", "", "output directory (required)")
	f.IntVar(&o.PCADims, "pca-dims", 0, "distaware: principal components to keep (0: use --pca-variance)")
	f.Float64Var(&o.PCAVariance, "pca-variance", o.PCAVariance, "distaware: keep the fewest components carrying this fraction of the variance")
	f.IntVar(&o.Clusters, "clusters", 0, "distaware: k-means clusters (0: twice the number of classes)")
	f.IntVar(&o.KMeansIters, "kmeans-iters", 0, "distaware: k-means iteration cap (0: 150)")
	ratios := f.String("ratios", "", "submodular: relative worker speeds r1,…,rN or r1:…:rN (default equal)")
	function := f.String("function", string(o.Function), "submodular: facility or graphcut")
	f.Float64Var(&o.Sigma, "sigma", 0, "submodular: Gaussian kernel width σ (0: median pairwise distance of each class)")
	greedy := f.String("greedy", string(o.Greedy), "submodular: lazy, stochastic or plain")
	f.Float64Var(&o.Epsilon, "epsilon", o.Epsilon, "submodular: ε of stochastic greedy; each step samples (m/C)·ln(1/ε) candidates")
	grow := f.String("grow", string(o.Grow), "submodular: block to grow next: min-f (smallest f, as in the paper) or proportional\n(least full relative to its ratio)")
	f.IntVar(&o.MaxBlock, "max-block", o.MaxBlock, "submodular: largest set partitioned at once; larger classes are split at random\n(the similarity matrix takes 4·max-block² bytes per thread)")
	f.IntVar(&o.Threads, "threads", 0, "goroutines (0: all cores); the result does not depend on it")
	coverage := f.Int("coverage-sample", shard.DefaultCoverageSample, "summary: reference samples per class for coverage (negative: skip coverage)")
	j := f.JSONOption("the summary")
	pos, err := f.parse(args, 1, 1)
	if err != nil {
		return err
	}
	if *out == "" {
		return usageError("-o DIR is required")
	}
	if o.Workers < 1 {
		return usageError("--machines %d: want the number of machines, at least 1", o.Workers)
	}
	if err := checkOutputs(output{"-o", *out, true}, output{"--json", j.Path, false}); err != nil {
		return err
	}
	if err := shard.CheckDir(*out); err != nil { // the files in it too
		return fmt.Errorf("-o: %w", err)
	}
	if *scheme == "" {
		return usageError("--scheme is required: random, roundrobin, stratified, distaware or submodular")
	}
	o.Scheme = shard.Scheme(*scheme)
	o.Function, o.Greedy, o.Grow = shard.Function(*function), shard.Greedy(*greedy), shard.Grow(*grow)
	if *ratios != "" {
		if o.Ratios, err = shard.ParseRatios(*ratios); err != nil {
			return usageError("--ratios: %v", err)
		}
	}
	if err := o.Validate(); err != nil {
		return usageError("%v", err)
	}
	lopt, err := shardLoadOptions(*format, *labels, *labelCol, *header, *sep)
	if err != nil {
		return err
	}
	if lopt.Memory, err = parseMemoryBudget(memBudget); err != nil {
		return err
	}

	start := time.Now()
	var d *dataset.Dataset
	if *spec != "" {
		// A table through feature columns: its training rows, one-hot.
		df := dataFlags{spec: *spec, memory: memBudget}
		g, _, err := df.load(pos[0])
		if err != nil {
			return err
		}
		d, err = dataset.FromGraph(g, lopt.Memory)
	} else {
		d, err = dataset.Load(pos[0], lopt)
	}
	if err != nil {
		return err
	}
	loadTime := time.Since(start)
	if d.Len() == 0 {
		return fmt.Errorf("%s: no samples", pos[0])
	}
	rng := rand.New(rand.NewPCG(*seed, 0))
	o.Progress = shardProgress(e)
	start = time.Now()
	res, err := shard.Shard(d, o, rng)
	if e.isTerminal {
		fmt.Fprintf(e.errOut, "\r%60s\r", "")
	}
	if err != nil {
		return fmt.Errorf("%s: %w", pos[0], err)
	}
	took := time.Since(start)
	start = time.Now()
	sum, err := shard.Summarize(d, res, shard.SummaryOptions{
		Ratios: o.Ratios, Sigma: o.Sigma, CoverageSample: *coverage, Threads: o.Threads,
	}, rng)
	if err != nil {
		return err
	}
	rep := &shard.Report{
		Dataset: pos[0], Labels: *labels, Seed: *seed,
		LoadSeconds: loadTime.Seconds(), Seconds: took.Seconds(), SummarySeconds: time.Since(start).Seconds(),
		Summary: sum,
	}
	if rep.DataChecksum, err = datasum.Files(pos[0], *labels); err != nil {
		return err
	}
	if o.Scheme == shard.SchemeSubmodular {
		rep.Function, rep.Greedy, rep.Grow, rep.Sigma = string(o.Function), string(o.Greedy), string(o.Grow), o.Sigma
	}
	stamped, err := e.stamp(rep)
	if err != nil {
		return err
	}
	if err := shard.WriteDir(*out, res.Assign, json.RawMessage(stamped)); err != nil {
		return err
	}
	if j.Path != "" {
		if err := writeJSON(e, j.Path, rep); err != nil {
			return err
		}
	}
	fmt.Fprintf(e.out, "%s: %d samples × %d features, %d classes; loaded in %.2f s\n", pos[0], d.Len(), d.Dim, d.Classes, loadTime.Seconds())
	fmt.Fprintf(e.out, "%s on %d workers (seed %d) in %.2f s, summary in %.2f s, written to %s\n\n",
		o.Describe(), o.Workers, *seed, took.Seconds(), rep.SummarySeconds, *out)
	return sum.WriteTable(e.out)
}

// shardLoadOptions turns the data flags into loader options.
func shardLoadOptions(format, labels, labelCol, header, sep string) (dataset.LoadOptions, error) {
	lopt := dataset.DefaultLoadOptions()
	lopt.Format, lopt.Labels = dataset.Format(format), labels
	if err := lopt.SetCSV(labelCol, header, sep); err != nil {
		return lopt, usageError("--%v", err)
	}
	if err := lopt.Validate(); err != nil {
		return lopt, usageError("%v", err)
	}
	return lopt, nil
}

// shardProgress reports the sharder's stages on a terminal.
func shardProgress(e *env) func(string, int, int) {
	if !e.isTerminal {
		return nil
	}
	var mu sync.Mutex
	start := time.Now()
	return func(stage string, done, total int) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(e.errOut, "\r%-12s %d/%d %.1fs   ", stage, done, total, time.Since(start).Seconds())
	}
}
