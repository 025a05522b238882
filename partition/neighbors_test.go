package partition

import (
	"testing"

	"colo/placement"
)

// TestMemNeighborSets checks the in-memory sets against maps, for one and
// several mask words.
func TestMemNeighborSets(t *testing.T) {
	rng := placement.NewRand(7)
	for _, k := range []int{1, 5, 64, 65, 130} {
		m := 50
		w := MaskWords(k)
		s := NewMemNeighborSets(m, k)
		ref := make([]map[int]bool, k)
		for i := range ref {
			ref[i] = map[int]bool{}
		}
		check := func() {
			t.Helper()
			params := make([]uint32, m)
			for v := range params {
				params[v] = uint32(v)
			}
			got := make([]uint64, m*w)
			s.Pull(params, got)
			for i := 0; i < k; i++ {
				for v := 0; v < m; v++ {
					if (got[v*w+i/64]>>(i%64)&1 == 1) != ref[i][v] {
						t.Fatalf("k=%d: v=%d ∈ S_%d disagrees", k, v, i)
					}
				}
			}
			sizes := make([]int64, k)
			s.Sizes(sizes)
			for i := range sizes {
				if sizes[i] != int64(len(ref[i])) {
					t.Fatalf("k=%d: |S_%d| = %d, want %d", k, i, sizes[i], len(ref[i]))
				}
			}
		}
		for round := 0; round < 20; round++ {
			if round == 10 {
				s.Reset()
				for i := range ref {
					ref[i] = map[int]bool{}
				}
				check()
			}
			var params []uint32
			var masks []uint64
			for x := 0; x < 10; x++ {
				v := rng.IntN(m)
				params = append(params, uint32(v))
				mask := make([]uint64, w)
				for i := 0; i < k; i++ {
					if rng.IntN(5) == 0 {
						mask[i/64] |= 1 << (i % 64)
						ref[i][v] = true
					}
				}
				masks = append(masks, mask...)
			}
			s.Push(params, masks)
			check()
		}
	}
}
