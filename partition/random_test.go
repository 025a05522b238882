package partition

import (
	"reflect"
	"slices"
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

// TestRandomRows: every sample on one machine, balanced to within one;
// the parameters in k contiguous ranges by id whose sizes differ by at
// most one; the same placement for the same seed.
func TestRandomRows(t *testing.T) {
	g, err := graph.PowerLaw(graph.DefaultPowerLaw(1001, 5))
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []int{1, 3, 8} {
		run, err := Lookup("random-rows")
		if err != nil {
			t.Fatal(err)
		}
		p, err := run(g, Options{K: k, Seed: 7, Balanced: true})
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Validate(g); err != nil {
			t.Fatal(err)
		}
		samples, params := make([]int, k), make([]int, k)
		for _, m := range p.Data {
			samples[m]++
		}
		for v, m := range p.Param {
			params[m]++
			if v > 0 && m < p.Param[v-1] {
				t.Fatalf("k=%d: parameter %d on machine %d after parameter %d on %d: not contiguous", k, v, m, v-1, p.Param[v-1])
			}
		}
		if slices.Max(samples)-slices.Min(samples) > 1 || slices.Max(params)-slices.Min(params) > 1 {
			t.Errorf("k=%d: samples per machine %v, parameters %v", k, samples, params)
		}
		q, _ := run(g, Options{K: k, Seed: 7, Balanced: true})
		if !slices.Equal(p.Data, q.Data) || !slices.Equal(p.Param, q.Param) {
			t.Errorf("k=%d: another placement for the same seed", k)
		}
	}
}
