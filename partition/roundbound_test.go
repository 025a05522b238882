package partition

import (
	"testing"

	"colo/graph"
	"colo/placement"
)

// minParamRMax is the least R_max over every assignment of g's parameters
// to k machines with p's data partition, by enumeration (k^m of them).
func minParamRMax(t *testing.T, g *graph.Graph, p *placement.Placement) int64 {
	t.Helper()
	q := p.Clone()
	m := g.NumParams()
	best := int64(-1)
	var walk func(v int)
	walk = func(v int) {
		if v == m {
			c, err := placement.Evaluate(g, q, 0)
			if err != nil {
				t.Fatal(err)
			}
			if best < 0 || c.RMax < best {
				best = c.RMax
			}
			return
		}
		for i := range p.K {
			q.Param[v] = int32(i)
			walk(v + 1)
		}
	}
	walk(0)
	return best
}

// TestParamRoundBoundBrute checks the bound against the best parameter
// assignment found by enumeration on small random graphs: never above it,
// nor above the placement's own R_max, never below T_sum/k with every
// parameter on a machine using it; and on a graph whose parameters are
// all used by both of two machines, where that T_sum/k is reached, equal
// to it.
func TestParamRoundBoundBrute(t *testing.T) {
	tight := 0
	for seed := uint64(1); seed <= 40; seed++ {
		k := 2 + int(seed%3)
		m := 4 + int(seed%4)
		if k == 4 {
			m = min(m, 6)
		}
		g := randomGraph(t, seed, 8+int(seed%9), m, 0.35)
		p := randomPlacement(g, k, seed)
		b, err := ParamRoundBound(g, p, 0)
		if err != nil {
			t.Fatal(err)
		}
		opt := minParamRMax(t, g, p)
		c, _ := placement.Evaluate(g, p, 0)
		switch {
		case b.Bound > opt:
			t.Errorf("seed %d (k = %d, m = %d): bound %d (dual %g) above the best assignment's R_max %d", seed, k, g.NumParams(), b.Bound, b.Dual, opt)
		case b.Bound > c.RMax:
			t.Errorf("seed %d: bound %d above the placement's R_max %d", seed, b.Bound, c.RMax)
		case b.Dual < b.TSumOverK:
			t.Errorf("seed %d: dual %g below T_sum/k %g", seed, b.Dual, b.TSumOverK)
		}
		if b.Bound == opt {
			tight++
		}
	}
	if tight < 10 {
		t.Errorf("the bound met the best assignment's R_max in %d of 40 graphs", tight)
	}
	// 2·n samples, each using all of n parameters, a half on each of two
	// machines: holding n/2 parameters each, every machine pulls n/2 and
	// answers n/2, R_max = n = T_sum/k.
	const n = 6
	rows := make([][]uint32, 2*n)
	for u := range rows {
		for v := range n {
			rows[u] = append(rows[u], uint32(v))
		}
	}
	g, err := graph.FromAdjacency(n, rows)
	if err != nil {
		t.Fatal(err)
	}
	p := placement.New(2, 2*n, n)
	for u := range p.Data {
		p.Data[u] = int32(u % 2)
	}
	clear(p.Param)
	b, err := ParamRoundBound(g, p, 10)
	if err != nil {
		t.Fatal(err)
	}
	if b.Bound != n || b.Classes != 1 {
		t.Errorf("two machines sharing %d parameters: bound %d (want %d), %d classes (want 1)", n, b.Bound, n, b.Classes)
	}
	if _, err := ParamRoundBound(g, p, -1); err == nil {
		t.Error("−1 iterations: no error")
	}
}
