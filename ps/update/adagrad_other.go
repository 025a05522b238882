//go:build !amd64 || purego

package update

// adagradBlocks does nothing without a vector kernel: the loop does
// every value.
func adagradBlocks(w, g, n []float32, lr, eps, l2 float32) int { return 0 }
