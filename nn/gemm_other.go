//go:build !amd64 || purego

package nn

// simdKernel is nil: this build has only the portable kernel.
var simdKernel kernelFunc

const simdName = "none"
