package embed

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkLossGrad: a batch of 1,250 edges over 2,000 nodes of 32 values
// against 20 negatives each, the shape of an 8-machine ego-Facebook round
// with the default batches: the same 20 for every edge (shared) or 20
// drawn for each edge (per-edge).
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
	shared, perEdge := make([]int32, edges*negs), make([]int32, edges*negs)
	for i := range perEdge {
		perEdge[i] = int32(rng.IntN(nodes))
	}
	for i := range shared {
		shared[i] = perEdge[i%negs]
	}
	grad := make([]float32, len(vals))
	for _, c := range []struct {
		name string
		neg  []int32
	}{{"shared", shared}, {"per-edge", perEdge}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(edges * (1 + negs) * 2 * d * 4))
			for b.Loop() {
				LossGrad(vals, d, pos, c.neg, negs, grad, 1e-3)
			}
		})
	}
}

// BenchmarkKernels: the work of an edge's 20 negatives (two dot
// products and three updates over 32 values each), in Go and with the
// vector kernels, side by side; ns/negative is the time of one.
func BenchmarkKernels(b *testing.B) {
	const d, rows, negs = 32, 64, 20
	rng := rand.New(rand.NewPCG(1, 2))
	vec := func(n int) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(rng.NormFloat64())
		}
		return v
	}
	vals, grad := vec(rows*d), vec(rows*d)
	u, v, gu, gv := vals[:d], vals[d:2*d], grad[:d], grad[d:2*d]
	idx := make([]int32, negs)
	for i := range idx {
		idx[i] = int32(2 + rng.IntN(rows-2))
	}
	s, c := make([]float32, 2*negs), make([]float32, 2*negs)
	for _, k := range []struct {
		name    string
		scores  func(vals []float32, d int, idx []int32, u, v, s []float32)
		updates func(vals, grad []float32, d int, idx []int32, c, u, v, gu, gv []float32)
	}{{"go", scoresGo, updatesGo}, {"simd", scoresSIMD, updatesSIMD}} {
		b.Run(k.name, func(b *testing.B) {
			for b.Loop() {
				k.scores(vals, d, idx, u, v, s)
				for i, x := range s {
					c[i] = x * 1e-9
				}
				k.updates(vals, grad, d, idx, c, u, v, gu, gv)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*negs), "ns/negative")
		})
	}
}
