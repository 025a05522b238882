package embed

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestKernelsAgree: the kernels LossGrad uses agree with the loops in Go
// for every length that takes them, to the rounding of float32 sums,
// over rows of vals picked in any order and more than once (the updates
// of a row picked twice both land).
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
		const rows = 7
		vals, grad := vec(rows*n), vec(rows*n)
		u, v := vec(n), vec(n)
		idx := []int32{3, 0, 6, 3, 1}
		s1, s2 := make([]float32, 2*len(idx)), make([]float32, 2*len(idx))
		scoresSIMD(vals, n, idx, u, v, s1)
		scoresGo(vals, n, idx, u, v, s2)
		for k := range s1 {
			if math.Abs(float64(s1[k]-s2[k])) > 1e-4*float64(n) {
				t.Errorf("n = %d: score %d is %v, in Go %v", n, k, s1[k], s2[k])
			}
		}
		c := vec(2 * len(idx))
		gu, gv := vec(n), vec(n)
		g1, gu1, gv1 := slices.Clone(grad), slices.Clone(gu), slices.Clone(gv)
		updatesSIMD(vals, g1, n, idx, c, u, v, gu1, gv1)
		updatesGo(vals, grad, n, idx, c, u, v, gu, gv)
		for j := range grad {
			if d := math.Abs(float64(g1[j] - grad[j])); d > 1e-5 {
				t.Fatalf("n = %d, value %d: updates differ from the loop by %g", n, j, d)
			}
		}
		for j := range gu {
			if d := max(math.Abs(float64(gu1[j]-gu[j])), math.Abs(float64(gv1[j]-gv[j]))); d > 1e-5 {
				t.Fatalf("n = %d, value %d: updates of u and v differ from the loop by %g", n, j, d)
			}
		}
		// Row 3, picked twice, has both updates: row 2, never picked, none.
		h := vec(rows * n)
		h0 := slices.Clone(h)
		updatesSIMD(vals, h, n, idx, c, u, v, vec(n), vec(n))
		for j := range n {
			want := h0[3*n+j] + (c[0]+c[6])*u[j] + (c[1]+c[7])*v[j]
			if math.Abs(float64(h[3*n+j]-want)) > 1e-4 || h[2*n+j] != h0[2*n+j] {
				t.Fatalf("n = %d, value %d: row 3 %v (want %v), row 2 %v (want %v unchanged)", n, j, h[3*n+j], want, h[2*n+j], h0[2*n+j])
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
