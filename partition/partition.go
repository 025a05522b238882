// Package partition holds colo's partitioners: algorithms that place the
// samples and parameters of a graph on k machines so that the cost model of
// package placement is small.
//
// Every partitioner is a pure function of the graph, its options and a
// seed: it reads no files, keeps no global state and returns the same
// placement for the same input. Long runs report progress through
// Options.Progress and what they did through Options.Report.
//
// The algorithms:
//
//	random    uniform random samples and parameters, or balanced samples
//	          (|U_i| ≤ ⌈n/k⌉); the baseline of every comparison.
//	random-rows  balanced random samples, and the parameters cut in k
//	          contiguous ranges of equal size by id: the row-wise
//	          sharding of embedding tables (TorchRec), a baseline.
//	parsa     Parsa (seed 001): submodular greedy partitioning of the
//	          samples, then of the parameters; the default.
//	tsh       the two-step heuristic of seed 000 §4 (Alg. 1 for the
//	          samples, α = 1 or 2: tsh1, tsh2), then the parameters.
//	mbp       multilevel bipartite partitioning (seed 000 §5): coarsen
//	          samples and parameters, partition, uncoarsen with k-way FM.
//	lex       samples sorted by their rarest parameters and cut into k
//	          runs: a fast start for refinement on data with few, popular
//	          parameters.
//	bisect    recursive bisection: each subset of samples cut in rarity
//	          order ranked within it, or multilevel, where the fewest
//	          parameters cross, improved by moving whole groups and by
//	          two-way FM; the best start on data with few, popular
//	          parameters.
//	community the Louvain method's communities of samples and
//	          parameters packed onto the machines, largest first; with
//	          Refine's annealing (RefineOptions.Anneal) the best start on
//	          graphs made of communities.
//	best      Refine from Parsa's and from Bisect's placement, and on
//	          small graphs from Community's with annealing, or else a
//	          thorough Refine from two more Parsa seeds, keeping the one
//	          of lower T_max (then T_sum).
//	rmax      best, and its start of lowest R_max refined by RefineRound
//	          for the bound of a synchronous round: samples and
//	          parameters moved together so that no machine pulls more
//	          than half its link while T_i stays balanced, T_sum within
//	          2%; keeps the candidate of lowest R_max (T_max with
//	          Options.Async).
//
// Any name followed by "+refine" (parsa+refine) runs Refine on the result:
// k-way FM on the samples with multilevel V-cycles, then the parameters,
// then moves off the busiest machine, never worsening its target (T_max
// by default); RefineOptions.Anneal adds simulated annealing of the
// samples on the busiest machine's floor of traffic before the
// parameters. The parameters of every partitioner that places samples
// first are placed by Options.ParamAlgo: AssignParams (seed 001 Alg. 2
// with sweeps, the default) or MinMaxParams (seed 000 Alg. 2). For
// synchronous training, Options.Directions then moves parameters so that
// no machine pulls much more than it serves (BalanceDirections): the
// round bound R_max of placement.Cost, not T_max, is what a BSP round
// takes.
//
// # Parsa
//
// Parsa splits placement in two (seed 001 §3). First the samples: a
// partition U_i costs its worker |N(U_i)|, the parameters it needs, a
// submodular function of U_i. Alg. 3 grows the partitions one sample at a
// time: the partition to grow takes the unassigned sample u with the least
// A_i(u) = |N(u) \ S_i|, the parameters it would add to the partition's
// neighbour set S_i (Eq. (9)–(10)). Then the parameters: AssignParams puts
// each on a machine that needs it, balancing the traffic T_i (Alg. 2 plus
// local search).
//
// The costs A_i live in one bucket queue per partition: doubly linked lists
// by cost with head pointers (Fig. 5). Costs only ever drop by one, so a
// decrement is O(1) and all of Alg. 3 takes O(k·|E|) time, in practice
// 0.1–0.3 s per million edges at k = 16 on one core.
//
// The partition to grow is, by default, a smallest by |U_i| (every |U_i|
// ends ⌊n/k⌋ or ⌈n/k⌉), among those the one whose cheapest sample is
// cheapest; with GrowParams it is the one with the smallest |S_i| (Alg. 3,
// line 6) among those with |U_i| < ⌈(1+ε)n/k⌉.
//
// U is cut into b random blocks, partitioned in turn (§4.2); the S_i carry
// over from block to block and only the current block's costs are in
// memory, O(k·block) beside the graph. The neighbour sets start from
// (§4.4):
//
//	InitIndividual  the first a blocks are partitioned, and before each
//	                of them and before the real pass the S_i are reset to
//	                the neighbour sets of the previous one's partition;
//	                their assignments are dropped (the default, a = b);
//	InitGlobal      a random fraction of the samples is partitioned first
//	                and its neighbour sets are the start;
//	InitNone        empty sets;
//	InitFrom        incremental: the samples of an earlier placement keep
//	                their machines, S_i = N(U_i) of them, and only new
//	                samples are placed.
//
// With Threads > 1 (§4.3, Alg. 4) goroutines take blocks in order and
// partition each against the shared neighbour sets, which sit behind the
// NeighborSets interface so that a parameter server can hold them. Block t
// starts from exactly what blocks 0..t−τ−1 pushed, so the output depends on
// the seed and τ but not on timing or the thread count; τ = 0 is the
// sequential algorithm, TauInfinite is eventual consistency. A run whose
// view was stale ends by moving the few samples needed to restore the
// balance bound.
//
// Refine > 0 adds passes of local search after Alg. 3 that move samples,
// singly or in pairs between two partitions, when that lowers Σ_i |N(U_i)|
// (and so T_sum) within the balance bound; it costs about one Alg. 3 pass
// each and 4·k bytes per parameter, and lowers T_max by a further 5–10% on
// the datasets of docs/parsa.md.
//
// Example:
//
//	opt := partition.Options{K: 16, Seed: 1, Parsa: partition.DefaultParsaOptions()}
//	opt.Parsa.Threads = 2
//	p, err := partition.Parsa(g, opt)
//	// p.Data[u] is the machine of sample u, p.Param[v] that of parameter v.
//
// AssignParams alone places the parameters of any data partition; colo eval
// uses it when no parameter placement is given.
//
// Parsa out of core, over a file that is never loaded, is package
// partition/ooc: it does the file and spill I/O and drives this
// package's ParsaStream over the rows of one block at a time, the
// parameter step on the machine masks (AssignParamsMasks) and the cost
// model on them (CostFromMasks), for the same placement as Parsa.
package partition

import (
	"fmt"
	"sort"
	"strings"

	"colo/graph"
	"colo/placement"
)

// Options are the settings shared by all partitioners.
type Options struct {
	// K is the number of machines, 1 ≤ K ≤ number of samples.
	K int
	// Seed seeds every random choice.
	Seed uint64
	// Balanced makes random placement deal samples evenly, |U_i| ≤ ⌈n/k⌉.
	Balanced bool
	// Theta is the memory bound θ on |N(U_i)| (0: none); partitioners that
	// honour it say so.
	Theta int64
	// Progress, when set, is called now and then with the work done and
	// the total, in an algorithm-defined unit.
	Progress func(done, total int64)
	// Phase, when set, is called when a named part of a run made of parts
	// ends (a start of best, the partitioner and then the refinement of
	// name+refine), with the number of parts ended and their total.
	Phase func(name string, done, total int)
	// Report, when set, receives what a partitioner reports of its run
	// under a name, for placement.Summary.Details.
	Report func(name string, value any)
	// Parsa holds the settings of the parsa partitioner.
	Parsa ParsaOptions
	// ParamAlgo is the parameter assignment that partitioners which place
	// the samples first use for the parameters; "" means ParamParsa.
	ParamAlgo ParamAlgo
	// TSH holds the settings of the tsh partitioner.
	TSH TSHOptions
	// MBP holds the settings of the mbp partitioner.
	MBP MBPOptions
	// Refine holds the settings of the k-way refinement that the name
	// suffix "+refine" (or Refine.Enabled) adds to any partitioner.
	Refine RefineOptions
	// Directions, for synchronous training, balances what each machine's
	// server answers against what its worker pulls once the partitioner
	// (and any refinement) is done: BalanceDirections, which lowers R_max
	// at the cost of a higher T_max. Partitioners found by Lookup apply
	// it, and Best then keeps the start of lowest R_max.
	Directions bool
	// Round, for synchronous training, makes Best also refine its start
	// of lowest R_max with RefineRound (settings RoundOpt), moving
	// samples and parameters together to lower R_max within a T_sum
	// slack, and keep the candidate of lowest R_max (T_max with Async).
	// The partitioner "rmax" is Best with Round.
	Round    bool
	RoundOpt RoundOptions
	// Async says the placement is for training whose time T_max bounds,
	// not R_max: training that does not wait for rounds (asynchronous or
	// bounded delay), or servers on machines apart from the workers, where
	// no link carries both a worker's pulls and a server's answers. Best
	// with Round then compares its candidates on T_max.
	Async bool
}

// Validate checks the options against a graph of n samples.
func (o Options) Validate(n int) error {
	if err := placement.CheckK(o.K, n); err != nil {
		return err
	}
	return o.Check()
}

// Check checks the settings that do not depend on the graph (all but K):
// what a command can refuse before it reads its input.
func (o Options) Check() error {
	if err := o.Parsa.Validate(); err != nil {
		return err
	}
	if err := o.Refine.Validate(); err != nil {
		return err
	}
	if o.Theta < 0 {
		return fmt.Errorf("theta = %d: want 0 (no bound) or a positive bound", o.Theta)
	}
	if err := o.RoundOpt.Validate(); err != nil {
		return err
	}
	return o.ParamAlgo.Validate()
}

// Func is a partitioner.
type Func func(g *graph.Graph, opt Options) (*placement.Placement, error)

// algorithms lists the partitioners by name.
var algorithms = map[string]Func{
	"random":      Random,
	"random-rows": RandomRows,
	"parsa":       Parsa,
	"tsh":         TSH,
	"tsh1":        withAlpha(1),
	"tsh2":        withAlpha(2),
	"mbp":         MBP,
	"lex":         Lex,
	"bisect":      Bisect,
	"community":   Community,
	"best":        Best,
	"rmax":        RMax,
}

// withAlpha is TSH with α fixed.
func withAlpha(alpha int) Func {
	return func(g *graph.Graph, opt Options) (*placement.Placement, error) {
		opt.TSH.Alpha = alpha
		return TSH(g, opt)
	}
}

// RefineSuffix, appended to a partitioner's name, runs Refine on its
// placement: "parsa+refine".
const RefineSuffix = "+refine"

// Lookup returns the partitioner called name: one of Names, optionally
// followed by RefineSuffix. The partitioner it returns also refines when
// Options.Refine.Enabled is set, and ends with BalanceDirections when
// Options.Directions is.
func Lookup(name string) (Func, error) {
	base, refine := strings.CutSuffix(name, RefineSuffix)
	f, ok := algorithms[base]
	if !ok {
		return nil, fmt.Errorf("unknown algorithm %q: want one of %s, optionally followed by %s", name, strings.Join(Names(), ", "), RefineSuffix)
	}
	run := refined(f, base, refine)
	return func(g *graph.Graph, opt Options) (*placement.Placement, error) {
		p, err := run(g, opt)
		if err != nil || !opt.Directions || ((base == "best" || base == "rmax") && !(refine || opt.Refine.Enabled)) {
			// Best balanced its starts itself.
			return p, err
		}
		st := BalanceDirections(g, p, opt.Seed)
		if opt.Report != nil {
			opt.Report("directions", st)
		}
		return p, nil
	}, nil
}

// refined returns f, followed by Refine when refine or
// Options.Refine.Enabled is set.
func refined(f Func, base string, refine bool) Func {
	return func(g *graph.Graph, opt Options) (*placement.Placement, error) {
		if !(refine || opt.Refine.Enabled) {
			return f(g, opt)
		}
		// One total for both parts: the partitioner's progress fills
		// the first half, the end of the refinement the rest.
		sh := newShares(1, opt.Progress, nil)
		o := opt
		o.Progress, o.Phase = sh.part(0), nil
		p, err := f(g, o)
		if err != nil {
			return nil, err
		}
		if opt.Phase != nil {
			opt.Phase(base, 1, 2)
		}
		q, _, err := Refine(g, p, opt)
		if err != nil {
			return nil, err
		}
		sh.end(0, "refine")
		if opt.Phase != nil {
			opt.Phase("refine", 2, 2)
		}
		return q, nil
	}
}

// Names returns the names of the partitioners in alphabetical order.
func Names() []string {
	names := make([]string, 0, len(algorithms))
	for n := range algorithms {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
