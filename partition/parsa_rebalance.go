package partition

import (
	"math"
	"slices"
)

// The balance of a Parsa run: sizeBounds sets the bounds lo_i ≤ |U_i| ≤
// hi_i that the run must end within, and runner.rebalance moves the few
// samples needed to restore them after a run whose stale view (τ > 0)
// missed them.

// sizeBounds returns the bounds lo_i ≤ |U_i| ≤ hi_i that a run must end
// within, given the samples kept on each machine and n in all. Growing by
// samples, they are water levels: the smallest partitions are filled
// first, so that with nothing kept every |U_i| is ⌊n/k⌋ or ⌈n/k⌉. Growing
// by parameters, only |U_i| ≤ ⌈(1+ε)n/k⌉ binds.
func sizeBounds(kept []int64, n int, po ParsaOptions) (lo, hi []int64) {
	k := len(kept)
	lo, hi = make([]int64, k), make([]int64, k)
	if po.GrowBy == GrowParams {
		limit := max(int64(math.Ceil((1+po.Epsilon)*float64(n)/float64(k))), int64((n+k-1)/k))
		for i, c := range kept {
			hi[i] = max(limit, c)
		}
		return lo, hi
	}
	fill := func(level int64) int64 {
		var s int64
		for _, c := range kept {
			s += max(c, level)
		}
		return s
	}
	// The highest level L with Σ max(kept_i, L) ≤ n.
	a, b := int64(0), int64(n)
	for a < b {
		mid := (a + b + 1) / 2
		if fill(mid) <= int64(n) {
			a = mid
		} else {
			b = mid - 1
		}
	}
	rest := int64(n) - fill(a)
	for i, c := range kept {
		lo[i] = max(c, a)
		hi[i] = lo[i]
		if c <= a && rest > 0 {
			hi[i]++
		}
	}
	return lo, hi
}

// rebalance moves samples until lo_i ≤ |U_i| ≤ hi_i for every i, which a
// run with a stale view (τ > 0) may miss by a few samples. It first
// empties partitions above hi into those below hi, then fills partitions
// below lo from those above lo. Candidates are the latest placed samples
// of each source partition, a few per sample to move; each move takes the
// candidate that adds the fewest parameters to the neighbour set of a
// partition that may receive, cheapest first. Kept samples never move. It
// returns the number of samples moved.
func (r *runner) rebalance(lo, hi []int64) int {
	if Balanced(r.p.Data, lo, hi) {
		return 0
	}
	w, m := MaskWords(r.k), r.g.NumParams()
	all := make([]uint32, m)
	for v := range all {
		all[v] = uint32(v)
	}
	masks := make([]uint64, m*w)
	r.sets.Pull(all, masks)
	moved, _ := Rebalance(r.p.Data, r.k, lo, hi, masks, r.blocks, func(u int) []uint32 { return r.g.Params(u) }, nil)
	return moved
}

// Balanced reports whether lo_i ≤ |U_i| ≤ hi_i for the placement data.
func Balanced(data []int32, lo, hi []int64) bool {
	count := make([]int64, len(lo))
	for _, i := range data {
		count[i]++
	}
	for i, c := range count {
		if c < lo[i] || c > hi[i] {
			return false
		}
	}
	return true
}

// Rebalance moves samples of data until lo_i ≤ |U_i| ≤ hi_i for every
// i, as a Parsa run does at its end, given the neighbour sets N(U_i) of
// data as masks (MaskWords(k) words per parameter, updated as samples
// move), the blocks in the order they were placed and each sample's
// parameters: a plan of a file repairs from its spills with it
// (package partition/ooc). prefetch, when set, is called with the
// samples whose parameters the next moves will ask for (the candidates),
// before they are asked; its error ends the repair. It returns the
// number of samples moved.
func Rebalance(data []int32, k int, lo, hi []int64, masks []uint64, blocks [][]uint32, params func(u int) []uint32, prefetch func(us []int) error) (int, error) {
	count := make([]int64, k)
	for _, i := range data {
		count[i]++
	}
	w := MaskWords(k)
	moved := 0
	var fail error
	// best returns the partition j with to(j) that u extends least, and
	// the number of parameters it adds.
	best := func(u int, to func(int) bool) (int, int) {
		bj, bc := -1, 0
		for j := 0; j < k; j++ {
			if !to(j) {
				continue
			}
			c := 0
			for _, v := range params(u) {
				if masks[int(v)*w+j>>6]&(1<<(j&63)) == 0 {
					c++
				}
			}
			if bj < 0 || c < bc {
				bj, bc = j, c
			}
		}
		return bj, bc
	}
	type move struct{ u, to, cost int }
	// phase moves samples out of partitions with excess(i) > 0 into those
	// with to(j) until none has excess or none may receive.
	phase := func(excess func(i int) int64, to func(j int) bool) {
		for quota := int64(4); ; quota *= 4 {
			done := true
			want := make([]int64, k)
			for i := range want {
				if e := excess(i); e > 0 {
					want[i] = quota*e + 16
					done = false
				}
			}
			receiver := false
			for j := 0; j < k; j++ {
				receiver = receiver || to(j)
			}
			if done || !receiver {
				return
			}
			var cands []int
			for b := len(blocks) - 1; b >= 0; b-- {
				blk := blocks[b]
				for x := len(blk) - 1; x >= 0; x-- {
					u := int(blk[x])
					if i := data[u]; want[i] > 0 {
						want[i]--
						cands = append(cands, u)
					}
				}
			}
			if prefetch != nil {
				if err := prefetch(cands); err != nil {
					fail = err
					return
				}
			}
			var moves []move
			for _, u := range cands {
				if j, c := best(u, to); j >= 0 {
					moves = append(moves, move{u, j, c})
				}
			}
			for len(moves) > 0 {
				slices.SortStableFunc(moves, func(a, b move) int { return a.cost - b.cost })
				var retry []move
				for _, mv := range moves {
					src := int(data[mv.u])
					if excess(src) <= 0 {
						continue
					}
					if !to(mv.to) {
						if j, c := best(mv.u, to); j >= 0 {
							retry = append(retry, move{mv.u, j, c})
						}
						continue
					}
					data[mv.u] = int32(mv.to)
					count[src]--
					count[mv.to]++
					for _, v := range params(mv.u) {
						masks[int(v)*w+mv.to>>6] |= 1 << (mv.to & 63)
					}
					moved++
				}
				moves = retry
			}
		}
	}
	phase(func(i int) int64 { return count[i] - hi[i] }, func(j int) bool { return count[j] < hi[j] })
	if fail != nil {
		return moved, fail
	}
	deficit := func() int64 {
		var d int64
		for j := range count {
			d += max(0, lo[j]-count[j])
		}
		return d
	}
	phase(func(i int) int64 {
		if count[i] > lo[i] {
			return deficit()
		}
		return 0
	}, func(j int) bool { return count[j] < lo[j] })
	return moved, fail
}
