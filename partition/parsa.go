package partition

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"colo/graph"
	"colo/placement"
)

// Parsa's API: its options with DefaultParsaOptions and Validate, its
// statistics, and the entry points Parsa and RunParsa with the driver
// they share with TSH (runParsa). The pipeline of Alg. 4 that partitions
// the blocks is in parsa_pipeline.go, the bounds a run ends within and the
// moves that restore them in parsa_rebalance.go.

// InitMode selects how Parsa initialises the neighbour sets (seed 001 §4.4).
type InitMode string

// The initialisation modes.
const (
	// InitNone starts from empty neighbour sets.
	InitNone InitMode = "none"
	// InitIndividual partitions the first InitBlocks blocks (cyclically)
	// before the real pass; before each of them, and before the real pass,
	// the sets are reset to the neighbour sets of the previous block's
	// partition. Their assignments are dropped.
	InitIndividual InitMode = "individual"
	// InitGlobal partitions a random GlobalFraction of the samples as one
	// block from empty sets and starts the real pass from the resulting
	// neighbour sets; the sample's assignment is dropped.
	InitGlobal InitMode = "global"
	// InitIncremental is reported in ParsaStats when ParsaOptions.InitFrom
	// is set: the sets start as the neighbour sets of the samples placed
	// before.
	InitIncremental InitMode = "incremental"
)

// GrowBy selects the partition that Alg. 3 grows next.
type GrowBy string

// The growth rules.
const (
	// GrowSamples grows the partition with the fewest samples |U_i|: every
	// partition ends with ⌊n/k⌋ or ⌈n/k⌉ samples.
	GrowSamples GrowBy = "samples"
	// GrowParams grows the partition with the smallest neighbour set |S_i|
	// (Alg. 3, line 6) among those with |U_i| < ⌈(1+ε)n/k⌉.
	GrowParams GrowBy = "params"
)

// Staleness settings for ParsaOptions.Tau besides a number of blocks.
const (
	// TauAuto sets τ to Threads − 1: enough for every thread to work, and
	// sequential with one thread.
	TauAuto = -1
	// TauInfinite is eventual consistency: a block sees the first block
	// and whatever other blocks have pushed by the time it starts.
	// Fastest, but the result depends on timing.
	TauInfinite = -2
)

// ParsaOptions are the settings of Parsa. Zero fields take the defaults of
// DefaultParsaOptions, except Tau and Epsilon, whose zero is a value.
type ParsaOptions struct {
	// Blocks is b, the number of random blocks U is divided into; the
	// blocks are partitioned in sequence (seed 001 §4.2). 0: automatic,
	// MinBlocks or more blocks of at most about DefaultBlockEdges edges.
	Blocks int
	// Init is the initialisation of the neighbour sets; "" means
	// DefaultInit. Ignored when InitFrom is set.
	Init InitMode
	// InitBlocks is a, the number of blocks partitioned and dropped by
	// InitIndividual; 0 means b.
	InitBlocks int
	// GlobalFraction is the fraction of the samples that InitGlobal
	// partitions first, in (0, 1]; 0 means DefaultGlobalFraction, but no
	// more samples than hold about DefaultBlockEdges edges, a block's
	// worth (on graphs of more than 10M edges, less than 10%).
	GlobalFraction float64
	// Threads is the number of goroutines that partition blocks (seed 001
	// §4.3); 0 means 1.
	Threads int
	// Tau is the staleness τ in blocks: block t ≥ 1 starts from the
	// neighbour sets and sample counts left by blocks 0..max(0, t−τ−1),
	// exactly, and not from later ones, so that the result does not
	// depend on timing. (Every block sees the first, so that parallel
	// blocks build on the same partition labels.) τ = 0 is the sequential
	// algorithm. TauAuto and TauInfinite are also accepted. With a fixed
	// τ ≥ 0 the output does not depend on Threads. Jobs are counted over
	// the initialisation blocks and the real ones together.
	Tau int
	// GrowBy picks the partition to grow; "" means GrowSamples.
	GrowBy GrowBy
	// Epsilon is the imbalance ε of GrowParams: |U_i| ≤ ⌈(1+ε)n/k⌉.
	Epsilon float64
	// Refine is the number of refinement passes after Alg. 3 (0: none).
	// A pass moves single samples, and pairs of samples between two
	// partitions, whenever that lowers Σ_i |N(U_i)| (and so T_sum) or
	// keeps it, within the balance bound. It needs 4·k bytes per parameter.
	Refine int
	// InitFrom, when set, makes the run incremental: it returns the
	// machine of each sample already placed, for samples 0..len−1 (len ≤
	// n), with placement.Unassigned for samples to place. Those samples
	// keep their machine, the neighbour sets start as N(U_i) of them, and
	// only the others are partitioned. The command line reads it from a
	// placement directory.
	InitFrom func(n, k int) ([]int32, error)
	// NewSets, when set, makes the shared neighbour sets over m parameters
	// and k partitions; nil means NewMemNeighborSets.
	NewSets func(m, k int) NeighborSets
}

// DefaultBlockEdges and MinBlocks set the automatic number of blocks:
// b = max(MinBlocks, ⌈|E| / DefaultBlockEdges⌉). Smaller blocks run faster
// (their lists are shorter and fit in cache) and, with individual
// initialisation over all of them, lose no quality on the datasets of
// docs/parsa.md.
const (
	DefaultBlockEdges = 1 << 20
	MinBlocks         = 8
)

// DefaultInit is the initialisation used when ParsaOptions.Init is empty.
const DefaultInit = InitIndividual

// DefaultGlobalFraction is the sample fraction InitGlobal uses by
// default, on graphs of at most 10·DefaultBlockEdges edges.
const DefaultGlobalFraction = 0.1

// DefaultParsaOptions returns the default settings: automatic blocks,
// individual initialisation over all blocks, one thread, τ = Threads − 1,
// samples balanced exactly (ε = 0.05 applies to GrowParams only), the
// global initialisation over DefaultGlobalFraction of the samples (at
// most a block's worth: see GlobalFraction), no refinement, in-memory
// neighbour sets (NewSets nil).
//
// A run fills the zero fields of its options from these (see
// ParsaOptions), so that ParsaOptions{} and DefaultParsaOptions() differ
// only in Tau and Epsilon, whose zero is a value: τ = 0 is the sequential
// algorithm, ε = 0 a strict bound.
func DefaultParsaOptions() ParsaOptions {
	return ParsaOptions{Init: DefaultInit, Threads: 1, Tau: TauAuto, GrowBy: GrowSamples, Epsilon: 0.05}
}

// WithDefaults returns o as a run uses it: its zero fields filled from
// DefaultParsaOptions (Tau and Epsilon excepted, their zero being a
// value), a nil NewSets by NewMemNeighborSets, and TauAuto resolved to
// Threads − 1. Blocks and InitBlocks stay 0 when 0: their defaults depend
// on the samples to place, and the run sets them (blockCount,
// planJobs). o should be valid.
func (o ParsaOptions) WithDefaults() ParsaOptions {
	d := DefaultParsaOptions()
	orDefault(&o.Blocks, d.Blocks)
	orDefault(&o.Init, d.Init)
	orDefault(&o.InitBlocks, d.InitBlocks)
	orDefault(&o.Threads, d.Threads)
	orDefault(&o.GrowBy, d.GrowBy)
	orDefault(&o.Refine, d.Refine)
	if o.NewSets == nil {
		o.NewSets = newMemNeighborSets
	}
	if o.Tau == TauAuto {
		o.Tau = o.Threads - 1
	}
	return o
}

// orDefault sets *x to d when *x is the zero value.
func orDefault[T comparable](x *T, d T) {
	var zero T
	if *x == zero {
		*x = d
	}
}

// newMemNeighborSets is NewMemNeighborSets as ParsaOptions.NewSets.
func newMemNeighborSets(m, k int) NeighborSets { return NewMemNeighborSets(m, k) }

// Validate checks the settings and names the field and its bound.
func (o ParsaOptions) Validate() error {
	switch {
	case o.Blocks < 0:
		return fmt.Errorf("parsa blocks = %d: want 0 (automatic) or a positive count", o.Blocks)
	case o.InitBlocks < 0:
		return fmt.Errorf("parsa init blocks = %d: want 0 (all blocks) or a positive count", o.InitBlocks)
	case o.Threads < 0:
		return fmt.Errorf("parsa threads = %d: want 0 (one) or a positive count", o.Threads)
	case o.Tau < TauInfinite:
		return fmt.Errorf("parsa tau = %d: want τ ≥ 0, TauAuto (%d) or TauInfinite (%d)", o.Tau, TauAuto, TauInfinite)
	case !(o.Epsilon >= 0) || math.IsInf(o.Epsilon, 0):
		return fmt.Errorf("parsa epsilon = %g: want a finite ε ≥ 0", o.Epsilon)
	case o.Refine < 0:
		return fmt.Errorf("parsa refine = %d: want 0 (none) or a number of passes", o.Refine)
	case !(o.GlobalFraction >= 0 && o.GlobalFraction <= 1):
		return fmt.Errorf("parsa global fraction = %g: want 0 (default) or a fraction in (0, 1]", o.GlobalFraction)
	}
	switch o.Init {
	case "", InitNone, InitIndividual, InitGlobal:
	default:
		return fmt.Errorf("parsa init = %q: want none, individual or global", string(o.Init))
	}
	switch o.GrowBy {
	case "", GrowSamples, GrowParams:
	default:
		return fmt.Errorf("parsa grow-by = %q: want samples or params", string(o.GrowBy))
	}
	return nil
}

// ParsaStats reports a run of Parsa.
type ParsaStats struct {
	// The settings in force: blocks b, initialisation and its size (a
	// blocks, or the global sample's size), threads, τ and growth rule.
	Blocks     int      `json:"blocks"`
	Init       InitMode `json:"init"`
	InitBlocks int      `json:"init_blocks,omitempty"`
	InitSample int      `json:"init_sample,omitempty"`
	Threads    int      `json:"threads"`
	Tau        int      `json:"tau"`
	GrowBy     GrowBy   `json:"grow_by"`
	// Kept is the number of samples kept from InitFrom, Placed the number
	// partitioned, Repaired the number moved to restore the balance bound
	// after a stale view.
	Kept     int `json:"kept,omitempty"`
	Placed   int `json:"placed"`
	Repaired int `json:"repaired,omitempty"`
	// Refine reports the refinement passes, Params the parameter
	// assignment.
	Refine RefineStats `json:"refine"`
	Params ParamStats  `json:"params"`
}

// Parsa places g on opt.K machines with Parsa (seed 001): samples by Alg. 3
// over random blocks with initialised neighbour sets, in parallel with
// bounded staleness (Alg. 4), then parameters by AssignParams. opt.Parsa
// holds its settings. It reports a ParsaStats under "parsa" to opt.Report
// and progress in samples partitioned (counting initialisation passes) to
// opt.Progress.
func Parsa(g *graph.Graph, opt Options) (*placement.Placement, error) {
	p, _, err := RunParsa(g, opt)
	return p, err
}

// RunParsa is Parsa, returning its statistics too.
func RunParsa(g *graph.Graph, opt Options) (*placement.Placement, *ParsaStats, error) {
	p, st, err := runParsa(g, opt, parsaGrowth())
	if err != nil {
		return nil, nil, err
	}
	if opt.Report != nil {
		opt.Report("parsa", st)
	}
	return p, st, nil
}

// runParsa is RunParsa without the report, its blocks assigning their
// samples by gr: seed 001's Alg. 3 (parsaGrowth) or seed 000's Alg. 1
// (TSH). The run:
//
//  1. keeps the samples of opt.Parsa.InitFrom, if set, and seeds the
//     neighbour sets with them (keepPrevious);
//  2. shuffles the samples to place and cuts them into b blocks
//     (blockCount), each sorted into input order;
//  3. plans the jobs: the initialisation's, then one per block (planJobs);
//  4. sets the bounds lo_i ≤ |U_i| ≤ hi_i (sizeBounds, then gr.bound);
//  5. partitions the jobs by the pipeline of Alg. 4 (runner.run), then
//     restores the bounds that a stale view missed (runner.rebalance);
//  6. refines the samples, if asked (Refine passes), and assigns the
//     parameters.
//
// The seeded generator is drawn from in that order: the shuffle of the
// samples, the global initialisation's sample, gr.bound, the parameter
// assignment's seed.
func runParsa(g *graph.Graph, opt Options, gr growth) (*placement.Placement, *ParsaStats, error) {
	n, m, k := g.NumSamples(), g.NumParams(), opt.K
	if err := opt.Validate(n); err != nil {
		return nil, nil, err
	}
	if err := opt.Parsa.Validate(); err != nil {
		return nil, nil, err
	}
	po := opt.Parsa.WithDefaults()
	rng := placement.NewRand(opt.Seed)
	p := placement.New(k, n, m)
	sets := po.NewSets(m, k)
	st := &ParsaStats{Init: po.Init, Threads: po.Threads, Tau: po.Tau, GrowBy: po.GrowBy}
	counts := make([]int64, k)

	// Incremental: keep the samples placed before and seed S_i with them.
	if po.InitFrom != nil {
		kept, err := keepPrevious(g, po.InitFrom, p, counts, sets)
		if err != nil {
			return nil, nil, err
		}
		st.Kept = kept
		st.Init = InitIncremental
	}

	todo := make([]uint32, 0, n-st.Kept)
	for u, i := range p.Data {
		if i == placement.Unassigned {
			todo = append(todo, uint32(u))
		}
	}
	rng.Shuffle(len(todo), func(a, b int) { todo[a], todo[b] = todo[b], todo[a] })
	st.Placed = len(todo)

	e := todoEdges(g, todo)
	b := blockCount(e, len(todo), po.Blocks)
	blocks := make([][]uint32, b)
	for j := range blocks {
		blocks[j] = todo[j*len(todo)/b : (j+1)*len(todo)/b]
		// In input order, a block's rows are read as one stream.
		slices.Sort(blocks[j])
	}
	st.Blocks = b

	jobs, globalSample := planJobs(po, blocks, todo, e, rng, st)
	total := int64(len(globalSample))
	for _, j := range jobs {
		total += int64(len(j.samples))
	}
	lo, hi := sizeBounds(counts, n, po)
	gr.bound(lo, hi, n, rng)
	r := &runner{g: g, p: p, k: k, sets: sets, counts: counts, po: po, total: total,
		progress: opt.Progress, limit: slices.Min(hi), grow: gr.grow}
	if globalSample != nil {
		r.global(globalSample)
	}
	r.blocks = blocks
	r.run(jobs)
	st.Repaired = r.rebalance(lo, hi)
	if po.Refine > 0 && len(todo) > 0 {
		rf := newRefiner(g, p.Data, k, lo, hi)
		st.Refine.Before = rf.sum
		for st.Refine.Passes < po.Refine {
			st.Refine.Passes++
			mv := rf.pass(todo, &st.Refine)
			st.Refine.Moves += mv
			if mv == 0 {
				break
			}
		}
		st.Refine.After = rf.sum
	}
	var err error
	if st.Params, err = assignParamsWith(g, p, opt.ParamAlgo, rng.Uint64(), po.Threads); err != nil {
		return nil, nil, err
	}
	return p, st, nil
}

// keepPrevious places the samples that initFrom returns as already placed
// on p, counts them per machine, seeds the sets with their neighbour sets
// N(U_i), and returns how many it kept. It rejects a previous placement
// longer than the dataset or naming a machine outside 0..k−1.
func keepPrevious(g *graph.Graph, initFrom func(n, k int) ([]int32, error), p *placement.Placement, counts []int64, sets NeighborSets) (int, error) {
	n, k := g.NumSamples(), len(counts)
	prev, err := initFrom(n, k)
	if err != nil {
		return 0, fmt.Errorf("parsa: previous placement: %w", err)
	}
	if len(prev) > n {
		return 0, fmt.Errorf("parsa: previous placement has %d samples, more than the %d of the dataset", len(prev), n)
	}
	kept := 0
	for u, i := range prev {
		if i == placement.Unassigned {
			continue
		}
		if i < 0 || int(i) >= k {
			return 0, fmt.Errorf("parsa: previous placement puts sample %d on machine %d: want 0..%d", u, i, k-1)
		}
		p.Data[u] = i
		counts[i]++
		kept++
	}
	seedSets(g, p.Data, k, sets)
	return kept, nil
}

// blockCount returns the number of blocks b to cut the samples todo into:
// want, or when want is 0 max(MinBlocks, ⌈|E(todo)| / DefaultBlockEdges⌉),
// in either case within 1..len(todo) (1 when todo is empty).
func blockCount(edges int64, n, want int) int {
	b := want
	if b == 0 {
		b = max(MinBlocks, int((edges+DefaultBlockEdges-1)/DefaultBlockEdges))
	}
	return max(1, min(b, n))
}

// todoEdges returns the edges of the samples todo.
func todoEdges(g *graph.Graph, todo []uint32) int64 {
	var e int64
	for _, u := range todo {
		e += int64(g.SampleDegree(int(u)))
	}
	return e
}

// GlobalSize returns the number of samples that InitGlobal partitions
// first, of n to place over edges edges: ⌈GlobalFraction·n⌉, and by
// default (0) DefaultGlobalFraction of them but no more than a block's
// worth of edges (DefaultBlockEdges): seed 001's "small part" of the
// graph (§4.4), which one worker partitions while the others wait.
func GlobalSize(po ParsaOptions, n int, edges int64) int {
	f := po.GlobalFraction
	if f == 0 {
		f = DefaultGlobalFraction
		if edges > 0 {
			f = min(f, float64(DefaultBlockEdges)/float64(edges))
		}
	}
	return max(1, int(math.Ceil(f*float64(n))))
}

// planJobs returns the jobs of a run over the blocks, in order, and the
// sample of the global initialisation (nil: none). With InitIndividual the
// first a = po.InitBlocks (0: b) jobs are initialisation jobs over blocks
// 0..a−1, cyclically; with InitGlobal a random GlobalSize of todo (whose
// samples have edges edges), drawn from rng, is partitioned first,
// outside the jobs. Neither
// runs when the run is incremental or has nothing to place. It records the
// initialisation's size in st.
func planJobs(po ParsaOptions, blocks [][]uint32, todo []uint32, edges int64, rng *rand.Rand, st *ParsaStats) ([]job, []uint32) {
	var jobs []job
	var globalSample []uint32
	b := len(blocks)
	switch {
	case po.InitFrom != nil || len(todo) == 0:
	case po.Init == InitIndividual:
		a := po.InitBlocks
		if a == 0 {
			a = b
		}
		st.InitBlocks = a
		for j := 0; j < a; j++ {
			jobs = append(jobs, job{samples: blocks[j%b], init: true})
		}
	case po.Init == InitGlobal:
		size := GlobalSize(po, len(todo), edges)
		globalSample = slices.Clone(todo)
		rng.Shuffle(len(globalSample), func(a, b int) {
			globalSample[a], globalSample[b] = globalSample[b], globalSample[a]
		})
		globalSample = globalSample[:size]
		slices.Sort(globalSample)
		st.InitSample = size
	}
	for _, blk := range blocks {
		jobs = append(jobs, job{samples: blk})
	}
	return jobs, globalSample
}

// seedSets adds to the sets the neighbour sets N(U_i) of the samples that
// data places (entries placement.Unassigned are skipped).
func seedSets(g *graph.Graph, data []int32, k int, sets NeighborSets) {
	w := MaskWords(k)
	m := g.NumParams()
	off, adj := g.ParamOffsets(), g.ParamAdjacency()
	var params []uint32
	var masks []uint64
	mask := make([]uint64, w)
	for v := 0; v < m; v++ {
		clear(mask)
		seen := false
		for _, u := range adj[off[v]:off[v+1]] {
			if i := data[u]; i >= 0 {
				mask[i>>6] |= 1 << (i & 63)
				seen = true
			}
		}
		if seen {
			params = append(params, uint32(v))
			masks = append(masks, mask...)
		}
	}
	sets.Push(params, masks)
}
