package shard

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"

	"colo/dataset"
	"colo/internal/parallel"
)

// Targets returns the real-valued targets of ratio-constrained sharding:
// sizes[j] = n·r_j/Σr and counts[l][j] = |V_l|·r_j/Σr for class sizes
// classSize. nil ratios mean equal ones.
func Targets(classSize []int, ratios []float64, workers int) (sizes []float64, counts [][]float64) {
	ratios = ratiosOrEqual(ratios, workers)
	sum := 0.0
	for _, r := range ratios {
		sum += r
	}
	sizes = make([]float64, workers)
	counts = make([][]float64, len(classSize))
	for l, m := range classSize {
		counts[l] = make([]float64, workers)
		for j, r := range ratios {
			counts[l][j] = float64(m) * r / sum
			sizes[j] += counts[l][j]
		}
	}
	return sizes, counts
}

// IntegerTargets rounds Targets so that every shard size and every
// per-class count is the floor or the ceiling of its real target, each
// class is split exactly and the sizes sum to n.
func IntegerTargets(classSize []int, ratios []float64, workers int) ([][]int, error) {
	ratios = ratiosOrEqual(ratios, workers)
	n := 0
	for _, m := range classSize {
		n += m
	}
	_, t := Targets(classSize, ratios, workers)
	return roundMatrix(t, classSize, apportion(n, ratios))
}

func ratiosOrEqual(ratios []float64, workers int) []float64 {
	if ratios != nil {
		return ratios
	}
	r := make([]float64, workers)
	for j := range r {
		r[j] = 1
	}
	return r
}

// job is one run of Alg. 1: a ground set (a class, or a block of a large
// class) and the number of its samples each worker gets.
type job struct {
	class   int
	members []int // sample ids, increasing
	caps    []int
	seed    uint64
}

// Submodular is ratio-constrained submodular partitioning (seed 003 §2.1,
// Alg. 1): every class is split among the workers in the proportions
// o.Ratios, rounded so that sizes and per-class counts are within one of
// their targets; inside a class the block with the smallest f among those
// not yet full repeatedly takes the remaining sample of largest marginal
// gain in f (o.Function, over the Gaussian kernel of width o.Sigma or the
// class's median distance), found by o.Greedy.
func Submodular(d *dataset.Dataset, o Options, rng *rand.Rand) (*Result, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	byClass := d.ByClass()
	sizes := make([]int, d.Classes)
	for l, m := range byClass {
		sizes[l] = len(m)
	}
	counts, err := IntegerTargets(sizes, o.Ratios, o.Workers)
	if err != nil {
		return nil, err
	}
	res := &Result{
		Assign:  make([]int, d.Len()),
		Workers: o.Workers,
		Scheme:  SchemeSubmodular,
		Sigma:   make([]float64, d.Classes),
	}
	var jobs []job
	for l, members := range byClass {
		if len(members) == 0 {
			continue
		}
		res.Sigma[l] = o.Sigma
		if o.Sigma == 0 {
			res.Sigma[l] = classSigma(d, members)
		}
		if len(members) <= o.MaxBlock {
			jobs = append(jobs, job{class: l, members: members, caps: counts[l]})
			continue
		}
		// Split a large class at random into near-equal blocks and share
		// its counts out among them with the same rounding.
		q := (len(members) + o.MaxBlock - 1) / o.MaxBlock
		perm := rng.Perm(len(members))
		blockSize := apportion(len(members), ratiosOrEqual(nil, q))
		t := make([][]float64, q)
		for b := range q {
			t[b] = make([]float64, o.Workers)
			for j, c := range counts[l] {
				t[b][j] = float64(blockSize[b]) * float64(c) / float64(len(members))
			}
		}
		caps, err := roundMatrix(t, blockSize, counts[l])
		if err != nil {
			return nil, fmt.Errorf("class %s: %w", d.ClassName(l), err)
		}
		start := 0
		for b := range q {
			part := make([]int, blockSize[b])
			for k := range part {
				part[k] = members[perm[start+k]]
			}
			start += blockSize[b]
			slices.Sort(part)
			jobs = append(jobs, job{class: l, members: part, caps: caps[b]})
		}
	}
	for k := range jobs {
		jobs[k].seed = rng.Uint64()
	}
	// Largest jobs first, for balance across threads; every job writes
	// its own samples, so the order does not change the result.
	order := make([]int, len(jobs))
	for k := range order {
		order[k] = k
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(len(jobs[b].members), len(jobs[a].members)) })
	threads := o.Threads
	if threads == 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	var (
		mu    sync.Mutex
		done  int
		evals = make([]int64, len(jobs))
	)
	progress := serialProgress(o.Progress)
	progress("submodular", 0, len(jobs))
	outer := min(threads, len(jobs))
	inner := max(1, threads/max(outer, 1)) // threads per similarity matrix
	parallel.For(len(order), outer, func(n int) {
		k := order[n]
		jb := jobs[k]
		block, st := runJob(d, jb, res.Sigma[jb.class], o, inner)
		for v, i := range jb.members {
			res.Assign[i] = block[v]
		}
		evals[k] = st.evaluations
		mu.Lock()
		done++
		progress("submodular", done, len(jobs))
		mu.Unlock()
	})
	for _, e := range evals {
		res.Evaluations += e
	}
	return res, nil
}

// runJob builds the similarity matrix of a job's samples and partitions
// them.
func runJob(d *dataset.Dataset, jb job, sigma float64, o Options, threads int) ([]int, partitionStats) {
	m := len(jb.members)
	x := gather(d, jb.members)
	s := similarity(x, m, d.Dim, sigma, threads)
	var obj objective
	switch o.Function {
	case GraphCut:
		obj = newGraphCut(s, m, o.Workers)
	default:
		obj = newFacility(s, m, o.Workers)
	}
	rng := rand.New(rand.NewPCG(jb.seed, jb.seed^0x9e3779b97f4a7c15))
	return partition(obj, m, jb.caps, o.Grow, o.Greedy, o.Epsilon, rng)
}
