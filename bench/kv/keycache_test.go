package kv

import (
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
)

// TestKeyCachedPushesSumExactly: workers that push the same key lists
// again and again over TCP (named by key slot from their third push on,
// see transport.KeyCache), concurrently, with pulls between, leave every
// key with the exact sum of what was pushed to it.
func TestKeyCachedPushesSumExactly(t *testing.T) {
	const space, rounds = 1 << 20, 30
	c := benchCluster(t, 2, 2, space, true)
	r := rand.New(rand.NewPCG(4, 2))
	var lists [2][]uint64
	for i := range lists {
		set := map[uint64]bool{}
		for len(set) < 3000 {
			set[r.Uint64N(space)] = true
		}
		for k := range set {
			lists[i] = append(lists[i], k)
		}
		slices.Sort(lists[i])
	}
	// Worker w pushes w+1 to list 0's keys and 10·(w+1) to list 1's.
	var wg sync.WaitGroup
	for w := range c.NumWorkers() {
		wg.Go(func() {
			ones := [2][]float32{make([]float32, len(lists[0])), make([]float32, len(lists[1]))}
			for i := range ones[0] {
				ones[0][i] = float32(w + 1)
			}
			for i := range ones[1] {
				ones[1][i] = float32(10 * (w + 1))
			}
			dst := make([]float32, len(lists[0]))
			for i := range 2 * rounds {
				if err := c.Worker(w).Push(lists[i%2], ones[i%2]).Wait(); err != nil {
					t.Error(err)
					return
				}
				if i%5 == 0 {
					if err := c.Worker(w).Pull(lists[0], dst).Wait(); err != nil {
						t.Error(err)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	want := map[uint64]float32{}
	for _, k := range lists[0] {
		want[k] += rounds * (1 + 2)
	}
	for _, k := range lists[1] {
		want[k] += rounds * (10 + 20)
	}
	for i, keys := range lists {
		got := make([]float32, len(keys))
		if err := c.Worker(0).Pull(keys, got).Wait(); err != nil {
			t.Fatal(err)
		}
		for j, k := range keys {
			if got[j] != want[k] {
				t.Fatalf("list %d, key %d: %v, want %v", i, k, got[j], want[k])
			}
		}
	}
}
