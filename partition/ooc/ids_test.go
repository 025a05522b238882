package ooc

import (
	"slices"
	"testing"

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
