package shard

import (
	"math"
	"math/rand/v2"
	"slices"

	"colo/shard/internal/vec"
)

// objective is a monotone or non-monotone submodular set function over the
// ground set 0..m-1, kept for each of several blocks A_j.
type objective interface {
	// emptyGain returns f({v}) - f(∅), the same for every block.
	emptyGain(v int) float64
	// gain returns f(A_j ∪ {v}) - f(A_j).
	gain(j, v int) float64
	// add puts v into A_j and returns the gain.
	add(j, v int) float64
}

// facility is facility location, f(A) = Σ_{u∈V} max_{a∈A} S[u][a], with
// the maximum over the empty set 0.
type facility struct {
	s    []float32   // m × m similarities
	m    int         // ground set size
	cur  [][]float32 // cur[j][u] = max_{a∈A_j} S[u][a]
	zero []float32   // m zeros, for emptyGain
}

func newFacility(s []float32, m, blocks int) *facility {
	f := &facility{s: s, m: m, cur: make([][]float32, blocks)}
	for j := range f.cur {
		f.cur[j] = make([]float32, m)
	}
	return f
}

// emptyGain is gain against an all-zero cur, computed the same way, so
// that it is exactly what gain returns for an empty block.
func (f *facility) emptyGain(v int) float64 {
	if f.zero == nil {
		f.zero = make([]float32, f.m)
	}
	return float64(vec.SumPosDiff(f.s[v*f.m:(v+1)*f.m], f.zero))
}

// gain sums the improvement of each u's best similarity. S is symmetric,
// so row v holds S[u][v] for every u. The sum is formed in a fixed order,
// and every term only shrinks as cur grows, so the computed gains shrink
// too: lazy evaluation stays exact in floating point.
func (f *facility) gain(j, v int) float64 {
	return float64(vec.SumPosDiff(f.s[v*f.m:(v+1)*f.m], f.cur[j]))
}

func (f *facility) add(j, v int) float64 {
	g := f.gain(j, v)
	row := f.s[v*f.m : (v+1)*f.m]
	cur := f.cur[j][:len(row)]
	for u, s := range row {
		cur[u] = max(cur[u], s)
	}
	return g
}

// graphCut is the cut function of seed 003 §3,
// f(A) = Σ_{u∈V∖A} Σ_{a∈A} S[u][a]. Its gain is
// f(A ∪ {v}) - f(A) = Σ_{u≠v} S[u][v] - 2·Σ_{a∈A} S[v][a].
type graphCut struct {
	s    []float32
	m    int
	base []float64   // Σ_{u≠v} S[u][v]
	acc  [][]float64 // acc[j][v] = Σ_{a∈A_j} S[v][a]
}

func newGraphCut(s []float32, m, blocks int) *graphCut {
	g := &graphCut{s: s, m: m, base: make([]float64, m), acc: make([][]float64, blocks)}
	for v := range m {
		sum := 0.0
		for u, x := range s[v*m : (v+1)*m] {
			if u != v {
				sum += float64(x)
			}
		}
		g.base[v] = sum
	}
	for j := range g.acc {
		g.acc[j] = make([]float64, m)
	}
	return g
}

func (g *graphCut) emptyGain(v int) float64 { return g.base[v] }

func (g *graphCut) gain(j, v int) float64 { return g.base[v] - 2*g.acc[j][v] }

func (g *graphCut) add(j, v int) float64 {
	gain := g.gain(j, v)
	acc := g.acc[j]
	for u, x := range g.s[v*g.m : (v+1)*g.m] {
		acc[u] += float64(x)
	}
	return gain
}

// partitionStats counts the work of one run of Alg. 1.
type partitionStats struct {
	evaluations int64
}

// partition runs Alg. 1 of seed 003 on a ground set of m elements: blocks
// with capacities caps (summing to m) start empty; while elements remain,
// the block with the smallest f among those not yet full (ties to the
// lower index) takes the remaining element of largest marginal gain (ties
// to the lower element). With GrowProportional the block that is least
// full relative to its capacity grows instead (ties to the smaller f). It
// returns the block of each element.
func partition(obj objective, m int, caps []int, grow Grow, method Greedy, epsilon float64, rng *rand.Rand) ([]int, partitionStats) {
	nb := len(caps)
	block := make([]int, m)
	for v := range block {
		block[v] = -1
	}
	var st partitionStats
	f := make([]float64, nb)
	size := make([]int, nb)
	// The remaining elements, with their positions, for sampling and
	// plain greedy.
	rem := make([]int, m)
	pos := make([]int, m)
	for v := range rem {
		rem[v], pos[v] = v, v
	}
	remove := func(v int) {
		p, last := pos[v], rem[len(rem)-1]
		rem[p], pos[last] = last, p
		rem = rem[:len(rem)-1]
	}
	empty := make([]float64, m)
	for v := range empty {
		empty[v] = obj.emptyGain(v)
	}
	st.evaluations += int64(m)
	var heaps []*gainHeap
	var bound [][]float64
	switch method {
	case GreedyLazy:
		heaps = make([]*gainHeap, nb)
	case GreedyStochastic:
		bound = make([][]float64, nb)
	}
	for len(rem) > 0 {
		j := -1
		for b := range nb {
			if size[b] >= caps[b] {
				continue
			}
			if j < 0 {
				j = b
				continue
			}
			if grow == GrowProportional {
				// size[b]/caps[b] < size[j]/caps[j]
				l, r := size[b]*caps[j], size[j]*caps[b]
				if l < r || l == r && f[b] < f[j] {
					j = b
				}
				continue
			}
			if f[b] < f[j] {
				j = b
			}
		}
		var v int
		switch method {
		case GreedyPlain:
			v = plainStep(obj, j, rem, &st)
		case GreedyLazy:
			if heaps[j] == nil {
				heaps[j] = newGainHeap(empty, block)
			}
			v = heaps[j].pop(obj, j, size[j], block, &st)
		case GreedyStochastic:
			if bound[j] == nil {
				bound[j] = slices.Clone(empty)
			}
			s := int(math.Ceil(float64(m) / float64(caps[j]) * math.Log(1/epsilon)))
			v = stochasticStep(obj, j, rem, pos, s, bound[j], rng, &st)
		}
		f[j] += obj.add(j, v)
		block[v] = j
		size[j]++
		remove(v)
	}
	return block, st
}

// plainStep evaluates every remaining element.
func plainStep(obj objective, j int, rem []int, st *partitionStats) int {
	best, bestGain := -1, math.Inf(-1)
	for _, v := range rem {
		g := obj.gain(j, v)
		st.evaluations++
		if g > bestGain || g == bestGain && v < best {
			best, bestGain = v, g
		}
	}
	return best
}

// stochasticStep evaluates a random sample of s remaining elements, in
// decreasing order of their last known gain (an upper bound, by
// submodularity), stopping once no bound can beat the best gain found.
func stochasticStep(obj objective, j int, rem, pos []int, s int, bound []float64, rng *rand.Rand, st *partitionStats) int {
	if s > len(rem) {
		s = len(rem)
	}
	// Partial Fisher–Yates: move a uniform sample to the front of rem.
	for k := range s {
		r := k + rng.IntN(len(rem)-k)
		rem[k], rem[r] = rem[r], rem[k]
		pos[rem[k]], pos[rem[r]] = k, r
	}
	sample := slices.Clone(rem[:s])
	slices.SortFunc(sample, func(a, b int) int {
		switch {
		case bound[a] > bound[b]:
			return -1
		case bound[a] < bound[b]:
			return 1
		}
		return a - b
	})
	best, bestGain := -1, math.Inf(-1)
	for _, v := range sample {
		if bound[v] < bestGain {
			break
		}
		g := obj.gain(j, v)
		st.evaluations++
		bound[v] = g
		if g > bestGain || g == bestGain && v < best {
			best, bestGain = v, g
		}
	}
	return best
}

// gainHeap is a max-heap of elements by an upper bound on their marginal
// gain for one block (ties to the lower element), with the block size at
// which each bound was computed.
type gainHeap struct {
	items []heapItem
}

type heapItem struct {
	bound float64
	v     int32
	stamp int32 // block size when bound was computed
}

func (a heapItem) before(b heapItem) bool {
	return a.bound > b.bound || a.bound == b.bound && a.v < b.v
}

// newGainHeap holds every element not yet placed, with its gain on the
// empty block as a bound computed at size 0.
func newGainHeap(empty []float64, block []int) *gainHeap {
	h := &gainHeap{items: make([]heapItem, 0, len(empty))}
	for v, g := range empty {
		if block[v] < 0 {
			h.items = append(h.items, heapItem{bound: g, v: int32(v)})
		}
	}
	for k := len(h.items)/2 - 1; k >= 0; k-- {
		h.down(k)
	}
	return h
}

// pop returns the remaining element of largest gain for block j, which has
// size elements: the top is taken once its bound is fresh, and stale
// bounds are recomputed and sifted down. Elements placed in other blocks
// are dropped on the way.
func (h *gainHeap) pop(obj objective, j, size int, block []int, st *partitionStats) int {
	for {
		top := h.items[0]
		switch {
		case block[top.v] >= 0:
			last := len(h.items) - 1
			h.items[0] = h.items[last]
			h.items = h.items[:last]
			if last > 0 {
				h.down(0)
			}
		case int(top.stamp) == size:
			last := len(h.items) - 1
			h.items[0] = h.items[last]
			h.items = h.items[:last]
			if last > 0 {
				h.down(0)
			}
			return int(top.v)
		default:
			h.items[0].bound = obj.gain(j, int(top.v))
			h.items[0].stamp = int32(size)
			st.evaluations++
			h.down(0)
		}
	}
}

func (h *gainHeap) down(k int) {
	items := h.items
	n := len(items)
	for {
		best := k
		if l := 2*k + 1; l < n && items[l].before(items[best]) {
			best = l
		}
		if r := 2*k + 2; r < n && items[r].before(items[best]) {
			best = r
		}
		if best == k {
			return
		}
		items[k], items[best] = items[best], items[k]
		k = best
	}
}
