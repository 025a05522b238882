package partition

import (
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"

	"colo/graph"
	"colo/placement"
)

// The pipeline of Alg. 4 (seed 001 §4.3): Threads goroutines take the
// jobs in order, each pulls its view of the shared neighbour sets,
// partitions its block, and pushes the result; results are applied in job
// order, and job t waits until it sees exactly the results of jobs
// 0..max(0, t−τ−1) (seenBy, apply), so the output does not depend on
// timing. How a block assigns its samples is the run's growth, chosen
// once when the run starts.

// job is one block to partition: an initialisation block, whose result
// replaces the neighbour sets and is otherwise dropped, or a real one.
type job struct {
	samples []uint32
	init    bool
}

// growth is the rule by which the blocks of a run assign their samples,
// chosen once when the run starts: parsaGrowth, seed 001's Alg. 3, for
// Parsa, or tshConfig.growth, seed 000's Alg. 1, for TSH. Everything else
// (the blocks, the pipeline, rebalancing, the parameters) is shared.
type growth struct {
	// bound adjusts the bounds lo_i ≤ |U_i| ≤ hi_i of a run over n samples
	// and draws from rng what the rule needs, once, before the first job.
	bound func(lo, hi []int64, n int, rng *rand.Rand)
	// grow assigns every sample of job t, whose block blk has been built
	// and has pulled its view (count, size, byParam and cap are set).
	grow func(blk *block, t int)
}

// parsaGrowth is the growth of Parsa: Alg. 3 of seed 001 within the
// bounds of sizeBounds.
func parsaGrowth() growth {
	return growth{bound: func([]int64, []int64, int, *rand.Rand) {}, grow: growParsa}
}

// growParsa assigns every sample of the block by Alg. 3 of seed 001.
func growParsa(blk *block, _ int) {
	blk.prepare()
	blk.run()
}

// runner carries a run of Parsa (or TSH) over its jobs: the graph, the
// placement being filled, the shared neighbour sets and sample counts
// that applied jobs have pushed, and the pipeline's state. run starts the
// workers; each worker owns one block, reused from job to job, and only
// the fields under mu are shared between them.
type runner struct {
	g      *graph.Graph
	m      int // parameters, for blocks built without the graph (BlockPartitioner)
	p      *placement.Placement
	k      int
	sets   NeighborSets
	counts []int64 // |U_i| after the applied jobs
	po     ParsaOptions
	limit  int64      // |U_i| bound of GrowParams
	blocks [][]uint32 // the samples to place
	// grow assigns the samples of a job's block: the run's growth.grow.
	grow func(blk *block, t int)

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

// tick counts n more samples assigned, by any block, initialisation
// passes included, and reports the total to the progress callback (one
// call at a time). Blocks call it every tickEvery assignments.
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
	r.globalRows(blk, GraphRows(r.g, sample))
}

// globalRows is global on blk, given the rows of the sample: what a
// distributed run (BlockPartitioner.GlobalRows) and a run over rows read
// from disk (ParsaStream.Global) do alike.
func (r *runner) globalRows(blk *block, rows BlockRows) {
	blk.buildRows(rows.Samples, rows.Off, rows.Adj, rows.Local)
	clear(blk.mask)
	r.setView(blk, true, len(rows.Samples))
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
// With one, a second goroutine builds each job's block while the one
// before it is partitioned (serial).
func (r *runner) run(jobs []job) {
	if len(jobs) == 0 {
		return
	}
	r.cond = sync.NewCond(&r.mu)
	r.pulled = make([]bool, len(jobs))
	r.results = make([]*result, len(jobs))
	threads := min(r.po.Threads, len(jobs))
	if threads == 1 {
		r.serial(jobs)
		return
	}
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

// newBlock returns a block for the run's jobs.
func (r *runner) newBlock() *block {
	blk := newBlock(r.k, r.g.NumParams())
	blk.tick = r.tick
	return blk
}

// worker takes jobs in turn and partitions each on its block.
func (r *runner) worker(jobs []job) {
	blk := r.newBlock()
	for {
		r.mu.Lock()
		t := r.next
		r.next++
		r.mu.Unlock()
		if t >= len(jobs) {
			return
		}
		blk.build(r.g, jobs[t].samples)
		r.partition(jobs, t, blk)
	}
}

// serial partitions the jobs in order on the calling goroutine, as one
// worker does, while another goroutine builds the block of the next job
// (a build depends on the graph alone): two blocks take turns.
func (r *runner) serial(jobs []job) {
	built := make(chan *block, 1)
	free := make(chan *block, 2)
	free <- r.newBlock()
	free <- r.newBlock()
	go func() {
		for _, j := range jobs {
			blk := <-free
			blk.build(r.g, j.samples)
			built <- blk
		}
	}()
	for t := range jobs {
		blk := <-built
		r.partition(jobs, t, blk)
		free <- blk
	}
	r.next = len(jobs)
}

// partition runs job t on blk, which holds the job's subgraph (build): it
// waits for the view the job starts from, pulls it, assigns the block's
// samples and pushes the result.
func (r *runner) partition(jobs []job, t int, blk *block) {
	tau := r.po.Tau
	j := jobs[t]
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

	r.grow(blk, t)
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
