package kv

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestAscendingAgainstLoop checks ascending (AVX2 where the processor
// has it) against the plain loop on strictly increasing keys of every
// length up to 70 and a few long ones, then with each single neighbour
// pair broken (equal, or descending), with keys that use the top bit,
// where a signed comparison would be wrong.
func TestAscendingAgainstLoop(t *testing.T) {
	r := rand.New(rand.NewPCG(35, 1))
	lengths := []int{100_001, 4097}
	for n := range 71 {
		lengths = append(lengths, n)
	}
	for _, n := range lengths {
		for _, base := range []uint64{0, math.MaxUint64/2 - 40, math.MaxUint64 - 3*uint64(n) - 10} {
			keys := make([]uint64, n)
			k := base
			for i := range keys {
				k += 1 + uint64(r.IntN(3))
				keys[i] = k
			}
			if !ascending(keys) || !ascendingGo(keys) {
				t.Fatalf("n %d base %#x: increasing keys not ascending", n, base)
			}
			for i := 1; i < n; i++ {
				if n > 200 && i%97 != 0 && i < n-20 {
					continue
				}
				for _, broken := range []uint64{keys[i-1], keys[i-1] - 1, 0} {
					was := keys[i]
					keys[i] = broken
					if got, want := ascending(keys), ascendingGo(keys); got || want {
						t.Fatalf("n %d base %#x: key %d set to %d (key before %d): ascending %v, loop %v", n, base, i, broken, keys[i-1], got, want)
					}
					keys[i] = was
				}
			}
			if n > 1 {
				// The top bit: a key after 2^63−1 that has it is greater.
				keys[0], keys[1] = math.MaxInt64, math.MaxInt64+1
				if slices.IsSorted(keys) && !ascending(keys) {
					t.Fatalf("n %d: %d < %d taken for out of order", n, keys[0], keys[1])
				}
			}
		}
	}
}

// BenchmarkValidateSparse checks the batch of a sparse push of colo bench
// kv: 100k random keys of 2^24 with one value each.
func BenchmarkValidateSparse(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	keys := make([]uint64, 100_000)
	for i := range keys {
		keys[i] = r.Uint64N(1 << 24)
	}
	slices.Sort(keys)
	keys = slices.Compact(keys)
	batch := Batch{Keys: keys, Vals: make([]float32, len(keys))}
	b.SetBytes(int64(8 * len(keys)))
	for b.Loop() {
		if err := batch.Validate(); err != nil {
			b.Fatal(err)
		}
	}
}

func ExampleBatch_Validate() {
	fmt.Println(Batch{Keys: []uint64{3, 7, 7}, Vals: []float32{1, 2, 3}}.Validate())
	// Output: kv: key 2 (7) is not greater than key 1 (7)
}
