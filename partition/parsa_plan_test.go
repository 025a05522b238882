package partition

import (
	"slices"
	"testing"

	"colo/placement"
)

// TestPlanParsaSequential checks that a run driven through the plan's
// hooks, its blocks partitioned in order against in-memory sets and the
// counts of the blocks before, is RunParsa with τ = 0, element by element.
func TestPlanParsaSequential(t *testing.T) {
	rng := placement.NewRand(11)
	for trial := 0; trial < 8; trial++ {
		n, m := 30+rng.IntN(300), 5+rng.IntN(200)
		g := randomGraph(t, rng.Uint64(), n, m, 0.02+rng.Float64()*0.1)
		for _, po := range []ParsaOptions{
			{Init: InitNone, Blocks: 5},
			{Init: InitGlobal, Blocks: 4, GlobalFraction: 0.3},
			{Init: InitGlobal, Blocks: 6, GrowBy: GrowParams, Epsilon: 0.1},
			{Init: InitGlobal, Blocks: 3, Refine: 2},
		} {
			k := 1 + rng.IntN(min(n, 12))
			opt := Options{K: k, Seed: rng.Uint64(), Parsa: po}
			want, _, err := RunParsa(g, opt)
			if err != nil {
				t.Fatal(err)
			}
			pl, err := PlanParsa(g, opt)
			if err != nil {
				t.Fatal(err)
			}
			sets := &countedSets{MemNeighborSets: NewMemNeighborSets(g.NumParams(), k), counts: make([]int64, k)}
			bp := pl.NewBlockPartitioner()
			bp.Global(pl, sets)
			got := placement.New(k, g.NumSamples(), g.NumParams())
			for _, blk := range pl.Blocks {
				bp.Partition(blk, sets, got.Data)
			}
			if _, err := pl.Finish(got); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got.Data, want.Data) || !slices.Equal(got.Param, want.Param) {
				t.Fatalf("n=%d k=%d %v: the plan's run differs from RunParsa", n, k, po)
			}
		}
	}
}

// TestPlanParsaRefuses checks the initialisations a distributed run
// cannot do.
func TestPlanParsaRefuses(t *testing.T) {
	g := randomGraph(t, 1, 50, 20, 0.1)
	for _, po := range []ParsaOptions{
		{Init: InitIndividual},
		{Init: InitGlobal, InitFrom: func(n, k int) ([]int32, error) { return nil, nil }},
	} {
		if _, err := PlanParsa(g, Options{K: 2, Parsa: po}); err == nil {
			t.Errorf("%v: no error", po)
		}
	}
}

// countedSets are in-memory SharedSets.
type countedSets struct {
	*MemNeighborSets
	counts []int64
}

func (s *countedSets) Counts(dst []int64) { copy(dst, s.counts) }

func (s *countedSets) PushBlock(params []uint32, masks []uint64, added []int64) {
	s.Push(params, masks)
	for i, a := range added {
		s.counts[i] += a
	}
}
