package update

import "testing"

// BenchmarkMomentum measures the momentum rule on a block the size of the
// default mlp (package nn).
func BenchmarkMomentum(b *testing.B) {
	n := 235146
	w, g, v := make([]float32, n), make([]float32, n), make([]float32, n)
	r := Momentum{LR: 0.05, Mu: 0.9}
	for b.Loop() {
		r.Update(w, g, [][]float32{v})
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/value")
}
