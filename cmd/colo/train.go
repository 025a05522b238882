package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"colo/app"
	"colo/app/mf"
	"colo/app/sparse"
	"colo/partition"
	"colo/placement"
	"colo/ps/clock"
	"colo/train"
	"colo/transport"
)

// trainFlags are the settings of colo train (and of the demo).
type trainFlags struct {
	app         string
	test        string
	machines    int
	place       string
	compare     string
	consistency string
	bandwidth   string
	matrix      string
	updater     string
	lr, l1, l2  float64
	batch       int
	epsilon     float64
	maxPasses   int
	features    string
	seed        uint64
	jsonOut     string
	svgOut      string
	mf          mf.Config
	jobFile     string
}

func (t *trainFlags) register(f *cmdFlags) {
	def := train.DefaultConfig()
	f.StringVar(&t.app, "app", "lr", "application: lr (logistic regression, binary or multinomial) or mf (matrix factorisation)")
	f.StringVar(&t.test, "test", "", "test file (lr: libsvm with the training set's feature ids; mf: ratings); without it lr scores the training set and mf holds out entries")
	f.IntVar(&t.machines, "machines", def.Machines, "number of machines K, each a server and a worker")
	f.StringVar(&t.place, "placement", "parsa", "placement: a partitioner ("+strings.Join(partition.Names(), ", ")+", optionally +refine) or a directory written by colo partition")
	f.StringVar(&t.compare, "compare", "", "comma-separated placements to train one after another with the same settings, side by side (overrides --placement)")
	f.StringVar(&t.consistency, "consistency", "bsp", "consistency model: bsp, async or ssp:τ (bounded delay τ ≥ 1)")
	f.StringVar(&t.bandwidth, "link-bandwidth", "", "emulated rate of each machine's network link, such as 100mbit or 1gbit (empty: unlimited)")
	f.StringVar(&t.matrix, "bandwidth-matrix", "", "file of K lines of K machine-to-machine rates (heterogeneous links)")
	f.StringVar(&t.updater, "updater", def.Rule.Name, "servers' update rule: sgd, adagrad or ftrl")
	f.Float64Var(&t.lr, "lr", 0, "learning rate (0: the application's default: lr 0.5, mf 0.1)")
	f.Float64Var(&t.l1, "l1", 0, "L1 regularisation weight (applied by the servers; use with ftrl)")
	f.Float64Var(&t.l2, "l2", -1, "L2 regularisation weight, applied by the servers to the keys a round pushes (-1: the application's default: lr 0, mf 0.05)")
	f.IntVar(&t.batch, "batch", 0, "samples per round over all machines (0: full-batch rounds)")
	f.Float64Var(&t.epsilon, "epsilon", def.Epsilon, "stop when the training loss changes by less than this fraction between passes")
	f.IntVar(&t.maxPasses, "max-passes", def.MaxPasses, "stop after this many passes over the data")
	f.StringVar(&t.features, "features", string(sparse.FeaturesAuto), "lr: feature values: raw, l2 (unit-norm samples), log1p-l2, or auto (raw for binary data, log1p-l2 otherwise)")
	f.Uint64Var(&t.seed, "seed", 1, "random seed of placement, batches and initial values")
	f.StringVar(&t.jsonOut, "json", "", "write the summary as JSON to this file (- for standard output)")
	f.StringVar(&t.svgOut, "svg", "", "write a plot of the training loss against time to this SVG file")
	t.mf = mf.DefaultConfig()
	f.IntVar(&t.mf.Rank, "rank", t.mf.Rank, "mf: dimension of the factors")
	f.Float64Var(&t.mf.HoldOut, "holdout", t.mf.HoldOut, "mf: fraction of the entries held out for the test RMSE when there is no --test")
}

// job turns the flags into a training job on the file data, loaded with
// the options of df: the application's defaults (app.DefaultJob), then
// the flags, where "0" or "-1" means the application's default.
func (t *trainFlags) job(data string, df dataFlags) (train.Job, error) {
	job, err := app.DefaultJob(t.app)
	if err != nil {
		return job, usageError("--%v", err)
	}
	lopt, err := df.options()
	if err != nil {
		return job, err
	}
	job.Data = train.Data{Train: data, Test: t.test, Load: train.LoadOptionsOf(lopt)}
	job.Placement = t.place
	cfg := &job.Config
	if t.machines < 1 {
		return job, usageError("--machines %d: want at least 1", t.machines)
	}
	cfg.Machines = t.machines
	if cfg.Clock, err = clock.Parse(t.consistency); err != nil {
		return job, usageError("--%v", err)
	}
	cfg.Rule.Name, cfg.Rule.L1 = t.updater, t.l1
	if t.l2 >= 0 {
		cfg.Rule.L2 = t.l2
	}
	if t.lr > 0 {
		cfg.Rule.LR = t.lr
	}
	if t.batch < 0 {
		return job, usageError("--batch %d: want 0 (full batch) or a positive number of samples", t.batch)
	}
	cfg.Batch, cfg.Epsilon, cfg.MaxPasses, cfg.Seed = t.batch, t.epsilon, t.maxPasses, t.seed
	if cfg.MaxPasses < 1 {
		return job, usageError("--max-passes %d: want at least 1", cfg.MaxPasses)
	}
	if !(cfg.Epsilon >= 0) {
		return job, usageError("--epsilon %v: want ≥ 0", cfg.Epsilon)
	}
	if err := t.links(cfg); err != nil {
		return job, err
	}
	if err := appOptions(&job, map[string]any{"features": t.features, "rank": t.mf.Rank, "holdout": t.mf.HoldOut}); err != nil {
		return job, err
	}
	if err := job.Validate(); err != nil {
		return job, usageError("%v", err)
	}
	return job, nil
}

// links sets the emulated links of --link-bandwidth and
// --bandwidth-matrix.
func (t *trainFlags) links(cfg *train.Config) error {
	if t.bandwidth != "" && t.matrix != "" {
		return usageError("--link-bandwidth and --bandwidth-matrix exclude each other")
	}
	if t.bandwidth != "" {
		r, err := transport.ParseRate(t.bandwidth)
		if err != nil {
			return usageError("--link-bandwidth: %v", err)
		}
		cfg.LinkBandwidth = r
	}
	if t.matrix != "" {
		b, err := transport.ReadBandwidthFile(t.matrix)
		if err != nil {
			return err
		}
		if b.K != t.machines {
			return usageError("--bandwidth-matrix %s is for %d machines, --machines is %d", t.matrix, b.K, t.machines)
		}
		cfg.Bandwidth = b
	}
	return nil
}

// appOptions sets in the job's options every value of flags whose name
// the application's options have: the command line has one flag per
// option of any application, and each application takes its own.
func appOptions(job *train.Job, flags map[string]any) error {
	opts := map[string]any{}
	if len(job.Options) > 0 {
		if err := json.Unmarshal(job.Options, &opts); err != nil {
			return err
		}
	}
	for name, v := range flags {
		if _, ok := opts[name]; ok {
			opts[name] = v
		}
	}
	return job.SetOptions(opts)
}

func runTrain(e *env, args []string) error {
	f := newFlags(e, "train", "colo train [flags] DATA",
		"Trains a model on a parameter server of K machines with the samples and\n"+
			"parameters placed by --placement: places the data (timed), starts the\n"+
			"cluster, trains until the training loss changes by less than --epsilon\n"+
			"between passes, scores the test set and prints time, traffic and\n"+
			"accuracy. --compare random,parsa trains once per placement with the same\n"+
			"settings and prints them side by side.\n\n"+
			"The cluster runs in this process by default, over emulated links where\n"+
			"--link-bandwidth is each machine's network interface, shared by its\n"+
			"server and worker. With --processes the scheduler and the K machines are\n"+
			"processes of this binary on loopback (colo node), and the rates limit\n"+
			"each TCP link to another machine separately. With --netns (root and\n"+
			"iproute2) each machine is a process in its own network namespace, its\n"+
			"link shaped by tc at --link-bandwidth. All three run the same per-worker\n"+
			"code: a bsp job gives the same passes and test measures in each.\n\n"+
			"Example: colo train data.svm --test data.t --machines 8 --link-bandwidth 100mbit --compare random,parsa")
	var t trainFlags
	t.register(f)
	var df dataFlags
	df.register(f)
	var dep deployment
	dep.register(f)
	pos, err := f.parse(args, 1, 1)
	if err != nil {
		return err
	}
	job, err := t.job(pos[0], df)
	if err != nil {
		return err
	}
	specs, err := t.placements()
	if err != nil {
		return err
	}
	if err := dep.check(job.Config); err != nil {
		return err
	}
	opened, err := app.Open(job)
	if err != nil {
		return err
	}
	d := dep.deployer(opened.Data.Train)
	fmt.Fprintf(e.out, "%s: %s; %s on %d machines, %s, %s\n", pos[0], describe(opened.Data.Train), job.App, job.Config.Machines, t.consistency, linkWords(job.Config))
	runs, err := trainRuns(e, job, opened, specs, d)
	if err != nil {
		return err
	}
	return reportRuns(e, runs, t.jsonOut, t.svgOut)
}

// placements returns the placements to train on: --compare's, or
// --placement; each a partitioner or a directory, checked before anything
// is loaded.
func (t *trainFlags) placements() ([]string, error) {
	specs := []string{t.place}
	if t.compare != "" {
		specs = splitList(t.compare)
	}
	if len(specs) == 0 {
		return nil, usageError("--compare %q names no placement", t.compare)
	}
	for i, spec := range specs {
		specs[i] = strings.TrimSpace(spec)
		if st, err := os.Stat(specs[i]); err == nil && st.IsDir() {
			continue
		}
		if _, err := partition.Lookup(specs[i]); err != nil {
			return nil, usageError("--placement: %v (or a directory written by colo partition)", err)
		}
	}
	return specs, nil
}

// linkWords describes the emulated network.
func linkWords(cfg train.Config) string {
	switch {
	case cfg.Bandwidth != nil:
		return "links from a bandwidth matrix"
	case cfg.LinkBandwidth > 0:
		return rateWords(cfg.LinkBandwidth) + " links"
	}
	return "unlimited links"
}

// trainRuns trains the opened job once per placement on d.
func trainRuns(e *env, job train.Job, opened *app.Opened, specs []string, d train.Deployer) ([]*train.Result, error) {
	g := opened.Data.Train
	var runs []*train.Result
	for _, spec := range specs {
		job.Placement = spec
		p, secs, err := app.Place(job, g)
		if err != nil {
			return nil, err
		}
		cost, err := placement.Evaluate(g, p, 0)
		if err != nil {
			return nil, err
		}
		bar := newProgressBar(e, "train "+spec)
		j := job
		j.Config.Progress = func(p train.Pass) { bar.update(int64(p.Pass), int64(job.Config.MaxPasses)) }
		res, err := train.Run(context.Background(), j, opened.App, p, d)
		bar.finish()
		if err != nil {
			return nil, err
		}
		res.Placed(secs, cost)
		fmt.Fprintf(e.out, "%-14s partition %.2f s, trained %d passes in %.2f s, loss %.4f%s\n",
			spec, res.PartitionSeconds, res.Passes, res.TrainSeconds, res.FinalTrainLoss, evalWords(res.Eval))
		runs = append(runs, res)
	}
	return runs, nil
}

// evalWords is the test measure of a run for a line of output.
func evalWords(ev train.Eval) string {
	switch {
	case ev.Accuracy != nil:
		return fmt.Sprintf(", %s accuracy %.2f%%", ev.On, 100**ev.Accuracy)
	case ev.RMSE != nil:
		return fmt.Sprintf(", %s RMSE %.4f", ev.On, *ev.RMSE)
	}
	return ""
}

// reportRuns prints the side-by-side table and writes the JSON and SVG.
func reportRuns(e *env, runs []*train.Result, jsonOut, svgOut string) error {
	fmt.Fprintln(e.out)
	tw := tabwriter.NewWriter(e.out, 0, 0, 2, ' ', tabwriter.AlignRight)
	row := func(name string, f func(r *train.Result) string) {
		fmt.Fprintf(tw, "%s\t", name)
		for _, r := range runs {
			fmt.Fprintf(tw, "%s\t", f(r))
		}
		fmt.Fprintln(tw)
	}
	row("placement", func(r *train.Result) string { return r.Placement })
	row("T_max (cost model)", func(r *train.Result) string { return commas(r.TMax) })
	row("T_sum (cost model)", func(r *train.Result) string { return commas(r.TSum) })
	row("partition s", func(r *train.Result) string { return fmt.Sprintf("%.2f", r.PartitionSeconds) })
	row("train s", func(r *train.Result) string { return fmt.Sprintf("%.2f", r.TrainSeconds) })
	row("total s", func(r *train.Result) string { return fmt.Sprintf("%.2f", r.TotalSeconds) })
	row("passes", func(r *train.Result) string { return fmt.Sprint(r.Passes) })
	row("inter-machine MB", func(r *train.Result) string { return fmt.Sprintf("%.1f", float64(r.BytesInter)/1e6) })
	row("inner-machine MB", func(r *train.Result) string { return fmt.Sprintf("%.1f", float64(r.BytesInner)/1e6) })
	row("final train loss", func(r *train.Result) string { return fmt.Sprintf("%.4f", r.FinalTrainLoss) })
	if runs[0].Accuracy != nil {
		row(runs[0].On+" accuracy %", func(r *train.Result) string { return fmt.Sprintf("%.2f", 100**r.Accuracy) })
		row(runs[0].On+" AUC", func(r *train.Result) string { return fmt.Sprintf("%.4f", *r.AUC) })
	}
	if runs[0].RMSE != nil {
		row(runs[0].On+" RMSE", func(r *train.Result) string { return fmt.Sprintf("%.4f", *r.RMSE) })
	}
	if len(runs) > 1 {
		base := runs[0]
		row("speed-up (total)", func(r *train.Result) string { return fmt.Sprintf("%.2fx", base.TotalSeconds/r.TotalSeconds) })
		row("inter traffic vs first", func(r *train.Result) string {
			return fmt.Sprintf("%.0f%%", 100*float64(r.BytesInter)/float64(max(base.BytesInter, 1)))
		})
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if jsonOut != "" {
		var v any = runs
		if len(runs) == 1 {
			v = runs[0]
		}
		err := writeOutput(e, jsonOut, func(w io.Writer) error {
			enc := json.NewEncoder(w)
			enc.SetIndent("", "  ")
			return enc.Encode(v)
		})
		if err != nil {
			return err
		}
	}
	if svgOut != "" {
		if err := writeOutput(e, svgOut, func(w io.Writer) error { return train.PlotLoss(w, runs) }); err != nil {
			return err
		}
	}
	return nil
}

// rateWords writes a rate in bytes per second as bits per second for
// people: "100 Mbit/s".
func rateWords(bytesPerSec float64) string {
	bits := 8 * bytesPerSec
	for _, u := range []struct {
		scale float64
		name  string
	}{{1e9, "Gbit/s"}, {1e6, "Mbit/s"}, {1e3, "kbit/s"}} {
		if bits >= u.scale {
			return fmt.Sprintf("%.4g %s", bits/u.scale, u.name)
		}
	}
	return fmt.Sprintf("%.4g bit/s", bits)
}
