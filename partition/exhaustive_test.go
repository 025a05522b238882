package partition

import (
	"slices"
	"testing"

	"colo/graph"
	"colo/placement"
)

// optimum finds by exhaustive search, over every data partition of g on k
// machines with |U_i| ≤ ⌈n/k⌉, the least M_max = max_i |N(U_i)| and, over
// those partitions and every placement of the parameters, the least
// T_max. It also returns the least T_max for the given data partition.
func optimum(g *graph.Graph, k int, given []int32) (mmax, tmax, tmaxGiven int64) {
	n, m := g.NumSamples(), g.NumParams()
	hi := (n + k - 1) / k
	data := make([]int32, n)
	size := make([]int, k)
	mmax, tmax = 1<<62, 1<<62
	var rec func(u int)
	rec = func(u int) {
		if u == n {
			p := &placement.Placement{K: k, Data: data, Param: make([]int32, m)}
			c, _ := placement.Evaluate(g, p, 0)
			mmax = min(mmax, c.MMax)
			tmax = min(tmax, bestTMax(g, p))
			return
		}
		// Machines are interchangeable: a sample opens at most one new one.
		open := 0
		for i := 0; i < k; i++ {
			if size[i] > 0 {
				open = i + 1
			}
		}
		for i := 0; i < min(k, open+1); i++ {
			if size[i] == hi {
				continue
			}
			data[u] = int32(i)
			size[i]++
			rec(u + 1)
			size[i]--
		}
	}
	rec(0)
	p := &placement.Placement{K: k, Data: slices.Clone(given), Param: make([]int32, m)}
	return mmax, tmax, bestTMax(g, p)
}

// bestTMax returns the least T_max over every placement of the parameters
// for the data partition of p, trying every machine for every parameter.
func bestTMax(g *graph.Graph, p *placement.Placement) int64 {
	m := g.NumParams()
	best := int64(1 << 62)
	var rec func(v int)
	rec = func(v int) {
		if v == m {
			c, _ := placement.Evaluate(g, p, 0)
			best = min(best, c.TMax)
			return
		}
		for i := 0; i < p.K; i++ {
			p.Param[v] = int32(i)
			rec(v + 1)
		}
	}
	rec(0)
	return best
}

// TestParsaExhaustive compares Parsa with the optimum on many tiny random
// graphs. Seed 000 Theorem 2 bounds M_max by k times the optimum; the
// measured ratios are logged. AssignParams must find the optimal T_max for
// its data partition on nearly all of them.
func TestParsaExhaustive(t *testing.T) {
	trials := 150
	if testing.Short() {
		trials = 30
	}
	rng := placement.NewRand(17)
	var sumM, sumT, worstM, worstT float64
	paramOpt, count := 0, 0
	for trial := 0; trial < trials; trial++ {
		n, m, k := 4+rng.IntN(5), 2+rng.IntN(4), 2+rng.IntN(2)
		if k == 3 && n > 7 {
			n = 7
		}
		g := randomGraph(t, rng.Uint64(), n, m, 0.2+0.5*rng.Float64())
		p, err := Parsa(g, Options{K: k, Seed: rng.Uint64(), Parsa: ParsaOptions{Blocks: 1}})
		if err != nil {
			t.Fatal(err)
		}
		c, err := placement.Evaluate(g, p, 0)
		if err != nil {
			t.Fatal(err)
		}
		optM, optT, optGiven := optimum(g, k, p.Data)
		if c.MMax > int64(k)*optM {
			t.Errorf("trial %d: M_max %d > k·OPT = %d·%d", trial, c.MMax, k, optM)
		}
		if c.TMax < optGiven || optGiven < optT {
			t.Fatalf("trial %d: T_max %d below the optimum %d for its partition, or that below the optimum %d", trial, c.TMax, optGiven, optT)
		}
		if c.TMax == optGiven {
			paramOpt++
		}
		rM, rT := ratio(c.MMax, optM), ratio(c.TMax, optT)
		sumM += rM
		sumT += rT
		worstM, worstT = max(worstM, rM), max(worstT, rT)
		count++
	}
	t.Logf("%d graphs: M_max/OPT mean %.3f worst %.3f; T_max/OPT mean %.3f worst %.3f; parameter placement optimal for its data partition on %d",
		count, sumM/float64(count), worstM, sumT/float64(count), worstT, paramOpt)
	if paramOpt < count*9/10 {
		t.Errorf("AssignParams optimal on only %d of %d", paramOpt, count)
	}
}

// ratio is a/b, with 0/0 = 1.
func ratio(a, b int64) float64 {
	if b == 0 {
		if a == 0 {
			return 1
		}
		return float64(a)
	}
	return float64(a) / float64(b)
}
