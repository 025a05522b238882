package gossip

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Order says where a worker's gradient is taken relative to the
// averaging.
type Order string

// The orders.
const (
	// AdaptThenCombine takes the local step, then averages the stepped
	// models: x_{k+1,i} = Σ_j W_ij (x_{k,j} − γ∇F_j(x_{k,j})). With F > 1
	// it is local SGD with gossip averaging; on a complete graph with
	// W = J and F = 1 it is synchronous data-parallel SGD step for step.
	AdaptThenCombine Order = "atc"
	// CombineThenAdapt is Alg. 2's line 5 and line 8 as written (and
	// D-PSGD's update): x_{k+1,i} = Σ_j W_ij x_{k,j} − γ∇F_i(x_{k,i}), the
	// gradient taken at the worker's model before averaging.
	CombineThenAdapt Order = "cta"
)

// Config is a decentralised training run's settings. Start from
// DefaultConfig; Validate names the field and the bound.
type Config struct {
	// Workers is N.
	Workers int `json:"workers"`
	// Topology names the base graph (ring, torus, exponential,
	// complete); ignored when Weights is set.
	Topology string `json:"topology"`
	// Weights, when set, is the mixing matrix W (a weight file);
	// otherwise W is Topology's Metropolis–Hastings weights.
	Weights Weights `json:"weights,omitempty"`
	// WeightsFile names where Weights came from, for reports.
	WeightsFile string `json:"weights_file,omitempty"`
	// LocalSteps is F: the workers average every F iterations (Alg. 2,
	// line 4).
	LocalSteps int `json:"local_steps"`
	// Matcha replaces the fixed W by MATCHA's random matchings of the
	// base topology with communication budget Budget in (0, 1].
	Matcha bool    `json:"matcha"`
	Budget float64 `json:"budget,omitempty"`
	// LR is the learning rate γ of plain SGD.
	LR float64 `json:"lr"`
	// LRDecay is the schedule of γ over the run (see Rate): "" or
	// "none" (constant), "cosine" (from γ down to 0 by the last
	// iteration) or "step:E1,E2,…" (divided by 10 after epochs E1, E2, …;
	// seed 003 trains CIFAR-10 with "step:100,150").
	LRDecay string `json:"lr_decay,omitempty"`
	// BatchWeighted scales each worker's step by its batch over the
	// mean batch, γ_i = γ·N·B_i/Batch, so that the mixing weights, equal
	// per worker, weigh every sample equally: on a complete graph with
	// F = 1 the average step is one SGD step on the union of the
	// workers' batches, whatever their sizes. Alg. 2 as written takes one
	// γ for all (false); with equal batches the two are the same.
	BatchWeighted bool `json:"batch_weighted,omitempty"`
	// Batch is the number of samples of one iteration over all workers:
	// an epoch is K = ⌈n/Batch⌉ iterations and each worker cuts its
	// shard into K batches, so a worker's batch is proportional to its
	// shard (B_{r_i} of Alg. 2 on ratio-constrained shards, Batch/N on
	// equal ones) and every sample is used once per epoch.
	Batch int `json:"batch"`
	// Epochs is the number of passes over the data.
	Epochs int `json:"epochs"`
	// Speeds are the workers' relative compute speeds r_i (nil: equal). A
	// worker of speed r sleeps (r_max/r − 1) times its measured compute
	// time after every step, so that a step takes r_max/r times as long
	// as it measured.
	Speeds []float64 `json:"worker_speeds,omitempty"`
	// Order is where the gradient is taken (AdaptThenCombine by default).
	Order Order `json:"order"`
	// Seed seeds the batches and MATCHA's draws.
	Seed uint64 `json:"seed"`
	// PointsPerEpoch is the number of points of the loss curve per epoch.
	PointsPerEpoch int `json:"points_per_epoch"`
	// Progress, when set, is called after each epoch of worker 0.
	Progress func(epoch int) `json:"-"`
}

// DefaultConfig returns 4 workers on a ring, F = 1, SGD with γ = 0.1,
// global batches of 256 (64 per worker on equal shards), 5 epochs,
// adapt-then-combine, seed 1 and 10 curve points per epoch.
func DefaultConfig() Config {
	return Config{Workers: 4, Topology: "ring", LocalSteps: 1, Budget: 0.5, LR: 0.1, Batch: 256, Epochs: 5,
		Order: AdaptThenCombine, Seed: 1, PointsPerEpoch: 10}
}

// Validate checks c; errors name the field (as the command line spells
// it) and what was expected.
func (c Config) Validate() error {
	switch {
	case c.Workers < 1:
		return fmt.Errorf("workers %d: want at least 1", c.Workers)
	case c.LocalSteps < 1:
		return fmt.Errorf("local-steps %d: want F ≥ 1 iterations between averagings", c.LocalSteps)
	case !(c.LR > 0) || math.IsInf(c.LR, 0):
		return fmt.Errorf("lr %v: want a finite learning rate > 0", c.LR)
	case c.Batch < 1:
		return fmt.Errorf("batch %d: want at least 1 sample per iteration over all workers", c.Batch)
	case c.Epochs < 1:
		return fmt.Errorf("epochs %d: want at least 1", c.Epochs)
	case c.PointsPerEpoch < 1:
		return fmt.Errorf("points per epoch %d: want at least 1", c.PointsPerEpoch)
	case c.Order != AdaptThenCombine && c.Order != CombineThenAdapt:
		return fmt.Errorf("order %q: want atc or cta", c.Order)
	}
	if _, err := parseDecay(c.LRDecay); err != nil {
		return err
	}
	if c.Matcha && !(c.Budget > 0 && c.Budget <= 1) {
		return fmt.Errorf("budget %v: want a communication budget c_b in (0, 1]", c.Budget)
	}
	if c.Matcha && c.Weights != nil {
		return fmt.Errorf("matcha draws its own weights from the topology's matchings: want --weights or --matcha, not both")
	}
	if err := CheckSpeeds(c.Speeds, c.Workers); err != nil {
		return err
	}
	if c.Weights != nil {
		if len(c.Weights) != c.Workers {
			return fmt.Errorf("weights %s: a %d×%d matrix for %d workers: want one row per worker", c.WeightsFile, len(c.Weights), len(c.Weights), c.Workers)
		}
		if err := c.Weights.Check(); err != nil {
			return fmt.Errorf("weights %s: %w", c.WeightsFile, err)
		}
		return nil
	}
	t, err := New(c.Topology, c.Workers)
	if err != nil {
		return err
	}
	return t.Validate()
}

// CheckSpeeds checks a list of worker speeds for n workers (nil: equal).
func CheckSpeeds(speeds []float64, n int) error {
	if speeds == nil {
		return nil
	}
	if len(speeds) != n {
		return fmt.Errorf("worker-speeds: %d speeds for %d workers: want one per worker", len(speeds), n)
	}
	for i, r := range speeds {
		if !(r > 0) || math.IsInf(r, 0) {
			return fmt.Errorf("worker-speeds: speed %d is %v: want a finite number > 0", i+1, r)
		}
	}
	return nil
}

// ParseSpeeds reads "r1,r2,…" (or "r1:r2:…"), each a finite number > 0.
func ParseSpeeds(s string) ([]float64, error) {
	fields := strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ':' })
	if len(fields) == 0 {
		return nil, fmt.Errorf("worker-speeds %q: want relative speeds such as 1,2,4,8", s)
	}
	out := make([]float64, len(fields))
	for i, f := range fields {
		v, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || !(v > 0) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("worker-speeds: speed %d %q: want a finite number > 0", i+1, f)
		}
		out[i] = v
	}
	return out, nil
}

// slowdown returns r_max/r_i for every worker (1 without speeds).
func slowdown(speeds []float64, n int) []float64 {
	out := make([]float64, n)
	rmax := 0.0
	for _, r := range speeds {
		rmax = max(rmax, r)
	}
	for i := range out {
		out[i] = 1
		if speeds != nil {
			out[i] = rmax / speeds[i]
		}
	}
	return out
}

// decay is a parsed learning-rate schedule.
type decay struct {
	cosine bool
	steps  []int // epochs after which γ is divided by 10, increasing
}

// parseDecay parses Config.LRDecay.
func parseDecay(s string) (decay, error) {
	switch s {
	case "", "none":
		return decay{}, nil
	case "cosine":
		return decay{cosine: true}, nil
	}
	list, ok := strings.CutPrefix(s, "step:")
	if !ok || list == "" {
		return decay{}, fmt.Errorf("lr-decay %q: want none, cosine or step:E1,E2,… (γ divided by 10 after each listed epoch)", s)
	}
	var d decay
	for _, f := range strings.Split(list, ",") {
		e, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || e < 1 {
			return decay{}, fmt.Errorf("lr-decay %q: epoch %q: want a whole number of epochs ≥ 1", s, f)
		}
		if len(d.steps) > 0 && e <= d.steps[len(d.steps)-1] {
			return decay{}, fmt.Errorf("lr-decay %q: epochs %d then %d: want them increasing", s, d.steps[len(d.steps)-1], e)
		}
		d.steps = append(d.steps, e)
	}
	return d, nil
}

// Rate returns the learning rate of iteration it (from 0) of epoch
// epoch (from 0), of total iterations in the whole run: γ for no decay;
// γ·(1 + cos(π·it/total))/2 for cosine; γ/10^m for step, where m is the
// number of listed epochs E ≤ epoch (the rate drops after epoch E, so
// epoch E+1, counted from 1, is the first at the lower rate). LRDecay
// must be valid.
func (c Config) Rate(epoch, it, total int) float64 {
	d, err := parseDecay(c.LRDecay)
	if err != nil {
		panic(err) // Validate refuses it first
	}
	return d.rate(c.LR, epoch, it, total)
}

// rate is Config.Rate with the schedule parsed.
func (d decay) rate(lr float64, epoch, it, total int) float64 {
	switch {
	case d.cosine:
		return lr * (1 + math.Cos(math.Pi*float64(it)/float64(total))) / 2
	case d.steps != nil:
		for _, e := range d.steps {
			if epoch >= e {
				lr /= 10
			}
		}
	}
	return lr
}

// TopologyWords names the communication graph of c: its weights file,
// its topology's matchings and budget with MATCHA, or its topology.
func (c Config) TopologyWords() string {
	if c.Weights != nil {
		return "weights " + c.WeightsFile
	}
	if c.Matcha {
		return fmt.Sprintf("%s matchings, budget %g", c.Topology, c.Budget)
	}
	return c.Topology
}
