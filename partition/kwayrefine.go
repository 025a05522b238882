package partition

import (
	"cmp"
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"runtime"
	"slices"

	"colo/graph"
	"colo/placement"
)

// RefineTarget is the cost that Refine lowers.
type RefineTarget string

// The refinement targets.
const (
	// TargetTMax is T_max, the traffic of the busiest machine.
	TargetTMax RefineTarget = "tmax"
	// TargetTSum is T_sum, the total traffic.
	TargetTSum RefineTarget = "tsum"
	// TargetObjective is seed 000's max|U_i| · T_max.
	TargetObjective RefineTarget = "objective"
)

// RefineTargets returns the refinement targets.
func RefineTargets() []RefineTarget { return []RefineTarget{TargetTMax, TargetTSum, TargetObjective} }

// RefineOptions are the settings of the k-way refinement. Zero fields take
// the defaults documented on each.
type RefineOptions struct {
	// Enabled runs the refinement after any partitioner; the name suffix
	// "+refine" does the same.
	Enabled bool
	// Target is the cost to lower; "" means TargetTMax.
	Target RefineTarget
	// Epsilon is the imbalance ε: a move may not take |U_i| above
	// ⌈(1+ε)·n/k⌉ (nor above its size before, if larger). 0 means
	// DefaultRefineEpsilon; a tiny value such as 1e-9 keeps ⌈n/k⌉. With
	// TargetObjective the bound is instead the largest |U_i| before, so
	// that max|U_i| never grows.
	Epsilon float64
	// VCycles is the number of multilevel V-cycles: the samples are
	// clustered within their machines, level by level, and FM runs on
	// every level on the way back up. 0 means DefaultVCycles; negative
	// means none (FM on the graph itself only).
	VCycles int
	// Passes bounds the FM passes per level; 0 means DefaultRefinePasses.
	Passes int
	// Patience is the share of a level's vertices that an FM pass moves
	// past its best prefix (at least 32 moves) before it gives up: more
	// climbs out of deeper local minima, at more cost. 0 means
	// DefaultPatience; at most 1.
	Patience float64
	// Matching makes the V-cycles contract pairs of samples instead of
	// clusters: more levels, each moving smaller groups, at more cost.
	Matching bool
	// Anneal, for the targets T_max and objective, adds simulated
	// annealing of the samples on the busiest machine's boundary after FM
	// (see anneal.go): Anneal steps per sample. 0 means none.
	Anneal int
}

// Defaults of RefineOptions.
const (
	DefaultRefineEpsilon = 0.03
	DefaultVCycles       = 1
	DefaultRefinePasses  = 4
	DefaultPatience      = defaultPatience
)

// Validate checks the settings and names the field and its bound.
func (o RefineOptions) Validate() error {
	switch o.Target {
	case "", TargetTMax, TargetTSum, TargetObjective:
	default:
		return fmt.Errorf("refine target = %q: want tmax, tsum or objective", string(o.Target))
	}
	switch {
	case !(o.Epsilon >= 0) || math.IsInf(o.Epsilon, 0):
		return fmt.Errorf("refine epsilon = %g: want a finite ε ≥ 0 (0: %g)", o.Epsilon, DefaultRefineEpsilon)
	case o.Passes < 0:
		return fmt.Errorf("refine passes = %d: want a positive count (0: %d)", o.Passes, DefaultRefinePasses)
	case !(o.Patience >= 0 && o.Patience <= 1):
		return fmt.Errorf("refine patience = %g: want a share in [0, 1] (0: %g)", o.Patience, DefaultPatience)
	case o.Anneal < 0:
		return fmt.Errorf("refine anneal = %d: want steps per sample ≥ 0 (0: none)", o.Anneal)
	}
	return nil
}

func (o RefineOptions) withDefaults() RefineOptions {
	if o.Target == "" {
		o.Target = TargetTMax
	}
	if o.Epsilon == 0 {
		o.Epsilon = DefaultRefineEpsilon
	}
	if o.VCycles == 0 {
		o.VCycles = DefaultVCycles
	}
	if o.Passes == 0 {
		o.Passes = DefaultRefinePasses
	}
	if o.Patience == 0 {
		o.Patience = DefaultPatience
	}
	return o
}

// KWayStats reports a run of Refine.
type KWayStats struct {
	Target  RefineTarget `json:"target"`
	VCycles int          `json:"vcycles"`
	Levels  int          `json:"levels"` // of the last V-cycle
	// Before and After are the target's value before and after; Kept
	// reports that the input was returned because nothing was better.
	Before int64 `json:"before"`
	After  int64 `json:"after"`
	Kept   bool  `json:"kept,omitempty"`
	// VolumeBefore and VolumeAfter are the connectivity Σ_v (c_v − 1) of
	// the data partition, half of T_sum once every parameter sits on a
	// machine that needs it.
	VolumeBefore int64 `json:"volume_before"`
	VolumeAfter  int64 `json:"volume_after"`
	// MaxMoves counts the moves of the phase that lowers T_max, Squeezes
	// the rounds of squeeze that did.
	MaxMoves int64 `json:"max_moves"`
	Squeezes int   `json:"squeezes"`
	// AnnealBefore and AnnealAfter are the largest boundary max_i B_i
	// before and after the annealing, when it ran.
	AnnealBefore int64      `json:"anneal_before,omitempty"`
	AnnealAfter  int64      `json:"anneal_after,omitempty"`
	Params       ParamStats `json:"params"`
}

// targetValue returns the value of target in c.
func targetValue(t RefineTarget, c *placement.Cost) int64 {
	switch t {
	case TargetTSum:
		return c.TSum
	case TargetObjective:
		return c.Objective
	}
	return c.TMax
}

// Refine improves a finished placement p of g and returns the result; p
// is not modified. It never returns a placement worse than p on its
// target (opt.Refine.Target), whose bounds it keeps: the balance bound of
// opt.Refine.Epsilon and the memory bound opt.Theta (a move may not take
// |N(U_i)| above θ).
//
// First the samples: k-way FM (Fiduccia–Mattheyses) on the connectivity
// Σ_v (c_v − 1) of the data partition, where c_v is the number of
// machines that need parameter v: the move of largest gain first,
// negative gains included, each sample at most once per pass, and the
// moves past the best prefix undone; gains are computed from per-parameter
// counts of users on each machine and bit masks of the machines that
// need it, so a gain costs O(Σ_v∈N(u) c_v). For TargetTMax and
// TargetObjective a move may not take |N(U_i)| above fmMemorySlack times
// the input's largest: lowering the connectivity alone can pack the
// samples of highest degree on one machine. Optionally around that,
// multilevel V-cycles: samples are clustered within their machines by the
// heavy-edge rating and contracted level by level, and FM runs on each
// level on the way back up, which moves whole groups of samples. Then the
// parameters, by opt.ParamAlgo. For TargetTMax and TargetObjective a last
// phase moves samples and parameters off the busiest machine while that
// lowers it and no machine it touches reaches it (see maxPhase), and
// squeezes a machine that stays well above the mean (see squeeze). When
// all that still leaves T_max above the input's (hubs can crowd one
// machine once the samples are packed for T_sum), the moves off the
// busiest machine are tried on the input instead.
func Refine(g *graph.Graph, p *placement.Placement, opt Options) (*placement.Placement, *KWayStats, error) {
	q, st, _, err := refine(g, p, opt, nil)
	return q, st, err
}

// refine is Refine, and returns also the cost of its result under
// opt.Theta (which it evaluates in any case). Its V-cycles take their
// memory from mem (nil: a levelMem of their own), which Best hands from
// one start to the next.
func refine(g *graph.Graph, p *placement.Placement, opt Options, mem *levelMem) (*placement.Placement, *KWayStats, *placement.Cost, error) {
	if err := p.Validate(g); err != nil {
		return nil, nil, nil, err
	}
	ro := opt.Refine
	if err := ro.Validate(); err != nil {
		return nil, nil, nil, err
	}
	if err := opt.ParamAlgo.Validate(); err != nil {
		return nil, nil, nil, err
	}
	ro = ro.withDefaults()
	k, n := p.K, g.NumSamples()
	before, err := placement.Evaluate(g, p, opt.Theta)
	if err != nil {
		return nil, nil, nil, err
	}
	st := &KWayStats{Target: ro.Target, Before: targetValue(ro.Target, before)}
	hi := make([]int64, k)
	for i := range hi {
		if ro.Target == TargetObjective {
			hi[i] = before.MaxSamples
		} else {
			hi[i] = max(int64(math.Ceil((1+ro.Epsilon)*float64(n)/float64(k))), before.Samples[i])
		}
	}
	rng := placement.NewRand(opt.Seed ^ 0x726566696e65)
	q := p.Clone()
	lv := finest(g)
	floating := floatingNets(lv.m)
	theta := opt.Theta
	if theta > 0 && before.OverTheta > 0 {
		theta = 0 // the input breaks the bound already: do not enforce it
	}
	// FM lowers the connectivity, on graphs with hubs by packing the
	// samples of highest degree on one machine, whose traffic then stays
	// far above the rest whatever the parameters. For T_max and the
	// objective it keeps every |N(U_i)| within fmMemorySlack times the
	// input's largest (and θ).
	fmTheta := theta
	if c := int64(fmMemorySlack * float64(before.MMax)); ro.Target != TargetTSum && (fmTheta == 0 || c < fmTheta) {
		fmTheta = c
	}
	// One state of the samples' level for the FM passes on it, kept
	// with its gain cache from pass to pass and V-cycle to V-cycle.
	s := newKState(lv, k, q.Data, floating, hi, fmTheta)
	s.patience = ro.Patience
	s.keepCache = true
	st.VolumeBefore = s.volume()
	st.VCycles, st.Levels = refineSamples(s, ro, rng, false, mem)
	if ro.Anneal > 0 && ro.Target != TargetTSum {
		st.AnnealBefore, st.AnnealAfter = anneal(g, k, q.Data, hi, theta, ro.Anneal*n, rng)
		s = newKState(lv, k, q.Data, floating, hi, theta)
	}
	st.VolumeAfter = s.volume()
	if st.Params, err = assignParamsWith(g, q, opt.ParamAlgo, rng.Uint64(), runtime.GOMAXPROCS(0)); err != nil {
		return nil, nil, nil, err
	}
	if ro.Target != TargetTSum {
		// The counts of q's samples are s's: the phase takes them over.
		st.MaxMoves = maxPhaseOn(s.serving(q.Param, theta), q, rng)
		s = nil
		st.Squeezes = squeeze(g, lv, k, q, hi, theta, ro.Passes, opt.ParamAlgo, rng)
	}
	after, err := placement.Evaluate(g, q, opt.Theta)
	if err != nil {
		return nil, nil, nil, err
	}
	st.After = targetValue(ro.Target, after)
	if ro.Target != TargetTSum && st.After > st.Before {
		// The samples moved for T_sum left a machine busier than the
		// input's busiest: try the moves off the busiest machine on the
		// input instead.
		r := p.Clone()
		st.MaxMoves = maxPhase(lv, k, r, hi, theta, rng)
		if c := evaluate(g, r, opt.Theta); targetValue(ro.Target, c) < st.After {
			q, after, st.After = r, c, targetValue(ro.Target, c)
		}
	}
	if st.After > st.Before || (opt.Theta > 0 && after.OverTheta > before.OverTheta) {
		st.After, st.Kept = st.Before, true
		q, after = p.Clone(), before
	}
	if opt.Report != nil {
		opt.Report("refine", st)
	}
	return q, st, after, nil
}

// fmMemorySlack is how far FM may take a machine's |N(U_i)| above the
// largest of the input, for the targets T_max and objective: enough for
// the refined placements of text data (up to 1.17 on 20 Newsgroups), not
// for a machine holding the hubs of a graph (2.2 on soc-Slashdot0902 at
// k = 16).
const fmMemorySlack = 1.2

// coarseVerticesPerBlock sets where coarsening stops: at about this many
// vertices per block.
const coarseVerticesPerBlock = 100

// refineSamples runs Refine's passes on the samples of s: FM on s.lv,
// then ro.VCycles V-cycles, and returns the V-cycles run and the levels
// of the last. With rebuild, each V-cycle counts its finest level anew
// instead of moving the samples of s (s is then out of date once the
// first V-cycle ends): the same partition at more cost, kept as the
// reference of TestVCycleKeepsState. The V-cycles take their memory from
// mem, or from a levelMem of their own when nil.
func refineSamples(s *kstate, ro RefineOptions, rng *rand.Rand, rebuild bool, mem *levelMem) (vcycles, levels int) {
	s.fm(rng, ro.Passes)
	if ro.VCycles > 0 && mem == nil {
		mem = new(levelMem)
	}
	for c := 0; c < ro.VCycles; c++ {
		levels = vcycle(s, ro, rng, rebuild, mem)
		vcycles++
	}
	return vcycles, levels
}

// vcycle runs one V-cycle on the data partition of top (top.part, of
// level top.lv, with its bounds top.hi and top.theta): clusters of
// samples within one block are contracted level by level until about
// coarseVerticesPerBlock·k vertices remain or a level shrinks by less
// than 10%; then FM runs on every level from the coarsest to top.lv, the
// partition projected down at each step, with ro's passes and patience;
// with ro.Matching the clusters are pairs. On top.lv itself the
// projection moves the samples whose block changed in top, which keeps
// its counts and gain cache: the coarse levels move a few hundred of
// the 11,269 samples of 20 Newsgroups at k = 8, where counting anew
// reads every pin (as rebuild does, see refineSamples). It returns the
// number of levels. Its levels, their maps and FM states are built in
// mem (nil: allocated) and given back at the end.
func vcycle(top *kstate, ro RefineOptions, rng *rand.Rand, rebuild bool, mem *levelMem) int {
	lv, k, part, hi := top.lv, top.k, top.part, top.hi
	levels := []*level{lv}
	parts := [][]int32{part}
	limit := max(coarseVerticesPerBlock*k, 64)
	var total int64
	for _, w := range lv.vw {
		total += w
	}
	for {
		cur := levels[len(levels)-1]
		if cur.n <= limit {
			break
		}
		maxW := max(1, 3*total/int64(limit))
		cid, nc := clusterScanMem(cur, parts[len(parts)-1], maxW, ro.Matching, true, rng.Perm(cur.n), true, mem)
		if float64(nc) > 0.9*float64(cur.n) {
			mem.putI32(cid)
			break
		}
		c := contractMem(cur, cid, nc, nil, 0, mem)
		pc := mem.grabI32(nc)
		for u, x := range cid {
			pc[x] = parts[len(parts)-1][u]
		}
		levels = append(levels, c)
		parts = append(parts, pc)
	}
	// Every coarse level's nets float: one array of −1 for all.
	var floating []int32
	if len(levels) > 1 {
		floating = mem.grabI32(levels[1].m)
		for e := range floating {
			floating[e] = -1
		}
	}
	for l := len(levels) - 1; l >= 0; l-- {
		cur := levels[l]
		if l == 0 && !rebuild {
			if len(levels) > 1 {
				for u, x := range cur.vmap {
					if b := parts[1][x]; b != part[u] {
						top.move(u, int(b), nil)
					}
				}
			}
			top.fm(rng, ro.Passes)
			break
		}
		if l < len(levels)-1 {
			for u, x := range cur.vmap {
				parts[l][u] = parts[l+1][x]
			}
		}
		th := int64(0)
		owner := floating
		if l == 0 {
			th = top.theta
			owner = floatingNets(cur.m)
		} else {
			owner = floating[:cur.m]
		}
		s := newKStateMem(cur, k, parts[l], owner, hi, th, mem)
		s.patience = ro.Patience
		s.fm(rng, ro.Passes)
		s.release(mem)
	}
	// Give back the coarse levels, their parts and the maps of all.
	mem.putI32(floating)
	for l, cur := range levels {
		if l > 0 {
			mem.putLevel(cur)
			mem.putI32(parts[l])
		} else {
			mem.putI32(cur.vmap, cur.nmap)
		}
		cur.vmap, cur.nmap = nil, nil
	}
	return len(levels)
}

// traffic returns T_i of every block of s from scratch: the nets a block
// needs and does not serve, plus, for the nets it serves, the other blocks
// that need them.
func (s *kstate) traffic() []int64 {
	t := make([]int64, s.k)
	for e := 0; e < s.lv.m; e++ {
		w, o := s.lv.nw[e], int(s.owner[e])
		base := e * s.sd
		l := 0
		for x := 0; x < s.w; x++ {
			for m := s.nd[base+x]; m != 0; m &= m - 1 {
				i := x<<6 | bitsTrailing(m)
				l++
				if i != o {
					t[i] += w
				}
			}
		}
		if l > 0 {
			if s.has(e, o) {
				l--
			}
			t[o] += w * int64(l)
		}
	}
	return t
}

// sampleDelta adds to dt the change of every T_i if vertex u moved to
// block c, recording the blocks touched.
func (s *kstate) sampleDelta(u, c int, dt []int64, touched []int32) []int32 {
	a := int(s.part[u])
	bump := func(i int, d int64) {
		if dt[i] == 0 && !s.tmark[i] {
			s.tmark[i] = true
			touched = append(touched, int32(i))
		}
		dt[i] += d
	}
	for _, e := range s.lv.nets(u) {
		e := int(e)
		w, o := s.lv.nw[e], int(s.owner[e])
		if s.single(e, a) && o != a {
			bump(a, -w)
			bump(o, -w)
		}
		if !s.has(e, c) && o != c {
			bump(c, w)
			bump(o, w)
		}
	}
	return touched
}

// maxPhase lowers T_max of the placement q (samples and parameters) by
// moves off the busiest machine b. Each round takes b with T_b = L, the
// current T_max, and visits its parameters and then its samples in a
// random order: a parameter moves to another machine (one that needs it
// then serves the others and stops pulling it; one that does not serves
// them all, which costs T_sum but uses a machine with little traffic),
// a sample to a machine its parameters touch, when the move lowers T_b
// and leaves every machine it touches below L (the cheapest such target
// in total traffic). A round that lowers T_b below L lowers the number of
// machines at L, or L itself, so T_max never rises; the phase stops at a
// round that moves nothing, or after a budget of work of about 4·|E|.
// It returns the number of moves.
func maxPhase(lv *level, k int, q *placement.Placement, hi []int64, theta int64, rng *rand.Rand) int64 {
	return maxPhaseOn(newKState(lv, k, q.Data, q.Param, hi, theta), q, rng)
}

// maxPhaseOn is maxPhase on the state s of q (its samples on s.part =
// q.Data, its parameters served by s.owner = q.Param), within s's bounds.
func maxPhaseOn(s *kstate, q *placement.Placement, rng *rand.Rand) int64 {
	lv, k, theta := s.lv, s.k, s.theta
	t := s.traffic()
	members := make([][]int32, k)
	for u, i := range q.Data {
		members[i] = append(members[i], int32(u))
	}
	owned := make([][]int32, k)
	for e, o := range q.Param {
		owned[o] = append(owned[o], int32(e))
	}
	dt := make([]int64, k)
	var touched []int32
	var moves int64
	budget := 4*int64(len(lv.vadj)) + int64(lv.n)
	for budget > 0 {
		b := 0
		for i := range t {
			if t[i] > t[b] {
				b = i
			}
		}
		L := t[b]
		moved := false
		// Parameters served by b.
		for _, e := range owned[b] {
			e := int(e)
			if int(s.owner[e]) != b || t[b] < L {
				continue
			}
			w, l := lv.nw[e], int64(s.lambda(e))
			inB := int64(0)
			if s.has(e, b) {
				inB = 1
			}
			down := w*(l-inB) - w*inB // T_b falls by this
			if down <= 0 {
				continue
			}
			bc, bt := -1, int64(0)
			for c := 0; c < k; c++ {
				if c == b {
					continue
				}
				// A machine that needs e serves the l − 1 others and
				// stops pulling it; one that does not serves all l.
				nt := t[c] + w*l
				if s.has(e, c) {
					nt = t[c] + w*(l-1) - w
				}
				if nt < L && (bc < 0 || nt < bt) {
					bc, bt = c, nt
				}
			}
			budget -= int64(k)
			if bc < 0 {
				continue
			}
			t[b] -= down
			t[bc] = bt
			s.owner[e] = int32(bc)
			owned[bc] = append(owned[bc], int32(e))
			moves++
			moved = true
		}
		// Samples of b.
		mem := members[b]
		rng.Shuffle(len(mem), func(x, y int) { mem[x], mem[y] = mem[y], mem[x] })
		keep := mem[:0]
		for x, u := range mem {
			if int(s.part[u]) != b {
				continue
			}
			if t[b] < L || budget <= 0 {
				keep = append(keep, mem[x:]...)
				break
			}
			c, _ := s.bestMove(int(u)) // collects the adjacent blocks
			_ = c
			cands := append([]int32(nil), s.touched...)
			budget += -int64(len(lv.nets(int(u)))) * int64(1+len(cands))
			bc := -1
			var bsum int64
			for _, c := range cands {
				c := int(c)
				if c == b || s.size[c]+lv.vw[u] > s.hi[c] {
					continue
				}
				touched = s.sampleDelta(int(u), c, dt, touched[:0])
				ok := dt[b] < 0
				var sum int64
				for _, i := range touched {
					sum += dt[i]
					if int(i) != b && t[i]+dt[i] >= L && dt[i] > 0 {
						ok = false
					}
				}
				if ok && theta > 0 {
					var add int64
					for _, e := range lv.nets(int(u)) {
						if !s.has(int(e), c) {
							add += lv.nw[e]
						}
					}
					ok = s.mem[c]+add <= theta
				}
				if ok && (bc < 0 || sum < bsum) {
					bc, bsum = c, sum
				}
				for _, i := range touched {
					dt[i] = 0
					s.tmark[i] = false
				}
			}
			if bc < 0 {
				keep = append(keep, u)
				continue
			}
			touched = s.sampleDelta(int(u), bc, dt, touched[:0])
			for _, i := range touched {
				t[i] += dt[i]
				dt[i] = 0
				s.tmark[i] = false
			}
			s.move(int(u), bc, nil)
			members[bc] = append(members[bc], u)
			moves++
			moved = true
		}
		members[b] = keep
		if !moved {
			break
		}
	}
	return moves
}

func bitsTrailing(m uint64) int { return bits.TrailingZeros64(m) }

// maxSqueezes bounds the rounds of squeeze. Four rounds stopped w8a at
// k = 16 at T_max = 208; its eleventh reaches 198, within 5% of the mean.
const maxSqueezes = 20

// squeeze lowers T_max when one machine stays well above the mean, as a
// machine does whose samples need many parameters that others need too:
// no single move lowers it, but a smaller share of the samples does. A
// round evicts 5% of the busiest machine b's samples, those whose move
// costs least connectivity, to machines with room, runs FM with b's bound
// lowered to its new size (one pass), places the parameters again and
// runs maxPhase.
// Rounds go on from each other's result, up to maxSqueezes or until T_max
// is within 5% of the mean; the best placement seen is kept. It returns
// the number of rounds up to the best.
func squeeze(g *graph.Graph, lv *level, k int, q *placement.Placement, hi []int64, theta int64, passes int, algo ParamAlgo, rng *rand.Rand) int {
	kept := 0
	floating := floatingNets(lv.m)
	c := evaluate(g, q, 0) // of try, from round to round
	best := c.TMax
	try := q.Clone()
	h := append([]int64(nil), hi...)
	for round := 0; round < maxSqueezes; round++ {
		b := 0
		for i := range c.Traffic {
			if c.Traffic[i] > c.Traffic[b] {
				b = i
			}
		}
		if float64(c.TMax) <= 1.05*float64(c.TSum)/float64(k) {
			break
		}
		s := newKState(lv, k, try.Data, floating, h, theta)
		h[b] = min(h[b], s.size[b]-max(1, s.size[b]/20))
		type cand struct {
			u int32
			g int64
		}
		var cs []cand
		for u, i := range try.Data {
			if int(i) == b {
				if t, gain := s.bestMove(u); t >= 0 {
					cs = append(cs, cand{int32(u), gain})
				}
			}
		}
		slices.SortStableFunc(cs, func(x, y cand) int { return cmp.Compare(y.g, x.g) })
		for _, x := range cs {
			if s.size[b] <= h[b] {
				break
			}
			if t, _ := s.bestMove(int(x.u)); t >= 0 {
				s.move(int(x.u), t, nil)
			}
		}
		if s.size[b] > h[b] {
			break // nowhere to go
		}
		s.fm(rng, 1)
		if _, err := assignParamsWith(g, try, algo, rng.Uint64(), 1); err != nil {
			break
		}
		maxPhase(lv, k, try, h, theta, rng)
		if c = evaluate(g, try, 0); c.TMax < best {
			best = c.TMax
			copy(q.Data, try.Data)
			copy(q.Param, try.Param)
			kept = round + 1
		}
	}
	return kept
}

// evaluate is placement.Evaluate of a placement known to be valid.
func evaluate(g *graph.Graph, p *placement.Placement, theta int64) *placement.Cost {
	c, err := placement.Evaluate(g, p, theta)
	if err != nil {
		panic(err) // the refinement only moves within [0, k)
	}
	return c
}
