package partition

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"colo/graph"
	"colo/placement"
)

// TSHOptions are the settings of the two-step heuristic. Zero fields take
// the defaults documented on each.
type TSHOptions struct {
	// Alpha is α, the most samples added to a partition at a time: 1
	// (TSH-1) or 2 (TSH-2); 0 means 1.
	Alpha int
	// Beta is β, the weight of |D_i ∪ S| in the cost f(D_i ∪ S) −
	// β·|D_i ∪ S| (Alg. 1, line 5): the larger, the more a pair is
	// preferred to a single sample (n, the value of seed 000's worked
	// example, takes a pair whenever it fits). 0 means adaptive: a pair
	// is taken when it adds fewer parameters per sample than the cheapest
	// single sample, f(D_i ∪ {a, b}) − f(D_i) < 2·(f(D_i ∪ {c}) − f(D_i)),
	// the β of each iteration being the cost of that single sample.
	Beta float64
	// SampleRate is the probability with which each unassigned sample is
	// a candidate in an iteration. 0 means the rate n_b/(k·|D′|) of seed
	// 000 §4.2 (n_b samples in the block, |D′| of them unassigned),
	// capped at 1; 1 searches every sample.
	SampleRate float64
	// PairCandidates bounds the sampled candidates, cheapest first, that
	// TSH-2 pairs with the cheapest and whose partners it examines in an
	// iteration; 0 means DefaultPairCandidates.
	PairCandidates int
	// Blocks is the number of random blocks the samples are cut into and
	// partitioned in sequence, the neighbour sets carrying over (as
	// Parsa's); 0 means ⌈|E| / DefaultBlockEdges⌉.
	Blocks int
	// Threads is the number of goroutines partitioning blocks, with the
	// staleness τ = Threads − 1 of Parsa; 0 means 1.
	Threads int
}

// DefaultPairCandidates is the default of TSHOptions.PairCandidates.
const DefaultPairCandidates = 4

// maxPairColumn is the longest parameter column TSH-2 scans for partners:
// a parameter used by more samples says little about which two belong
// together, and would cost a scan of all of them.
const maxPairColumn = 64

// Validate checks the settings and names the field and its bound.
func (o TSHOptions) Validate() error {
	switch {
	case o.Alpha < 0 || o.Alpha > 2:
		return fmt.Errorf("tsh alpha = %d: want 1 or 2 (0: 1)", o.Alpha)
	case !(o.Beta >= 0) || math.IsInf(o.Beta, 0):
		return fmt.Errorf("tsh beta = %g: want a finite β ≥ 0 (0: adaptive)", o.Beta)
	case !(o.SampleRate >= 0 && o.SampleRate <= 1):
		return fmt.Errorf("tsh sample rate = %g: want a probability in (0, 1] (0: n/(k|D′|))", o.SampleRate)
	case o.PairCandidates < 0:
		return fmt.Errorf("tsh pair candidates = %d: want a positive count (0: %d)", o.PairCandidates, DefaultPairCandidates)
	case o.Blocks < 0:
		return fmt.Errorf("tsh blocks = %d: want 0 (automatic) or a positive count", o.Blocks)
	case o.Threads < 0:
		return fmt.Errorf("tsh threads = %d: want 0 (one) or a positive count", o.Threads)
	}
	return nil
}

// TSHStats reports a run of TSH.
type TSHStats struct {
	Alpha      int     `json:"alpha"`
	Beta       float64 `json:"beta"`        // 0: adaptive
	SampleRate float64 `json:"sample_rate"` // 0: adaptive
	Blocks     int     `json:"blocks"`
	Threads    int     `json:"threads"`
	// Pairs is the number of iterations that added two samples, Singles
	// the number that added one.
	Pairs   int64 `json:"pairs"`
	Singles int64 `json:"singles"`
	// Fallback reports that α = 2 returned the placement of α = 1, whose
	// T_max was lower.
	Fallback bool       `json:"fallback,omitempty"`
	Params   ParamStats `json:"params"`
}

// tshConfig is what the blocks of a TSH run share.
type tshConfig struct {
	alpha      int
	beta       float64
	rate       float64 // 0: adaptive
	candidates int
	cap        int64 // ⌈n/k⌉
	seed       uint64
	stats      chan [2]int64 // pairs and singles of each block
}

// tshState is a block's working state for Alg. 1.
type tshState struct {
	cfg   *tshConfig
	rng   *rand.Rand
	ov    []int32 // overlap of each local sample with the explored one
	stamp []int32 // ov[t] is valid when stamp[t] == cur
	cur   int32
	// pmark[l] == pcur marks the parameters outside S_i of the cheapest
	// candidate, to count its overlap with later ones.
	pmark   []int32
	pcur    int32
	touched []int32
	pairs   int64
	singl   int64
}

func newTSHState(cfg *tshConfig, job, nb, mb int) *tshState {
	return &tshState{cfg: cfg, rng: rand.New(rand.NewPCG(cfg.seed, uint64(job))),
		ov: make([]int32, nb), stamp: make([]int32, nb), pmark: make([]int32, mb)}
}

// growth returns the growth of a TSH run: Parsa's run (blocks, pipeline,
// rebalancing, parameters) with its blocks assigning their samples by
// Alg. 1 within Alg. 1's bounds.
func (c *tshConfig) growth() growth { return growth{bound: c.bound, grow: c.grow} }

// bound relaxes the run's bounds to those of Alg. 1, every |U_i| ≤ ⌈n/k⌉
// and none below, sets c.cap to that bound, and draws the seed of the
// blocks' samplers from rng.
func (c *tshConfig) bound(lo, hi []int64, n int, rng *rand.Rand) {
	k := len(lo)
	for i := range lo {
		lo[i], hi[i] = 0, max(hi[i], int64((n+k-1)/k))
	}
	c.cap = slices.Min(hi)
	c.seed = rng.Uint64()
}

// grow assigns every sample of job t's block by Alg. 1: ties between the
// smallest partitions go to the lowest index, a parameter used by more
// than max(64, 2·n_b/k) samples of the block counts as in every S_i, and
// the candidates are sampled by a generator seeded with c.seed and t.
func (c *tshConfig) grow(blk *block, t int) {
	blk.tieByIndex = true
	blk.hubLimit = max(64, 2*blk.nb/blk.k)
	blk.prepare()
	blk.tsh = newTSHState(c, t, blk.nb, len(blk.params))
	blk.run()
}

// TSH places g on opt.K machines with the two-step heuristic of seed 000
// §4: the samples by Alg. 1, then the parameters by the assignment
// opt.ParamAlgo (seed 000 Alg. 2 is ParamMinMax; the default is
// AssignParams). opt.TSH holds its settings. It reports a TSHStats under
// "tsh" to opt.Report and progress in samples placed to opt.Progress.
//
// Alg. 1 repeatedly takes the partition with the fewest samples (ties to
// the lowest index) and adds the set S of at most α unassigned samples
// that minimises f(D_i ∪ S) − β·|D_i ∪ S|, f(D) = |N(D)|, where |D_i ∪ S|
// may not pass ⌈n/k⌉ (then the best single sample is added). The costs
// A_i(d) = f(D_i ∪ {d}) − f(D_i) of every unassigned sample live in
// Parsa's bucket queues (one per partition, O(1) per update), so α = 1 is
// the cheapest sampled candidate: the queue is walked from its cheapest
// entry and each sample is a candidate with the sample rate. For α = 2,
// f(D_i ∪ {a, b}) − f(D_i) = A_i(a) + A_i(b) − |N(a) ∩ N(b) \ N(D_i)|:
// the pairs searched are two sampled candidates, or a sampled candidate
// and a sample that shares a parameter outside N(D_i) with it, whose
// overlaps are counted over those parameters' columns. As no pair costs
// less than its dearer member, the walk stops at the first cost level no
// cheaper than the best pair found, so the search is exact at rate 1 up to
// PairCandidates candidates and columns longer than 64.
//
// Like Parsa, the samples are cut into random blocks partitioned in
// sequence with the neighbour sets carried over, which bounds the memory
// to O(k·block) and lets Threads > 1 partition blocks in parallel. A
// parameter used by more than max(64, 2·n_b/k) samples of a block is
// counted as already in every N(D_i): it soon would be, and skipping it
// spares the scans of its long column that dominate the time on
// power-law data.
func TSH(g *graph.Graph, opt Options) (*placement.Placement, error) {
	p, _, err := RunTSH(g, opt)
	return p, err
}

// RunTSH is TSH, returning its statistics too.
//
// With α = 2 it also runs α = 1 and returns that placement when it has the
// lower T_max (TSHStats.Fallback): a pair escapes the local optima of
// single samples, but on some graphs pairs taken early leave worse choices
// later, and TSH-2 should never lose to TSH-1.
func RunTSH(g *graph.Graph, opt Options) (*placement.Placement, *TSHStats, error) {
	to := opt.TSH
	if err := to.Validate(); err != nil {
		return nil, nil, err
	}
	if err := opt.Validate(g.NumSamples()); err != nil {
		return nil, nil, err
	}
	p, st, err := runTSHAlpha(g, opt, max(1, to.Alpha))
	if err != nil {
		return nil, nil, err
	}
	if st.Alpha == 2 {
		opt1 := opt
		opt1.Progress = nil
		p1, st1, err := runTSHAlpha(g, opt1, 1)
		if err != nil {
			return nil, nil, err
		}
		c2, c1 := evaluate(g, p, 0), evaluate(g, p1, 0)
		if c1.TMax < c2.TMax || (c1.TMax == c2.TMax && c1.TSum < c2.TSum) {
			p, st.Params, st.Fallback = p1, st1.Params, true
		}
	}
	if opt.Report != nil {
		opt.Report("tsh", st)
	}
	return p, st, nil
}

// runTSHAlpha runs Alg. 1 with α = alpha and places the parameters.
func runTSHAlpha(g *graph.Graph, opt Options, alpha int) (*placement.Placement, *TSHStats, error) {
	to := opt.TSH
	cfg := &tshConfig{alpha: alpha, beta: to.Beta, rate: to.SampleRate, candidates: to.PairCandidates}
	if cfg.candidates == 0 {
		cfg.candidates = DefaultPairCandidates
	}
	blocks := to.Blocks
	if blocks == 0 {
		blocks = max(1, int((g.NumEdges()+DefaultBlockEdges-1)/DefaultBlockEdges))
	}
	threads := max(1, to.Threads)
	cfg.stats = make(chan [2]int64, blocks)
	po := ParsaOptions{Blocks: blocks, Init: InitNone, Threads: threads, Tau: threads - 1, GrowBy: GrowSamples}
	popt := opt
	popt.Parsa = po
	p, pst, err := runParsa(g, popt, cfg.growth())
	if err != nil {
		return nil, nil, err
	}
	close(cfg.stats)
	st := &TSHStats{Alpha: cfg.alpha, Beta: cfg.beta, SampleRate: cfg.rate, Blocks: pst.Blocks, Threads: threads, Params: pst.Params}
	for c := range cfg.stats {
		st.Pairs += c[0]
		st.Singles += c[1]
	}
	return p, st, nil
}

// runTSH assigns every sample of the block by Alg. 1.
func (b *block) runTSH() {
	t := b.tsh
	left := b.nb
	ticked := 0
	for left > 0 {
		i := b.choose()
		pairOK := t.cfg.alpha >= 2 && left >= 2 && b.count[i]+2 <= t.cfg.cap
		rate := t.cfg.rate
		if rate == 0 {
			rate = min(1, float64(b.nb)/(float64(b.k)*float64(left)))
		}
		s1, s2 := b.tshSelect(i, pairOK, rate)
		b.unlink(i, s1)
		b.assign(s1, i)
		left--
		if s2 >= 0 {
			b.unlink(i, s2)
			b.assign(s2, i)
			left--
			t.pairs++
		} else {
			t.singl++
		}
		if b.tick != nil && b.nb-left-ticked >= tickEvery {
			b.tick(b.nb - left - ticked)
			ticked = b.nb - left
		}
	}
	if b.tick != nil {
		b.tick(b.nb - ticked)
	}
	t.cfg.stats <- [2]int64{t.pairs, t.singl}
}

// tshSelect returns the set S that partition i takes: one local sample
// and -1, or two. It walks queue i from its cheapest entry, each sample
// being a candidate with probability rate.
func (b *block) tshSelect(i int, pairOK bool, rate float64) (int32, int32) {
	t := b.tsh
	base := i * b.qs
	first := int32(-1)
	c1, s1 := int32(-1), int32(-1) // the cheapest candidate
	pc, pa, pbest := int64(math.MaxInt64), int32(-1), int32(-1)
	seen := 0
	for c := b.minCost(i); c < int32(b.hc) && seen < t.cfg.candidates; c++ {
		if pairOK && int64(c) >= pc {
			break
		}
		sent := int32(b.nb) + c
		for s := b.nodes[base+int(sent)].next; s != sent; s = b.nodes[base+int(s)].next {
			if first < 0 {
				first = s
			}
			if rate < 1 && t.rng.Float64() >= rate {
				continue
			}
			if s1 < 0 {
				s1, c1 = s, c
				if !pairOK {
					return s1, -1
				}
				b.markOutside(i, s1)
			} else if x := int64(c1) + int64(c) - int64(b.overlapMarked(s)); x < pc {
				pc, pa, pbest = x, s1, s
			}
			b.explore(i, s, &pc, &pa, &pbest)
			seen++
			if int64(c) >= pc || seen == t.cfg.candidates {
				break
			}
		}
	}
	if s1 < 0 { // no sample drawn: the cheapest one
		s1, c1 = first, b.nodes[base+int(first)].cost
	}
	if pa < 0 || (t.cfg.beta == 0 && pc >= 2*int64(c1)) || (t.cfg.beta > 0 && float64(pc)-float64(c1) >= t.cfg.beta) {
		return s1, -1
	}
	return pa, pbest
}

// explore counts, for the unassigned samples that share a parameter
// outside S_i with local sample s, how many such parameters they share,
// and updates the best pair (its cost and members).
func (b *block) explore(i int, s int32, pc *int64, pa, pb *int32) {
	t := b.tsh
	t.cur++
	w, x, bit := b.w, i>>6, uint64(1)<<(i&63)
	touched := t.touched[:0]
	for _, l := range b.sadj[b.soff[s]:b.soff[s+1]] {
		if b.mask[int(l)*w+x]&bit != 0 || b.cend[l]-b.coff[l] > maxPairColumn {
			continue
		}
		for _, u := range b.cadj[b.coff[l]:b.cend[l]] {
			if int32(u) == s || b.assigned[u] {
				continue
			}
			if t.stamp[u] != t.cur {
				t.stamp[u] = t.cur
				t.ov[u] = 0
				touched = append(touched, int32(u))
			}
			t.ov[u]++
		}
	}
	base := i * b.qs
	cs := int64(b.nodes[base+int(s)].cost)
	for _, u := range touched {
		if c := cs + int64(b.nodes[base+int(u)].cost) - int64(t.ov[u]); c < *pc {
			*pc, *pa, *pb = c, s, u
		}
	}
	t.touched = touched
}

// markOutside marks the parameters of local sample s outside S_i.
func (b *block) markOutside(i int, s int32) {
	t := b.tsh
	t.pcur++
	w, x, bit := b.w, i>>6, uint64(1)<<(i&63)
	for _, l := range b.sadj[b.soff[s]:b.soff[s+1]] {
		if b.mask[int(l)*w+x]&bit == 0 {
			t.pmark[l] = t.pcur
		}
	}
}

// overlapMarked counts the parameters of local sample s that markOutside
// marked.
func (b *block) overlapMarked(s int32) int32 {
	t := b.tsh
	var n int32
	for _, l := range b.sadj[b.soff[s]:b.soff[s+1]] {
		if t.pmark[l] == t.pcur {
			n++
		}
	}
	return n
}
