package partition

import (
	"testing"

	"colo/placement"
)

// TestFMQueue checks fmQueue against a plain reference, a gain per
// queued vertex whose largest (ties to the lower vertex) is found by a
// scan: on random sequences of set, remove and pop over a few vertices
// (many ties) and over many (deep heaps, every child count), the same
// entries come out in the same order, and Len agrees throughout.
func TestFMQueue(t *testing.T) {
	rng := placement.NewRand(41)
	for trial := 0; trial < 200; trial++ {
		n := 1 + rng.IntN(8)
		if trial%2 == 1 {
			n = 1 + rng.IntN(600)
		}
		spread := int64(1 + rng.IntN(20))
		h := newFMQueue(n)
		ref := make(map[int32]int64)
		for op := 0; op < 30*n; op++ {
			u := int32(rng.IntN(n))
			switch x := rng.IntN(10); {
			case x < 6:
				g := rng.Int64N(2*spread) - spread
				h.set(u, g)
				ref[u] = g
			case x < 7:
				h.remove(u)
				delete(ref, u)
			default:
				if len(ref) == 0 {
					continue
				}
				want, wg := int32(-1), int64(0)
				for v, g := range ref {
					if want < 0 || g > wg || (g == wg && v < want) {
						want, wg = v, g
					}
				}
				got := h.pop()
				if got.u != want || got.gain != wg {
					t.Fatalf("trial %d op %d: pop gives vertex %d gain %d, want %d gain %d", trial, op, got.u, got.gain, want, wg)
				}
				delete(ref, want)
			}
			if h.Len() != len(ref) {
				t.Fatalf("trial %d op %d: Len %d, want %d", trial, op, h.Len(), len(ref))
			}
		}
		h.reset()
		if h.Len() != 0 {
			t.Fatalf("trial %d: Len %d after reset", trial, h.Len())
		}
		for u, p := range h.pos {
			if p != -1 {
				t.Fatalf("trial %d: vertex %d at %d after reset", trial, u, p)
			}
		}
	}
}
