package graph

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"colo/internal/membudget"
)

// SparseConfig describes a uniformly sparse n × m dataset: every entry is
// nonzero independently with probability 1 − Gamma. Seed 000 §6 uses
// 10^4 × 10^4 with γ = 0.999, 0.995 and 0.991 (synthetic-sparse, -medium
// and -dense); see SparsePresets.
type SparseConfig struct {
	Samples int     // n
	Params  int     // m
	Gamma   float64 // sparsity γ ∈ [0, 1)
	Seed    uint64
}

// SparsePresetNames returns the names of the synthetic datasets of seed
// 000 §6.
func SparsePresetNames() []string {
	return []string{"synthetic-sparse", "synthetic-medium", "synthetic-dense"}
}

// SparsePreset returns the configuration of a synthetic dataset of seed
// 000 §6 by name (see SparsePresetNames): 10^4 × 10^4 entries with
// sparsity 0.999, 0.995 or 0.991.
func SparsePreset(name string, seed uint64) (SparseConfig, bool) {
	gamma := map[string]float64{"synthetic-sparse": 0.999, "synthetic-medium": 0.995, "synthetic-dense": 0.991}[name]
	if gamma == 0 {
		return SparseConfig{}, false
	}
	return SparseConfig{Samples: 10000, Params: 10000, Gamma: gamma, Seed: seed}, true
}

// Validate checks the configuration.
func (c SparseConfig) Validate() error {
	switch {
	case c.Samples <= 0:
		return fmt.Errorf("samples = %d: want at least 1", c.Samples)
	case c.Params <= 0:
		return fmt.Errorf("params = %d: want at least 1", c.Params)
	case c.Params > math.MaxUint32:
		return fmt.Errorf("params = %d: want at most %d", c.Params, uint64(math.MaxUint32))
	case !(c.Gamma >= 0 && c.Gamma < 1):
		return fmt.Errorf("gamma = %g: want a sparsity in [0, 1)", c.Gamma)
	}
	return nil
}

// Sparse generates the dataset described by c. Nonzero positions are drawn
// by geometric skips, so the time is O(n + |E|), not O(nm). Values are 1;
// labels are ±1, the sign of a hidden random linear model, so that the
// data can also be trained on.
func Sparse(c SparseConfig) (*Graph, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	p := 1 - c.Gamma
	if err := genFits(float64(c.Samples)*float64(c.Params)*p, c.Samples, c.Params,
		fmt.Sprintf("samples = %d, params = %d, gamma = %g", c.Samples, c.Params, c.Gamma), membudget.Default()); err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(c.Seed, 0x7370617273))
	logq := math.Log1p(-p) // log of the probability of a zero
	off := make([]int64, 1, c.Samples+1)
	adj := make([]uint32, 0, int(float64(c.Samples)*float64(c.Params)*p*1.05)+16)
	for u := 0; u < c.Samples; u++ {
		j := -1
		for {
			// Skip a geometric number of zeros: P(skip = s) = q^s p.
			var skip int
			if p < 1 {
				skip = int(math.Log(1-rng.Float64()) / logq)
			}
			if skip >= c.Params-j-1 {
				break
			}
			j += skip + 1
			adj = append(adj, uint32(j))
		}
		off = append(off, int64(len(adj)))
	}
	return fromCSR(off, adj, c.Params, hiddenLabels(off, adj, c.Params, rng),
		Meta{Format: "generated", Source: fmt.Sprintf("sparse(n=%d,m=%d,gamma=%g,seed=%d)", c.Samples, c.Params, c.Gamma, c.Seed)}), nil
}

// PowerLawConfig describes a dataset whose degrees resemble click-through
// data: parameter popularity follows a Zipf law of exponent Alpha (a few
// features in most samples, most features in a few) and sample degrees are
// geometric around AvgDegree, at least 1.
type PowerLawConfig struct {
	Samples   int
	Params    int
	AvgDegree float64 // mean nonzeros per sample
	Alpha     float64 // Zipf exponent of parameter popularity, > 1
	Seed      uint64
}

// DefaultPowerLaw returns a CTR-like configuration of n samples: m = n/2
// parameters, 30 nonzeros per sample, exponent 1.2.
func DefaultPowerLaw(n int, seed uint64) PowerLawConfig {
	return PowerLawConfig{Samples: n, Params: max(1, n/2), AvgDegree: 30, Alpha: 1.2, Seed: seed}
}

// Validate checks the configuration.
func (c PowerLawConfig) Validate() error {
	switch {
	case c.Samples <= 0:
		return fmt.Errorf("samples = %d: want at least 1", c.Samples)
	case c.Params <= 0:
		return fmt.Errorf("params = %d: want at least 1", c.Params)
	case c.Params > math.MaxUint32:
		return fmt.Errorf("params = %d: want at most %d", c.Params, uint64(math.MaxUint32))
	case !(c.AvgDegree >= 1) || c.AvgDegree > float64(c.Params):
		return fmt.Errorf("avg degree = %g: want 1..%d (the number of parameters)", c.AvgDegree, c.Params)
	case !(c.Alpha > 1) || math.IsInf(c.Alpha, 0):
		return fmt.Errorf("alpha = %g: want a Zipf exponent greater than 1", c.Alpha)
	}
	return nil
}

// PowerLaw generates the dataset described by c. Parameter ids are a
// random permutation of popularity ranks, as hashed feature ids would be.
func PowerLaw(c PowerLawConfig) (*Graph, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if err := genFits(float64(c.Samples)*c.AvgDegree, c.Samples, c.Params,
		fmt.Sprintf("samples = %d, avg degree = %g", c.Samples, c.AvgDegree), membudget.Default()); err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(c.Seed, 0x706f776572))
	zipf := rand.NewZipf(rng, c.Alpha, 1, uint64(c.Params-1))
	perm := make([]uint32, c.Params)
	for i := range perm {
		perm[i] = uint32(i)
	}
	rng.Shuffle(len(perm), func(i, j int) { perm[i], perm[j] = perm[j], perm[i] })

	off := make([]int64, 1, c.Samples+1)
	adj := make([]uint32, 0, int(float64(c.Samples)*c.AvgDegree*1.05)+16)
	// Geometric degrees with mean AvgDegree, shifted to start at 1.
	pDeg := 1 / c.AvgDegree
	for u := 0; u < c.Samples; u++ {
		d := 1
		if pDeg < 1 {
			d += int(math.Log(1-rng.Float64()) / math.Log1p(-pDeg))
		}
		d = min(d, c.Params)
		row := adj[len(adj):]
		for tries := 0; len(row) < d && tries < 8*d; tries++ {
			v := perm[zipf.Uint64()]
			if !slices.Contains(row, v) {
				row = append(row, v)
			}
		}
		slices.Sort(row)
		adj = adj[:len(adj)+len(row)]
		off = append(off, int64(len(adj)))
	}
	return fromCSR(off, adj, c.Params, hiddenLabels(off, adj, c.Params, rng),
		Meta{Format: "generated", Source: fmt.Sprintf("powerlaw(n=%d,m=%d,deg=%g,alpha=%g,seed=%d)", c.Samples, c.Params, c.AvgDegree, c.Alpha, c.Seed)}), nil
}

// genBytesPerEdge and genBytesPerSample estimate a generated graph's
// memory: per edge the generated adjacency (with its 5% of slack), the
// reverse one and the values; per sample the offsets of both and the
// label.
const (
	genBytesPerEdge   = 16
	genBytesPerSample = 24
)

// genFits refuses, before anything is allocated, a generated graph of
// about edges edges whose estimated memory exceeds budget: config says
// what asked for it. Without it n = m = 100000 at gamma 0 asked for a
// 42 GB array and died of out of memory.
func genFits(edges float64, samples, params int, config string, budget int64) error {
	need := edges*genBytesPerEdge + float64(samples)*genBytesPerSample + float64(params)*4
	if need <= float64(budget) {
		return nil
	}
	return fmt.Errorf("%s: about %.4g edges need %s of memory, more than the %s this machine has to give (three quarters of the memory available): want fewer samples or edges",
		config, edges, membudget.FormatBytes(int64(min(need, math.MaxInt64/2))), membudget.FormatBytes(budget))
}

// hiddenLabels labels each row ±1 by the sign of a random linear model.
func hiddenLabels(off []int64, adj []uint32, m int, rng *rand.Rand) []float64 {
	w := make([]float32, m)
	for i := range w {
		w[i] = float32(rng.NormFloat64())
	}
	labels := make([]float64, len(off)-1)
	for u := range labels {
		s := float32(0)
		for _, v := range adj[off[u]:off[u+1]] {
			s += w[v]
		}
		labels[u] = -1
		if s > 0 {
			labels[u] = 1
		}
	}
	return labels
}

// fromCSR builds a graph from a sample-side CSR over dense parameter ids
// 0..m-1 with sorted rows. Every parameter 0..m-1 exists, used or not.
func fromCSR(off []int64, adj []uint32, m int, labels []float64, meta Meta) *Graph {
	poff, padj := transpose(off, adj, m)
	ids := make([]uint64, m)
	for i := range ids {
		ids[i] = uint64(i)
	}
	return &Graph{sampleOff: off, sampleAdj: adj, paramOff: poff, paramAdj: padj, labels: labels, paramIDs: ids, meta: meta}
}
