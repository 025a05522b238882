package main

import (
	"fmt"
	"strconv"

	"colo/internal/cli"
	"colo/partition"
	"colo/placement"
)

// algoFlags registers the flags of the individual partitioners on f,
// writing into opt. `colo partition` and `colo eval` share them.
func algoFlags(f *cmdFlags, opt *partition.Options) {
	f.BoolVar(&opt.Balanced, "balanced", false, "random: deal samples evenly, |U_i| ≤ ⌈n/k⌉")

	po := &opt.Parsa
	*po = partition.DefaultParsaOptions()
	f.IntVar(&po.Blocks, "blocks", po.Blocks, fmt.Sprintf(
		"parsa: number of random blocks b partitioned in sequence (0: max(%d, |E|/%d))", partition.MinBlocks, partition.DefaultBlockEdges))
	f.Var(cli.NewEnum(&po.Init, []partition.InitMode{partition.InitNone, partition.InitIndividual, partition.InitGlobal}),
		"init", "parsa: initialisation of the neighbour sets: none, individual (partition the first a blocks and keep only their\nneighbour sets) or global (partition a sample first)")
	f.IntVar(&po.InitBlocks, "init-blocks", po.InitBlocks, "parsa: blocks a partitioned by --init individual (0: all b)")
	f.Float64Var(&po.GlobalFraction, "init-fraction", po.GlobalFraction, fmt.Sprintf("parsa: fraction of the samples partitioned by --init global (0: %g%%, but no more than about %dM edges' worth, a block's)",
		100*partition.DefaultGlobalFraction, partition.DefaultBlockEdges>>20))
	f.Func("init-from", "parsa: incremental: keep the placement in `DIR` (a colo partition output for the first samples of FILE)\nand place only the samples after them, starting from its neighbour sets", func(dir string) error {
		if dir == "" {
			return fmt.Errorf("want a placement directory")
		}
		po.InitFrom = func(n, k int) ([]int32, error) { return placement.LoadDataPartPrefix(dir, n, k) }
		return nil
	})
	f.IntVar(&po.Threads, "threads", po.Threads, "parsa: goroutines partitioning blocks in parallel")
	f.Var(tauFlag{&po.Tau}, "tau", "parsa: staleness τ in blocks: a number, auto (threads − 1) or inf (eventual consistency,\nnot reproducible)")
	f.Var(cli.NewEnum(&po.GrowBy, []partition.GrowBy{partition.GrowSamples, partition.GrowParams}),
		"grow-by", "parsa: partition to grow next: the one with the fewest samples, or with the smallest\nneighbour set (params) within |U_i| ≤ ⌈(1+ε)n/k⌉")
	f.Float64Var(&po.Epsilon, "epsilon", po.Epsilon, "parsa: sample imbalance ε allowed by --grow-by params")
	f.IntVar(&po.Refine, "parsa-refine", po.Refine, "parsa: passes of Parsa's own sample refinement that lower the total traffic (0: none)")

	paramAlgoFlag(f, &opt.ParamAlgo)

	to := &opt.TSH
	f.IntVar(&to.Alpha, "alpha", 1, "tsh: most samples added to a partition at a time, 1 (TSH-1) or 2 (TSH-2)")
	f.Float64Var(&to.Beta, "beta", 0, "tsh: weight β of |D_i ∪ S| in Alg. 1 (0: adaptive, a pair only when it adds fewer parameters per sample than the cheapest single sample)")
	f.Float64Var(&to.SampleRate, "sample-rate", 0, "tsh: probability that a sample is a candidate (0: n/(k|D′|) as in the paper, 1: all)")

	mo := &opt.MBP
	f.Var(cli.NewEnum(&mo.Initial, []partition.MBPInitial{partition.InitialRandom, partition.InitialGreedy}),
		"mbp-initial", "mbp: partition of the coarsest graph: random (as in the paper) or greedy")
	f.IntVar(&mo.Passes, "mbp-passes", 0, fmt.Sprintf("mbp: FM passes per level (0: %d)", partition.DefaultRefinePasses))

	ro := &opt.Refine
	f.BoolVar(&ro.Enabled, "refine", false, "refine the placement of any algorithm by k-way FM with V-cycles (as the suffix +refine)")
	f.Var(cli.NewEnum(&ro.Target, partition.RefineTargets()),
		"refine-target", "refine: cost to lower: tmax (default), tsum or objective (max|U_i|·T_max)")
	f.Float64Var(&ro.Epsilon, "refine-epsilon", 0, fmt.Sprintf("refine and mbp: sample imbalance ε, |U_i| ≤ ⌈(1+ε)n/k⌉ (0: %g)", partition.DefaultRefineEpsilon))
	f.IntVar(&ro.VCycles, "refine-vcycles", 0, fmt.Sprintf("refine: multilevel V-cycles (0: %d, negative: none)", partition.DefaultVCycles))
	f.IntVar(&ro.Passes, "refine-passes", 0, fmt.Sprintf("refine: FM passes per level (0: %d)", partition.DefaultRefinePasses))
	f.IntVar(&ro.Anneal, "refine-anneal", 0, "refine: steps per sample of simulated annealing on the busiest machine's floor of traffic (0: none)")
}

// paramAlgoFlag registers --param-algo.
func paramAlgoFlag(f *cmdFlags, p *partition.ParamAlgo) {
	*p = partition.ParamParsa
	f.Var(cli.NewEnum(p, partition.ParamAlgos()), "param-algo",
		"parameter assignment: parsa (seed 001 Alg. 2 with sweeps) or minmax (seed 000 Alg. 2)")
}

// tauFlag is the staleness flag: a number of blocks, auto or inf.
type tauFlag struct{ p *int }

func (t tauFlag) String() string {
	if t.p == nil {
		return ""
	}
	switch *t.p {
	case partition.TauAuto:
		return "auto"
	case partition.TauInfinite:
		return "inf"
	}
	return strconv.Itoa(*t.p)
}

func (t tauFlag) Set(s string) error {
	switch s {
	case "auto":
		*t.p = partition.TauAuto
	case "inf", "infinite":
		*t.p = partition.TauInfinite
	default:
		v, err := strconv.Atoi(s)
		if err != nil || v < 0 {
			return fmt.Errorf("want a number of blocks ≥ 0, auto or inf")
		}
		*t.p = v
	}
	return nil
}
