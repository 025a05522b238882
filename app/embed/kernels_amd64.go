//go:build amd64 && !purego

package embed

import "golang.org/x/sys/cpu"

// simd reports whether the processor and the operating system support
// AVX2 and FMA3, which the kernels use.
var simd = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// dot2AVX2 sets *s1 = u·e and *s2 = e·v over n values, n a positive
// multiple of 8.
//
//go:noescape
func dot2AVX2(n int, u, v, e *float32, s *[2]float32)

// update3AVX2 is update3Go over n values, n a positive multiple of 8.
//
//go:noescape
func update3AVX2(n int, c1, c2 float32, u, v, e, gu, gv, ge *float32)

func dot2SIMD(u, v, e []float32) (float32, float32) {
	n := len(e)
	_, _ = u[n-1], v[n-1]
	var s [2]float32
	dot2AVX2(n, &u[0], &v[0], &e[0], &s)
	return s[0], s[1]
}

func update3SIMD(c1, c2 float32, u, v, e, gu, gv, ge []float32) {
	n := len(e)
	_, _, _, _, _ = u[n-1], v[n-1], gu[n-1], gv[n-1], ge[n-1]
	update3AVX2(n, c1, c2, &u[0], &v[0], &e[0], &gu[0], &gv[0], &ge[0])
}
