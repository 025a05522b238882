package partition

import (
	"reflect"
	"testing"

	"colo/graph"
)

func TestRandomPlacement(t *testing.T) {
	g, err := graph.Sparse(graph.SparseConfig{Samples: 1003, Params: 500, Gamma: 0.98, Seed: 2})
	if err != nil {
		t.Fatal(err)
	}
	for _, balanced := range []bool{false, true} {
		for _, k := range []int{1, 2, 7, 64} {
			opt := Options{K: k, Seed: 5, Balanced: balanced}
			p, err := Random(g, opt)
			if err != nil {
				t.Fatal(err)
			}
			if err := p.Validate(g); err != nil {
				t.Fatalf("k=%d balanced=%v: %v", k, balanced, err)
			}
			again, _ := Random(g, opt)
			if !reflect.DeepEqual(p, again) {
				t.Fatalf("k=%d balanced=%v: not deterministic", k, balanced)
			}
			if balanced {
				size := make([]int, k)
				for _, i := range p.Data {
					size[i]++
				}
				bound := (g.NumSamples() + k - 1) / k
				for i, s := range size {
					if s > bound || s < g.NumSamples()/k {
						t.Fatalf("k=%d: machine %d has %d samples, want %d..%d", k, i, s, g.NumSamples()/k, bound)
					}
				}
			}
		}
	}
	for _, k := range []int{0, -1, 1004} {
		if _, err := Random(g, Options{K: k}); err == nil {
			t.Errorf("k=%d accepted", k)
		}
	}
}
