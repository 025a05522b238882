//go:build !amd64 || purego

package nn

// simdKernel is nil: this build has only the portable kernel.
var simdKernel kernelFunc

// simdDot is nil: this build has only the portable kernel.
var simdDot dotFunc

// simdAddRows is nil: addRows adds in Go.
var simdAddRows func(dst, src *float32, rows, cols, ld, ls int)

// simdElem is false: reluRow, maskRow, axpy, sum, copyRows and 2×2
// pooling loop in Go.
var simdElem = false

func reluAVX(*float32, int)                    { panic("nn: no AVX in this build") }
func maskAVX(*float32, *float32, int)          { panic("nn: no AVX in this build") }
func axpyAVX(*float32, *float32, int, float32) { panic("nn: no AVX in this build") }

func unpool2AVX(*float32, *int32, int, int, *float32, *float32) {
	panic("nn: no AVX in this build")
}

func copyRowsAVX(*float32, *float32, int, int, int, int) { panic("nn: no AVX in this build") }

func sumAVX(*float32, int) float32 { panic("nn: no AVX in this build") }

func pool2AVX(*float32, *float32, int, int, float32, *float32, *int32) {
	panic("nn: no AVX in this build")
}

// cpuPause is nil: a spinning goroutine yields to the scheduler between
// looks (pool.go).
var cpuPause func()

const simdName = "none"

func pool2x4AVX(*float32, *float32, int, int, float32, *float32, *int32) {
	panic("nn: no AVX in this build")
}
