package partition

import (
	"runtime"
	"slices"

	"colo/graph"
	"colo/placement"
)

// DuplexStats reports a run of BalanceDirections.
type DuplexStats struct {
	// Before and After are the largest round bound R_i (see
	// placement.Cost.Round) before and after the sweeps.
	Before int64 `json:"before"`
	After  int64 `json:"after"`
	// Sweeps is the number of sweeps run, Moves the parameters they moved.
	Sweeps    int   `json:"sweeps"`
	Moves     int64 `json:"moves"`
	Converged bool  `json:"converged"`
}

// BalanceDirections moves parameters between servers, given the data
// partition p.Data and a parameter assignment p.Param (changed in place),
// to lower the largest round bound R_i = W_i + max(S_i, W_i) of
// placement.Cost: the time a round of synchronous training keeps machine
// i's link busy when its two directions carry traffic at once.
//
// Alg. 2 balances T_i = S_i + W_i, the bytes a machine's link carries each
// way per round. Under BSP a worker's pulled values (W_i, arriving) must
// all be in before its gradient (W_i, leaving) can go, so a machine that
// pulls much more than it serves (W_i > S_i) is busy 2·W_i per round,
// longer than T_i. Moving a parameter v to a machine j whose worker uses
// it takes one pull off W_j and adds c_v − 1 answers to S_j; moving it off
// machine o does the reverse. Sweeps visit the parameters in the order of
// AssignParams (those that can move: used by two machines or more, or
// held by a machine that does not use them) and make the move of v to the
// machine of C_v that lowers the larger of the two machines' bounds the
// most, if it lowers it at all; every move lowers the sorted vector of
// bounds, so the sweeps end by themselves (MaxParamSweeps caps them).
func BalanceDirections(g *graph.Graph, p *placement.Placement, seed uint64) DuplexStats {
	return balanceDirections(g, p, seed, runtime.GOMAXPROCS(0))
}

func balanceDirections(g *graph.Graph, p *placement.Placement, seed uint64, workers int) DuplexStats {
	k := p.K
	m := g.NumParams()
	coff, cand, need := candidates(g, p.Data, k, workers)
	param := p.Param
	// W_i = |N(U_i)| − |N(U_i) ∩ V_i|, S_i = Σ_{v ∈ V_i} |C_v \ {i}|.
	w := slices.Clone(need)
	s := make([]int64, k)
	in := func(cs []int32, i int32) bool { return slices.Contains(cs, i) }
	for v := 0; v < m; v++ {
		cs := cand[coff[v]:coff[v+1]]
		h := param[v]
		if in(cs, h) {
			w[h]--
			s[h] += int64(len(cs)) - 1
		} else {
			s[h] += int64(len(cs))
		}
	}
	bound := func(i int32) int64 { return w[i] + max(s[i], w[i]) }
	maxBound := func() int64 {
		b := int64(0)
		for i := range int32(k) {
			b = max(b, bound(i))
		}
		return b
	}
	st := DuplexStats{Before: maxBound()}

	order := ParamOrder(m, func(v int) int { return int(coff[v+1] - coff[v]) }, seed)
	// A parameter used by one machine can only gain from moving when it
	// sits elsewhere (a parameter assignment other than Alg. 2's).
	movable := order[:0]
	for _, v := range order {
		if c := coff[v+1] - coff[v]; c >= 2 || (c == 1 && cand[coff[v]] != param[v]) {
			movable = append(movable, v)
		}
	}
	st.Sweeps, st.Moves, st.Converged = sweep(movable, func(v uint32) bool {
		cs := cand[coff[v]:coff[v+1]]
		o := param[v]
		c := int64(len(cs))
		// o after v leaves it.
		so, wo := s[o]-c, w[o]
		if in(cs, o) {
			so, wo = s[o]-(c-1), w[o]+1
		}
		bo := wo + max(so, wo)
		old := bound(o)
		best, bestMax, bestJ := int32(-1), int64(0), int64(0)
		for _, j := range cs {
			if j == o {
				continue
			}
			sj, wj := s[j]+c-1, w[j]-1
			bj := wj + max(sj, wj)
			mx := max(bo, bj)
			if mx >= max(old, bound(j)) {
				continue
			}
			if best < 0 || mx < bestMax || (mx == bestMax && bj < bestJ) {
				best, bestMax, bestJ = j, mx, bj
			}
		}
		if best < 0 {
			return false
		}
		s[o], w[o] = so, wo
		s[best] += c - 1
		w[best]--
		param[v] = best
		return true
	})
	st.After = maxBound()
	return st
}
