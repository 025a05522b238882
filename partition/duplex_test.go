package partition

import (
	"slices"
	"testing"

	"colo/graph"
	"colo/placement"
)

// TestBalanceDirectionsExample: machine 0's worker needs parameters 0–3,
// all held by machine 1 (whose worker needs them too), so machine 0 pulls
// 4 and serves nothing: R_0 = 2·4 = 8, while T_0 = 4. Moving two of them
// to machine 0 makes both machines pull 2 and serve 2: R_max = 4, and T
// stays 4 on both.
func TestBalanceDirectionsExample(t *testing.T) {
	g, err := graph.FromAdjacency(4, [][]uint32{{0, 1, 2, 3}, {0, 1, 2, 3}})
	if err != nil {
		t.Fatal(err)
	}
	p := &placement.Placement{K: 2, Data: []int32{0, 1}, Param: []int32{1, 1, 1, 1}}
	before, err := placement.Evaluate(g, p, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(before.Round, []int64{8, 4}) || before.RMax != 8 || before.TMax != 4 {
		t.Fatalf("before: round %v, R_max %d, T_max %d; want [8 4], 8, 4", before.Round, before.RMax, before.TMax)
	}
	st := BalanceDirections(g, p, 1)
	after, err := placement.Evaluate(g, p, 0)
	if err != nil {
		t.Fatal(err)
	}
	if st.Before != 8 || st.After != 4 || after.RMax != 4 || !st.Converged {
		t.Fatalf("stats %+v, R_max after %d; want 8 → 4, converged", st, after.RMax)
	}
	if !slices.Equal(after.Worker, []int64{2, 2}) || !slices.Equal(after.Server, []int64{2, 2}) {
		t.Fatalf("worker %v server %v, want [2 2] each", after.Worker, after.Server)
	}
}

// TestBalanceDirectionsRandom checks BalanceDirections on random graphs
// and data partitions, from the parameters of AssignParams and from
// random ones: its statistics are the cost model's, R_max never rises,
// the data and T_sum stay, a parameter held by a machine that needs it
// stays on one, and the result is a local optimum: no single move of a
// parameter to another machine that needs it lowers the larger of the
// two machines' bounds (tried by evaluating every such move).
func TestBalanceDirectionsRandom(t *testing.T) {
	rng := placement.NewRand(7)
	trials := 60
	if testing.Short() {
		trials = 20
	}
	for trial := range trials {
		n, m := 2+rng.IntN(40), 1+rng.IntN(60)
		k := 2 + rng.IntN(min(n-1, 6))
		g := randomGraph(t, rng.Uint64(), n, m, 0.05+0.3*rng.Float64())
		p := placement.Uniform(g, k, placement.NewRand(rng.Uint64()))
		if trial%2 == 0 {
			AssignParams(g, p, uint64(trial))
		}
		before, err := placement.Evaluate(g, p, 0)
		if err != nil {
			t.Fatal(err)
		}
		data := slices.Clone(p.Data)
		needs := func(v int, i int32) bool {
			for _, u := range g.Samples(v) {
				if data[u] == i {
					return true
				}
			}
			return false
		}
		var kept []int
		for v := range m {
			if needs(v, p.Param[v]) {
				kept = append(kept, v)
			}
		}
		st := BalanceDirections(g, p, uint64(trial))
		after, err := placement.Evaluate(g, p, 0)
		if err != nil {
			t.Fatalf("trial %d: %v", trial, err)
		}
		switch {
		case st.Before != before.RMax || st.After != after.RMax:
			t.Fatalf("trial %d: stats %d → %d, cost model %d → %d", trial, st.Before, st.After, before.RMax, after.RMax)
		case after.RMax > before.RMax:
			t.Fatalf("trial %d: R_max rose from %d to %d", trial, before.RMax, after.RMax)
		case !slices.Equal(p.Data, data):
			t.Fatalf("trial %d: the data partition changed", trial)
		case after.TSum > before.TSum:
			t.Fatalf("trial %d: T_sum rose from %d to %d", trial, before.TSum, after.TSum)
		case !st.Converged:
			t.Fatalf("trial %d: not converged after %d sweeps", trial, st.Sweeps)
		}
		for _, v := range kept {
			if !needs(v, p.Param[v]) {
				t.Fatalf("trial %d: parameter %d moved to machine %d, which does not need it", trial, v, p.Param[v])
			}
		}
		for v := range m {
			o := p.Param[v]
			for j := range int32(k) {
				if j == o || !needs(v, j) {
					continue
				}
				p.Param[v] = j
				c, _ := placement.Evaluate(g, p, 0)
				p.Param[v] = o
				if max(c.Round[o], c.Round[j]) < max(after.Round[o], after.Round[j]) {
					t.Fatalf("trial %d: moving parameter %d from %d to %d lowers their bounds from %d, %d to %d, %d",
						trial, v, o, j, after.Round[o], after.Round[j], c.Round[o], c.Round[j])
				}
			}
		}
	}
}

// TestLookupDirections: a partitioner found by Lookup ends with
// BalanceDirections when Options.Directions is set, and reports it; the
// data partition stays.
func TestLookupDirections(t *testing.T) {
	g := randomGraph(t, 3, 200, 300, 0.05)
	for _, name := range []string{"parsa", "tsh2", "parsa+refine"} {
		f, err := Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		opt := Options{K: 4, Seed: 1, Parsa: DefaultParsaOptions()}
		plain, err := f(g, opt)
		if err != nil {
			t.Fatal(err)
		}
		var reported any
		opt.Directions = true
		opt.Report = func(name string, v any) {
			if name == "directions" {
				reported = v
			}
		}
		dir, err := f(g, opt)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(plain.Data, dir.Data) {
			t.Fatalf("%s: Directions changed the data partition", name)
		}
		c0, _ := placement.Evaluate(g, plain, 0)
		c1, _ := placement.Evaluate(g, dir, 0)
		st, ok := reported.(DuplexStats)
		if !ok || st.Before != c0.RMax || st.After != c1.RMax || c1.RMax > c0.RMax || c1.TSum != c0.TSum {
			t.Fatalf("%s: reported %#v; R_max %d without, %d with; T_sum %d, %d", name, reported, c0.RMax, c1.RMax, c0.TSum, c1.TSum)
		}
	}
}

// TestBestDirections: with Options.Directions, Best returns a placement
// balanced by direction whose R_max is no higher than that of Best's own
// choice without, balanced.
func TestBestDirections(t *testing.T) {
	g := randomGraph(t, 5, 300, 200, 0.04)
	opt := Options{K: 4, Seed: 2, Parsa: DefaultParsaOptions()}
	plain, err := Best(g, opt)
	if err != nil {
		t.Fatal(err)
	}
	BalanceDirections(g, plain, opt.Seed)
	opt.Directions = true
	var reported any
	opt.Report = func(name string, v any) {
		if name == "directions" {
			reported = v
		}
	}
	dir, err := Best(g, opt)
	if err != nil {
		t.Fatal(err)
	}
	c0, _ := placement.Evaluate(g, plain, 0)
	c1, _ := placement.Evaluate(g, dir, 0)
	if c1.RMax > c0.RMax {
		t.Fatalf("R_max %d with Directions, %d for the choice without, balanced", c1.RMax, c0.RMax)
	}
	if st, ok := reported.(DuplexStats); !ok || st.After != c1.RMax || st.Before < st.After {
		t.Fatalf("Best reported %#v for its choice of R_max %d", reported, c1.RMax)
	}
	if st := BalanceDirections(g, dir, opt.Seed); st.Moves != 0 {
		t.Fatalf("Best's placement was not balanced: %d more moves", st.Moves)
	}
}
