package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strings"

	"colo/bench/rcd"
	"colo/gossip"
	"colo/gossip/job"
	"colo/internal/tempdir"
	"colo/internal/textio"
	"colo/launch"
	"colo/shard"
	"colo/train"
)

// trainMode returns colo train's --mode: ps (the parameter server, the
// default) or decentralised (package gossip). The flag package parses
// args with every flag of both modes known and their values set aside,
// so that --mode is found wherever it stands; each mode then parses args
// with its own flags, where --mode is one of them (modeFlag).
func trainMode(args []string) (string, error) {
	probe := newFlags(&env{out: io.Discard, errOut: io.Discard}, "train", "", "")
	mode := probe.String("mode", "ps", "")
	setAside := func(g *cmdFlags) {
		g.VisitAll(func(fl *flag.Flag) {
			if probe.Lookup(fl.Name) == nil {
				b, ok := fl.Value.(interface{ IsBoolFlag() bool })
				probe.Var(anyValue(ok && b.IsBoolFlag()), fl.Name, "")
			}
		})
	}
	ps, dc := newFlags(probe.e, "", "", ""), newFlags(probe.e, "", "", "")
	var t, t2 trainFlags
	var df, df2 dataFlags
	var dep deployment
	var wf watchFlags
	var d decentralFlags
	t.register(ps)
	df.register(ps)
	dep.register(ps)
	wf.register(ps.FlagSet)
	t2.register(dc)
	df2.register(dc)
	d.register(dc, 1, "")
	setAside(ps)
	setAside(dc)
	// An error (-h, a bad flag) ends the parse where it stands: the mode
	// read so far takes the arguments, and its own parse says what is
	// wrong.
	probe.parse(args, 0, -1)
	switch *mode {
	case "ps":
		return "ps", nil
	case "decentralised", "decentralized":
		return "decentralised", nil
	}
	return "", usageError("--mode %q: want ps (parameter server) or decentralised", *mode)
}

// anyValue is a flag value that takes anything and keeps nothing; true
// for a flag that needs no value.
type anyValue bool

func (anyValue) String() string     { return "" }
func (anyValue) Set(string) error   { return nil }
func (v anyValue) IsBoolFlag() bool { return bool(v) }

// dropServerFlags removes from colo train --mode decentralised the flags
// of colo train that it does not take: those of the servers, of the
// checkpoints, of the sparse applications and of --compare. -h lists the
// others only, and the command line refuses these, saying why.
func dropServerFlags(f *cmdFlags) {
	f.Drop("a flag of the parameter server (--mode ps): decentralised training has no servers",
		"servers", "updater", "consistency", "bandwidth-matrix", "bandwidth-random", "bandwidth-change",
		"balance", "balance-every", "slice", "probe", "directions", "overlap", "pull-ahead", "async-step", "eval-every")
	f.Drop("--mode ps only: decentralised training keeps no checkpoints",
		"checkpoint", "checkpoint-every", "checkpoint-wait", "checkpoint-durable", "checkpoint-incremental", "resume", "resume-override")
	f.Drop("a flag of --app lr, mf or embed: decentralised training runs mlp or cnn",
		"rank", "dim", "negatives", "uniform-negatives", "uniform-pool", "eval-negatives", "holdout", "features", "drop-self-loops")
	f.Drop("use colo bench rcd to compare decentralised runs", "compare")
	f.Drop("--mode ps only: colo train --mode decentralised --processes runs its job", "write-job")
}

// refuseDecentralFlags makes colo train --mode ps refuse the flags of
// --mode decentralised, saying whose they are.
func refuseDecentralFlags(e *env, f *cmdFlags) {
	g := newFlags(e, "", "", "")
	var t trainFlags
	t.register(g)
	var df dataFlags
	df.register(g)
	var d decentralFlags
	d.register(g, 1, "")
	g.VisitAll(func(fl *flag.Flag) {
		if f.Lookup(fl.Name) == nil {
			f.Refuse("a flag of --mode decentralised (colo train --mode decentralised -h)", fl.Name)
		}
	})
}

// refusePSFlags makes colo train --mode decentralised refuse the other
// flags of --mode ps (--dashboard, --metrics, --trace, …), saying whose
// they are.
func refusePSFlags(e *env, f *cmdFlags) {
	g := newFlags(e, "", "", "")
	var t trainFlags
	t.register(g)
	var df dataFlags
	df.register(g)
	var dep deployment
	dep.register(g)
	var wf watchFlags
	wf.register(g.FlagSet)
	g.VisitAll(func(fl *flag.Flag) {
		if _, done := f.Refused[fl.Name]; f.Lookup(fl.Name) == nil && !done {
			f.Refuse("a flag of the parameter server (--mode ps)", fl.Name)
		}
	})
}

// modeFlag lists --mode in colo train's flags, for -h and completion;
// trainMode has read it before they are parsed.
func modeFlag(f *cmdFlags, mode string) {
	f.String("mode", mode, "ps (a parameter server: servers hold the model, the default) or decentralised (no servers: the workers average with their neighbours); colo train --mode decentralised -h lists its flags")
}

// decentralFlags are the flags of decentralised training.
type decentralFlags struct {
	topology, weights string
	localSteps        int
	matcha            bool
	budget            float64
	speeds            string
	function          string
	order             string
	transport         string
	target            float64
	processes, netns  bool
	batchWeighted     bool
	lrDecay           string // --lr-decay, taken from the model's options by takeSchedule
}

// takeSchedule moves --lr-decay from the dense model's options, where
// colo train --mode ps applies it, to the decentralised workers, which
// apply it themselves (gossip.Config.LRDecay, which also knows step
// decay). Call it before trainFlags.job.
func (d *decentralFlags) takeSchedule(t *trainFlags) {
	d.lrDecay, t.workersDecay = t.lrDecay, true
}

func (d *decentralFlags) register(f *cmdFlags, localSteps int, speeds string) {
	def := gossip.DefaultConfig()
	// colo train's flags whose defaults differ without servers.
	f.Lookup("app").Value.Set("mlp")
	f.Lookup("app").DefValue = "mlp"
	f.Lookup("batch").Usage = "samples of one iteration over all workers; each worker cuts its shard into n/batch batches (-1: 64 per worker)"
	f.Lookup("lr").Usage = fmt.Sprintf("the workers' SGD learning rate γ (0: %g)", def.LR)
	f.StringVar(&d.topology, "topology", def.Topology, "decentralised: communication graph: "+strings.Join(gossip.Topologies(), ", ")+" (Metropolis–Hastings weights)")
	f.StringVar(&d.weights, "weights", "", "decentralised: file of the N×N doubly stochastic weight matrix W (one row per line; overrides --topology)")
	f.IntVar(&d.localSteps, "local-steps", localSteps, "decentralised: F, the local SGD steps between averagings")
	f.BoolVar(&d.matcha, "matcha", false, "decentralised: MATCHA, the topology's matchings activated at random within --budget")
	f.Float64Var(&d.budget, "budget", def.Budget, "decentralised: MATCHA's communication budget c_b in (0, 1]")
	f.StringVar(&d.speeds, "worker-speeds", speeds, "decentralised: relative compute speeds of the workers, such as 1,2,4,8 (empty: equal); a worker of speed r takes r_max/r times its measured compute time per step; submodular shards follow them")
	f.StringVar(&d.function, "submodular", string(shard.FacilityLocation), "decentralised: the objective of --placement submodular: facility or graphcut")
	f.StringVar(&d.order, "order", string(def.Order), "decentralised: atc (local step, then average) or cta (average, then the step of the gradient at the model before averaging: Alg. 2 as written)")
	f.StringVar(&d.transport, "transport", "mem", "decentralised: mem (in-memory network, --link-bandwidth per worker's interface) or tcp (TCP on loopback in this process, the same interfaces over TCP)")
	f.BoolVar(&d.netns, "netns", false, "decentralised: run each worker as a process in a network namespace of its own, its link shaped by tc at --link-bandwidth (without it, or at 0 or unlimited, the links are not shaped); needs root and iproute2")
	f.BoolVar(&d.processes, "processes", false, fmt.Sprintf("decentralised: run each worker as a process of this binary on loopback, over TCP (--link-bandwidth per worker's interface); --machines at most %d, the processes of one host (launch.MaxProcesses)", launch.MaxProcesses))
	f.BoolVar(&d.batchWeighted, "batch-weighted", false, "decentralised: scale each worker's step by its batch over the mean batch (γ·N·B_i/batch), so the average weighs every sample equally (with proportional batches; Alg. 2 takes one γ)")
	f.Float64Var(&d.target, "loss-target", math.Exp(-1), "decentralised: training loss whose first crossing is timed (seed 003: log loss −1)")
}

// config fills a gossip configuration from the flags and the job.
func (d *decentralFlags) config(t *trainFlags, j train.Job) (gossip.Config, job.Net, error) {
	c := gossip.DefaultConfig()
	var nt job.Net
	if j.App != "mlp" && j.App != "cnn" {
		return c, nt, usageError("--app %s: decentralised training takes a dense model: mlp or cnn", j.App)
	}
	// The parameter server's flags (--servers, --consistency, --updater,
	// --bandwidth-matrix, …) are not among its flags (dropServerFlags).
	c.Workers, c.Topology, c.LocalSteps, c.Matcha, c.Budget = j.Config.Machines, d.topology, d.localSteps, d.matcha, d.budget
	c.Order, c.Seed, c.Epochs, c.BatchWeighted = gossip.Order(d.order), j.Config.Seed, j.Config.MaxPasses, d.batchWeighted
	c.LRDecay = d.lrDecay
	c.Batch = 64 * c.Workers
	if t.batch != -1 { // only -1 is the default; gossip.Config.Validate refuses 0 and below
		c.Batch = t.batch
	}
	if t.lr != 0 { // 0: the default; a negative one is Validate's to refuse
		c.LR = t.lr
	}
	if d.speeds != "" {
		s, err := gossip.ParseSpeeds(d.speeds)
		if err != nil {
			return c, nt, usageError("--%v", err)
		}
		c.Speeds = s
	}
	if d.weights != "" {
		w, err := gossip.ReadWeightsFile(d.weights)
		if err != nil {
			return c, nt, usageError("--%v", err)
		}
		c.Weights, c.WeightsFile = w, d.weights
	}
	if err := c.Validate(); err != nil {
		return c, nt, usageError("--%v", err)
	}
	if d.function != string(shard.FacilityLocation) && d.function != string(shard.GraphCut) {
		return c, nt, usageError("--submodular %q: want facility or graphcut", d.function)
	}
	switch d.transport {
	case "mem":
		nt.TCP = d.processes || d.netns
	case "tcp":
		nt.TCP = true
	default:
		return c, nt, usageError("--transport %q: want mem or tcp", d.transport)
	}
	if err := launch.CheckProcesses(fmt.Sprintf("--machines %d", c.Workers), c.Workers); (d.processes || d.netns) && err != nil {
		return c, nt, usageError("%v", err)
	}
	if !(d.target >= 0) || math.IsInf(d.target, 0) {
		return c, nt, usageError("--loss-target %v: want a training loss > 0", d.target)
	}
	nt.Link = j.Config.LinkBandwidth
	return c, nt, nil
}

// runDecentral is colo train --mode decentralised.
func runDecentral(e *env, args []string) error {
	f := newFlags(e, "train --mode decentralised", "colo train --mode decentralised [flags] DATA --labels L [--test T --test-labels TL]",
		"Trains a dense model (--app mlp or cnn) without servers (seed 003, Alg. 2):\n"+
			"each of the N workers (--machines) holds the whole model, takes --local-steps\n"+
			"F SGD steps on its shard, then averages with its neighbours over the\n"+
			"in-memory network (or TCP on loopback) with the weights of --topology or\n"+
			"--weights, or MATCHA's random matchings (--matcha --budget). The output\n"+
			"model is the workers' average. --worker-speeds emulates unequal workers\n"+
			"by stretching each step's measured compute time by r_max/r; with\n"+
			"--placement submodular the shards (and so the batches) follow the speeds.\n\n"+
			"Example: colo train --mode decentralised train-images-idx3-ubyte.gz --labels train-labels-idx1-ubyte.gz --app mlp --machines 4 --worker-speeds 1,2,4,8 --placement submodular --local-steps 2")
	modeFlag(f, "decentralised")
	var t trainFlags
	t.register(f)
	var df dataFlags
	df.register(f)
	var d decentralFlags
	d.register(f, 1, "")
	dropServerFlags(f)
	refusePSFlags(e, f)
	f.Sections = trainSections
	pos, err := f.parse(args, 1, 1)
	if err != nil {
		return err
	}
	if err := checkOutputs(output{"--json", t.json.Path, false}, output{"--svg", t.svgOut, false}); err != nil {
		return err
	}
	d.takeSchedule(&t)
	j, err := t.job(pos[0], df)
	if err != nil {
		return err
	}
	cfg, nt, err := d.config(&t, j)
	if err != nil {
		return err
	}
	if d.target == 0 {
		return usageError("--loss-target 0: want a training loss > 0")
	}
	spec := job.ShardSpec{Scheme: j.Placement, Function: shard.Function(d.function)}
	data, err := job.Load(j)
	if err != nil {
		return err
	}
	shards, secs, err := data.Shards(spec, cfg, cfg.Seed)
	if err != nil {
		return err
	}
	alg := "d-psgd"
	if cfg.Matcha {
		alg = "matcha"
	}
	fmt.Fprintf(e.out, "%s: %d samples; %s, %s on %d workers (%s, F=%d), %s shards in %.2f s\n", pos[0], data.Samples.Len(),
		j.App, alg, cfg.Workers, cfg.TopologyWords(), cfg.LocalSteps, spec.Name(), secs)
	ph := startPhase(e, "train "+alg, int64(cfg.Epochs))
	cfg.Progress = func(ep int) { ph.Step("epoch", int64(ep), int64(cfg.Epochs), "") }
	ctx, stop := tempdir.Stop(context.Background())
	defer stop()
	var rep *job.Report
	if d.processes || d.netns {
		where := "on loopback"
		if d.netns {
			where = "in network namespaces"
		}
		fmt.Fprintf(e.errOut, "starting %d worker processes %s\n", cfg.Workers, where)
		rep, err = data.TrainProcesses(ctx, j, cfg, shards, job.Procs{Link: nt.Link, Netns: d.netns})
	} else {
		rep, err = data.Train(ctx, cfg, shards, nt)
	}
	if err != nil {
		ph.Abort()
		return err
	}
	ph.Finish(fmt.Sprintf("loss %.4f", rep.FinalLoss()))
	rep.Shard, rep.ShardSeconds = spec.Name(), secs
	fmt.Fprintf(e.out, "trained %d epochs in %.2f s, final training loss %.4f%s, %.1f MB sent\n", cfg.Epochs, rep.Seconds, rep.FinalLoss(), rep.Eval.Words(), float64(rep.Bytes)/1e6)
	if s, ok := rep.SecondsToTarget(d.target); ok {
		fmt.Fprintf(e.out, "training loss reached %.4f after %.2f s\n", d.target, s)
	} else {
		fmt.Fprintf(e.out, "training loss never reached %.4f\n", d.target)
	}
	for _, w := range rep.Workers {
		fmt.Fprintf(e.out, "  worker %d: speed %g, %d samples, batch %.1f, compute %.2f s, emulated slowness %.2f s, communication %.2f s\n",
			w.Rank, w.Speed, w.Samples, w.Batch, w.ComputeSeconds, w.SleepSeconds, w.CommSeconds)
	}
	if t.json.Path != "" {
		if err := writeJSON(e, t.json.Path, rep); err != nil {
			return err
		}
	}
	if t.svgOut != "" {
		s := []rcd.Series{{Name: alg + "/" + spec.Name(), Curve: rep.Curve}}
		title := fmt.Sprintf("%s: %s, %s on %d workers (%s, F=%d), %s shards", filepath.Base(pos[0]), j.App, alg, cfg.Workers, cfg.TopologyWords(), cfg.LocalSteps, spec.Name())
		if err := writeFigure(e, t.svgOut, rcd.Figure(title, s, false, d.target)); err != nil {
			return err
		}
	}
	return nil
}

// runBenchRCD is colo bench rcd.
func runBenchRCD(e *env, args []string) error {
	f := newFlags(e, "bench rcd", "colo bench rcd [flags] DATA --labels L --test T --test-labels TL [-o DIR] [--json FILE]",
		"Seed 003's comparison on workers of unequal speed (--worker-speeds): D-PSGD\n"+
			"and MATCHA (--budget) on random equal shards with equal batches and F = 1,\n"+
			"against RCD-SGD: the same on ratio-constrained submodular shards (facility\n"+
			"location and graph cut) with batches proportional to the speeds and\n"+
			"F = --local-steps (--algorithms picks either or both). Each row trains\n"+
			"--runs times (seeds --seed, --seed+1, …); prints the seconds until the\n"+
			"training loss first reaches --loss-target, the test accuracy and the\n"+
			"bytes per epoch, mean ± std; --json FILE writes the rows with every run,\n"+
			"-o DIR also the loss against time and against epochs (SVG and PNG).\n"+
			"Every flag of colo train --mode decentralised applies.")
	var t trainFlags
	t.register(f)
	var df dataFlags
	df.register(f)
	var d decentralFlags
	d.register(f, 2, "1,2,4,8")
	dropServerFlags(f)
	// Seed 003's e^−1 is a loss the default setting never reaches: the
	// comparison times the crossing of a loss every run reached instead,
	// unless --loss-target names one.
	lt := f.Lookup("loss-target")
	lt.Value.Set("0")
	lt.DefValue = "0"
	lt.Usage = "training loss whose first crossing is timed (seed 003: 0.3679, log loss −1); 0: the highest of the runs' lowest training losses, which every run reaches"
	runs := f.Int("runs", 5, "trainings per algorithm and sharding")
	algorithms := f.String("algorithms", "d-psgd,matcha", "the algorithms to compare, each on random shards and on RCD-SGD's two: d-psgd, matcha or both")
	out := f.String("o", "", "output directory of rcd.json and the plots")
	pos, err := f.parse(args, 1, 1)
	if err != nil {
		return err
	}
	if err := checkOutputs(output{"-o", *out, true}, output{"--json", t.json.Path, false}); err != nil {
		return err
	}
	d.takeSchedule(&t)
	j, err := t.job(pos[0], df)
	if err != nil {
		return err
	}
	if d.matcha || d.weights != "" || d.processes || d.netns {
		return usageError("--matcha, --weights, --processes and --netns: the comparison runs both algorithms on --topology, in this process")
	}
	g, nt, err := d.config(&t, j)
	if err != nil {
		return err
	}
	cfg := rcd.DefaultConfig()
	cfg.Gossip, cfg.Budget, cfg.Runs, cfg.Target, cfg.Net = g, d.budget, *runs, d.target, nt
	if cfg.Variants, err = rcd.Variants(textio.SplitList(*algorithms), d.localSteps); err != nil {
		return usageError("--algorithms: %v", err)
	}
	for i := range cfg.Variants {
		if cfg.Variants[i].Shard.Function != "" {
			continue
		}
		cfg.Variants[i].Shard.Scheme = j.Placement // the baseline's sharding (random by default)
	}
	if err := cfg.Validate(); err != nil {
		return usageError("%v", err)
	}
	data, err := job.Load(j)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.errOut, "%s: %d samples; %s on %d workers of speeds %s, %s, %d epochs, batch %d, lr %g, %d runs each\n", pos[0], data.Samples.Len(),
		j.App, g.Workers, d.speeds, g.Topology, g.Epochs, g.Batch, g.LR, *runs)
	cfg.Progress = func(v rcd.Variant, r int, rep *job.Report) {
		reach := "never reached the target"
		if s, ok := rep.SecondsToTarget(cfg.Target); ok {
			reach = fmt.Sprintf("target after %.2f s", s)
		} else if cfg.Target == 0 {
			reach = "target to derive" // once every run has trained
		}
		fmt.Fprintf(e.errOut, "%s run %d/%d: %s, %.2f s, loss %.4f%s\n", v.Name(), r, *runs, reach, rep.Seconds, rep.FinalLoss(), rep.Eval.Words())
	}
	cfg.Diverged = func(v rcd.Variant, r int, err error) {
		fmt.Fprintf(e.errOut, "%s run %d/%d: %v (recorded; the comparison goes on)\n", v.Name(), r, *runs, err)
	}
	ctx, stop := tempdir.Stop(context.Background())
	defer stop()
	res, err := rcd.Run(ctx, cfg, data)
	if err != nil {
		return err
	}
	res.Dataset = filepath.Base(pos[0])
	if res.TargetFrom != "" {
		fmt.Fprintf(e.out, "target training loss %.4f (%s)\n", res.Target, res.TargetFrom)
	}
	if err := rcd.WriteTable(e.out, res); err != nil {
		return err
	}
	if t.json.Path != "" {
		if err := writeJSON(e, t.json.Path, res); err != nil {
			return err
		}
	}
	if *out != "" {
		if err := rcd.WriteDir(*out, res); err != nil {
			return err
		}
		if err := stampFile(e, filepath.Join(*out, rcd.Files[0])); err != nil {
			return err
		}
		fmt.Fprintf(e.out, "\nwritten to %s (%s)\n", *out, strings.Join(rcd.Files, ", "))
	}
	return nil
}
