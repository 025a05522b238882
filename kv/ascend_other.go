//go:build !amd64 || purego

package kv

// ascending reports whether keys are strictly increasing.
func ascending(keys []uint64) bool { return ascendingGo(keys) }
