//go:build amd64 && !purego

package vec

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

// hasAVX2FMA reports whether the CPU and the OS support AVX2 and FMA
// (golang.org/x/sys/cpu checks the OS's YMM state too). It is set once at
// start-up and never changes.
var hasAVX2FMA = cpu.X86.HasAVX2 && cpu.X86.HasFMA

//go:noescape
func dot2x4AVX(a0, a1, b0, b1, b2, b3 *float32, n int, res *[8]float32)

//go:noescape
func sumPosDiffAVX(a, b *float32, n int) float32

// sumPosDiff is SumPosDiff for len(a) a positive multiple of 32.
func sumPosDiff(a, b []float32) float32 {
	if hasAVX2FMA {
		return sumPosDiffAVX(&a[0], &b[0], len(a))
	}
	return sumPosDiffGo(a, b)
}

// dot2x4 sets res[4r+c] = a_r · b_c over the first n elements, n a
// positive multiple of 8.
func dot2x4(a0, a1, b0, b1, b2, b3 *float32, n int, res *[8]float32) {
	if hasAVX2FMA {
		dot2x4AVX(a0, a1, b0, b1, b2, b3, n, res)
		return
	}
	s := func(p *float32) []float32 { return unsafe.Slice(p, n) }
	dot2x4Go(s(a0), s(a1), s(b0), s(b1), s(b2), s(b3), n, res)
}
