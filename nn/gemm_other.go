//go:build !amd64 || purego

package nn

// simdKernel is nil: this build has only the portable kernel.
var simdKernel kernelFunc

// simdDot is nil: this build has only the portable kernel.
var simdDot dotFunc

// simdAddRows is nil: addRows adds in Go.
var simdAddRows func(dst, src *float32, rows, cols, ld, ls int)

// cpuPause is nil: a spinning goroutine yields to the scheduler between
// looks (pool.go).
var cpuPause func()

const simdName = "none"
