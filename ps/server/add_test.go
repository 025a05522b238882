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

// TestScatterAdd checks the sparse push's loop against a plain reference
// on random keys, some below, inside and beyond the window [lo, lo+n):
// it adds exactly the keys before the first one outside, in order
// (repeated keys add twice), and says how many.
func TestScatterAdd(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := range 500 {
		n, lo := 1+rng.IntN(40), uint64(rng.IntN(20))
		keys := make([]uint64, rng.IntN(30))
		g := make([]float32, len(keys)+rng.IntN(3)) // longer than keys is allowed
		for i := range keys {
			keys[i] = uint64(rng.IntN(n + 30))
			g[i] = float32(rng.IntN(100))
		}
		vals := make([]float32, n)
		want := make([]float32, n)
		wantN := len(keys)
		for i, k := range keys {
			if k < lo || k >= lo+uint64(n) {
				wantN = i
				break
			}
			want[k-lo] += g[i]
		}
		if got := scatterAdd(vals, lo, keys, g); got != wantN {
			t.Fatalf("trial %d: added %d keys, want %d (lo %d, n %d, keys %v)", trial, got, wantN, lo, n, keys)
		}
		for j := range vals {
			if vals[j] != want[j] {
				t.Fatalf("trial %d: value %d is %v, want %v", trial, j, vals[j], want[j])
			}
		}
	}
}

// TestGather checks the sparse pull's loop against a plain reference, as
// TestScatterAdd checks the push's.
func TestGather(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for trial := range 500 {
		n, lo := 1+rng.IntN(40), uint64(rng.IntN(20))
		vals := make([]float32, n)
		for j := range vals {
			vals[j] = float32(rng.IntN(100))
		}
		keys := make([]uint64, rng.IntN(30))
		for i := range keys {
			keys[i] = uint64(rng.IntN(n + 30))
		}
		dst := make([]float32, len(keys)+rng.IntN(3))
		for i := range dst {
			dst[i] = -1
		}
		wantN := len(keys)
		for i, k := range keys {
			if k < lo || k >= lo+uint64(n) {
				wantN = i
				break
			}
		}
		if got := gather(dst, vals, lo, keys); got != wantN {
			t.Fatalf("trial %d: set %d values, want %d (lo %d, n %d, keys %v)", trial, got, wantN, lo, n, keys)
		}
		for i := range dst {
			want := float32(-1)
			if i < wantN {
				want = vals[keys[i]-lo]
			}
			if dst[i] != want {
				t.Fatalf("trial %d: dst[%d] = %v, want %v", trial, i, dst[i], want)
			}
		}
	}
}
