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

// TestLogisticsAccuracy measures both logistics kernels against σ and
// softplus in float64, on scores from −100 to 100 (steps of 1/1024) and
// the pads: the coefficients' largest error relative to k·σ (float32
// results, Cephes' expf in the vector kernel), or to 1e-30 where k·σ is
// smaller (|x| > 68; the vector kernel's e^−|x| is 0 past 87), and the
// error of a run of 512 scores' summed terms relative to the sum, or to
// 1 where it is smaller.
func TestLogisticsAccuracy(t *testing.T) {
	var scores []float32
	for i := -102400; i <= 102400; i++ {
		scores = append(scores, float32(i)/1024)
	}
	for len(scores)%8 != 0 {
		scores = append(scores, padScore)
	}
	for _, k := range []struct {
		name string
		f    func(s, c []float32, k float32) (float64, float64)
	}{{"go", logisticsGo}, {"simd", logisticsSIMD}} {
		worstC, worstT, at := 0.0, 0.0, float32(0)
		for lo := 0; lo < len(scores); lo += 512 {
			s := scores[lo:min(lo+512, len(scores))]
			c := make([]float32, len(s))
			lin, prod := k.f(s, c, 0.5)
			logp := math.Log(prod)
			var want float64
			for i, f := range s {
				x := float64(f)
				sig := 1 / (1 + math.Exp(-x))
				if f == padScore {
					sig = 0
				} else {
					want += max(x, 0) + math.Log1p(math.Exp(-math.Abs(x)))
				}
				if r := math.Abs(float64(c[i])-0.5*sig) / max(0.5*sig, 1e-30); sig > 0 && r > worstC {
					worstC, at = r, f
				} else if sig == 0 && c[i] != 0 {
					t.Errorf("%s: coefficient %v for a pad, want 0", k.name, c[i])
				}
			}
			if r := math.Abs(lin+logp-want) / max(want, 1); r > worstT {
				worstT = r
			}
		}
		t.Logf("%s: coefficients' largest relative error %.3g (at %v), terms' %.3g", k.name, worstC, at, worstT)
		if worstC > 4e-7 || worstT > 1e-7 {
			t.Errorf("%s: relative errors %.3g (coefficients) and %.3g (terms), want below 4e-7 and 1e-7", k.name, worstC, worstT)
		}
	}
	// A NaN score makes the terms NaN in both.
	for _, f := range []func(s, c []float32, k float32) (float64, float64){logisticsGo, logisticsSIMD} {
		s := []float32{1, 2, float32(math.NaN()), 0, 0, 0, 0, 0}
		if lin, prod := f(s, make([]float32, 8), 1); !math.IsNaN(lin + math.Log(prod)) {
			t.Errorf("terms %v + log %v with a NaN score, want NaN", lin, prod)
		}
	}
}

// TestDotsUpdates checks the exported Dots and Updates against the
// products written out, for rows of 8 values (the kernels) and of 5 (Go),
// and that a row outside the matrix panics.
func TestDotsUpdates(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	for _, d := range []int{5, 8} {
		vals, grad := make([]float32, 6*d), make([]float32, 6*d)
		for i := range vals {
			vals[i] = float32(rng.NormFloat64())
		}
		u, v := vals[:d], vals[d:2*d]
		idx := []int32{2, 5, 3}
		s := make([]float32, 6)
		Dots(vals, d, idx, u, v, s)
		c := []float32{0.5, -1, 2, 0, 1, 1}
		gu, gv := make([]float32, d), make([]float32, d)
		Updates(vals, grad, d, idx, c, u, v, gu, gv)
		for k, i := range idx {
			e := vals[int(i)*d : int(i+1)*d]
			var su, sv float64
			for j := range e {
				su += float64(u[j] * e[j])
				sv += float64(e[j] * v[j])
			}
			if math.Abs(su-float64(s[2*k])) > 1e-5 || math.Abs(sv-float64(s[2*k+1])) > 1e-5 {
				t.Errorf("d %d row %d: scores %v %v, want %v %v", d, i, s[2*k], s[2*k+1], su, sv)
			}
			for j := range e {
				if want := c[2*k]*u[j] + c[2*k+1]*v[j]; math.Abs(float64(grad[int(i)*d+j]-want)) > 1e-5 {
					t.Errorf("d %d row %d: gradient %v, want %v", d, i, grad[int(i)*d+j], want)
				}
			}
		}
		for j := range gu {
			var wu float32
			for k, i := range idx {
				wu += c[2*k] * vals[int(i)*d+j]
			}
			if math.Abs(float64(gu[j]-wu)) > 1e-5 {
				t.Errorf("d %d: gu[%d] = %v, want %v", d, j, gu[j], wu)
			}
		}
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("d %d: Dots of row 6 of 6 did not panic", d)
				}
			}()
			Dots(vals, d, []int32{6}, u, v, s)
		}()
	}
}
