package lr

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestKernelsExact: scores and scatter, with the kernels where the
// processor has them, give the Go loops' results bit for bit, for every
// number of classes from 1 to 40, samples of 1 to 60 entries and keys
// that repeat within a sample.
func TestKernelsExact(t *testing.T) {
	if !simd {
		t.Log("no SIMD kernels on this processor or build: the Go loops against themselves")
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for W := 1; W <= 40; W++ {
		for trial := range 20 {
			rows := 1 + rng.IntN(30)
			n := 1 + rng.IntN(60)
			pos := make([]int32, n)
			val := make([]float32, n)
			for j := range pos {
				pos[j] = int32(rng.IntN(rows))
				val[j] = float32(rng.NormFloat64())
			}
			w := make([]float32, rows*W)
			for i := range w {
				w[i] = float32(rng.NormFloat64())
			}
			z, want := make([]float32, W), make([]float32, W)
			scores(z, w, pos, val)
			scoresGo(want, w, pos, val)
			for c := range W {
				if math.Float32bits(z[c]) != math.Float32bits(want[c]) {
					t.Fatalf("W %d trial %d: score %d = %v, Go %v", W, trial, c, z[c], want[c])
				}
			}
			grad, wantGrad := make([]float32, rows*W), make([]float32, rows*W)
			for i := range grad {
				grad[i] = float32(rng.NormFloat64())
			}
			copy(wantGrad, grad)
			scatter(grad, z, pos, val)
			scatterGo(wantGrad, z, pos, val)
			for i := range grad {
				if math.Float32bits(grad[i]) != math.Float32bits(wantGrad[i]) {
					t.Fatalf("W %d trial %d: gradient %d = %v, Go %v", W, trial, i, grad[i], wantGrad[i])
				}
			}
		}
	}
}

// TestKernelsCheckKeys: an entry whose key is past the weights panics
// before any kernel reads or writes out of bounds, as the Go loops'
// index check does.
func TestKernelsCheckKeys(t *testing.T) {
	for _, f := range []func(){
		func() { scores(make([]float32, 20), make([]float32, 40), []int32{0, 2}, []float32{1, 1}) },
		func() { scatter(make([]float32, 40), make([]float32, 20), []int32{-1}, []float32{1}) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Error("no panic for a key past the weights")
				}
			}()
			f()
		}()
	}
}

// BenchmarkKernels compares the scores and scatter of 20 classes (20
// Newsgroups) over samples of 130 entries with the Go loops.
func BenchmarkKernels(b *testing.B) {
	const W, n, rows = 20, 130, 50000
	rng := rand.New(rand.NewPCG(1, 2))
	pos := make([]int32, n)
	val := make([]float32, n)
	for j := range pos {
		pos[j] = int32(rng.IntN(rows))
		val[j] = rng.Float32()
	}
	w := make([]float32, rows*W)
	z := make([]float32, W)
	for _, c := range []struct {
		name            string
		scores, scatter func(a, b []float32, pos []int32, val []float32)
	}{{"go", scoresGo, scatterGo}, {"simd", scores, scatter}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				c.scores(z, w, pos, val)
				c.scatter(w, z, pos, val)
			}
			b.ReportMetric(float64(2*n*W)/(b.Elapsed().Seconds()/float64(b.N))/1e9, "GMAC/s")
		})
	}
}
