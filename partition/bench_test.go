package partition

import (
	"fmt"
	"math"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"colo/graph"
	"colo/placement"
)

// reportCost runs f b.N times and reports the cost of the last placement,
// the least time of a run (min_s: on a shared machine the mean also counts
// other processes) and the mean time per million edges.
func reportCost(b *testing.B, g *graph.Graph, k int, f func() *placement.Placement) {
	b.Helper()
	var p *placement.Placement
	best := math.Inf(1)
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		p = f()
		best = min(best, time.Since(start).Seconds())
	}
	b.StopTimer()
	c, err := placement.Evaluate(g, p, 0)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(c.TMax), "T_max")
	b.ReportMetric(float64(c.MMax), "M_max")
	b.ReportMetric(float64(c.TSum), "T_sum")
	b.ReportMetric(b.Elapsed().Seconds()/float64(b.N)/(float64(g.NumEdges())/1e6), "s/Medge")
	b.ReportMetric(best, "min_s")
}

// BenchmarkParsa runs Parsa with its defaults on the real datasets at the
// k of the reference table, on one thread.
//
//	go test ./partition -run '^$' -bench 'Parsa/' -benchtime 10x
func BenchmarkParsa(b *testing.B) {
	for _, line := range referenceLines {
		b.Run(fmt.Sprintf("%s/k=%d", line.data.name, line.k), func(b *testing.B) {
			g := line.data.load(b)
			reportCost(b, g, line.k, func() *placement.Placement {
				p, err := Parsa(g, Options{K: line.k, Seed: 1, Parsa: DefaultParsaOptions()})
				if err != nil {
					b.Fatal(err)
				}
				return p
			})
		})
	}
}

// BenchmarkParsaTable runs Parsa with its defaults on every real dataset
// for k = 2 … 64: the table of docs/parsa.md.
//
//	go test ./partition -run '^$' -bench ParsaTable -benchtime 5x
func BenchmarkParsaTable(b *testing.B) {
	for _, d := range datasets {
		for _, k := range []int{2, 4, 8, 16, 32, 64} {
			b.Run(fmt.Sprintf("%s/k=%d", d.name, k), func(b *testing.B) {
				g := d.load(b)
				reportCost(b, g, k, func() *placement.Placement {
					p, err := Parsa(g, Options{K: k, Seed: 1, Parsa: DefaultParsaOptions()})
					if err != nil {
						b.Fatal(err)
					}
					return p
				})
				base := placement.RandomBaseline(g, k)
				b.ReportMetric(base.TMax, "random_T_max")
				b.ReportMetric(base.MMax, "random_M_max")
				b.ReportMetric(base.TSum, "random_T_sum")
			})
		}
	}
}

var (
	genOnce  sync.Once
	genGraph *graph.Graph
)

// generated returns the power-law graph of the parallel benchmark: by
// default 1M samples and about 30M edges; COLO_BENCH_SAMPLES changes n.
func generated(b *testing.B) *graph.Graph {
	genOnce.Do(func() {
		n := 1_000_000
		if s := os.Getenv("COLO_BENCH_SAMPLES"); s != "" {
			v, err := strconv.Atoi(s)
			if err != nil || v < 1 {
				b.Fatalf("COLO_BENCH_SAMPLES=%q: want a sample count", s)
			}
			n = v
		}
		g, err := graph.PowerLaw(graph.DefaultPowerLaw(n, 7))
		if err != nil {
			b.Fatal(err)
		}
		genGraph = g
	})
	return genGraph
}

// BenchmarkParsaThreads runs Parsa at k = 16 on a generated power-law
// graph with 1 and 2 threads (τ = threads − 1): the speed-up and the
// quality lost to staleness.
//
//	go test ./partition -run '^$' -bench ParsaThreads -benchtime 3x
func BenchmarkParsaThreads(b *testing.B) {
	for _, threads := range []int{1, 2} {
		b.Run(fmt.Sprintf("threads=%d", threads), func(b *testing.B) {
			g := generated(b)
			po := DefaultParsaOptions()
			po.Threads = threads
			reportCost(b, g, 16, func() *placement.Placement {
				p, err := Parsa(g, Options{K: 16, Seed: 1, Parsa: po})
				if err != nil {
					b.Fatal(err)
				}
				return p
			})
		})
	}
}

// BenchmarkAssignParams times the parameter assignment alone on 20
// Newsgroups at k = 16, from a Parsa data partition.
func BenchmarkAssignParams(b *testing.B) {
	g := news20.load(b)
	p, err := Parsa(g, Options{K: 16, Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	reportCost(b, g, 16, func() *placement.Placement {
		AssignParams(g, p, 1)
		return p
	})
}

// BenchmarkBalanceDirections times BalanceDirections on 20 Newsgroups at
// k = 8, from Parsa's placement (each iteration from a copy of it), and
// reports R_max before and after.
//
//	go test ./partition -run '^$' -bench BalanceDirections
func BenchmarkBalanceDirections(b *testing.B) {
	g := news20.load(b)
	p, err := Parsa(g, Options{K: 8, Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	var st DuplexStats
	for b.Loop() {
		q := p.Clone()
		st = BalanceDirections(g, q, 1)
	}
	b.ReportMetric(float64(st.Before), "R_max_before")
	b.ReportMetric(float64(st.After), "R_max_after")
}

// BenchmarkRefineRound times RefineRound on 20 Newsgroups at k = 8 from
// Best's placement, and reports R_max, T_max and T_sum before and after,
// and ParamRoundBound's bound for the data partition before and after.
//
//	go test ./partition -run '^$' -bench RefineRound -benchtime 1x
func BenchmarkRefineRound(b *testing.B) {
	g := news20.load(b)
	p, err := Best(g, Options{K: 8, Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	var q *placement.Placement
	for b.Loop() {
		if q, _, err = RefineRound(g, p, RoundOptions{}, 1); err != nil {
			b.Fatal(err)
		}
	}
	before, _ := placement.Evaluate(g, p, 0)
	after, _ := placement.Evaluate(g, q, 0)
	b.ReportMetric(float64(before.RMax), "R_max_before")
	b.ReportMetric(float64(after.RMax), "R_max_after")
	b.ReportMetric(float64(before.TMax), "T_max_before")
	b.ReportMetric(float64(after.TMax), "T_max_after")
	b.ReportMetric(float64(before.TSum), "T_sum_before")
	b.ReportMetric(float64(after.TSum), "T_sum_after")
	// No parameter assignment of either data partition goes below its
	// bound.
	for name, p := range map[string]*placement.Placement{"before": p, "after": q} {
		bound, err := ParamRoundBound(g, p, 0)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(bound.Bound), "R_max_bound_"+name)
	}
}

// BenchmarkParsaSeeds runs the defaults with seeds 1–10 on every line of
// the reference table and reports the worst T_max and M_max (the time is
// that of all ten runs).
//
//	go test ./partition -run '^$' -bench ParsaSeeds -benchtime 1x
func BenchmarkParsaSeeds(b *testing.B) {
	for _, line := range referenceLines {
		b.Run(fmt.Sprintf("%s/k=%d", line.data.name, line.k), func(b *testing.B) {
			g := line.data.load(b)
			var worstT, worstM int64
			for b.Loop() {
				for seed := uint64(1); seed <= 10; seed++ {
					p, err := Parsa(g, Options{K: line.k, Seed: seed, Parsa: DefaultParsaOptions()})
					if err != nil {
						b.Fatal(err)
					}
					c, err := placement.Evaluate(g, p, 0)
					if err != nil {
						b.Fatal(err)
					}
					worstT, worstM = max(worstT, c.TMax), max(worstM, c.MMax)
				}
			}
			b.ReportMetric(float64(worstT), "worst_T_max")
			b.ReportMetric(float64(worstM), "worst_M_max")
			b.ReportMetric(float64(line.tmax), "reference_T_max")
		})
	}
}

var (
	ctrOnce  sync.Once
	ctrGraph *graph.Graph
)

// ctrLike returns a generated power-law graph the size of seed 000's CTRa
// (10^6 samples, 4·10^6 parameters, 48 nonzeros per sample on average,
// about 48M edges); COLO_BENCH_SAMPLES scales it down (parameters 4n).
func ctrLike(b *testing.B) *graph.Graph {
	ctrOnce.Do(func() {
		n := 1_000_000
		if s := os.Getenv("COLO_BENCH_SAMPLES"); s != "" {
			v, err := strconv.Atoi(s)
			if err != nil || v < 1 {
				b.Fatalf("COLO_BENCH_SAMPLES=%q: want a sample count", s)
			}
			n = v
		}
		g, err := graph.PowerLaw(graph.PowerLawConfig{Samples: n, Params: 4 * n, AvgDegree: 48, Alpha: 1.2, Seed: 7})
		if err != nil {
			b.Fatal(err)
		}
		ctrGraph = g
	})
	return ctrGraph
}

// BenchmarkSeed000Speed runs TSH-1, TSH-2 and MBP at k = 64 on the
// CTRa-sized generated graph: seed 000 Fig. 11(b) reports under 100 s for
// TSH and 653 s for MBP there.
//
//	go test ./partition -run '^$' -bench Seed000Speed -benchtime 1x -timeout 30m
func BenchmarkSeed000Speed(b *testing.B) {
	for _, c := range []struct {
		name    string
		threads int
	}{{"tsh1", 1}, {"tsh1", 2}, {"tsh2", 1}, {"tsh2", 2}, {"mbp", 1}} {
		b.Run(fmt.Sprintf("%s/threads=%d", c.name, c.threads), func(b *testing.B) {
			g := ctrLike(b)
			f, err := Lookup(c.name)
			if err != nil {
				b.Fatal(err)
			}
			reportCost(b, g, 64, func() *placement.Placement {
				p, err := f(g, Options{K: 64, Seed: 1, TSH: TSHOptions{Threads: c.threads}})
				if err != nil {
					b.Fatal(err)
				}
				return p
			})
		})
	}
}

// BenchmarkRefined runs the refined algorithms of the comparison with the
// peers (docs/partitioners.md, "Against the peers") on one thread, for
// profiles of the refinement:
//
//	go test ./partition -run '^$' -bench 'Refined/20news-train/k=16/best' -benchtime 1x -cpuprofile cpu.out
func BenchmarkRefined(b *testing.B) {
	for _, c := range []struct {
		data dataset
		k    int
		algo string
	}{
		{slashdot, 8, "parsa+refine"}, {slashdot, 16, "parsa+refine"},
		{news20, 8, "parsa+refine"}, {news20, 16, "parsa+refine"},
		{news20, 8, "best"}, {news20, 16, "best"},
		{w8a, 8, "lex+refine"}, {w8a, 16, "lex+refine"},
		{facebook, 8, "parsa+refine"}, {facebook, 16, "parsa+refine"},
	} {
		b.Run(fmt.Sprintf("%s/k=%d/%s", c.data.name, c.k, c.algo), func(b *testing.B) {
			g := c.data.load(b)
			f, err := Lookup(c.algo)
			if err != nil {
				b.Fatal(err)
			}
			reportCost(b, g, c.k, func() *placement.Placement {
				p, err := f(g, Options{K: c.k, Seed: 1, Parsa: DefaultParsaOptions()})
				if err != nil {
					b.Fatal(err)
				}
				return p
			})
		})
	}
}

// BenchmarkBestStarts times each of Best's starts on 20 Newsgroups at
// k = 8 with rmax's options (seed 1, balance by direction): Parsa with
// the default refinement, and the thorough starts of seeds 2 and 3, the
// critical path of rmax's partitioning on two cores. One thread.
//
//	go test ./partition -run '^$' -bench BestStarts -benchtime 1x -cpuprofile cpu.out
func BenchmarkBestStarts(b *testing.B) {
	g := news20.load(b)
	for _, c := range []struct {
		name     string
		seed     uint64
		thorough bool
	}{{"parsa", 1, false}, {"seed2-thorough", 2, true}, {"seed3-thorough", 3, true}} {
		b.Run(c.name, func(b *testing.B) {
			o := Options{K: 8, Seed: c.seed, Parsa: DefaultParsaOptions(), Directions: true, Round: true}
			if c.thorough {
				o.Refine.VCycles, o.Refine.Patience, o.Refine.Matching = bestThorough.VCycles, bestThorough.Patience, bestThorough.Matching
			}
			reportCost(b, g, 8, func() *placement.Placement {
				p, err := Parsa(g, o)
				if err != nil {
					b.Fatal(err)
				}
				if p, _, err = Refine(g, p, o); err != nil {
					b.Fatal(err)
				}
				return p
			})
		})
	}
}
