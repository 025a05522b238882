//go:build amd64 && !purego

package update

// momentumBlocks runs the momentum step without regularisation (see
// Momentum.Update) on the first len(w) &^ 7 values, eight at a time in
// two SSE registers (part of the base instruction set, so no feature
// check), and returns how many it did. Every lane does the scalar loop's
// operations in its order, each rounded to float32 (a multiply, then an
// add: no fused multiply-add), so the values are the loop's bit for bit.
func momentumBlocks(w, g, v []float32, lr, mu float32) int {
	k := len(w) &^ 7
	if k > 0 {
		_, _ = g[k-1], v[k-1]
		momentumSSE(&w[0], &g[0], &v[0], k, lr, mu)
	}
	return k
}

//go:noescape
func momentumSSE(w, grad, vel *float32, k int, lr, mu float32)
