package embed

// The inner loops of LossGrad, on whole vectors: each negative of an edge
// needs two dot products with one shared vector and three updates that
// read it, done in one pass each. On amd64 with AVX2 and FMA, vectors of
// a multiple of 8 values take the assembly kernels; otherwise these loops
// in Go. The two may differ in the last bits (the kernels fuse multiply
// and add and sum in 8 lanes), so a run is reproducible on one machine,
// not bit for bit across processors.

// dot2Go returns u·e and e·v, summed in float32.
func dot2Go(u, v, e []float32) (float32, float32) {
	u, v = u[:len(e)], v[:len(e)]
	var s1, s2 float32
	for j, x := range e {
		s1 += u[j] * x
		s2 += x * v[j]
	}
	return s1, s2
}

// update3Go adds c1·e to gu, c2·e to gv and c1·u + c2·v to ge.
func update3Go(c1, c2 float32, u, v, e, gu, gv, ge []float32) {
	n := len(e)
	u, v, gu, gv, ge = u[:n], v[:n], gu[:n], gv[:n], ge[:n]
	for j, x := range e {
		gu[j] += c1 * x
		gv[j] += c2 * x
		ge[j] += c1*u[j] + c2*v[j]
	}
}

// dot2 and update3 are the kernels LossGrad uses for vectors of d values.
func kernelsFor(d int) (dot2 func(u, v, e []float32) (float32, float32), update3 func(c1, c2 float32, u, v, e, gu, gv, ge []float32)) {
	if simd && d > 0 && d%8 == 0 {
		return dot2SIMD, update3SIMD
	}
	return dot2Go, update3Go
}
