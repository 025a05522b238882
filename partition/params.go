package partition

import (
	"runtime"
	"slices"
	"sync"

	"colo/graph"
	"colo/placement"
)

// ParamStats reports a run of AssignParams.
type ParamStats struct {
	// GreedyTMax is T_max after the single greedy pass of Alg. 2.
	GreedyTMax int64 `json:"greedy_T_max"`
	// TMax is T_max after the sweeps; TMax ≤ GreedyTMax.
	TMax int64 `json:"T_max"`
	// Sweeps is the number of sweeps run, the last of which moved nothing
	// when Converged.
	Sweeps int `json:"sweeps"`
	// Moves is the number of parameters the sweeps moved.
	Moves int64 `json:"moves"`
	// Converged reports that no single move helps any more.
	Converged bool `json:"converged"`
}

// MaxParamSweeps bounds the sweeps of AssignParams. Every move strictly
// lowers Σ_i T_i², so the sweeps end by themselves; the bound only caps
// the time on adversarial inputs.
const MaxParamSweeps = 1000

// AssignParams assigns every parameter of g to a server given the data
// partition p.Data, overwriting p.Param, and returns what it did. It is
// Alg. 2 of seed 001 followed by local search.
//
// Let C_v be the machines whose workers need v, c_v = |C_v|. Whatever
// server holds v, each machine of C_v other than the holder pulls it, so
// the holder of v serves c_v − 1 machines and saves its own worker one
// pull: putting v on machine i ∈ C_v adds c_v − 2 to T_i and nothing to
// any other T_j, while putting it outside C_v only adds traffic. So each
// parameter goes to a machine of C_v, T_i starts at |N(U_i)|, and choosing
// servers is a makespan problem with restricted assignment: job v of size
// c_v − 2 runs on a machine of C_v.
//
// The greedy pass is Alg. 2, run over the parameters in decreasing order
// of c_v (largest jobs first; equal c_v in an order drawn from seed): v
// goes to the machine of C_v with the least cost so far. Parameters used
// by no sample cost nothing and are dealt round-robin. Then sweeps visit
// the parameters in the same order and move v from its machine o to the
// cheapest other machine j of C_v when T_j + c_v − 2 < T_o, which lowers
// the larger of the two costs, until a sweep moves nothing (or after
// MaxParamSweeps). Each pass takes O(Σ_v c_v) ≤ O(|E|) time; the result
// costs exactly what placement.Evaluate reports.
//
// It uses up to GOMAXPROCS goroutines for the candidate lists; the result
// does not depend on their number.
func AssignParams(g *graph.Graph, p *placement.Placement, seed uint64) ParamStats {
	return assignParams(g, p, seed, runtime.GOMAXPROCS(0))
}

// assignParams is AssignParams with the candidate lists built on the given
// number of goroutines.
func assignParams(g *graph.Graph, p *placement.Placement, seed uint64, workers int) ParamStats {
	k := p.K
	m := g.NumParams()
	coff, cand, cost := candidates(g, p.Data, k, workers)
	// Order: decreasing c_v, ties in a seeded random order.
	order := ParamOrder(m, func(v int) int { return int(coff[v+1] - coff[v]) }, seed)

	var rr int32
	param := p.Param
	for _, v := range order {
		cs := cand[coff[v]:coff[v+1]]
		if len(cs) == 0 {
			param[v] = rr
			rr = (rr + 1) % int32(k)
			continue
		}
		best := cs[0]
		for _, j := range cs[1:] {
			if cost[j] < cost[best] || (cost[j] == cost[best] && j < best) {
				best = j
			}
		}
		param[v] = best
		cost[best] += int64(len(cs)) - 2
	}
	st := ParamStats{GreedyTMax: slices.Max(cost)}

	// Sweeps over the parameters whose placement matters (c_v ≥ 3).
	movable := order[:0]
	for _, v := range order {
		if coff[v+1]-coff[v] >= 3 {
			movable = append(movable, v)
		}
	}
	st.Sweeps, st.Moves, st.Converged = sweep(movable, func(v uint32) bool {
		cs := cand[coff[v]:coff[v+1]]
		o := param[v]
		size := int64(len(cs)) - 2
		best := int32(-1)
		for _, j := range cs {
			if j != o && (best < 0 || cost[j] < cost[best] || (cost[j] == cost[best] && j < best)) {
				best = j
			}
		}
		return moveIfLower(cost, param, v, o, best, size)
	})
	st.TMax = slices.Max(cost)
	return st
}

// moveIfLower moves parameter v of size size (its c_v − 2) from machine o
// to machine to when that lowers the larger of the two costs, cost[to] +
// size < cost[o], and reports whether it did: a move of the sweeps of
// Alg. 2.
func moveIfLower(cost []int64, param []int32, v uint32, o, to int32, size int64) bool {
	if cost[to]+size >= cost[o] {
		return false
	}
	cost[o] -= size
	cost[to] += size
	param[v] = to
	return true
}

// sweep visits the parameters of movable in order, calling move on each,
// until a sweep moves none (converged) or after MaxParamSweeps sweeps; move
// reports whether it moved v. It returns the sweeps run and the moves made.
func sweep(movable []uint32, move func(v uint32) bool) (sweeps int, moves int64, converged bool) {
	for sweeps < MaxParamSweeps {
		sweeps++
		moved := int64(0)
		for _, v := range movable {
			if move(v) {
				moved++
			}
		}
		moves += moved
		if moved == 0 {
			return sweeps, moves, true
		}
	}
	return sweeps, moves, false
}

// candidates returns, in CSR form, the machines C_v whose workers need each
// parameter v, in order of first use, and the costs |N(U_i)| = Σ_v [i ∈
// C_v]. It splits the parameters into ranges of about equal edge counts,
// one per goroutine.
func candidates(g *graph.Graph, data []int32, k, workers int) (coff []int64, cand []int32, cost []int64) {
	m := g.NumParams()
	off, adj := g.ParamOffsets(), g.ParamAdjacency()
	const minEdges = 1 << 18
	workers = max(1, min(workers, int(g.NumEdges()/minEdges)))
	bounds := make([]int, workers+1)
	for w := 1; w < workers; w++ {
		target := g.NumEdges() * int64(w) / int64(workers)
		i, _ := slices.BinarySearch(off, target)
		bounds[w] = min(max(i, bounds[w-1]), m)
	}
	bounds[workers] = m
	type part struct {
		cand []int32
		cost []int64
	}
	parts := make([]part, workers)
	coff = make([]int64, m+1)
	var wg sync.WaitGroup
	for w := range parts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lo, hi := bounds[w], bounds[w+1]
			pt := part{cand: make([]int32, 0, min(off[hi]-off[lo], int64(hi-lo)*int64(k))), cost: make([]int64, k)}
			stamp := make([]int, k)
			for i := range stamp {
				stamp[i] = -1
			}
			for v := lo; v < hi; v++ {
				for _, u := range adj[off[v]:off[v+1]] {
					j := data[u]
					if stamp[j] == v {
						continue
					}
					stamp[j] = v
					pt.cand = append(pt.cand, j)
					pt.cost[j]++
				}
				coff[v+1] = int64(len(pt.cand)) // local; shifted below
			}
			parts[w] = pt
		}()
	}
	wg.Wait()
	var total int64
	cost = make([]int64, k)
	for w, pt := range parts {
		for v := bounds[w]; v < bounds[w+1]; v++ {
			coff[v+1] += total
		}
		total += int64(len(pt.cand))
		for i, c := range pt.cost {
			cost[i] += c
		}
	}
	cand = make([]int32, 0, total)
	for _, pt := range parts {
		cand = append(cand, pt.cand...)
	}
	return coff, cand, cost
}
