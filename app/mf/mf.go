// Package mf is matrix factorisation on the parameter server (seed 001
// §5.5): rows are the samples, columns the keys, rating(u, i) ≈ μ + p_u·q_i
// with the column factors q_i on the servers and the row factors p_u on
// the worker that holds row u. App implements train.App; the registry
// (package app) opens it as "mf" with Config as the job's options.
//
//	a, err := mf.New(ratings, nil, mf.DefaultConfig())
package mf

import (
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"colo/app/sparse"
	"colo/graph"
	"colo/ps/worker"
	"colo/train"
)

// Config is the model of matrix factorisation.
type Config struct {
	// Rank is the length of the row and column factors, the width of a
	// key.
	Rank int `json:"rank"`
	// RowLR is the learning rate of the plain SGD steps that update the
	// row factors on the workers.
	RowLR float64 `json:"row_lr"`
	// L2 is the penalty on the row factors (the servers' update rule has
	// its own for the column factors).
	L2 float64 `json:"row_l2"`
	// HoldOut is the fraction of the entries held out for evaluation
	// when there is no test set, in [0, 1).
	HoldOut float64 `json:"holdout"`
	// Seed seeds the row factors and the choice of held-out entries; in a
	// job it is the job's seed (Config.Seed), not an option.
	Seed uint64 `json:"-"`
}

// DefaultConfig returns rank 16, a row learning rate of 0.02, L2 0.05
// and 10% of the entries held out.
func DefaultConfig() Config {
	return Config{Rank: 16, RowLR: 0.02, L2: 0.05, HoldOut: 0.1, Seed: 1}
}

// maxRank bounds Config.Rank.
const maxRank = 1 << 16

// Validate checks c; errors name the field and the bound.
func (c Config) Validate() error {
	switch {
	case c.Rank < 1 || c.Rank > maxRank:
		return fmt.Errorf("mf: rank %d, want 1..%d", c.Rank, maxRank)
	case !(c.RowLR >= 0) || math.IsInf(c.RowLR, 0):
		return fmt.Errorf("mf: row learning rate %v, want a finite value ≥ 0", c.RowLR)
	case !(c.L2 >= 0) || math.IsInf(c.L2, 0):
		return fmt.Errorf("mf: L2 %v, want a finite value ≥ 0", c.L2)
	case !(c.HoldOut >= 0 && c.HoldOut < 1):
		return fmt.Errorf("mf: hold-out fraction %v, want [0, 1)", c.HoldOut)
	}
	return nil
}

// rowInitStd is the standard deviation of the initial row factors.
const rowInitStd = 0.1

// App is matrix factorisation of a ratings graph (samples are rows,
// parameters columns, edge values ratings; see graph.ReadRatings): a
// rating is predicted as r̂(u, i) = μ + p_u·q_i, with μ the mean training
// rating. The servers hold one key per column, its factor q_i (Width =
// Rank), which starts at zero; the row factors p_u stay on the worker
// that holds row u, start from a normal(0, 0.1) stream seeded by
// (Seed, SampleID(u)), whichever machine that is, and are updated there
// by plain SGD. It implements App.
//
// Each round a worker pulls the q of its batch's columns and, for every
// rating r of a row u of the batch, in order: e = r̂(u, i) − r, adds
// scale·e·p_u to the gradient of q_i (the gradient of e²/2) and steps
// p_u −= RowLR·(e·q_i + L2·p_u) at the pulled q_i. The loss it reports
// is Σe², so that the training loss of a pass is the mean squared error.
//
// Evaluation is on held-out entries: without a test set, each entry
// (u, i) is held out with probability HoldOut, decided by a hash of
// (Seed, SampleID(u), ParamID(i)), and never trained on; with one, the
// test set's entries whose row and column the training set has.
//
// The column factors are regularised only by the servers' update rule,
// and they need it: on MovieLens 100k (10% held out, the default Config,
// full-batch rounds) SGD with learning rate 2 and L2 0.02 reaches a
// held-out RMSE of 0.93 against 1.11 for predicting μ, while AdaGrad
// without L2 overfits (1.19). AdaGrad's L2 term is not normalised by the
// small scaled gradients of rare columns and diverges.
type App struct {
	// Config is the model's configuration.
	Config Config
	// Graph is the training graph.
	Graph *graph.Graph
	// Mean is μ, the mean training rating.
	Mean float64
	// Train and Held are the training and held-out entries of each row
	// of Graph, keyed by its dense parameter ids, the ratings as values.
	Train, Held *sparse.Rows
	// Skipped is the number of entries of the test set whose row or
	// column the training set lacks.
	Skipped int
}

// New prepares matrix factorisation on train, evaluated on test, or
// on entries of train held out when test is nil. Graphs without values
// rate every entry 1.
func New(train, test *graph.Graph, cfg Config) (*App, error) {
	a, err := newApp(train, test, cfg)
	if err != nil {
		return nil, err
	}
	if len(a.Train.Val) == 0 {
		return nil, fmt.Errorf("mf: %s has no training ratings", train.Meta().Source)
	}
	var sum float64
	for _, r := range a.Train.Val {
		sum += float64(r)
	}
	a.Mean = sum / float64(len(a.Train.Val))
	return a, nil
}

// NewShare prepares matrix factorisation as New does, on share, one
// machine's share of the training graph (every row and column of the
// whole graph, with the ratings of the machine's rows alone: package
// app's ReadShare), with mean the mean training rating New computed on
// the whole graph (App.Mean), which a share cannot give. A machine's
// Part on it is bit for bit its Part on the whole graph: its rows'
// training and held-out entries, held out by the same hash, and the
// test entries matched to its rows. Only the machine's Part and
// Evaluate may be used: MeanRMSE and HeldOutRMSE see the share's
// entries alone.
func NewShare(share, test *graph.Graph, cfg Config, mean float64) (*App, error) {
	if math.IsNaN(mean) || math.IsInf(mean, 0) {
		return nil, fmt.Errorf("mf: the whole graph's mean rating %v, want a finite value", mean)
	}
	a, err := newApp(share, test, cfg)
	if err != nil {
		return nil, err
	}
	a.Mean = mean
	return a, nil
}

// newApp is New without the mean rating.
func newApp(train, test *graph.Graph, cfg Config) (*App, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	a := &App{Config: cfg, Graph: train}
	n := train.NumSamples()
	a.Train = &sparse.Rows{Off: make([]int64, 1, n+1), Class: make([]int32, n)}
	a.Held = &sparse.Rows{Off: make([]int64, 1, n+1), Class: make([]int32, n)}
	for u := range n {
		vals := train.Values(u)
		for j, v := range train.Params(u) {
			r := float32(1)
			if vals != nil {
				r = vals[j]
			}
			dst := a.Train
			if test == nil && heldOut(cfg, train.SampleID(u), train.ParamID(int(v))) {
				dst = a.Held
			}
			dst.Col = append(dst.Col, v)
			dst.Val = append(dst.Val, r)
		}
		a.Train.Off = append(a.Train.Off, int64(len(a.Train.Col)))
		a.Held.Off = append(a.Held.Off, int64(len(a.Held.Col)))
	}
	if test != nil {
		a.Held, a.Skipped = testEntries(test, train)
	}
	return a, nil
}

// heldOut reports whether the entry (row, col) (ids as in the file) is
// held out.
func heldOut(cfg Config, row, col uint64) bool {
	if cfg.HoldOut <= 0 {
		return false
	}
	h := mix64(mix64(mix64(cfg.Seed)^row) ^ col)
	return float64(h>>11)/(1<<53) < cfg.HoldOut
}

// mix64 is the finaliser of SplitMix64: a bijection of 64-bit words
// whose every output bit depends on every input bit.
func mix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// testEntries returns the entries of test as rows of train (matched by
// sample id) keyed by train's dense parameter ids (matched by parameter
// id), and the number of entries without a row or column in train.
func testEntries(test, train *graph.Graph) (*sparse.Rows, int) {
	n := train.NumSamples()
	rowOf := make(map[uint64]int32, n)
	for u := range n {
		rowOf[train.SampleID(u)] = int32(u)
	}
	keyOf := make([]int64, test.NumParams())
	for v := range keyOf {
		keyOf[v] = -1
		if k, ok := train.ParamIndex(test.ParamID(v)); ok {
			keyOf[v] = int64(k)
		}
	}
	// Collect the matched entries per training row, then lay them out.
	type entry struct {
		key uint32
		val float32
	}
	per := make([][]entry, n)
	skipped := 0
	for t := range test.NumSamples() {
		u, ok := rowOf[test.SampleID(t)]
		vals := test.Values(t)
		for j, v := range test.Params(t) {
			if !ok || keyOf[v] < 0 {
				skipped++
				continue
			}
			r := float32(1)
			if vals != nil {
				r = vals[j]
			}
			per[u] = append(per[u], entry{uint32(keyOf[v]), r})
		}
	}
	held := &sparse.Rows{Off: make([]int64, 1, n+1), Class: make([]int32, n)}
	for u := range n {
		// Test rows with the same sample id (row-numbered formats) may
		// repeat a column: both entries count.
		slices.SortStableFunc(per[u], func(x, y entry) int { return cmp.Compare(x.key, y.key) })
		for _, e := range per[u] {
			held.Col = append(held.Col, e.key)
			held.Val = append(held.Val, e.val)
		}
		held.Off = append(held.Off, int64(len(held.Col)))
	}
	return held, skipped
}

// Name returns "mf".
func (a *App) Name() string { return "mf" }

// Width returns the rank.
func (a *App) Width() int { return a.Config.Rank }

// NumSamples returns the number of rows of the training graph.
func (a *App) NumSamples() int { return a.Graph.NumSamples() }

// NumKeys returns the number of columns of the training graph.
func (a *App) NumKeys() int { return a.Graph.NumParams() }

// Part cuts the rows of one machine into batches and initialises their
// factors.
func (a *App) Part(rank int, rows []int32, batches int, seed uint64) train.Part {
	rows = slices.Clone(rows)
	slices.Sort(rows)
	R := a.Config.Rank
	p := &mfPart{
		rank: R, lr: float32(a.Config.RowLR), l2: float32(a.Config.L2), mean: a.Mean,
		rows:    rows,
		factors: make([]float32, len(rows)*R),
		batches: sparse.Batches(a.Train, rows, batches, seed^uint64(rank+1)<<32, a.NumKeys()),
		held:    sparse.Batches(a.Held, rows, 1, 0, a.NumKeys())[0],
	}
	src := rand.NewPCG(0, 0)
	rng := rand.New(src)
	for i, u := range rows {
		src.Seed(a.Config.Seed, a.Graph.SampleID(int(u)))
		for k := range R {
			p.factors[i*R+k] = float32(rowInitStd * rng.NormFloat64())
		}
	}
	p.local = make([][]int32, len(p.batches))
	for b, bt := range p.batches {
		p.local[b] = p.locals(bt)
	}
	p.heldLocal = p.locals(p.held)
	return p
}

// Evaluate computes the RMSE of the held-out entries: every worker pulls
// the column factors of its rows' held-out entries and scores them, and
// the workers sum their squared errors (one AllReduce each). Every worker
// returns the same Eval; its RMSE is nil when nothing is held out.
func (a *App) Evaluate(ctx context.Context, w *worker.Worker, part train.Part) (train.Eval, error) {
	p := part.(*mfPart)
	vals := make([]float32, len(p.held.Keys)*p.rank)
	if len(p.held.Keys) > 0 {
		if err := w.Pull(p.held.Keys, vals).Wait(); err != nil {
			return train.Eval{}, err
		}
	}
	sse, n := p.heldOutSSE(vals)
	sum, err := w.AllReduce(ctx, []float64{sse, float64(n)})
	if err != nil {
		return train.Eval{}, fmt.Errorf("summing the squared errors: %w", err)
	}
	return rmseEval(sum[0], sum[1]), nil
}

// rmseEval is the Eval of n entries with summed squared error sse.
func rmseEval(sse, n float64) train.Eval {
	e := train.Eval{On: "held-out", Samples: int(n)}
	if n > 0 {
		rmse := math.Sqrt(sse / n)
		e.RMSE = &rmse
	}
	return e
}

// HeldOutRMSE returns the RMSE of the held-out entries of parts (made by
// a.Part) at the column factors model (key k's at k·Rank, as Local
// returns them) and the number of entries (0, with RMSE 0, when none is
// held out).
func (a *App) HeldOutRMSE(parts []train.Part, model []float32) (float64, int) {
	var sse float64
	var n int
	var vals []float32
	for _, part := range parts {
		p := part.(*mfPart)
		R := p.rank
		vals = grow(vals, len(p.held.Keys)*R)
		for i, k := range p.held.Keys {
			copy(vals[i*R:(i+1)*R], model[int(k)*R:])
		}
		s, m := p.heldOutSSE(vals)
		sse, n = sse+s, n+m
	}
	if n == 0 {
		return 0, 0
	}
	return math.Sqrt(sse / float64(n)), n
}

// MeanRMSE returns the RMSE of predicting μ for every held-out entry, the
// baseline a model must beat, and the number of entries.
func (a *App) MeanRMSE() (float64, int) {
	n := len(a.Held.Val)
	if n == 0 {
		return 0, 0
	}
	var sse float64
	for _, r := range a.Held.Val {
		e := a.Mean - float64(r)
		sse += e * e
	}
	return math.Sqrt(sse / float64(n)), n
}

// mfPart is a machine's share of matrix factorisation: its rows' batches,
// factors and held-out entries.
type mfPart struct {
	rank      int
	lr, l2    float32
	mean      float64
	rows      []int32   // the machine's rows (training sample ids), sorted
	factors   []float32 // p of rows[i] at i·rank
	batches   []*sparse.Batch
	held      *sparse.Batch // the held-out entries of all rows
	local     [][]int32     // local[b][i]: index in rows of batches[b].Rows[i]
	heldLocal []int32
}

// locals returns the indices in p.rows of the rows of b.
func (p *mfPart) locals(b *sparse.Batch) []int32 {
	loc := make([]int32, len(b.Rows))
	for i, u := range b.Rows {
		j, _ := slices.BinarySearch(p.rows, u)
		loc[i] = int32(j)
	}
	return loc
}

func (p *mfPart) Batches() int          { return len(p.batches) }
func (p *mfPart) Keys(b int) train.Keys { return train.ListKeys(p.batches[b].Keys) }

// Step scores the ratings of batch b at the pulled column factors vals,
// adds the scaled gradient of half the squared errors to grad and steps
// the row factors. It returns Σe² and the number of ratings.
func (p *mfPart) Step(b int, vals, grad []float32, scale float32) (float64, int, int) {
	bt, loc, R := p.batches[b], p.local[b], p.rank
	var loss float64
	for i := range bt.Len() {
		pu := p.factors[int(loc[i])*R : int(loc[i]+1)*R]
		for j := bt.Off[i]; j < bt.Off[i+1]; j++ {
			o := int(bt.Pos[j]) * R
			q, g := vals[o:o+R], grad[o:o+R]
			e := p.mean - float64(bt.Val[j])
			for k, x := range pu {
				e += float64(x) * float64(q[k])
			}
			loss += e * e
			es, el := float32(e)*scale, float32(e)*p.lr
			for k, x := range pu {
				g[k] += es * x
				pu[k] = x - el*q[k] - p.lr*p.l2*x
			}
		}
	}
	return loss, len(bt.Val), 0
}

// heldOutSSE returns the summed squared error of the held-out entries at
// column factors vals (laid out like p.held.Keys) and their number.
func (p *mfPart) heldOutSSE(vals []float32) (float64, int) {
	bt, R := p.held, p.rank
	var sse float64
	for i := range bt.Len() {
		l := int(p.heldLocal[i])
		pu := p.factors[l*R : (l+1)*R]
		for j := bt.Off[i]; j < bt.Off[i+1]; j++ {
			q := vals[int(bt.Pos[j])*R:]
			e := p.mean - float64(bt.Val[j])
			for k, x := range pu {
				e += float64(x) * float64(q[k])
			}
			sse += e * e
		}
	}
	return sse, len(bt.Val)
}

// grow returns s resized to n, reallocated when too small.
func grow(s []float32, n int) []float32 {
	if cap(s) < n {
		return make([]float32, n)
	}
	return s[:n]
}

// Defaults sets matrix factorisation's defaults in job: SGD-like rates
// need a smaller step and the column factors an L2 penalty (learning
// rate 0.1, L2 0.05 on the servers), and DefaultConfig as the options.
func Defaults(job *train.Job) error {
	job.Config.Rule.LR, job.Config.Rule.L2 = 0.1, 0.05
	return job.SetOptions(DefaultConfig())
}

// Open builds matrix factorisation of job on the loaded training graph
// g, evaluated on test (nil: held-out entries): the job's options over
// DefaultConfig, its seed for the row factors and the held-out entries.
func Open(job train.Job, g, test *graph.Graph) (*App, error) {
	cfg, err := jobConfig(job)
	if err != nil {
		return nil, err
	}
	return New(g, test, cfg)
}

// OpenShare is Open on one machine's share of the training graph, with
// mean the whole graph's mean training rating (NewShare).
func OpenShare(job train.Job, share, test *graph.Graph, mean float64) (*App, error) {
	cfg, err := jobConfig(job)
	if err != nil {
		return nil, err
	}
	return NewShare(share, test, cfg, mean)
}

// jobConfig returns job's options over DefaultConfig, with its seed.
func jobConfig(job train.Job) (Config, error) {
	cfg := DefaultConfig()
	if err := job.DecodeOptions(&cfg); err != nil {
		return cfg, err
	}
	cfg.Seed = job.Config.Seed
	return cfg, nil
}

// MarshalBinary returns the part's state for a checkpoint
// (train.StatefulPart): its rows' factors, which Step changes.
func (p *mfPart) MarshalBinary() ([]byte, error) {
	out := make([]byte, 0, 4*len(p.factors))
	for _, v := range p.factors {
		out = binary.LittleEndian.AppendUint32(out, math.Float32bits(v))
	}
	return out, nil
}

// UnmarshalBinary restores the factors MarshalBinary gave, on a part of
// the same rows.
func (p *mfPart) UnmarshalBinary(b []byte) error {
	if len(b) != 4*len(p.factors) {
		return fmt.Errorf("mf: a part's state of %d bytes, want %d (%d rows of rank %d)", len(b), 4*len(p.factors), len(p.rows), p.rank)
	}
	for i := range p.factors {
		p.factors[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return nil
}
