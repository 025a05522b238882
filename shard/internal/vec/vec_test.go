package vec

import (
	"math"
	"math/rand/v2"
	"testing"
)

func randMatrix(rng *rand.Rand, m, d int) []float32 {
	x := make([]float32, m*d)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	return x
}

// TestDotsAgainstNaive checks every product against a float64 sum, on
// shapes that exercise the edges of the 2 × 4 blocks, the b tiles and the
// tail of the rows.
func TestDotsAgainstNaive(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, s := range []struct{ ma, mb, dim int }{
		{1, 1, 1}, {1, 1, 8}, {2, 4, 16}, {3, 5, 7}, {5, 3, 9}, {7, 70, 33}, {9, 131, 784}, {4, 4, 0}, {0, 3, 4},
	} {
		a, b := randMatrix(rng, s.ma, s.dim), randMatrix(rng, s.mb, s.dim)
		ldo := s.mb + 3
		out := make([]float32, max(s.ma*ldo, 1))
		for i := range out {
			out[i] = -99
		}
		Dots(a, s.ma, b, s.mb, s.dim, out, ldo)
		for i := range s.ma {
			for j := range ldo {
				got := out[i*ldo+j]
				if j >= s.mb {
					if got != -99 {
						t.Fatalf("%+v: wrote past row %d: out[%d] = %g", s, i, j, got)
					}
					continue
				}
				want, norm := 0.0, 0.0
				for k := range s.dim {
					p := float64(a[i*s.dim+k]) * float64(b[j*s.dim+k])
					want += p
					norm += math.Abs(p)
				}
				if math.Abs(float64(got)-want) > 1e-5*(norm+1) {
					t.Fatalf("%+v: a_%d · b_%d = %g, want %g", s, i, j, got, want)
				}
			}
		}
	}
}

// TestKernelsAgree checks the assembly kernel against the portable one.
func TestKernelsAgree(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	n := 784
	rows := make([][]float32, 6)
	for r := range rows {
		rows[r] = randMatrix(rng, 1, n)
	}
	var fast, slow [8]float32
	dot2x4(&rows[0][0], &rows[1][0], &rows[2][0], &rows[3][0], &rows[4][0], &rows[5][0], n, &fast)
	dot2x4Go(rows[0], rows[1], rows[2], rows[3], rows[4], rows[5], n, &slow)
	for k := range fast {
		if math.Abs(float64(fast[k]-slow[k])) > 1e-4*math.Abs(float64(slow[k]))+1e-4 {
			t.Errorf("product %d: kernel %g, portable %g", k, fast[k], slow[k])
		}
	}
}

func BenchmarkDots512x512x784(b *testing.B) {
	rng := rand.New(rand.NewPCG(5, 6))
	const m, d = 512, 784
	x, y := randMatrix(rng, m, d), randMatrix(rng, m, d)
	out := make([]float32, m*m)
	b.SetBytes(int64(m * m * d * 2)) // flops, reported as bytes/s
	for b.Loop() {
		Dots(x, m, y, m, d, out, m)
	}
}

func TestSumPosDiff(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, n := range []int{0, 1, 31, 32, 33, 64, 100, 6000} {
		a, b := randMatrix(rng, 1, n), randMatrix(rng, 1, n+3)
		want := 0.0
		for i := range n {
			want += max(float64(a[i])-float64(b[i]), 0)
		}
		got := SumPosDiff(a, b)
		if math.Abs(float64(got)-want) > 1e-5*(want+1) {
			t.Errorf("n=%d: SumPosDiff = %g, want %g", n, got, want)
		}
		if m := n &^ 31; m > 0 {
			fast, slow := sumPosDiff(a[:m], b[:m]), sumPosDiffGo(a[:m], b[:m])
			if math.Abs(float64(fast-slow)) > 1e-5*math.Abs(float64(slow))+1e-5 {
				t.Errorf("n=%d: kernel %g, portable %g", n, fast, slow)
			}
		}
	}
}

// TestSumPosDiffMonotone checks that growing b never grows the sum, the
// property lazy greedy relies on.
func TestSumPosDiffMonotone(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	a := randMatrix(rng, 1, 1000)
	b := make([]float32, 1000)
	prev := SumPosDiff(a, b)
	for range 2000 {
		i := rng.IntN(len(b))
		b[i] += float32(rng.Float64())
		s := SumPosDiff(a, b)
		if s > prev {
			t.Fatalf("sum rose from %g to %g", prev, s)
		}
		prev = s
	}
}

func BenchmarkSumPosDiff6000(b *testing.B) {
	rng := rand.New(rand.NewPCG(5, 6))
	x, y := randMatrix(rng, 1, 6000), randMatrix(rng, 1, 6000)
	b.SetBytes(6000 * 8)
	for b.Loop() {
		SumPosDiff(x, y)
	}
}
