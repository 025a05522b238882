package balance

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
)

// Aggregate returns every node's aggregate speed S_i = Σ_{j≠i} s[i][j]
// (Eq. 8). Row i of s holds the speeds of the links out of node i: s[i][j]
// is the throughput from node i (sender) to node j (receiver), as the
// receiver measures it with Eq. 6. The diagonal is ignored, since a node
// sends nothing to itself, and may hold anything. Off-diagonal entries
// must be finite and ≥ 0 (0 is a cut link). It runs in O(N²).
func Aggregate(s [][]float64) ([]float64, error) {
	n := len(s)
	if n == 0 {
		return nil, errors.New("s: no nodes")
	}
	S := make([]float64, n)
	for i, row := range s {
		if len(row) != n {
			return nil, fmt.Errorf("s: row %d has %d entries, want %d (an N×N matrix)", i, len(row), n)
		}
		for j, v := range row {
			if j == i {
				continue
			}
			if !(v >= 0) || math.IsInf(v, 1) {
				return nil, fmt.Errorf("s[%d][%d] = %v: a link speed must be finite and ≥ 0", i, j, v)
			}
			S[i] += v
		}
	}
	return S, nil
}

// Model is an instance of the load distribution problem of §3.3 (Eq. 10):
// N = len(S) co-located nodes, each a server and a worker, and a model of
// M parameters (or bytes) of which server i holds m_i, Σ m_i = M.
type Model struct {
	// M is the local data size of each node, in parameters or bytes.
	M float64
	// S[i] is node i's aggregate speed (Eq. 8, see Aggregate), in units of
	// M per unit of time.
	S []float64
}

// N returns the number of nodes.
func (p Model) N() int { return len(p.S) }

// Validate checks that M is finite and > 0 and every S_i finite and ≥ 0.
func (p Model) Validate() error {
	if !(p.M > 0) || math.IsInf(p.M, 1) {
		return fmt.Errorf("M = %v: the data size must be finite and > 0", p.M)
	}
	if len(p.S) == 0 {
		return errors.New("S: no nodes")
	}
	for i, v := range p.S {
		if !(v >= 0) || math.IsInf(v, 1) {
			return fmt.Errorf("S[%d] = %v: an aggregate speed must be finite and ≥ 0", i, v)
		}
	}
	return nil
}

// Load returns node i's communication load L_i = M − m_i + (N−1)·m_i
// (Eq. 7) when its server holds mi: the worker sends the M − m_i it does
// not hold itself, and the server serves m_i to each of the N−1 others.
func (p Model) Load(i int, mi float64) float64 {
	_ = p.S[i]
	return p.M - mi + float64(p.N()-1)*mi
}

// Time returns t_i = L_i/S_i = (M + (N−2)·m_i)/S_i (Eq. 9) when server i
// holds mi. A node with nothing to send takes 0 (N = 1); a node that must
// send over no bandwidth (S_i = 0) takes +Inf.
func (p Model) Time(i int, mi float64) float64 {
	l := p.Load(i, mi)
	if l == 0 {
		return 0
	}
	return l / p.S[i]
}

// Times returns t_i for every node under the shares m (Eq. 9).
func (p Model) Times(m []float64) []float64 {
	return p.TimesTo(make([]float64, len(m)), m)
}

// TimesTo writes t_i for every node under the shares m into dst and
// returns it. dst and m must both have length N.
func (p Model) TimesTo(dst, m []float64) []float64 {
	if len(m) != p.N() || len(dst) != p.N() {
		panic(fmt.Sprintf("balance: TimesTo with %d shares and %d destinations for %d nodes", len(m), len(dst), p.N()))
	}
	for i, mi := range m {
		dst[i] = p.Time(i, mi)
	}
	return dst
}

// RoundTime returns max_i t_i, the transmission time of a round under the
// shares m: the objective of Eq. 10.
func (p Model) RoundTime(m []float64) float64 {
	if len(m) != p.N() {
		panic(fmt.Sprintf("balance: RoundTime with %d shares for %d nodes", len(m), p.N()))
	}
	t := math.Inf(-1)
	for i, mi := range m {
		t = max(t, p.Time(i, mi))
	}
	return t
}

// Solve returns the exact solution of Eq. 10 with m_i ≥ 0: the shares m,
// Σ m_i = M, that minimise max_i t_i.
//
// For N ≥ 3, t_i grows linearly in m_i from M/S_i (Eq. 11), so for a
// common time T server i can take up to m_i(T) = max(0, (T·S_i − M)/(N−2)).
// The least T with Σ m_i(T) = M is the water level: with the k fastest
// servers active, T_k = M·(N−2+k)/Σ_{top k} S_i, and the level is
// min_k T_k. Every loaded server finishes exactly at the level; a server
// with M/S_i ≥ level is too slow to help and gets 0. Its own worker part
// still takes M/S_i, so the round time is max(level, M/min_i S_i); when
// the slowest node's M/S_i dominates, every m below the caps is optimal
// and Solve returns the water-filling one, whose sorted times are
// lexicographically smallest. A node with S_i = 0 gets 0 and makes the
// round time +Inf.
//
// For N = 2, t_i = M/S_i whatever the split (each node sends M), so every
// split is optimal and Solve returns the even one, M/2 each, which is
// where Alg. 1 starts and stays. For N = 1, m = (M).
//
// It runs in O(N log N) and returns an error naming the field if p is
// invalid or every S_i is 0 (N ≥ 2).
func (p Model) Solve() ([]float64, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	n := p.N()
	m := make([]float64, n)
	switch n {
	case 1:
		m[0] = p.M
		return m, nil
	case 2:
		m[0], m[1] = p.M/2, p.M/2
		return m, nil
	}
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(p.S[b], p.S[a]) })
	if p.S[order[0]] == 0 {
		return nil, errors.New("S: every node's aggregate speed is 0")
	}
	level, active := math.Inf(1), 0
	sum := 0.0
	for k, i := range order {
		sum += p.S[i]
		if t := p.M * float64(n-2+k+1) / sum; t < level {
			level, active = t, k+1
		}
	}
	total := 0.0
	for _, i := range order[:active] {
		m[i] = max(0, (level*p.S[i]-p.M)/float64(n-2))
		total += m[i]
	}
	// Give the rounding residue to the fastest server.
	m[order[0]] += p.M - total
	return m, nil
}
