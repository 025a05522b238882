package kmeans

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"

	"colo/internal/parallel"
)

// KMeansOptions configure KMeans.
type KMeansOptions struct {
	// K is the number of clusters.
	K int
	// MaxIter bounds the Lloyd iterations; 0 means DefaultMaxIter.
	MaxIter int
	// Tol stops the iterations once the objective improves by less than
	// this fraction; 0 means DefaultTol. Iterations also stop when no
	// sample changes cluster.
	Tol float64
	// Threads is the number of goroutines of the assignment step; 0 means
	// GOMAXPROCS. The result does not depend on it.
	Threads int
}

// Defaults of KMeansOptions.
const (
	DefaultMaxIter = 150
	DefaultTol     = 1e-4
)

// Validate checks the options and names the offending field.
func (o KMeansOptions) Validate() error {
	switch {
	case o.K < 1:
		return fmt.Errorf("k %d: want at least 1", o.K)
	case o.MaxIter < 0:
		return fmt.Errorf("max iterations %d: want 0 (default) or more", o.MaxIter)
	case o.Tol < 0 || math.IsNaN(o.Tol):
		return fmt.Errorf("tolerance %g: want 0 (default) or more", o.Tol)
	case o.Threads < 0:
		return fmt.Errorf("threads %d: want 0 (all) or more", o.Threads)
	}
	return nil
}

// KMeansResult is a clustering.
type KMeansResult struct {
	// Centers holds the K cluster means as a K × d row-major matrix.
	Centers []float64
	// Assign gives the cluster of each sample.
	Assign []int
	// Sizes gives the number of samples of each cluster.
	Sizes []int
	// Objective is the sum of squared distances of the samples to the
	// centres they were last assigned to.
	Objective float64
	// Iterations is the number of assignment steps run.
	Iterations int
	// History holds the objective after each assignment step; Lloyd's
	// algorithm never increases it.
	History []float64
}

// KMeans clusters the n × d matrix x into o.K clusters with Lloyd's
// algorithm from k-means++ seeds. An empty cluster is moved to the sample
// farthest from its centre, which lowers the objective.
func KMeans(x []float32, n, d int, o KMeansOptions, rng *rand.Rand) (*KMeansResult, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if len(x) != n*d || d < 1 {
		return nil, fmt.Errorf("k-means: %d values for %d × %d", len(x), n, d)
	}
	if n < o.K {
		return nil, fmt.Errorf("k-means: %d samples for %d clusters: want at least as many samples", n, o.K)
	}
	maxIter := o.MaxIter
	if maxIter == 0 {
		maxIter = DefaultMaxIter
	}
	tol := o.Tol
	if tol == 0 {
		tol = DefaultTol
	}
	threads := o.Threads
	if threads == 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	k := o.K
	centers := make([]float64, k*d)
	for c, i := range SeedPlusPlus(x, n, d, k, rng) {
		for j, v := range x[i*d : (i+1)*d] {
			centers[c*d+j] = float64(v)
		}
	}
	res := &KMeansResult{Assign: make([]int, n), Sizes: make([]int, k)}
	for i := range res.Assign {
		res.Assign[i] = -1
	}
	dist := make([]float64, n)
	sums := make([]float64, k*d)
	for iter := 0; iter < maxIter; iter++ {
		obj, changed := assignStep(x, n, d, centers, k, res.Assign, dist, sums, res.Sizes, threads)
		res.History = append(res.History, obj)
		res.Iterations++
		// Update: each centre moves to the mean of its samples.
		for c := range k {
			if res.Sizes[c] == 0 {
				continue
			}
			for j := range d {
				centers[c*d+j] = sums[c*d+j] / float64(res.Sizes[c])
			}
		}
		reseedEmpty(x, d, centers, res.Assign, res.Sizes, dist)
		if changed == 0 || iter > 0 && res.History[iter-1]-obj <= tol*res.History[iter-1] {
			break
		}
	}
	res.Centers = centers
	res.Objective = res.History[len(res.History)-1]
	return res, nil
}

// reseedEmpty moves each empty cluster's centre to the sample farthest
// from its own centre (ties to the lowest index) and gives it that sample.
func reseedEmpty(x []float32, d int, centers []float64, assign, sizes []int, dist []float64) {
	for c, size := range sizes {
		if size > 0 {
			continue
		}
		far := -1
		for i, v := range dist {
			if sizes[assign[i]] > 1 && (far < 0 || v > dist[far]) {
				far = i
			}
		}
		if far < 0 {
			return
		}
		sizes[assign[far]]--
		assign[far] = c
		sizes[c] = 1
		dist[far] = 0
		for j, v := range x[far*d : (far+1)*d] {
			centers[c*d+j] = float64(v)
		}
	}
}

// assignBlock is the number of rows per unit of work in the assignment
// step. Partial sums are combined in block order, so the result does not
// depend on the number of goroutines.
const assignBlock = 4096

// assignStep assigns every sample to its nearest centre (ties to the lowest
// cluster), records its squared distance in dist, and returns the
// objective and the number of samples that changed cluster. It leaves the
// per-cluster sums of the samples in sums and the counts in sizes.
func assignStep(x []float32, n, d int, centers []float64, k int, assign []int, dist, sums []float64, sizes []int, threads int) (float64, int) {
	blocks := (n + assignBlock - 1) / assignBlock
	type partial struct {
		sums    []float64
		sizes   []int
		obj     float64
		changed int
	}
	parts := make([]partial, blocks)
	parallel.For(blocks, threads, func(b int) {
		p := partial{sums: make([]float64, k*d), sizes: make([]int, k)}
		for i := b * assignBlock; i < min(n, (b+1)*assignBlock); i++ {
			row := x[i*d : (i+1)*d]
			best, bestDist := 0, math.Inf(1)
			for c := range k {
				if dd := sqDist(row, centers[c*d:(c+1)*d], bestDist); dd < bestDist {
					best, bestDist = c, dd
				}
			}
			if assign[i] != best {
				p.changed++
				assign[i] = best
			}
			dist[i] = bestDist
			p.obj += bestDist
			p.sizes[best]++
			s := p.sums[best*d : (best+1)*d]
			for j, v := range row {
				s[j] += float64(v)
			}
		}
		parts[b] = p
	})
	clear(sums)
	clear(sizes)
	obj, changed := 0.0, 0
	for _, p := range parts {
		obj += p.obj
		changed += p.changed
		for c, s := range p.sizes {
			sizes[c] += s
		}
		for j, v := range p.sums {
			sums[j] += v
		}
	}
	return obj, changed
}

// sqDist returns the squared distance between a and b, or any value of at
// least bound once the partial sum reaches it.
func sqDist(a []float32, b []float64, bound float64) float64 {
	b = b[:len(a)]
	s := 0.0
	j := 0
	for ; j+4 <= len(a); j += 4 {
		d0 := float64(a[j]) - b[j]
		d1 := float64(a[j+1]) - b[j+1]
		d2 := float64(a[j+2]) - b[j+2]
		d3 := float64(a[j+3]) - b[j+3]
		s += d0*d0 + d1*d1 + d2*d2 + d3*d3
		if j&63 == 60 && s >= bound {
			return s
		}
	}
	for ; j < len(a); j++ {
		dd := float64(a[j]) - b[j]
		s += dd * dd
	}
	return s
}

// SeedPlusPlus picks k distinct seed samples of the n × d matrix x by
// k-means++: the first uniformly, each next one with probability
// proportional to its squared distance to the nearest seed so far.
func SeedPlusPlus(x []float32, n, d, k int, rng *rand.Rand) []int {
	seeds := make([]int, 0, k)
	chosen := make([]bool, n)
	near := make([]float64, n)
	for i := range near {
		near[i] = math.Inf(1)
	}
	pick := rng.IntN(n)
	for {
		seeds = append(seeds, pick)
		chosen[pick] = true
		if len(seeds) == k {
			return seeds
		}
		c := make([]float64, d)
		for j, v := range x[pick*d : (pick+1)*d] {
			c[j] = float64(v)
		}
		total := 0.0
		for i := range n {
			if chosen[i] {
				near[i] = 0
				continue
			}
			near[i] = min(near[i], sqDist(x[i*d:(i+1)*d], c, near[i]))
			total += near[i]
		}
		pick = -1
		if total > 0 {
			u := rng.Float64() * total
			for i, w := range near {
				if w > 0 {
					pick = i
					if u < w {
						break
					}
					u -= w
				}
			}
		} else {
			// Every remaining sample sits on a seed: take one uniformly.
			r := rng.IntN(n - len(seeds))
			for i := range n {
				if !chosen[i] {
					if r == 0 {
						pick = i
						break
					}
					r--
				}
			}
		}
	}
}
