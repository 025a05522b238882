//go:build !amd64 || purego

package lr

// simd is false: no assembly kernels on this platform.
const simd = false

func scoresSIMD(z, w []float32, pos []int32, val []float32) { scoresGo(z, w, pos, val) }

func scatterSIMD(grad, d []float32, pos []int32, val []float32) { scatterGo(grad, d, pos, val) }
