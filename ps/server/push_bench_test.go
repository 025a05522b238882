package server

import (
	"testing"

	"colo/internal/workload"
	"colo/kv"
	"colo/ps/route"
	"colo/ps/update"
)

// BenchmarkStorePushSparse adds a sparse push of colo bench kv (100k
// random keys of 2^24, one value each) into a store of 2^24 values.
func BenchmarkStorePushSparse(b *testing.B) {
	keys := workload.SparseKeySet()
	tb, _ := route.Uniform(1, workload.SparseSpace)
	s := NewStore(tb.Index(0), 1, update.Sum{})
	batch := kv.Batch{Keys: keys, Vals: make([]float32, len(keys))}
	for i := range batch.Vals {
		batch.Vals[i] = 1
	}
	b.SetBytes(int64(12 * len(keys)))
	for b.Loop() {
		if err := s.Push(batch); err != nil {
			b.Fatal(err)
		}
	}
}

// TestAdviseHugeKeepsValues checks that the advice of huge pages leaves
// the values of arrays of any size and alignment as they were.
func TestAdviseHugeKeepsValues(t *testing.T) {
	for _, n := range []int{0, 1, 1000, 1 << 20, 3<<20 + 7} {
		for _, skip := range []int{0, 1, 3} {
			if skip > n {
				continue
			}
			a := make([]float32, n)
			for i := range a {
				a[i] = float32(i)
			}
			adviseHuge(a[skip:])
			for i, v := range a {
				if v != float32(i) {
					t.Fatalf("n %d skip %d: value %d is %v", n, skip, i, v)
				}
			}
		}
	}
}
