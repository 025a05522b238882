package partition

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"

	"colo/graph"
	"colo/placement"
)

// MBPInitial selects how MBP partitions the coarsest graph.
type MBPInitial string

// The initial partitions of MBP.
const (
	// InitialRandom puts each coarse sample on a random machine with room
	// and each coarse parameter on a random machine, as seed 000 §5 does.
	InitialRandom MBPInitial = "random"
	// InitialGreedy grows the machines one after another by breadth-first
	// search over shared parameters from a random sample, and puts each
	// parameter on a machine that needs it.
	InitialGreedy MBPInitial = "greedy"
)

// MBPOptions are the settings of multilevel bipartite partitioning. Zero
// fields take the defaults documented on each.
type MBPOptions struct {
	// Initial is the partition of the coarsest graph; "" means
	// InitialRandom.
	Initial MBPInitial
	// Passes bounds the FM passes per level; 0 means DefaultRefinePasses.
	Passes int
	// Epsilon is the imbalance ε: |U_i| ≤ ⌈(1+ε)·n/k⌉; 0 means
	// DefaultRefineEpsilon.
	Epsilon float64
}

// Validate checks the settings and names the field and its bound.
func (o MBPOptions) Validate() error {
	switch o.Initial {
	case "", InitialRandom, InitialGreedy:
	default:
		return fmt.Errorf("mbp initial = %q: want random or greedy", string(o.Initial))
	}
	switch {
	case o.Passes < 0:
		return fmt.Errorf("mbp passes = %d: want a positive count (0: %d)", o.Passes, DefaultRefinePasses)
	case !(o.Epsilon >= 0) || math.IsInf(o.Epsilon, 0):
		return fmt.Errorf("mbp epsilon = %g: want a finite ε ≥ 0 (0: %g)", o.Epsilon, DefaultRefineEpsilon)
	}
	return nil
}

// MBPStats reports a run of MBP.
type MBPStats struct {
	Initial MBPInitial `json:"initial"`
	Levels  int        `json:"levels"`
	// Coarsest is the size of the coarsest graph: samples and parameters.
	CoarsestSamples int `json:"coarsest_samples"`
	CoarsestParams  int `json:"coarsest_params"`
	// OwnParams reports that MBP's own parameter placement was kept,
	// being no worse on T_max than opt.ParamAlgo's for its samples.
	OwnParams bool       `json:"own_params"`
	Params    ParamStats `json:"params"`
}

// MBP places g on opt.K machines by multilevel bipartite partitioning
// (seed 000 §5), with opt.MBP's settings:
//
//   - coarsening: samples and parameters are coarsened separately, each
//     level matching pairs of samples that share a parameter and pairs of
//     parameters that share a sample, the partner of most weight shared
//     (heavy-edge rating); a coarse sample weighs its samples, a coarse
//     parameter its parameters, and its users are those of its members.
//     Coarsening stops at about 100·k samples or when a level shrinks
//     less than 10%;
//   - initial partition of the coarsest graph: random, as in the paper,
//     or greedy (MBPInitial);
//   - uncoarsening: on every level, k-way FM (label propagation, the
//     move of each sample to its best target when that gains, on levels
//     of more than 2^18 edges) moves samples by gain in
//     inter-machine volume Σ_v |C_v \ {server of v}| (half of T_sum), the
//     largest gain first, each sample at most once per pass, under the
//     balance bound |U_i| ≤ ⌈(1+ε)n/k⌉ and on the finest level the memory
//     bound θ, then moves each parameter served by a machine that does not
//     need it to the least loaded machine that does, several passes per
//     level.
//
// At the end the parameters are also placed by opt.ParamAlgo for the
// final samples; MBP keeps whichever placement has the lower T_max. It
// reports an MBPStats under "mbp" to opt.Report.
func MBP(g *graph.Graph, opt Options) (*placement.Placement, error) {
	p, _, err := RunMBP(g, opt)
	return p, err
}

// RunMBP is MBP, returning its statistics too.
func RunMBP(g *graph.Graph, opt Options) (*placement.Placement, *MBPStats, error) {
	n, k := g.NumSamples(), opt.K
	if err := opt.Validate(n); err != nil {
		return nil, nil, err
	}
	mo := opt.MBP
	if err := mo.Validate(); err != nil {
		return nil, nil, err
	}
	if mo.Initial == "" {
		mo.Initial = InitialRandom
	}
	if mo.Passes == 0 {
		mo.Passes = DefaultRefinePasses
	}
	if mo.Epsilon == 0 {
		mo.Epsilon = DefaultRefineEpsilon
	}
	rng := placement.NewRand(opt.Seed)
	hi := make([]int64, k)
	for i := range hi {
		hi[i] = int64(math.Ceil((1 + mo.Epsilon) * float64(n) / float64(k)))
	}
	st := &MBPStats{Initial: mo.Initial}

	// Coarsen.
	levels := []*level{finest(g)}
	limit := max(coarseVerticesPerBlock*k, 64)
	total := int64(n)
	for {
		cur := levels[len(levels)-1]
		if cur.n <= limit {
			break
		}
		// The samples and the parameters are clustered independently:
		// concurrently, each in an order drawn in turn from rng.
		sorder, porder := rng.Perm(cur.n), rng.Perm(cur.m)
		var cid, ncid []int32
		var nc, nnc int
		var wg sync.WaitGroup
		wg.Go(func() { ncid, nnc = clusterIn(cur.transposed(), nil, math.MaxInt64, true, false, porder) })
		cid, nc = clusterIn(cur, nil, max(1, 3*total/int64(limit)), true, true, sorder)
		wg.Wait()
		if float64(nc) > 0.9*float64(cur.n) {
			break
		}
		levels = append(levels, contract(cur, cid, nc, ncid, nnc))
	}
	st.Levels = len(levels)
	top := levels[len(levels)-1]
	st.CoarsestSamples, st.CoarsestParams = top.n, top.m

	// Initial partition.
	part := make([]int32, top.n)
	owner := make([]int32, top.m)
	if mo.Initial == InitialGreedy {
		greedyInitial(top, k, hi, part, rng)
		s := newKState(top, k, part, owner, hi, 0)
		for e := range owner {
			owner[e] = -1
		}
		fixOwners(s, make([]int64, k))
	} else {
		size := make([]int64, k)
		for _, u := range rng.Perm(top.n) {
			i := rng.IntN(k)
			if size[i]+top.vw[u] > hi[i] {
				for j := range size {
					if size[j] < size[i] {
						i = j
					}
				}
			}
			part[u] = int32(i)
			size[i] += top.vw[u]
		}
		for e := range owner {
			owner[e] = int32(rng.IntN(k))
		}
	}

	// Uncoarsen with FM.
	for l := len(levels) - 1; l >= 0; l-- {
		cur := levels[l]
		if l < len(levels)-1 {
			fp := make([]int32, cur.n)
			for u, x := range cur.vmap {
				fp[u] = part[x]
			}
			fo := make([]int32, cur.m)
			for e, x := range cur.nmap {
				if x >= 0 {
					fo[e] = owner[x]
				} else if ps := cur.pins(e); len(ps) > 0 {
					fo[e] = fp[ps[0]] // a net left out above has one user cluster
				} else {
					fo[e] = int32(rng.IntN(k))
				}
			}
			part, owner = fp, fo
		}
		theta := int64(0)
		if l == 0 {
			theta = opt.Theta
		}
		s := newKState(cur, k, part, owner, hi, theta)
		load := make([]int64, k)
		for e, o := range owner {
			load[o] += cur.nw[e]
		}
		vol := s.volume()
		for pass := 0; pass < mo.Passes; pass++ {
			var g1 int64
			if int64(len(cur.vadj)) > maxFMEdges {
				g1 = s.lpPass(rng)
			} else {
				g1 = s.fm(rng, 1)
			}
			g2 := fixOwners(s, load)
			if float64(g1+g2) <= 1e-3*float64(vol) {
				break
			}
			vol -= g1 + g2
		}
	}
	p := &placement.Placement{K: k, Data: part, Param: owner}
	own, _ := placement.Evaluate(g, p, 0)
	q := p.Clone()
	var err error
	if st.Params, err = assignParamsWith(g, q, opt.ParamAlgo, rng.Uint64(), runtime.GOMAXPROCS(0)); err != nil {
		return nil, nil, err
	}
	if st.Params.TMax < own.TMax {
		p = q
	} else {
		st.OwnParams = true
	}
	if opt.Report != nil {
		opt.Report("mbp", st)
	}
	return p, st, nil
}

// maxFMEdges is the largest level, in edges, that MBP refines by FM;
// larger ones get label propagation, which costs one gain evaluation per
// sample and pass.
const maxFMEdges = 1 << 18

// fixOwners moves every net served by a block that has none of its pins
// to the block with pins of least served weight (load), a gain of w_e in
// volume each; it returns the gain.
func fixOwners(s *kstate, load []int64) int64 {
	var gain int64
	for e := 0; e < s.lv.m; e++ {
		o := int(s.owner[e])
		if o >= 0 && s.has(e, o) {
			continue
		}
		best := -1
		base := e * s.sd
		for x := 0; x < s.w; x++ {
			for m := s.nd[base+x]; m != 0; m &= m - 1 {
				c := x<<6 | bitsTrailing(m)
				if best < 0 || load[c] < load[best] {
					best = c
				}
			}
		}
		if best < 0 {
			if o < 0 {
				s.owner[e] = 0
				load[0] += s.lv.nw[e]
			}
			continue
		}
		if o >= 0 {
			load[o] -= s.lv.nw[e]
			gain += s.lv.nw[e]
		}
		s.owner[e] = int32(best)
		load[best] += s.lv.nw[e]
	}
	return gain
}

// greedyInitial grows blocks 0..k−2 in turn to 1/k of the weight by
// breadth-first search over nets from a random unassigned vertex; the
// rest goes to block k−1.
func greedyInitial(lv *level, k int, hi []int64, part []int32, rng *rand.Rand) {
	var total int64
	for _, w := range lv.vw {
		total += w
	}
	for u := range part {
		part[u] = -1
	}
	order := rng.Perm(lv.n)
	next := 0
	var queue []int32
	for i := 0; i < k-1; i++ {
		target := min(hi[i], (total+int64(k)-1)/int64(k))
		var size int64
		queue = queue[:0]
		for size < target {
			if len(queue) == 0 {
				for next < lv.n && part[order[next]] >= 0 {
					next++
				}
				if next == lv.n {
					break
				}
				queue = append(queue, int32(order[next]))
				part[order[next]] = int32(i)
				size += lv.vw[order[next]]
				continue
			}
			u := queue[0]
			queue = queue[1:]
			for _, e := range lv.nets(int(u)) {
				if len(lv.pins(int(e))) > maxRateNet {
					continue
				}
				for _, x := range lv.pins(int(e)) {
					if part[x] < 0 && size+lv.vw[x] <= target {
						part[x] = int32(i)
						size += lv.vw[x]
						queue = append(queue, int32(x))
					}
				}
			}
		}
	}
	for u := range part {
		if part[u] < 0 {
			part[u] = int32(k - 1)
		}
	}
}
