package kmeans

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// correlated returns n × d data with decaying variance along random axes.
func correlated(n, d int, seed uint64) []float32 {
	rng := rand.New(rand.NewPCG(seed, 1))
	mix := make([]float64, d*d)
	for i := range mix {
		mix[i] = rng.NormFloat64()
	}
	x := make([]float32, n*d)
	for i := range n {
		for a := range d {
			z := rng.NormFloat64() * math.Pow(0.7, float64(a)) * 3
			for j := range d {
				x[i*d+j] += float32(z * mix[a*d+j])
			}
		}
		for j := range d {
			x[i*d+j] += float32(0.5 + 0.01*rng.NormFloat64())
		}
	}
	return x
}

// TestPCAAgainstEigen checks FitPCA and Transform against the covariance
// built by its definition and decomposed directly, and against the
// singular values of the centred data.
func TestPCAAgainstEigen(t *testing.T) {
	const n, d = 400, 12
	x := correlated(n, d, 7)
	p, err := FitPCA(x, n, d, PCAOptions{Dims: 5})
	if err != nil {
		t.Fatal(err)
	}
	mean := make([]float64, d)
	for i := range n {
		for j := range d {
			mean[j] += float64(x[i*d+j]) / n
		}
	}
	centred := mat.NewDense(n, d, nil)
	for i := range n {
		for j := range d {
			centred.Set(i, j, float64(x[i*d+j])-mean[j])
		}
	}
	cov := mat.NewSymDense(d, nil)
	for a := range d {
		for b := a; b < d; b++ {
			s := 0.0
			for i := range n {
				s += centred.At(i, a) * centred.At(i, b)
			}
			cov.SetSym(a, b, s/(n-1))
		}
	}
	var eig mat.EigenSym
	if !eig.Factorize(cov, true) {
		t.Fatal("reference eigendecomposition failed")
	}
	want := eig.Values(nil)
	slices.Reverse(want)
	var vecs mat.Dense
	eig.VectorsTo(&vecs)
	var svd mat.SVD
	if !svd.Factorize(centred, mat.SVDThin) {
		t.Fatal("reference SVD failed")
	}
	sv := svd.Values(nil)
	for i := range d {
		if rel := math.Abs(p.Eigenvalues[i]-want[i]) / want[0]; rel > 1e-5 {
			t.Errorf("eigenvalue %d = %g, want %g", i, p.Eigenvalues[i], want[i])
		}
		if rel := math.Abs(p.Eigenvalues[i]-sv[i]*sv[i]/(n-1)) / want[0]; rel > 1e-5 {
			t.Errorf("eigenvalue %d = %g, singular value gives %g", i, p.Eigenvalues[i], sv[i]*sv[i]/(n-1))
		}
	}
	y := p.Transform(x, n, nil)
	for c := range p.K {
		dot := 0.0
		for j := range d {
			dot += p.Components[c*d+j] * vecs.At(j, d-1-c)
		}
		if math.Abs(math.Abs(dot)-1) > 1e-6 {
			t.Errorf("component %d: |cos| with the reference = %g, want 1", c, math.Abs(dot))
		}
		sign := math.Copysign(1, dot)
		for i := range n {
			ref := 0.0
			for j := range d {
				ref += centred.At(i, j) * vecs.At(j, d-1-c) * sign
			}
			if math.Abs(float64(y[i*p.K+c])-ref) > 1e-4*math.Sqrt(want[0]) {
				t.Fatalf("projection of sample %d on component %d = %g, want %g", i, c, y[i*p.K+c], ref)
			}
		}
	}
}

// TestPCAVariance checks the choice of K on data whose covariance is known
// exactly: points ±3e₁, ±2e₂, ±e₃ have variances 3.6, 1.6 and 0.4.
func TestPCAVariance(t *testing.T) {
	x := []float32{3, 0, 0, -3, 0, 0, 0, 2, 0, 0, -2, 0, 0, 0, 1, 0, 0, -1}
	tests := []struct {
		opt       PCAOptions
		k         int
		explained float64
	}{
		{PCAOptions{Variance: 0.5}, 1, 3.6 / 5.6},
		{PCAOptions{Variance: 0.7}, 2, 5.2 / 5.6},
		{PCAOptions{Variance: 5.2 / 5.6}, 2, 5.2 / 5.6},
		{PCAOptions{Variance: 0.95}, 3, 1},
		{PCAOptions{Variance: 1}, 3, 1},
		{PCAOptions{Dims: 2, Variance: 0.1}, 2, 5.2 / 5.6},
	}
	for _, tt := range tests {
		p, err := FitPCA(x, 6, 3, tt.opt)
		if err != nil {
			t.Fatal(err)
		}
		if p.K != tt.k || math.Abs(p.Explained()-tt.explained) > 1e-6 {
			t.Errorf("%+v: K = %d explained %g, want %d, %g", tt.opt, p.K, p.Explained(), tt.k, tt.explained)
		}
		for i, v := range []float64{3.6, 1.6, 0.4} {
			if math.Abs(p.Eigenvalues[i]-v) > 1e-6 {
				t.Errorf("eigenvalue %d = %g, want %g", i, p.Eigenvalues[i], v)
			}
		}
		for c := range p.K {
			if math.Abs(p.Components[c*3+c]-1) > 1e-9 {
				t.Errorf("component %d = %v, want e%d", c, p.Components[c*3:c*3+3], c+1)
			}
		}
	}
	for _, bad := range []struct {
		opt  PCAOptions
		want string
	}{
		{PCAOptions{Dims: 4}, "pca dims 4: want 1..3"},
		{PCAOptions{Variance: 1.5}, "pca variance 1.5"},
		{PCAOptions{}, "pca variance 0"},
	} {
		if _, err := FitPCA(x, 6, 3, bad.opt); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%+v: err = %v, want …%s…", bad.opt, err, bad.want)
		}
	}
}

// blobs returns k well-separated Gaussian blobs of m points each in d
// dimensions, and the blob of each point.
func blobs(k, m, d int, spread float64, seed uint64) ([]float32, []int) {
	rng := rand.New(rand.NewPCG(seed, 2))
	x := make([]float32, 0, k*m*d)
	var truth []int
	for c := range k {
		centre := make([]float64, d)
		for j := range centre {
			centre[j] = rng.Float64() * 100
		}
		for range m {
			for j := range d {
				x = append(x, float32(centre[j]+spread*rng.NormFloat64()))
			}
			truth = append(truth, c)
		}
	}
	return x, truth
}

func TestKMeansObjectiveNonIncreasing(t *testing.T) {
	for seed := range uint64(5) {
		x, _ := blobs(8, 300, 6, 25, seed)
		n := len(x) / 6
		res, err := KMeans(x, n, 6, KMeansOptions{K: 12, MaxIter: 100, Tol: 1e-12}, rand.New(rand.NewPCG(seed, 3)))
		if err != nil {
			t.Fatal(err)
		}
		if len(res.History) < 3 {
			t.Errorf("seed %d: only %d iterations; the test wants a longer run", seed, len(res.History))
		}
		for i := 1; i < len(res.History); i++ {
			if res.History[i] > res.History[i-1]*(1+1e-12) {
				t.Errorf("seed %d: objective rose from %g to %g at iteration %d", seed, res.History[i-1], res.History[i], i)
			}
		}
		// The reported objective is the sum of squared distances to the
		// centres each sample was assigned to.
		sizes := make([]int, 12)
		for _, c := range res.Assign {
			sizes[c]++
		}
		if !slices.Equal(sizes, res.Sizes) {
			t.Errorf("sizes %v, assignment gives %v", res.Sizes, sizes)
		}
	}
}

func TestKMeansFindsBlobs(t *testing.T) {
	x, truth := blobs(5, 200, 3, 0.5, 11)
	res, err := KMeans(x, len(truth), 3, KMeansOptions{K: 5}, rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	of := map[int]int{}
	for i, c := range res.Assign {
		if prev, ok := of[truth[i]]; ok && prev != c {
			t.Fatalf("blob %d split between clusters %d and %d", truth[i], prev, c)
		}
		of[truth[i]] = c
	}
	seen := map[int]bool{}
	for _, c := range of {
		seen[c] = true
	}
	if len(seen) != 5 {
		t.Errorf("5 blobs in %d clusters", len(seen))
	}
}

func TestKMeansThreadsIndependent(t *testing.T) {
	x, truth := blobs(6, 2000, 4, 20, 3)
	n := len(truth)
	var first *KMeansResult
	for _, threads := range []int{1, 2, 5} {
		res, err := KMeans(x, n, 4, KMeansOptions{K: 9, Threads: threads}, rand.New(rand.NewPCG(9, 9)))
		if err != nil {
			t.Fatal(err)
		}
		if first == nil {
			first = res
			continue
		}
		if !slices.Equal(res.Assign, first.Assign) || !slices.Equal(res.History, first.History) {
			t.Errorf("threads %d: result differs from threads 1", threads)
		}
	}
}

func TestKMeansDuplicates(t *testing.T) {
	// Two distinct points, five copies each, three clusters: seeding must
	// still return distinct samples and no cluster may stay empty.
	x := []float32{0, 0, 0, 0, 0, 5, 5, 5, 5, 5}
	res, err := KMeans(x, 10, 1, KMeansOptions{K: 3}, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	if res.Objective != 0 {
		t.Errorf("objective %g, want 0", res.Objective)
	}
	seeds := SeedPlusPlus(x, 10, 1, 10, rand.New(rand.NewPCG(3, 4)))
	slices.Sort(seeds)
	if !slices.Equal(seeds, []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}) {
		t.Errorf("seeds %v are not distinct", seeds)
	}
	if _, err := KMeans(x, 10, 1, KMeansOptions{K: 11}, rand.New(rand.NewPCG(1, 2))); err == nil {
		t.Error("more clusters than samples: no error")
	}
}
