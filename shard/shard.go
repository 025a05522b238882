// Package shard decides which worker trains on which sample of a labelled
// dense dataset: the data sharding of a parameter-server or decentralised
// training run.
//
// Every sharder is a pure function of the dataset, the Options and a
// seeded *rand.Rand (math/rand/v2); it returns an assignment of each sample
// to a worker 0..N-1 or to Broadcast (every worker gets it). Five schemes:
//
//   - random: a random permutation dealt round-robin, so shard sizes differ
//     by at most one (the baseline of seed 004 §III-C).
//   - roundrobin: sample i goes to worker i mod N, as TensorFlow's
//     Dataset.shard does (seed 004 §III).
//   - stratified: round-robin inside each class (seed 004 §III-A, Fig. 4).
//     Every class count differs by at most one between shards.
//   - distaware: PCA, then k-means with k-means++ seeding, then round-robin
//     inside each cluster; a cluster smaller than N is broadcast (seed 004
//     §III-B, Fig. 6). The default number of clusters is twice the number
//     of classes, as seed 004 §IV-C recommends.
//   - submodular: ratio-constrained submodular partitioning (seed 003 §2.1,
//     Alg. 1). Each class is split among the workers in proportion to
//     Options.Ratios (their relative speeds); a block grows by the sample of
//     largest marginal gain. f is facility location or graph cut (seed 003
//     §3) over a Gaussian kernel on L2 distance whose σ is the median
//     pairwise distance of the class unless given. By default the block
//     that grows is the one least full relative to its target
//     (GrowProportional); GrowMinF is Alg. 1's literal rule, the block of
//     smallest f, which with unequal ratios fills the small blocks first
//     and leaves the largest block only the samples the others left.
//
// Round-robin inside classes and clusters carries the rotation from one
// class (or cluster) to the next instead of restarting at worker 0 as
// Fig. 4 and Fig. 6 do: the per-class counts are the same, and shard sizes
// also differ by at most one.
//
// Submodular partitioning rounds the proportional targets |V_l|·r_j/Σr so
// that every shard size and every per-class count is within one of its
// target (a flow rounding of the class × worker target matrix). Greedy
// steps use lazy evaluation (priority queues of stale upper bounds, exact
// by submodularity) or stochastic greedy (a random sample of
// (|V_l|/C_j)·ln(1/ε) candidates per step). Classes run in parallel; the
// result does not depend on the number of threads.
//
// Summarize reports the quality of any assignment: sizes against targets,
// per-shard class counts and the largest deviation of class proportions,
// and, per class, the facility-location coverage of the class by each shard
// next to that of random shards with the same counts, and the distance
// between per-shard class means.
//
// WriteDir stores an assignment and its summary as a directory
// (shards.txt, one worker or * per sample, then summary.json) and ReadDir
// reads it back, so that a trainer can consume what colo shard wrote.
//
// Similarity matrices, covariances and coverage distances are formed from
// float32 dot products by an AVX2 kernel on amd64 (shard/internal/vec).
//
// Cost, for n samples of d features, N workers and classes of size m:
// random, roundrobin and stratified are O(n). distaware is
// O(n·d² + d³) for PCA plus O(n·k·p) per k-means iteration in p PCA
// dimensions. submodular is O(m²·d) per class to build the similarity
// matrix (4·m² bytes; classes above Options.MaxBlock samples are split at
// random into blocks of at most MaxBlock) plus, per greedy gain evaluation,
// O(m) for facility location and O(1) for graph cut (whose adds cost O(m));
// lazy greedy needs few evaluations per step in practice, stochastic
// greedy O((m/C_j)·ln(1/ε)).
//
// Example:
//
//	d, _ := dataset.Load("train-images-idx3-ubyte.gz", dataset.LoadOptions{Labels: "train-labels-idx1-ubyte.gz"})
//	o := shard.DefaultOptions()
//	o.Workers, o.Scheme = 4, shard.SchemeSubmodular
//	o.Ratios = []float64{1, 2, 4, 8}
//	rng := rand.New(rand.NewPCG(1, 0))
//	res, err := shard.Shard(d, o, rng)
//	if err != nil {
//		return err
//	}
//	sum, err := shard.Summarize(d, res, shard.SummaryOptions{Ratios: o.Ratios}, rng)
//	// res.Assign[i] is the worker of sample i; sum.Shards[j].ClassCounts
//	// its class counts.
package shard

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"

	"colo/dataset"
)

// Broadcast marks a sample that every worker trains on.
const Broadcast = -1

// Scheme names a sharding scheme.
type Scheme string

// The sharding schemes.
const (
	SchemeRandom     Scheme = "random"
	SchemeRoundRobin Scheme = "roundrobin"
	SchemeStratified Scheme = "stratified"
	SchemeDistAware  Scheme = "distaware"
	SchemeSubmodular Scheme = "submodular"
)

// Schemes lists every scheme.
func Schemes() []Scheme {
	return []Scheme{SchemeRandom, SchemeRoundRobin, SchemeStratified, SchemeDistAware, SchemeSubmodular}
}

// Function names a submodular objective.
type Function string

// The submodular objectives of seed 003 §3.
const (
	// FacilityLocation is f(A) = Σ_{v∈V_l} max_{a∈A} sim(v, a).
	FacilityLocation Function = "facility"
	// GraphCut is f(A) = Σ_{v∈V_l∖A} Σ_{a∈A} sim(v, a).
	GraphCut Function = "graphcut"
)

// Greedy names a greedy method for the GreedyStep of Alg. 1.
type Greedy string

// The greedy methods.
const (
	// GreedyLazy evaluates stale upper bounds from a priority queue per
	// block; it picks exactly what GreedyPlain picks.
	GreedyLazy Greedy = "lazy"
	// GreedyStochastic evaluates a random sample of the remaining samples
	// at each step (stochastic greedy).
	GreedyStochastic Greedy = "stochastic"
	// GreedyPlain evaluates every remaining sample at every step. It is the
	// slow reference: O(m³) per class for facility location.
	GreedyPlain Greedy = "plain"
)

// Grow names the rule that picks which block of Alg. 1 grows next.
type Grow string

// The growth rules.
const (
	// GrowMinF grows the block with the smallest f among those not yet
	// full, as Alg. 1 of seed 003 does.
	GrowMinF Grow = "min-f"
	// GrowProportional grows the block that is least full relative to its
	// capacity (ties to the smaller f), so that blocks of unequal
	// capacities fill at the same pace and share the early, most
	// representative picks in proportion.
	GrowProportional Grow = "proportional"
)

// Options configure a sharder. Start from DefaultOptions.
type Options struct {
	// Workers is the number of shards N.
	Workers int
	// Scheme is the sharding scheme.
	Scheme Scheme

	// PCADims is the number of principal components kept by distaware; 0
	// uses PCAVariance.
	PCADims int
	// PCAVariance keeps the fewest principal components that carry this
	// fraction of the variance, in (0, 1]; used when PCADims is 0.
	PCAVariance float64
	// Clusters is the number of k-means clusters; 0 means twice the number
	// of classes.
	Clusters int
	// KMeansIters bounds the k-means iterations; 0 means 150.
	KMeansIters int
	// KMeansTol stops k-means once the objective improves by less than
	// this fraction; 0 means 1e-4.
	KMeansTol float64

	// Ratios are the relative speeds of the workers for submodular: worker
	// j gets the fraction Ratios[j]/ΣRatios of every class. nil means
	// equal.
	Ratios []float64
	// Function is the submodular objective.
	Function Function
	// Grow is the rule that picks the block to grow.
	Grow Grow
	// Sigma is the width of the Gaussian kernel sim(u, v) =
	// exp(-‖u-v‖²/(2σ²)); 0 uses the median pairwise distance of each
	// class.
	Sigma float64
	// Greedy is the greedy method.
	Greedy Greedy
	// Epsilon is the ε of stochastic greedy, in (0, 1): each step samples
	// (m/C_j)·ln(1/ε) candidates.
	Epsilon float64
	// MaxBlock bounds the number of samples partitioned together: a larger
	// class is split at random into blocks of at most MaxBlock, each
	// partitioned on its own with the class's counts shared out. The
	// similarity matrix of a block takes 4·MaxBlock² bytes.
	MaxBlock int

	// Threads bounds the goroutines; 0 means GOMAXPROCS. Results do not
	// depend on it.
	Threads int
	// Progress, when set, is called with a stage name and the work done
	// out of total. Calls are serialised.
	Progress func(stage string, done, total int)
}

// DefaultOptions returns options for 2 stratified shards with the
// defaults of every scheme: 90% of the variance and twice as many clusters
// as classes for distaware; equal ratios, facility location, median σ,
// lazy greedy and ε = 0.01 for submodular.
func DefaultOptions() Options {
	return Options{
		Workers:     2,
		Scheme:      SchemeStratified,
		PCAVariance: 0.9,
		Function:    FacilityLocation,
		Grow:        GrowProportional,
		Greedy:      GreedyLazy,
		Epsilon:     0.01,
		MaxBlock:    8192,
	}
}

// Validate checks the options and names the offending field and its bound.
// Fields of other schemes than o.Scheme are not checked.
func (o Options) Validate() error {
	if o.Workers < 1 {
		return fmt.Errorf("workers %d: want at least 1", o.Workers)
	}
	if o.Threads < 0 {
		return fmt.Errorf("threads %d: want 0 (all) or more", o.Threads)
	}
	if o.Ratios != nil && o.Scheme != SchemeSubmodular {
		return fmt.Errorf("ratios apply to the submodular scheme only, not %s", o.Scheme)
	}
	switch o.Scheme {
	case SchemeRandom, SchemeRoundRobin, SchemeStratified:
		return nil
	case SchemeDistAware:
		return o.validateDistAware()
	case SchemeSubmodular:
		return o.validateSubmodular()
	}
	names := make([]string, 0, 5)
	for _, s := range Schemes() {
		names = append(names, string(s))
	}
	return fmt.Errorf("scheme %q: want one of %s", o.Scheme, strings.Join(names, ", "))
}

func (o Options) validateDistAware() error {
	switch {
	case o.PCADims < 0:
		return fmt.Errorf("pca dims %d: want 0 (use the variance fraction) or more", o.PCADims)
	case o.PCADims == 0 && !(o.PCAVariance > 0 && o.PCAVariance <= 1):
		return fmt.Errorf("pca variance %g: want a fraction in (0, 1]", o.PCAVariance)
	case o.Clusters < 0:
		return fmt.Errorf("clusters %d: want 0 (twice the classes) or more", o.Clusters)
	case o.KMeansIters < 0:
		return fmt.Errorf("k-means iterations %d: want 0 (default) or more", o.KMeansIters)
	case o.KMeansTol < 0 || math.IsNaN(o.KMeansTol):
		return fmt.Errorf("k-means tolerance %g: want 0 (default) or more", o.KMeansTol)
	}
	return nil
}

func (o Options) validateSubmodular() error {
	if o.Ratios != nil {
		if len(o.Ratios) != o.Workers {
			return fmt.Errorf("ratios: %d values for %d workers: want one per worker", len(o.Ratios), o.Workers)
		}
		for j, r := range o.Ratios {
			if !(r > 0) || math.IsInf(r, 0) {
				return fmt.Errorf("ratio %d is %g: want a finite number > 0", j+1, r)
			}
		}
	}
	switch o.Function {
	case FacilityLocation, GraphCut:
	default:
		return fmt.Errorf("function %q: want facility or graphcut", o.Function)
	}
	switch o.Grow {
	case GrowMinF, GrowProportional:
	default:
		return fmt.Errorf("grow %q: want min-f or proportional", o.Grow)
	}
	switch o.Greedy {
	case GreedyLazy, GreedyStochastic, GreedyPlain:
	default:
		return fmt.Errorf("greedy %q: want lazy, stochastic or plain", o.Greedy)
	}
	switch {
	case o.Sigma < 0 || math.IsNaN(o.Sigma) || math.IsInf(o.Sigma, 0):
		return fmt.Errorf("sigma %g: want 0 (median heuristic) or a finite number > 0", o.Sigma)
	case !(o.Epsilon > 0 && o.Epsilon < 1):
		return fmt.Errorf("epsilon %g: want a number in (0, 1)", o.Epsilon)
	case o.MaxBlock < 2:
		return fmt.Errorf("max block %d: want at least 2", o.MaxBlock)
	}
	return nil
}

// ParseRatios parses "r1,r2,…" or "r1:r2:…".
func ParseRatios(s string) ([]float64, error) {
	fields := strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ':' })
	if len(fields) == 0 {
		return nil, fmt.Errorf("ratios %q: want r1,r2,…", s)
	}
	out := make([]float64, len(fields))
	for i, f := range fields {
		var err error
		if out[i], err = parseFloat(strings.TrimSpace(f)); err != nil || !(out[i] > 0) || math.IsInf(out[i], 0) {
			return nil, fmt.Errorf("ratio %d %q: want a finite number > 0", i+1, f)
		}
	}
	return out, nil
}

// Cluster describes one k-means cluster of distaware.
type Cluster struct {
	// Size is the number of samples in the cluster.
	Size int `json:"size"`
	// Broadcast is true when the cluster has fewer samples than workers
	// and every worker gets all of them.
	Broadcast bool `json:"broadcast"`
}

// Result is an assignment of samples to workers with what the scheme
// learnt on the way.
type Result struct {
	// Assign gives the worker of each sample, or Broadcast.
	Assign []int
	// Workers is the number of shards.
	Workers int
	// Scheme is the scheme that made the assignment.
	Scheme Scheme

	// PCADims is the number of principal components distaware kept, and
	// PCAExplained the fraction of the variance they carry.
	PCADims      int
	PCAExplained float64
	// KMeansIterations and KMeansObjective describe the clustering.
	KMeansIterations int
	KMeansObjective  float64
	// Clusters describes each k-means cluster (distaware).
	Clusters []Cluster

	// Sigma is the kernel width used for each class (submodular).
	Sigma []float64
	// Evaluations counts marginal-gain evaluations (submodular).
	Evaluations int64
}

// Shard assigns the samples of d to o.Workers workers with o.Scheme; there
// are at most as many workers as samples.
func Shard(d *dataset.Dataset, o Options, rng *rand.Rand) (*Result, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if err := d.Validate(); err != nil {
		return nil, fmt.Errorf("dataset: %w", err)
	}
	if d.Len() == 0 {
		return nil, fmt.Errorf("dataset has no samples")
	}
	if o.Workers > d.Len() {
		return nil, fmt.Errorf("workers %d: more workers than the %d samples", o.Workers, d.Len())
	}
	res := &Result{Workers: o.Workers, Scheme: o.Scheme}
	switch o.Scheme {
	case SchemeRandom:
		res.Assign = Random(d.Len(), o.Workers, rng)
	case SchemeRoundRobin:
		res.Assign = RoundRobin(d.Len(), o.Workers)
	case SchemeStratified:
		res.Assign = Stratified(d.Labels, d.Classes, o.Workers)
	case SchemeDistAware:
		return DistAware(d, o, rng)
	case SchemeSubmodular:
		return Submodular(d, o, rng)
	}
	return res, nil
}

// Random deals a random permutation of the n samples round-robin, so that
// shard sizes differ by at most one.
func Random(n, workers int, rng *rand.Rand) []int {
	assign := make([]int, n)
	for k, i := range rng.Perm(n) {
		assign[i] = k % workers
	}
	return assign
}

// RoundRobin gives sample i to worker i mod workers.
func RoundRobin(n, workers int) []int {
	assign := make([]int, n)
	for i := range assign {
		assign[i] = i % workers
	}
	return assign
}

// Stratified deals the samples of each class round-robin in increasing
// order (seed 004 Fig. 4), carrying the rotation from one class to the
// next: every class count and every shard size differ by at most one
// between shards.
func Stratified(labels []int, classes, workers int) []int {
	byClass := make([][]int, classes)
	for i, y := range labels {
		byClass[y] = append(byClass[y], i)
	}
	assign := make([]int, len(labels))
	next := 0
	for _, members := range byClass {
		next = dealRoundRobin(members, assign, next, workers)
	}
	return assign
}

// dealRoundRobin gives members to workers start, start+1, … mod workers
// and returns the worker after the last one served.
func dealRoundRobin(members, assign []int, start, workers int) int {
	w := start
	for _, i := range members {
		assign[i] = w
		w++
		if w == workers {
			w = 0
		}
	}
	return w
}

// Describe names the scheme of o for people, with the settings that
// shape a submodular partition: "submodular (facility, lazy greedy, grow
// min-f, ratios 1:2)".
func (o Options) Describe() string {
	if o.Scheme != SchemeSubmodular {
		return string(o.Scheme)
	}
	r := "equal ratios"
	if o.Ratios != nil {
		parts := make([]string, len(o.Ratios))
		for i, v := range o.Ratios {
			parts[i] = strconv.FormatFloat(v, 'g', -1, 64)
		}
		r = "ratios " + strings.Join(parts, ":")
	}
	return fmt.Sprintf("submodular (%s, %s greedy, grow %s, %s)", o.Function, o.Greedy, o.Grow, r)
}
