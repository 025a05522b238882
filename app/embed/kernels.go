package embed

import "math"

// The inner loops of LossGrad, one edge (u, v) against all its negatives
// at once: the scores of the negatives' vectors with u and v, their
// coefficients and loss terms, then the updates that read them. On amd64
// with AVX2 and FMA, the coefficients and terms take the assembly kernel
// for any length of vector, the scores and updates for vectors of a
// multiple of 8 values; otherwise these loops in Go. The two may differ
// in the last bits (the kernels fuse multiply and add, sum in 8 lanes and
// take e^−|x| in float32), so a run is reproducible on one machine, not
// bit for bit across processors. The caller checks that every row idx[k]
// of vals and grad has d values.

// scoresGo sets s[2k] = u·e and s[2k+1] = e·v, summed in float32, for
// the row e of vals (d values each) at idx[k].
func scoresGo(vals []float32, d int, idx []int32, u, v, s []float32) {
	u, v = u[:d], v[:d]
	for k, i := range idx {
		e := vals[int(i)*d : int(i+1)*d]
		var s1, s2 float32
		for j, x := range e {
			s1 += u[j] * x
			s2 += x * v[j]
		}
		s[2*k], s[2*k+1] = s1, s2
	}
}

// updatesGo adds, for the row e of vals and ge of grad at idx[k] in
// order, c1·e to gu, c2·e to gv and c1·u + c2·v to ge, with c1 = c[2k]
// and c2 = c[2k+1].
func updatesGo(vals, grad []float32, d int, idx []int32, c, u, v, gu, gv []float32) {
	u, v, gu, gv = u[:d], v[:d], gu[:d], gv[:d]
	for k, i := range idx {
		e, ge := vals[int(i)*d:int(i+1)*d], grad[int(i)*d:int(i+1)*d]
		c1, c2 := c[2*k], c[2*k+1]
		for j, x := range e {
			gu[j] += c1 * x
			gv[j] += c2 * x
			ge[j] += c1*u[j] + c2*v[j]
		}
	}
}

// logisticsGo sets c[i] = k·σ(s[i]) for at most 512 scores s and
// returns Σ max(s[i], 0) and Π (1 + e^−|s[i]|), so that the softplus
// terms of the scores sum to lin + log(prod); each factor is at most 2,
// so prod is at most 2^512.
func logisticsGo(s, c []float32, k float32) (lin, prod float64) {
	c = c[:len(s)]
	prod = 1
	for i, f := range s {
		x := float64(f)
		e := expNeg(math.Abs(x))
		lin += max(x, 0)
		prod *= 1 + e
		c[i] = k * float32(sigmoidOf(x, e))
	}
	return lin, prod
}

// kernelsFor returns the kernels LossGrad uses for vectors of d values.
func kernelsFor(d int) (scores func(vals []float32, d int, idx []int32, u, v, s []float32), updates func(vals, grad []float32, d int, idx []int32, c, u, v, gu, gv []float32)) {
	if simd && d > 0 && d%8 == 0 {
		return scoresSIMD, updatesSIMD
	}
	return scoresGo, updatesGo
}

// logisticsFor returns the kernel LossGrad uses for the scores'
// coefficients and loss terms, given at most 512 scores padded to a
// multiple of 8 with padScore.
func logisticsFor() func(s, c []float32, k float32) (lin, prod float64) {
	if simd {
		return logisticsSIMD
	}
	return logisticsGo
}

// padScore fills the scores past an edge's own to a multiple of 8: its
// terms are 0 and its coefficient 0 in both kernels.
const padScore = -1e30
