package partition

import (
	"slices"

	"colo/graph"
)

// RefineStats reports the refinement of a data partition.
type RefineStats struct {
	// Passes is the number of passes run.
	Passes int `json:"passes"`
	// Moves is the number of samples moved, Swaps the number of them that
	// moved in balanced pairs.
	Moves int64 `json:"moves"`
	Swaps int64 `json:"swaps"`
	// Before and After are Σ_i |N(U_i)| before and after.
	Before int64 `json:"sum_memory_before"`
	After  int64 `json:"sum_memory_after"`
}

// refiner lowers Σ_i |N(U_i)| of a data partition by moving samples, the
// k-way local search of hypergraph partitioners for the connectivity
// metric: since T_sum = 2·Σ_i |N(U_i)| − 2·|{v : some sample uses v}| once
// every parameter sits on a machine that needs it, this is the total
// traffic. Sizes stay within [lo, hi].
type refiner struct {
	g      *graph.Graph
	k      int
	data   []int32
	cnt    []int32 // cnt[v*k+i] = |{u ∈ U_i : v ∈ N(u)}|
	size   []int64
	lo, hi []int64
	add    []int32 // scratch, per partition
	sum    int64   // Σ_i |N(U_i)|
}

func newRefiner(g *graph.Graph, data []int32, k int, lo, hi []int64) *refiner {
	r := &refiner{g: g, k: k, data: data, cnt: make([]int32, g.NumParams()*k),
		size: make([]int64, k), lo: lo, hi: hi, add: make([]int32, k)}
	off, adj := g.SampleOffsets(), g.SampleAdjacency()
	for u, i := range data {
		r.size[i]++
		for _, v := range adj[off[u]:off[u+1]] {
			c := &r.cnt[int(v)*k+int(i)]
			if *c == 0 {
				r.sum++
			}
			*c++
		}
	}
	return r
}

// best returns the partition j ≠ data[u] that u would extend least and the
// gain of moving u there: the parameters only u needs in its partition
// minus those it brings to j.
func (r *refiner) best(u int) (int, int32) {
	k := r.k
	i := int(r.data[u])
	add := r.add
	clear(add)
	var loss int32
	for _, v := range r.g.Params(u) {
		row := r.cnt[int(v)*k : int(v)*k+k]
		if row[i] == 1 {
			loss++
		}
		for j, c := range row {
			if c == 0 {
				add[j]++
			}
		}
	}
	bj, ba := -1, int32(0)
	for j, a := range add {
		if j != i && (bj < 0 || a < ba) {
			bj, ba = j, a
		}
	}
	return bj, loss - ba
}

// gain returns the gain of moving u to j.
func (r *refiner) gain(u, j int) int32 {
	k := r.k
	i := int(r.data[u])
	var gain int32
	for _, v := range r.g.Params(u) {
		row := r.cnt[int(v)*k : int(v)*k+k]
		if row[i] == 1 {
			gain++
		}
		if row[j] == 0 {
			gain--
		}
	}
	return gain
}

// move moves u to j.
func (r *refiner) move(u, j int) {
	k := r.k
	i := int(r.data[u])
	for _, v := range r.g.Params(u) {
		row := r.cnt[int(v)*k : int(v)*k+k]
		row[i]--
		if row[i] == 0 {
			r.sum--
		}
		if row[j] == 0 {
			r.sum++
		}
		row[j]++
	}
	r.data[u] = int32(j)
	r.size[i]--
	r.size[j]++
}

// pass visits the samples in order and makes every improving move the
// sizes allow; blocked moves are kept per pair of partitions and then
// made in opposite pairs while the pair gains. It returns the moves made.
func (r *refiner) pass(order []uint32, st *RefineStats) int64 {
	type cand struct {
		u    uint32
		gain int32
	}
	k := r.k
	blocked := make(map[[2]int][]cand)
	var moves int64
	for _, u := range order {
		j, gain := r.best(int(u))
		if j < 0 || gain < 0 {
			continue
		}
		i := int(r.data[u])
		if r.size[j] < r.hi[j] && r.size[i] > r.lo[i] {
			r.move(int(u), j)
			moves++
			continue
		}
		blocked[[2]int{i, j}] = append(blocked[[2]int{i, j}], cand{u, gain})
	}
	for i := 0; i < k; i++ {
		for j := i + 1; j < k; j++ {
			a, b := blocked[[2]int{i, j}], blocked[[2]int{j, i}]
			if len(a) == 0 || len(b) == 0 {
				continue
			}
			byGain := func(x, y cand) int { return int(y.gain - x.gain) }
			slices.SortStableFunc(a, byGain)
			slices.SortStableFunc(b, byGain)
			for t := 0; t < min(len(a), len(b)); t++ {
				u, w := int(a[t].u), int(b[t].u)
				if r.data[u] != int32(i) || r.data[w] != int32(j) {
					break
				}
				g1 := r.gain(u, j)
				r.move(u, j)
				g2 := r.gain(w, i)
				if g1+g2 <= 0 {
					r.move(u, i)
					break
				}
				r.move(w, i)
				moves += 2
				st.Swaps += 2
			}
		}
	}
	return moves
}
