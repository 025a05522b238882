//go:build !linux

package server

// adviseHuge does nothing where transparent huge pages are not asked for
// with madvise (see huge_linux.go).
func adviseHuge([]float32) error { return nil }

// hugeFloats returns n zeroed float32 (see huge_linux.go).
func hugeFloats(n int) []float32 { return make([]float32, n) }
