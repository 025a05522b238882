package partition

import (
	"math"
	"slices"
	"testing"

	"colo/graph"
	"colo/placement"
)

// TestCommunity checks on random graphs that every sample lands on one
// machine within ⌈(1+ε)n/k⌉ (or ⌈n/k⌉), that the placement is valid, and
// that two runs agree.
func TestCommunity(t *testing.T) {
	checkRandomGraphs(t, Community, 31, 400, 0.005, func(n, k int) int64 {
		return max(int64(math.Ceil((1+DefaultRefineEpsilon)*float64(n)/float64(k))), int64((n+k-1)/k))
	})
}

// TestLouvainComponents: a community never spans two connected
// components (a node only joins a neighbouring community), and k groups
// of samples that share no parameter across groups, each group using all
// of its parameters, are found exactly and packed one per machine, so
// nothing crosses.
func TestLouvainComponents(t *testing.T) {
	for _, k := range []int{2, 3, 4, 8} {
		const per = 12
		g := groupsGraph(t, uint64(k), 10*k, k, per, per, nil)
		comm, _ := louvain(g, placement.NewRand(uint64(k)))
		for u := range comm {
			for w := range comm {
				if (comm[u] == comm[w]) != (u%k == w%k) {
					t.Fatalf("k = %d: samples %d and %d: communities %d and %d, groups %d and %d", k, u, w, comm[u], comm[w], u%k, w%k)
				}
			}
		}
		p, err := Community(g, Options{K: k, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		if c, _ := placement.Evaluate(g, p, 0); c.TSum != 0 || c.MaxSamples != 10 {
			t.Errorf("k = %d: T_sum %d, max|U_i| %d; want 0 and 10", k, c.TSum, c.MaxSamples)
		}
	}
	// Random sparse graphs: whatever the communities, none joins samples
	// that no chain of shared parameters links.
	rng := placement.NewRand(3)
	for trial := 0; trial < 20; trial++ {
		n, m := 2+rng.IntN(300), 1+rng.IntN(200)
		g := randomGraph(t, rng.Uint64(), n, m, 0.004)
		comm, _ := louvain(g, placement.NewRand(uint64(trial)))
		comp := sampleComponents(g)
		first := map[int32]int32{}
		for u, c := range comm {
			if x, ok := first[c]; ok && x != comp[u] {
				t.Fatalf("trial %d: community %d spans components %d and %d", trial, c, x, comp[u])
			}
			first[c] = comp[u]
		}
	}
}

// sampleComponents labels each sample of g with its connected component
// over shared parameters.
func sampleComponents(g *graph.Graph) []int32 {
	n := g.NumSamples()
	comp := make([]int32, n)
	for u := range comp {
		comp[u] = -1
	}
	for r := 0; r < n; r++ {
		if comp[r] >= 0 {
			continue
		}
		comp[r] = int32(r)
		stack := []int{r}
		for len(stack) > 0 {
			u := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			for _, v := range g.Params(u) {
				for _, w := range g.Samples(int(v)) {
					if comp[w] < 0 {
						comp[w] = int32(r)
						stack = append(stack, int(w))
					}
				}
			}
		}
	}
	return comp
}

// TestAnneal checks on random graphs that the annealing never leaves the
// largest boundary above where it started, keeps every machine within
// its size bound, reports the boundary of what it leaves, and gives the
// same result twice.
func TestAnneal(t *testing.T) {
	rng := placement.NewRand(9)
	for trial := 0; trial < 20; trial++ {
		n, m := 2+rng.IntN(300), 1+rng.IntN(100)
		k := 2 + rng.IntN(min(n-1, 9))
		g := randomGraph(t, rng.Uint64(), n, m, 0.01+0.1*rng.Float64())
		limit := int64((n+k-1)/k) + int64(rng.IntN(3))
		data := make([]int32, n)
		for u := range data {
			data[u] = int32(u % k)
		}
		hi := make([]int64, k)
		for i := range hi {
			hi[i] = limit
		}
		again := slices.Clone(data)
		seed := rng.Uint64()
		before, after := anneal(g, k, data, hi, 0, 50, placement.NewRand(seed))
		if after > before {
			t.Fatalf("trial %d: max boundary %d → %d", trial, before, after)
		}
		size := make([]int64, k)
		for _, i := range data {
			size[i]++
		}
		if slices.Max(size) > limit {
			t.Fatalf("trial %d: sizes %v above %d", trial, size, limit)
		}
		if got := slices.Max(newAnnealer(g, k, data, hi, 0).bnd); got != after {
			t.Fatalf("trial %d: reported %d, placement has %d", trial, after, got)
		}
		anneal(g, k, again, hi, 0, 50, placement.NewRand(seed))
		if !slices.Equal(data, again) {
			t.Fatalf("trial %d: two runs with one seed differ", trial)
		}
	}
}
