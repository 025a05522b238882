package distparsa

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"colo/graph"
	"colo/partition"
	"colo/partition/ooc"
	"colo/placement"
	"colo/ps/clock"
	"colo/ps/worker"
)

// Config is what a distributed run adds to partition.Options.
type Config struct {
	// Workers is W, the number of workers, each beside a server.
	Workers int `json:"workers"`
	// Tau is the delay bound τ in blocks (rounds of the parameter
	// server): 0 is BSP, where the blocks of a round see every block of
	// the rounds before and nothing else, so the result does not depend on
	// timing; τ ≥ 1 is bounded delay, where a worker runs at most τ
	// rounds ahead of the slowest; partition.TauInfinite is asynchronous,
	// eventual consistency.
	Tau int `json:"tau"`
}

// DefaultConfig returns two workers under BSP.
func DefaultConfig() Config { return Config{Workers: 2} }

// Validate checks c; errors name the field and the bound.
func (c Config) Validate() error {
	switch {
	case c.Workers < 1:
		return fmt.Errorf("distparsa: Workers %d: want at least 1", c.Workers)
	case c.Tau < 0 && c.Tau != partition.TauInfinite:
		return fmt.Errorf("distparsa: Tau %d: want τ ≥ 0 or TauInfinite (%d)", c.Tau, partition.TauInfinite)
	case c.Tau > clock.MaxTau:
		return fmt.Errorf("distparsa: Tau %d: want at most %d", c.Tau, clock.MaxTau)
	}
	return nil
}

// Clock returns the parameter server's consistency model for c.Tau.
func (c Config) Clock() clock.Config {
	switch {
	case c.Tau == 0:
		return clock.Config{Mode: clock.BSP}
	case c.Tau < 0:
		return clock.Config{Mode: clock.Async}
	}
	return clock.Config{Mode: clock.Bounded, Tau: c.Tau}
}

// Layout returns the key space of a run of c over g with k partitions.
func (c Config) Layout(g *graph.Graph, k int) Layout {
	return c.LayoutOf(g.NumSamples(), g.NumParams(), k)
}

// LayoutOf is Layout for a graph of n samples and m parameters
// (ooc.CountFile counts them in a file).
func (c Config) LayoutOf(n, m, k int) Layout {
	return Layout{Params: m, Samples: n, K: k, Workers: c.Workers}
}

// minBlocks is the least number of automatic blocks of a run of c:
// partition.MinBlocks per worker (PlanOptions).
func (c Config) minBlocks() int {
	if c.Workers > 1 {
		return partition.MinBlocks * c.Workers
	}
	return partition.MinBlocks
}

// PlanOptions returns opt as a run of c plans it: automatic blocks
// (opt.Parsa.Blocks 0) are at least partition.MinBlocks per worker, so
// that each worker partitions several blocks and the blocks of a round,
// which see the same sets, are a small part of the whole.
func (c Config) PlanOptions(g *graph.Graph, opt partition.Options) partition.Options {
	if opt.Parsa.Blocks == 0 && c.Workers > 1 {
		e := (g.NumEdges() + partition.DefaultBlockEdges - 1) / partition.DefaultBlockEdges
		opt.Parsa.Blocks = int(max(int64(c.minBlocks()), e))
	}
	return opt
}

// Blocks returns the blocks of worker rank among W: rank, rank+W, … of
// the plan's b blocks.
func Blocks(b, workers, rank int) []int {
	var out []int
	for j := rank; j < b; j += workers {
		out = append(out, j)
	}
	return out
}

// Result is what a worker reports of a run.
type Result struct {
	Rank int `json:"rank"`
	// Blocks and Samples are those the worker partitioned.
	Blocks  int `json:"blocks"`
	Samples int `json:"samples"`
	// Seconds is the worker's time from its first pull to the end; of it,
	// BlockSeconds in its blocks (Alg. 3 with the waits for pulls and
	// pushes that Sets counts), BarrierSeconds in the two barriers around
	// them, RepairSeconds in gathering the placement and repairing it
	// (worker 0; the others wait) and ParamSeconds in the parameter
	// assignment.
	Seconds        float64 `json:"seconds"`
	BlockSeconds   float64 `json:"block_seconds"`
	BarrierSeconds float64 `json:"barrier_seconds"`
	RepairSeconds  float64 `json:"repair_seconds"`
	ParamSeconds   float64 `json:"param_seconds"`
	// WriteSeconds is worker 0's evaluation and writing of the
	// placement after its work, when it read a file (RunNode).
	WriteSeconds float64  `json:"write_seconds,omitempty"`
	Sets         SetStats `json:"sets"`
	// File is what the worker's reading of the data file cost (a run of
	// RunNode): the passes' seconds, the spill bytes, the counts; PeakRSS
	// is the process's peak resident memory at the end of the run (0
	// where the system does not tell).
	File    *ooc.OutOfCoreStats `json:"file,omitempty"`
	PeakRSS int64               `json:"peak_rss,omitempty"`
	// Placement and Stats are rank 0's: the whole placement and the run's
	// statistics.
	Placement *placement.Placement  `json:"-"`
	Stats     *partition.ParsaStats `json:"-"`
}

// Work runs worker w's share of the plan pl of g (seed 001 Alg. 4,
// "Worker"), on a cluster whose key space and width are cfg.Layout's and
// whose consistency model is cfg.Clock(). In rounds of the parameter
// server:
//
//   - round 0: worker 0 runs the global initialisation and pushes its
//     neighbour sets; the others push nothing. Every worker waits for
//     every push of round 0 (a barrier) before it goes on.
//   - rounds 1..⌈b/W⌉: worker w partitions blocks w, w+W, …: one pull of
//     the block's sets and the counts |U_i|, Alg. 3, one push of what the
//     block added (a worker out of blocks pushes nothing).
//   - every worker pushes the partition of its samples, then a barrier;
//     worker 0 pulls the whole data placement, checks that every sample
//     is placed once, restores the balance bounds and refines if asked
//     (partition.ParsaPlan.Repair) and pushes the samples it moved, which
//     the workers that own them pull;
//   - the workers assign the parameters by Alg. 2 together (params.go),
//     and worker 0 pulls the result. A parameter assignment other than
//     Alg. 2 (minmax) runs on worker 0 alone.
//
// Result.Placement is set on worker 0 only.
func Work(ctx context.Context, w *worker.Worker, g *graph.Graph, pl *partition.ParsaPlan, cfg Config) (*Result, error) {
	return work(ctx, w, graphSource{g, pl}, pl, cfg, nil)
}

// source is what a worker reads of the dataset: the rows of its own
// blocks and of the global initialisation's sample, and, on worker 0,
// what the end of the run needs.
type source interface {
	// rows returns the rows of block j of the plan, one of the worker's;
	// they stay valid until the next call.
	rows(j int) (partition.BlockRows, error)
	// global returns the rows of the plan's global sample (worker 0).
	global() (partition.BlockRows, error)
	// repair restores the balance bounds of the data placement p.Data and
	// refines if asked (worker 0).
	repair(p *placement.Placement) (*partition.ParsaStats, error)
	// assign assigns the parameters by an algorithm other than Alg. 2
	// (worker 0).
	assign(p *placement.Placement) (partition.ParamStats, error)
}

// graphSource reads the graph in memory.
type graphSource struct {
	g  *graph.Graph
	pl *partition.ParsaPlan
}

func (s graphSource) rows(j int) (partition.BlockRows, error) {
	return partition.GraphRows(s.g, s.pl.Blocks[j]), nil
}

func (s graphSource) global() (partition.BlockRows, error) {
	return partition.GraphRows(s.g, s.pl.Global), nil
}

func (s graphSource) repair(p *placement.Placement) (*partition.ParsaStats, error) {
	return s.pl.Repair(p)
}

func (s graphSource) assign(p *placement.Placement) (partition.ParamStats, error) {
	return partition.AssignParamsWith(s.g, p, s.pl.ParamAlgo(), s.pl.ParamSeed)
}

// work is Work with a hook called after each block (tests).
func work(ctx context.Context, w *worker.Worker, src source, pl *partition.ParsaPlan, cfg Config, afterBlock func(rank, block int)) (*Result, error) {
	rank, k := w.Rank(), pl.K()
	l := Layout{Params: pl.Params(), Samples: pl.Samples(), K: k, Workers: cfg.Workers}
	if rank >= cfg.Workers {
		return nil, fmt.Errorf("distparsa: worker rank %d of a run of %d workers", rank, cfg.Workers)
	}
	if got, want := w.Clock(), cfg.Clock(); got != want {
		return nil, fmt.Errorf("distparsa: the cluster's consistency is %v τ=%d, the run's %v τ=%d", got.Mode, got.Tau, want.Mode, want.Tau)
	}
	sets, err := NewSets(w, l)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	res := &Result{Rank: rank}
	bp := pl.NewBlockPartitioner()
	if rank == 0 && pl.Stats.InitSample > 0 {
		rows, err := src.global()
		if err != nil {
			return nil, fmt.Errorf("distparsa: worker 0: the global initialisation's sample: %w", err)
		}
		bp.GlobalRows(rows, sets)
	} else {
		sets.PushEmpty()
	}
	if err := sets.Err(); err != nil {
		return nil, err
	}
	tb := time.Now()
	if err := w.Barrier(ctx); err != nil {
		return nil, fmt.Errorf("distparsa: worker %d: barrier after the initialisation: %w", rank, err)
	}
	res.BarrierSeconds += time.Since(tb).Seconds()

	var own []ownBlock
	// The masks C_v of this worker's samples, for Alg. 2: the union of
	// its blocks' neighbour sets N(U_{i,block}).
	mw := partition.MaskWords(k)
	local := make([]uint64, l.Params*mw)
	b := len(pl.Blocks)
	rounds := (b + cfg.Workers - 1) / cfg.Workers
	for r := range rounds {
		j := r*cfg.Workers + rank
		tb := time.Now()
		if j >= b {
			sets.PushEmpty()
		} else {
			rows, err := src.rows(j)
			if err != nil {
				return nil, fmt.Errorf("distparsa: worker %d: block %d: %w", rank, j, err)
			}
			part := bp.PartitionRows(rows, sets)
			own = append(own, ownBlock{j: j, samples: slices.Clone(rows.Samples), part: slices.Clone(part)})
			params, masks := bp.Own()
			for x, v := range params {
				for y := range mw {
					local[int(v)*mw+y] |= masks[x*mw+y]
				}
			}
			res.Blocks++
			res.Samples += len(rows.Samples)
		}
		if err := sets.Err(); err != nil {
			return nil, err
		}
		res.BlockSeconds += time.Since(tb).Seconds()
		if afterBlock != nil {
			afterBlock(rank, j)
		}
	}

	if err := pushData(w, l, own); err != nil {
		return nil, err
	}
	tb = time.Now()
	if err := w.Barrier(ctx); err != nil {
		return nil, fmt.Errorf("distparsa: worker %d: barrier after the data placement: %w", rank, err)
	}
	res.BarrierSeconds += time.Since(tb).Seconds()

	tf := time.Now()
	var p *placement.Placement
	var st *partition.ParsaStats
	var moved []uint32 // worker 0: the samples repair moved
	var before []int32
	if rank == 0 {
		if p, err = collect(w, l, sets); err != nil {
			return nil, err
		}
		before = slices.Clone(p.Data)
		if st, err = src.repair(p); err != nil {
			return nil, fmt.Errorf("distparsa: worker 0: %w", err)
		}
		for u, i := range p.Data {
			if i != before[u] {
				moved = append(moved, uint32(u))
			}
		}
	}
	if mine, err := movePlaced(ctx, w, l, own, moved, before, p); err != nil {
		return nil, err
	} else if mine {
		local = nil // a sample of this worker moved: its masks are recomputed
	}
	res.RepairSeconds = time.Since(tf).Seconds()

	tp := time.Now()
	if algo := pl.ParamAlgo(); algo == "" || algo == partition.ParamParsa {
		ps, err := assignParams(ctx, w, l, own, local, src.rows, pl.ParamSeed)
		if err != nil {
			return nil, err
		}
		if rank == 0 {
			st.Params = ps
			if err := pullParams(w, l, p.Param); err != nil {
				return nil, err
			}
		}
	} else if rank == 0 {
		if st.Params, err = src.assign(p); err != nil {
			return nil, fmt.Errorf("distparsa: worker 0: %w", err)
		}
	}
	res.ParamSeconds = time.Since(tp).Seconds()
	if rank == 0 {
		st.Threads, st.Tau = cfg.Workers, cfg.Tau
		res.Placement, res.Stats = p, st
	}
	res.Sets = sets.Stats()
	res.Seconds = time.Since(start).Seconds()
	return res, nil
}

// pushData pushes the partition of the samples of the worker's blocks to
// the result keys, and waits for the push.
func pushData(w *worker.Worker, l Layout, own []ownBlock) error {
	type placed struct {
		u uint32
		i int32
	}
	var all []placed
	for _, ob := range own {
		for s, u := range ob.samples {
			all = append(all, placed{u, ob.part[s]})
		}
	}
	slices.SortFunc(all, func(a, b placed) int { return int(a.u) - int(b.u) })
	k := l.K
	var keys []uint64
	var vals []float32
	for _, x := range all {
		key := uint64(l.data() + int(x.u)/k)
		if len(keys) == 0 || keys[len(keys)-1] != key {
			keys = append(keys, key)
			vals = append(vals, make([]float32, k)...)
		}
		vals[len(vals)-k+int(x.u)%k] = float32(x.i + 1)
	}
	if err := w.Push(keys, vals).Wait(); err != nil {
		return fmt.Errorf("distparsa: worker %d: push of the partition of its %d samples: %w", w.Rank(), len(all), err)
	}
	return nil
}

// movePlaced makes the samples that worker 0's repair moved (moved, from
// before[u] to p.Data[u]) known to the workers that own them: worker 0
// pushes the changes to the result keys, the others an empty push, and
// each worker pulls the keys of its samples again. Nothing happens when
// nothing moved (the workers agree on that by an all-reduce). It reports
// whether a sample of this worker moved.
func movePlaced(ctx context.Context, w *worker.Worker, l Layout, own []ownBlock, moved []uint32, before []int32, p *placement.Placement) (bool, error) {
	rank, k := w.Rank(), l.K
	n, err := w.AllReduce(ctx, []float64{float64(len(moved))})
	if err != nil {
		return false, fmt.Errorf("distparsa: worker %d: all-reduce of the samples moved: %w", rank, err)
	}
	if n[0] == 0 {
		return false, nil
	}
	var keys []uint64
	var vals []float32
	for _, u := range moved {
		key := uint64(l.data() + int(u)/k)
		if len(keys) == 0 || keys[len(keys)-1] != key {
			keys = append(keys, key)
			vals = append(vals, make([]float32, k)...)
		}
		vals[len(vals)-k+int(u)%k] = float32(p.Data[u] - before[u])
	}
	if err := w.Push(keys, vals).Wait(); err != nil {
		return false, fmt.Errorf("distparsa: worker %d: push of the %d samples moved: %w", rank, len(moved), err)
	}
	if err := w.Barrier(ctx); err != nil {
		return false, fmt.Errorf("distparsa: worker %d: barrier after the samples moved: %w", rank, err)
	}
	keys = keys[:0]
	for _, ob := range own {
		for _, u := range ob.samples {
			keys = append(keys, uint64(l.data()+int(u)/k))
		}
	}
	slices.Sort(keys)
	keys = slices.Compact(keys)
	vals = make([]float32, len(keys)*k)
	if err := w.Pull(keys, vals).Wait(); err != nil {
		return false, fmt.Errorf("distparsa: worker %d: pull of the partition of its samples: %w", rank, err)
	}
	mine := false
	for _, ob := range own {
		for s, u := range ob.samples {
			key := uint64(l.data() + int(u)/k)
			at, _ := slices.BinarySearch(keys, key)
			x := vals[at*k+int(u)%k]
			if x != float32(math.Trunc(float64(x))) || x < 1 || x > float32(k) {
				return false, fmt.Errorf("distparsa: worker %d: sample %d: the servers hold %g for its partition + 1 after the repair", rank, u, x)
			}
			mine = mine || ob.part[s] != int32(x)-1
			ob.part[s] = int32(x) - 1
		}
	}
	return mine, nil
}

// collect pulls the whole data placement and the counts |U_i| and checks
// that they agree: every sample placed exactly once.
func collect(w *worker.Worker, l Layout, sets *Sets) (*placement.Placement, error) {
	n, k := l.Samples, l.K
	rows := (n + k - 1) / k
	vals := make([]float32, rows*k)
	begin := uint64(l.data())
	if err := w.PullRange(begin, begin+uint64(rows), vals).Wait(); err != nil {
		return nil, fmt.Errorf("distparsa: worker %d: pull of the data placement: %w", w.Rank(), err)
	}
	sets.Pull(nil, nil)
	if err := sets.Err(); err != nil {
		return nil, err
	}
	counts := make([]int64, k)
	sets.Totals(counts)
	p := placement.New(k, n, l.Params)
	got := make([]int64, k)
	for u := range n {
		v := vals[u]
		if v != float32(math.Trunc(float64(v))) || v < 1 || v > float32(k) {
			return nil, fmt.Errorf("distparsa: sample %d: the servers hold %g for its partition + 1: placed by no worker, or by more than one", u, v)
		}
		p.Data[u] = int32(v) - 1
		got[p.Data[u]]++
	}
	if !slices.Equal(got, counts) {
		return nil, fmt.Errorf("distparsa: the workers counted %v samples per partition, the data placement has %v", counts, got)
	}
	return p, nil
}
