//go:build amd64 && !purego

package embed

import (
	"fmt"

	"golang.org/x/sys/cpu"
)

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

// logisticAVX2 computes n scores' coefficients and terms (see
// logisticsSIMD), n a positive multiple of 8 and at most 512, so that
// prod stays below 2^512.
//
//go:noescape
func logisticAVX2(s, c *float32, n int, k float32) (lin, prod float64)

// logisticsSIMD is logisticsGo in 8 lanes of float32 (Cephes' expf for
// e^−|x|; see TestLogisticsAccuracy), len(s) a multiple of 8 and at most
// 512.
func logisticsSIMD(s, c []float32, k float32) (lin, prod float64) {
	if len(s) == 0 {
		return 0, 1
	}
	if len(s)%8 != 0 || len(s) > 512 || len(c) < len(s) {
		panic(fmt.Sprintf("embed: logisticsSIMD of %d scores into %d coefficients: want a multiple of 8, at most 512", len(s), len(c)))
	}
	return logisticAVX2(&s[0], &c[0], len(s), k)
}
