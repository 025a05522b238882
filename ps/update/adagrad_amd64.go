//go:build amd64 && !purego

package update

// adagradBlocks runs AdaGrad's step without L1 (see AdaGrad.Update) on
// the first len(w) &^ 3 values, four lanes at a time in SSE registers
// (part of the base instruction set, so no feature check), and returns
// how many it did. Every lane does the scalar loop's operations in its
// order, each rounded to float32 (SQRTPS is correctly rounded, as is the
// float64 root rounded to float32), so the values are the loop's bit for
// bit.
func adagradBlocks(w, g, n []float32, lr, eps, l2 float32) int {
	k := len(w) &^ 3
	if k > 0 {
		adagradSSE(&w[0], &g[0], &n[0], k, lr, eps, l2)
	}
	return k
}

//go:noescape
func adagradSSE(w, grad, sum *float32, k int, lr, eps, l2 float32)
