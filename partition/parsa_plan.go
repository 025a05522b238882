package partition

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"

	"colo/graph"
	"colo/placement"
)

// The pieces of a Parsa run that a distributed run (package
// distparsa, Alg. 4 of seed 001 on the parameter server) drives
// itself: the plan that every process draws alike from the seed
// (PlanParsa from a graph, PlanParsaCounts for a file, which package
// partition/ooc's PlanParsaFile reads), Alg. 3 on one block against any
// NeighborSets (BlockPartitioner), and the end
// of the run once every sample is placed (ParsaPlan.Finish, or Repair and
// then the parameter assignment, which a distributed run does itself
// with ParamOrder). Partitioning the plan's blocks in order, each against
// the sets and counts left by all the blocks before it, and then calling
// Finish gives exactly what RunParsa gives with τ = 0.

// ParsaPlan is what every process of a distributed Parsa run computes
// alike from the graph, the options and the seed: the blocks, the sample
// of the global initialisation, the bounds the run ends within and the
// parameter assignment's seed, drawn from the seeded generator in the
// order runParsa draws them.
type ParsaPlan struct {
	// Options are the Parsa options in force (defaults filled in).
	Options ParsaOptions
	// Blocks are the b blocks, each sorted into input order; every sample
	// is in exactly one. In a plan of a file they are nil: the blocks a
	// process keeps are in files (ooc.FilePlan.Rows).
	Blocks [][]uint32
	// Global is the sample of the global initialisation, nil without one
	// (and in a plan of a file: ooc.FilePlan.GlobalRows); Stats.InitSample is
	// its size.
	Global []uint32
	// Lo and Hi bound |U_i| at the end of the run.
	Lo, Hi []int64
	// ParamSeed seeds the parameter assignment.
	ParamSeed uint64
	// Stats are the run's statistics so far (blocks, initialisation).
	Stats ParsaStats

	g    *graph.Graph // nil for a plan of a file (PlanParsaCounts)
	n, m int          // samples and parameters
	opt  Options
	todo []uint32 // the samples in block order, for refinement
}

// PlanParsa plans a Parsa run of g with opt as RunParsa would. A
// distributed run initialises its neighbour sets globally or not at all
// (seed 001 §4.4: global initialisation is the one for parallel
// partitioning), so individual initialisation and incremental runs
// (InitFrom) are refused.
func PlanParsa(g *graph.Graph, opt Options) (*ParsaPlan, error) {
	n, k := g.NumSamples(), opt.K
	if err := opt.Validate(n); err != nil {
		return nil, err
	}
	if err := opt.Parsa.Validate(); err != nil {
		return nil, err
	}
	po := opt.Parsa.WithDefaults()
	switch {
	case po.InitFrom != nil:
		return nil, errors.New("parsa: a distributed run cannot start from a previous placement")
	case po.Init == InitIndividual:
		return nil, fmt.Errorf("parsa init = %q: a distributed run initialises globally or not at all (global or none)", string(po.Init))
	}
	rng := placement.NewRand(opt.Seed)
	st := ParsaStats{Init: po.Init, Threads: po.Threads, Tau: po.Tau, GrowBy: po.GrowBy}
	todo := make([]uint32, n)
	for u := range todo {
		todo[u] = uint32(u)
	}
	rng.Shuffle(len(todo), func(a, b int) { todo[a], todo[b] = todo[b], todo[a] })
	st.Placed = n
	e := todoEdges(g, todo)
	b := blockCount(e, n, po.Blocks)
	blocks := make([][]uint32, b)
	for j := range blocks {
		blocks[j] = todo[j*len(todo)/b : (j+1)*len(todo)/b]
		slices.Sort(blocks[j])
	}
	st.Blocks = b
	_, global := planJobs(po, blocks, todo, e, rng, &st)
	lo, hi := sizeBounds(make([]int64, k), n, po)
	parsaGrowth().bound(lo, hi, n, rng)
	return &ParsaPlan{Options: po, Blocks: blocks, Global: global, Lo: lo, Hi: hi,
		ParamSeed: rng.Uint64(), Stats: st, g: g, n: n, m: g.NumParams(), opt: opt, todo: todo}, nil
}

// PlanParsaCounts is PlanParsa for a graph that is not loaded, a plan of
// a file (package partition/ooc): given the numbers of samples n and
// parameters m, the number of blocks b the caller cut the samples into
// and the size of the global initialisation's sample (0: none), it
// returns the plan with nil blocks and global sample, and draws its
// bounds and the parameters' seed from rng, which must have drawn the
// blocks and the global sample as PlanParsa draws them. opt should be
// valid for n samples.
func PlanParsaCounts(opt Options, n, m, b, initSample int, rng *rand.Rand) *ParsaPlan {
	po := opt.Parsa.WithDefaults()
	st := ParsaStats{Init: po.Init, Threads: po.Threads, Tau: po.Tau, GrowBy: po.GrowBy, Placed: n, Blocks: b,
		InitSample: initSample}
	lo, hi := sizeBounds(make([]int64, opt.K), n, po)
	parsaGrowth().bound(lo, hi, n, rng)
	return &ParsaPlan{Options: po, Blocks: make([][]uint32, b), Lo: lo, Hi: hi, ParamSeed: rng.Uint64(),
		Stats: st, n: n, m: m, opt: opt}
}

// BlockPartitioner runs Alg. 3 of seed 001 on one block at a time against
// a NeighborSets, reusing its memory from block to block. It is not safe
// for concurrent use.
type BlockPartitioner struct {
	r   *runner
	blk *block
}

// NewBlockPartitioner returns a partitioner of the plan's blocks.
func (pl *ParsaPlan) NewBlockPartitioner() *BlockPartitioner {
	k := pl.opt.K
	r := &runner{g: pl.g, m: pl.m, k: k, counts: make([]int64, k), po: pl.Options,
		limit: slices.Min(pl.Hi), grow: growParsa}
	blk := newBlock(k, pl.m)
	return &BlockPartitioner{r: r, blk: blk}
}

// Global runs the global initialisation (seed 001 §4.4): the plan's
// global sample partitioned as one block from empty sets, whose neighbour
// sets N(U_i) replace those of sets (Reset, then Push). It does nothing
// when the plan has no global sample.
func (bp *BlockPartitioner) Global(pl *ParsaPlan, sets NeighborSets) {
	if pl.Global == nil {
		return
	}
	bp.GlobalRows(GraphRows(pl.g, pl.Global), sets)
}

// SharedSets are neighbour sets that also hold the sample counts |U_i|
// of the blocks pushed to them: what the processes of a distributed run
// share (seed 001 Alg. 4, "Server").
type SharedSets interface {
	NeighborSets
	// Counts writes |U_i| as of the last Pull into dst (len k).
	Counts(dst []int64)
	// PushBlock is Push that also adds added[i] to |U_i|, in one step.
	PushBlock(params []uint32, masks []uint64, added []int64)
}

// BlockRows are the rows of one block's samples, sorted by sample, in CSR
// form: with Local, sample Samples[s]'s parameters are Adj[Off[s]:Off[s+1]]
// (a block read from a file); without, Off and Adj are the whole graph's
// (graph.SampleOffsets, SampleAdjacency) and indexed by sample.
type BlockRows struct {
	Samples []uint32
	Off     []int64
	Adj     []uint32
	Local   bool
}

// GraphRows returns the rows of the samples of g, read in place.
func GraphRows(g *graph.Graph, samples []uint32) BlockRows {
	return BlockRows{Samples: samples, Off: g.SampleOffsets(), Adj: g.SampleAdjacency()}
}

// Row returns the parameters of local sample s.
func (b BlockRows) Row(s int) []uint32 {
	u := s
	if !b.Local {
		u = int(b.Samples[s])
	}
	return b.Adj[b.Off[u]:b.Off[u+1]]
}

// Partition assigns every sample of one block by Alg. 3: it pulls the
// block's neighbour sets and the counts |U_i| from sets, grows the
// partitions, pushes the block's neighbour sets N(U_{i,block}) and the
// samples it gave each partition to sets (PushBlock) and writes each
// sample's partition to data, indexed by sample. It returns the samples
// it gave each partition, valid until the next call.
func (bp *BlockPartitioner) Partition(samples []uint32, sets SharedSets, data []int32) []int64 {
	out := bp.PartitionRows(GraphRows(bp.r.g, samples), sets)
	for s, u := range samples {
		data[u] = out[s]
	}
	return bp.blk.added
}

// PartitionRows is Partition on a block given by its rows. It returns the
// partition of each of rows.Samples, in their order, valid until the next
// call; the samples given each partition are in Added.
func (bp *BlockPartitioner) PartitionRows(rows BlockRows, sets SharedSets) []int32 {
	r, blk := bp.r, bp.blk
	r.sets = sets
	blk.buildRows(rows.Samples, rows.Off, rows.Adj, rows.Local)
	blk.pull(sets)
	sets.Counts(r.counts)
	r.setView(blk, false, len(rows.Samples))
	r.grow(blk, 0)
	sets.PushBlock(blk.params, blk.own[:len(blk.params)*blk.w], blk.added)
	return blk.out[:len(rows.Samples)]
}

// Added returns the samples the last block gave each partition, valid
// until the next call.
func (bp *BlockPartitioner) Added() []int64 { return bp.blk.added }

// Own returns the neighbour sets N(U_{i,block}) of the last block: its
// parameters and, MaskWords(k) words each, the partitions whose samples
// of the block use them. They are valid until the next call.
func (bp *BlockPartitioner) Own() (params []uint32, masks []uint64) {
	blk := bp.blk
	return blk.params, blk.own[:len(blk.params)*blk.w]
}

// GlobalRows is Global given the rows of the plan's global sample.
func (bp *BlockPartitioner) GlobalRows(rows BlockRows, sets NeighborSets) {
	r := bp.r
	r.sets = sets
	r.globalRows(newBlock(r.k, r.m), rows)
}

// Finish ends a run whose samples p.Data places, every one of them: it
// moves the few samples needed to restore the bounds Lo ≤ |U_i| ≤ Hi
// that stale views missed (against the neighbour sets of p.Data), refines
// if the options ask, and assigns the parameters, overwriting p.Param. It
// returns the run's statistics.
func (pl *ParsaPlan) Finish(p *placement.Placement) (*ParsaStats, error) {
	st, err := pl.Repair(p)
	if err != nil {
		return nil, err
	}
	if st.Params, err = assignParamsWith(pl.g, p, pl.opt.ParamAlgo, pl.ParamSeed, pl.Options.Threads); err != nil {
		return nil, err
	}
	return st, nil
}

// Samples and Params return the numbers of samples and parameters.
func (pl *ParsaPlan) Samples() int { return pl.n }
func (pl *ParsaPlan) Params() int  { return pl.m }

// K returns the number of partitions.
func (pl *ParsaPlan) K() int { return pl.opt.K }

// ParamAlgo returns the parameter assignment the options ask for.
func (pl *ParsaPlan) ParamAlgo() ParamAlgo { return pl.opt.ParamAlgo }

// Repair is Finish without the parameter assignment: it restores the
// bounds and refines if the options ask, and leaves p.Param alone. A
// distributed run assigns the parameters itself after it. It needs the
// graph: a plan of a file (PlanParsaCounts) repairs with
// ooc.FilePlan.Repair.
func (pl *ParsaPlan) Repair(p *placement.Placement) (*ParsaStats, error) {
	g, k := pl.g, pl.opt.K
	if g == nil {
		return nil, errors.New("parsa: repair: the plan of a file has no graph (ooc.FilePlan.Repair)")
	}
	if p.K != k || len(p.Data) != g.NumSamples() || len(p.Param) != g.NumParams() {
		return nil, fmt.Errorf("parsa: finish: placement of %d samples and %d parameters on %d machines, want %d, %d and %d",
			len(p.Data), len(p.Param), p.K, g.NumSamples(), g.NumParams(), k)
	}
	for u, i := range p.Data {
		if i < 0 || int(i) >= k {
			return nil, fmt.Errorf("parsa: finish: sample %d is on machine %d: want 0..%d", u, i, k-1)
		}
	}
	st := pl.Stats
	sets := NewMemNeighborSets(g.NumParams(), k)
	seedSets(g, p.Data, k, sets)
	r := &runner{g: g, p: p, k: k, sets: sets, po: pl.Options, blocks: pl.Blocks}
	st.Repaired = r.rebalance(pl.Lo, pl.Hi)
	po := pl.Options
	if po.Refine > 0 && len(pl.todo) > 0 {
		rf := newRefiner(g, p.Data, k, pl.Lo, pl.Hi)
		st.Refine.Before = rf.sum
		for st.Refine.Passes < po.Refine {
			st.Refine.Passes++
			mv := rf.pass(pl.todo, &st.Refine)
			st.Refine.Moves += mv
			if mv == 0 {
				break
			}
		}
		st.Refine.After = rf.sum
	}
	return &st, nil
}
