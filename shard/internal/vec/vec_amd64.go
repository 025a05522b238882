//go:build amd64 && !purego

package vec

import "unsafe"

// hasAVX2FMA reports whether the CPU and the OS support AVX2 and FMA. It
// is set once at start-up and never changes.
var hasAVX2FMA = detect()

func detect() bool {
	_, _, ecx1, _ := cpuid(1, 0)
	const fma, osxsave, avx = 1 << 12, 1 << 27, 1 << 28
	if ecx1&(fma|osxsave|avx) != fma|osxsave|avx {
		return false
	}
	if eax, _ := xgetbv(); eax&6 != 6 { // XMM and YMM state enabled
		return false
	}
	_, ebx7, _, _ := cpuid(7, 0)
	return ebx7&(1<<5) != 0
}

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

func cpuid(eaxArg, ecxArg uint32) (eax, ebx, ecx, edx uint32)

func xgetbv() (eax, edx uint32)

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
