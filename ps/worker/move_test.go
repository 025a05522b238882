package worker

import (
	"math/rand/v2"
	"slices"
	"testing"

	"colo/ps/route"
)

// TestMoves compares the moved ranges of random pairs of tables with the
// owners of every key.
func TestMoves(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	table := func(servers int, n uint64) *route.Table {
		starts := make([]uint64, servers)
		for i := 1; i < servers; i++ {
			starts[i] = rng.Uint64N(n + 1)
		}
		slices.Sort(starts)
		tb, err := route.FromRanges(starts, n)
		if err != nil {
			t.Fatal(err)
		}
		return tb
	}
	for trial := range 300 {
		servers, n := 1+rng.IntN(5), uint64(1+rng.IntN(60))
		old, next := table(servers, n), table(servers, n)
		moves, err := Moves(old, next)
		if err != nil {
			t.Fatal(err)
		}
		covered := map[uint64]bool{}
		for i, m := range moves {
			if m.Begin >= m.End || m.From == m.To || (i > 0 && m.Begin < moves[i-1].End) {
				t.Fatalf("trial %d: move %d %+v of %+v", trial, i, m, moves)
			}
			for k := m.Begin; k < m.End; k++ {
				covered[k] = true
				if old.Owner(k) != m.From || next.Owner(k) != m.To {
					t.Fatalf("trial %d: key %d moves %d→%d, owners %d→%d", trial, k, m.From, m.To, old.Owner(k), next.Owner(k))
				}
			}
		}
		for k := range n {
			if covered[k] != (old.Owner(k) != next.Owner(k)) {
				t.Fatalf("trial %d: key %d moved %v, owners %d→%d", trial, k, covered[k], old.Owner(k), next.Owner(k))
			}
		}
	}
	uniform, _ := route.Uniform(2, 10)
	other, _ := route.Uniform(3, 10)
	if _, err := Moves(uniform, other); err == nil {
		t.Error("tables of different servers accepted")
	}
}
