package partition

import (
	"math/bits"
	"sync"
)

// NeighborSets holds the neighbour sets S_1..S_k that Parsa's workers share
// (seed 001 §4.3, Alg. 4, "Server"). For each parameter v it stores the set
// {i : v ∈ S_i} as a bit mask of MaskWords(k) 64-bit words: bit i%64 of
// word i/64.
//
// Parsa calls the methods from several goroutines. With a finite
// staleness it never calls Push or Reset while a Pull or another Push is
// running; with TauInfinite it may, so implementations must be safe for
// concurrent use. NewMemNeighborSets is the in-memory implementation;
// distparsa.Sets backs the same interface with colo's parameter
// server, the sets held by its servers.
type NeighborSets interface {
	// Pull copies the masks of params into dst, MaskWords(k) words per
	// parameter in the order of params.
	Pull(params []uint32, dst []uint64)
	// Push adds the masks to the sets: S_i ← S_i ∪ {v : bit i of v's mask}.
	Push(params []uint32, masks []uint64)
	// Reset empties every set.
	Reset()
	// Sizes writes |S_i| for every i into dst (len k).
	Sizes(dst []int64)
}

// MaskWords returns the number of 64-bit words of a mask over k partitions.
func MaskWords(k int) int { return (k + 63) / 64 }

// MemNeighborSets is a NeighborSets in memory: MaskWords(k) words per
// parameter, 8 bytes per parameter for k ≤ 64. It is safe for concurrent
// use.
type MemNeighborSets struct {
	mu    sync.RWMutex
	k, w  int
	masks []uint64
	sizes []int64
	dirty []uint32 // parameters with a nonzero mask, for Reset
}

// NewMemNeighborSets returns empty neighbour sets over m parameters and k
// partitions.
func NewMemNeighborSets(m, k int) *MemNeighborSets {
	w := MaskWords(k)
	return &MemNeighborSets{k: k, w: w, masks: make([]uint64, m*w), sizes: make([]int64, k)}
}

// Pull implements NeighborSets.
func (s *MemNeighborSets) Pull(params []uint32, dst []uint64) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.w == 1 {
		for j, v := range params {
			dst[j] = s.masks[v]
		}
		return
	}
	for j, v := range params {
		copy(dst[j*s.w:(j+1)*s.w], s.masks[int(v)*s.w:(int(v)+1)*s.w])
	}
}

// Push implements NeighborSets.
func (s *MemNeighborSets) Push(params []uint32, masks []uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for j, v := range params {
		base := int(v) * s.w
		wasEmpty := true
		for x := 0; x < s.w; x++ {
			if s.masks[base+x] != 0 {
				wasEmpty = false
				break
			}
		}
		for x := 0; x < s.w; x++ {
			add := masks[j*s.w+x] &^ s.masks[base+x]
			if add == 0 {
				continue
			}
			s.masks[base+x] |= add
			for add != 0 {
				s.sizes[x*64+bits.TrailingZeros64(add)]++
				add &= add - 1
			}
			if wasEmpty {
				s.dirty = append(s.dirty, v)
				wasEmpty = false
			}
		}
	}
}

// Reset implements NeighborSets. It takes time proportional to the number
// of parameters in some set.
func (s *MemNeighborSets) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, v := range s.dirty {
		clear(s.masks[int(v)*s.w : (int(v)+1)*s.w])
	}
	s.dirty = s.dirty[:0]
	clear(s.sizes)
}

// Sizes implements NeighborSets.
func (s *MemNeighborSets) Sizes(dst []int64) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	copy(dst, s.sizes)
}
