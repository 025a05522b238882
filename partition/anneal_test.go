package partition

import (
	"slices"
	"testing"

	"colo/placement"
)

// boundaries returns each machine's B_i counted from scratch: the
// parameters it needs that another machine needs too.
func boundaries(nParams int, k int, need func(v, i int) bool) []int64 {
	b := make([]int64, k)
	for v := 0; v < nParams; v++ {
		l := 0
		for i := 0; i < k; i++ {
			if need(v, i) {
				l++
			}
		}
		if l < 2 {
			continue
		}
		for i := 0; i < k; i++ {
			if need(v, i) {
				b[i]++
			}
		}
	}
	return b
}

// TestAnnealDelta checks on random graphs that the change moveDelta
// predicts for a move or a swap is the change the move makes, and that
// after every move the annealer's counts equal those rebuilt from
// scratch and its boundaries those counted directly from the placement.
func TestAnnealDelta(t *testing.T) {
	rng := placement.NewRand(5)
	for trial := 0; trial < 20; trial++ {
		n, m := 2+rng.IntN(200), 1+rng.IntN(80)
		k := 2 + rng.IntN(min(n-1, 9))
		g := randomGraph(t, rng.Uint64(), n, m, 0.02+0.15*rng.Float64())
		data := make([]int32, n)
		for u := range data {
			data[u] = int32(rng.IntN(k))
		}
		hi := make([]int64, k)
		for i := range hi {
			hi[i] = int64(n)
		}
		a := newAnnealer(g, k, data, hi, 0)
		d := make([]int64, k)
		for step := 0; step < 300; step++ {
			u := rng.IntN(n)
			src, dst := data[u], int32(rng.IntN(k))
			if dst == src {
				continue
			}
			y := int32(-1)
			if rng.IntN(2) == 0 && len(a.member[dst]) > 0 {
				y = a.member[dst][rng.IntN(len(a.member[dst]))]
			}
			dsum := a.moveDelta(u, dst, y, d)
			before := slices.Clone(a.bnd)
			sum := a.sum
			a.move(u, dst)
			if y >= 0 {
				a.move(int(y), src)
			}
			for i := range before {
				if a.bnd[i]-before[i] != d[i] {
					t.Fatalf("trial %d step %d: move %d %d→%d (swap %d): B_%d changed by %d, predicted %d", trial, step, u, src, dst, y, i, a.bnd[i]-before[i], d[i])
				}
			}
			if a.sum-sum != dsum {
				t.Fatalf("trial %d step %d: Σ B changed by %d, predicted %d", trial, step, a.sum-sum, dsum)
			}
			fresh := newAnnealer(g, k, slices.Clone(data), hi, 0)
			if !slices.Equal(a.cnt, fresh.cnt) || !slices.Equal(a.lam, fresh.lam) || !slices.Equal(a.mem, fresh.mem) {
				t.Fatalf("trial %d step %d: counts differ from a rebuild", trial, step)
			}
			direct := boundaries(m, k, func(v, i int) bool {
				for _, w := range g.Samples(v) {
					if data[w] == int32(i) {
						return true
					}
				}
				return false
			})
			if !slices.Equal(a.bnd, direct) {
				t.Fatalf("trial %d step %d: boundaries %v, counted %v", trial, step, a.bnd, direct)
			}
			for i := 0; i < k; i++ {
				for x, w := range a.member[i] {
					if data[w] != int32(i) || a.pos[w] != int32(x) {
						t.Fatalf("trial %d step %d: member lists out of date", trial, step)
					}
				}
			}
		}
	}
}
