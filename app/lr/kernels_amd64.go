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

func scoresSIMD(z, w []float32, pos []int32, val []float32) {
	W, n := len(z), len(pos)
	_ = val[n-1]
	checkRows(pos, len(w)/W)
	c := 0
	for ; c+16 <= W; c += 16 {
		scores16AVX(n, 4*W, &w[c], &pos[0], &val[0], &z[c])
	}
	for ; c+8 <= W; c += 8 {
		scores8AVX(n, 4*W, &w[c], &pos[0], &val[0], &z[c])
	}
	if c+4 <= W {
		scores4AVX(n, 4*W, &w[c], &pos[0], &val[0], &z[c])
		c += 4
	}
	scoresTail(z, w, pos, val, c)
}

func scatterSIMD(grad, d []float32, pos []int32, val []float32) {
	W, n := len(d), len(pos)
	_ = val[n-1]
	checkRows(pos, len(grad)/W)
	c := 0
	for ; c+16 <= W; c += 16 {
		scatter16AVX(n, 4*W, &grad[c], &pos[0], &val[0], &d[c])
	}
	for ; c+8 <= W; c += 8 {
		scatter8AVX(n, 4*W, &grad[c], &pos[0], &val[0], &d[c])
	}
	if c+4 <= W {
		scatter4AVX(n, 4*W, &grad[c], &pos[0], &val[0], &d[c])
		c += 4
	}
	scatterTail(grad, d, pos, val, c)
}
