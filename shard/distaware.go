package shard

import (
	"fmt"
	"math/rand/v2"
	"strconv"

	"colo/dataset"
	"colo/shard/kmeans"
)

// DistAware is distribution-aware sharding (seed 004 §III-B, Fig. 6): the
// samples are projected on their principal components (o.PCADims, or as
// many as carry o.PCAVariance of the variance), clustered by k-means into
// o.Clusters neighbourhoods (default twice the number of classes), and
// each cluster is dealt round-robin to the workers; a cluster with fewer
// samples than workers is broadcast to all of them.
func DistAware(d *dataset.Dataset, o Options, rng *rand.Rand) (*Result, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	n := d.Len()
	k := o.Clusters
	if k == 0 {
		k = 2 * d.Classes
	}
	if k > n {
		return nil, fmt.Errorf("clusters %d: more than the %d samples", k, n)
	}
	progress := serialProgress(o.Progress)
	progress("pca", 0, 3)
	var (
		x   = d.Features
		dim = d.Dim
		res = &Result{Workers: o.Workers, Scheme: SchemeDistAware, PCADims: d.Dim, PCAExplained: 1}
	)
	if n >= 2 {
		p, err := kmeans.FitPCA(d.Features, n, d.Dim, kmeans.PCAOptions{Dims: o.PCADims, Variance: o.PCAVariance, Threads: o.Threads})
		if err != nil {
			return nil, err
		}
		x, dim = p.Transform(d.Features, n, nil), p.K
		res.PCADims, res.PCAExplained = p.K, p.Explained()
	}
	progress("k-means", 1, 3)
	km, err := kmeans.KMeans(x, n, dim, kmeans.KMeansOptions{
		K: k, MaxIter: o.KMeansIters, Tol: o.KMeansTol, Threads: o.Threads,
	}, rng)
	if err != nil {
		return nil, err
	}
	res.KMeansIterations, res.KMeansObjective = km.Iterations, km.Objective
	progress("assign", 2, 3)
	res.Assign = AssignClusters(km.Assign, k, o.Workers)
	res.Clusters = make([]Cluster, k)
	for c, size := range km.Sizes {
		res.Clusters[c] = Cluster{Size: size, Broadcast: size < o.Workers}
	}
	progress("done", 3, 3)
	return res, nil
}

// AssignClusters deals the samples of each cluster round-robin in
// increasing order, carrying the rotation from one cluster to the next, and
// broadcasts every cluster with fewer samples than workers (seed 004
// Fig. 6, lines 10–24).
func AssignClusters(clusterOf []int, clusters, workers int) []int {
	members := make([][]int, clusters)
	for i, c := range clusterOf {
		members[c] = append(members[c], i)
	}
	assign := make([]int, len(clusterOf))
	next := 0
	for _, m := range members {
		if len(m) < workers {
			for _, i := range m {
				assign[i] = Broadcast
			}
			continue
		}
		next = dealRoundRobin(m, assign, next, workers)
	}
	return assign
}

// serialProgress returns a progress function that does nothing when p is
// nil. Callers that report from several goroutines serialise themselves.
func serialProgress(p func(string, int, int)) func(string, int, int) {
	if p == nil {
		return func(string, int, int) {}
	}
	return p
}

func parseFloat(s string) (float64, error) { return strconv.ParseFloat(s, 64) }
