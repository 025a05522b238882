package placement

import (
	"math/bits"
	"runtime"
	"slices"
	"sync"

	"colo/graph"
)

// Cost is the cost-model evaluation of a placement. Per-machine slices are
// indexed by machine; traffic is in parameters per round.
type Cost struct {
	K int `json:"k"`
	// Totals.
	MMax int64 `json:"M_max"`
	TMax int64 `json:"T_max"`
	TSum int64 `json:"T_sum"`
	// RMax is the largest round bound R_i (Round).
	RMax       int64 `json:"R_max"`
	MaxSamples int64 `json:"max_samples"`
	// Objective is the seed-000 objective max|U_i| · T_max.
	Objective int64 `json:"objective"`
	// Theta is the memory bound θ (0: none) and OverTheta the number of
	// machines whose memory M_i exceeds it.
	Theta     int64 `json:"theta,omitempty"`
	OverTheta int   `json:"over_theta"`
	// Per machine.
	Samples []int64 `json:"samples"` // |U_i|
	Params  []int64 `json:"params"`  // |V_i|
	Memory  []int64 `json:"memory"`  // M_i = |N(U_i)|
	Worker  []int64 `json:"worker"`  // |N(U_i) \ V_i|
	Server  []int64 `json:"server"`  // Σ_{j≠i} |V_i ∩ N(U_j)|
	Traffic []int64 `json:"traffic"` // T_i = worker + server
	// Round is R_i = max(T_i, 2·Worker_i), the parameters machine i's
	// link carries one after another in a round of synchronous training
	// (see Totals).
	Round []int64 `json:"round"`
}

// Evaluate scores placement p of graph g, with memory bound theta (0 for
// none). It validates p first. It runs in O(|E|) time on up to GOMAXPROCS
// goroutines; the result does not depend on their number.
func Evaluate(g *graph.Graph, p *Placement, theta int64) (*Cost, error) {
	if err := p.Validate(g); err != nil {
		return nil, err
	}
	return evaluate(g, p, theta, runtime.GOMAXPROCS(0)), nil
}

// partial is one goroutine's share of the per-machine counters.
type partial struct{ memory, worker, server []int64 }

// minEdgesPerGoroutine is the least work worth a goroutine in Evaluate.
const minEdgesPerGoroutine = 1 << 18

// evaluate scores p on up to workers goroutines, fewer on small graphs.
func evaluate(g *graph.Graph, p *Placement, theta int64, workers int) *Cost {
	workers = max(1, min(workers, int(g.NumEdges()/minEdgesPerGoroutine)))
	return evaluateSplit(g, p, theta, workers)
}

// evaluateSplit scores p with the parameters split into ranges of about
// equal edge counts, one goroutine each.
func evaluateSplit(g *graph.Graph, p *Placement, theta int64, workers int) *Cost {
	bounds := splitByEdges(g.ParamOffsets(), workers)
	parts := make([]partial, len(bounds)-1)
	var wg sync.WaitGroup
	for w := range parts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			parts[w] = countRange(g, p, bounds[w], bounds[w+1])
		}()
	}
	wg.Wait()
	return costOf(g, p, theta, parts)
}

// costOf is the cost of p given the per-machine counts of goroutines
// over all the parameters.
func costOf(g *graph.Graph, p *Placement, theta int64, parts []partial) *Cost {
	k := p.K
	m := g.NumParams()
	c := &Cost{
		K:       k,
		Samples: make([]int64, k),
		Params:  make([]int64, k),
		Memory:  make([]int64, k),
		Worker:  make([]int64, k),
		Server:  make([]int64, k),
		Traffic: make([]int64, k),
		Round:   make([]int64, k),
		Theta:   theta,
	}
	for _, i := range p.Data {
		c.Samples[i]++
	}
	for v := 0; v < m; v++ {
		c.Params[p.Param[v]]++
	}
	for _, part := range parts {
		for i := 0; i < k; i++ {
			c.Memory[i] += part.memory[i]
			c.Worker[i] += part.worker[i]
			c.Server[i] += part.server[i]
		}
	}
	c.Totals()
	return c
}

// Totals fills the figures that follow from the per-machine counts
// (Samples, Memory, Worker, Server) and Theta: Traffic, Round, TSum,
// OverTheta, MMax, TMax, RMax, MaxSamples and Objective. Evaluate calls
// it; so does any other way of counting a placement (out of core, from
// masks).
//
// T_i counts what machine i's link carries each way per round: out, its
// server's answers (Server_i) and its worker's pushes (Worker_i); in, the
// reverse. It is the round's time when the two directions are busy all
// round, as in asynchronous training. Under BSP they cannot be: a
// worker's pulled values (Worker_i, in) must all be there before its
// gradient (Worker_i, out) is computed, and its next pull is answered
// only after every push of the round. So a round keeps the link busy at
// least R_i = max(T_i, 2·Worker_i): a machine that pulls more than it
// serves waits for its pulls and then for its pushes, one after the
// other. R_max over T_max is what synchronous training loses to that;
// it is 1 when every machine serves at least what it pulls.
func (c *Cost) Totals() {
	c.TSum, c.OverTheta = 0, 0
	if len(c.Round) != len(c.Traffic) {
		c.Round = make([]int64, len(c.Traffic))
	}
	for i := range c.Traffic {
		c.Traffic[i] = c.Worker[i] + c.Server[i]
		c.Round[i] = max(c.Traffic[i], 2*c.Worker[i])
		c.TSum += c.Traffic[i]
		if c.Theta > 0 && c.Memory[i] > c.Theta {
			c.OverTheta++
		}
	}
	c.MMax = slices.Max(c.Memory)
	c.TMax = slices.Max(c.Traffic)
	c.RMax = slices.Max(c.Round)
	c.MaxSamples = slices.Max(c.Samples)
	c.Objective = c.MaxSamples * c.TMax
}

// countRange counts memory, worker and server traffic for parameters
// [lo, hi): each machine whose worker needs v holds it (memory) and, unless
// it also serves v, pulls it from the server that does. With k ≤ 64 the
// machines that need v are a bit mask, built without a branch per edge
// (countRangeMask); beyond, a stamp per machine marks them.
func countRange(g *graph.Graph, p *Placement, lo, hi int) partial {
	if p.K <= 64 {
		return countRangeMask(g, p, lo, hi)
	}
	k := p.K
	r := partial{memory: make([]int64, k), worker: make([]int64, k), server: make([]int64, k)}
	stamp := make([]int, k)
	for i := range stamp {
		stamp[i] = -1
	}
	off, adj := g.ParamOffsets(), g.ParamAdjacency()
	data := p.Data
	for v := lo; v < hi; v++ {
		owner := p.Param[v]
		for _, u := range adj[off[v]:off[v+1]] {
			j := data[u]
			if stamp[j] == v {
				continue
			}
			stamp[j] = v
			r.memory[j]++
			if j != owner {
				r.worker[j]++
				r.server[owner]++
			}
		}
	}
	return r
}

// countRangeMask is countRange for k ≤ 64: the machines whose workers
// need v are the bits of one word, each of them holds v, all but its
// server pull it, and the server serves as many. The workers' pulls are
// counted as holds less the parameters each machine serves to itself.
func countRangeMask(g *graph.Graph, p *Placement, lo, hi int) partial {
	k := p.K
	r := partial{memory: make([]int64, k), worker: make([]int64, k), server: make([]int64, k)}
	self := make([]int64, k)
	off, adj := g.ParamOffsets(), g.ParamAdjacency()
	data := p.Data
	for v := lo; v < hi; v++ {
		need := machinesOf(adj[off[v]:off[v+1]], data)
		owner := p.Param[v]
		for x := need; x != 0; x &= x - 1 {
			r.memory[bits.TrailingZeros64(x)]++
		}
		in := int64(need >> uint32(owner) & 1)
		self[owner] += in
		r.server[owner] += int64(bits.OnesCount64(need)) - in
	}
	for i := range k {
		r.worker[i] = r.memory[i] - self[i]
	}
	return r
}

// machinesOf returns the machines (data, k ≤ 64) of the samples us as
// the bits of one word: countRangeMask's inner loop, in a function of its
// own, not inlined: inlined, the word went to the stack at every sample.
//
//go:noinline
func machinesOf(us []uint32, data []int32) uint64 {
	var need uint64
	for _, u := range us {
		need |= 1 << (uint32(data[u]) & 63)
	}
	return need
}

// splitByEdges returns parts+1 boundaries that split the rows of a CSR
// with the given offsets into ranges of about equal numbers of entries.
func splitByEdges(off []int64, parts int) []int {
	rows := len(off) - 1
	total := off[rows]
	b := make([]int, 0, parts+1)
	b = append(b, 0)
	for w := 1; w < parts; w++ {
		target := total * int64(w) / int64(parts)
		i, _ := slices.BinarySearch(off, target)
		i = max(i, b[len(b)-1])
		b = append(b, min(i, rows))
	}
	return append(b, rows)
}

// BaselineSeeds is the number of random placements whose mean cost is the
// baseline that improvements are measured against.
const BaselineSeeds = 5

// Baseline is the mean cost of BaselineSeeds uniformly random placements
// (seeds 1..BaselineSeeds).
type Baseline struct {
	MMax       float64 `json:"M_max"`
	TMax       float64 `json:"T_max"`
	TSum       float64 `json:"T_sum"`
	RMax       float64 `json:"R_max"`
	MaxSamples float64 `json:"max_samples"`
	Objective  float64 `json:"objective"`
}

// RandomBaseline evaluates BaselineSeeds uniformly random placements of g
// on k machines and returns their mean cost.
func RandomBaseline(g *graph.Graph, k int) Baseline {
	return randomBaseline(g, k, runtime.GOMAXPROCS(0))
}

// randomBaseline is RandomBaseline with each evaluation on up to workers
// goroutines (the result does not depend on their number).
func randomBaseline(g *graph.Graph, k, workers int) Baseline {
	costs := make([]*Cost, BaselineSeeds)
	if k > 64 {
		// One placement in memory at a time.
		for s := range costs {
			costs[s] = evaluate(g, Uniform(g, k, NewRand(uint64(s+1))), 0, workers)
		}
		return MeanOf(costs)
	}
	ps := make([]*Placement, BaselineSeeds)
	for s := range ps {
		ps[s] = Uniform(g, k, NewRand(uint64(s+1)))
	}
	// All the placements in one pass over the edges: each sample's
	// machines packed in a word, 6 bits each.
	packed := make([]uint32, g.NumSamples())
	for s, p := range ps {
		for u, i := range p.Data {
			packed[u] |= uint32(i) << (6 * s)
		}
	}
	workers = max(1, min(workers, int(g.NumEdges()/minEdgesPerGoroutine)))
	bounds := splitByEdges(g.ParamOffsets(), workers)
	parts := make([][BaselineSeeds]partial, len(bounds)-1)
	var wg sync.WaitGroup
	for w := range parts {
		wg.Go(func() { parts[w] = countBaselineRange(g, ps, packed, bounds[w], bounds[w+1]) })
	}
	wg.Wait()
	for s, p := range ps {
		of := make([]partial, len(parts))
		for w := range parts {
			of[w] = parts[w][s]
		}
		costs[s] = costOf(g, p, 0, of)
	}
	return MeanOf(costs)
}

// countBaselineRange is countRangeMask for the BaselineSeeds placements
// ps at once, k ≤ 64, whose machines for sample u are packed[u]'s 6-bit
// fields: one pass over the users of each parameter makes the masks of
// all of them.
func countBaselineRange(g *graph.Graph, ps []*Placement, packed []uint32, lo, hi int) (r [BaselineSeeds]partial) {
	k := ps[0].K
	var self [BaselineSeeds][]int64
	for s := range r {
		r[s] = partial{memory: make([]int64, k), worker: make([]int64, k), server: make([]int64, k)}
		self[s] = make([]int64, k)
	}
	off, adj := g.ParamOffsets(), g.ParamAdjacency()
	_ = [1]int{}[BaselineSeeds-5] // five masks, unrolled below
	for v := lo; v < hi; v++ {
		var need [BaselineSeeds]uint64
		for _, u := range adj[off[v]:off[v+1]] {
			x := packed[u]
			need[0] |= 1 << (x & 63)
			need[1] |= 1 << (x >> 6 & 63)
			need[2] |= 1 << (x >> 12 & 63)
			need[3] |= 1 << (x >> 18 & 63)
			need[4] |= 1 << (x >> 24 & 63)
		}
		for s := range r {
			owner := ps[s].Param[v]
			for x := need[s]; x != 0; x &= x - 1 {
				r[s].memory[bits.TrailingZeros64(x)]++
			}
			in := int64(need[s] >> uint32(owner) & 1)
			self[s][owner] += in
			r[s].server[owner] += int64(bits.OnesCount64(need[s])) - in
		}
	}
	for s := range r {
		for i := range k {
			r[s].worker[i] = r[s].memory[i] - self[s][i]
		}
	}
	return r
}

// MeanOf returns the mean of the costs' figures, summed in their order
// (so that equal costs in equal order give equal bits).
func MeanOf(costs []*Cost) Baseline {
	var b Baseline
	for _, c := range costs {
		b.MMax += float64(c.MMax)
		b.TMax += float64(c.TMax)
		b.TSum += float64(c.TSum)
		b.RMax += float64(c.RMax)
		b.MaxSamples += float64(c.MaxSamples)
		b.Objective += float64(c.Objective)
	}
	n := float64(len(costs))
	b.MMax /= n
	b.TMax /= n
	b.TSum /= n
	b.RMax /= n
	b.MaxSamples /= n
	b.Objective /= n
	return b
}

// Improvement is the gain of a placement over the random baseline per
// metric, in percent: (random − x) / x · 100. A metric of value 0 has no
// finite improvement and is left nil.
type Improvement struct {
	MMax      *float64 `json:"M_max"`
	TMax      *float64 `json:"T_max"`
	TSum      *float64 `json:"T_sum"`
	RMax      *float64 `json:"R_max"`
	Objective *float64 `json:"objective"`
}

// ImprovementOver returns the improvement of c over the baseline b.
func ImprovementOver(b Baseline, c *Cost) Improvement {
	return Improvement{
		MMax:      improvement(b.MMax, c.MMax),
		TMax:      improvement(b.TMax, c.TMax),
		TSum:      improvement(b.TSum, c.TSum),
		RMax:      improvement(b.RMax, c.RMax),
		Objective: improvement(b.Objective, c.Objective),
	}
}

func improvement(random float64, x int64) *float64 {
	if x == 0 {
		return nil
	}
	v := (random - float64(x)) / float64(x) * 100
	return &v
}

// Summary is the record of one placement as written to summary.json and
// printed by `colo partition`, `colo eval` and the benchmarks: how it was
// made, what it costs and how that compares with random placement.
type Summary struct {
	Algorithm string  `json:"algorithm"`
	Seed      uint64  `json:"seed"`
	Seconds   float64 `json:"seconds"`
	Dataset   string  `json:"dataset"`
	// DataChecksum is the checksum of the data file the placement was
	// made from (internal/datasum), so that a reader refuses another
	// dataset's placement; empty in a summary of an earlier version.
	DataChecksum string `json:"data_checksum,omitempty"`
	NumSamp      int    `json:"num_samples"`
	NumParams    int    `json:"num_params"`
	NumEdges     int64  `json:"num_edges"`
	*Cost
	Random      Baseline    `json:"random"`
	Improvement Improvement `json:"improvement_over_random"`
	// Details holds what a partitioner reports of its own run.
	Details map[string]any `json:"details,omitempty"`
}

// NewSummary evaluates p on g against the random baseline and returns the
// summary with the algorithm fields left for the caller to fill.
func NewSummary(g *graph.Graph, p *Placement, theta int64) (*Summary, error) {
	c, err := Evaluate(g, p, theta)
	if err != nil {
		return nil, err
	}
	return summaryOf(g, c, RandomBaseline(g, p.K)), nil
}

// NewSummaryAgainst is NewSummary with the random baseline b already
// evaluated, for instance by StartBaseline while the placement was made.
func NewSummaryAgainst(g *graph.Graph, p *Placement, theta int64, b Baseline) (*Summary, error) {
	c, err := Evaluate(g, p, theta)
	if err != nil {
		return nil, err
	}
	return summaryOf(g, c, b), nil
}

// StartBaseline evaluates RandomBaseline(g, k) on one goroutine of its own
// and returns the function that waits for it (safe to call from any
// goroutine, any number of times). A command that partitions on one core
// leaves the baseline another meanwhile; beside a partitioner on several,
// the two share the cores.
func StartBaseline(g *graph.Graph, k int) (wait func() Baseline) {
	done := make(chan Baseline, 1)
	go func() { done <- randomBaseline(g, k, 1) }()
	return sync.OnceValue(func() Baseline { return <-done })
}

// summaryOf is the summary of cost c against baseline b.
func summaryOf(g *graph.Graph, c *Cost, b Baseline) *Summary {
	return &Summary{
		Dataset:     g.Meta().Source,
		NumSamp:     g.NumSamples(),
		NumParams:   g.NumParams(),
		NumEdges:    g.NumEdges(),
		Cost:        c,
		Random:      b,
		Improvement: ImprovementOver(b, c),
	}
}
