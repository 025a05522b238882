package partition

import (
	"slices"
	"testing"

	"colo/graph"
	"colo/placement"
)

// TestAssignParamsMasks checks the parameter step on masks against
// AssignParams on the graph, and the cost from masks against Evaluate.
func TestAssignParamsMasks(t *testing.T) {
	g, err := graph.PowerLaw(graph.DefaultPowerLaw(4000, 3))
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []int{1, 2, 7, 64, 65, 130} {
		rng := placement.NewRand(uint64(k))
		p := placement.New(k, g.NumSamples(), g.NumParams())
		counts := make([]int64, k)
		for u := range p.Data {
			p.Data[u] = int32(rng.IntN(k))
			counts[p.Data[u]]++
		}
		w := MaskWords(k)
		masks := make([]uint64, g.NumParams()*w)
		for u := range p.Data {
			i := p.Data[u]
			for _, v := range g.Params(u) {
				masks[int(v)*w+int(i)/64] |= 1 << (i % 64)
			}
		}
		want := AssignParams(g, p, 9)
		param, got := AssignParamsMasks(masks, g.NumParams(), k, 9)
		if got != want || !slices.Equal(param, p.Param) {
			t.Fatalf("k = %d: masks %+v, graph %+v", k, got, want)
		}
		c, err := placement.Evaluate(g, p, 0)
		if err != nil {
			t.Fatal(err)
		}
		if mc := CostFromMasks(masks, param, counts, k, 0); !slices.Equal(mc.Traffic, c.Traffic) || mc.TMax != c.TMax ||
			!slices.Equal(mc.Memory, c.Memory) || !slices.Equal(mc.Params, c.Params) {
			t.Fatalf("k = %d: cost from masks %+v, Evaluate %+v", k, mc, c)
		}
	}
}
