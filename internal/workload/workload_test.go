package workload

import (
	"slices"
	"testing"
)

// TestSparseKeySet checks the key set's size, order and range, and its
// checksum: bench/pslite/kv_bench.cc draws the same keys for the ps-lite
// peer with its own copy of math/rand/v2's PCG, and `kv_bench keysum`
// prints these same four numbers.
func TestSparseKeySet(t *testing.T) {
	keys := SparseKeySet()
	if len(keys) != SparseKeys {
		t.Fatalf("%d keys, want %d", len(keys), SparseKeys)
	}
	if !slices.IsSorted(keys) || len(slices.Compact(slices.Clone(keys))) != len(keys) {
		t.Fatal("keys not sorted and distinct")
	}
	var sum uint64
	for _, k := range keys {
		if k >= SparseSpace {
			t.Fatalf("key %d outside [0, %d)", k, SparseSpace)
		}
		sum += k
	}
	if first, last := keys[0], keys[len(keys)-1]; first != 35 || last != 16776657 || sum != 836310814593 {
		t.Errorf("first %d, last %d, sum %d; kv_bench keysum prints 35 16776657 836310814593", first, last, sum)
	}
}
