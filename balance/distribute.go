package balance

import (
	"fmt"
	"math"
)

// DistributeConfig holds the parameters of Alg. 1.
type DistributeConfig struct {
	// SimilarityThreshold is similarity_threshold: Alg. 1 stops once
	// t_max − t_min < SimilarityThreshold, in the unit of t_i (the paper's
	// experience value is 1 s). It must be finite and > 0.
	SimilarityThreshold float64 `json:"similarity_threshold"`
	// MaxMoves bounds the number of moves (lines 11–22), a guard the paper
	// does not have: with a threshold below the rounding error of t_i the
	// loop would never end. It must be ≥ 1.
	MaxMoves int `json:"max_moves"`
}

// DefaultDistributeConfig returns the paper's threshold of 1 (second) and
// a bound of 10⁶ moves.
func DefaultDistributeConfig() DistributeConfig {
	return DistributeConfig{SimilarityThreshold: 1, MaxMoves: 1_000_000}
}

// Validate checks the ranges of the fields.
func (c DistributeConfig) Validate() error {
	if !(c.SimilarityThreshold > 0) || math.IsInf(c.SimilarityThreshold, 1) {
		return fmt.Errorf("SimilarityThreshold = %v: must be finite and > 0", c.SimilarityThreshold)
	}
	if c.MaxMoves < 1 {
		return fmt.Errorf("MaxMoves = %d: must be ≥ 1", c.MaxMoves)
	}
	return nil
}

// Distribute runs Alg. 1 of the paper, the load distribution by pairwise
// equalisation, and returns the shares m (Σ m_i = M up to rounding) and
// the number of moves it made.
//
// Every server starts with M/N. Each move takes the node with the largest
// t_i and the node with the smallest (the first such index on ties, as the
// strict comparisons of lines 4 and 7 pick) and moves load between them,
// keeping their sum (Eq. 13), until both have the same time (Eq. 12). It
// stops when t_max − t_min < SimilarityThreshold.
//
// Solving Eqs. 12 and 13 gives
//
//	m'_min = ((N−2)(m_max+m_min)·S_min − M·(S_max−S_min)) / ((N−2)(S_max+S_min)),
//
// which is what Distribute uses. The paper prints the denominator of
// Eq. 14 and line 12 as (N−2)(S_min−S_max): that does not satisfy Eq. 12
// and divides by zero when the two speeds are equal, so it is read as a
// sign slip.
//
// As written, Alg. 1 does not keep m_i ≥ 0: when a slow node's own worker
// part M/S_i exceeds what the others can reach, a move gives it a negative
// share (see Solve for the constrained optimum). Distribute returns such
// shares as they are.
//
// For N ≤ 2 no move can change any t_i (t_i = M/S_i for N = 2), and the
// update divides by N−2 = 0, so Distribute returns the even split with 0
// moves. For N ≥ 3 every S_i must be > 0. Each move costs O(N); the paper
// estimates Θ(N²) in all when the t_i start spread evenly.
func (p Model) Distribute(c DistributeConfig) (m []float64, moves int, err error) {
	if err := p.Validate(); err != nil {
		return nil, 0, err
	}
	if err := c.Validate(); err != nil {
		return nil, 0, err
	}
	n := p.N()
	m = make([]float64, n)
	for i := range m {
		m[i] = p.M / float64(n) // line 1
	}
	if n <= 2 {
		return m, 0, nil
	}
	for i, s := range p.S {
		if s == 0 {
			return nil, 0, fmt.Errorf("S[%d] = 0: Alg. 1 needs every node's aggregate speed > 0", i)
		}
	}
	extremes := func() (tMax, tMin float64, iMax, iMin int) { // lines 2–9, 14–22
		tMax, tMin = math.Inf(-1), math.Inf(1)
		for i := range m {
			t := p.Time(i, m[i])
			if tMax < t {
				tMax, iMax = t, i
			}
			if tMin > t {
				tMin, iMin = t, i
			}
		}
		return
	}
	tMax, tMin, iMax, iMin := extremes()
	for tMax-tMin >= c.SimilarityThreshold { // line 10
		if moves == c.MaxMoves {
			return m, moves, fmt.Errorf("MaxMoves = %d: t_max − t_min = %v is still ≥ SimilarityThreshold = %v", c.MaxMoves, tMax-tMin, c.SimilarityThreshold)
		}
		m[iMax], m[iMin] = equalise(p.M, n, p.S[iMax], p.S[iMin], m[iMax], m[iMin]) // lines 11–13
		moves++
		tMax, tMin, iMax, iMin = extremes()
	}
	return m, moves, nil
}

// equalise solves Eqs. 12 and 13: it moves load between the node of the
// largest time (speed sMax, share mMax) and the node of the smallest so
// that both take the same time and their sum is kept.
func equalise(M float64, n int, sMax, sMin, mMax, mMin float64) (newMax, newMin float64) {
	k := float64(n - 2)
	sum := mMax + mMin
	newMin = (k*sum*sMin - M*(sMax-sMin)) / (k * (sMax + sMin))
	return sum - newMin, newMin
}
