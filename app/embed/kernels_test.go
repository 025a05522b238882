package embed

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestKernelsAgree: the kernels LossGrad uses agree with the loops in Go
// for every length that takes them, to the rounding of float32 sums; the
// updates add exactly what the loops add when gu and gv are one vector
// (an edge from a node to itself).
func TestKernelsAgree(t *testing.T) {
	if !simd {
		t.Skip("no vector kernels on this processor")
	}
	rng := rand.New(rand.NewPCG(5, 6))
	vec := func(n int) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(rng.NormFloat64())
		}
		return v
	}
	for _, n := range []int{8, 16, 32, 64, 200} {
		u, v, e := vec(n), vec(n), vec(n)
		a1, a2 := dot2SIMD(u, v, e)
		b1, b2 := dot2Go(u, v, e)
		if math.Abs(float64(a1-b1)) > 1e-4*float64(n) || math.Abs(float64(a2-b2)) > 1e-4*float64(n) {
			t.Errorf("n = %d: dot2 %v, %v; in Go %v, %v", n, a1, a2, b1, b2)
		}
		gu, gv, ge := vec(n), vec(n), vec(n)
		hu, hv, he := slices.Clone(gu), slices.Clone(gv), slices.Clone(ge)
		update3SIMD(0.3, -0.7, u, v, e, gu, gv, ge)
		update3Go(0.3, -0.7, u, v, e, hu, hv, he)
		for j := range n {
			if d := max(math.Abs(float64(gu[j]-hu[j])), math.Abs(float64(gv[j]-hv[j])), math.Abs(float64(ge[j]-he[j]))); d > 1e-5 {
				t.Fatalf("n = %d, value %d: update3 differs from the loop by %g", n, j, d)
			}
		}
		// gu and gv the same vector: both additions land.
		g := vec(n)
		h := slices.Clone(g)
		update3SIMD(0.25, 0.5, u, v, e, g, g, ge)
		for j := range n {
			want := h[j] + 0.25*e[j] + 0.5*e[j]
			if math.Abs(float64(g[j]-want)) > 1e-5 {
				t.Fatalf("n = %d, value %d: %v with gu = gv, want %v", n, j, g[j], want)
			}
		}
	}
}

// TestExpNeg measures expNeg's largest relative error against math.Exp
// on a fine grid of [0, 104] and at random points, and checks its ends:
// 0 past 104 and at +Inf, NaN for NaN, 1 at 0.
func TestExpNeg(t *testing.T) {
	worst, at := 0.0, 0.0
	check := func(a float64) {
		want := math.Exp(-a)
		if r := math.Abs(expNeg(a)-want) / want; r > worst {
			worst, at = r, a
		}
	}
	for i := 0; i <= 10_400_000; i++ {
		check(min(float64(i)*1e-5, expNegMax))
	}
	rng := rand.New(rand.NewPCG(1, 1))
	for range 1_000_000 {
		check(rng.Float64() * expNegMax)
	}
	t.Logf("largest relative error %.3g at %v", worst, at)
	if worst > 3e-10 {
		t.Errorf("relative error %.3g at %v, want below 3e-10", worst, at)
	}
	if expNeg(0) != 1 || expNeg(104.001) != 0 || expNeg(math.Inf(1)) != 0 || !math.IsNaN(expNeg(math.NaN())) {
		t.Errorf("expNeg(0) = %v, expNeg(104.001) = %v, expNeg(+Inf) = %v, expNeg(NaN) = %v; want 1, 0, 0, NaN",
			expNeg(0), expNeg(104.001), expNeg(math.Inf(1)), expNeg(math.NaN()))
	}
}
