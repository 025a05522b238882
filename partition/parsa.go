package partition

import (
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"

	"colo/graph"
	"colo/placement"
)

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
	// partitions first, in (0, 1]; 0 means DefaultGlobalFraction.
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

// DefaultGlobalFraction is the sample fraction InitGlobal uses by default.
const DefaultGlobalFraction = 0.1

// DefaultParsaOptions returns the default settings: automatic blocks,
// individual initialisation over all blocks, one thread, τ = Threads − 1,
// samples balanced exactly.
func DefaultParsaOptions() ParsaOptions {
	return ParsaOptions{Init: DefaultInit, Threads: 1, Tau: TauAuto, GrowBy: GrowSamples, Epsilon: 0.05,
		GlobalFraction: DefaultGlobalFraction}
}

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

// job is one block to partition: an initialisation block, whose result
// replaces the neighbour sets and is otherwise dropped, or a real one.
type job struct {
	samples []uint32
	init    bool
}

// RunParsa is Parsa, returning its statistics too.
func RunParsa(g *graph.Graph, opt Options) (*placement.Placement, *ParsaStats, error) {
	return runParsa(g, opt, nil)
}

// runParsa is RunParsa; with tsh set the blocks select samples by seed
// 000 Alg. 1 instead of seed 001 Alg. 3 (see TSH).
func runParsa(g *graph.Graph, opt Options, tsh *tshConfig) (*placement.Placement, *ParsaStats, error) {
	n, m, k := g.NumSamples(), g.NumParams(), opt.K
	if err := opt.Validate(n); err != nil {
		return nil, nil, err
	}
	po := opt.Parsa
	if err := po.Validate(); err != nil {
		return nil, nil, err
	}
	if po.Init == "" {
		po.Init = DefaultInit
	}
	if po.GrowBy == "" {
		po.GrowBy = GrowSamples
	}
	if po.Threads == 0 {
		po.Threads = 1
	}
	if po.GlobalFraction == 0 {
		po.GlobalFraction = DefaultGlobalFraction
	}
	switch po.Tau {
	case TauAuto:
		po.Tau = po.Threads - 1
	}
	rng := placement.NewRand(opt.Seed)
	p := placement.New(k, n, m)
	var sets NeighborSets
	if po.NewSets != nil {
		sets = po.NewSets(m, k)
	} else {
		sets = NewMemNeighborSets(m, k)
	}
	st := &ParsaStats{Init: po.Init, Threads: po.Threads, Tau: po.Tau, GrowBy: po.GrowBy}
	counts := make([]int64, k)

	// Incremental: keep the samples placed before and seed S_i with them.
	if po.InitFrom != nil {
		prev, err := po.InitFrom(n, k)
		if err != nil {
			return nil, nil, fmt.Errorf("parsa: previous placement: %w", err)
		}
		if len(prev) > n {
			return nil, nil, fmt.Errorf("parsa: previous placement has %d samples, more than the %d of the dataset", len(prev), n)
		}
		for u, i := range prev {
			if i == placement.Unassigned {
				continue
			}
			if i < 0 || int(i) >= k {
				return nil, nil, fmt.Errorf("parsa: previous placement puts sample %d on machine %d: want 0..%d", u, i, k-1)
			}
			p.Data[u] = i
			counts[i]++
			st.Kept++
		}
		seedSets(g, p.Data, k, sets)
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

	b := po.Blocks
	if b == 0 {
		var e int64
		for _, u := range todo {
			e += int64(g.SampleDegree(int(u)))
		}
		b = max(MinBlocks, int((e+DefaultBlockEdges-1)/DefaultBlockEdges))
	}
	b = max(1, min(b, len(todo)))
	blocks := make([][]uint32, b)
	for j := range blocks {
		blocks[j] = todo[j*len(todo)/b : (j+1)*len(todo)/b]
		// In input order, a block's rows are read as one stream.
		slices.Sort(blocks[j])
	}
	st.Blocks = b

	var jobs []job
	var globalSample []uint32
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
		size := max(1, int(math.Ceil(po.GlobalFraction*float64(len(todo)))))
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

	total := int64(len(globalSample))
	for _, j := range jobs {
		total += int64(len(j.samples))
	}
	lo, hi := sizeBounds(counts, n, po)
	if tsh != nil {
		// Alg. 1 bounds every partition by ⌈n/k⌉ only.
		for i := range lo {
			lo[i], hi[i] = 0, max(hi[i], int64((n+k-1)/k))
		}
		tsh.cap = slices.Min(hi)
		tsh.seed = rng.Uint64()
	}
	r := &runner{g: g, p: p, k: k, sets: sets, counts: counts, po: po, total: total,
		progress: opt.Progress, limit: slices.Min(hi), tsh: tsh}
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
	if opt.Report != nil && tsh == nil {
		opt.Report("parsa", st)
	}
	return p, st, nil
}

// sizeBounds returns the bounds lo_i ≤ |U_i| ≤ hi_i that a run must end
// within, given the samples kept on each machine and n in all. Growing by
// samples, they are water levels: the smallest partitions are filled
// first, so that with nothing kept every |U_i| is ⌊n/k⌋ or ⌈n/k⌉. Growing
// by parameters, only |U_i| ≤ ⌈(1+ε)n/k⌉ binds.
func sizeBounds(kept []int64, n int, po ParsaOptions) (lo, hi []int64) {
	k := len(kept)
	lo, hi = make([]int64, k), make([]int64, k)
	if po.GrowBy == GrowParams {
		limit := max(int64(math.Ceil((1+po.Epsilon)*float64(n)/float64(k))), int64((n+k-1)/k))
		for i, c := range kept {
			hi[i] = max(limit, c)
		}
		return lo, hi
	}
	fill := func(level int64) int64 {
		var s int64
		for _, c := range kept {
			s += max(c, level)
		}
		return s
	}
	// The highest level L with Σ max(kept_i, L) ≤ n.
	a, b := int64(0), int64(n)
	for a < b {
		mid := (a + b + 1) / 2
		if fill(mid) <= int64(n) {
			a = mid
		} else {
			b = mid - 1
		}
	}
	rest := int64(n) - fill(a)
	for i, c := range kept {
		lo[i] = max(c, a)
		hi[i] = lo[i]
		if c <= a && rest > 0 {
			hi[i]++
		}
	}
	return lo, hi
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

// runner carries a run of Parsa over its jobs.
type runner struct {
	g      *graph.Graph
	p      *placement.Placement
	k      int
	sets   NeighborSets
	counts []int64 // |U_i| after the applied jobs
	po     ParsaOptions
	limit  int64      // |U_i| bound of GrowParams
	blocks [][]uint32 // the samples to place
	tsh    *tshConfig // seed 000 Alg. 1 instead of seed 001 Alg. 3

	total    int64
	done     atomic.Int64
	progMu   sync.Mutex
	progress func(done, total int64)

	// The pipeline of Alg. 4 with exact staleness, guarded by mu.
	mu         sync.Mutex
	cond       *sync.Cond
	next       int       // next job to take
	applied    int       // jobs whose results are in sets and counts
	pulled     []bool    // job t has pulled
	pulledUpTo int       // every job < pulledUpTo has pulled
	results    []*result // finished, not yet applied
}

// result is what a finished job pushes.
type result struct {
	init   bool
	params []uint32
	own    []uint64
	added  []int64
}

func (r *runner) tick(n int) {
	if r.progress == nil || n == 0 {
		return
	}
	r.done.Add(int64(n))
	r.progMu.Lock()
	r.progress(r.done.Load(), r.total)
	r.progMu.Unlock()
}

// global runs the global initialisation: one block over the sample, from
// empty sets, whose neighbour sets replace the shared ones.
func (r *runner) global(sample []uint32) {
	blk := newBlock(r.k, r.g.NumParams())
	blk.tick = r.tick
	blk.build(r.g, sample)
	clear(blk.mask)
	r.setView(blk, true, len(sample))
	blk.prepare()
	blk.run()
	r.sets.Reset()
	r.sets.Push(blk.params, blk.own)
}

// setView sets the block's view of |U_i|, |S_i| and its growth rule. An
// initialisation block counts only its own samples.
func (r *runner) setView(blk *block, init bool, nb int) {
	blk.byParam = r.po.GrowBy == GrowParams
	if init {
		clear(blk.count)
		blk.cap = int64(math.Ceil((1 + r.po.Epsilon) * float64(nb) / float64(r.k)))
		if blk.cap*int64(r.k) < int64(nb) {
			blk.cap = int64((nb + r.k - 1) / r.k)
		}
	} else {
		copy(blk.count, r.counts)
		blk.cap = r.limit
		if blk.byParam {
			// A stale view may not see every sample placed: never refuse
			// all partitions; repair restores the bound afterwards.
			need := int64(nb)
			for i := range blk.count {
				need -= max(0, blk.cap-blk.count[i])
			}
			if need > 0 {
				blk.cap += (need + int64(r.k) - 1) / int64(r.k)
			}
		}
	}
	if blk.byParam {
		r.sets.Sizes(blk.size)
	}
}

// run partitions the jobs on po.Threads goroutines with staleness po.Tau.
func (r *runner) run(jobs []job) {
	if len(jobs) == 0 {
		return
	}
	r.cond = sync.NewCond(&r.mu)
	r.pulled = make([]bool, len(jobs))
	r.results = make([]*result, len(jobs))
	threads := min(r.po.Threads, len(jobs))
	var wg sync.WaitGroup
	for w := 0; w < threads; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.worker(jobs)
		}()
	}
	wg.Wait()
}

func (r *runner) worker(jobs []job) {
	blk := newBlock(r.k, r.g.NumParams())
	blk.tick = r.tick
	blk.tieByIndex = r.tsh != nil
	tau := r.po.Tau
	for {
		r.mu.Lock()
		t := r.next
		r.next++
		r.mu.Unlock()
		if t >= len(jobs) {
			return
		}
		j := jobs[t]
		blk.build(r.g, j.samples)

		r.mu.Lock()
		for r.applied < seenBy(t, tau) {
			r.cond.Wait()
		}
		// Applies wait for this pull (exact staleness), so the view below
		// is that of jobs 0..seenBy(t)−1.
		r.setView(blk, j.init, len(j.samples))
		r.mu.Unlock()
		blk.pull(r.sets)
		r.mu.Lock()
		r.pulled[t] = true
		for r.pulledUpTo < len(jobs) && r.pulled[r.pulledUpTo] {
			r.pulledUpTo++
		}
		r.apply(jobs)
		r.mu.Unlock()

		if r.tsh != nil {
			blk.hubLimit = max(64, 2*len(j.samples)/r.k)
		}
		blk.prepare()
		if r.tsh != nil {
			blk.tsh = newTSHState(r.tsh, t, blk.nb, len(blk.params))
		}
		blk.run()
		res := &result{init: j.init, params: slices.Clone(blk.params), own: slices.Clone(blk.own[:len(blk.params)*blk.w])}
		if !j.init {
			res.added = slices.Clone(blk.added)
			for s, u := range blk.samples {
				r.p.Data[u] = blk.out[s]
			}
		}
		r.mu.Lock()
		r.results[t] = res
		r.apply(jobs)
		r.mu.Unlock()
	}
}

// seenBy returns the number of jobs whose results job t starts from:
// those before t−τ, and always job 0, so that every chain of blocks
// descends from the same first partition and the partitions of parallel
// blocks keep the same labels. With TauInfinite it is the least number
// job t waits for.
func seenBy(t, tau int) int {
	if t == 0 {
		return 0
	}
	if tau < 0 {
		return 1
	}
	return max(1, t-tau)
}

// apply applies finished results in job order while no job that should
// not see them is still to pull. It holds r.mu.
func (r *runner) apply(jobs []job) {
	tau := r.po.Tau
	progressed := false
	for r.applied < len(jobs) && r.results[r.applied] != nil {
		// The last job that must not see this result.
		last := r.applied + tau
		if r.applied == 0 {
			last = 0
		}
		if tau >= 0 && r.pulledUpTo <= min(last, len(jobs)-1) {
			break
		}
		res := r.results[r.applied]
		r.results[r.applied] = nil
		if res.init {
			r.sets.Reset()
		} else {
			for i, a := range res.added {
				r.counts[i] += a
			}
		}
		r.sets.Push(res.params, res.own)
		r.applied++
		progressed = true
	}
	if progressed {
		r.cond.Broadcast()
	}
}

// rebalance moves samples until lo_i ≤ |U_i| ≤ hi_i for every i, which a
// run with a stale view (τ > 0) may miss by a few samples. It first
// empties partitions above hi into those below hi, then fills partitions
// below lo from those above lo. Candidates are the latest placed samples
// of each source partition, a few per sample to move; each move takes the
// candidate that adds the fewest parameters to the neighbour set of a
// partition that may receive, cheapest first. Kept samples never move. It
// returns the number of samples moved.
func (r *runner) rebalance(lo, hi []int64) int {
	k, data := r.k, r.p.Data
	count := make([]int64, k)
	for _, i := range data {
		count[i]++
	}
	ok := true
	for i, c := range count {
		ok = ok && lo[i] <= c && c <= hi[i]
	}
	if ok {
		return 0
	}
	w, m := MaskWords(k), r.g.NumParams()
	all := make([]uint32, m)
	for v := range all {
		all[v] = uint32(v)
	}
	masks := make([]uint64, m*w)
	r.sets.Pull(all, masks)
	moved := 0
	// best returns the partition j with to(j) that u extends least, and
	// the number of parameters it adds.
	best := func(u int, to func(int) bool) (int, int) {
		bj, bc := -1, 0
		for j := 0; j < k; j++ {
			if !to(j) {
				continue
			}
			c := 0
			for _, v := range r.g.Params(u) {
				if masks[int(v)*w+j>>6]&(1<<(j&63)) == 0 {
					c++
				}
			}
			if bj < 0 || c < bc {
				bj, bc = j, c
			}
		}
		return bj, bc
	}
	type move struct{ u, to, cost int }
	// phase moves samples out of partitions with excess(i) > 0 into those
	// with to(j) until none has excess or none may receive.
	phase := func(excess func(i int) int64, to func(j int) bool) {
		for quota := int64(4); ; quota *= 4 {
			done := true
			want := make([]int64, k)
			for i := range want {
				if e := excess(i); e > 0 {
					want[i] = quota*e + 16
					done = false
				}
			}
			receiver := false
			for j := 0; j < k; j++ {
				receiver = receiver || to(j)
			}
			if done || !receiver {
				return
			}
			var moves []move
			for b := len(r.blocks) - 1; b >= 0; b-- {
				blk := r.blocks[b]
				for x := len(blk) - 1; x >= 0; x-- {
					u := int(blk[x])
					if i := data[u]; want[i] > 0 {
						want[i]--
						if j, c := best(u, to); j >= 0 {
							moves = append(moves, move{u, j, c})
						}
					}
				}
			}
			for len(moves) > 0 {
				slices.SortStableFunc(moves, func(a, b move) int { return a.cost - b.cost })
				var retry []move
				for _, mv := range moves {
					src := int(data[mv.u])
					if excess(src) <= 0 {
						continue
					}
					if !to(mv.to) {
						if j, c := best(mv.u, to); j >= 0 {
							retry = append(retry, move{mv.u, j, c})
						}
						continue
					}
					data[mv.u] = int32(mv.to)
					count[src]--
					count[mv.to]++
					for _, v := range r.g.Params(mv.u) {
						masks[int(v)*w+mv.to>>6] |= 1 << (mv.to & 63)
					}
					moved++
				}
				moves = retry
			}
		}
	}
	phase(func(i int) int64 { return count[i] - hi[i] }, func(j int) bool { return count[j] < hi[j] })
	deficit := func() int64 {
		var d int64
		for j := range count {
			d += max(0, lo[j]-count[j])
		}
		return d
	}
	phase(func(i int) int64 {
		if count[i] > lo[i] {
			return deficit()
		}
		return 0
	}, func(j int) bool { return count[j] < lo[j] })
	return moved
}
