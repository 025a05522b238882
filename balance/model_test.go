package balance

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func near(a, b, tol float64) bool {
	return math.Abs(a-b) <= tol*max(1, math.Abs(a), math.Abs(b))
}

func TestAggregateByHand(t *testing.T) {
	// Row i is sender i: S_0 = 2+2, S_1 = 2+3, S_2 = 3+3; the diagonal
	// (here junk) is ignored.
	s := [][]float64{
		{99, 2, 2},
		{2, math.NaN(), 3},
		{3, 3, -1},
	}
	S, err := Aggregate(s)
	if err != nil {
		t.Fatal(err)
	}
	if want := []float64{4, 5, 6}; !slices.Equal(S, want) {
		t.Fatalf("S = %v, want %v", S, want)
	}
}

func TestLoadAndTimeByHand(t *testing.T) {
	p := Model{M: 10, S: []float64{2, 4, 5, 1}} // N = 4
	// Eq. 7: L_1 = 10 − 3 + 3·3 = 16; Eq. 9: t_1 = 16/4 = 4.
	if l := p.Load(1, 3); l != 16 {
		t.Errorf("L_1 = %v, want 16", l)
	}
	if tt := p.Time(1, 3); tt != 4 {
		t.Errorf("t_1 = %v, want 4", tt)
	}
	// m = (1, 3, 6, 0): t = (12/2, 16/4, 22/5, 10/1) = (6, 4, 4.4, 10).
	m := []float64{1, 3, 6, 0}
	if got, want := p.Times(m), []float64{6, 4, 4.4, 10}; !slices.Equal(got, want) {
		t.Errorf("Times = %v, want %v", got, want)
	}
	if r := p.RoundTime(m); r != 10 {
		t.Errorf("RoundTime = %v, want 10", r)
	}
	// N = 1: the node sends nothing.
	if tt := (Model{M: 7, S: []float64{0}}).Time(0, 7); tt != 0 {
		t.Errorf("N = 1: t_0 = %v, want 0", tt)
	}
	// A node with no bandwidth never finishes.
	if tt := (Model{M: 7, S: []float64{0, 1, 1}}).Time(0, 0); !math.IsInf(tt, 1) {
		t.Errorf("S_0 = 0: t_0 = %v, want +Inf", tt)
	}
}

// TestFig3ByHand replays the three-node example of Fig. 3. The figure's
// numbers are not in the text, so the example is built from what the text
// says about it: V = {1, 2, 3} (here 0, 1, 2), N = 3 so each line l_i is
// t = (M + m)/S_i (Eq. 11), the points start on l_v: m = M/N, and the
// optimum puts all three on one horizontal line l_h.
//
// With M = 6 and S = (4, 5, 6) the lines are t = (6+m)/4, (6+m)/5,
// (6+m)/6. On l_v (m = 2) the times are 8/4 = 2, 8/5 = 1.6, 8/6 = 4/3.
// Alg. 1 moves the highest point (node 0) and the lowest (node 2):
// m'_2 = (1·4·6 − 6·(4−6))/(1·(4+6)) = 36/10 = 3.6, m'_0 = 4 − 3.6 = 0.4,
// so t_0 = 6.4/4 = 1.6 and t_2 = 9.6/6 = 1.6, and node 1 is already at
// 1.6: one move reaches l_h at t = 1.6. Water filling agrees: with all
// three active, T = M(N−2+3)/ΣS = 6·4/15 = 1.6 and m_i = 1.6·S_i − 6 =
// (0.4, 2, 3.6).
func TestFig3ByHand(t *testing.T) {
	p := Model{M: 6, S: []float64{4, 5, 6}}
	start := []float64{2, 2, 2}
	if got, want := p.Times(start), []float64{2, 1.6, 4.0 / 3}; !slicesNear(got, want, 1e-15) {
		t.Fatalf("times on l_v = %v, want %v", got, want)
	}
	m, moves, err := p.Distribute(DistributeConfig{SimilarityThreshold: 1e-9, MaxMoves: 100})
	if err != nil {
		t.Fatal(err)
	}
	want := []float64{0.4, 2, 3.6}
	if moves != 1 || !slicesNear(m, want, 1e-12) {
		t.Fatalf("Alg. 1: m = %v after %d moves, want %v after 1", m, moves, want)
	}
	for i, ti := range p.Times(m) {
		if !near(ti, 1.6, 1e-12) {
			t.Errorf("Alg. 1: t_%d = %v, want 1.6 (l_h)", i, ti)
		}
	}
	opt, err := p.Solve()
	if err != nil {
		t.Fatal(err)
	}
	if !slicesNear(opt, want, 1e-12) || !near(p.RoundTime(opt), 1.6, 1e-12) {
		t.Fatalf("Solve: m = %v, round %v; want %v, 1.6", opt, p.RoundTime(opt), want)
	}
}

// TestSolveTooSlowByHand: M = 6, S = (1, 4, 5). All three active would
// need T = 6·4/10 = 2.4, at which node 0 takes (2.4·1 − 6) < 0; with the
// two fast ones, T = 6·3/9 = 2 and m = (0, 2·4−6, 2·5−6) = (0, 2, 4).
// Node 0 helps nothing (its own worker part alone takes 6/1 = 6 > 2) and
// sets the round time: 6.
func TestSolveTooSlowByHand(t *testing.T) {
	p := Model{M: 6, S: []float64{1, 4, 5}}
	m, err := p.Solve()
	if err != nil {
		t.Fatal(err)
	}
	if want := []float64{0, 2, 4}; !slicesNear(m, want, 1e-12) {
		t.Fatalf("m = %v, want %v", m, want)
	}
	if got := p.Times(m); !slicesNear(got, []float64{6, 2, 2}, 1e-12) {
		t.Fatalf("times = %v, want (6, 2, 2)", got)
	}
}

func TestSolveSmallN(t *testing.T) {
	m, err := Model{M: 5, S: []float64{0}}.Solve()
	if err != nil || !slices.Equal(m, []float64{5}) {
		t.Errorf("N = 1: %v, %v; want (5)", m, err)
	}
	// N = 2: t_i = M/S_i for every split.
	p := Model{M: 6, S: []float64{1, 3}}
	m, err = p.Solve()
	if err != nil || !slices.Equal(m, []float64{3, 3}) {
		t.Errorf("N = 2: %v, %v; want (3, 3)", m, err)
	}
	for _, a := range []float64{0, 1.5, 6} {
		if got := p.Times([]float64{a, 6 - a}); !slices.Equal(got, []float64{6, 2}) {
			t.Errorf("N = 2, m_0 = %v: times %v, want (6, 2) whatever the split", a, got)
		}
	}
	// A dead node gets nothing; the round never ends.
	p = Model{M: 6, S: []float64{0, 4, 5}}
	m, err = p.Solve()
	if err != nil || m[0] != 0 || !near(m[1]+m[2], 6, 1e-12) || !math.IsInf(p.RoundTime(m), 1) {
		t.Errorf("S_0 = 0: %v, %v", m, err)
	}
	if _, err := (Model{M: 6, S: []float64{0, 0, 0}}).Solve(); err == nil || !strings.HasPrefix(err.Error(), "S:") {
		t.Errorf("all S = 0: err = %v", err)
	}
}

// bySubsets is the exact reference: for every nonempty set A of active
// servers, all of A finishing at one time T with Σ_A m_i = M gives
// T = M(N−2+|A|)/Σ_A S_i and m_i = (T·S_i − M)/(N−2); among the sets whose
// shares are all ≥ 0, the least round time is the optimum (the optimum's
// own active set is one of them). O(2^N · N).
func bySubsets(p Model) float64 {
	n := p.N()
	best := math.Inf(1)
	m := make([]float64, n)
	for set := 1; set < 1<<n; set++ {
		k, sum := 0, 0.0
		for i := range n {
			if set>>i&1 == 1 {
				k++
				sum += p.S[i]
			}
		}
		T := p.M * float64(n-2+k) / sum
		ok := true
		for i := range n {
			m[i] = 0
			if set>>i&1 == 1 {
				m[i] = (T*p.S[i] - p.M) / float64(n-2)
				ok = ok && m[i] >= 0
			}
		}
		if ok {
			best = min(best, p.RoundTime(m))
		}
	}
	return best
}

// byGrid evaluates every share vector on a grid of step M/steps and
// calls visit with its sorted (descending) times.
func byGrid(p Model, steps int, visit func(m, sortedTimes []float64)) {
	n := p.N()
	m := make([]float64, n)
	units := make([]int, n)
	var rec func(i, left int)
	rec = func(i, left int) {
		if i == n-1 {
			units[i] = left
			for j, u := range units {
				m[j] = p.M * float64(u) / float64(steps)
			}
			ts := p.Times(m)
			slices.SortFunc(ts, func(a, b float64) int { return -cmpF(a, b) })
			visit(m, ts)
			return
		}
		for u := 0; u <= left; u++ {
			units[i] = u
			rec(i+1, left-u)
		}
	}
	rec(0, steps)
}

func cmpF(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func randomModel(r *rand.Rand, n int) Model {
	p := Model{M: 0.5 + 10*r.Float64(), S: make([]float64, n)}
	for i := range p.S {
		// Speeds over two orders of magnitude, so some servers cannot help.
		p.S[i] = math.Pow(10, 2*r.Float64())
	}
	return p
}

func TestSolveAgainstBruteForce(t *testing.T) {
	r := rand.New(rand.NewPCG(2, 3))
	idle := 0
	for trial := range 300 {
		n := 3 + trial%2
		steps := 60
		if n == 4 {
			steps = 24
		}
		p := randomModel(r, n)
		if trial%5 == 0 { // exact ties in speed
			p.S[1] = p.S[0]
		}
		m, err := p.Solve()
		if err != nil {
			t.Fatal(err)
		}
		sum := 0.0
		for i, v := range m {
			if v < 0 {
				t.Fatalf("%v: m[%d] = %v < 0", p, i, v)
			}
			sum += v
		}
		if !near(sum, p.M, 1e-12) {
			t.Fatalf("%v: Σm = %v, want %v", p, sum, p.M)
		}
		got := p.RoundTime(m)
		if ref := bySubsets(p); !near(got, ref, 1e-9) {
			t.Fatalf("%v: round time %v, subsets give %v", p, got, ref)
		}

		// Loaded servers finish together; unloaded ones could not help.
		ts := p.Times(m)
		level := math.Inf(-1)
		for i, v := range m {
			if v > 0 {
				level = max(level, ts[i])
			}
		}
		for i, v := range m {
			if v > 0 && !near(ts[i], level, 1e-9) {
				t.Fatalf("%v: loaded server %d at %v, level %v", p, i, ts[i], level)
			}
			if v == 0 {
				idle++
				if p.M/p.S[i] < level*(1-1e-9) {
					t.Fatalf("%v: server %d idle though M/S = %v < level %v", p, i, p.M/p.S[i], level)
				}
			}
		}

		// No grid point is better, in the maximum or in the sorted times
		// (the water-filling point is lexicographically smallest).
		mine := slices.Clone(ts)
		slices.SortFunc(mine, func(a, b float64) int { return -cmpF(a, b) })
		byGrid(p, steps, func(g, gt []float64) {
			if gt[0] < got*(1-1e-12) {
				t.Fatalf("%v: grid point %v has round time %v < %v", p, g, gt[0], got)
			}
			for k := range gt {
				if mine[k] < gt[k]*(1-1e-9) {
					return
				}
				if mine[k] > gt[k]*(1+1e-9) {
					t.Fatalf("%v: grid point %v has sorted times %v, lexicographically below %v", p, g, gt, mine)
				}
			}
		})
	}
	if idle == 0 {
		t.Fatal("no instance had an idle server: the test is too easy")
	}
}

func slicesNear(a, b []float64, tol float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !near(a[i], b[i], tol) {
			return false
		}
	}
	return true
}
