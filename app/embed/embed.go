// Package embed trains node embeddings of a graph for link prediction on
// the parameter server, as PyTorch-BigGraph does (Lerer et al., "PyTorch-
// BigGraph: A Large-scale Graph Embedding System", SysML 2019): one vector
// of Dim values per node, the servers' keys, trained so that the dot
// product of two nodes' vectors scores high for an edge and low for a
// pair drawn at random. The registry (package app) opens it as "embed"
// with Config as the job's options.
//
// The placement problem is the one of the other sparse applications. A
// sample is an edge {u, v} of the graph; its keys are u and v. The
// sample–parameter graph handed to the partitioners (App.Graph) has one
// sample per edge joined to its two nodes, so a placement puts each edge
// on a machine and each node's vector on a server, and Parsa's T_max and
// T_sum count the vectors a round moves between machines. On graphs with
// communities that is where placement pays most: ego-Facebook at k = 8
// has T_max 5,861 under random placement and 743 under Parsa.
//
// The model. With e_x the vector of node x and an edge (u, v) of a batch
// with its M = K + U negative nodes n_1 … n_M, the loss of the edge is
//
//	ℓ(u, v) = softplus(−e_u·e_v) + 1/(2M) Σ_m [softplus(e_u·e_{n_m}) + softplus(e_{n_m}·e_v)]
//
// with softplus(x) = log(1 + eˣ): the logistic loss of the positive pair
// and of the pairs that replace either end by a negative (a negative that
// is u or v itself is skipped). The engine scales the gradient by
// Batches/Samples, so that the servers' rule (AdaGrad by default) applies
// the gradient of the mean loss of the round's edges.
//
// Negatives. PyTorch-BigGraph draws negatives inside the partition it
// trains, so that negative sampling does not need vectors from anywhere
// else, and mixes batch negatives with uniform ones. Here every edge
// draws its own negatives (with replacement): K among the distinct nodes
// of its batch's edges, which add no key to a round (with full-batch
// rounds, all the nodes the machine's edges touch), and U from the
// round's uniform pool, P nodes that each machine draws uniformly from
// all nodes once per round and pulls and pushes with the batch's keys:
// at most P keys more, remote ones whatever the placement. The batch
// negatives follow the placement: the better it gathers a community on a
// machine, the more they come from that community. The pool's do not,
// and drawing each edge's own from a pool of P, rather than sharing a
// batch's among its edges, lets a node whose edges are all on one machine
// meet as many different negatives as one whose edges are spread over
// all of them. The draws come from streams seeded by the job's seed, the
// machine and the round. The evaluation uses uniform negatives, so that
// placements are compared on the same test.
//
// Initial values. The servers start every key at zero and hold each
// vector's displacement from its seeded initial value e⁰_x (normal, mean
// 0, standard deviation 1/√Dim, drawn from (Seed, node id) so that it is
// the same whichever machine needs it), which every worker and the
// evaluation add back. L1 and L2 penalties of the servers would pull
// towards e⁰ rather than zero, so a job refuses them.
//
// Data. The training file is a SNAP edge list (`u v` per line, '#'
// comments, compressed or not). Edges are undirected: (u, v) and (v, u)
// are the same edge, kept once, and self-loops are dropped. Without a
// test file a fraction HoldOut of the edges is held out, each decided by
// a hash of (Seed, u, v); a held-out edge with a node that no training
// edge has is trained on instead, so that every node has a learnt vector.
// A test file is an edge list whose nodes must all be nodes of the
// training graph.
//
// Evaluation is link ranking. For every held-out edge (u, v), worker 0
// draws EvalNegatives nodes uniformly from all nodes (seeded by the
// edge, not by the placement) and ranks the edge's score among e_u·e_n
// and, separately, among e_n·e_v (negatives equal to u or v skipped). The
// Eval has the mean reciprocal rank (test_mrr; ties count half) and the
// AUC, the fraction of negatives that score below the edge (test_auc),
// both averaged over the edges and the two sides.
//
// Cost. A round of B edges computes (1 + 2M)·B dot products of Dim
// values and as many gradient updates: O(B·M·Dim) time, whatever P. The evaluation
// is O(H·EvalNegatives·Dim) for H held-out edges.
//
//	job, _ := app.DefaultJob("embed")
//	job.Data.Train = "soc-Slashdot0902.txt.gz"
//	opened, _ := app.Open(job) // embed.Load and embed.Open
package embed

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

// Config is the model of node embeddings.
type Config struct {
	// Dim is the length of a node's vector, the width of a key.
	Dim int `json:"dim"`
	// Negatives is K, the negatives each edge draws among the nodes of
	// its batch's edges. K + U is at least 1.
	Negatives int `json:"negatives"`
	// UniformNegatives is U, the negatives each edge draws from its
	// round's uniform pool, besides the K.
	UniformNegatives int `json:"uniform_negatives"`
	// UniformPool is P, the nodes each round draws uniformly from all
	// nodes and pulls with its keys, the pool of the uniform negatives.
	UniformPool int `json:"uniform_pool"`
	// HoldOut is the fraction of the edges held out for evaluation when
	// there is no test file, in [0, 1).
	HoldOut float64 `json:"holdout"`
	// EvalNegatives is the number of uniform negatives each held-out edge
	// is ranked against.
	EvalNegatives int `json:"eval_negatives"`
	// Seed seeds the initial vectors, the held-out edges and the
	// negatives; in a job it is the job's seed (Config.Seed), not an
	// option.
	Seed uint64 `json:"-"`
}

// DefaultConfig returns vectors of 32 values, 10 uniform negatives per
// edge from a pool of 1,000 nodes per machine and round and no batch
// negatives, 5% of the edges held out and ranked against 100 negatives
// each. Batch negatives (K > 0), or a smaller pool, make a placement that
// gathers communities score lower on held-out edges than random
// placement (docs/embed.md has the measurements).
func DefaultConfig() Config {
	return Config{Dim: 32, Negatives: 0, UniformNegatives: 10, UniformPool: 1000, HoldOut: 0.05, EvalNegatives: 100, Seed: 1}
}

// Bounds of Config's fields.
const (
	maxDim       = 1 << 12
	maxNegatives = 1 << 16
	maxPool      = 1 << 24
)

// Validate checks c; errors name the option (and the flag) and the bound.
func (c Config) Validate() error {
	switch {
	case c.Dim < 1 || c.Dim > maxDim:
		return fmt.Errorf("embed: dim %d (--dim): want 1..%d values per node", c.Dim, maxDim)
	case c.Negatives < 0 || c.Negatives > maxNegatives:
		return fmt.Errorf("embed: negatives %d (--negatives): want 0..%d per edge", c.Negatives, maxNegatives)
	case c.UniformNegatives < 0 || c.UniformNegatives > maxNegatives:
		return fmt.Errorf("embed: uniform_negatives %d (--uniform-negatives): want 0..%d per edge", c.UniformNegatives, maxNegatives)
	case c.Negatives+c.UniformNegatives == 0:
		return fmt.Errorf("embed: negatives 0 and uniform_negatives 0 (--negatives, --uniform-negatives): want at least one negative per edge")
	case c.UniformPool < 0 || c.UniformPool > maxPool:
		return fmt.Errorf("embed: uniform_pool %d (--uniform-pool): want 0..%d nodes per round", c.UniformPool, maxPool)
	case c.UniformNegatives > 0 && c.UniformPool == 0:
		return fmt.Errorf("embed: uniform_negatives %d with uniform_pool 0 (--uniform-negatives, --uniform-pool): the uniform negatives need a pool of at least one node per round", c.UniformNegatives)
	case c.UniformNegatives == 0 && c.UniformPool > 0:
		return fmt.Errorf("embed: uniform_pool %d with uniform_negatives 0 (--uniform-pool, --uniform-negatives): a pool no edge draws from would only add keys", c.UniformPool)
	case !(c.HoldOut >= 0 && c.HoldOut < 1):
		return fmt.Errorf("embed: holdout %v (--holdout): want a fraction of the edges in [0, 1)", c.HoldOut)
	case c.EvalNegatives < 1 || c.EvalNegatives > maxNegatives:
		return fmt.Errorf("embed: eval_negatives %d: want 1..%d per held-out edge", c.EvalNegatives, maxNegatives)
	}
	return nil
}

// Pair is an undirected edge between node ids (as in the file), U < V.
type Pair struct{ U, V uint64 }

// Pairs returns the undirected edges of a graph read from a SNAP edge
// list (sample u's parameters are the targets of node SampleID(u)):
// sorted, each once, without self-loops, and the number of self-loops
// dropped.
func Pairs(g *graph.Graph) ([]Pair, int) {
	pairs := make([]Pair, 0, g.NumEdges())
	loops := 0
	for u := range g.NumSamples() {
		a := g.SampleID(u)
		for _, v := range g.Params(u) {
			b := g.ParamID(int(v))
			switch {
			case a == b:
				loops++
			case a < b:
				pairs = append(pairs, Pair{a, b})
			default:
				pairs = append(pairs, Pair{b, a})
			}
		}
	}
	slices.SortFunc(pairs, func(x, y Pair) int { return cmp.Or(cmp.Compare(x.U, y.U), cmp.Compare(x.V, y.V)) })
	return slices.Compact(pairs), loops
}

// EdgeGraph returns the sample–parameter graph of pairs: sample i is
// pairs[i], joined to its two nodes, whose parameter ids are the node
// ids. source names the file in the graph's Meta.
func EdgeGraph(pairs []Pair, source string) (*graph.Graph, error) {
	b := graph.NewBuilder(graph.Meta{Format: "edges", Source: source})
	ids := make([]uint64, 2)
	for _, p := range pairs {
		if p.U == p.V {
			return nil, fmt.Errorf("embed: %s: self-loop %d–%d is not an edge to train on", source, p.U, p.V)
		}
		ids[0], ids[1] = p.U, p.V
		if err := b.AddSample(0, ids, nil); err != nil {
			return nil, fmt.Errorf("embed: %s: edge %d–%d: %w", source, p.U, p.V, err)
		}
	}
	return b.Build()
}

// Split returns the edges of pairs to train on and those held out: each
// held out with probability holdOut, decided by a hash of (seed, U, V),
// except that an edge with a node no training edge has is trained on.
func Split(pairs []Pair, holdOut float64, seed uint64) (trainPairs, held []Pair) {
	if holdOut <= 0 {
		return slices.Clone(pairs), nil
	}
	seen := map[uint64]bool{}
	var maybe []Pair
	for _, p := range pairs {
		if heldOut(p, holdOut, seed) {
			maybe = append(maybe, p)
			continue
		}
		trainPairs = append(trainPairs, p)
		seen[p.U], seen[p.V] = true, true
	}
	moved := false
	for _, p := range maybe {
		if seen[p.U] && seen[p.V] {
			held = append(held, p)
			continue
		}
		trainPairs = append(trainPairs, p)
		seen[p.U], seen[p.V] = true, true
		moved = true
	}
	if moved {
		slices.SortFunc(trainPairs, func(x, y Pair) int { return cmp.Or(cmp.Compare(x.U, y.U), cmp.Compare(x.V, y.V)) })
	}
	return trainPairs, held
}

// heldOut reports whether edge p is held out.
func heldOut(p Pair, holdOut float64, seed uint64) bool {
	h := mix64(mix64(mix64(seed^0x6a09e667f3bcc909)^p.U) ^ p.V)
	return float64(h>>11)/(1<<53) < holdOut
}

// mix64 is the finaliser of SplitMix64: a bijection of 64-bit words
// whose every output bit depends on every input bit.
func mix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// Load reads the edge list of job's training file (and of its test file,
// when it names one) and returns the sample–parameter graphs of the
// edges to train on and of those to evaluate on: the test file's, or the
// held-out ones (Split with the job's holdout and seed). The format is
// SNAP (data.load.format empty, snap or snap-undirected, which mean the
// same here). A file without an edge (self-loops aside) is an error
// naming it.
func Load(job train.Job) (trainG, testG *graph.Graph, err error) {
	cfg, err := config(job)
	if err != nil {
		return nil, nil, err
	}
	opt := job.Data.Load.Graph()
	switch opt.Format {
	case graph.FormatAuto:
		opt.Format = graph.FormatSNAP
	case graph.FormatSNAP, graph.FormatSNAPUndirected:
	default:
		return nil, nil, fmt.Errorf("embed: data.load.format %q (--format): want snap, an edge list \"u v\" per line", opt.Format)
	}
	read := func(path string) ([]Pair, error) {
		g, err := graph.Load(path, opt)
		if err != nil {
			return nil, err
		}
		pairs, _ := Pairs(g)
		if len(pairs) == 0 {
			return nil, fmt.Errorf("embed: %s has no edges between two different nodes: nothing to embed", path)
		}
		return pairs, nil
	}
	pairs, err := read(job.Data.Train)
	if err != nil {
		return nil, nil, err
	}
	var held []Pair
	if job.Data.Test != "" {
		if held, err = read(job.Data.Test); err != nil {
			return nil, nil, err
		}
	} else {
		pairs, held = Split(pairs, cfg.HoldOut, cfg.Seed)
	}
	if trainG, err = EdgeGraph(pairs, job.Data.Train); err != nil {
		return nil, nil, err
	}
	testName := job.Data.Test
	if testName == "" {
		testName = job.Data.Train + " (held out)"
	}
	if testG, err = EdgeGraph(held, testName); err != nil {
		return nil, nil, err
	}
	return trainG, testG, nil
}

// App is node embeddings of the graph whose edges are the samples of
// Graph (EdgeGraph: sample i joined to its two nodes, the parameters,
// whose ids are the node ids). It implements train.App and train.Scorer.
type App struct {
	// Config is the model's configuration.
	Config Config
	// Graph is the training edges' sample–parameter graph, the one the
	// partitioners place.
	Graph *graph.Graph
	// Edges are the training edges as rows of two keys.
	Edges *sparse.Rows
	// Held are the edges evaluated on, as pairs of keys (U < V by node
	// id).
	Held [][2]uint32
	// Init are the initial vectors e⁰, key k's at k·Dim.
	Init []float32
}

// New prepares node embeddings trained on the edges of trainG (made by
// EdgeGraph) and evaluated on those of test (nil: none). A node of test
// that trainG lacks is an error naming both graphs' sources.
func New(trainG, test *graph.Graph, cfg Config) (*App, error) {
	return newEmbed(trainG, test, cfg, false)
}

// NewShare prepares node embeddings as New does on share, one machine's
// share of the training graph (every edge and node of the whole graph,
// the edges of the other machines without their nodes: package app's
// ReadShare). Nothing of the model depends on the edges of other
// machines (the initial vectors are drawn from the nodes' ids, the
// negatives from the nodes of the machine's batches and from all
// nodes), so a machine's Part on it trains as its Part on the whole
// graph, bit for bit, and the held-out edges are those of test.
func NewShare(share, test *graph.Graph, cfg Config) (*App, error) {
	return newEmbed(share, test, cfg, true)
}

// newEmbed is New, or NewShare with share, where an edge without nodes is
// another machine's.
func newEmbed(trainG, test *graph.Graph, cfg Config, share bool) (*App, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	n := trainG.NumSamples()
	if n == 0 {
		return nil, fmt.Errorf("embed: %s has no edges to train on", trainG.Meta().Source)
	}
	for u := range n {
		if d := trainG.SampleDegree(u); d != 2 && !(share && d == 0) {
			return nil, fmt.Errorf("embed: %s: sample %d has %d nodes, want an edge between two different nodes", trainG.Meta().Source, u, trainG.SampleDegree(u))
		}
	}
	a := &App{Config: cfg, Graph: trainG}
	a.Edges = &sparse.Rows{Off: trainG.SampleOffsets(), Col: trainG.SampleAdjacency(), Val: make([]float32, trainG.NumEdges()), Class: make([]int32, n)}
	if test != nil {
		for t := range test.NumSamples() {
			var e [2]uint32
			params := test.Params(t)
			if len(params) != 2 {
				return nil, fmt.Errorf("embed: %s: sample %d has %d nodes, want an edge between two different nodes", test.Meta().Source, t, len(params))
			}
			for i, v := range params {
				id := test.ParamID(int(v))
				k, ok := trainG.ParamIndex(id)
				if !ok {
					return nil, fmt.Errorf("embed: %s: edge %d–%d: node %d is not a node of the training graph %s (%d nodes)",
						test.Meta().Source, test.ParamID(int(params[0])), test.ParamID(int(params[1])), id, trainG.Meta().Source, trainG.NumParams())
				}
				e[i] = uint32(k)
			}
			a.Held = append(a.Held, e)
		}
	}
	d := cfg.Dim
	a.Init = make([]float32, trainG.NumParams()*d)
	src := rand.NewPCG(0, 0)
	rng := rand.New(src)
	std := 1 / math.Sqrt(float64(d))
	for k := range trainG.NumParams() {
		src.Seed(cfg.Seed^0x5be0cd19137e2179, trainG.ParamID(k))
		for j := range d {
			a.Init[k*d+j] = float32(std * rng.NormFloat64())
		}
	}
	return a, nil
}

// Name returns "embed".
func (a *App) Name() string { return "embed" }

// Width returns Dim.
func (a *App) Width() int { return a.Config.Dim }

// NumSamples returns the number of training edges.
func (a *App) NumSamples() int { return a.Graph.NumSamples() }

// NumKeys returns the number of nodes of the training graph.
func (a *App) NumKeys() int { return a.Graph.NumParams() }

// Part cuts the edges of one machine into batches; the negatives it
// draws come from streams seeded by (seed, rank, round).
func (a *App) Part(rank int, rows []int32, batches int, seed uint64) train.Part {
	return &part{
		a:       a,
		rank:    uint64(rank),
		seed:    seed,
		batches: sparse.Batches(a.Edges, rows, batches, seed^uint64(rank+1)<<32, a.NumKeys()),
	}
}

// part is a machine's share of node embeddings.
//
// A round's draws are functions of (seed, rank, round): the uniform
// pool, which Keys adds to the batch's keys, and every edge's negatives,
// which Step draws. The part counts the rounds as the engine
// asks for them: Keys is called once per round and Step once per round,
// each in the order of the rounds (Loop may ask for the keys of the next
// round before the current round's Step), so the n-th call of either is
// round n. A checkpoint saves the count (MarshalBinary), so that a
// resumed job draws what it would have drawn.
type part struct {
	a       *App
	rank    uint64
	seed    uint64
	batches []*sparse.Batch
	keyed   int // rounds whose keys were asked for
	stepped int // rounds stepped
	// recent are the last two rounds' keys, by round mod 2: Loop has at
	// most two rounds in flight.
	recent [2]*round
	neg    []int32 // the current round's negatives, positions in its keys, K + U per edge
}

// round is what a round of batch b pulls: the batch's keys and its
// uniform pool, merged and sorted, with the batch's edges and the pool
// as positions in them.
type round struct {
	r, b int
	keys []uint64
	pos  []int32 // the edges' ends, pairs of positions in keys
	at   []int32 // position in keys of the batch's i-th key; nil: i itself
	pool []int32 // the uniform pool's positions, one per draw
}

func (p *part) Batches() int { return len(p.batches) }

// Keys returns the keys of the next round, batch b: the nodes of the
// batch's edges and the round's uniform pool.
func (p *part) Keys(b int) train.Keys {
	r := p.keyed
	p.keyed++
	rd := p.round(r, b)
	p.recent[r%2] = rd
	return train.ListKeys(rd.keys)
}

// round returns the keys of round r, batch b: with uniform negatives,
// the batch's keys merged with the pool, P nodes drawn uniformly (with
// replacement) from all nodes by the stream of (seed, rank, r).
func (p *part) round(r, b int) *round {
	if rd := p.recent[r%2]; rd != nil && rd.r == r && rd.b == b {
		return rd
	}
	bt := p.batches[b]
	u := p.a.Config.UniformPool
	if p.a.Config.UniformNegatives == 0 || bt.Len() == 0 {
		return &round{r: r, b: b, keys: bt.Keys, pos: bt.Pos}
	}
	rng := rand.New(rand.NewPCG(p.seed^0x9b05688c2b3e6c1f, p.rank<<40|uint64(r)))
	draws := make([]uint64, u)
	for i := range draws {
		draws[i] = uint64(rng.IntN(p.a.NumKeys()))
	}
	extra := slices.Compact(slices.Sorted(slices.Values(draws)))
	rd := &round{r: r, b: b, keys: make([]uint64, 0, len(bt.Keys)+len(extra)), at: make([]int32, len(bt.Keys))}
	i, j := 0, 0
	for i < len(bt.Keys) || j < len(extra) {
		switch {
		case j == len(extra) || i < len(bt.Keys) && bt.Keys[i] < extra[j]:
			rd.at[i] = int32(len(rd.keys))
			rd.keys = append(rd.keys, bt.Keys[i])
			i++
		case i == len(bt.Keys) || extra[j] < bt.Keys[i]:
			rd.keys = append(rd.keys, extra[j])
			j++
		default: // a pool node that is a node of the batch
			rd.at[i] = int32(len(rd.keys))
			rd.keys = append(rd.keys, bt.Keys[i])
			i, j = i+1, j+1
		}
	}
	rd.pos = make([]int32, len(bt.Pos))
	for k, x := range bt.Pos {
		rd.pos[k] = rd.at[x]
	}
	rd.pool = make([]int32, u)
	for k, x := range draws {
		at, _ := slices.BinarySearch(rd.keys, x)
		rd.pool[k] = int32(at)
	}
	return rd
}

// Step adds the initial vectors to the pulled displacements vals, draws
// every edge's negatives and adds the scaled gradient of its edges'
// summed loss to grad. It returns the summed loss and the
// number of edges.
func (p *part) Step(b int, vals, grad []float32, scale float32) (float64, int, int) {
	r := p.stepped
	p.stepped++
	rd, d := p.round(r, b), p.a.Config.Dim
	if len(vals) != len(rd.keys)*d {
		panic(fmt.Sprintf("embed: round %d batch %d: %d values pulled, want %d keys of %d", r, b, len(vals), len(rd.keys), d))
	}
	for i, k := range rd.keys {
		v, w0 := vals[i*d:(i+1)*d], p.a.Init[int(k)*d:int(k+1)*d]
		for j := range v {
			v[j] += w0[j]
		}
	}
	return p.lossGrad(rd, vals, grad, scale), p.batches[b].Len(), 0
}

// lossGrad draws the negatives of every edge of round rd, K among the
// batch's nodes and U from the round's pool, from the stream of (seed,
// rank, round), and returns LossGrad of the edges against them at the
// vectors vals.
func (p *part) lossGrad(rd *round, vals, grad []float32, scale float32) float64 {
	bt := p.batches[rd.b]
	n, edges := len(bt.Keys), bt.Len()
	if n == 0 {
		return 0
	}
	k, u := p.a.Config.Negatives, p.a.Config.UniformNegatives
	m := k + u
	if cap(p.neg) < edges*m {
		p.neg = make([]int32, edges*m)
	}
	p.neg = p.neg[:edges*m]
	src := rand.NewPCG(p.seed^0x3c6ef372fe94f82b, p.rank<<40|uint64(rd.r))
	for e := range edges {
		neg := p.neg[e*m : (e+1)*m]
		for i := range k {
			x := int32(below(src.Uint64(), n))
			if rd.at != nil {
				x = rd.at[x]
			}
			neg[i] = x
		}
		for i := k; i < m; i++ {
			neg[i] = rd.pool[below(src.Uint64(), len(rd.pool))]
		}
	}
	return LossGrad(vals, p.a.Config.Dim, rd.pos, p.neg, m, grad, scale)
}

// below returns a number in [0, n) from the random word x, n < 2^32:
// (x mod 2^32)·n / 2^32, uniform to within n/2^32.
func below(x uint64, n int) int {
	return int((x & 0xffffffff) * uint64(n) >> 32)
}

// MarshalBinary returns the part's state for a checkpoint
// (train.StatefulPart): the rounds it has stepped, which seed the next
// round's draws. At a checkpoint no round's keys are asked for ahead.
func (p *part) MarshalBinary() ([]byte, error) {
	return binary.LittleEndian.AppendUint64(nil, uint64(p.stepped)), nil
}

// UnmarshalBinary restores the rounds MarshalBinary gave: the next
// round's keys and step are those of the round after the checkpoint.
func (p *part) UnmarshalBinary(b []byte) error {
	if len(b) != 8 {
		return fmt.Errorf("embed: a part's state of %d bytes, want 8 (the rounds stepped)", len(b))
	}
	r := binary.LittleEndian.Uint64(b)
	if r >= 1<<40 {
		return fmt.Errorf("embed: a part's state of %d rounds stepped: want fewer than 2^40", r)
	}
	p.keyed, p.stepped, p.recent = int(r), int(r), [2]*round{}
	return nil
}

// LossGrad returns the summed loss of the edges pos (pairs of positions
// in vals, whose vectors are d values each) against their negatives neg
// (positions too, m per edge: edge i's are neg[i·m:(i+1)·m]), and adds
// scale times its gradient to grad, laid out like vals. A position
// outside vals, or a neg of another length than m per edge, panics.
func LossGrad(vals []float32, d int, pos, neg []int32, m int, grad []float32, scale float32) float64 {
	rows := int32(len(vals) / d)
	if len(grad) < len(vals) || m < 0 || len(neg) != len(pos)/2*m {
		panic(fmt.Sprintf("embed: LossGrad: %d values and %d gradient values, %d negatives for %d edges with %d each", len(vals), len(grad), len(neg), len(pos)/2, m))
	}
	for _, x := range [][]int32{pos, neg} {
		for _, i := range x {
			if i < 0 || i >= rows {
				panic(fmt.Sprintf("embed: LossGrad: position %d outside the %d vectors", i, rows))
			}
		}
	}
	var w float64
	if m > 0 {
		w = 1 / float64(2*m)
	}
	scores, updates := kernelsFor(d)
	logistics := logisticsFor()
	k := scale * float32(w)
	idx := make([]int32, 0, m)
	n8 := (2*m + 7) &^ 7
	sc, co := make([]float32, n8), make([]float32, n8)
	// The softplus terms max(x, 0) + log(1 + e^−|x|) of the positive
	// pairs (x = −score) and of the negatives (x = score, weighted by w)
	// are summed as Σ max(x, 0) + log Π (1 + e^−|x|): the products are
	// folded into a sum of logarithms once past 2^500, which a factor
	// of at most 2^512 (a run of 512 scores) cannot take past float64's
	// range.
	pos0, neg0 := terms{prod: 1}, terms{prod: 1}
	for i := 0; i+1 < len(pos); i += 2 {
		pu, pv := pos[i], pos[i+1]
		eu, ev := vals[int(pu)*d:int(pu+1)*d], vals[int(pv)*d:int(pv+1)*d]
		gu, gv := grad[int(pu)*d:int(pu+1)*d], grad[int(pv)*d:int(pv+1)*d]
		s := dot(eu, ev)
		e := expNeg(math.Abs(s))
		pos0.add(max(-s, 0), 1+e)
		c := scale * float32(sigmoidOf(s, e)-1)
		axpy(c, ev, gu)
		axpy(c, eu, gv)
		idx = idx[:0]
		for _, n := range neg[i/2*m : (i/2+1)*m] {
			if n != pu && n != pv {
				idx = append(idx, n)
			}
		}
		ns := 2 * len(idx)
		scores(vals, d, idx, eu, ev, sc)
		// The coefficients k·σ(x) and terms in lanes of 8 scores, the
		// last padded with scores whose terms and coefficients are 0.
		ns8 := (ns + 7) &^ 7
		for j := ns; j < ns8; j++ {
			sc[j] = padScore
		}
		for j := 0; j < ns8; j += 512 {
			neg0.add(logistics(sc[j:min(j+512, ns8)], co[j:], k))
		}
		updates(vals, grad, d, idx, co, eu, ev, gu, gv)
	}
	return pos0.sum() + w*neg0.sum()
}

// terms sums softplus terms as lin + logs + log(prod), folding prod
// into logs before it leaves float64's range; prod starts at 1.
type terms struct{ lin, logs, prod float64 }

// add adds lin and the factor f (at most 2^512) of the product.
func (t *terms) add(lin, f float64) {
	t.lin += lin
	t.prod *= f
	if t.prod > 0x1p500 {
		t.logs += math.Log(t.prod)
		t.prod = 1
	}
}

// sum returns the sum of the terms added.
func (t *terms) sum() float64 { return t.lin + t.logs + math.Log(t.prod) }

// dot returns x·y summed in float32, as the vectors are stored.
func dot(x, y []float32) float64 {
	y = y[:len(x)]
	var s0, s1 float32
	j := 0
	for ; j+1 < len(x); j += 2 {
		s0 += x[j] * y[j]
		s1 += x[j+1] * y[j+1]
	}
	if j < len(x) {
		s0 += x[j] * y[j]
	}
	return float64(s0 + s1)
}

// axpy adds c·x to y.
func axpy(c float32, x, y []float32) {
	y = y[:len(x)]
	for j, v := range x {
		y[j] += c * v
	}
}

// expNeg returns e^−a for a ≥ 0 (NaN for NaN), with a relative error
// below 3e-10 (TestExpNeg measures it against math.Exp), and 0 for a >
// 104, where e^−a is below float32's smallest value and 1 + e^−a is 1.
// It is math.Exp's argument reduction a = n·ln 2 + r, |r| ≤ ln 2/2,
// with a Taylor polynomial of degree 8 for e^−r, without math.Exp's
// handling of the whole range.
func expNeg(a float64) float64 {
	if !(a <= expNegMax) {
		if a != a {
			return a
		}
		return 0
	}
	const (
		log2e = 1.44269504088896338700e+00
		ln2Hi = 6.93147180369123816490e-01 // ln 2 = ln2Hi + ln2Lo, ln2Hi·n exact
		ln2Lo = 1.90821492927058770002e-10
	)
	n := int(a*log2e + 0.5)
	x := float64(n)*ln2Hi - a + float64(n)*ln2Lo // −r
	p := 1 + x*(1+x*(1.0/2+x*(1.0/6+x*(1.0/24+x*(1.0/120+x*(1.0/720+x*(1.0/5040+x*(1.0/40320))))))))
	return p * math.Float64frombits(uint64(1023-n)<<52)
}

// expNegMax is the largest argument for which expNeg is not 0.
const expNegMax = 104

// sigmoidOf returns σ(x) given e = e^−|x|.
func sigmoidOf(x, e float64) float64 {
	if x >= 0 {
		return 1 / (1 + e)
	}
	return e / (1 + e)
}

// Evaluate pulls every node's vector on worker 0 and ranks the held-out
// edges (Score); other workers return nothing.
func (a *App) Evaluate(ctx context.Context, w *worker.Worker, _ train.Part) (train.Eval, error) {
	if w.Rank() != 0 {
		return train.Eval{}, nil
	}
	model, err := train.PullModel(w, a.NumKeys())
	if err != nil {
		return train.Eval{}, err
	}
	return a.ScoreModel(model), nil
}

// ScoreModel ranks the held-out edges at the displacements model (key
// k's at k·Dim, as the servers hold them), to which it adds the initial
// vectors in place.
func (a *App) ScoreModel(model []float32) train.Eval {
	for i, v := range a.Init {
		model[i] += v
	}
	return a.Score(model)
}

// Score ranks every held-out edge (u, v) at the vectors emb (key k's at
// k·Dim) against EvalNegatives uniform nodes, on both sides: its mean
// reciprocal rank and AUC. Without held-out edges both are nil.
func (a *App) Score(emb []float32) train.Eval {
	ev := train.Eval{On: "held-out", Samples: len(a.Held)}
	if len(a.Held) == 0 {
		return ev
	}
	d, m := a.Config.Dim, a.NumKeys()
	src := rand.NewPCG(0, 0)
	rng := rand.New(src)
	var rr, auc float64
	var sides int
	for i, e := range a.Held {
		src.Seed(a.Config.Seed^0x510e527fade682d1, uint64(i))
		eu, ev := emb[int(e[0])*d:int(e[0]+1)*d], emb[int(e[1])*d:int(e[1]+1)*d]
		s := dot(eu, ev)
		var above, ties, below [2]int
		for range a.Config.EvalNegatives {
			n := uint32(rng.IntN(m))
			if n == e[0] || n == e[1] {
				continue
			}
			en := emb[int(n)*d : int(n+1)*d]
			for side, sn := range [2]float64{dot(eu, en), dot(en, ev)} {
				switch {
				case sn > s:
					above[side]++
				case sn == s:
					ties[side]++
				default:
					below[side]++
				}
			}
		}
		for side := range 2 {
			total := above[side] + ties[side] + below[side]
			if total == 0 {
				continue
			}
			rr += 1 / (1 + float64(above[side]) + 0.5*float64(ties[side]))
			auc += (float64(below[side]) + 0.5*float64(ties[side])) / float64(total)
			sides++
		}
	}
	if sides > 0 {
		mrr, area := rr/float64(sides), auc/float64(sides)
		ev.MRR, ev.AUC = &mrr, &area
	}
	return ev
}

// Defaults sets the embeddings' defaults in job: AdaGrad with learning
// rate 0.1 and no penalty, mini-batches of 10,000 edges per round over
// all machines, at most 20 passes and no stopping on the loss (ε = 0),
// and DefaultConfig as the options.
func Defaults(job *train.Job) error {
	job.Config.Rule.Name, job.Config.Rule.LR, job.Config.Rule.L1, job.Config.Rule.L2 = "adagrad", 0.1, 0, 0
	job.Config.Batch, job.Config.MaxPasses, job.Config.Epsilon = 10000, 20, 0
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

// Open builds node embeddings of job on the training edges g, evaluated
// on test (both from Load), with the job's options over DefaultConfig and
// its seed. The servers' L1 and L2 penalties are refused: they would pull
// towards the initial vectors.
func Open(job train.Job, g, test *graph.Graph) (*App, error) {
	cfg, err := openConfig(job)
	if err != nil {
		return nil, err
	}
	return New(g, test, cfg)
}

// OpenShare is Open on one machine's share of the training graph
// (NewShare).
func OpenShare(job train.Job, share, test *graph.Graph) (*App, error) {
	cfg, err := openConfig(job)
	if err != nil {
		return nil, err
	}
	return NewShare(share, test, cfg)
}

// openConfig returns the model of job, whose servers' rule must not
// penalise.
func openConfig(job train.Job) (Config, error) {
	cfg, err := config(job)
	if err != nil {
		return cfg, err
	}
	if r := job.Config.Rule; r.L1 != 0 || r.L2 != 0 {
		return cfg, fmt.Errorf("embed: rule.l1 %v and rule.l2 %v (--l1, --l2): want 0, the servers hold displacements from the initial vectors", r.L1, r.L2)
	}
	return cfg, nil
}
