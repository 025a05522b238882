//go:build !amd64 || purego

package nn

// simdKernel is nil: this build has only the portable kernel.
var simdKernel kernelFunc

// simdDot is nil: this build has only the portable kernel.
var simdDot dotFunc

const simdName = "none"
