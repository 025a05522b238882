//go:build !linux

package transport

// makePooled returns an array of length n and capacity c for the Pool
// (see huge_linux.go).
func makePooled[T any](n, c, elem int) []T { return make([]T, n, c) }
