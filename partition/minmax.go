package partition

import (
	"container/heap"
	"fmt"
	"runtime"
	"slices"

	"colo/graph"
	"colo/placement"
)

// ParamAlgo names a parameter assignment: the step that places the
// parameters once the samples are placed.
type ParamAlgo string

// The parameter assignments.
const (
	// ParamParsa is AssignParams: seed 001 Alg. 2 over the parameters in
	// decreasing order of the machines that need them, then sweeps.
	ParamParsa ParamAlgo = "parsa"
	// ParamMinMax is MinMaxParams: seed 000 Alg. 2, the cheapest machine
	// repeatedly takes its cheapest parameter.
	ParamMinMax ParamAlgo = "minmax"
)

// ParamAlgos returns the parameter assignments.
func ParamAlgos() []ParamAlgo { return []ParamAlgo{ParamParsa, ParamMinMax} }

// Validate checks that a is "" (the default, parsa) or a known assignment.
func (a ParamAlgo) Validate() error {
	switch a {
	case "", ParamParsa, ParamMinMax:
		return nil
	}
	return fmt.Errorf("param algo = %q: want parsa or minmax", string(a))
}

// AssignParamsWith places the parameters of g for the data partition
// p.Data with the named assignment ("" is ParamParsa), overwriting p.Param.
func AssignParamsWith(g *graph.Graph, p *placement.Placement, algo ParamAlgo, seed uint64) (ParamStats, error) {
	return assignParamsWith(g, p, algo, seed, runtime.GOMAXPROCS(0))
}

func assignParamsWith(g *graph.Graph, p *placement.Placement, algo ParamAlgo, seed uint64, workers int) (ParamStats, error) {
	switch algo {
	case "", ParamParsa:
		return assignParams(g, p, seed, workers), nil
	case ParamMinMax:
		return minMaxParams(g, p, workers), nil
	}
	return ParamStats{}, algo.Validate()
}

// MinMaxParams assigns every parameter of g to a server given the data
// partition p.Data, overwriting p.Param, by Alg. 2 of seed 000: every
// machine starts at cost |N(U_i)| (its worker pulls everything), and then,
// repeatedly, the machine with the smallest cost takes the unassigned
// parameter of N(U_i) that raises its cost least, until none is left.
//
// Giving v to machine i ∈ C_v (the c_v machines whose workers need v)
// saves i one pull and makes it serve the c_v − 1 others: its cost moves
// by c_v − 2 and no other cost moves (see AssignParams). So the cheapest
// parameter for i is an unassigned one of N(U_i) with the least c_v, and
// the costs never depend on the order in which other machines took theirs.
// Each machine keeps its candidates sorted by c_v (a counting sort) with a
// cursor that skips the ones other machines took, and the machines sit in
// a binary heap by cost (ties to the lower index); a machine whose
// candidates run out leaves the heap. The whole run takes O(Σ_v c_v +
// m log k) ≤ O(|E| + m log k) time. Parameters no sample uses cost nothing
// and are dealt round-robin.
//
// The statistics report T_max; the greedy and final values coincide, as
// there are no sweeps.
func MinMaxParams(g *graph.Graph, p *placement.Placement) ParamStats {
	return minMaxParams(g, p, runtime.GOMAXPROCS(0))
}

func minMaxParams(g *graph.Graph, p *placement.Placement, workers int) ParamStats {
	k, m := p.K, g.NumParams()
	coff, cand, cost := candidates(g, p.Data, k, workers)
	// Per machine, its candidates sorted by c_v: counting sort by (i, c).
	maxC := 1
	for v := 0; v < m; v++ {
		maxC = max(maxC, int(coff[v+1]-coff[v]))
	}
	start := make([]int64, k*(maxC+1)+1) // bucket (i, c) at i*(maxC+1)+c
	for v := 0; v < m; v++ {
		c := int(coff[v+1] - coff[v])
		for _, i := range cand[coff[v]:coff[v+1]] {
			start[int(i)*(maxC+1)+c+1]++
		}
	}
	for x := 1; x < len(start); x++ {
		start[x] += start[x-1]
	}
	list := make([]uint32, len(cand))
	fill := slices.Clone(start[:len(start)-1])
	for v := 0; v < m; v++ {
		c := int(coff[v+1] - coff[v])
		for _, i := range cand[coff[v]:coff[v+1]] {
			b := int(i)*(maxC+1) + c
			list[fill[b]] = uint32(v)
			fill[b]++
		}
	}
	cursor := make([]int64, k)
	end := make([]int64, k)
	for i := 0; i < k; i++ {
		cursor[i] = start[i*(maxC+1)]
		end[i] = start[(i+1)*(maxC+1)]
	}

	param := p.Param
	for v := range param {
		param[v] = placement.Unassigned
	}
	h := &machineHeap{cost: cost}
	for i := 0; i < k; i++ {
		if cursor[i] < end[i] {
			h.ids = append(h.ids, int32(i))
		}
	}
	heap.Init(h)
	for h.Len() > 0 {
		i := h.ids[0]
		for cursor[i] < end[i] && param[list[cursor[i]]] != placement.Unassigned {
			cursor[i]++
		}
		if cursor[i] == end[i] {
			heap.Pop(h)
			continue
		}
		v := list[cursor[i]]
		cursor[i]++
		param[v] = i
		cost[i] += coff[v+1] - coff[v] - 2
		heap.Fix(h, 0)
	}
	var rr int32
	for v := range param {
		if param[v] == placement.Unassigned {
			param[v] = rr
			rr = (rr + 1) % int32(k)
		}
	}
	t := slices.Max(cost)
	return ParamStats{GreedyTMax: t, TMax: t, Converged: true}
}

// machineHeap is a min-heap of machines by cost, ties to the lower index.
type machineHeap struct {
	ids  []int32
	cost []int64
}

func (h *machineHeap) Len() int { return len(h.ids) }
func (h *machineHeap) Less(a, b int) bool {
	x, y := h.ids[a], h.ids[b]
	return h.cost[x] < h.cost[y] || (h.cost[x] == h.cost[y] && x < y)
}
func (h *machineHeap) Swap(a, b int) { h.ids[a], h.ids[b] = h.ids[b], h.ids[a] }
func (h *machineHeap) Push(x any)    { h.ids = append(h.ids, x.(int32)) }
func (h *machineHeap) Pop() any {
	x := h.ids[len(h.ids)-1]
	h.ids = h.ids[:len(h.ids)-1]
	return x
}
