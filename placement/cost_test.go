package placement

import (
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"colo/graph"
)

// referenceCost evaluates a placement straight from the definitions of
// seed 000 §3.4, with sets, in O(k·|E|) time.
func referenceCost(g *graph.Graph, p *Placement, theta int64) *Cost {
	k := p.K
	need := make([]map[int]bool, k) // N(U_i)
	own := make([]map[int]bool, k)  // V_i
	for i := range need {
		need[i], own[i] = map[int]bool{}, map[int]bool{}
	}
	c := &Cost{K: k, Theta: theta}
	for _, s := range []*[]int64{&c.Samples, &c.Params, &c.Memory, &c.Worker, &c.Server, &c.Traffic, &c.Round} {
		*s = make([]int64, k)
	}
	for u := 0; u < g.NumSamples(); u++ {
		c.Samples[p.Data[u]]++
		for _, v := range g.Params(u) {
			need[p.Data[u]][int(v)] = true
		}
	}
	for v := 0; v < g.NumParams(); v++ {
		own[p.Param[v]][v] = true
		c.Params[p.Param[v]]++
	}
	for i := 0; i < k; i++ {
		c.Memory[i] = int64(len(need[i]))
		for v := range need[i] {
			if !own[i][v] {
				c.Worker[i]++
			}
		}
		for j := 0; j < k; j++ {
			if j == i {
				continue
			}
			for v := range own[i] {
				if need[j][v] {
					c.Server[i]++
				}
			}
		}
		c.Traffic[i] = c.Worker[i] + c.Server[i]
		// A BSP round: the pulls in, then the pushes out, of the worker;
		// and T_i each way.
		c.Round[i] = max(c.Traffic[i], c.Worker[i]+c.Worker[i])
		c.TSum += c.Traffic[i]
		c.MMax = max(c.MMax, c.Memory[i])
		c.TMax = max(c.TMax, c.Traffic[i])
		c.RMax = max(c.RMax, c.Round[i])
		c.MaxSamples = max(c.MaxSamples, c.Samples[i])
		if theta > 0 && c.Memory[i] > theta {
			c.OverTheta++
		}
	}
	c.Objective = c.MaxSamples * c.TMax
	return c
}

func randomGraph(t testing.TB, rng *rand.Rand, n, m int, density float64) *graph.Graph {
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

func TestEvaluateHandExample(t *testing.T) {
	// u0:{0,1} u1:{1,2} on machine 0, u2:{2,3} on machine 1; parameters 0,2
	// on server 0 and 1,3 on server 1. Worked by hand:
	// N(U_0) = {0,1,2}, W_0 = |{1}| = 1, S_0 = |{0,2} ∩ {2,3}| = 1;
	// N(U_1) = {2,3},   W_1 = |{2}| = 1, S_1 = |{1,3} ∩ {0,1,2}| = 1.
	g, err := graph.FromAdjacency(4, [][]uint32{{0, 1}, {1, 2}, {2, 3}})
	if err != nil {
		t.Fatal(err)
	}
	p := &Placement{K: 2, Data: []int32{0, 0, 1}, Param: []int32{0, 1, 0, 1}}
	c, err := Evaluate(g, p, 2)
	if err != nil {
		t.Fatal(err)
	}
	want := &Cost{
		K: 2, MMax: 3, TMax: 2, TSum: 4, RMax: 2, MaxSamples: 2, Objective: 4, Theta: 2, OverTheta: 1,
		Samples: []int64{2, 1}, Params: []int64{2, 2}, Memory: []int64{3, 2},
		Worker: []int64{1, 1}, Server: []int64{1, 1}, Traffic: []int64{2, 2}, Round: []int64{2, 2},
	}
	if !reflect.DeepEqual(c, want) {
		t.Errorf("got %+v\nwant %+v", c, want)
	}
}

func TestEvaluateMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := 0; trial < 300; trial++ {
		n, m := 1+rng.IntN(30), 1+rng.IntN(30)
		k := 1 + rng.IntN(min(n, 8))
		if trial%4 == 3 {
			// Around 64 machines, where counting switches from a
			// mask of machines to stamps.
			n = 60 + rng.IntN(40)
			k = 60 + rng.IntN(min(n, 70)-59)
		}
		g := randomGraph(t, rng, n, m, rng.Float64()*0.5)
		p := Uniform(g, k, rng)
		theta := int64(rng.IntN(m + 1))
		want := referenceCost(g, p, theta)
		for _, workers := range []int{1, 3} {
			got := evaluateSplit(g, p, theta, workers)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("trial %d, %d goroutines: got %+v\nwant %+v", trial, workers, got, want)
			}
		}
	}
}

func TestEvaluateParallelMatchesSerial(t *testing.T) {
	g, err := graph.PowerLaw(graph.DefaultPowerLaw(40000, 3))
	if err != nil {
		t.Fatal(err)
	}
	p := Uniform(g, 16, NewRand(7))
	want := evaluate(g, p, 0, 1)
	for _, w := range []int{2, 4, 7} {
		// Force the split even though the graph is small.
		if got := evaluateSplit(g, p, 0, w); !reflect.DeepEqual(got, want) {
			t.Fatalf("%d goroutines differ from 1", w)
		}
	}
}

func TestValidateRejects(t *testing.T) {
	g, _ := graph.FromAdjacency(2, [][]uint32{{0}, {1}})
	cases := []struct {
		name string
		p    *Placement
		want string
	}{
		{"k zero", &Placement{K: 0, Data: []int32{0, 0}, Param: []int32{0, 0}}, "k = 0"},
		{"short data", &Placement{K: 2, Data: []int32{0}, Param: []int32{0, 0}}, "1 sample assignments for 2 samples"},
		{"short params", &Placement{K: 2, Data: []int32{0, 1}, Param: []int32{0}}, "1 parameter assignments for 2"},
		{"sample out of range", &Placement{K: 2, Data: []int32{0, 2}, Param: []int32{0, 1}}, "sample 1 (id 1) on machine 2: want 0..1"},
		{"unassigned param", &Placement{K: 2, Data: []int32{0, 1}, Param: []int32{-1, 1}}, "parameter 0 (id 0) on server -1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Evaluate(g, tc.p, 0)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestImprovement(t *testing.T) {
	b := Baseline{TMax: 150, TSum: 100, MMax: 10, Objective: 0}
	c := &Cost{TMax: 100, TSum: 200, MMax: 0, Objective: 5}
	im := ImprovementOver(b, c)
	if *im.TMax != 50 || *im.TSum != -50 || im.MMax != nil || *im.Objective != -100 {
		t.Fatalf("got T_max %v T_sum %v M_max %v objective %v", *im.TMax, *im.TSum, im.MMax, *im.Objective)
	}
}

func TestRandomBaselineDeterministic(t *testing.T) {
	g, _ := graph.Sparse(graph.SparseConfig{Samples: 300, Params: 200, Gamma: 0.95, Seed: 1})
	a, b := RandomBaseline(g, 4), RandomBaseline(g, 4)
	if a != b {
		t.Fatalf("baseline not deterministic: %+v vs %+v", a, b)
	}
	if a.TMax <= 0 || a.MaxSamples < 75 {
		t.Fatalf("implausible baseline %+v", a)
	}
}

// TestRandomBaselineOnePass checks the baseline, whose placements are
// counted together in one pass when k ≤ 64, against each of its random
// placements evaluated alone, on both sides of 64 machines and on one
// goroutine and several.
func TestRandomBaselineOnePass(t *testing.T) {
	g, err := graph.PowerLaw(graph.DefaultPowerLaw(30000, 3))
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []int{1, 2, 7, 16, 63, 64, 65, 90} {
		costs := make([]*Cost, BaselineSeeds)
		for s := range costs {
			costs[s] = evaluateSplit(g, Uniform(g, k, NewRand(uint64(s+1))), 0, 1)
		}
		want := MeanOf(costs)
		for _, workers := range []int{1, 3} {
			if got := randomBaseline(g, k, workers); got != want {
				t.Fatalf("k = %d, %d goroutines: %+v, want %+v", k, workers, got, want)
			}
		}
	}
}

// TestSummaryAgainstStartedBaseline: a baseline evaluated on its own
// goroutine while something else runs gives the summary NewSummary gives,
// and waiting twice returns it again.
func TestSummaryAgainstStartedBaseline(t *testing.T) {
	g, _ := graph.Sparse(graph.SparseConfig{Samples: 500, Params: 300, Gamma: 0.95, Seed: 2})
	p := Uniform(g, 6, NewRand(9))
	wait := StartBaseline(g, p.K)
	want, err := NewSummary(g, p, 40)
	if err != nil {
		t.Fatal(err)
	}
	got, err := NewSummaryAgainst(g, p, 40, wait())
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) || wait() != want.Random {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
	bad := &Placement{K: p.K, Data: p.Data[:1], Param: p.Param}
	if _, err := NewSummaryAgainst(g, bad, 0, wait()); err == nil {
		t.Fatal("a placement of the wrong size was scored")
	}
}
