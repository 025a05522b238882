//go:build !amd64 || purego

package embed

// simd is false: no assembly kernels on this platform.
const simd = false

func dot2SIMD(u, v, e []float32) (float32, float32) { return dot2Go(u, v, e) }

func update3SIMD(c1, c2 float32, u, v, e, gu, gv, ge []float32) {
	update3Go(c1, c2, u, v, e, gu, gv, ge)
}
