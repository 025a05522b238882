//go:build !amd64 || purego

package update

// momentumBlocks does nothing without a vector kernel: the loop does
// every value.
func momentumBlocks(w, g, v []float32, lr, mu float32) int { return 0 }
