package update

import (
	"colo/internal/cputime"
	"math/rand/v2"
	"slices"
	"testing"
)

// BenchmarkMomentum measures the momentum rule on a block the size of the
// default mlp (package nn): Update (the vector kernel where there is one)
// against the plain loop (momentumRef).
func BenchmarkMomentum(b *testing.B) {
	n := 235146
	w, g, v := make([]float32, n), make([]float32, n), make([]float32, n)
	r := Momentum{LR: 0.05, Mu: 0.9}
	for _, bc := range []struct {
		name string
		f    func()
	}{
		{"Update", func() { r.Update(w, g, [][]float32{v}) }},
		{"loop", func() { momentumRef(r, w, g, v) }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			c0 := cputime.Process()
			for b.Loop() {
				bc.f()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/value")
			b.ReportMetric(float64(cputime.Process()-c0)/float64(b.N)/float64(n), "cpu-ns/value")
		})
	}
}

// BenchmarkAdaGradRows applies AdaGrad to 3,800 random rows of 20 values
// of a table of 61,189 rows (a step of python/bench/step.py's model),
// row by row as a server's store does: Update (the vector kernel where
// there is one) against the plain loop (adagradRef).
func BenchmarkAdaGradRows(b *testing.B) {
	const total, rows, d = 61189, 3800, 20
	w, n, g := make([]float32, total*d), make([]float32, total*d), make([]float32, rows*d)
	for i := range g {
		g[i] = float32(i%7-3) * 0.01
	}
	r := rand.New(rand.NewPCG(1, 2))
	var sel [][]int
	for range 64 {
		p := r.Perm(total)[:rows]
		slices.Sort(p)
		sel = append(sel, p)
	}
	rule := AdaGrad{LR: 0.5, Eps: 1e-10}
	st := make([][]float32, 1)
	for _, bc := range []struct {
		name string
		f    func(w, g, n []float32)
	}{
		{"Update", func(w, g, n []float32) { st[0] = n; rule.Update(w, g, st) }},
		{"loop", func(w, g, n []float32) { adagradRef(rule, w, g, n) }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			i := 0
			c0 := cputime.Process()
			for b.Loop() {
				for k, j := range sel[i%len(sel)] {
					bc.f(w[j*d:(j+1)*d], g[k*d:(k+1)*d], n[j*d:(j+1)*d])
				}
				i++
			}
			b.ReportMetric(float64(cputime.Process()-c0)/float64(b.N), "cpu-ns/op")
		})
	}
}
