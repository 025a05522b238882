package partition

import (
	"slices"
	"testing"

	"colo/graph"
	"colo/placement"
)

// TestIDIndex checks idIndex against sorting: dense ranges (bitmap),
// huge ids (the switch to a sorted list) and repeats.
func TestIDIndex(t *testing.T) {
	rng := placement.NewRand(4)
	for _, c := range []struct {
		name string
		draw func() uint64
	}{
		{"dense", func() uint64 { return uint64(rng.IntN(5000)) }},
		{"sparse", func() uint64 { return rng.Uint64() >> uint(rng.IntN(64)) }},
		{"mixed", func() uint64 {
			if rng.IntN(1000) == 0 {
				return 1 << 50
			}
			return uint64(rng.IntN(300000))
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var x idIndex
			var all []uint64
			for i := 0; i < 200000; i++ {
				id := c.draw()
				x.add(id)
				all = append(all, id)
			}
			x.finish()
			slices.Sort(all)
			all = slices.Compact(all)
			if x.len() != len(all) {
				t.Fatalf("%d ids, want %d", x.len(), len(all))
			}
			for i, id := range all {
				if d := x.dense(id); d != uint32(i) {
					t.Fatalf("dense(%d) = %d, want %d", id, d, i)
				}
			}
			i := 0
			x.each(func(id uint64) {
				if id != all[i] {
					t.Fatalf("each: id %d is %d, want %d", i, id, all[i])
				}
				i++
			})
		})
	}
}

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
		param, got := assignParamsMasks(masks, g.NumParams(), k, 9)
		if got != want || !slices.Equal(param, p.Param) {
			t.Fatalf("k = %d: masks %+v, graph %+v", k, got, want)
		}
		c, err := placement.Evaluate(g, p, 0)
		if err != nil {
			t.Fatal(err)
		}
		if mc := costFromMasks(masks, param, counts, k, 0); !slices.Equal(mc.Traffic, c.Traffic) || mc.TMax != c.TMax ||
			!slices.Equal(mc.Memory, c.Memory) || !slices.Equal(mc.Params, c.Params) {
			t.Fatalf("k = %d: cost from masks %+v, Evaluate %+v", k, mc, c)
		}
	}
}
