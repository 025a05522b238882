package shard

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"colo/dataset"
)

// The benchmarks and tests on real data read Fashion-MNIST from the shared
// data directory, two levels above the repository's packages, and skip
// when it is absent.
var fashion struct {
	sync.Once
	d   *dataset.Dataset
	err error
}

func fashionTrain(tb testing.TB) *dataset.Dataset {
	tb.Helper()
	dir := filepath.Join("..", "..", "shared", "data", "fashion-mnist")
	images := filepath.Join(dir, "train-images-idx3-ubyte.gz")
	if _, err := os.Stat(images); err != nil {
		tb.Skipf("Fashion-MNIST is not at %s (%v): skipping the measurement on real data", dir, err)
	}
	fashion.Do(func() {
		fashion.d, fashion.err = dataset.Load(images, dataset.LoadOptions{Labels: filepath.Join(dir, "train-labels-idx1-ubyte.gz")})
	})
	if fashion.err != nil {
		tb.Fatal(fashion.err)
	}
	return fashion.d
}

// TestFashionStratified checks seed 004's setup, 12 workers on
// Fashion-MNIST's 60,000 training images: stratified class counts differ
// by at most one between shards. It logs how far random and roundrobin
// shards are off.
func TestFashionStratified(t *testing.T) {
	d := fashionTrain(t)
	for _, scheme := range []Scheme{SchemeRandom, SchemeRoundRobin, SchemeStratified} {
		o := DefaultOptions()
		o.Workers, o.Scheme = 12, scheme
		res, err := Shard(d, o, rand.New(rand.NewPCG(1, 0)))
		if err != nil {
			t.Fatal(err)
		}
		s, err := Summarize(d, res, SummaryOptions{CoverageSample: -1}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%-10s class-count spread %3d, max |count-target| %5.1f, max proportion deviation %.4f",
			scheme, s.MaxClassCountSpread, s.MaxClassCountDeviation, s.MaxProportionDeviation)
		if scheme == SchemeStratified && (s.MaxClassCountSpread > 1 || s.MaxSizeDeviation >= 1) {
			t.Errorf("stratified: class counts differ by %d, sizes by %g from target; want ≤ 1", s.MaxClassCountSpread, s.MaxSizeDeviation)
		}
	}
}

// TestFashionSubmodularSubset runs ratio-constrained submodular sharding
// on 1,200 images of two classes (the full run is a benchmark).
func TestFashionSubmodularSubset(t *testing.T) {
	if testing.Short() {
		t.Skip("short: skipping submodular sharding on real data")
	}
	d := fashionTrain(t)
	byClass := d.ByClass()
	sub := d.Subset(append(first600(byClass[0]), first600(byClass[6])...))
	o := DefaultOptions()
	o.Workers, o.Scheme, o.Ratios = 4, SchemeSubmodular, []float64{1, 2, 4, 8}
	rng := rand.New(rand.NewPCG(1, 0))
	res, err := Shard(sub, o, rng)
	if err != nil {
		t.Fatal(err)
	}
	s, err := Summarize(sub, res, SummaryOptions{Ratios: o.Ratios}, rng)
	if err != nil {
		t.Fatal(err)
	}
	if s.MaxSizeDeviation >= 1 || s.MaxClassCountDeviation >= 1 {
		t.Errorf("size deviation %g, count deviation %g; want < 1", s.MaxSizeDeviation, s.MaxClassCountDeviation)
	}
	if s.MeanCoverage <= s.MeanBaselineCoverage {
		t.Errorf("mean coverage %.4f not above random shards' %.4f", s.MeanCoverage, s.MeanBaselineCoverage)
	}
	t.Logf("coverage %.4f vs random %.4f, min gain %+.4f", s.MeanCoverage, s.MeanBaselineCoverage, s.MinCoverageGain)
}

func first600(s []int) []int { return s[:min(600, len(s))] }

// BenchmarkDistAwareFashion measures seed 004's distribution-aware
// sharding with 12 workers and 20 clusters (PCA to 90% of the variance).
func BenchmarkDistAwareFashion(b *testing.B) {
	d := fashionTrain(b)
	o := DefaultOptions()
	o.Workers, o.Scheme, o.Clusters = 12, SchemeDistAware, 20
	for b.Loop() {
		res, err := Shard(d, o, rand.New(rand.NewPCG(1, 0)))
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(res.PCADims), "pca-dims")
		b.ReportMetric(float64(res.KMeansIterations), "kmeans-iters")
		broadcast := 0
		for _, c := range res.Clusters {
			if c.Broadcast {
				broadcast++
			}
		}
		b.ReportMetric(float64(broadcast), "broadcast-clusters")
	}
}

// BenchmarkSubmodularFashion measures seed 003's ratio-constrained
// submodular sharding on 4 workers with ratios 1:2:4:8, and reports the
// summary's deviations and coverage gain over random shards of the same
// counts (the summary itself is not timed).
func BenchmarkSubmodularFashion(b *testing.B) {
	d := fashionTrain(b)
	for _, bc := range []struct {
		name     string
		function Function
		grow     Grow
		greedy   Greedy
	}{
		{"facility-lazy", FacilityLocation, GrowMinF, GreedyLazy},
		{"facility-lazy-proportional", FacilityLocation, GrowProportional, GreedyLazy},
		{"facility-stochastic", FacilityLocation, GrowMinF, GreedyStochastic},
		{"graphcut-lazy", GraphCut, GrowMinF, GreedyLazy},
	} {
		b.Run(bc.name, func(b *testing.B) {
			o := DefaultOptions()
			o.Workers, o.Scheme, o.Ratios = 4, SchemeSubmodular, []float64{1, 2, 4, 8}
			o.Function, o.Grow, o.Greedy = bc.function, bc.grow, bc.greedy
			var res *Result
			for b.Loop() {
				var err error
				if res, err = Shard(d, o, rand.New(rand.NewPCG(1, 0))); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			s, err := Summarize(d, res, SummaryOptions{Ratios: o.Ratios}, rand.New(rand.NewPCG(2, 0)))
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(res.Evaluations), "evaluations")
			b.ReportMetric(s.MaxSizeDeviation, "size-dev")
			b.ReportMetric(s.MaxClassCountDeviation, "count-dev")
			b.ReportMetric(s.MeanCoverage-s.MeanBaselineCoverage, "mean-cov-gain")
			b.ReportMetric(s.MinCoverageGain, "min-cov-gain")
		})
	}
}

// BenchmarkSummaryFashion measures the summary of a stratified 12-way
// sharding, coverage included.
func BenchmarkSummaryFashion(b *testing.B) {
	d := fashionTrain(b)
	res := &Result{Assign: Stratified(d.Labels, d.Classes, 12), Workers: 12, Scheme: SchemeStratified}
	for b.Loop() {
		if _, err := Summarize(d, res, SummaryOptions{}, rand.New(rand.NewPCG(1, 0))); err != nil {
			b.Fatal(err)
		}
	}
}
