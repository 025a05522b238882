//go:build !amd64 || purego

package nn

// simdKernel is nil: this build has only the portable kernel.
var simdKernel kernelFunc

// simdDot is nil: this build has only the portable kernel.
var simdDot dotFunc

// simdAddRows is nil: addRows adds in Go.
var simdAddRows func(dst, src *float32, rows, cols, ld, ls int)

const simdName = "none"
