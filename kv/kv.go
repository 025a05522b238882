// Package kv holds the key–value batches that workers push to and pull
// from servers, the routing of a batch's keys to servers, and the compact
// wire encoding of sorted keys.
//
// A Batch is three parallel arrays, the layout of the parameter server
// (Li et al., OSDI 2014, and ps-lite): Keys sorted in strictly increasing
// order, Vals holding each key's values one key after another, and an
// optional Lens giving the number of values of each key. Without Lens
// every key has the same number of values, len(Vals)/len(Keys): one
// float32 for a sparse gradient, a row of an embedding, and so on.
//
//	b := kv.Batch{Keys: []uint64{3, 7, 12}, Vals: []float32{0.5, -1, 2}}
//
// # Routing
//
// A worker sends each key to the server that owns it. Ownership is a pure
// function Router supplied by the caller; it comes from the placement
// (seed 000 §3.2: "the assignment is done by the scheduler before the
// actual training starts and it is known to all machines"), never from a
// fixed split of the key space. Ranges builds the common range-owned
// router; anything else (a compact table, a hash) is a closure.
//
// Splitter.Split cuts a batch into one batch per server in O(n) time and
// one call of the router per key. When every server owns one run of
// consecutive keys of the batch (range ownership), the parts are
// sub-slices of the input and nothing is copied; otherwise the parts are
// copied, run by run, into buffers the Splitter keeps for the next call,
// so a warm Splitter does not allocate. Splitter.Merge is the inverse for
// pull responses: it puts the values the servers returned back into the
// order of the request's keys.
//
//	sp := kv.NewSplitter(2, kv.Ranges([]uint64{0, 10}))
//	parts, _ := sp.Split(nil, b) // parts[0]: keys 3, 7; parts[1]: key 12
//
// # Key encoding
//
// AppendKeys writes strictly increasing keys as unsigned varints of the
// gaps between them: the first key, then k[i]−k[i−1]−1 for each following
// key. Keys dense in a range take one byte each instead of eight, and
// 100k random keys of a 2^20 space about one byte each. DecodeKeys reads
// them back, rejecting truncated, overlong and overflowing input without
// allocating more than the input can hold. Both run in O(n), without
// data-dependent branches for gaps below 2^14, at a few hundred million
// keys per second.
package kv

import (
	"errors"
	"fmt"
)

// Batch is a key–value batch as parallel arrays. Keys are strictly
// increasing. Vals holds the values of Keys[0], then those of Keys[1], and
// so on. Lens, when not nil, has one entry per key giving its number of
// values; when nil, every key has len(Vals)/len(Keys) values.
//
// Functions that take a Batch do not modify it; the arrays are shared, not
// copied, unless a function says otherwise.
type Batch struct {
	Keys []uint64
	Vals []float32
	Lens []int32
}

// Len returns the number of keys.
func (b Batch) Len() int { return len(b.Keys) }

// Width returns the number of values of every key of a batch without
// Lens, and 0 for an empty batch. It is meaningless when Lens is set.
func (b Batch) Width() int {
	if len(b.Keys) == 0 {
		return 0
	}
	return len(b.Vals) / len(b.Keys)
}

// Validate reports whether b is well formed: keys strictly increasing,
// and either Lens nil with len(Vals) a multiple of len(Keys), or one
// non-negative length per key summing to len(Vals). It runs in O(n), the
// keys' order checked four neighbours at a time with AVX2 where the
// processor has it.
func (b Batch) Validate() error {
	if !ascending(b.Keys) {
		// The first key out of order, for the error.
		prev := b.Keys[0]
		for i, k := range b.Keys[1:] {
			if k <= prev {
				return fmt.Errorf("kv: key %d (%d) is not greater than key %d (%d)", i+1, k, i, prev)
			}
			prev = k
		}
	}
	return b.ValidateSizes()
}

// ValidateSizes is Validate without the keys' order, for keys known to
// be strictly increasing (a key list the transport checked once and
// keeps, see transport.Message.KeysAscending): O(1) without Lens, O(n)
// with them.
func (b Batch) ValidateSizes() error {
	if b.Lens == nil {
		if len(b.Keys) == 0 {
			if len(b.Vals) != 0 {
				return fmt.Errorf("kv: %d values but no keys", len(b.Vals))
			}
			return nil
		}
		if len(b.Vals)%len(b.Keys) != 0 {
			return fmt.Errorf("kv: %d values are not a multiple of %d keys", len(b.Vals), len(b.Keys))
		}
		return nil
	}
	if len(b.Lens) != len(b.Keys) {
		return fmt.Errorf("kv: %d lengths for %d keys", len(b.Lens), len(b.Keys))
	}
	sum := 0
	for i, l := range b.Lens {
		if l < 0 {
			return fmt.Errorf("kv: length %d of key %d is negative", l, b.Keys[i])
		}
		sum += int(l)
	}
	if sum != len(b.Vals) {
		return fmt.Errorf("kv: lengths sum to %d but there are %d values", sum, len(b.Vals))
	}
	return nil
}

// ascendingGo reports whether keys are strictly increasing: the plain
// loop, the reference and the tail of ascending. The previous key stays in
// a register, one load a key.
func ascendingGo(keys []uint64) bool {
	if len(keys) < 2 {
		return true
	}
	prev := keys[0]
	for _, k := range keys[1:] {
		if k <= prev {
			return false
		}
		prev = k
	}
	return true
}

// Clone returns a deep copy of b; nil arrays stay nil.
func (b Batch) Clone() Batch {
	c := Batch{}
	if b.Keys != nil {
		c.Keys = append(make([]uint64, 0, len(b.Keys)), b.Keys...)
	}
	if b.Vals != nil {
		c.Vals = append(make([]float32, 0, len(b.Vals)), b.Vals...)
	}
	if b.Lens != nil {
		c.Lens = append(make([]int32, 0, len(b.Lens)), b.Lens...)
	}
	return c
}

// ErrRoute is wrapped by the errors of Split and Merge when the router
// returns a server outside [0, n).
var ErrRoute = errors.New("kv: router returned a server out of range")
