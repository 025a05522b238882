// Package vec computes batches of float32 dot products, the inner loop of
// similarity matrices, covariances and projections in package shard.
//
// Dots forms every product between the rows of two row-major matrices.
// On amd64 with AVX2 and FMA it runs an assembly kernel that computes a
// 2 × 4 block of products per pass over the rows (8 fused multiply-adds
// per 6 loads of 8 floats); elsewhere a portable Go kernel of the same
// shape. The work is tiled so that four rows of b stay in the L1 cache while
// a tile of rows of a, held in L2, streams past them.
//
// Cost: ma·mb·dim multiply-adds, no allocation.
//
// Example:
//
//	out := make([]float32, ma*mb)
//	vec.Dots(a, ma, b, mb, dim, out, mb) // out[i*mb+j] = a_i · b_j
package vec

import "fmt"

// aTile is the number of rows of a kept in L2 while the rows of b go by.
const aTile = 128

// Dots writes out[i*ldo+j] = Σ_k a[i*dim+k]·b[j*dim+k] for every row i of
// the ma × dim matrix a and row j of the mb × dim matrix b. Products are
// summed in float32 in a fixed order that does not depend on the other
// rows, so a product is the same whatever blocks it is computed in.
func Dots(a []float32, ma int, b []float32, mb int, dim int, out []float32, ldo int) {
	if len(a) < ma*dim || len(b) < mb*dim || ldo < mb || ma > 0 && len(out) < (ma-1)*ldo+mb {
		panic(fmt.Sprintf("vec: Dots of %d × %d by %d × %d into %d values with stride %d: slices too short", ma, dim, mb, dim, len(out), ldo))
	}
	if ma == 0 || mb == 0 {
		return
	}
	if dim == 0 {
		for i := range ma {
			clear(out[i*ldo : i*ldo+mb])
		}
		return
	}
	body := dim &^ 7 // the kernel's part; the tail is added in Go
	var res [8]float32
	row := func(m []float32, i, last int) []float32 {
		i = min(i, last) // past the edge: repeat the last row, discard later
		return m[i*dim : (i+1)*dim]
	}
	// Four rows of b stay in L1 while a tile of a's rows, held in L2,
	// streams past them two rows at a time.
	for i0 := 0; i0 < ma; i0 += aTile {
		i1 := min(ma, i0+aTile)
		for j := 0; j < mb; j += 4 {
			b0, b1, b2, b3 := row(b, j, mb-1), row(b, j+1, mb-1), row(b, j+2, mb-1), row(b, j+3, mb-1)
			for i := i0; i < i1; i += 2 {
				a0, a1 := row(a, i, ma-1), row(a, i+1, ma-1)
				if body > 0 {
					dot2x4(&a0[0], &a1[0], &b0[0], &b1[0], &b2[0], &b3[0], body, &res)
				} else {
					res = [8]float32{}
				}
				if body < dim {
					tail2x4(a0, a1, b0, b1, b2, b3, body, &res)
				}
				for r := range 2 {
					if i+r >= i1 {
						break
					}
					o := out[(i+r)*ldo:]
					for c := range 4 {
						if j+c < mb {
							o[j+c] = res[4*r+c]
						}
					}
				}
			}
		}
	}
}

// tail2x4 adds the products of elements from..dim-1 to res.
func tail2x4(a0, a1, b0, b1, b2, b3 []float32, from int, res *[8]float32) {
	for k := from; k < len(a0); k++ {
		res[0] += a0[k] * b0[k]
		res[1] += a0[k] * b1[k]
		res[2] += a0[k] * b2[k]
		res[3] += a0[k] * b3[k]
		res[4] += a1[k] * b0[k]
		res[5] += a1[k] * b1[k]
		res[6] += a1[k] * b2[k]
		res[7] += a1[k] * b3[k]
	}
}

// dot2x4Go is the portable kernel: res[4r+c] = a_r · b_c over the first n
// elements (n a multiple of 8), summed in eight lanes like the assembly.
func dot2x4Go(a0, a1, b0, b1, b2, b3 []float32, n int, res *[8]float32) {
	var acc [8][8]float32
	for k := 0; k < n; k += 8 {
		for l := range 8 {
			x0, x1 := a0[k+l], a1[k+l]
			y0, y1, y2, y3 := b0[k+l], b1[k+l], b2[k+l], b3[k+l]
			acc[0][l] += x0 * y0
			acc[1][l] += x0 * y1
			acc[2][l] += x0 * y2
			acc[3][l] += x0 * y3
			acc[4][l] += x1 * y0
			acc[5][l] += x1 * y1
			acc[6][l] += x1 * y2
			acc[7][l] += x1 * y3
		}
	}
	for r := range 8 {
		a := acc[r]
		res[r] = ((a[0] + a[4]) + (a[2] + a[6])) + ((a[1] + a[5]) + (a[3] + a[7]))
	}
}

// SumPosDiff returns Σ_i max(a[i] - b[i], 0) over the elements of a (b
// must be at least as long), summed in float32 in a fixed order. Each
// term, and so the sum, can only shrink when an element of b grows.
func SumPosDiff(a, b []float32) float32 {
	b = b[:len(a)]
	n := len(a) &^ 31
	var s float32
	if n > 0 {
		s = sumPosDiff(a[:n], b[:n])
	}
	for i := n; i < len(a); i++ {
		s += max(a[i]-b[i], 0)
	}
	return s
}

// sumPosDiffGo is the portable kernel for len(a) a multiple of 32, summed
// in 32 lanes like the assembly.
func sumPosDiffGo(a, b []float32) float32 {
	var acc [32]float32
	for k := 0; k < len(a); k += 32 {
		for l := range 32 {
			acc[l] += max(a[k+l]-b[k+l], 0)
		}
	}
	// Lanes are combined as the assembly does: the four 8-lane
	// accumulators pairwise, then the 8 lanes.
	var v [8]float32
	for l := range 8 {
		v[l] = (acc[l] + acc[8+l]) + (acc[16+l] + acc[24+l])
	}
	return ((v[0] + v[4]) + (v[2] + v[6])) + ((v[1] + v[5]) + (v[3] + v[7]))
}
