// Package ctr is a click-through model on the parameter server, the shape
// of DLRM (Naumov et al., "Deep Learning Recommendation Model for
// Personalization and Recommendation Systems", 2019) and PaddlePaddle's
// CTR-DNN: one embedding table per categorical field of a table's feature
// spec (package features), the field embeddings concatenated with the
// numeric features (and, with Interactions "dot", the embeddings' pairwise
// dot products, DLRM's interaction) into an mlp (package nn) whose two
// outputs are a logistic output (P(y = 1) = σ(z₁ − z₀)). The registry
// (package app) opens it as "ctr" with Config as the job's options; it
// reads a table
// through a spec (`--spec`), as `--app lr` on a spec does, and lr over the
// same columns is its baseline.
//
// Fields. Every feature of the spec that gives a row of parameters per
// value (a category, a hash, a cross, quantile and log buckets, the parts
// of a timestamp) is a categorical field with an embedding table: its
// parameters are the table's rows, Dim values each. The standardised and
// raw columns (std(col), raw(col)) are the numeric features, whose values
// go to the mlp as they are; the spec's bias is the mlp's own. A row
// missing a field's value has a zero vector for it. A spec without a
// categorical field is refused: there would be nothing to embed.
//
// Keys. Every key holds Dim values. The embedding rows are the keys 0 …
// E−1, the training graph's parameters (the keys lr has on the same
// spec; those of numeric fields and the bias are never pulled); the mlp's
// P parameters follow as the ⌈P/Dim⌉ keys E …, its flat vector cut into
// runs of Dim. A round pulls the rows of its batch's samples (sorted) and
// every mlp key, and pushes their gradients back: the embeddings are
// pulled and pushed by row, the mlp as a whole. The servers' rule (AdaGrad
// by default, or Adam) updates both, value by value.
//
// Placement. The samples and the embedding rows are placed as lr's are on
// the spec's sample–row hypergraph (a sample is joined to the rows of its
// fields): by a partitioner (Parsa, best, random …) or a directory of colo
// partition. The mlp's keys, which every round of every machine reads, are
// spread evenly over the servers in contiguous ranges (Extend).
//
// Initial values. The servers start every key at zero and hold
// displacements from seeded initial values, which every worker and the
// evaluation add back (as app/embed and app/dense do): embedding rows
// normal with standard deviation 1/√Dim, drawn from (Seed, key); the mlp
// nn.Model.Init from Seed. L1 and L2 penalties would pull towards them
// rather than zero, so a job refuses them.
//
// Cost. A sample costs the mlp's forward and backward passes, 6·P' flops
// for the P' weights of its dense layers (the matrix products of package
// nn, on a batch at once), plus one gather and one scatter of Dim values
// per field, with lr's AVX kernels (lr.AddRows, lr.ScatterRows); the dot
// interactions add F(F−1)/2·Dim multiply-adds forward and twice that
// backward, with app/embed's kernels (embed.Dots, embed.Updates). A round
// pulls and pushes its batch's distinct rows and the mlp. On flights-3m
// (10 fields, rows of 32 values) a step computes 242,000 samples per
// second of one core (BenchmarkFlightsStep), the mlp most of it; the test
// AUC after two passes is 0.743 against lr's 0.707 (docs/ctr.md).
//
// Evaluation. Worker 0 pulls the model and scores the test rows (the
// spec's test split, or the training rows without one): the AUC, the mean
// log loss and the accuracy of z₁ > z₀, as lr reports them.
//
//	job, _ := app.DefaultJob("ctr")
//	job.Data.Train, job.Data.Load.Spec = "flights-3m.parquet", fitted
//	opened, _ := app.Open(job)
package ctr

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"

	"colo/app/embed"
	"colo/app/lr"
	"colo/app/sparse"
	"colo/features"
	"colo/graph"
	"colo/internal/datasum"
	"colo/nn"
	"colo/placement"
	"colo/ps/update"
	"colo/ps/worker"
	"colo/train"
)

// Config is the model's shape.
type Config struct {
	// Dim is the width of an embedding row, and of every key.
	Dim int `json:"dim"`
	// Hidden are the widths of the mlp's hidden layers, each followed by
	// a ReLU.
	Hidden []int `json:"hidden"`
	// Interactions is "none" (the field embeddings concatenated) or
	// "dot": DLRM's pairwise dot products of the field embeddings,
	// F(F−1)/2 of them, go into the mlp beside the embeddings.
	Interactions string `json:"interactions"`
	// Threads is the number of goroutines each worker's mlp passes run
	// on (nn.Workspace.SetThreads; 0 or 1: one); the results are the same
	// bit for bit at any setting.
	Threads int `json:"threads"`
	// Seed seeds the initial values; in a job it is the job's seed, not
	// an option.
	Seed uint64 `json:"-"`
}

// DefaultConfig returns rows of 32 values (colo train's --dim default,
// which it shares with app/embed) and hidden layers of 64 and 32. On
// flights-3m rows of 16 values train a pass in two thirds of the time to
// a test AUC 0.007 lower (docs/ctr.md).
func DefaultConfig() Config {
	return Config{Dim: 32, Hidden: []int{64, 32}, Interactions: "none", Seed: 1}
}

// Bounds of Config's fields.
const (
	maxDim     = 1 << 10
	maxHidden  = 1 << 14
	maxThreads = 256
)

// Validate checks c; errors name the option and the bound.
func (c Config) Validate() error {
	if c.Dim < 1 || c.Dim > maxDim {
		return fmt.Errorf("ctr: dim %d: want 1..%d values per embedding row", c.Dim, maxDim)
	}
	if len(c.Hidden) == 0 {
		return fmt.Errorf("ctr: hidden []: want at least one hidden layer (64,32 say)")
	}
	for i, h := range c.Hidden {
		if h < 1 || h > maxHidden {
			return fmt.Errorf("ctr: hidden[%d] %d: want 1..%d", i, h, maxHidden)
		}
	}
	if c.Interactions != "none" && c.Interactions != "dot" {
		return fmt.Errorf("ctr: interactions %q: want none (the embeddings concatenated) or dot (and their pairwise dot products)", c.Interactions)
	}
	if c.Threads < 0 || c.Threads > maxThreads {
		return fmt.Errorf("ctr: threads %d: want 0..%d", c.Threads, maxThreads)
	}
	return nil
}

// Defaults sets the model's defaults in job: AdaGrad with rate 0.05 and
// no penalty, global batches of 1,000 samples, 2 passes without the loss
// criterion, and DefaultConfig as the options. Under asynchronous and
// bounded-delay training the servers divide each push's step by the
// number of workers (update.AsyncWorkers): every push writes the whole
// mlp, and AdaGrad's steps, normalised push by push, would otherwise
// move it up to W times as far a round as BSP's one step of the summed
// pushes (on flights-3m with 8 workers the mlp's units died in 2 runs of
// 3 at rate 0.1: test AUC 0.5; docs/ctr.md).
func Defaults(job *train.Job) error {
	r := &job.Config.Rule
	r.Name, r.LR, r.L1, r.L2, r.AsyncStep = "adagrad", 0.05, 0, 0, update.AsyncWorkers.String()
	job.Config.Batch, job.Config.MaxPasses, job.Config.Epsilon = 1000, 2, 0
	return job.SetOptions(DefaultConfig())
}

// config returns the job's options over DefaultConfig with the job's
// seed, validated.
func config(job train.Job) (Config, error) {
	cfg := DefaultConfig()
	if err := job.DecodeOptions(&cfg); err != nil {
		return cfg, err
	}
	cfg.Seed = job.Config.Seed
	return cfg, cfg.Validate()
}

// kind is what the model does with a feature of the spec.
type kind int

const (
	embedded kind = iota // a categorical field: an embedding table
	numeric              // a value into the mlp
)

// kindOf returns what the model does with feature f.
func kindOf(f features.Feature) kind {
	if f.Transform == features.Standardise || f.Transform == features.Raw {
		return numeric
	}
	return embedded
}

// CheckSpec says whether a table read through sp can train the model: it
// needs a categorical field, and a label (every spec has one). The
// registry calls it before the table is read.
func CheckSpec(sp *features.Fitted) error {
	if sp == nil {
		return fmt.Errorf("ctr reads a table through a feature spec (--spec 'LABEL ~ FIELD + …', docs/ctr.md): the data has none")
	}
	for _, f := range sp.Spec.Features {
		if kindOf(f) == embedded {
			return nil
		}
	}
	names := make([]string, len(sp.Spec.Features))
	for i, f := range sp.Spec.Features {
		names[i] = f.Name()
	}
	return fmt.Errorf("ctr: spec %q has no categorical field to embed (its features %s are numeric): add a category, a cross, a hash, buckets (quantile(col)) or a part of a timestamp",
		sp.Spec.Compact(), strings.Join(names, ", "))
}

// rows are samples as the model reads them: each sample's key per
// categorical field (-1 where it has none) and its numeric values.
type rows struct {
	n     int
	keys  []int32   // n·F
	num   []float32 // n·N
	class []int32   // 0 or 1
}

// App is the click-through model on a table's training graph. It
// implements train.App, train.Scorer, train.Classifier and
// train.PlacementWriter.
type App struct {
	Config Config
	// Spec is the fitted spec the table was read with.
	Spec *features.Fitted
	// Graph is the training graph, the one the partitioners place.
	Graph *graph.Graph
	// Model is the mlp, of input F·Dim + N for F categorical fields and N
	// numeric ones.
	Model *nn.Model
	// Fields names the categorical fields, in the order of their
	// embeddings in the mlp's input; Numeric the numeric ones after them.
	Fields, Numeric []string

	labels      sparse.Labels
	train, test *rows
	emb         int       // E, the embedding keys (the graph's parameters)
	dense       int       // ⌈P/Dim⌉, the mlp's keys
	init        []float32 // the embedding rows' initial values, E·Dim
	w0          []float32 // the mlp's initial parameters
	one         []float32 // {1}, the weight of a gathered row
	pairs       int       // the pairwise dot products in the input (interactions dot)
	chunk       int       // the bytes of a pull of the evaluation; 0: train.PullChunk
}

// New builds the model cfg on the training graph g of a table read
// through sp, evaluated on test (nil: the training rows). The label must
// take two values.
func New(cfg Config, sp *features.Fitted, g, test *graph.Graph) (*App, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := CheckSpec(sp); err != nil {
		return nil, err
	}
	if g.NumSamples() == 0 {
		return nil, fmt.Errorf("ctr: %s has no training rows", g.Meta().Source)
	}
	labels, err := sparse.NewLabels(g, 2)
	if err != nil {
		return nil, fmt.Errorf("ctr predicts a binary label (a comparison such as delay > 15): %w", err)
	}
	a := &App{Config: cfg, Spec: sp, Graph: g, labels: labels, emb: g.NumParams(), one: []float32{1}}
	for _, f := range sp.Spec.Features {
		if kindOf(f) == embedded {
			a.Fields = append(a.Fields, f.Name())
		} else {
			a.Numeric = append(a.Numeric, f.Name())
		}
	}
	if cfg.Interactions == "dot" {
		a.pairs = len(a.Fields) * (len(a.Fields) - 1) / 2
	}
	in := len(a.Fields)*cfg.Dim + a.pairs + len(a.Numeric)
	a.Model, err = nn.New("mlp", nn.Config{Channels: 1, Height: 1, Width: in, Classes: 2, Hidden: cfg.Hidden})
	if err != nil {
		return nil, fmt.Errorf("ctr: %w", err)
	}
	a.dense = (a.Model.NumParams() + cfg.Dim - 1) / cfg.Dim
	if a.train, err = a.rowsOf(g, g); err != nil {
		return nil, err
	}
	if test != nil {
		if a.test, err = a.rowsOf(test, g); err != nil {
			return nil, err
		}
	}
	a.w0 = make([]float32, a.Model.NumParams())
	a.Model.Init(a.w0, rand.New(rand.NewPCG(cfg.Seed, 0x1417)))
	a.init = make([]float32, a.emb*cfg.Dim)
	std := 1 / math.Sqrt(float64(cfg.Dim))
	src := rand.NewPCG(0, 0)
	rng := rand.New(src)
	for k := range a.emb {
		src.Seed(cfg.Seed^0x2545f4914f6cdd1d, uint64(k))
		row := a.init[k*cfg.Dim : (k+1)*cfg.Dim]
		for j := range row {
			row[j] = float32(std * rng.NormFloat64())
		}
	}
	return a, nil
}

// rowsOf returns the samples of g (the training graph tr, or a test
// graph whose parameters are looked up in tr by id) as rows.
func (a *App) rowsOf(g, tr *graph.Graph) (*rows, error) {
	fields := a.Spec.Fields
	slot := make([]int, len(fields)) // a field's place among its kind's
	kinds := make([]kind, len(fields))
	var ne, nv int
	for i, f := range a.Spec.Spec.Features {
		kinds[i] = kindOf(f)
		if kinds[i] == embedded {
			slot[i], ne = ne, ne+1
		} else {
			slot[i], nv = nv, nv+1
		}
	}
	// The field of each parameter of g (−1: the bias) and its key in tr.
	fieldOf := make([]int16, g.NumParams())
	keyOf := make([]int32, g.NumParams())
	for v := range fieldOf {
		id := g.ParamID(v)
		f, _ := slices.BinarySearchFunc(fields, id, func(fd features.Field, id uint64) int {
			switch {
			case id < fd.Base:
				return 1
			case id >= fd.Base+fd.Size:
				return -1
			}
			return 0
		})
		if f == len(fields) || id < fields[f].Base || id >= fields[f].Base+fields[f].Size {
			f = -1
		}
		fieldOf[v], keyOf[v] = int16(f), -1
		if g == tr {
			keyOf[v] = int32(v)
		} else if k, ok := tr.ParamIndex(id); ok {
			keyOf[v] = int32(k)
		}
	}
	n := g.NumSamples()
	r := &rows{n: n, keys: make([]int32, n*ne), num: make([]float32, n*nv), class: make([]int32, n)}
	for i := range r.keys {
		r.keys[i] = -1
	}
	for u := range n {
		c, ok := a.labels.Index(g.Label(u))
		if !ok {
			return nil, fmt.Errorf("ctr: %s: row %d: label %v does not occur in the training rows of %s", g.Meta().Source, u, g.Label(u), tr.Meta().Source)
		}
		r.class[u] = int32(c)
		vals := g.Values(u)
		for j, v := range g.Params(u) {
			f := fieldOf[v]
			if f < 0 {
				continue
			}
			if kinds[f] == embedded {
				r.keys[u*ne+slot[f]] = keyOf[v]
				continue
			}
			x := float32(1)
			if vals != nil {
				x = vals[j]
			}
			r.num[u*nv+slot[f]] = x
		}
	}
	return r, nil
}

// Name returns "ctr".
func (a *App) Name() string { return "ctr" }

// Width returns Dim.
func (a *App) Width() int { return a.Config.Dim }

// NumSamples returns the number of training rows.
func (a *App) NumSamples() int { return a.train.n }

// NumKeys returns the embedding rows and the mlp's keys.
func (a *App) NumKeys() int { return a.emb + a.dense }

// EmbeddingKeys returns E, the number of embedding keys (the training
// graph's parameters); the mlp's keys follow.
func (a *App) EmbeddingKeys() int { return a.emb }

// Initial returns the initial values the servers' displacements are
// relative to, laid out as the keys: the embedding rows, then the mlp
// (the last key padded with zeros).
func (a *App) Initial() []float32 {
	out := make([]float32, a.NumKeys()*a.Config.Dim)
	copy(out, a.init)
	copy(out[a.emb*a.Config.Dim:], a.w0)
	return out
}

// Extend returns p, a placement of the training graph's samples and
// parameters, with the mlp's keys after the embedding rows spread evenly
// over servers servers, in contiguous ranges.
func (a *App) Extend(p *placement.Placement, servers int) (*placement.Placement, error) {
	if len(p.Param) != a.emb || len(p.Data) != a.NumSamples() {
		return nil, fmt.Errorf("ctr: a placement of %d samples and %d parameters, the training graph has %d and %d", len(p.Data), len(p.Param), a.NumSamples(), a.emb)
	}
	if servers < 1 {
		return nil, fmt.Errorf("ctr: %d servers: want at least 1", servers)
	}
	q := &placement.Placement{K: p.K, Data: p.Data, Param: make([]int32, a.NumKeys())}
	copy(q.Param, p.Param)
	for j := range a.dense {
		q.Param[a.emb+j] = int32(int64(j) * int64(servers) / int64(a.dense))
	}
	return q, nil
}

// WritePlacement writes the part of p that places the training graph
// (the mlp's keys are spread by Extend in every process) as a directory
// of colo partition, which places the job the same way in another
// process (train.PlacementWriter).
func (a *App) WritePlacement(dir string, job train.Job, p *placement.Placement) error {
	if len(p.Param) != a.NumKeys() {
		return fmt.Errorf("ctr: a placement of %d keys, the model has %d", len(p.Param), a.NumKeys())
	}
	summary := map[string]any{"placement": job.Placement, "machines": p.K}
	if job.Data.Checksum != "" {
		summary[datasum.SummaryField] = job.Data.Checksum
	}
	return placement.WriteDir(dir, a.Graph, &placement.Placement{K: p.K, Data: p.Data, Param: p.Param[:a.emb]}, summary)
}

// GraphPlacement returns the part of p, a placement of the model's keys,
// that places the training graph: its samples and embedding rows.
func (a *App) GraphPlacement(p *placement.Placement) *placement.Placement {
	return &placement.Placement{K: p.K, Data: p.Data, Param: p.Param[:min(len(p.Param), a.emb)]}
}

// Part cuts machine rank's rows into batches in an order drawn from
// seed.
func (a *App) Part(rank int, rows []int32, batches int, seed uint64) train.Part {
	p := &part{a: a, batches: a.batches(rows, batches, seed^uint64(rank+1)<<32), at: make([]int32, a.emb)}
	most := 1
	for _, b := range p.batches {
		most = max(most, len(b.rows))
	}
	in := a.Model.InputDim()
	p.ws, p.sc = a.Model.NewWorkspace(most), a.newScratch()
	p.ws.SetThreads(a.Config.Threads)
	p.x, p.dx = make([]float32, most*in), make([]float32, most*in)
	p.y, p.pos = make([]int32, most), make([]int32, most*len(a.Fields))
	return p
}

// batch is one round's rows of a machine and the keys they read: the
// sorted embedding rows of their fields, then the mlp's keys.
type batch struct {
	rows []int32
	keys []uint64
}

// batches cuts rows into nb batches of nearly equal size, in a random
// order drawn from seed (in order for one batch), each sorted, with its
// keys.
func (a *App) batches(rows []int32, nb int, seed uint64) []*batch {
	order := slices.Clone(rows)
	if nb > 1 {
		rng := placement.NewRand(seed)
		rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	}
	seen := make([]bool, a.emb)
	F := len(a.Fields)
	out := make([]*batch, nb)
	for bi := range nb {
		b := &batch{rows: slices.Clone(order[bi*len(order)/nb : (bi+1)*len(order)/nb])}
		slices.Sort(b.rows)
		for _, u := range b.rows {
			for _, k := range a.train.keys[int(u)*F : int(u+1)*F] {
				if k >= 0 && !seen[k] {
					seen[k] = true
					b.keys = append(b.keys, uint64(k))
				}
			}
		}
		slices.Sort(b.keys)
		for _, k := range b.keys {
			seen[k] = false
		}
		for j := range a.dense {
			b.keys = append(b.keys, uint64(a.emb+j))
		}
		out[bi] = b
	}
	return out
}

// part is a machine's share of the model.
type part struct {
	a       *App
	batches []*batch
	ws      *nn.Workspace
	at      []int32 // position of an embedding key in the current batch's keys
	sc      *scratch
	x, dx   []float32
	y, pos  []int32
}

func (p *part) Batches() int { return len(p.batches) }

func (p *part) Keys(b int) train.Keys { return train.ListKeys(p.batches[b].keys) }

// Step adds the initial values to the pulled displacements vals, runs
// the model on batch b and adds scale times the gradient of its summed
// log loss to grad: the mlp's from nn, the embedding rows' scattered
// from the gradient of the mlp's input.
func (p *part) Step(b int, vals, grad []float32, scale float32) (float64, int, int) {
	a, bt := p.a, p.batches[b]
	d := a.Config.Dim
	ne := len(bt.keys) - a.dense
	if len(vals) != len(bt.keys)*d {
		panic(fmt.Sprintf("ctr: batch %d: %d values pulled, want %d keys of %d", b, len(vals), len(bt.keys), d))
	}
	for i, k := range bt.keys[:ne] {
		row, init := vals[i*d:(i+1)*d], a.init[int(k)*d:int(k+1)*d]
		for j := range row {
			row[j] += init[j]
		}
		p.at[k] = int32(i)
	}
	P := a.Model.NumParams()
	params, gparams := vals[ne*d:ne*d+P], grad[ne*d:ne*d+P]
	for i, v := range a.w0 {
		params[i] += v
	}
	n := len(bt.rows)
	if n == 0 {
		return 0, 0, 0
	}
	emb, gemb := vals[:ne*d], grad[:ne*d]
	F, in := len(a.Fields), a.Model.InputDim()
	x, dx, pos := p.x[:n*in], p.dx[:n*in], p.pos[:n*F]
	for i, u := range bt.rows {
		for f, k := range a.train.keys[int(u)*F : int(u+1)*F] {
			pos[i*F+f] = -1
			if k >= 0 {
				pos[i*F+f] = p.at[k]
			}
		}
		a.gather(x[i*in:(i+1)*in], emb, pos[i*F:(i+1)*F], a.train, int(u), p.sc)
		p.y[i] = a.train.class[u]
	}
	loss, correct := a.Model.LossGradInput(params, x, p.y[:n], n, gparams, dx, scale, p.ws)
	sc := []float32{scale}
	for i := range n {
		if a.pairs > 0 {
			a.backDots(x[i*in:(i+1)*in], dx[i*in:(i+1)*in], F, p.sc)
		}
		for f := range F {
			if q := pos[i*F+f]; q >= 0 {
				lr.ScatterRows(gemb, dx[i*in+f*d:i*in+(f+1)*d], pos[i*F+f:i*F+f+1], sc)
			}
		}
	}
	return loss, n, correct
}

// gather writes the input of row u of r to x: the embedding rows of emb
// (Dim values each) at positions pos, a zero vector for −1, then the
// numeric values.
func (a *App) gather(x, emb []float32, pos []int32, r *rows, u int, sc *scratch) {
	d := a.Config.Dim
	for f, q := range pos {
		dst := x[f*d : (f+1)*d]
		if q < 0 {
			clear(dst)
			continue
		}
		lr.AddRows(dst, emb, pos[f:f+1], a.one)
	}
	F, N := len(pos), len(a.Numeric)
	if a.pairs > 0 {
		// The dots of e_i with e_{i+1} … e_{F−1}: embed's scores of u·e
		// and e·v with u = v = e_i, the even ones read.
		emb, dots := x[:F*d], x[F*d:F*d+a.pairs]
		k := 0
		for i := 0; i+1 < F; i++ {
			ei := emb[i*d : (i+1)*d]
			embed.Dots(emb, d, sc.idx[i+1:F], ei, ei, sc.s)
			for j := range F - 1 - i {
				dots[k] = sc.s[2*j]
				k++
			}
		}
	}
	copy(x[F*d+a.pairs:], r.num[u*N:(u+1)*N])
}

// scratch is what the gather and the dot interactions of one goroutine
// work in.
type scratch struct {
	idx  []int32   // 0 … F−1, the fields as rows of an input
	s, c []float32 // 2·F scores and coefficients
	gv   []float32 // Dim values embed.Updates adds nothing to
}

// newScratch returns the scratch space of a goroutine.
func (a *App) newScratch() *scratch {
	F := len(a.Fields)
	sc := &scratch{idx: make([]int32, F), s: make([]float32, 2*F), c: make([]float32, 2*F), gv: make([]float32, a.Config.Dim)}
	for i := range sc.idx {
		sc.idx[i] = int32(i)
	}
	return sc
}

// backDots adds to the gradient of the embeddings in dx (the first F·Dim
// values of a row's input gradient) what reaches them through the
// pairwise dot products of the row's input x: ∂/∂e_i of g_ij·(e_i·e_j)
// is g_ij·e_j, and ∂/∂e_j is g_ij·e_i. embed.Updates with u = e_i, c₁ =
// g_ij and c₂ = 0 adds both.
func (a *App) backDots(x, dx []float32, F int, sc *scratch) {
	d := a.Config.Dim
	emb, gemb, g := x[:F*d], dx[:F*d], dx[F*d:F*d+a.pairs]
	k := 0
	for i := 0; i+1 < F; i++ {
		ei, gi := emb[i*d:(i+1)*d], gemb[i*d:(i+1)*d]
		m := F - 1 - i
		for j := range m {
			sc.c[2*j], sc.c[2*j+1] = g[k+j], 0
		}
		embed.Updates(emb, gemb, d, sc.idx[i+1:F], sc.c, ei, ei, gi, sc.gv)
		k += m
	}
}

// Evaluate pulls the model on worker 0 and scores the test rows (the
// training rows without a test split); other workers return nothing.
func (a *App) Evaluate(ctx context.Context, w *worker.Worker, _ train.Part) (train.Eval, error) {
	if w.Rank() != 0 {
		return train.Eval{}, nil
	}
	model, err := a.pullModel(w)
	if err != nil {
		return train.Eval{}, err
	}
	return a.ScoreModel(model), nil
}

// pullModel pulls every key's values on w (train.PullModel; a.chunk,
// when set, bounds the bytes of a pull instead of train.PullChunk).
func (a *App) pullModel(w *worker.Worker) ([]float32, error) {
	model, err := train.PullModelIn(w, a.NumKeys(), cmp.Or(a.chunk, train.PullChunk))
	if err != nil {
		return nil, fmt.Errorf("ctr: %w", err)
	}
	return model, nil
}

// ScoreModel scores the model whose displacements from the initial
// values the servers hold, vals (key k's at k·Dim), on the test rows (the
// training rows without them): a train.Scorer. It adds the initial
// values to vals in place.
func (a *App) ScoreModel(vals []float32) train.Eval {
	d := a.Config.Dim
	for i, v := range a.init {
		vals[i] += v
	}
	params := vals[a.emb*d : a.emb*d+a.Model.NumParams()]
	for i, v := range a.w0 {
		params[i] += v
	}
	r, on := a.test, "test"
	if r == nil {
		r, on = a.train, "train"
	}
	return a.Score(vals[:a.emb*d], params, r, on)
}

// evalBatch is the number of rows the evaluation runs the mlp on at once.
const evalBatch = 4096

// Score scores the model of embedding rows emb (key k's at k·Dim) and
// mlp parameters params on r: AUC, mean log loss and accuracy.
func (a *App) Score(emb, params []float32, r *rows, on string) train.Eval {
	ev := train.Eval{On: on, Samples: r.n}
	if r.n == 0 {
		return ev
	}
	F, in := len(a.Fields), a.Model.InputDim()
	ws := a.Model.NewWorkspace(evalBatch)
	ws.SetThreads(a.Config.Threads)
	x := make([]float32, evalBatch*in)
	sc := a.newScratch()
	scores := make([]float64, r.n)
	pos := make([]bool, r.n)
	var loss float64
	var correct int
	for s := 0; s < r.n; s += evalBatch {
		n := min(evalBatch, r.n-s)
		for i := range n {
			u := s + i
			a.gather(x[i*in:(i+1)*in], emb, r.keys[u*F:(u+1)*F], r, u, sc)
		}
		z := a.Model.Logits(params, x[:n*in], n, ws)
		for i := range n {
			u := s + i
			m := float64(z[2*i+1]) - float64(z[2*i])
			y := r.class[u] == 1
			scores[u], pos[u] = m, y
			loss += logLoss(m, y)
			if (m > 0) == y {
				correct++
			}
		}
	}
	acc, ll, auc := float64(correct)/float64(r.n), loss/float64(r.n), lr.AUC(scores, pos)
	ev.Accuracy, ev.LogLoss = &acc, &ll
	if !math.IsNaN(auc) {
		ev.AUC = &auc
	}
	return ev
}

// logLoss returns −log P(y | m) for the margin m = z₁ − z₀, stably.
func logLoss(m float64, y bool) float64 {
	if !y {
		m = -m
	}
	if m > 0 {
		return math.Log1p(math.Exp(-m))
	}
	return -m + math.Log1p(math.Exp(m))
}

// Classes returns 2 (train.Classifier).
func (a *App) Classes() int { return 2 }

// Chance returns the accuracy, on the rows Evaluate scores, of always
// answering the training rows' most frequent class (train.Classifier).
func (a *App) Chance() float64 {
	var ones int
	for _, c := range a.train.class {
		ones += int(c)
	}
	top := int32(0)
	if 2*ones > a.train.n {
		top = 1
	}
	r := a.test
	if r == nil {
		r = a.train
	}
	hits := 0
	for _, c := range r.class {
		if c == top {
			hits++
		}
	}
	return float64(hits) / float64(max(1, r.n))
}

// Open builds the model of job on the training graph g of the job's table
// and its test graph (nil: the training rows), with the job's options over
// DefaultConfig and its seed. The servers' L1 and L2 penalties are
// refused: they would pull towards the initial values.
func Open(job train.Job, g, test *graph.Graph) (*App, error) {
	cfg, err := config(job)
	if err != nil {
		return nil, err
	}
	if r := job.Config.Rule; r.L1 != 0 || r.L2 != 0 {
		return nil, fmt.Errorf("ctr: rule.l1 %v and rule.l2 %v (--l1, --l2): want 0, the servers hold displacements from the initial values", r.L1, r.L2)
	}
	return New(cfg, job.Data.Load.Spec, g, test)
}
