package nn

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/gonum"
)

// naiveGemm is the definition of gemm, summed in float64.
func naiveGemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	for i := range m {
		for j := range n {
			s := 0.0
			for p := range k {
				av, bv := a[i*lda+p], b[p*ldb+j]
				if transA {
					av = a[p*lda+i]
				}
				if transB {
					bv = b[j*ldb+p]
				}
				s += float64(av) * float64(bv)
			}
			old := 0.0
			if beta != 0 {
				old = float64(beta) * float64(c[i*ldc+j])
			}
			c[i*ldc+j] = float32(float64(alpha)*s + old)
		}
	}
}

func randSlice(rng *rand.Rand, n int) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = float32(rng.NormFloat64())
	}
	return s
}

// kernels lists the kernel combinations of this build.
func kernels() map[string]*gemmBuf {
	ks := map[string]*gemmBuf{"go": {kern: kernelGo}}
	if simdKernel != nil {
		ks[simdName] = &gemmBuf{kern: simdKernel}
		ks[simdName+"+dot"] = &gemmBuf{kern: simdKernel, dot: simdDot}
	}
	return ks
}

// TestGemm checks every transpose and β, edge tiles and blocks larger
// than the packing blocks against the definition.
func TestGemm(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	shapes := [][3]int{{1, 1, 1}, {6, 16, 4}, {7, 17, 5}, {13, 33, 300}, {130, 20, 9}, {5, 3100, 3}, {6, 25, 1030}, {4, 7, 16}, {64, 40, 520}}
	for name, g := range kernels() {
		for _, s := range shapes {
			m, n, k := s[0], s[1], s[2]
			for _, ta := range []bool{false, true} {
				for _, tb := range []bool{false, true} {
					for _, beta := range []float32{0, 1, 0.5} {
						lda, ldb, ldc := k+1, n+2, n+3
						if ta {
							lda = m + 1
						}
						if tb {
							ldb = k + 2
						}
						a := randSlice(rng, max(m, k)*lda)
						b := randSlice(rng, max(n, k)*ldb)
						c := randSlice(rng, m*ldc)
						if beta == 0 {
							for i := range c {
								c[i] = float32(math.NaN()) // must not be read
							}
						}
						want := append([]float32(nil), c...)
						naiveGemm(ta, tb, m, n, k, 0.75, a, lda, b, ldb, beta, want, ldc)
						gemm(ta, tb, m, n, k, 0.75, a, lda, b, ldb, beta, c, ldc, g)
						for i := range m {
							for j := range ldc {
								got, w := c[i*ldc+j], want[i*ldc+j]
								if j >= n {
									if !(got == w || math.IsNaN(float64(got)) && math.IsNaN(float64(w))) {
										t.Fatalf("%s %v: wrote outside C at (%d,%d)", name, s, i, j)
									}
									continue
								}
								if math.Abs(float64(got-w)) > 1e-4*math.Sqrt(float64(k))*(1+math.Abs(float64(w))) {
									t.Fatalf("%s m,n,k=%v transA %v transB %v beta %v: C[%d,%d] = %v, want %v", name, s, ta, tb, beta, i, j, got, w)
								}
							}
						}
					}
				}
			}
		}
	}
}

// gemmShapes are the products of the mlp at batch 64: forward,
// weight gradient, input gradient.
var gemmShapes = []struct {
	name           string
	transA, transB bool
	m, n, k        int
}{
	{"fwd-64x256x784", false, true, 64, 256, 784},
	{"convdW-6x25x50176", false, true, 6, 25, 50176},
	{"conv2fwd-16x6400x150", false, false, 16, 6400, 150},
	{"dW-256x784x64", true, false, 256, 784, 64},
	{"dX-64x256x128", false, false, 64, 256, 128},
	{"512^3", false, false, 512, 512, 512},
}

func benchGemm(b *testing.B, f func(ta, tb bool, m, n, k int, a, bb, c []float32)) {
	for _, s := range gemmShapes {
		b.Run(s.name, func(b *testing.B) {
			rng := rand.New(rand.NewPCG(1, 1))
			a, bb, c := randSlice(rng, s.m*s.k), randSlice(rng, s.k*s.n), make([]float32, s.m*s.n)
			for b.Loop() {
				f(s.transA, s.transB, s.m, s.n, s.k, a, bb, c)
			}
			b.ReportMetric(2*float64(s.m*s.n*s.k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}

// BenchmarkGemm measures this package's product with each kernel, and
// gonum's native Sgemm on the same shapes for comparison.
func BenchmarkGemm(b *testing.B) {
	for name, g := range kernels() {
		b.Run(name, func(b *testing.B) {
			benchGemm(b, func(ta, tb bool, m, n, k int, a, bb, c []float32) {
				lda, ldb := k, n
				if ta {
					lda = m
				}
				if tb {
					ldb = k
				}
				gemm(ta, tb, m, n, k, 1, a, lda, bb, ldb, 0, c, n, g)
			})
		})
	}
	b.Run("gonum", func(b *testing.B) {
		var impl gonum.Implementation
		benchGemm(b, func(ta, tb bool, m, n, k int, a, bb, c []float32) {
			tA, tB, lda, ldb := blas.NoTrans, blas.NoTrans, k, n
			if ta {
				tA, lda = blas.Trans, m
			}
			if tb {
				tB, ldb = blas.Trans, k
			}
			impl.Sgemm(tA, tB, m, n, k, 1, a, lda, bb, ldb, 0, c, n)
		})
	})
	_ = fmt.Sprint
}

// TestAddRows checks addRows (SIMD where the processor has it) against
// the plain loop, bit for bit, over row lengths around the vector widths
// and strides longer than the rows.
func TestAddRows(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	for trial := range 500 {
		rows, cols := rng.IntN(6), rng.IntN(21)
		ld, ls := cols+rng.IntN(5), cols+rng.IntN(5)
		dst := randSlice(rng, max(1, rows*ld+1))
		src := randSlice(rng, max(1, rows*ls+1))
		want := slices.Clone(dst)
		for r := range rows {
			for i := range cols {
				want[r*ld+i] += src[r*ls+i]
			}
		}
		addRows(dst, src, rows, cols, ld, ls)
		for i := range dst {
			if math.Float32bits(dst[i]) != math.Float32bits(want[i]) {
				t.Fatalf("trial %d (%d rows of %d, strides %d and %d): dst[%d] = %v, want %v", trial, rows, cols, ld, ls, i, dst[i], want[i])
			}
		}
	}
}

// TestElementwise checks reluRow, maskRow and axpy (SIMD where the
// processor has it) against plain loops, bit for bit, over lengths around
// the vector width and values that include ±0, ±∞, NaN and subnormals.
func TestElementwise(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 8))
	special := []float32{0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)),
		float32(math.NaN()), math.SmallestNonzeroFloat32, -math.SmallestNonzeroFloat32, 1e-40, -1e-40}
	draw := func(n int) []float32 {
		s := randSlice(rng, n)
		for i := range s {
			if rng.IntN(4) == 0 {
				s[i] = special[rng.IntN(len(special))]
			}
		}
		return s
	}
	same := func(what string, trial int, got, want []float32) {
		t.Helper()
		for i := range got {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("%s, trial %d (%d values): [%d] = %v (%#x), want %v (%#x)", what, trial, len(got), i,
					got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
			}
		}
	}
	for trial := range 300 {
		n := rng.IntN(40)
		y, d, src := draw(n), draw(n), draw(n)
		a := float32(rng.NormFloat64())

		got, want := slices.Clone(y), slices.Clone(y)
		reluRow(got)
		for i, v := range want {
			want[i] = max(v, 0)
		}
		same("reluRow", trial, got, want)

		got, want = slices.Clone(d), slices.Clone(d)
		maskRow(got, y)
		for i, v := range y {
			if !(v > 0) {
				want[i] = 0
			}
		}
		same("maskRow", trial, got, want)

		got, want = slices.Clone(d), slices.Clone(d)
		axpy(got, src, a)
		for i, v := range src {
			p := a * v
			want[i] += p
		}
		same("axpy", trial, got, want)
	}
}

// TestPool2 checks 2×2 max pooling with SIMD (where the processor has
// it) against its loops: the same values bit for bit (a NaN where the
// loop gives one), the same indices and the same input gradient bit for
// bit (with −0 and NaN among the gradients), with and without the ReLU, on
// rows of 1 to 20 windows (the loop below 4, the four-window kernel below
// 8, the eight-window kernel from 8, on rows that are and are not
// multiples of their width), with ties, ±0, ±∞ and NaN among the inputs.
func TestPool2(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	special := []float32{0, float32(math.Copysign(0, -1)), 1, -1, float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN())}
	for trial := range 400 {
		c, n := 1+rng.IntN(2), 1+rng.IntN(3)
		h, w := 2+rng.IntN(5), 2+rng.IntN(39) // odd sizes too: their last row or column is in no window; rows of 1 to 20 windows
		l := newMaxPool(c, h, w, 2, rng.IntN(2) == 0)
		x := randSlice(rng, c*n*h*w)
		for i := range x {
			if rng.IntN(3) == 0 {
				x[i] = special[rng.IntN(len(special))]
			}
		}
		dy := randSlice(rng, n*l.outSize())
		for i := range dy {
			if rng.IntN(3) == 0 {
				dy[i] = special[rng.IntN(len(special))]
			}
		}
		run := func(simd bool) ([]float32, []int32, []float32) {
			defer func(v bool) { simdElem = v }(simdElem)
			simdElem = simdElem && simd
			y := make([]float32, n*l.outSize())
			_, ints := l.scratch(n)
			s := &scratch{i: make([]int32, ints), pool: newPool(1)}
			l.forward(nil, x, y, n, s)
			dx := randSlice(rng, len(x)) // every value must be set
			l.backward(nil, x, y, slices.Clone(dy), dx, nil, 1, n, s)
			return y, s.i, dx
		}
		wantY, wantAt, wantDx := run(false)
		gotY, gotAt, gotDx := run(true)
		for i := range gotDx {
			if math.Float32bits(gotDx[i]) != math.Float32bits(wantDx[i]) {
				t.Fatalf("trial %d (%d×%d, relu %v): dx[%d] = %v, loop %v", trial, h, w, l.relu, i, gotDx[i], wantDx[i])
			}
		}
		for i := range gotY {
			g, v := gotY[i], wantY[i]
			if math.Float32bits(g) != math.Float32bits(v) && !(g != g && v != v) {
				t.Fatalf("trial %d (%d×%d, relu %v): y[%d] = %v, loop %v", trial, h, w, l.relu, i, g, v)
			}
			if gotAt[i] != wantAt[i] {
				t.Fatalf("trial %d (%d×%d, relu %v): index[%d] = %d, loop %d", trial, h, w, l.relu, i, gotAt[i], wantAt[i])
			}
		}
	}
}

// TestSum checks sum (SIMD where the processor has it) on lengths around
// its blocks of 32: small whole numbers sum exactly whatever the order,
// so every value must be counted once.
func TestSum(t *testing.T) {
	rng := rand.New(rand.NewPCG(10, 10))
	for n := range 200 {
		s := make([]float32, n)
		want := 0
		for i := range s {
			v := rng.IntN(201) - 100
			s[i], want = float32(v), want+v
		}
		if got := sum(s); got != float32(want) {
			t.Fatalf("sum of %d whole numbers = %v, want %d", n, got, want)
		}
	}
}

// TestCopyRows checks copyRows (SIMD where the processor has it) against
// the plain loop over row lengths around the vector width and strides
// longer than the rows: each value copied, nothing else written.
func TestCopyRows(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 11))
	for trial := range 500 {
		rows, cols := rng.IntN(6), rng.IntN(40)
		ld, ls := cols+rng.IntN(5), cols+rng.IntN(5)
		dst := randSlice(rng, max(1, rows*ld+1))
		src := randSlice(rng, max(1, rows*ls+1))
		want := slices.Clone(dst)
		for r := range rows {
			for i := range cols {
				want[r*ld+i] = src[r*ls+i]
			}
		}
		copyRows(dst, src, rows, cols, ld, ls)
		if !slices.Equal(dst, want) {
			t.Fatalf("trial %d (%d rows of %d, strides %d and %d): %v, want %v", trial, rows, cols, ld, ls, dst, want)
		}
	}
}
