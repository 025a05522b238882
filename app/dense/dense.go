// Package dense trains the dense neural networks of package nn (mlp,
// cnn) on the parameter server, the workload of seed 004: labelled dense
// data (idx, CSV, libsvm; package dataset) sharded among the workers by a
// scheme of package shard, the model's flat parameter vector spread over
// the servers in contiguous key ranges, and every round one mini-batch
// per worker that pulls the whole model as one range and pushes its
// gradient back (train.RangeKeys).
//
// Batch size and learning rate follow seed 004 §II-C. A job's batch B is
// global: the engine cuts each epoch into ⌈N/B⌉ rounds and every worker's
// shard into as many batches, WB ≈ B/n samples each (Eq. 3). The engine
// scales each pushed gradient by 1/B, so a worker's push is its batch's
// mean gradient divided by n: with the servers' learning rate α, each
// asynchronous push moves the model by α/n times its mean gradient, the
// α_w = α/n of Eq. 4 and the update of Eq. 5; under BSP the servers apply
// the mean gradient of the global batch, as one machine would. Options
// LRScaling "none" drops the 1/n: every push then moves by α.
//
// The servers start every key at zero and the update rules (SGD, momentum,
// Adam) move a value by a function of its gradients alone, so the servers
// hold each parameter's displacement from the seeded initial parameters
// w₀ (nn.Model.Init), which every worker and the evaluation add back: the
// same training as servers that started at w₀. L1 and L2 penalties would
// pull towards w₀ instead of zero, so a dense job refuses them.
//
// Samples that a scheme broadcasts (distribution-aware sharding's small
// neighbourhoods) are trained on by every worker.
//
//	job, _ := app.DefaultJob("cnn")
//	job.Data.Train, job.Placement = "train-images-idx3-ubyte.gz", "stratified"
//	job.SetOptions(dense.Options{Labels: "train-labels-idx1-ubyte.gz", ...})
package dense

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"colo/dataset"
	"colo/internal/datasum"
	"colo/internal/membudget"
	"colo/nn"
	"colo/placement"
	"colo/ps/update"
	"colo/ps/worker"
	"colo/shard"
	"colo/train"
	"colo/transport"
)

// Options are a dense model's settings in a job.
type Options struct {
	// Labels is the idx label file of idx training data, TestLabels the
	// test data's.
	Labels     string `json:"labels"`
	TestLabels string `json:"test_labels"`
	// LabelCol, Header and Sep read CSV data (dataset.LoadOptions.SetCSV):
	// the label column ("0", "-1" for the last, a header name, or "" for
	// a header's column named label, class, target or y, and column 0
	// without a header: dataset.CSVOptions.LabelAuto), the header (auto,
	// yes, no) and the separator.
	LabelCol string `json:"label_col"`
	Header   string `json:"header"`
	Sep      string `json:"sep"`
	// Standardize is "on" (every feature standardised by the training
	// set's mean and standard deviation, dataset.Scaler, the test set by
	// the same), "off", or "auto": on for CSV tables, off for idx images
	// (scaled to [0, 1] as read) and libsvm data.
	Standardize string `json:"standardize"`
	// Hidden are the widths of the hidden dense layers and Conv the
	// channels of cnn's convolutions; empty for the architecture's
	// defaults (nn.Config).
	Hidden []int `json:"hidden"`
	Conv   []int `json:"conv_channels"`
	// Channels, Height and Width are the shape of a sample; 0 infers one
	// square channel from the data's dimension (28×28 for 784).
	Channels int `json:"input_channels"`
	Height   int `json:"input_height"`
	Width    int `json:"input_width"`
	// LRScaling is "linear" (each push moves by α/n, seed 004 Eq. 4) or
	// "none" (by α).
	LRScaling string `json:"lr_scaling"`
	// LRDecay is the schedule of the learning rate over the epochs:
	// "none" (constant) or "cosine" (from α down to 0 by the last step,
	// α·(1 + cos(π·t/T))/2 at step t of T). A worker scales its gradient,
	// which for sgd and momentum is the same as scaling the rate.
	LRDecay string `json:"lr_decay"`
	// Threads is the number of goroutines each worker's passes run on
	// (nn.Workspace.SetThreads; 0 or 1: one). The results are bit for
	// bit the same at any setting.
	Threads int `json:"threads"`
}

// DefaultOptions returns CSV data with a detected header and its label
// column found, features standardised for CSV tables, the
// architectures' default widths, linear scaling.
func DefaultOptions() Options {
	return Options{Header: "auto", Sep: ",", Standardize: "auto", LRScaling: "linear", LRDecay: "none"}
}

// Defaults sets a dense model's defaults in job: random shards (seed 004's
// baseline), global batches of 64, 5 epochs without the loss criterion,
// the validation set scored after every epoch,
// momentum SGD with rate 0.05 and μ 0.9 (the PyTorch reference's), and
// DefaultOptions.
func Defaults(job *train.Job) error {
	job.Placement = string(shard.SchemeRandom)
	c := &job.Config
	c.Batch, c.MaxPasses, c.Epsilon, c.EvalEvery = 64, 5, 0, train.Every{Epochs: 1}
	c.Rule = update.DefaultConfig()
	c.Rule.Name, c.Rule.LR, c.Rule.Momentum = "momentum", 0.05, 0.9
	return job.SetOptions(DefaultOptions())
}

// Schemes are the placements a dense job takes besides a directory
// written by colo shard.
func Schemes() []shard.Scheme {
	return []shard.Scheme{shard.SchemeRandom, shard.SchemeRoundRobin, shard.SchemeStratified, shard.SchemeDistAware, shard.SchemeSubmodular}
}

// CheckPlacement checks that spec names a sharding scheme (distaware
// optionally with its number of neighbourhoods, "distaware:40") or a
// directory.
func CheckPlacement(spec string) error {
	if st, err := os.Stat(spec); err == nil && st.IsDir() {
		return nil
	}
	_, err := ParseScheme(spec)
	return err
}

// ParseScheme reads a sharding scheme as a job's placement names it:
// random, roundrobin, stratified, submodular, or distaware[:clusters]
// (k-means neighbourhoods; 0 or none: twice the number of classes).
func ParseScheme(spec string) (shard.Options, error) {
	o := shard.DefaultOptions()
	name, clusters, hasClusters := strings.Cut(spec, ":")
	o.Scheme = shard.Scheme(name)
	if hasClusters {
		n, err := strconv.Atoi(clusters)
		if o.Scheme != shard.SchemeDistAware || err != nil || n < 1 {
			return o, fmt.Errorf("placement %q: only distaware takes a number of neighbourhoods (distaware:40)", spec)
		}
		o.Clusters = n
	}
	schemes := Schemes()
	if slices.Contains(schemes, o.Scheme) {
		return o, nil
	}
	names := make([]string, len(schemes))
	for i, s := range schemes {
		names[i] = string(s)
	}
	return o, fmt.Errorf("placement %q: want a sharding scheme (%s, distaware:clusters) or a directory written by colo shard", spec, strings.Join(names, ", "))
}

// Load reads the training and test data of job with its options.
func Load(job train.Job) (train *dataset.Dataset, test *dataset.Dataset, err error) {
	o, err := options(job)
	if err != nil {
		return nil, nil, err
	}
	read := func(path, labels string) (*dataset.Dataset, error) {
		lo := dataset.DefaultLoadOptions()
		lo.Labels, lo.Memory = labels, job.Data.Load.MemoryBudget
		lo.CheckDim = widthCheck(job, o)
		if err := lo.SetCSV(o.LabelCol, o.Header, o.Sep); err != nil {
			return nil, fmt.Errorf("%s options: %w", job.App, err)
		}
		d, err := dataset.Load(path, lo)
		if err == nil && d.Len() == 0 {
			err = fmt.Errorf("%s: no samples", path)
		}
		return d, err
	}
	if train, err = read(job.Data.Train, o.Labels); err != nil {
		return nil, nil, err
	}
	if job.Data.Test != "" {
		if test, err = read(job.Data.Test, o.TestLabels); err != nil {
			return nil, nil, err
		}
		if test.Dim != train.Dim {
			return nil, nil, fmt.Errorf("%s: %d features per sample, the training data %s has %d", job.Data.Test, test.Dim, job.Data.Train, train.Dim)
		}
		if test.Classes > train.Classes {
			return nil, nil, fmt.Errorf("%s: %d classes, the training data %s has %d", job.Data.Test, test.Classes, job.Data.Train, train.Classes)
		}
	}
	return train, test, nil
}

// frameHeader bounds what a frame carries besides a server's parameters
// (measured: 68 bytes).
const frameHeader = 4 << 10

// paramCopies is how many float32 copies of the parameters any process
// of a dense job holds at least: the initial values, a server's, a
// worker's model and its gradient.
const paramCopies = 4

// widthCheck returns what says whether job's model can take samples of
// dim features (dataset.LoadOptions.CheckDim), so that the loader refuses
// a width before it reads the data: nn.New must accept the model built
// for them (of two classes, the fewest; of the options' input shape, or
// inferred as Open infers it); each server's share of its parameters,
// which the evaluator pulls in one frame, must fit the transport's frame
// limit; and paramCopies of them must fit the memory budget.
func widthCheck(job train.Job, o Options) func(dim int) error {
	return func(dim int) error {
		cfg := nn.DefaultConfig()
		cfg.Classes = 2
		cfg.Hidden, cfg.Conv = o.Hidden, o.Conv
		cfg.Channels, cfg.Height, cfg.Width = o.Channels, o.Height, o.Width
		if cfg.Channels == 0 && cfg.Height == 0 && cfg.Width == 0 {
			side := int(math.Round(math.Sqrt(float64(dim))))
			cfg.Channels, cfg.Height, cfg.Width = 1, side, side
			if side*side != dim {
				cfg.Height, cfg.Width = 1, dim
			}
		}
		if cfg.Channels*cfg.Height*cfg.Width != dim {
			return nil // Open names the mismatch of the shape and the data
		}
		m, err := nn.New(job.App, cfg)
		if err != nil {
			return err
		}
		params := int64(m.NumParams())
		servers := int64(max(job.Config.NumServers(), 1))
		if share := 4*((params+servers-1)/servers) + frameHeader; share > transport.DefaultMaxFrame {
			return fmt.Errorf("%s would have %d parameters: each of the %d servers would send %s of them in one frame, more than the frame limit of %s (fewer features, narrower --hidden layers or more machines)",
				job.App, params, servers, membudget.FormatBytes(share), membudget.FormatBytes(transport.DefaultMaxFrame))
		}
		limit := membudget.Resolve(job.Data.Load.MemoryBudget)
		if need := paramCopies * 4 * params; need > limit {
			return fmt.Errorf("%s would have %d parameters, whose %d float32 copies need %s, more than the memory budget of %s (%s SIZE sets it)",
				job.App, params, paramCopies, membudget.FormatBytes(need), membudget.FormatBytes(limit), membudget.Flag)
		}
		return nil
	}
}

// options decodes the job's options over DefaultOptions.
func options(job train.Job) (Options, error) {
	o := DefaultOptions()
	if err := job.DecodeOptions(&o); err != nil {
		return o, err
	}
	switch o.Standardize {
	case "auto", "on", "off":
	default:
		return o, fmt.Errorf("%s options: standardize %q: want auto, on or off", job.App, o.Standardize)
	}
	if o.LRScaling != "linear" && o.LRScaling != "none" {
		return o, fmt.Errorf("%s options: lr_scaling %q: want linear or none", job.App, o.LRScaling)
	}
	switch {
	case o.Threads < 0:
		return o, fmt.Errorf("%s options: threads %d: want 0 or 1 (one) or more", job.App, o.Threads)
	case o.LRDecay != "none" && o.LRDecay != "cosine":
		return o, fmt.Errorf("%s options: lr_decay %q: want none or cosine", job.App, o.LRDecay)
	case o.LRDecay != "none" && job.Config.Rule.Name != "sgd" && job.Config.Rule.Name != "momentum":
		return o, fmt.Errorf("%s options: lr_decay %s scales the gradients, which scales the rate of sgd and momentum only, not %s", job.App, o.LRDecay, job.Config.Rule.Name)
	}
	return o, nil
}

// App is a dense model on labelled data. It implements train.App.
type App struct {
	Model *nn.Model
	Train *dataset.Dataset
	// Test is the test set; nil evaluates on the training set.
	Test *dataset.Dataset
	// Seed seeds the initial parameters (every worker draws the same).
	Seed uint64
	// threads is each workspace's number of goroutines (Options.Threads).
	threads int
	// scale multiplies each push's gradient: 1, or the number of workers
	// without linear scaling.
	scale float32
	// cosine decays the rate over epochs epochs, or over the rounds of
	// the step budget when it ends training sooner (lr_decay cosine).
	cosine    bool
	epochs    int
	maxRounds int
	// broadcast are the samples every worker trains on.
	broadcast []int32
	// w0 are the initial parameters, which the servers' values are
	// relative to.
	w0 []float32
	// labels and testLabels are Train's and Test's labels as the model
	// takes them.
	labels, testLabels []int32
	// Scaler, when not nil, standardised Train and Test (from the
	// training set's statistics; options standardize); a checkpoint
	// saves it with every worker's part, and a resume refuses other
	// statistics.
	Scaler *dataset.Scaler
}

// Open builds the architecture job.App ("mlp" or "cnn") for the loaded
// data.
func Open(job train.Job, tr, test *dataset.Dataset) (*App, error) {
	o, err := options(job)
	if err != nil {
		return nil, err
	}
	cfg := nn.DefaultConfig()
	cfg.Classes = max(tr.Classes, 2)
	if test != nil {
		cfg.Classes = max(cfg.Classes, test.Classes)
	}
	cfg.Hidden, cfg.Conv = o.Hidden, o.Conv
	cfg.Channels, cfg.Height, cfg.Width = o.Channels, o.Height, o.Width
	if cfg.Channels == 0 && cfg.Height == 0 && cfg.Width == 0 {
		side := int(math.Round(math.Sqrt(float64(tr.Dim))))
		cfg.Channels, cfg.Height, cfg.Width = 1, side, side
		if side*side != tr.Dim {
			// Not a square image: one row of features (mlp only).
			cfg.Height, cfg.Width = 1, tr.Dim
		}
	}
	if cfg.Channels*cfg.Height*cfg.Width != tr.Dim {
		return nil, fmt.Errorf("%s options: input %d×%d×%d = %d values, the data %s has %d features per sample",
			job.App, cfg.Channels, cfg.Height, cfg.Width, cfg.Channels*cfg.Height*cfg.Width, tr.Source, tr.Dim)
	}
	m, err := nn.New(job.App, cfg)
	if err != nil {
		return nil, err
	}
	if b, k := job.Config.Batch, job.Config.Machines; b > 0 && b < k {
		return nil, fmt.Errorf("%s: batch %d is smaller than the %d machines: each worker's batch is batch/machines (seed 004 Eq. 3)", job.App, b, k)
	}
	if r := job.Config.Rule; r.L1 != 0 || r.L2 != 0 {
		return nil, fmt.Errorf("%s: rule.l1 %v and rule.l2 %v: dense models take no L1 or L2 penalty (the servers hold displacements from the initial parameters)", job.App, r.L1, r.L2)
	}
	var scaler *dataset.Scaler
	if o.Standardize == "on" || o.Standardize == "auto" && tr.Format == dataset.FormatCSV {
		sc := dataset.FitScaler(tr)
		if tr, err = sc.Apply(tr); err != nil {
			return nil, err
		}
		if test != nil {
			if test, err = sc.Apply(test); err != nil {
				return nil, err
			}
		}
		scaler = &sc
	}
	a := &App{Model: m, Train: tr, Test: test, Seed: job.Config.Seed, scale: 1, labels: labels32(tr), Scaler: scaler}
	if test != nil {
		a.testLabels = labels32(test)
	}
	a.w0 = make([]float32, m.NumParams())
	m.Init(a.w0, rand.New(rand.NewPCG(job.Config.Seed, 0x1417)))
	if o.LRScaling == "none" {
		a.scale = float32(job.Config.Machines)
	}
	a.cosine, a.epochs, a.maxRounds = o.LRDecay == "cosine", job.Config.MaxPasses, job.Config.MaxRounds()
	a.threads = o.Threads
	return a, nil
}

func labels32(d *dataset.Dataset) []int32 {
	out := make([]int32, d.Len())
	for i, l := range d.Labels {
		out[i] = int32(l)
	}
	return out
}

// Name returns the architecture's name.
func (a *App) Name() string { return a.Model.Name() }

// Width returns 1: key k is parameter k.
func (a *App) Width() int { return 1 }

// NumSamples returns the number of training samples.
func (a *App) NumSamples() int { return a.Train.Len() }

// NumKeys returns the number of parameters.
func (a *App) NumKeys() int { return a.Model.NumParams() }

// Place returns the placement of job: the samples sharded by the scheme
// job.Placement names (seeded by the job's seed) or read from a colo
// shard directory, each server (a machine's, or one of Servers apart)
// holding an equal contiguous range of the parameters; and the seconds sharding took. Samples the
// shards broadcast are placed on machine 0 and trained on by every
// machine.
func (a *App) Place(job train.Job) (*placement.Placement, float64, error) {
	k := job.Config.Machines
	var assign []int
	var secs float64
	if st, err := os.Stat(job.Placement); err == nil && st.IsDir() {
		var workers int
		if err := checkData(job, shard.SummaryFile); err != nil {
			return nil, 0, err
		}
		if assign, workers, err = shard.ReadDir(job.Placement); err != nil {
			return nil, 0, err
		}
		if workers != k {
			return nil, 0, fmt.Errorf("%s shards the data among %d workers, the job has %d machines", job.Placement, workers, k)
		}
		if len(assign) != a.NumSamples() {
			return nil, 0, fmt.Errorf("%s shards %d samples, %s has %d", job.Placement, len(assign), job.Data.Train, a.NumSamples())
		}
	} else {
		o, err := ParseScheme(job.Placement)
		if err != nil {
			return nil, 0, err
		}
		o.Workers = k
		start := time.Now()
		res, err := shard.Shard(a.Train, o, rand.New(rand.NewPCG(job.Config.Seed, 0x5eed)))
		if err != nil {
			return nil, 0, err
		}
		assign, secs = res.Assign, time.Since(start).Seconds()
	}
	p := &placement.Placement{K: k, Data: make([]int32, len(assign)), Param: make([]int32, a.NumKeys())}
	a.broadcast = a.broadcast[:0]
	for u, w := range assign {
		if w == shard.Broadcast {
			a.broadcast = append(a.broadcast, int32(u))
			w = 0
		}
		p.Data[u] = int32(w)
	}
	n, servers := int64(a.NumKeys()), int64(job.Config.NumServers())
	for v := range p.Param {
		p.Param[v] = int32(int64(v) * servers / n)
	}
	return p, secs, nil
}

// checkData refuses a placement directory (job.Placement) made from other
// data than the job's, by the checksum its summary file records
// (internal/datasum.Check); a summary of an earlier version, without
// one, is logged (job.Config.Logf) and accepted.
func checkData(job train.Job, summaryFile string) error {
	warn, err := datasum.Check(filepath.Join(job.Placement, summaryFile), job.Data.Checksum, job.Data.Train)
	if warn != "" && job.Config.Logf != nil {
		job.Config.Logf("%s", warn)
	}
	return err
}

// WritePlacement writes p, a placement of Place with its broadcast
// samples, as a colo shard directory dir, which places job the same way
// as its Placement in another process (train.PlacementWriter): the
// processes of a cluster read the shards instead of computing them again.
func (a *App) WritePlacement(dir string, job train.Job, p *placement.Placement) error {
	if len(p.Data) != a.NumSamples() {
		return fmt.Errorf("dense: the placement has %d samples, the data %d", len(p.Data), a.NumSamples())
	}
	assign := make([]int, len(p.Data))
	for u, m := range p.Data {
		assign[u] = int(m)
	}
	for _, u := range a.broadcast {
		assign[u] = shard.Broadcast
	}
	summary := map[string]any{"workers": p.K, "samples": len(assign), "scheme": job.Placement}
	if job.Data.Checksum != "" {
		summary[datasum.SummaryField] = job.Data.Checksum
	}
	return shard.WriteDir(dir, assign, summary)
}

// Part cuts machine rank's samples, and the broadcast ones, into batches
// of a pass in an order drawn from seed.
func (a *App) Part(rank int, rows []int32, batches int, seed uint64) train.Part {
	mine := rows
	if rank != 0 && len(a.broadcast) > 0 {
		mine = append(append([]int32(nil), rows...), a.broadcast...)
	}
	order := append([]int32(nil), mine...)
	if batches > 1 {
		rng := rand.New(rand.NewPCG(seed, uint64(rank)+1))
		rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	}
	p := &part{a: a, ws: a.Model.NewWorkspace(max(1, (len(order)+batches-1)/batches))}
	p.ws.SetThreads(a.threads)
	for b := range batches {
		p.batches = append(p.batches, order[b*len(order)/batches:(b+1)*len(order)/batches])
	}
	return p
}

// part is a machine's share of a dense model.
type part struct {
	a       *App
	batches [][]int32
	ws      *nn.Workspace
	x       []float32
	y       []int32
	// steps counts the steps taken, for the decay.
	steps int
}

func (p *part) Batches() int { return len(p.batches) }

func (p *part) Keys(int) train.Keys { return train.RangeKeys(0, uint64(p.a.NumKeys())) }

// Step computes batch b at the pulled displacements vals from the
// initial parameters.
func (p *part) Step(b int, vals, grad []float32, scale float32) (float64, int, int) {
	for i, v := range p.a.w0 {
		vals[i] += v
	}
	rows := p.batches[b]
	d := p.a.Train
	p.x, p.y = p.x[:0], p.y[:0]
	for _, u := range rows {
		p.x = append(p.x, d.Row(int(u))...)
		p.y = append(p.y, p.a.labels[u])
	}
	scale *= p.a.scale
	if p.a.cosine {
		total := float64(p.a.epochs * len(p.batches))
		if p.a.maxRounds > 0 {
			total = min(total, float64(p.a.maxRounds))
		}
		scale *= float32(0.5 * (1 + math.Cos(math.Pi*float64(p.steps)/total)))
	}
	p.steps++
	loss, correct := p.a.Model.LossGrad(vals, p.x, p.y, len(rows), grad, scale, p.ws)
	return loss, len(rows), correct
}

// Evaluate pulls the model on worker 0 and scores the test set (the
// training set without one); other workers return nothing.
func (a *App) Evaluate(ctx context.Context, w *worker.Worker, _ train.Part) (train.Eval, error) {
	if w.Rank() != 0 {
		return train.Eval{}, nil
	}
	params := make([]float32, a.NumKeys())
	if err := w.PullRange(0, uint64(len(params)), params).Wait(); err != nil {
		return train.Eval{}, err
	}
	for i, v := range a.w0 {
		params[i] += v
	}
	d, on := a.Test, "test"
	if d == nil {
		d, on = a.Train, "train"
	}
	return a.Score(params, d, on), nil
}

// ScoreModel scores the model whose displacement from w₀ the servers
// hold, vals, on the test set (the training set without one): a
// train.Scorer, for the evaluator's validation curves. It adds w₀ to vals
// in place.
func (a *App) ScoreModel(vals []float32) train.Eval {
	for i, v := range a.w0 {
		vals[i] += v
	}
	d, on := a.Test, "test"
	if d == nil {
		d, on = a.Train, "train"
	}
	return a.Score(vals, d, on)
}

// Initial returns the initial parameters w₀.
func (a *App) Initial() []float32 { return a.w0 }

// Score evaluates the model at params on d: accuracy, mean log loss and
// the accuracy of each class.
func (a *App) Score(params []float32, d *dataset.Dataset, on string) train.Eval {
	ws := a.Model.NewWorkspace(256)
	ws.SetThreads(a.threads)
	labels := a.labels
	switch {
	case d == a.Test:
		labels = a.testLabels
	case d != a.Train:
		labels = labels32(d)
	}
	ev := a.Model.Evaluate(params, d.Features, labels, d.Len(), ws)
	acc, loss := ev.Accuracy(), ev.MeanLoss()
	out := train.Eval{On: on, Samples: ev.Samples, Accuracy: &acc, LogLoss: &loss}
	for c, n := range ev.ClassSamples {
		v := 0.0
		if n > 0 {
			v = float64(ev.ClassCorrect[c]) / float64(n)
		}
		out.ClassAccuracy = append(out.ClassAccuracy, v)
	}
	return out
}

// Classes returns the number of the model's outputs (train.Classifier).
func (a *App) Classes() int { return a.Model.Config().Classes }

// Chance returns the accuracy, on the set Evaluate scores, of always
// answering the training set's most frequent class (train.Classifier).
func (a *App) Chance() float64 {
	scored := a.testLabels
	if a.Test == nil {
		scored = a.labels
	}
	top, counts := 0, a.Train.ClassCounts()
	for c, n := range counts {
		if n > counts[top] {
			top = c
		}
	}
	hits := 0
	for _, y := range scored {
		if int(y) == top {
			hits++
		}
	}
	return float64(hits) / float64(max(1, len(scored)))
}

// unscaled returns the largest magnitude of the training features when
// they are left unstandardised and beyond ±10, else 0.
func (a *App) unscaled() float32 {
	if a.Scaler != nil {
		return 0
	}
	var top float32
	for _, x := range a.Train.Features {
		top = max(top, x, -x)
	}
	if top <= 10 {
		return 0
	}
	return top
}

// NonFiniteAdvice names the features' scale when they are left
// unstandardised beyond ±10 (train.Advisor).
func (a *App) NonFiniteAdvice() string {
	if top := a.unscaled(); top > 0 {
		return fmt.Sprintf("the features reach %g, unstandardised: standardise them (--standardize on), or lower the learning rate", top)
	}
	return ""
}

// Causes names what in the data can keep a dense model from learning
// (train.Diagnoser): features of a large scale left unstandardised, a
// CSV table's label column, labels nearly as many as the samples.
func (a *App) Causes() []string {
	var out []string
	if top := a.unscaled(); top > 0 {
		out = append(out, fmt.Sprintf("the features' scale: they reach %g, unstandardised (--standardize on)", top))
	}
	d := a.Train
	if d.Format == dataset.FormatCSV {
		col := fmt.Sprintf("column %d of a file without a header", d.LabelCol)
		if d.LabelName != "" {
			col = fmt.Sprintf("column %d %q", d.LabelCol, d.LabelName)
		}
		out = append(out, fmt.Sprintf("the label column: the labels came from %s, %d classes (--label-col)", col, d.Classes))
	}
	if d.Classes > d.Len()/2 {
		out = append(out, fmt.Sprintf("the labels: %d classes for %d samples, as many as a column of values has", d.Classes, d.Len()))
	}
	return out
}

// MarshalBinary returns the part's state for a checkpoint
// (train.StatefulPart): the steps taken, which set the decay, then, when
// the features are standardised, their number and each feature's mean
// and standard deviation (float64 bits, little-endian).
func (p *part) MarshalBinary() ([]byte, error) {
	b := binary.LittleEndian.AppendUint64(nil, uint64(p.steps))
	if sc := p.a.Scaler; sc != nil {
		b = binary.LittleEndian.AppendUint64(b, uint64(len(sc.Mean)))
		for _, v := range append(slices.Clone(sc.Mean), sc.Std...) {
			b = binary.LittleEndian.AppendUint64(b, math.Float64bits(v))
		}
	}
	return b, nil
}

// UnmarshalBinary restores the state MarshalBinary gave, and refuses the
// state of a job whose features were standardised otherwise.
func (p *part) UnmarshalBinary(b []byte) error {
	if len(b) < 8 || binary.LittleEndian.Uint64(b) > math.MaxInt32 {
		return fmt.Errorf("dense: a part's state starts with 8 bytes of step count, got %d bytes", len(b))
	}
	steps, rest := int(binary.LittleEndian.Uint64(b)), b[8:]
	sc := p.a.Scaler
	switch {
	case sc == nil && len(rest) > 0:
		return errors.New("dense: the checkpoint's features were standardised, this job's are not (options standardize)")
	case sc != nil && len(rest) == 0:
		return errors.New("dense: the checkpoint's features were not standardised, this job's are (options standardize)")
	case sc != nil:
		d := len(sc.Mean)
		if len(rest) != 8+16*d || binary.LittleEndian.Uint64(rest) != uint64(d) {
			return fmt.Errorf("dense: the checkpoint's standardisation is not of %d features (%d bytes)", d, len(rest))
		}
		for j := range 2 * d {
			v, want := math.Float64frombits(binary.LittleEndian.Uint64(rest[8+8*j:])), sc.Mean[j%d]
			what := "mean"
			if j >= d {
				want, what = sc.Std[j-d], "standard deviation"
			}
			if v != want {
				return fmt.Errorf("dense: feature %d's %s is %v in the checkpoint's standardisation, %v in this training data's: resume on the data the checkpoint was made from", j%d, what, v, want)
			}
		}
	}
	p.steps = steps
	return nil
}
