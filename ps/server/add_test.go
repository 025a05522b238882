package server

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestSumIntoMatchesLoop checks the vector kernel against the plain loop,
// bit for bit, on every length up to a few blocks and at unaligned
// offsets, with values whose sums round, overflow and include NaN.
func TestSumIntoMatchesLoop(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	special := []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), math.MaxFloat32, float32(math.Copysign(0, -1)), 1e-45}
	for n := 0; n <= 5*16+3; n++ {
		for off := range 3 {
			w := make([]float32, n+off)
			g := make([]float32, n+off)
			for i := range w {
				w[i] = float32(rng.NormFloat64()) * float32(math.Pow(10, float64(rng.IntN(10)-5)))
				g[i] = float32(rng.NormFloat64()) * float32(math.Pow(10, float64(rng.IntN(10)-5)))
				if rng.IntN(10) == 0 {
					g[i] = special[rng.IntN(len(special))]
				}
			}
			want := append([]float32(nil), w...)
			addGo(want[off:], g[off:])
			got := append([]float32(nil), w...)
			sumInto(got[off:], g[off:])
			for i := range got {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("n %d offset %d: element %d is %v, want %v", n, off, i, got[i], want[i])
				}
			}
		}
	}
}

// BenchmarkSumInto adds a dense push of 1M float32 into a store's values.
func BenchmarkSumInto(b *testing.B) {
	for _, k := range []struct {
		name string
		f    func(w, g []float32)
	}{{"kernel", sumInto}, {"loop", addGo}} {
		b.Run(k.name, func(b *testing.B) {
			w, g := make([]float32, 1<<20), make([]float32, 1<<20)
			for i := range g {
				g[i] = 1
			}
			b.SetBytes(4 << 20)
			for b.Loop() {
				k.f(w, g)
			}
		})
	}
}
