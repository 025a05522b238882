package embed

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkLossGrad: a batch of 1,250 edges over 2,000 nodes of 32 values
// against 20 negatives, the shape of an 8-machine ego-Facebook round with
// the default batches.
func BenchmarkLossGrad(b *testing.B) {
	const d, nodes, edges, negs = 32, 2000, 1250, 20
	rng := rand.New(rand.NewPCG(1, 2))
	vals := make([]float32, nodes*d)
	for i := range vals {
		vals[i] = float32(rng.NormFloat64() * 0.1)
	}
	pos := make([]int32, 2*edges)
	for i := range pos {
		pos[i] = int32(rng.IntN(nodes))
	}
	neg := make([]int32, negs)
	for i := range neg {
		neg[i] = int32(rng.IntN(nodes))
	}
	grad := make([]float32, len(vals))
	b.SetBytes(int64(edges * (1 + negs) * 2 * d * 4))
	for b.Loop() {
		LossGrad(vals, d, pos, neg, grad, 1e-3)
	}
}

// BenchmarkKernels: the work of one negative (two dot products and three
// updates over 32 values), in Go and with the vector kernels, side by
// side.
func BenchmarkKernels(b *testing.B) {
	const d = 32
	rng := rand.New(rand.NewPCG(1, 2))
	vec := func() []float32 {
		v := make([]float32, d)
		for i := range v {
			v[i] = float32(rng.NormFloat64())
		}
		return v
	}
	u, v, e, gu, gv, ge := vec(), vec(), vec(), vec(), vec(), vec()
	for _, k := range []struct {
		name    string
		dot2    func(u, v, e []float32) (float32, float32)
		update3 func(c1, c2 float32, u, v, e, gu, gv, ge []float32)
	}{{"go", dot2Go, update3Go}, {"simd", dot2SIMD, update3SIMD}} {
		b.Run(k.name, func(b *testing.B) {
			for b.Loop() {
				s1, s2 := k.dot2(u, v, e)
				k.update3(s1*1e-9, s2*1e-9, u, v, e, gu, gv, ge)
			}
		})
	}
}
