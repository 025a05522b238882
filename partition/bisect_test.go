package partition

import (
	"math"
	"slices"
	"testing"

	"colo/graph"
	"colo/placement"
)

// TestBisect checks on random graphs that every sample lands on exactly
// one machine, that no machine holds more than ⌊(1+ε)n/k⌋ samples (nor
// ⌈n/k⌉ when that is larger), that two runs agree and that the
// placement is valid.
func TestBisect(t *testing.T) {
	checkRandomGraphs(t, Bisect, 47, 500, 0.01, func(n, k int) int64 {
		return max(int64(math.Floor((1+DefaultRefineEpsilon)*float64(n)/float64(k))), int64((n+k-1)/k))
	})
}

// checkRandomGraphs runs f on 30 random graphs (rng seeded by seed, up to
// maxN samples and 150 parameters, edge density from lo to lo + 0.1) and
// checks that each placement is valid, that no machine holds more than
// bound(n, k) samples and that two runs with one seed agree.
func checkRandomGraphs(t *testing.T, f Func, seed uint64, maxN int, lo float64, bound func(n, k int) int64) {
	t.Helper()
	rng := placement.NewRand(seed)
	for trial := 0; trial < 30; trial++ {
		n, m := 1+rng.IntN(maxN), 1+rng.IntN(150)
		k := 1 + rng.IntN(min(n, 13))
		g := randomGraph(t, rng.Uint64(), n, m, lo+0.1*rng.Float64())
		opt := Options{K: k, Seed: uint64(trial)}
		p, err := f(g, opt)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Validate(g); err != nil {
			t.Fatalf("trial %d: %v", trial, err)
		}
		size := make([]int64, k)
		for _, i := range p.Data {
			size[i]++
		}
		if b := bound(n, k); slices.Max(size) > b {
			t.Fatalf("trial %d (n %d, k %d): sizes %v above %d", trial, n, k, size, b)
		}
		q, _ := f(g, opt)
		if !slices.Equal(p.Data, q.Data) || !slices.Equal(p.Param, q.Param) {
			t.Fatalf("trial %d: two runs with one seed differ", trial)
		}
	}
}

// groupsGraph has n samples in k interleaved groups (sample u in group
// u mod k) that share no parameter across groups: each sample uses deg of
// its group's per parameters. Samples for which empty(u) holds use none.
func groupsGraph(t *testing.T, seed uint64, n, k, per, deg int, empty func(u int) bool) *graph.Graph {
	t.Helper()
	rng := placement.NewRand(seed)
	rows := make([][]uint32, n)
	for u := range rows {
		if empty != nil && empty(u) {
			continue
		}
		for len(rows[u]) < deg {
			v := uint32(u%k*per + rng.IntN(per))
			if !slices.Contains(rows[u], v) {
				rows[u] = append(rows[u], v)
			}
		}
	}
	g, err := graph.FromAdjacency(k*per, rows)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestBisectSeparable: samples in k groups that share no parameter across
// groups, interleaved, are separated exactly: nothing crosses; also when
// 40% of the samples need nothing, which then fill the machines with
// room within the size bound and leave the others all of it (bisecting
// them with the rest breaks the groups).
func TestBisectSeparable(t *testing.T) {
	for _, tc := range []struct {
		k, n  int
		empty func(u int) bool
	}{
		{2, 80, nil},
		{4, 160, nil},
		{8, 320, nil},
		{4, 400, func(u int) bool { return u%5 < 2 }},
	} {
		g := groupsGraph(t, uint64(tc.k), tc.n, tc.k, 30, 4, tc.empty)
		p, err := Bisect(g, Options{K: tc.k, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		c, _ := placement.Evaluate(g, p, 0)
		if bound := int64((1 + DefaultRefineEpsilon) * float64(tc.n) / float64(tc.k)); c.MaxSamples > bound {
			t.Errorf("k = %d, n = %d: max|U_i| %d above %d", tc.k, tc.n, c.MaxSamples, bound)
		}
		if c.TSum != 0 {
			t.Errorf("k = %d, n = %d: T_sum %d, want 0 for separable groups", tc.k, tc.n, c.TSum)
		}
	}
}

// TestEvictNets checks on random two-way partitions that the gain
// evictNets reports is the connectivity it removed, recomputed from
// scratch, that it never adds any, and that the size bounds hold; and on
// a hand example that it moves a group no single move would.
func TestEvictNets(t *testing.T) {
	rng := placement.NewRand(5)
	for trial := 0; trial < 60; trial++ {
		n, m := 2+rng.IntN(200), 1+rng.IntN(60)
		g := randomGraph(t, rng.Uint64(), n, m, 0.02+0.2*rng.Float64())
		lv := finest(g)
		part := make([]int32, n)
		for u := range part {
			part[u] = int32(rng.IntN(2))
		}
		bounds := []int64{int64(n/2 + 1 + rng.IntN(n/4+1)), int64(n/2 + 1 + rng.IntN(n/4+1))}
		var size [2]int64
		for _, i := range part {
			size[i]++
		}
		// Bounds the input already breaks stay where they are.
		bounds[0], bounds[1] = max(bounds[0], size[0]), max(bounds[1], size[1])
		before := volume2(lv, part)
		gain := evictNets(lv, part, bounds)
		after := volume2(lv, part)
		if gain < 0 || before-after != gain {
			t.Fatalf("trial %d: gain %d, volume %d → %d", trial, gain, before, after)
		}
		size = [2]int64{}
		for _, i := range part {
			size[i]++
		}
		if size[0] > bounds[0] || size[1] > bounds[1] {
			t.Fatalf("trial %d: sizes %v above bounds %v", trial, size, bounds)
		}
	}
	// Parameter 0 is used by samples 0–2 on side 0 and by 3–9 on side 1;
	// samples 0–2 also use parameter 1, used by 3–9 too. Moving any one of
	// 0–2 gains nothing; moving the three uncuts both parameters.
	rows := [][]uint32{{0, 1}, {0, 1}, {0, 1}, {0, 1}, {0, 1}, {0, 1}, {0, 1}, {0, 1}, {0, 1}, {0, 1}}
	g, err := graph.FromAdjacency(2, rows)
	if err != nil {
		t.Fatal(err)
	}
	part := []int32{0, 0, 0, 1, 1, 1, 1, 1, 1, 1}
	if gain := evictNets(finest(g), part, []int64{10, 10}); gain != 2 || slices.Contains(part, 0) {
		t.Fatalf("gain %d, part %v: want 2 and every sample on side 1", gain, part)
	}
}

// volume2 is the connectivity of a two-way partition: the nets with pins
// on both sides.
func volume2(lv *level, part []int32) int64 {
	var v int64
	for e := 0; e < lv.m; e++ {
		var seen [2]bool
		for _, u := range lv.pins(e) {
			seen[part[u]] = true
		}
		if seen[0] && seen[1] {
			v += lv.nw[e]
		}
	}
	return v
}
