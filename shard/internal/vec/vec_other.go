//go:build !amd64 || purego

package vec

import "unsafe"

// dot2x4 sets res[4r+c] = a_r · b_c over the first n elements, n a
// positive multiple of 8.
func dot2x4(a0, a1, b0, b1, b2, b3 *float32, n int, res *[8]float32) {
	s := func(p *float32) []float32 { return unsafe.Slice(p, n) }
	dot2x4Go(s(a0), s(a1), s(b0), s(b1), s(b2), s(b3), n, res)
}

// sumPosDiff is SumPosDiff for len(a) a positive multiple of 32.
func sumPosDiff(a, b []float32) float32 { return sumPosDiffGo(a, b) }
