//go:build amd64 && !purego

package lr

import "golang.org/x/sys/cpu"

// simd reports whether the processor and the operating system support
// AVX, which the kernels use.
var simd = cpu.X86.HasAVX

// scores8AVX sets z[0:8] = Σ_{j<n} val[j]·w[pos[j]·stride/4 + 0:8], in
// the order of j, with a multiply and an add (no FMA) as Go does; stride
// is a row's length in bytes. n > 0.
//
//go:noescape
func scores8AVX(n, stride int, w *float32, pos *int32, val *float32, z *float32)

// scores16AVX is scores8AVX for 16 classes, in one pass over the entries.
//
//go:noescape
func scores16AVX(n, stride int, w *float32, pos *int32, val *float32, z *float32)

// scores4AVX is scores8AVX for 4 classes.
//
//go:noescape
func scores4AVX(n, stride int, w *float32, pos *int32, val *float32, z *float32)

// scatter8AVX adds d[0:8]·val[j] to grad[pos[j]·stride/4 + 0:8] for each
// j < n in turn. n > 0.
//
//go:noescape
func scatter8AVX(n, stride int, grad *float32, pos *int32, val *float32, d *float32)

// scatter16AVX is scatter8AVX for 16 classes, in one pass over the
// entries.
//
//go:noescape
func scatter16AVX(n, stride int, grad *float32, pos *int32, val *float32, d *float32)

// scatter4AVX is scatter8AVX for 4 classes.
//
//go:noescape
func scatter4AVX(n, stride int, grad *float32, pos *int32, val *float32, d *float32)

// checkRows panics, as an index out of range would, unless every p of
// pos is a row of a matrix of rows rows: the kernels do not check.
func checkRows(pos []int32, rows int) {
	for _, p := range pos {
		if uint(p) >= uint(rows) {
			panic("lr: an entry's key is past the batch's keys")
		}
	}
}

// kernel is the signature of the assembly kernels: n entries, rows of
// stride bytes in mat, and the row of class values of the sample.
type kernel func(n, stride int, mat *float32, pos *int32, val *float32, row *float32)

// byBlocks runs k16, k8 and k4 over the classes of row that fill blocks
// of 16, then 8, then 4, and returns the first class left for the Go
// loop.
func byBlocks(k16, k8, k4 kernel, row, mat []float32, pos []int32, val []float32) int {
	W, n := len(row), len(pos)
	_ = val[n-1]
	checkRows(pos, len(mat)/W)
	c := 0
	for ; c+16 <= W; c += 16 {
		k16(n, 4*W, &mat[c], &pos[0], &val[0], &row[c])
	}
	for ; c+8 <= W; c += 8 {
		k8(n, 4*W, &mat[c], &pos[0], &val[0], &row[c])
	}
	if c+4 <= W {
		k4(n, 4*W, &mat[c], &pos[0], &val[0], &row[c])
		c += 4
	}
	return c
}

func scoresSIMD(z, w []float32, pos []int32, val []float32) {
	c := byBlocks(scores16AVX, scores8AVX, scores4AVX, z, w, pos, val)
	scoresTail(z, w, pos, val, c)
}

func scatterSIMD(grad, d []float32, pos []int32, val []float32) {
	c := byBlocks(scatter16AVX, scatter8AVX, scatter4AVX, d, grad, pos, val)
	scatterTail(grad, d, pos, val, c)
}
