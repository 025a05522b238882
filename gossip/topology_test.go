package gossip

import (
	"math"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"
)

func TestTopologyByHand(t *testing.T) {
	for _, tc := range []struct {
		name string
		n    int
		node int
		want []int
	}{
		{"ring", 5, 0, []int{1, 4}},
		{"ring", 2, 0, []int{1}},
		{"ring", 1, 0, nil},
		{"torus", 9, 4, []int{1, 3, 5, 7}}, // 3×3: the centre
		{"torus", 9, 0, []int{1, 2, 3, 6}}, // wrap-around
		{"torus", 8, 0, []int{1, 3, 4}},    // 2×4: up and down are one node
		{"exponential", 8, 0, []int{1, 2, 4, 6, 7}},
		{"exponential", 5, 0, []int{1, 2, 3, 4}},
		{"complete", 4, 2, []int{0, 1, 3}},
	} {
		top, err := New(tc.name, tc.n)
		if err != nil {
			t.Fatalf("%s %d: %v", tc.name, tc.n, err)
		}
		if got := top.Adj[tc.node]; !slices.Equal(got, tc.want) {
			t.Errorf("%s %d: neighbours of %d = %v, want %v", tc.name, tc.n, tc.node, got, tc.want)
		}
	}
}

func TestTopologyErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		n    int
		want string
	}{
		{"torus", 7, "factorisation"},
		{"star", 4, "want one of ring, torus"},
		{"ring", 0, "at least 1"},
	} {
		_, err := New(tc.name, tc.n)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(%s, %d) = %v, want an error containing %q", tc.name, tc.n, err, tc.want)
		}
	}
	disc := &Topology{Name: "two pairs", N: 4, Adj: [][]int{{1}, {0}, {3}, {2}}}
	if err := disc.Validate(); err == nil || !strings.Contains(err.Error(), "not connected") {
		t.Errorf("a disconnected topology validates: %v", err)
	}
}

// secondEigen returns the second largest eigenvalue modulus of a
// symmetric w.
func secondEigen(t *testing.T, w Weights) float64 {
	n := len(w)
	s := mat.NewSymDense(n, nil)
	for i := range n {
		for j := i; j < n; j++ {
			s.SetSym(i, j, w[i][j])
		}
	}
	var es mat.EigenSym
	if !es.Factorize(s, false) {
		t.Fatal("eigendecomposition failed")
	}
	vals := es.Values(nil)
	mods := make([]float64, n)
	for i, v := range vals {
		mods[i] = math.Abs(v)
	}
	slices.Sort(mods)
	if n < 2 {
		return 0
	}
	return mods[n-2]
}

// TestMetropolisHastingsDoublyStochastic checks every topology at several
// sizes: W symmetric, non-negative, rows and columns summing to 1, support
// equal to the graph, and a second eigenvalue modulus below 1.
func TestMetropolisHastingsDoublyStochastic(t *testing.T) {
	for _, name := range Topologies() {
		for _, n := range []int{1, 2, 3, 4, 6, 8, 9, 12, 16} {
			top, err := New(name, n)
			if err != nil {
				if name == "torus" && (n == 2 || n == 3) {
					continue // primes have no torus
				}
				t.Fatalf("%s %d: %v", name, n, err)
			}
			if err := top.Validate(); err != nil {
				t.Fatalf("%s %d: %v", name, n, err)
			}
			w := MetropolisHastings(top)
			if err := w.Check(); err != nil {
				t.Errorf("%s %d: %v", name, n, err)
			}
			for i := range n {
				for j := range n {
					if w[i][j] != w[j][i] {
						t.Errorf("%s %d: W[%d][%d] = %v, W[%d][%d] = %v", name, n, i, j, w[i][j], j, i, w[j][i])
					}
					if i != j && (w[i][j] != 0) != slices.Contains(top.Adj[i], j) {
						t.Errorf("%s %d: W[%d][%d] = %v does not match the edge", name, n, i, j, w[i][j])
					}
				}
			}
			if n > 1 {
				if l := secondEigen(t, w); !(l < 1-1e-9) {
					t.Errorf("%s %d: second eigenvalue modulus %v, want < 1", name, n, l)
				}
			}
		}
	}
}

func TestDecompose(t *testing.T) {
	for _, name := range Topologies() {
		for _, n := range []int{4, 6, 8, 9, 16} {
			top, err := New(name, n)
			if err != nil {
				t.Fatal(err)
			}
			ms := Decompose(top)
			var all [][2]int
			for j, m := range ms {
				seen := map[int]bool{}
				for _, e := range m {
					if seen[e[0]] || seen[e[1]] {
						t.Errorf("%s %d: matching %d shares a worker: %v", name, n, j, m)
					}
					seen[e[0]], seen[e[1]] = true, true
				}
				all = append(all, m...)
			}
			slices.SortFunc(all, func(a, b [2]int) int {
				if a[0] != b[0] {
					return a[0] - b[0]
				}
				return a[1] - b[1]
			})
			if !slices.Equal(all, top.Edges()) {
				t.Errorf("%s %d: the matchings' edges %v are not the graph's %v", name, n, all, top.Edges())
			}
			maxDeg := 0
			for i := range n {
				maxDeg = max(maxDeg, top.Degree(i))
			}
			if len(ms) > 2*maxDeg-1 {
				t.Errorf("%s %d: %d matchings for degree %d", name, n, len(ms), maxDeg)
			}
		}
	}
	ring, _ := New("ring", 8)
	if got := len(Decompose(ring)); got != 2 {
		t.Errorf("an even ring in %d matchings, want 2", got)
	}
}

// TestMatchaBudget: the probabilities lie in [0, 1] and their sum within
// the budget, a budget of 1 activates everything, the optimised
// connectivity is at least the uniform one's, and the draws follow P.
func TestMatchaBudget(t *testing.T) {
	for _, name := range Topologies() {
		for _, n := range []int{4, 8, 9} {
			top, err := New(name, n)
			if err != nil {
				t.Fatal(err)
			}
			for _, cb := range []float64{0.1, 0.3, 0.5, 0.9, 1} {
				m, err := NewMatcha(top, cb)
				if err != nil {
					t.Fatal(err)
				}
				M := len(m.Matchings)
				sum := 0.0
				for j, p := range m.P {
					if p < 0 || p > 1 {
						t.Errorf("%s %d c_b %v: p[%d] = %v outside [0, 1]", name, n, cb, j, p)
					}
					if cb == 1 && p != 1 {
						t.Errorf("%s %d: budget 1 but p[%d] = %v", name, n, j, p)
					}
					sum += p
				}
				if sum > cb*float64(M)+1e-9 {
					t.Errorf("%s %d c_b %v: Σp = %v over the budget %v", name, n, cb, sum, cb*float64(M))
				}
				uniform := make([]float64, M)
				for j := range uniform {
					uniform[j] = cb
				}
				laps := make([]*mat.SymDense, M)
				for j, mt := range m.Matchings {
					laps[j] = laplacian(n, mt)
				}
				l2u, _ := fiedler(n, laps, uniform)
				if m.Lambda2 < l2u-1e-9 {
					t.Errorf("%s %d c_b %v: λ2 %v below the uniform probabilities' %v", name, n, cb, m.Lambda2, l2u)
				}
				if !(m.Lambda2 > 0) || !(m.Rho < 1) || !(m.Alpha > 0) {
					t.Errorf("%s %d c_b %v: λ2 %v, ρ %v, α %v: want λ2 > 0, ρ < 1, α > 0", name, n, cb, m.Lambda2, m.Rho, m.Alpha)
				}
				// Each round's W is doubly stochastic, and draws follow P.
				counts := make([]int, M)
				const rounds = 2000
				var act []bool
				for r := range rounds {
					act = m.Active(act, 7, r)
					w := m.Weights(n, act)
					for i := range n {
						rs, cs := 0.0, 0.0
						for j := range n {
							rs += w[i][j]
							cs += w[j][i]
						}
						if math.Abs(rs-1) > 1e-12 || math.Abs(cs-1) > 1e-12 {
							t.Fatalf("%s %d round %d: row/column %d sums to %v/%v", name, n, r, i, rs, cs)
						}
					}
					for j, a := range act {
						if a {
							counts[j]++
						}
					}
				}
				for j, c := range counts {
					if f := float64(c) / rounds; math.Abs(f-m.P[j]) > 0.05 {
						t.Errorf("%s %d c_b %v: matching %d active %.3f of the rounds, p = %.3f", name, n, cb, j, f, m.P[j])
					}
				}
			}
		}
	}
	ring, _ := New("ring", 4)
	for _, cb := range []float64{0, -0.5, 1.5, math.NaN()} {
		if _, err := NewMatcha(ring, cb); err == nil || !strings.Contains(err.Error(), "budget") {
			t.Errorf("budget %v: %v, want an error naming the budget", cb, err)
		}
	}
}
