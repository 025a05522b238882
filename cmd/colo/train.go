package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"colo/app"
	"colo/app/embed"
	"colo/app/mf"
	"colo/app/sparse"
	"colo/checkpoint"
	"colo/features"
	"colo/internal/datasum"
	"colo/internal/textio"
	"colo/partition"
	"colo/placement"
	"colo/ps/clock"
	"colo/ps/update"
	"colo/train"
	"colo/train/trainplot"
	"colo/train/watch"
	"colo/transport"
)

// trainFlags are the settings of colo train (and of the demo).
type trainFlags struct {
	app         string
	test        string
	machines    int
	servers     int
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
	maxSteps    int64
	evalEvery   string
	features    string
	seed        uint64
	json        *jsonFlag
	svgOut      string
	writeJob    string
	mf          mf.Config
	holdout     float64
	embed       embed.Config
	bal         balanceFlags
	jobFile     string
	ckpt        train.Checkpoint
	overlap     bool
	pullAhead   bool
	directions  bool
	replicas    int
	// The dense models' (mlp, cnn) data and sizes.
	labels, testLabels, labelCol, header, sep string
	standardize                               string
	hidden, conv, lrScaling, lrDecay          string
	interactions, asyncStep                   string
	threads                                   int
	workersDecay                              bool // --lr-decay is the decentralised workers', not the model's
	// fs is the flag set of register, which says which flags the command
	// line set (nil: none, as for colo node's training flags).
	fs *flag.FlagSet
}

func (t *trainFlags) register(f *cmdFlags) {
	t.fs = f.FlagSet
	def := train.DefaultConfig()
	f.StringVar(&t.app, "app", "lr", "application: lr (logistic regression, binary or multinomial), mf (matrix factorisation), embed (node embeddings of a SNAP graph for link prediction), ctr (a click-through model on a --spec table: an embedding per categorical field and an mlp), mlp or cnn (dense networks on labelled dense data)")
	f.StringVar(&t.test, "test", "", "test file (lr: libsvm with the training set's feature ids; mf: ratings; mlp, cnn: as DATA); without it lr, mlp and cnn score the training set and mf holds out entries")
	f.IntVar(&t.machines, "machines", def.Machines, "number of machines K, each a worker, and a server unless --servers")
	f.Alias("k", "machines")
	f.Alias("workers", "machines")
	f.IntVar(&t.servers, "servers", 0, "run this many servers apart from the workers (seed 004: 2 servers, 12 workers; 0: a server on every machine); lr, mf, embed: as many as --machines, server i holding the parameters of machine i")
	f.IntVar(&t.replicas, "replicas", 0, "with --servers: keep each server's keys and update rule states on this many other servers; a killed server's backup serves its keys at once, with no rollback (0: none)")
	f.StringVar(&t.place, "placement", "", "placement: lr, mf: a partitioner ("+strings.Join(partition.Names(), ", ")+", optionally +refine) or a directory written by colo partition (default parsa); mlp, cnn: a sharding scheme (random, roundrobin, stratified, distaware, submodular) or a directory written by colo shard (default random)")
	f.StringVar(&t.place, "shard", "", "mlp, cnn: the same as --placement")
	f.BoolVar(&t.directions, "directions", def.Directions, "lr, mf, embed under bsp: end a partitioner's placement (not random's, nor a directory's) by moving parameters between\nservers so that no machine pulls much more than it serves, lowering the bound of a synchronous round R_max at a higher T_max\n(colo partition --directions); --directions=false keeps the partitioner's parameters")
	f.StringVar(&t.compare, "compare", "", "comma-separated placements to train one after another with the same settings, side by side (overrides --placement)")
	f.StringVar(&t.consistency, "consistency", "bsp", "consistency model: bsp, async or ssp:τ (bounded delay τ ≥ 1)")
	f.StringVar(&t.bandwidth, "link-bandwidth", "", "emulated rate of each machine's network link, in "+transport.RateUnits+"; empty: unlimited")
	f.StringVar(&t.matrix, "bandwidth-matrix", "", "file of K lines of K machine-to-machine rates (heterogeneous links)")
	f.StringVar(&t.updater, "updater", "", "servers' update rule: sgd, momentum, adagrad, adam or ftrl (empty: the application's: adagrad for lr and mf, momentum for mlp and cnn)")
	f.Float64Var(&t.lr, "lr", 0, "learning rate, the single-machine value (0: the application's default: lr 0.5, mf 0.1, mlp and cnn 0.05)")
	f.Float64Var(&t.l1, "l1", 0, "L1 regularisation weight (applied by the servers; use with ftrl)")
	f.Float64Var(&t.l2, "l2", -1, "L2 regularisation weight, applied by the servers to the keys a round pushes (-1: the application's default: lr 0, mf 0.05)")
	f.IntVar(&t.batch, "batch", -1, "samples per round over all machines; each worker takes its share (0: full-batch rounds, not with --mode decentralised; -1: the application's default, full batches for lr and mf, 64 for mlp and cnn and decentralised workers)")
	f.Float64Var(&t.epsilon, "epsilon", -1, "stop when the training loss changes by less than this fraction between passes (0: never; negative: the application's default, 1e-4 for lr and mf, 0 for mlp and cnn)")
	f.IntVar(&t.maxPasses, "max-passes", -1, "stop after this many passes (epochs) over the data (-1: the application's default, 200 for lr and mf, 5 for mlp and cnn)")
	f.IntVar(&t.maxPasses, "epochs", -1, "the same as --max-passes")
	f.Int64Var(&t.maxSteps, "max-steps", 0, "a step budget: stop after this many steps, batches pushed counted over every machine (0: none)")
	f.StringVar(&t.evalEvery, "eval-every", "", "mlp, cnn: an evaluator node scores the test set this often while the workers train: N epochs (1), N steps (500steps) or a duration (30s); 0: at the end only (empty: every epoch)")
	f.StringVar(&t.features, "features", string(sparse.FeaturesAuto), "lr: feature values: raw, l2 (unit-norm samples), log1p-l2, or auto (raw for binary data, log1p-l2 otherwise)")
	f.Uint64Var(&t.seed, "seed", 1, "random seed of placement, batches and initial values")
	t.json = f.JSONOption("the summary (with --compare, the runs under \"results\")")
	f.StringVar(&t.svgOut, "svg", "", "write a plot of the training loss against time to this SVG file, and a PNG beside it")
	f.StringVar(&t.writeJob, "write-job", "", "write the job to this file and exit without training: the envelope that colo node --job-file runs under any launcher (docs/deploy.md), every default resolved, with the routing table of its placement")
	t.mf = mf.DefaultConfig()
	f.IntVar(&t.mf.Rank, "rank", t.mf.Rank, "mf: dimension of the factors")
	f.Float64Var(&t.holdout, "holdout", -1, "mf, embed: fraction of the entries (mf) or edges (embed) held out for evaluation when there is no --test (-1: the application's default, mf 0.1, embed 0.05)")
	t.embed = embed.DefaultConfig()
	f.IntVar(&t.embed.Dim, "dim", t.embed.Dim, "embed: values per node vector; ctr: values per embedding row")
	f.IntVar(&t.embed.Negatives, "negatives", t.embed.Negatives, "embed: negatives per edge, drawn among the nodes of its batch's edges (0: only --uniform-negatives)")
	f.IntVar(&t.embed.UniformNegatives, "uniform-negatives", t.embed.UniformNegatives, "embed: negatives per edge drawn from its round's uniform pool, besides --negatives (0: none)")
	f.IntVar(&t.embed.UniformPool, "uniform-pool", t.embed.UniformPool, "embed: nodes each machine draws uniformly from all nodes per round and pulls with the batch's keys, the pool of --uniform-negatives")
	f.IntVar(&t.embed.EvalNegatives, "eval-negatives", t.embed.EvalNegatives, "embed: uniform negatives each held-out edge is ranked against (MRR, AUC)")
	f.StringVar(&t.labels, "labels", "", "mlp, cnn: idx label file of idx DATA")
	f.StringVar(&t.testLabels, "test-labels", "", "mlp, cnn: idx label file of an idx --test")
	f.StringVar(&t.labelCol, "label-col", "", "mlp, cnn: CSV label column, a number from 0 (negative counts from the end) or a header name (empty: the header's column named label, class, target or y, required when the header has none; column 0 without a header)")
	f.StringVar(&t.standardize, "standardize", "auto", "mlp, cnn: standardise each feature by the training set's mean and standard deviation (the test set by the same): on, off, or auto (on for CSV tables, off for idx images and libsvm)")
	f.StringVar(&t.header, "header", "auto", "mlp, cnn: whether a CSV's first record is a header: auto, yes or no")
	f.StringVar(&t.sep, "sep", ",", "mlp, cnn: CSV field separator (one character; \\t for tab)")
	f.StringVar(&t.hidden, "hidden", "", "mlp, cnn, ctr: widths of the hidden dense layers, such as 256,128 (empty: mlp 256,128, cnn 120,84, ctr 64,32)")
	f.StringVar(&t.interactions, "interactions", "none", "ctr: none (the field embeddings concatenated into the mlp) or dot (and their pairwise dot products, DLRM's interaction)")
	f.StringVar(&t.conv, "conv-channels", "", "cnn: output channels of the convolutions, such as 6,16 (empty: 6,16)")
	f.IntVar(&t.threads, "threads", 0, "lr, mlp, cnn, ctr: goroutines each worker's step runs on (lr.Threads; nn.Workspace.SetThreads, as BenchmarkMLP/CNN at -cpu N; 0: one); the results are bit for bit the same at any number")
	f.StringVar(&t.lrScaling, "lr-scaling", "linear", "mlp, cnn: linear (each worker's push moves the model by lr/K, seed 004 Eq. 4) or none (by lr)")
	f.StringVar(&t.lrDecay, "lr-decay", "none", "mlp, cnn: learning-rate schedule over the epochs: none or cosine (to 0 by the last step; sgd and momentum); with --mode decentralised also step:E1,E2,… (divided by 10 after each listed epoch)")
	t.ckpt.Register(f.FlagSet)
	f.BoolVar(&t.overlap, "overlap", true, "overlap consecutive rounds: the next pull leaves as soon as the consistency model allows (--overlap=false: pull, compute and push one after another)")
	f.StringVar(&t.asyncStep, "async-step", "", "async, ssp: scale the servers' step of each push: none, workers (divided by the workers, what BSP's one step of the summed round spreads over them) or staleness (divided by the pushes applied since its pull; Zhang et al. 2016); empty: the application's (ctr workers, others none)")
	f.BoolVar(&t.pullAhead, "pull-ahead", false, "async: send each round's pull before the previous round's push (values travel during the computation, but lack the worker's own last update)")
	t.bal.Register(f.FlagSet)
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
	if job.Data.Load.Spec, err = t.tableSpec(data, df); err != nil {
		return job, err
	}
	job.Placement = cmp.Or(t.place, job.Placement)
	cfg := &job.Config
	if t.machines < 1 {
		return job, usageError("--machines %d: want at least 1", t.machines)
	}
	cfg.Machines, cfg.Servers, cfg.Replicas = t.machines, t.servers, t.replicas
	if cfg.Clock, err = clock.Parse(t.consistency); err != nil || t.asyncStep != "" && cfg.Clock.Mode == clock.BSP {
		return job, usageError("--%v", cmp.Or(err, fmt.Errorf("async-step %s: bsp applies each round's summed pushes in one step (want --consistency async or ssp:τ)", t.asyncStep)))
	}
	cfg.Rule.Name, cfg.Rule.L1, cfg.Rule.AsyncStep = cmp.Or(t.updater, cfg.Rule.Name), t.l1, cmp.Or(t.asyncStep, cfg.Rule.AsyncStep)
	if t.asyncStep == "" && !update.StepScales(cfg.Rule.Name) {
		cfg.Rule.AsyncStep = "" // the application's scaling is for rules that have one
	}
	if t.l2 != -1 { // -1: the application's; another negative one is the rule's to refuse
		cfg.Rule.L2 = t.l2
	}
	if t.lr != 0 { // 0: the application's; a negative one is the rule's to refuse
		cfg.Rule.LR = t.lr
	}
	switch {
	case t.batch < -1:
		return job, usageError("--batch %d: want 0 (full batch), a positive number of samples, or -1", t.batch)
	case t.batch >= 0:
		cfg.Batch = t.batch
	}
	if t.maxPasses != -1 {
		if cfg.MaxPasses = t.maxPasses; cfg.MaxPasses < 1 {
			return job, usageError("--max-passes %d: want at least 1", cfg.MaxPasses)
		}
	}
	if t.epsilon >= 0 {
		cfg.Epsilon = t.epsilon
	} else if math.IsNaN(t.epsilon) {
		return job, usageError("--epsilon %v: want ≥ 0", t.epsilon)
	}
	cfg.Directions = t.directions
	if cfg.Seed, cfg.MaxSteps = t.seed, t.maxSteps; t.evalEvery != "" {
		e, err := train.ParseEvery(t.evalEvery)
		if err != nil {
			return job, usageError("--eval-every: %v", err)
		}
		cfg.EvalEvery = e
	}
	if err := t.links(cfg); err != nil {
		return job, err
	}
	if cfg.Balance, err = t.bal.Config(); err != nil {
		return job, usageError("%v", err)
	}
	if cfg.RandomBandwidth, cfg.BandwidthChange, err = t.bal.Network(); err != nil {
		return job, usageError("%v", err)
	}
	cfg.Checkpoint, cfg.Sequential, cfg.PullAhead = t.ckpt, !t.overlap, t.pullAhead
	if t.ckpt.Override && t.ckpt.Resume == "" {
		return job, usageError("--resume-override without --resume: it overrides the checks of a resume")
	}
	if !t.ckpt.IsZero() && t.compare != "" {
		return job, usageError("--compare trains several jobs: --checkpoint and --resume take one")
	}
	opts := map[string]any{"features": t.features, "rank": t.mf.Rank,
		"dim": t.embed.Dim, "negatives": t.embed.Negatives, "uniform_negatives": t.embed.UniformNegatives, "uniform_pool": t.embed.UniformPool, "eval_negatives": t.embed.EvalNegatives,
		"labels": t.labels, "test_labels": t.testLabels, "label_col": t.labelCol, "standardize": t.standardize, "header": t.header, "sep": t.sep, "lr_scaling": t.lrScaling, "lr_decay": t.lrDecay, "interactions": t.interactions, "threads": t.threads}
	if t.workersDecay {
		opts["lr_decay"] = "none"
	}
	if t.holdout != -1 { // -1 alone is the default; -0.1 is refused by the app
		opts["holdout"] = t.holdout
	}
	for name, list := range map[string]string{"hidden": t.hidden, "conv_channels": t.conv} {
		if list != "" {
			if opts[name], err = textio.ParseInts(list); err != nil {
				return job, usageError("--%s: %v", strings.ReplaceAll(name, "_", "-"), err)
			}
		}
	}
	if err := t.appOptions(&job, opts); err != nil {
		return job, err
	}
	if err := job.Validate(); err != nil {
		return job, usageError("%v", err)
	}
	return job, nil
}

// appOptions sets opts, the values of the application options' flags
// (each flag named as its option, with - for _), in the job's options.
// A flag the command line set for an application that does not take it
// is refused, naming the flag and the application; the defaults of the
// flags that other applications take are left out.
func (t *trainFlags) appOptions(job *train.Job, opts map[string]any) error {
	takes, err := app.OptionNames(*job)
	if err != nil {
		return err
	}
	set := map[string]bool{}
	if t.fs != nil {
		t.fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	}
	for _, name := range slices.Sorted(maps.Keys(opts)) {
		if slices.Contains(takes, name) {
			continue
		}
		if fl := strings.ReplaceAll(name, "_", "-"); set[fl] {
			var flags []string
			for _, o := range takes {
				if f := strings.ReplaceAll(o, "_", "-"); t.fs.Lookup(f) != nil {
					flags = append(flags, "--"+f)
				}
			}
			return usageError("--%s: --app %s does not take it (its flags: %s)", fl, job.App, cmp.Or(strings.Join(flags, ", "), "none"))
		}
		delete(opts, name)
	}
	return app.SetOptions(job, opts)
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

func runTrain(e *env, args []string) error {
	mode, err := trainMode(args)
	if err != nil && e.complete != nil {
		mode, err = "ps", nil // completing --mode's value
	}
	switch {
	case err != nil:
		return err
	case mode == "decentralised":
		return runDecentral(e, args)
	}
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
			"processes of this binary on loopback (colo node), each emulating its\n"+
			"interface over TCP the same way. With --netns (root and\n"+
			"iproute2) each machine is a process in its own network namespace, its\n"+
			"link shaped by tc at --link-bandwidth. All three run the same per-worker\n"+
			"code: a bsp job gives the same passes and test measures in each.\n\n"+
			"Example: colo train data.svm --test data.t --machines 8 --link-bandwidth 100mbit --compare random,parsa")
	modeFlag(f, "ps")
	var t trainFlags
	t.register(f)
	var df dataFlags
	df.register(f)
	var dep deployment
	dep.register(f)
	dep.logf = func(format string, args ...any) { fmt.Fprintf(e.errOut, "colo train: "+format+"\n", args...) }
	var wf watchFlags
	wf.register(f.FlagSet)
	refuseDecentralFlags(e, f)
	f.Sections = trainSections
	pos, err := f.parse(args, 1, 1)
	if err != nil {
		return err
	}
	if t.writeJob != "" && (t.compare != "" || dep.processes || dep.netns) {
		return usageError("--write-job writes one job for colo node to run: not with --compare, --processes or --netns")
	}
	if err := checkOutputs(output{"--write-job", t.writeJob, false}, output{"--json", t.json.Path, false}, output{"--svg", t.svgOut, false},
		output{"--checkpoint", t.ckpt.Dir, true}, output{"--metrics-file", dep.metrics.File, false}); err != nil {
		return err
	}
	if err := wf.check(!dep.processes && !dep.netns); err != nil {
		return err
	}
	job, err := t.job(pos[0], df)
	if err != nil {
		return err
	}
	specs, err := t.placements(job)
	if err != nil {
		return err
	}
	if err := dep.check(job.Config); err != nil {
		return err
	}
	if err := job.Config.Checkpoint.CheckDirs(); err != nil {
		return usageError("--checkpoint: %v", err)
	}
	if sp, dir := job.Data.Load.Spec, job.Config.Checkpoint.Dir; sp != nil && dir != "" {
		// A resumed job reads the table with the same feature columns.
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		if err := sp.Save(dir); err != nil {
			return err
		}
	}
	if err := t.checksum(e, &job, specs); err != nil {
		return err
	}
	if dir := job.Config.Checkpoint.Resume; dir != "" {
		m, refused, err := checkpoint.Latest(dir)
		for _, r := range refused {
			fmt.Fprintf(e.errOut, "colo train: --resume: refused %v\n", r)
		}
		if err != nil {
			return fmt.Errorf("--resume: %w", err)
		}
		// Refused before the data loads: the settings the job's identity
		// holds apart from what the data and the placement decide.
		warn, err := train.CompareIdentity(filepath.Join(m.Dir, checkpoint.ManifestName), m.Job, train.JobIdentity(job), job.Config.Checkpoint.Override)
		if err != nil {
			return fmt.Errorf("--resume: %w", err)
		}
		if warn != "" {
			fmt.Fprintf(e.errOut, "colo train: --resume-override: %s\n", warn)
		}
		fmt.Fprintf(e.errOut, "colo train: resuming from %s (round %d)\n", m.Dir, m.Round)
	}
	w, err := startWatchers(e, dep.metrics, wf) // a taken address fails before the data loads
	if err != nil {
		return err
	}
	dep.logf = w.Logf(dep.logf) // failures and recoveries on the dashboard too
	load := startPhase(e, "load "+pos[0], 1)
	opened, err := app.Open(job)
	if err != nil {
		load.Abort()
		return errors.Join(err, w.End(nil))
	}
	load.Finish(opened.Data.Words())
	if t.writeJob != "" {
		return errors.Join(writeTrainJob(e, t.writeJob, job, opened), w.End(nil))
	}
	d := dep.deployer(opened, w.Watch)
	fmt.Fprintf(e.out, "%s: %s; %s on %d machines, %s, %s\n", pos[0], opened.Data.Words(), job.App, job.Config.Machines, t.consistency, job.Config.LinkWords())
	runs, err := trainRuns(e, job, opened, specs, d, w)
	if err := w.End(err); err != nil {
		return err
	}
	return reportRuns(e, runs, filepath.Base(pos[0]), t.json.Path, t.svgOut)
}

// tableSpec returns the fitted feature columns that a job on the table
// data reads it with: those saved with the checkpoint it resumes or with
// its placement directory (whose parameter ids are theirs), or else
// --spec fitted on the table's training rows; nil without any (the file
// is not read as a table). A --spec that differs from the saved one is
// refused.
func (t *trainFlags) tableSpec(data string, df dataFlags) (*features.Fitted, error) {
	saved, dir, err := features.LoadFirst(t.ckpt.Resume, t.place)
	if err != nil {
		return nil, err
	}
	if saved != nil {
		if df.spec != "" {
			spec, fitted, err := features.Read(df.spec)
			if err != nil {
				return nil, usageError("--spec: %v", err)
			}
			if fitted != nil {
				spec = fitted.Spec
			}
			if !reflect.DeepEqual(spec, saved.Spec) {
				return nil, usageError("--spec %q differs from %q, the spec %s was written with: its parameter ids would not match; leave --spec out to read with the saved one",
					spec.Compact(), saved.Spec.Compact(), filepath.Join(dir, features.FileName))
			}
		}
		return saved, nil
	}
	if df.spec == "" {
		return nil, nil
	}
	return df.fit(data)
}

// checksum sets the checksum of the job's training data (and its idx
// labels) when the job writes or resumes checkpoints, or reads a
// placement from a directory, and checks it against each directory's
// summary: what they record of the data, so that another dataset's
// placement is refused before the data is loaded.
func (t *trainFlags) checksum(e *env, job *train.Job, specs []string) error {
	var dirs []string
	for _, spec := range specs {
		if st, err := os.Stat(spec); err == nil && st.IsDir() {
			dirs = append(dirs, spec)
		}
	}
	if job.Config.Checkpoint.IsZero() && len(dirs) == 0 {
		return nil
	}
	sum, err := datasum.Files(job.Data.Train, t.labels)
	if err != nil {
		return err
	}
	job.Data.Checksum = sum
	for _, dir := range dirs {
		warn, err := datasum.Check(filepath.Join(dir, placement.SummaryFile), sum, job.Data.Train)
		if err != nil {
			return fmt.Errorf("--placement %s: %w", dir, err)
		}
		if warn != "" {
			fmt.Fprintf(e.errOut, "colo train: warning: %s\n", warn)
		}
	}
	return nil
}

// placements returns the placements to train on: --compare's, or
// --placement; each a partitioner or a directory, checked before anything
// is loaded.
func (t *trainFlags) placements(job train.Job) ([]string, error) {
	specs := []string{job.Placement}
	if t.compare != "" {
		specs = textio.SplitList(t.compare)
	}
	if len(specs) == 0 {
		return nil, usageError("--compare %q names no placement", t.compare)
	}
	for i, spec := range specs {
		specs[i] = strings.TrimSpace(spec)
		if err := app.CheckPlacement(t.app, specs[i]); err != nil {
			return nil, usageError("--%v", err)
		}
	}
	return specs, nil
}

// trainRuns trains the opened job once per placement on d.
func trainRuns(e *env, job train.Job, opened *app.Opened, specs []string, d train.Deployer, w *watch.Watchers) ([]*train.Result, error) {
	var runs []*train.Result
	for _, spec := range specs {
		job.Placement = spec
		place := startPhase(e, "place "+spec, 1)
		p, secs, err := opened.Place(job)
		if err != nil {
			place.Abort()
			return nil, err
		}
		place.Finish("")
		cost, err := opened.Cost(p)
		if err != nil {
			return nil, err
		}
		j := job
		pp := newPasses(e, spec, j.Config)
		w.Run(&j.Config, spec, opened.App.Width(), cost, pp.pass)
		res, err := train.Run(context.Background(), j, opened.App, p, d)
		pp.end(err)
		if err != nil {
			return nil, err
		}
		res.Placed(secs, cost)
		fmt.Fprintf(e.out, "%-14s partition %.2f s, trained %d passes in %.2f s, loss %.4f%s\n%-14s worker 0: %v\n",
			spec, res.PartitionSeconds, res.Passes, res.TrainSeconds, res.FinalTrainLoss, res.Eval.Words(), "", res.Phases)
		if res.Diagnosis != "" {
			fmt.Fprintf(e.errOut, "colo train: warning: %s: %s\n", spec, res.Diagnosis)
		}
		runs = append(runs, res)
	}
	return runs, nil
}

// reportRuns prints the side-by-side table and writes the JSON and the
// plot (SVG and PNG), whose title names the dataset.
func reportRuns(e *env, runs []*train.Result, dataset, jsonOut, svgOut string) error {
	fmt.Fprintln(e.out)
	if err := trainplot.WriteTable(e.out, runs); err != nil {
		return err
	}
	if jsonOut != "" {
		var v any = runs
		if len(runs) == 1 {
			v = runs[0]
		}
		if err := writeJSON(e, jsonOut, v); err != nil {
			return err
		}
	}
	if svgOut != "" {
		if err := writeFigure(e, svgOut, trainplot.LossFigure(dataset+": "+trainplot.Settings(runs), runs)); err != nil {
			return err
		}
	}
	return nil
}
