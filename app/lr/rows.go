package lr

// AddRows sets z[c] = Σ_j val[j]·w[pos[j]·W + c] for the W = len(z)
// values of a row: the weighted sum of the rows pos of the matrix w (W
// values a row), with the AVX kernels where the processor has them (the
// kernels of multinomial scores; 16, 8 and 4 values a pass), else in Go,
// the same bit for bit. It is the gather of an embedding: one row with
// weight 1 copies it, several with their weights sum them. A pos past
// w's rows panics.
func AddRows(z, w []float32, pos []int32, val []float32) { scores(z, w, pos, val) }

// ScatterRows adds val[j]·d[c] to grad[pos[j]·W + c] for the W = len(d)
// values of a row: the scatter of a gradient d into the rows pos, the
// transpose of AddRows, with the same kernels.
func ScatterRows(grad, d []float32, pos []int32, val []float32) { scatter(grad, d, pos, val) }
