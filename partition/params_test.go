package partition

import (
	"slices"
	"testing"

	"colo/graph"
	"colo/placement"
)

// seed000Graph is the graph of seed 000 Figs. 3–5, worked out from its
// Tables 2 and 3: samples d1..d4 are 0..3 and parameters p1..p6 are 0..5.
// N(d1) = {p1, p2} and N({d1, d2}) = {p1, p2, p3} (Fig. 3); the pair costs
// of Table 2 (3, 6, 6, 6, 6, 4) and the single costs of Table 3 (2, 3, 4,
// 4) then force N(d2) = {p1, p2, p3} and N(d3) = N(d4) = {p3, ..., p6}.
func seed000Graph(t testing.TB) *graph.Graph {
	t.Helper()
	g, err := graph.FromAdjacency(6, [][]uint32{{0, 1}, {0, 1, 2}, {2, 3, 4, 5}, {2, 3, 4, 5}})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestSeed000Graph checks the reconstruction of the graph against the
// costs printed in seed 000 Tables 2 and 3 for empty partitions.
func TestSeed000Graph(t *testing.T) {
	g := seed000Graph(t)
	f := func(us ...int) int {
		set := map[uint32]bool{}
		for _, u := range us {
			for _, v := range g.Params(u) {
				set[v] = true
			}
		}
		return len(set)
	}
	// Table 2, iteration 1: pairs (d1,d2) … (d3,d4).
	pairs := [][2]int{{0, 1}, {0, 2}, {0, 3}, {1, 2}, {1, 3}, {2, 3}}
	for x, want := range []int{3, 6, 6, 6, 6, 4} {
		if got := f(pairs[x][0], pairs[x][1]); got != want {
			t.Errorf("f(d%d, d%d) = %d, want %d", pairs[x][0]+1, pairs[x][1]+1, got, want)
		}
	}
	// Table 3, iteration 1: single samples.
	for u, want := range []int{2, 3, 4, 4} {
		if got := f(u); got != want {
			t.Errorf("f(d%d) = %d, want %d", u+1, got, want)
		}
	}
}

func TestAssignParamsSeed000(t *testing.T) {
	g := seed000Graph(t)
	for _, tc := range []struct {
		name       string
		data       []int32
		memory     []int64
		traffic    []int64
		tmax, tsum int64
	}{
		// Fig. 4(b): D1 = {d1, d2}, D2 = {d3, d4}. Only p3 is needed by
		// both machines, so only p3 crosses: each machine sends or
		// receives it once.
		{"fig4", []int32{0, 0, 1, 1}, []int64{3, 4}, []int64{1, 1}, 1, 2},
		// Fig. 5(b): D1 = {d1, d3}, D2 = {d2, d4}. Both machines need all
		// six parameters; whoever holds one serves it to the other.
		{"fig5", []int32{0, 1, 0, 1}, []int64{6, 6}, []int64{6, 6}, 6, 12},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := placement.New(2, 4, 6)
			copy(p.Data, tc.data)
			st := AssignParams(g, p, 1)
			c, err := placement.Evaluate(g, p, 0)
			if err != nil {
				t.Fatal(err)
			}
			for i := range tc.memory {
				if c.Memory[i] != tc.memory[i] || c.Traffic[i] != tc.traffic[i] {
					t.Errorf("machine %d: M = %d, T = %d; want %d, %d", i, c.Memory[i], c.Traffic[i], tc.memory[i], tc.traffic[i])
				}
			}
			if c.TMax != tc.tmax || c.TSum != tc.tsum || st.TMax != tc.tmax {
				t.Errorf("T_max = %d (stats %d), T_sum = %d; want %d, %d", c.TMax, st.TMax, c.TSum, tc.tmax, tc.tsum)
			}
			// A parameter is only ever served by a machine that needs it.
			for v, i := range p.Param {
				needs := false
				for _, u := range g.Samples(v) {
					needs = needs || p.Data[u] == i
				}
				if !needs {
					t.Errorf("parameter %d on machine %d, which does not need it", v, i)
				}
			}
		})
	}
}

// TestAssignParamsProperties checks on random graphs that the reported
// T_max is the cost model's, that the sweeps never lose, and that after
// convergence no single move of a parameter lowers the larger of the two
// costs it touches.
func TestAssignParamsProperties(t *testing.T) {
	rng := placement.NewRand(3)
	for trial := 0; trial < 60; trial++ {
		n, m, k := 5+rng.IntN(60), 3+rng.IntN(40), 2+rng.IntN(7)
		g := randomGraph(t, rng.Uint64(), n, m, 0.05+rng.Float64()*0.4)
		p := placement.New(k, n, m)
		for u := range p.Data {
			p.Data[u] = int32(rng.IntN(k))
		}
		st := AssignParams(g, p, rng.Uint64())
		c, err := placement.Evaluate(g, p, 0)
		if err != nil {
			t.Fatal(err)
		}
		if st.TMax != c.TMax || st.GreedyTMax < st.TMax || !st.Converged {
			t.Fatalf("trial %d: stats %+v, evaluated T_max %d", trial, st, c.TMax)
		}
		for v := 0; v < m; v++ {
			o := p.Param[v]
			need := map[int32]bool{}
			for _, u := range g.Samples(v) {
				need[p.Data[u]] = true
			}
			size := int64(len(need)) - 2
			if len(need) < 3 {
				continue
			}
			for j := range need {
				if j != o && c.Traffic[j]+size < c.Traffic[o] {
					t.Fatalf("trial %d: moving parameter %d from %d (T %d) to %d (T %d) would help", trial, v, o, c.Traffic[o], j, c.Traffic[j])
				}
			}
		}
	}
}

// randomGraph returns an n × m graph whose edges are present with
// probability density.
func randomGraph(t testing.TB, seed uint64, n, m int, density float64) *graph.Graph {
	t.Helper()
	rng := placement.NewRand(seed)
	rows := make([][]uint32, n)
	for u := range rows {
		for v := 0; v < m; v++ {
			if rng.Float64() < density {
				rows[u] = append(rows[u], uint32(v))
			}
		}
	}
	g, err := graph.FromAdjacency(m, rows)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestAssignParamsWorkers checks that the number of goroutines building
// the candidate lists does not change the result.
func TestAssignParamsWorkers(t *testing.T) {
	g, err := graph.Sparse(graph.SparseConfig{Samples: 3000, Params: 1000, Gamma: 0.8, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	p := placement.New(12, g.NumSamples(), g.NumParams())
	rng := placement.NewRand(1)
	for u := range p.Data {
		p.Data[u] = int32(rng.IntN(12))
	}
	q := p.Clone()
	a := assignParams(g, p, 5, 1)
	b := assignParams(g, q, 5, 4)
	if a != b || !slices.Equal(p.Param, q.Param) {
		t.Errorf("1 worker: %+v; 4 workers: %+v", a, b)
	}
}
