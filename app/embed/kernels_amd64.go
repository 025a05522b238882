//go:build amd64 && !purego

package embed

import "golang.org/x/sys/cpu"

// simd reports whether the processor and the operating system support
// AVX2 and FMA3, which the kernels use.
var simd = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// scoresAVX2 is scoresGo over m > 0 rows of d values, d a positive
// multiple of 8.
//
//go:noescape
func scoresAVX2(d int, vals *float32, idx *int32, m int, u, v, s *float32)

// updatesAVX2 is updatesGo over m > 0 rows of d values, d a positive
// multiple of 8.
//
//go:noescape
func updatesAVX2(d int, vals, grad *float32, idx *int32, m int, c, u, v, gu, gv *float32)

func scoresSIMD(vals []float32, d int, idx []int32, u, v, s []float32) {
	if len(idx) == 0 {
		return
	}
	_, _, _ = u[d-1], v[d-1], s[2*len(idx)-1]
	scoresAVX2(d, &vals[0], &idx[0], len(idx), &u[0], &v[0], &s[0])
}

func updatesSIMD(vals, grad []float32, d int, idx []int32, c, u, v, gu, gv []float32) {
	if len(idx) == 0 {
		return
	}
	_, _, _, _, _ = c[2*len(idx)-1], u[d-1], v[d-1], gu[d-1], gv[d-1]
	updatesAVX2(d, &vals[0], &grad[0], &idx[0], len(idx), &c[0], &u[0], &v[0], &gu[0], &gv[0])
}
