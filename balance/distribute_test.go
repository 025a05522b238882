package balance

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// TestEqualiseSolvesEqs12And13: the move of line 12 keeps the pair's sum
// (Eq. 13) and gives both the same time (Eq. 12). The denominator printed
// in Eq. 14, (N−2)(S_min − S_max), does neither in general; the
// derivation gives (N−2)(S_max + S_min).
func TestEqualiseSolvesEqs12And13(t *testing.T) {
	r := rand.New(rand.NewPCG(12, 13))
	for range 1000 {
		n := 3 + r.IntN(10)
		M := 1 + 100*r.Float64()
		sMax, sMin := 0.1+10*r.Float64(), 0.1+10*r.Float64()
		mMax, mMin := M*r.Float64(), M*r.Float64()
		a, b := equalise(M, n, sMax, sMin, mMax, mMin)
		p := Model{M: M, S: make([]float64, n)}
		p.S[0], p.S[1] = sMax, sMin
		if !near(a+b, mMax+mMin, 1e-12) {
			t.Fatalf("Eq. 13: %v + %v ≠ %v + %v", a, b, mMax, mMin)
		}
		if ta, tb := p.Time(0, a), p.Time(1, b); !near(ta, tb, 1e-9) {
			t.Fatalf("Eq. 12: t = %v and %v after the move", ta, tb)
		}
	}
	// The printed form on Fig. 3's first move (M = 6, N = 3, S_max = 4,
	// S_min = 6, m = 2 and 2): (1·4·6 − 6·(4−6))/(1·(6−4)) = 18, leaving
	// m_max = −14 and times (6−14)/4 = −2 and (6+18)/6 = 4.
	printed := (1*4*6 - 6*(4-6)) / (1 * (6 - 4.0))
	if printed != 18 {
		t.Fatalf("printed Eq. 14 = %v", printed)
	}
	if _, b := equalise(6, 3, 4, 6, 2, 2); b != 3.6 {
		t.Fatalf("derived Eq. 14 = %v, want 3.6", b)
	}
}

// TestDistributeNegativeShareByHand: M = 6, S = (1, 4, 5). On l_v (m = 2)
// the times are 8, 2, 1.6. The first move pairs node 0 and node 2:
// m'_2 = (1·4·5 − 6·(1−5))/(1·(1+5)) = 44/6 = 22/3 and m'_0 = 4 − 22/3 =
// −10/3, both at 8/3. Alg. 1 has no m_i ≥ 0 and ends near the
// unconstrained common time T = 6·(1+3)/10 = 2.4 with m ≈ (−3.6, 3.6, 6);
// the feasible optimum (Solve) is (0, 2, 4) at round time 6.
func TestDistributeNegativeShareByHand(t *testing.T) {
	p := Model{M: 6, S: []float64{1, 4, 5}}
	m, moves, err := p.Distribute(DistributeConfig{SimilarityThreshold: 1e-9, MaxMoves: 1})
	if err == nil || !strings.HasPrefix(err.Error(), "MaxMoves") {
		t.Fatalf("one move allowed: err = %v", err)
	}
	if want := []float64{-10.0 / 3, 2, 22.0 / 3}; moves != 1 || !slicesNear(m, want, 1e-12) {
		t.Fatalf("after one move m = %v (%d moves), want %v", m, moves, want)
	}
	if got := p.Times(m); !slicesNear(got, []float64{8.0 / 3, 2, 8.0 / 3}, 1e-12) {
		t.Fatalf("after one move times = %v, want (8/3, 2, 8/3)", got)
	}
	m, _, err = p.Distribute(DistributeConfig{SimilarityThreshold: 1e-9, MaxMoves: 10000})
	if err != nil {
		t.Fatal(err)
	}
	if !slicesNear(m, []float64{-3.6, 3.6, 6}, 1e-6) {
		t.Fatalf("Alg. 1 ends at %v, want about (−3.6, 3.6, 6)", m)
	}
}

func TestDistributeSmallN(t *testing.T) {
	for _, p := range []Model{{M: 4, S: []float64{0}}, {M: 4, S: []float64{1, 9}}} {
		m, moves, err := p.Distribute(DistributeConfig{SimilarityThreshold: 1e-9, MaxMoves: 1})
		want := slices.Repeat([]float64{4 / float64(p.N())}, p.N())
		if err != nil || moves != 0 || !slices.Equal(m, want) {
			t.Errorf("N = %d: %v, %d moves, %v; want %v, 0 moves", p.N(), m, moves, err, want)
		}
	}
	// A threshold above the spread stops before any move (line 10).
	p := Model{M: 6, S: []float64{4, 5, 6}}
	m, moves, err := p.Distribute(DistributeConfig{SimilarityThreshold: 0.7, MaxMoves: 1})
	if err != nil || moves != 0 || !slices.Equal(m, []float64{2, 2, 2}) {
		t.Errorf("threshold 0.7 > 2 − 4/3: %v, %d moves, %v", m, moves, err)
	}
}

// TestSolveNeverWorseThanDistribute runs Alg. 1 on random instances; where
// its shares are feasible (all ≥ 0) the exact solver's round time is no
// larger, and Alg. 1 stops with its times within the threshold.
func TestSolveNeverWorseThanDistribute(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 5))
	feasible, strictlyBetter := 0, 0
	for range 2000 {
		n := 3 + r.IntN(10)
		p := Model{M: 1 + 1000*r.Float64(), S: make([]float64, n)}
		for i := range p.S {
			p.S[i] = 1 + 2*r.Float64() // within 3×, so Alg. 1 mostly stays ≥ 0
		}
		threshold := p.M / 10 * math.Pow(10, -3*r.Float64()) // 10⁻¹ to 10⁻⁴ of a typical t
		m, moves, err := p.Distribute(DistributeConfig{SimilarityThreshold: threshold, MaxMoves: 1_000_000})
		if err != nil {
			t.Fatal(err)
		}
		ts := p.Times(m)
		if spread := slices.Max(ts) - slices.Min(ts); spread >= threshold {
			t.Fatalf("%v: stopped after %d moves at spread %v ≥ %v", p, moves, spread, threshold)
		}
		sum := 0.0
		for _, v := range m {
			sum += v
		}
		if !near(sum, p.M, 1e-9) {
			t.Fatalf("%v: Alg. 1 shares sum to %v", p, sum)
		}
		if slices.Min(m) < 0 {
			continue
		}
		feasible++
		opt, err := p.Solve()
		if err != nil {
			t.Fatal(err)
		}
		a, b := p.RoundTime(opt), p.RoundTime(m)
		if a > b*(1+1e-12) {
			t.Fatalf("%v: Solve %v is worse than Alg. 1 %v (m = %v)", p, a, b, m)
		}
		if a < b*(1-1e-9) {
			strictlyBetter++
		}
	}
	t.Logf("%d feasible, %d strictly better", feasible, strictlyBetter)
	if feasible < 500 || strictlyBetter == 0 {
		t.Fatalf("only %d feasible instances, %d strictly better: the test is too easy", feasible, strictlyBetter)
	}
}
