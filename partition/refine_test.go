package partition

import (
	"slices"
	"testing"

	"colo/graph"
	"colo/placement"
)

// sumMemory is Σ_i |N(U_i)|, computed from scratch.
func sumMemory(g *graph.Graph, data []int32, k int) int64 {
	c, _ := placement.Evaluate(g, &placement.Placement{K: k, Data: data, Param: make([]int32, g.NumParams())}, 0)
	var s int64
	for _, x := range c.Memory {
		s += x
	}
	return s
}

// TestRefiner checks the incremental bookkeeping of the refiner against a
// recomputation, that no pass makes Σ_i |N(U_i)| worse, and that sizes
// stay within the bounds.
func TestRefiner(t *testing.T) {
	rng := placement.NewRand(13)
	for trial := 0; trial < 40; trial++ {
		n, m, k := 10+rng.IntN(200), 5+rng.IntN(80), 2+rng.IntN(6)
		g := randomGraph(t, rng.Uint64(), n, m, 0.02+0.2*rng.Float64())
		data := make([]int32, n)
		perm := rng.Perm(n)
		for x, u := range perm {
			data[u] = int32(x % k)
		}
		lo, hi := make([]int64, k), make([]int64, k)
		for i := range lo {
			lo[i], hi[i] = int64(n/k), int64((n+k-1)/k)
			if trial%2 == 1 {
				lo[i], hi[i] = lo[i]-2, hi[i]+2
			}
		}
		order := make([]uint32, n)
		for u := range order {
			order[u] = uint32(u)
		}
		r := newRefiner(g, data, k, lo, hi)
		prev := sumMemory(g, data, k)
		if r.sum != prev {
			t.Fatalf("trial %d: sum %d, want %d", trial, r.sum, prev)
		}
		var st RefineStats
		for pass := 0; pass < 4; pass++ {
			r.pass(order, &st)
			now := sumMemory(g, data, k)
			if r.sum != now || now > prev {
				t.Fatalf("trial %d pass %d: sum %d, recomputed %d, before %d", trial, pass, r.sum, now, prev)
			}
			prev = now
			size := make([]int64, k)
			for _, i := range data {
				size[i]++
			}
			for i := range size {
				if size[i] < lo[i] || size[i] > hi[i] || size[i] != r.size[i] {
					t.Fatalf("trial %d: sizes %v (tracked %v), bounds %v..%v", trial, size, r.size, lo, hi)
				}
			}
		}
	}
}

// TestRefineHelps checks on a graph with planted clusters that refinement
// after Parsa does not lose and reports what it did.
func TestRefineHelps(t *testing.T) {
	rng := placement.NewRand(3)
	k, n, m := 4, 400, 200
	rows := make([][]uint32, n)
	for u := range rows {
		c := u % k
		for len(rows[u]) < 6 {
			v := uint32(c*m/k + rng.IntN(m/k))
			if rng.IntN(10) == 0 {
				v = uint32(rng.IntN(m))
			}
			if !slices.Contains(rows[u], v) {
				rows[u] = append(rows[u], v)
			}
		}
	}
	g, err := graph.FromAdjacency(m, rows)
	if err != nil {
		t.Fatal(err)
	}
	_, plain, err := RunParsa(g, Options{K: k, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	_, refined, err := RunParsa(g, Options{K: k, Seed: 1, Parsa: ParsaOptions{Refine: 3}})
	if err != nil {
		t.Fatal(err)
	}
	if refined.Refine.Passes == 0 || refined.Refine.After > refined.Refine.Before || refined.Params.TMax > plain.Params.TMax {
		t.Errorf("refine %+v: T_max %d, without %d", refined.Refine, refined.Params.TMax, plain.Params.TMax)
	}
}
