//go:build !purego

package nn

// hasAVX2FMA reports whether the processor and the operating system
// support AVX2 and FMA3 (the YMM state enabled in XCR0).
func hasAVX2FMA() bool {
	_, _, c, _ := cpuid(1, 0)
	if c&(1<<12) == 0 || c&(1<<27) == 0 || c&(1<<28) == 0 { // FMA, OSXSAVE, AVX
		return false
	}
	if xcr0, _ := xgetbv(); xcr0&6 != 6 { // XMM and YMM state
		return false
	}
	_, b, _, _ := cpuid(7, 0)
	return b&(1<<5) != 0 // AVX2
}

func cpuid(eaxArg, ecxArg uint32) (eax, ebx, ecx, edx uint32)
func xgetbv() (eax, edx uint32)

// kernelAVX2 is kernelGo with AVX2 and FMA: c, a 6×16 tile with row stride
// ldc, += α·A·B for k ≥ 1.
//
//go:noescape
func kernelAVX2(k int, a, b, c *float32, ldc int, alpha float32)

// simdKernel is the AVX2 micro-kernel when the processor has it, else nil.
var simdKernel = func() kernelFunc {
	if hasAVX2FMA() {
		return kernelAVX2Checked
	}
	return nil
}()

// simdName names simdKernel.
const simdName = "avx2"

func kernelAVX2Checked(k int, a, b, c []float32, ldc int, alpha float32) {
	_, _, _ = a[k*mr-1], b[k*nr-1], c[(mr-1)*ldc+nr-1]
	kernelAVX2(k, &a[0], &b[0], &c[0], ldc, alpha)
}
