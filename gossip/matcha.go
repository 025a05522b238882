package gossip

import (
	"fmt"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/mat"
)

// Matching is a set of edges no two of which share a worker.
type Matching [][2]int

// Decompose splits the edges of t into matchings by greedy edge
// colouring: each edge, in the order of t.Edges, takes the smallest
// colour that neither end has yet. It uses at most 2Δ−1 matchings for a
// maximum degree Δ (2 for an even ring, Δ or Δ+1 on the regular graphs of
// New in practice). Cost O(edges·Δ).
func Decompose(t *Topology) []Matching {
	used := make([]map[int]bool, t.N)
	for i := range used {
		used[i] = map[int]bool{}
	}
	var out []Matching
	for _, e := range t.Edges() {
		c := 0
		for used[e[0]][c] || used[e[1]][c] {
			c++
		}
		used[e[0]][c], used[e[1]][c] = true, true
		for len(out) <= c {
			out = append(out, nil)
		}
		out[c] = append(out[c], e)
	}
	return out
}

// Matcha is MATCHA's plan (Wang et al. 2019): the base topology cut into
// matchings, matching j active in a round with probability P[j],
// independently, and the mixing weight Alpha: with L_k the Laplacian of
// the matchings active in round k, W_k = I − Alpha·L_k, so that worker i
// moves towards each active neighbour j by Alpha·(x_j − x_i). Each W_k is
// symmetric and doubly stochastic.
type Matcha struct {
	Matchings []Matching
	// P are the activation probabilities; ΣP ≤ Budget·len(Matchings).
	P []float64
	// Alpha is the mixing weight.
	Alpha float64
	// Budget is the communication budget c_b: the expected fraction of
	// the matchings active per round.
	Budget float64
	// Lambda2 is the algebraic connectivity of the expected Laplacian
	// Σ_j P_j L_j, which the probabilities maximise; Rho the spectral norm
	// of E[W_kᵀW_k] − J (J the averaging matrix), the per-round
	// contraction of the disagreement that Alpha minimises.
	Lambda2, Rho float64
}

// NewMatcha plans MATCHA on t with budget c_b in (0, 1]: it decomposes t
// into matchings (Decompose), chooses the probabilities that maximise the
// algebraic connectivity λ2(Σ_j p_j L_j) subject to Σ_j p_j ≤ c_b·M and
// 0 ≤ p_j ≤ 1 (M matchings; MATCHA's convex problem, solved here by
// projected supergradient ascent from the uniform p_j = c_b, keeping the
// best iterate), then the α that minimises ρ(α) = ‖E[(I−αL)²] − J‖₂ by
// golden-section search on [0, 1] (ρ is convex in α). With c_b = 1 every
// matching is always active. Cost O(iterations·N³) for N workers.
func NewMatcha(t *Topology, budget float64) (*Matcha, error) {
	if !(budget > 0 && budget <= 1) {
		return nil, fmt.Errorf("budget %v: want a communication budget in (0, 1]", budget)
	}
	if err := t.Validate(); err != nil {
		return nil, err
	}
	ms := Decompose(t)
	m := &Matcha{Matchings: ms, Budget: budget, P: make([]float64, len(ms))}
	if len(ms) == 0 {
		return m, nil
	}
	n := t.N
	laps := make([]*mat.SymDense, len(ms))
	for j, mt := range ms {
		laps[j] = laplacian(n, mt)
	}
	total := budget * float64(len(ms))
	p := make([]float64, len(ms))
	for j := range p {
		p[j] = budget
	}
	best, bestP := -1.0, append([]float64(nil), p...)
	if budget < 1 {
		for it := range 300 {
			l2, u := fiedler(n, laps, p)
			if l2 > best+1e-12 {
				best = l2
				copy(bestP, p)
			}
			step := 0.5 / math.Sqrt(float64(it+1))
			for j, mt := range ms {
				g := 0.0
				for _, e := range mt {
					d := u[e[0]] - u[e[1]]
					g += d * d
				}
				p[j] += step * g
			}
			projectCapped(p, total)
		}
	}
	copy(m.P, bestP)
	projectCapped(m.P, total) // exact feasibility after the copy
	m.Lambda2, _ = fiedler(n, laps, m.P)
	m.Alpha, m.Rho = bestAlpha(n, laps, m.P)
	return m, nil
}

// laplacian returns the Laplacian of a matching over n workers.
func laplacian(n int, mt Matching) *mat.SymDense {
	l := mat.NewSymDense(n, nil)
	for _, e := range mt {
		a, b := e[0], e[1]
		l.SetSym(a, a, l.At(a, a)+1)
		l.SetSym(b, b, l.At(b, b)+1)
		l.SetSym(a, b, l.At(a, b)-1)
	}
	return l
}

// expected returns Σ_j p_j L_j.
func expected(n int, laps []*mat.SymDense, p []float64) *mat.SymDense {
	s := mat.NewSymDense(n, nil)
	for j, l := range laps {
		s.AddSym(s, scaled(l, p[j]))
	}
	return s
}

func scaled(l *mat.SymDense, c float64) *mat.SymDense {
	var s mat.SymDense
	s.ScaleSym(c, l)
	return &s
}

// fiedler returns λ2 of Σ_j p_j L_j and its unit eigenvector.
func fiedler(n int, laps []*mat.SymDense, p []float64) (float64, []float64) {
	if n < 2 {
		return 0, make([]float64, n)
	}
	var es mat.EigenSym
	if !es.Factorize(expected(n, laps, p), true) {
		return 0, make([]float64, n)
	}
	vals := es.Values(nil) // ascending
	var vecs mat.Dense
	es.VectorsTo(&vecs)
	u := make([]float64, n)
	mat.Col(u, 1, &vecs)
	return vals[1], u
}

// projectCapped replaces p by its Euclidean projection on
// {0 ≤ p_j ≤ 1, Σ p_j = total} (total ≤ len(p)): p_j = clip(p_j − τ, 0, 1)
// with τ found by bisection.
func projectCapped(p []float64, total float64) {
	sum := func(tau float64) float64 {
		s := 0.0
		for _, v := range p {
			s += min(1, max(0, v-tau))
		}
		return s
	}
	lo, hi := -1.0, 1.0
	for _, v := range p {
		lo, hi = min(lo, v-1), max(hi, v)
	}
	for range 100 {
		mid := (lo + hi) / 2
		if sum(mid) > total {
			lo = mid
		} else {
			hi = mid
		}
	}
	for j, v := range p {
		p[j] = min(1, max(0, v-hi))
	}
}

// rho returns ‖E[(I−αL)²] − J‖₂ with L = Σ_j B_j L_j, B_j independent
// Bernoulli(p_j): E[L²] = L̄² + Σ_j p_j(1−p_j)·L_j², and L_j² = 2L_j for a
// matching.
func rho(n int, laps []*mat.SymDense, p []float64, alpha float64) float64 {
	lbar := expected(n, laps, p)
	var l2 mat.Dense
	l2.Mul(lbar, lbar)
	for j, l := range laps {
		var t mat.Dense
		t.Scale(2*p[j]*(1-p[j]), l)
		l2.Add(&l2, &t)
	}
	e := mat.NewSymDense(n, nil)
	for i := range n {
		for j := i; j < n; j++ {
			v := alpha*alpha*l2.At(i, j) - 2*alpha*lbar.At(i, j) - 1/float64(n)
			if i == j {
				v++
			}
			e.SetSym(i, j, v)
		}
	}
	var es mat.EigenSym
	if !es.Factorize(e, false) {
		return math.Inf(1)
	}
	r := 0.0
	for _, v := range es.Values(nil) {
		r = max(r, math.Abs(v))
	}
	return r
}

// bestAlpha minimises rho over α in [0, 1] by golden-section search.
func bestAlpha(n int, laps []*mat.SymDense, p []float64) (alpha, r float64) {
	g := (math.Sqrt(5) - 1) / 2
	a, b := 0.0, 1.0
	c, d := b-g*(b-a), a+g*(b-a)
	fc, fd := rho(n, laps, p, c), rho(n, laps, p, d)
	for range 60 {
		if fc <= fd {
			b, d, fd = d, c, fc
			c = b - g*(b-a)
			fc = rho(n, laps, p, c)
		} else {
			a, c, fc = c, d, fd
			d = a + g*(b-a)
			fd = rho(n, laps, p, d)
		}
	}
	alpha = (a + b) / 2
	return alpha, rho(n, laps, p, alpha)
}

// Active draws which matchings are active in communication round round:
// matching j with probability P[j], from a stream seeded by seed and the
// round alone, so that every worker draws the same set without talking.
// dst is reused when long enough.
func (m *Matcha) Active(dst []bool, seed uint64, round int) []bool {
	dst = append(dst[:0], make([]bool, len(m.P))...)
	rng := rand.New(rand.NewPCG(seed^0x3a7c4a, uint64(round)))
	for j, p := range m.P {
		dst[j] = rng.Float64() < p
	}
	return dst
}

// Weights returns the mixing matrix I − α·L of the active matchings.
func (m *Matcha) Weights(n int, active []bool) Weights {
	w := make(Weights, n)
	for i := range w {
		w[i] = make([]float64, n)
		w[i][i] = 1
	}
	for j, on := range active {
		if !on {
			continue
		}
		for _, e := range m.Matchings[j] {
			a, b := e[0], e[1]
			w[a][b] += m.Alpha
			w[b][a] += m.Alpha
			w[a][a] -= m.Alpha
			w[b][b] -= m.Alpha
		}
	}
	return w
}
