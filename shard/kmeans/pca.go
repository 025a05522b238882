// Package kmeans holds the two unsupervised steps of distribution-aware
// sharding (seed 004 §III-B, Fig. 6, lines 7–8): principal component
// analysis to summarise the data with little loss, and k-means with
// k-means++ seeding to find its neighbourhoods.
//
// Both work on an n × d float32 matrix in row-major order and never modify
// it. The covariance is accumulated over blocks of rows from float32 dot
// products (an AVX2 kernel on amd64) into float64 and decomposed with
// gonum's mat.EigenSym; k-means runs Lloyd's iterations with the
// assignment step split over goroutines in fixed blocks of rows. Results
// do not depend on the number of threads.
//
// Cost: FitPCA is O(n·d² + d³) time and O(d²) extra space; Transform is
// O(n·d·k). KMeans is O(n·k·p) per iteration for p dimensions and stops
// after MaxIter iterations (seed 004 caps scikit-learn's at 150) or when
// the objective improves by less than Tol.
//
// Example:
//
//	p, err := kmeans.FitPCA(x, n, d, kmeans.PCAOptions{Variance: 0.9})
//	if err != nil {
//		return err
//	}
//	y := p.Transform(x, n, nil) // n × p.K
//	km, err := kmeans.KMeans(y, n, p.K, kmeans.KMeansOptions{K: 20}, rng)
//	// km.Assign[i] is the neighbourhood of sample i.
package kmeans

import (
	"fmt"
	"math"

	"runtime"

	"gonum.org/v1/gonum/mat"

	"colo/internal/parallel"
	"colo/shard/internal/vec"
)

// PCAOptions choose how many principal components to keep.
type PCAOptions struct {
	// Dims is the number of components to keep; 0 uses Variance.
	Dims int
	// Variance keeps the fewest components whose variance is at least this
	// fraction of the total, in (0, 1]. Used when Dims is 0.
	Variance float64
	// Threads bounds the goroutines forming the covariance; 0 means
	// GOMAXPROCS. The result does not depend on it.
	Threads int
}

// Validate checks the options against data of d dimensions and names the
// offending field.
func (o PCAOptions) Validate(d int) error {
	switch {
	case o.Dims < 0 || o.Dims > d:
		return fmt.Errorf("pca dims %d: want 1..%d (the data's dimension), or 0 to use the variance fraction", o.Dims, d)
	case o.Dims == 0 && !(o.Variance > 0 && o.Variance <= 1):
		return fmt.Errorf("pca variance %g: want a fraction in (0, 1]", o.Variance)
	case o.Threads < 0:
		return fmt.Errorf("threads %d: want 0 (all) or more", o.Threads)
	}
	return nil
}

// PCA is a fitted principal component analysis.
type PCA struct {
	// Mean is the mean of the data, d values.
	Mean []float64
	// Components holds the K kept principal axes as unit rows of a K × d
	// matrix, by decreasing variance. The sign of each axis is fixed so
	// that its largest-magnitude entry is positive.
	Components []float64
	// Eigenvalues holds the variance along every principal axis (all d of
	// them), in decreasing order: the eigenvalues of the sample covariance
	// with divisor n-1.
	Eigenvalues []float64
	// K is the number of kept components and D the data's dimension.
	K, D int
}

// rowBlock is the number of rows processed at once, and stripe the number
// of covariance rows per unit of parallel work.
const (
	rowBlock = 1024
	stripe   = 64
)

// FitPCA computes the principal components of the n × d matrix x.
func FitPCA(x []float32, n, d int, o PCAOptions) (*PCA, error) {
	if n < 2 || d < 1 || len(x) != n*d {
		return nil, fmt.Errorf("pca: %d values for %d × %d: want at least 2 rows", len(x), n, d)
	}
	if err := o.Validate(d); err != nil {
		return nil, err
	}
	mean := make([]float64, d)
	for i := range n {
		for j, v := range x[i*d : (i+1)*d] {
			mean[j] += float64(v)
		}
	}
	for j := range mean {
		mean[j] /= float64(n)
	}
	mean32 := make([]float32, d)
	for j, m := range mean {
		mean32[j] = float32(m)
	}

	// cov = Σ (x_i - μ)(x_i - μ)ᵀ, one block of rows at a time: the block
	// is centred and transposed to d × m, and the dot products of its rows
	// form the upper triangle of the block's d × d product, split over
	// goroutines by stripes of rows.
	threads := o.Threads
	if threads == 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	cov := make([]float64, d*d)
	part := make([]float32, d*d)
	tr := make([]float32, d*min(n, rowBlock))
	stripes := (d + stripe - 1) / stripe
	for r0 := 0; r0 < n; r0 += rowBlock {
		m := min(n-r0, rowBlock)
		for i := range m {
			row := x[(r0+i)*d : (r0+i+1)*d]
			for j, v := range row {
				tr[j*m+i] = v - mean32[j]
			}
		}
		parallel.For(stripes, threads, func(s int) {
			a0, a1 := s*stripe, min(d, (s+1)*stripe)
			vec.Dots(tr[a0*m:a1*m], a1-a0, tr[a0*m:d*m], d-a0, m, part[a0*d+a0:], d)
		})
		for i := range d {
			for j := i; j < d; j++ {
				cov[i*d+j] += float64(part[i*d+j])
			}
		}
	}
	sym := mat.NewSymDense(d, nil)
	for i := range d {
		for j := i; j < d; j++ {
			sym.SetSym(i, j, cov[i*d+j]/float64(n-1))
		}
	}
	var eig mat.EigenSym
	if !eig.Factorize(sym, true) {
		return nil, fmt.Errorf("pca: eigendecomposition of the %d × %d covariance did not converge", d, d)
	}
	values := eig.Values(nil) // ascending
	var vecs mat.Dense
	eig.VectorsTo(&vecs)

	p := &PCA{Mean: mean, Eigenvalues: make([]float64, d), D: d}
	total := 0.0
	for i := range d {
		p.Eigenvalues[i] = max(values[d-1-i], 0)
		total += p.Eigenvalues[i]
	}
	p.K = o.Dims
	if p.K == 0 {
		p.K = d
		acc := 0.0
		for i, v := range p.Eigenvalues {
			acc += v
			if total == 0 || acc >= o.Variance*total*(1-1e-12) {
				p.K = i + 1
				break
			}
		}
	}
	p.Components = make([]float64, p.K*d)
	for c := range p.K {
		col := d - 1 - c
		row := p.Components[c*d : (c+1)*d]
		big := 0
		for j := range d {
			row[j] = vecs.At(j, col)
			if math.Abs(row[j]) > math.Abs(row[big]) {
				big = j
			}
		}
		if row[big] < 0 {
			for j := range row {
				row[j] = -row[j]
			}
		}
	}
	return p, nil
}

// Explained returns the fraction of the total variance that the kept
// components carry.
func (p *PCA) Explained() float64 {
	total, kept := 0.0, 0.0
	for i, v := range p.Eigenvalues {
		total += v
		if i < p.K {
			kept += v
		}
	}
	if total == 0 {
		return 1
	}
	return kept / total
}

// Transform projects the n × D matrix x onto the kept components and
// returns the n × K result in dst, which is grown when too short.
func (p *PCA) Transform(x []float32, n int, dst []float32) []float32 {
	d, k := p.D, p.K
	if len(x) != n*d {
		panic(fmt.Sprintf("cluster: Transform of %d values as %d × %d", len(x), n, d))
	}
	if cap(dst) < n*k {
		dst = make([]float32, n*k)
	}
	dst = dst[:n*k]
	w := make([]float32, k*d)
	for i, v := range p.Components {
		w[i] = float32(v)
	}
	mean32 := make([]float32, d)
	for j, m := range p.Mean {
		mean32[j] = float32(m)
	}
	block := make([]float32, min(n, rowBlock)*d)
	for r0 := 0; r0 < n; r0 += rowBlock {
		m := min(n-r0, rowBlock)
		for i := range m {
			src := x[(r0+i)*d : (r0+i+1)*d]
			row := block[i*d : (i+1)*d]
			for j, v := range src {
				row[j] = v - mean32[j]
			}
		}
		vec.Dots(block[:m*d], m, w, k, d, dst[r0*k:(r0+m)*k], k)
	}
	return dst
}
