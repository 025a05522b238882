//go:build !purego

package nn

import "golang.org/x/sys/cpu"

// hasAVX2FMA reports whether the processor and the operating system
// support AVX2 and FMA3 (golang.org/x/sys/cpu checks the YMM state too).
func hasAVX2FMA() bool { return cpu.X86.HasAVX2 && cpu.X86.HasFMA }

// kernelAVX2 is kernelGo with AVX2 and FMA: c, a 6×16 tile with row stride
// ldc, += α·A·B for k ≥ 1.
//
//go:noescape
func kernelAVX2(k int, a, b, c *float32, ldb, ldc int, alpha float32)

// dotAVX2 is a dotFunc with AVX2 and FMA.
//
//go:noescape
func dotAVX2(k int, a0, a1, a2, b0, b1, b2, b3 *float32, out *[12]float32)

// addRowsAVX is addRows with AVX, on checked arguments.
//
//go:noescape
func addRowsAVX(dst, src *float32, rows, cols, ld, ls int)

// simdAddRows is addRowsAVX when the processor has AVX2 (and FMA, as the
// other kernels), else nil.
var simdAddRows = func() func(dst, src *float32, rows, cols, ld, ls int) {
	if hasAVX2FMA() {
		return addRowsAVX
	}
	return nil
}()

// simdKernel is the AVX2 micro-kernel when the processor has it, else nil.
var simdKernel = func() kernelFunc {
	if hasAVX2FMA() {
		return kernelAVX2Checked
	}
	return nil
}()

// simdDot is the AVX2 dot-product kernel when the processor has it, else
// nil.
var simdDot = func() dotFunc {
	if hasAVX2FMA() {
		return dotAVX2Checked
	}
	return nil
}()

// reluAVX, maskAVX and axpyAVX are reluRow, maskRow and axpy with AVX
// on a multiple of 8 values.
//
//go:noescape
func reluAVX(p *float32, n int)

//go:noescape
func maskAVX(d, y *float32, n int)

//go:noescape
func axpyAVX(dst, src *float32, n int, a float32)

// pool2AVX computes eight outputs of 2×2 max pooling (maxPool's
// forward pass), the same values and indices as its loop (a NaN where
// the loop gives a NaN, not necessarily the same one).
//
//go:noescape
func pool2AVX(r0, r1 *float32, w, idx int, floor float32, d *float32, at *int32)

// pool2x4AVX is pool2AVX on four windows (r0[0:8] over r1[0:8]).
//
//go:noescape
func pool2x4AVX(r0, r1 *float32, w, idx int, floor float32, d *float32, at *int32)

// unpool2AVX sets the input gradient of eight 2×2 windows (maxPool's
// backward pass), what its loop sets, bit for bit.
//
//go:noescape
func unpool2AVX(dy *float32, at *int32, idx, w int, dx0, dx1 *float32)

// copyRowsAVX is copyRows with AVX for rows of 8 values or more.
//
//go:noescape
func copyRowsAVX(dst, src *float32, rows, cols, ld, ls int)

// sumAVX sums n values, a positive multiple of 32, in 32 running sums.
//
//go:noescape
func sumAVX(p *float32, n int) float32

// simdElem is true when the processor has AVX2 (and FMA, as the other
// kernels): reluRow, maskRow, axpy, sum, copyRows and 2×2 pooling use
// the AVX kernels.
var simdElem = hasAVX2FMA()

// pauseAMD64 waits a few tens of nanoseconds with PAUSE.
//
//go:noescape
func pauseAMD64()

// cpuPause is a spinning goroutine's wait between looks (pool.go).
var cpuPause = pauseAMD64

// simdName names simdKernel.
const simdName = "avx2"

func kernelAVX2Checked(k int, a, b []float32, ldb int, c []float32, ldc int, alpha float32) {
	_, _, _ = a[k*mr-1], b[(k-1)*ldb+nr-1], c[(mr-1)*ldc+nr-1]
	kernelAVX2(k, &a[0], &b[0], &c[0], ldb, ldc, alpha)
}

func dotAVX2Checked(k int, a [3][]float32, b [4][]float32, out *[12]float32) {
	if k <= 0 || k%8 != 0 {
		panic("nn: dot kernel needs a positive multiple of 8")
	}
	_, _, _ = a[0][k-1], a[1][k-1], a[2][k-1]
	_, _, _, _ = b[0][k-1], b[1][k-1], b[2][k-1], b[3][k-1]
	dotAVX2(k, &a[0][0], &a[1][0], &a[2][0], &b[0][0], &b[1][0], &b[2][0], &b[3][0], out)
}
