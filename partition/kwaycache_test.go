package partition

import (
	"math/rand/v2"
	"slices"
	"testing"

	"colo/placement"
)

// cacheCase is a level with a placement for the gain cache tests: the
// finest level of a random graph or a coarser one of the V-cycle
// (weighted vertices and nets), nets floating or served, with balance
// bounds and, optionally, a memory bound θ.
type cacheCase struct {
	lv    *level
	k     int
	part  []int32
	owner []int32
	hi    []int64
	theta int64
}

func newCacheCase(t *testing.T, rng *rand.Rand, trial int) cacheCase {
	t.Helper()
	n, m := 40+rng.IntN(200), 10+rng.IntN(120)
	k := []int{2, 3, 5, 8, 16, 64, 67, 100}[trial%8]
	g := randomGraph(t, rng.Uint64(), n, m, 0.02+0.15*rng.Float64())
	lv := finest(g)
	part := make([]int32, n)
	for u := range part {
		part[u] = int32(rng.IntN(k))
	}
	if trial%3 == 1 {
		// A level of the V-cycle: clusters within the blocks.
		cid, nc := cluster(lv, part, 4, trial%2 == 0, true, rng)
		c := contract(lv, cid, nc, nil, 0)
		pc := make([]int32, nc)
		for u, x := range cid {
			pc[x] = part[u]
		}
		lv, part = c, pc
	}
	owner := make([]int32, lv.m)
	for e := range owner {
		owner[e] = -1
		if trial%4 == 3 {
			owner[e] = int32(rng.IntN(k))
		}
	}
	var total int64
	for _, w := range lv.vw {
		total += w
	}
	hi := make([]int64, k)
	for i := range hi {
		hi[i] = total/int64(k) + 1 + int64(rng.IntN(3))
		if trial%5 == 0 {
			hi[i] = total
		}
	}
	c := cacheCase{lv: lv, k: k, part: part, owner: owner, hi: hi}
	if trial%3 != 0 {
		s := newKState(lv, k, slices.Clone(part), owner, hi, 0)
		c.theta = slices.Min(s.mem) + (slices.Max(s.mem)-slices.Min(s.mem))*int64(1+rng.IntN(3))/4
	}
	return c
}

func (c cacheCase) state(mode cacheMode) *kstate {
	s := newKState(c.lv, c.k, slices.Clone(c.part), c.owner, c.hi, c.theta)
	s.cacheMode = mode
	return s
}

// TestFMGainCache runs FM with and without the gain cache from the same
// state and seed, on finest and V-cycle levels, floating and served nets,
// k from 2 to 100 (one and two mask words), with and without θ and with
// tight balance bounds: the moves, and so the placements and the volume
// gained, must be the same.
func TestFMGainCache(t *testing.T) {
	rng := placement.NewRand(41)
	for trial := 0; trial < 120; trial++ {
		c := newCacheCase(t, rng, trial)
		seed := rng.Uint64()
		patience := []float64{0, 1.0 / 20, 1}[trial%3]
		var parts [2][]int32
		var gains [2]int64
		for x, mode := range []cacheMode{-1, 1} {
			s := c.state(mode)
			s.patience = patience
			gains[x] = s.fm(placement.NewRand(seed), 4)
			if s.gc != nil {
				t.Fatalf("trial %d: fm left its gain cache behind", trial)
			}
			parts[x] = s.part
		}
		if gains[0] != gains[1] || !slices.Equal(parts[0], parts[1]) {
			t.Fatalf("trial %d (k = %d, n = %d, θ = %d, served %v): FM with the gain cache gains %d, without %d; placements equal: %v",
				trial, c.k, c.lv.n, c.theta, c.owner[0] >= 0, gains[1], gains[0], slices.Equal(parts[0], parts[1]))
		}
	}
}

// TestGainCacheMoves checks the gain cache after every move of a random
// walk (moves forth and back, as FM's undo makes): its rows equal those
// built afresh from the state, the gain it gives every vertex for every
// block equals the one recomputed from the nets, and cachedMove gives
// bestMove's block, gain and free gain, and its free block where FM reads
// it.
func TestGainCacheMoves(t *testing.T) {
	rng := placement.NewRand(43)
	for trial := 0; trial < 48; trial++ {
		c := newCacheCase(t, rng, trial)
		s := c.state(1)
		s.buildCache()
		ref := c.state(-1)
		k, n := c.k, c.lv.n
		for step := 0; step < 80; step++ {
			for u := 0; u < n; u++ {
				want, wg := ref.bestMove(u)
				wantFree, wantFreeGain := ref.freeTo, ref.freeGain
				got, gg := s.bestMove(u)
				if got != want || gg != wg || s.freeGain != wantFreeGain {
					t.Fatalf("trial %d step %d: vertex %d: cached move %d (gain %d, free %d), bestMove %d (gain %d, free %d)",
						trial, step, u, got, gg, s.freeGain, want, wg, wantFreeGain)
				}
				if (s.freeTo < 0) != (wantFree < 0) || (s.freeTo != wantFree && (want < 0 || wantFreeGain > wg)) {
					t.Fatalf("trial %d step %d: vertex %d: cached free block %d, bestMove's %d", trial, step, u, s.freeTo, wantFree)
				}
				if l := s.leave(u); l != ref.leave(u) {
					t.Fatalf("trial %d step %d: vertex %d leaves %d, recomputed %d", trial, step, u, l, ref.leave(u))
				}
				row := s.gc.rows[u*s.gc.stride:]
				for b := 0; b < k; b++ {
					if b == int(s.part[u]) {
						continue
					}
					g := int64(row[cacheLeave]) - int64(row[cacheAll]) + int64(row[cacheHead+b])
					if r := ref.gain(u, b); g != r {
						t.Fatalf("trial %d step %d: cached gain of %d → %d is %d, recomputed %d", trial, step, u, b, g, r)
					}
				}
			}
			fresh := newKState(c.lv, k, slices.Clone(s.part), c.owner, c.hi, c.theta)
			fresh.buildCache()
			if !slices.Equal(fresh.gc.rows, s.gc.rows) {
				t.Fatalf("trial %d step %d: cache differs from one built afresh", trial, step)
			}
			u := rng.IntN(n)
			b := rng.IntN(k)
			if step%4 == 3 {
				b = int(s.part[u]) // a move within the block changes nothing
			}
			s.move(u, b, nil)
			ref.move(u, b, nil)
		}
	}
}
