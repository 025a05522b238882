package shard

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"

	"colo/dataset"
	"colo/internal/parallel"
)

// DefaultCoverageSample is the default number of reference samples per
// class for the coverage figures of Summarize.
const DefaultCoverageSample = 500

// DefaultBaselineDraws is the default number of random splits behind the
// baseline coverage.
const DefaultBaselineDraws = 5

// SummaryOptions configure Summarize.
type SummaryOptions struct {
	// Ratios are the relative shard sizes the targets follow; nil means
	// equal. Pass the ratios the assignment was made with.
	Ratios []float64
	// Sigma is the kernel width of the coverage; 0 uses each class's
	// median pairwise distance, as Submodular does.
	Sigma float64
	// CoverageSample is the number of reference samples per class (drawn
	// uniformly) over which coverage is averaged; 0 means
	// DefaultCoverageSample and a negative value skips coverage.
	CoverageSample int
	// BaselineDraws is the number of random splits whose coverage is
	// averaged into the baseline; 0 means DefaultBaselineDraws.
	BaselineDraws int
	// Threads bounds the goroutines; 0 means GOMAXPROCS.
	Threads int
}

// Validate checks the options against a number of workers and names the
// offending field.
func (o SummaryOptions) Validate(workers int) error {
	if o.Ratios != nil {
		if len(o.Ratios) != workers {
			return fmt.Errorf("ratios: %d values for %d workers", len(o.Ratios), workers)
		}
		for j, r := range o.Ratios {
			if !(r > 0) || math.IsInf(r, 0) {
				return fmt.Errorf("ratio %d is %g: want a finite number > 0", j+1, r)
			}
		}
	}
	if o.Sigma < 0 || math.IsNaN(o.Sigma) || math.IsInf(o.Sigma, 0) {
		return fmt.Errorf("sigma %g: want 0 (median heuristic) or a finite number > 0", o.Sigma)
	}
	if o.Threads < 0 {
		return fmt.Errorf("threads %d: want 0 (all) or more", o.Threads)
	}
	if o.BaselineDraws < 0 {
		return fmt.Errorf("baseline draws %d: want 0 (default) or more", o.BaselineDraws)
	}
	return nil
}

// Summary describes the quality of an assignment. A worker's shard is the
// samples assigned to it plus every broadcast sample.
type Summary struct {
	Scheme           Scheme    `json:"scheme"`
	Samples          int       `json:"samples"`
	Dim              int       `json:"dim"`
	Classes          int       `json:"classes"`
	Workers          int       `json:"workers"`
	Ratios           []float64 `json:"ratios"`
	BroadcastSamples int       `json:"broadcast_samples"`

	// Shards describes each worker's shard.
	Shards []ShardSummary `json:"shards"`
	// MaxSizeDeviation is the largest |size - target| over the shards.
	MaxSizeDeviation float64 `json:"max_size_deviation"`
	// MaxClassCountDeviation is the largest |count - target| over shards
	// and classes.
	MaxClassCountDeviation float64 `json:"max_class_count_deviation"`
	// MaxClassCountSpread is the largest difference between two shards'
	// counts of one class (meaningful for equal ratios).
	MaxClassCountSpread int `json:"max_class_count_spread"`
	// MaxProportionDeviation is the largest difference between a class's
	// share of a shard and its share of the whole set.
	MaxProportionDeviation float64 `json:"max_proportion_deviation"`

	// PerClass describes how alike the shards are inside each class.
	PerClass []ClassSummary `json:"per_class"`
	// CoverageReference is the number of reference samples per class
	// behind the coverage figures (0 when skipped).
	CoverageReference int `json:"coverage_reference"`
	// MeanCoverage and MeanBaselineCoverage average the coverage of the
	// shards and of random shards with the same per-class counts over
	// classes and shards; MinCoverageGain is the smallest difference
	// between the two for one class and shard.
	MeanCoverage         float64 `json:"mean_coverage"`
	MeanBaselineCoverage float64 `json:"mean_baseline_coverage"`
	MinCoverageGain      float64 `json:"min_coverage_gain"`
	// MaxMeanDistance is the largest distance between two shards' means
	// of one class, in units of the class's σ.
	MaxMeanDistance float64 `json:"max_mean_distance"`

	// Distribution-aware sharding only.
	PCADims           int       `json:"pca_dims,omitempty"`
	PCAExplained      float64   `json:"pca_explained,omitempty"`
	KMeansIterations  int       `json:"kmeans_iterations,omitempty"`
	Clusters          []Cluster `json:"clusters,omitempty"`
	BroadcastClusters int       `json:"broadcast_clusters,omitempty"`
	// Evaluations counts submodular gain evaluations.
	Evaluations int64 `json:"evaluations,omitempty"`
}

// ShardSummary describes one worker's shard.
type ShardSummary struct {
	Worker int `json:"worker"`
	// Size counts the samples the worker trains on, Own those assigned to
	// it alone, and Target the size the ratios ask for.
	Size   int     `json:"size"`
	Own    int     `json:"own"`
	Target float64 `json:"target"`
	// ClassCounts and ClassTargets give the samples of each class in the
	// shard and the count the ratios ask for.
	ClassCounts  []int     `json:"class_counts"`
	ClassTargets []float64 `json:"class_targets"`
	// MaxProportionDeviation is the largest difference between a class's
	// share of this shard and its share of the whole set.
	MaxProportionDeviation float64 `json:"max_proportion_deviation"`
}

// ClassSummary describes the shards' view of one class.
type ClassSummary struct {
	Class int    `json:"class"`
	Name  string `json:"name"`
	Size  int    `json:"size"`
	// Sigma is the kernel width of the coverage.
	Sigma float64 `json:"sigma"`
	// CountSpread is the largest difference between two shards' counts.
	CountSpread int `json:"count_spread"`
	// Coverage gives, per shard, the facility-location coverage of the
	// class by the shard's samples of it, normalised to [0, 1]: the mean
	// over reference samples v of max_a exp(-‖v-a‖²/(2σ²)).
	Coverage []float64 `json:"coverage,omitempty"`
	// BaselineCoverage is the same for random shards with the same counts,
	// averaged over several random splits.
	BaselineCoverage []float64 `json:"baseline_coverage,omitempty"`
	// MeanDistance is the largest L2 distance between two shards' means
	// of the class, and MeanDistanceSigma the same in units of Sigma.
	MeanDistance      float64 `json:"mean_distance"`
	MeanDistanceSigma float64 `json:"mean_distance_sigma"`
}

// Summarize measures an assignment of d's samples. rng draws the random
// baseline shards for coverage; it may be nil when coverage is skipped.
func Summarize(d *dataset.Dataset, res *Result, o SummaryOptions, rng *rand.Rand) (*Summary, error) {
	workers := res.Workers
	if err := o.Validate(workers); err != nil {
		return nil, err
	}
	if len(res.Assign) != d.Len() {
		return nil, fmt.Errorf("assignment of %d samples for a dataset of %d", len(res.Assign), d.Len())
	}
	for i, w := range res.Assign {
		if w != Broadcast && (w < 0 || w >= workers) {
			return nil, fmt.Errorf("sample %d assigned to worker %d: want 0..%d or broadcast", i, w, workers-1)
		}
	}
	ratios := ratiosOrEqual(o.Ratios, workers)
	s := &Summary{
		Scheme: res.Scheme, Samples: d.Len(), Dim: d.Dim, Classes: d.Classes, Workers: workers, Ratios: ratios,
		PCADims: res.PCADims, KMeansIterations: res.KMeansIterations, Clusters: res.Clusters, Evaluations: res.Evaluations,
	}
	if res.Scheme == SchemeDistAware {
		s.PCAExplained = res.PCAExplained
	}
	for _, c := range res.Clusters {
		if c.Broadcast {
			s.BroadcastClusters++
		}
	}
	k := d.Classes
	own := make([][]int, workers) // own[j][l]
	for j := range own {
		own[j] = make([]int, k)
	}
	bcast := make([]int, k)
	classSize := make([]int, k)
	for i, w := range res.Assign {
		l := d.Labels[i]
		classSize[l]++
		if w == Broadcast {
			bcast[l]++
			s.BroadcastSamples++
		} else {
			own[w][l]++
		}
	}
	ownSize := make([]int, k)
	for l := range k {
		ownSize[l] = classSize[l] - bcast[l]
	}
	sizeTarget, countTarget := Targets(ownSize, ratios, workers)
	n := float64(d.Len())
	for j := range workers {
		sh := ShardSummary{Worker: j, ClassCounts: make([]int, k), ClassTargets: make([]float64, k)}
		sh.Target = sizeTarget[j] + float64(s.BroadcastSamples)
		for l := range k {
			sh.ClassCounts[l] = own[j][l] + bcast[l]
			sh.ClassTargets[l] = countTarget[l][j] + float64(bcast[l])
			sh.Own += own[j][l]
			s.MaxClassCountDeviation = max(s.MaxClassCountDeviation, math.Abs(float64(sh.ClassCounts[l])-sh.ClassTargets[l]))
		}
		sh.Size = sh.Own + s.BroadcastSamples
		for l := range k {
			share := float64(classSize[l]) / n
			if sh.Size > 0 {
				share = math.Abs(float64(sh.ClassCounts[l])/float64(sh.Size) - share)
			}
			sh.MaxProportionDeviation = max(sh.MaxProportionDeviation, share)
		}
		s.MaxSizeDeviation = max(s.MaxSizeDeviation, math.Abs(float64(sh.Size)-sh.Target))
		s.MaxProportionDeviation = max(s.MaxProportionDeviation, sh.MaxProportionDeviation)
		s.Shards = append(s.Shards, sh)
	}
	byClass := d.ByClass()
	s.PerClass = make([]ClassSummary, k)
	for l := range k {
		lo, hi := math.MaxInt, 0
		for j := range workers {
			lo, hi = min(lo, own[j][l]), max(hi, own[j][l])
		}
		s.PerClass[l] = ClassSummary{Class: l, Name: d.ClassName(l), Size: classSize[l], CountSpread: hi - lo}
		s.MaxClassCountSpread = max(s.MaxClassCountSpread, hi-lo)
		if len(byClass[l]) == 0 {
			continue
		}
		s.PerClass[l].Sigma = o.Sigma
		if o.Sigma == 0 {
			s.PerClass[l].Sigma = classSigma(d, byClass[l])
		}
		dist := meanDistance(d, byClass[l], res.Assign, workers)
		s.PerClass[l].MeanDistance = dist
		s.PerClass[l].MeanDistanceSigma = dist / s.PerClass[l].Sigma
		s.MaxMeanDistance = max(s.MaxMeanDistance, s.PerClass[l].MeanDistanceSigma)
	}
	if o.CoverageSample >= 0 {
		coverage(d, byClass, res.Assign, workers, o, s, rng)
	}
	return s, nil
}

// meanDistance returns the largest L2 distance between the means of the
// class's samples in two shards (broadcast samples count in every shard).
func meanDistance(d *dataset.Dataset, members, assign []int, workers int) float64 {
	sums := make([][]float64, workers)
	counts := make([]int, workers)
	for j := range sums {
		sums[j] = make([]float64, d.Dim)
	}
	for _, i := range members {
		w := assign[i]
		for j := range workers {
			if w != Broadcast && w != j {
				continue
			}
			counts[j]++
			for f, v := range d.Row(i) {
				sums[j][f] += float64(v)
			}
		}
	}
	worst := 0.0
	for a := range workers {
		if counts[a] == 0 {
			continue
		}
		for b := a + 1; b < workers; b++ {
			if counts[b] == 0 {
				continue
			}
			sq := 0.0
			for f := range d.Dim {
				t := sums[a][f]/float64(counts[a]) - sums[b][f]/float64(counts[b])
				sq += t * t
			}
			worst = max(worst, math.Sqrt(sq))
		}
	}
	return worst
}

// coverage fills the coverage figures: for each class, the mean over
// reference samples v of max_{a in the shard's samples of the class}
// exp(-‖v-a‖²/(2σ²)), for the assignment and for a random split of each
// class with the same counts.
func coverage(d *dataset.Dataset, byClass [][]int, assign []int, workers int, o SummaryOptions, s *Summary, rng *rand.Rand) {
	refs := o.CoverageSample
	if refs == 0 {
		refs = DefaultCoverageSample
	}
	// The baselines: each class's own samples permuted and dealt out in
	// the assignment's counts, several times. Drawn up front so the result
	// does not depend on the order in which classes are measured.
	draws := o.BaselineDraws
	if draws == 0 {
		draws = DefaultBaselineDraws
	}
	assigns := [][]int{assign}
	for range draws {
		baseline := make([]int, len(assign))
		copy(baseline, assign)
		for _, members := range byClass {
			var owned []int
			counts := make([]int, workers)
			for _, i := range members {
				if w := assign[i]; w != Broadcast {
					owned = append(owned, i)
					counts[w]++
				}
			}
			perm := rng.Perm(len(owned))
			k := 0
			for j, c := range counts {
				for range c {
					baseline[owned[perm[k]]] = j
					k++
				}
			}
		}
		assigns = append(assigns, baseline)
	}
	// Reference samples: a uniform sample of each class, so that they do
	// not line up with a round-robin deal as evenly strided ones would.
	refRows := make([][]int, len(byClass))
	for l, members := range byClass {
		r := min(refs, len(members))
		perm := rng.Perm(len(members))[:r]
		refRows[l] = make([]int, r)
		for k, p := range perm {
			refRows[l][k] = members[p]
		}
		slices.Sort(refRows[l])
	}
	threads := o.Threads
	if threads == 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	parallel.For(len(byClass), threads, func(l int) {
		members := byClass[l]
		if len(members) == 0 {
			return
		}
		cs := &s.PerClass[l]
		cov := classCoverage(d, members, refRows[l], assigns, workers, cs.Sigma)
		cs.Coverage = cov[0]
		cs.BaselineCoverage = make([]float64, workers)
		for _, b := range cov[1:] {
			for j, v := range b {
				cs.BaselineCoverage[j] += v / float64(len(cov)-1)
			}
		}
	})
	sum, base, cnt := 0.0, 0.0, 0
	s.MinCoverageGain = math.Inf(1)
	for _, cs := range s.PerClass {
		for j := range cs.Coverage {
			sum += cs.Coverage[j]
			base += cs.BaselineCoverage[j]
			cnt++
			s.MinCoverageGain = min(s.MinCoverageGain, cs.Coverage[j]-cs.BaselineCoverage[j])
		}
	}
	if cnt > 0 {
		s.MeanCoverage, s.MeanBaselineCoverage = sum/float64(cnt), base/float64(cnt)
	} else {
		s.MinCoverageGain = 0
	}
	s.CoverageReference = min(refs, maxClass(byClass))
}

func maxClass(byClass [][]int) int {
	m := 0
	for _, c := range byClass {
		m = max(m, len(c))
	}
	return m
}

// classCoverage returns the per-shard coverage of one class under each
// assignment.
func classCoverage(d *dataset.Dataset, members, refRows []int, assigns [][]int, workers int, sigma float64) [][]float64 {
	r := len(refRows)
	ref := gather(d, refRows)
	refNorm := sqNorms(ref, r, d.Dim)
	// best[a][v*workers+j]: smallest squared distance from reference v to a
	// sample of shard j under assignment a.
	best := make([][]float32, len(assigns))
	for a := range best {
		best[a] = make([]float32, r*workers)
		for k := range best[a] {
			best[a][k] = float32(math.Inf(1))
		}
	}
	buf := make([]float32, r*tile)
	for t0 := 0; t0 < len(members); t0 += tile {
		rows := members[t0:min(len(members), t0+tile)]
		m := len(rows)
		x := gather(d, rows)
		sqDistances(ref, r, refNorm, x, m, sqNorms(x, m, d.Dim), d.Dim, buf, m)
		for v := range r {
			dist := buf[v*m : (v+1)*m]
			for a, which := range assigns {
				b := best[a][v*workers : (v+1)*workers]
				for c, i := range rows {
					if w := which[i]; w != Broadcast {
						b[w] = min(b[w], dist[c])
						continue
					}
					for j := range b {
						b[j] = min(b[j], dist[c])
					}
				}
			}
		}
	}
	scale := -1 / (2 * sigma * sigma)
	out := make([][]float64, len(assigns))
	for a := range out {
		out[a] = make([]float64, workers)
		for v := range r {
			for j := range workers {
				if dd := best[a][v*workers+j]; !math.IsInf(float64(dd), 1) {
					out[a][j] += math.Exp(float64(dd)*scale) / float64(r)
				}
			}
		}
	}
	return out
}
