package partition

import (
	"math/bits"
	"slices"

	"colo/placement"
)

// ParamOrder returns the order in which Alg. 2 visits m parameters
// (AssignParams): decreasing c_v = size(v), ties in the order of a shuffle
// of 0..m−1 drawn from seed. A distributed assignment computes it alike on
// every worker from the sizes alone.
func ParamOrder(m int, size func(v int) int, seed uint64) []uint32 {
	maxC := 0
	for v := 0; v < m; v++ {
		maxC = max(maxC, size(v))
	}
	rng := placement.NewRand(seed)
	perm := make([]uint32, m)
	for v := range perm {
		perm[v] = uint32(v)
	}
	rng.Shuffle(m, func(a, b int) { perm[a], perm[b] = perm[b], perm[a] })
	start := make([]int, maxC+2)
	for v := 0; v < m; v++ {
		start[maxC-size(v)+1]++
	}
	for c := 1; c < len(start); c++ {
		start[c] += start[c-1]
	}
	order := make([]uint32, m)
	for _, v := range perm {
		c := maxC - size(int(v))
		order[start[c]] = v
		start[c]++
	}
	return order
}

// The parameter step and the cost model of an out-of-core run (package
// partition/ooc), from the machine masks C_v = {i : some sample of U_i
// uses v} (MaskWords(k) words per parameter) instead of the graph:
// O(m·k/64) words, whatever |E|.

// AssignParamsMasks is AssignParams given the masks C_v of m parameters
// over k machines: the same order (decreasing c_v, ties in the order drawn
// from seed), the same greedy pass and sweeps, the same ties (the lower
// machine), so the same assignment. It returns the machine of each
// parameter and the statistics.
func AssignParamsMasks(masks []uint64, m, k int, seed uint64) ([]int32, ParamStats) {
	w := MaskWords(k)
	csize := func(v uint32) int {
		c := 0
		for _, x := range masks[int(v)*w : int(v)*w+w] {
			c += bits.OnesCount64(x)
		}
		return c
	}
	cost := make([]int64, k)
	for v := 0; v < m; v++ {
		for x, word := range masks[v*w : v*w+w] {
			for word != 0 {
				cost[x*64+bits.TrailingZeros64(word)]++
				word &= word - 1
			}
		}
	}

	order := ParamOrder(m, func(v int) int { return csize(uint32(v)) }, seed)
	param := make([]int32, m)

	// cheapest returns the machine of v's mask other than skip with the
	// least cost, the lower on ties, or -1.
	cheapest := func(v uint32, skip int32) int32 {
		best := int32(-1)
		for x, word := range masks[int(v)*w : int(v)*w+w] {
			for word != 0 {
				j := int32(x*64 + bits.TrailingZeros64(word))
				word &= word - 1
				if j != skip && (best < 0 || cost[j] < cost[best]) {
					best = j
				}
			}
		}
		return best
	}
	var rr int32
	for _, v := range order {
		c := csize(v)
		if c == 0 {
			param[v] = rr
			rr = (rr + 1) % int32(k)
			continue
		}
		best := cheapest(v, -1)
		param[v] = best
		cost[best] += int64(c) - 2
	}
	st := ParamStats{GreedyTMax: slices.Max(cost)}

	movable := order[:0]
	for _, v := range order {
		if csize(v) >= 3 {
			movable = append(movable, v)
		}
	}
	st.Sweeps, st.Moves, st.Converged = sweep(movable, func(v uint32) bool {
		o := param[v]
		size := int64(csize(v)) - 2
		return moveIfLower(cost, param, v, o, cheapest(v, o), size)
	})
	st.TMax = slices.Max(cost)
	return param, st
}

// CostFromMasks is placement.Evaluate from the masks C_v, the parameters'
// machines and the sample counts |U_i|.
func CostFromMasks(masks []uint64, param []int32, samples []int64, k int, theta int64) *placement.Cost {
	return CostFromStrided(masks, MaskWords(k), 0, param, samples, k, theta)
}

// CostFromStrided is CostFromMasks with the mask of v at
// masks[v·stride+offset:][:MaskWords(k)], several placements' masks
// side by side.
func CostFromStrided(masks []uint64, stride, offset int, param []int32, samples []int64, k int, theta int64) *placement.Cost {
	w := MaskWords(k)
	c := &placement.Cost{K: k, Samples: slices.Clone(samples), Params: make([]int64, k),
		Memory: make([]int64, k), Worker: make([]int64, k), Server: make([]int64, k),
		Traffic: make([]int64, k), Theta: theta}
	for v, owner := range param {
		c.Params[owner]++
		for x, word := range masks[v*stride+offset : v*stride+offset+w] {
			for word != 0 {
				j := int32(x*64 + bits.TrailingZeros64(word))
				word &= word - 1
				c.Memory[j]++
				if j != owner {
					c.Worker[j]++
					c.Server[owner]++
				}
			}
		}
	}
	c.Totals()
	return c
}
