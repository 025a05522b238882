// Package workload is the push and pull requests that colo's key-value
// benchmarks send, shared so that every benchmark and its plain-TCP
// reference carry the same traffic: the transport suite
// (transporttest.Benchmark), the plain baselines (BenchmarkPlainTCP) and
// the parameter-server benchmark (`colo bench kv`, package bench/kv).
//
// A sparse request carries SparseKeys distinct keys drawn from
// [0, SparseSpace), one float32 each (SparseKeySet, the same set on every
// run); a dense request carries DenseVals float32 of one range
// [0, DenseVals), 4 MB:
//
//	keys := workload.SparseKeySet() // 100k sorted keys of [0, 2^24)
//	w.Push(keys, vals[:len(keys)])
//	w.PushRange(0, vals[:workload.DenseVals])
package workload

import (
	"math/rand/v2"
	"slices"
)

// Workload sizes of the benchmarks: the push and pull requests of the
// parameter-server benchmark (colo bench kv).
const (
	// SparseKeys is the number of keys of a sparse request, one float32
	// each, drawn from a space of SparseSpace keys.
	SparseKeys  = 100_000
	SparseSpace = 1 << 24
	// DenseVals is the number of float32 of a dense request (4 MB),
	// addressed by a range [0, DenseVals).
	DenseVals = 1 << 20
)

// SparseKeySet returns the keys of the sparse workload, sorted: SparseKeys
// distinct keys of [0, SparseSpace) drawn by a fixed seed, the same on
// every call.
func SparseKeySet() []uint64 {
	r := rand.New(rand.NewPCG(7, 7))
	seen := make(map[uint64]bool, SparseKeys)
	keys := make([]uint64, 0, SparseKeys)
	for len(keys) < SparseKeys {
		k := r.Uint64N(SparseSpace)
		if !seen[k] {
			seen[k] = true
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}
