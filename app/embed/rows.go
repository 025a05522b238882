package embed

import "fmt"

// Dots sets s[2k] = u·e and s[2k+1] = e·v for the rows e of vals (d
// values each) at idx[k]: the scores of LossGrad's inner loop, with the
// AVX2 kernel for d a multiple of 8 where the processor has it, else in
// Go. A model with pairwise dot products of vectors (app/ctr's
// interactions) passes a vector as both u and v and reads the even
// scores. A row past vals, or s shorter than 2·len(idx), panics.
func Dots(vals []float32, d int, idx []int32, u, v, s []float32) {
	checkRows(len(vals), d, idx, u, v)
	if len(s) < 2*len(idx) {
		panic(fmt.Sprintf("embed: Dots: %d scores for %d rows", len(s), len(idx)))
	}
	scores, _ := kernelsFor(d)
	scores(vals, d, idx, u, v, s)
}

// Updates adds, for the row e of vals and ge of grad at idx[k] in
// order, c1·e to gu, c2·e to gv and c1·u + c2·v to ge, with c1 = c[2k]
// and c2 = c[2k+1]: the gradient of the scores of Dots weighted by c,
// with LossGrad's kernels. A row past vals or grad, or c shorter than
// 2·len(idx), panics.
func Updates(vals, grad []float32, d int, idx []int32, c, u, v, gu, gv []float32) {
	checkRows(min(len(vals), len(grad)), d, idx, u, v)
	if len(c) < 2*len(idx) || len(gu) < d || len(gv) < d {
		panic(fmt.Sprintf("embed: Updates: %d coefficients for %d rows, gradients of %d and %d values for vectors of %d", len(c), len(idx), len(gu), len(gv), d))
	}
	_, updates := kernelsFor(d)
	updates(vals, grad, d, idx, c, u, v, gu, gv)
}

// checkRows panics unless every row idx[k] of a matrix of n values has d
// values and u and v have d values.
func checkRows(n, d int, idx []int32, u, v []float32) {
	if d < 1 || len(u) < d || len(v) < d {
		panic(fmt.Sprintf("embed: rows of %d values, vectors of %d and %d", d, len(u), len(v)))
	}
	rows := n / d
	for _, i := range idx {
		if i < 0 || int(i) >= rows {
			panic(fmt.Sprintf("embed: row %d outside the %d rows", i, rows))
		}
	}
}
