package placement

import (
	"fmt"
	"testing"

	"colo/graph"
)

// BenchmarkEvaluate scores a random placement of a generated power-law
// graph of about 10M edges at k = 64 (target: under a second).
func BenchmarkEvaluate(b *testing.B) {
	g, err := graph.PowerLaw(graph.DefaultPowerLaw(340000, 1))
	if err != nil {
		b.Fatal(err)
	}
	for _, k := range []int{16, 64} {
		p := Uniform(g, k, NewRand(1))
		b.Run(fmt.Sprintf("edges=%.1fM/k=%d", float64(g.NumEdges())/1e6, k), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Evaluate(g, p, 0); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(g.NumEdges())/1e6/(b.Elapsed().Seconds()/float64(b.N)), "Medges/s")
		})
	}
}
