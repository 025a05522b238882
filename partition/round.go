package partition

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"sync/atomic"

	"colo/graph"
	"colo/placement"
)

// RoundOptions are the settings of RefineRound.
type RoundOptions struct {
	// Slack is the share by which T_sum may grow: no move takes it above
	// (1+Slack) times its value before. 0 means DefaultRoundSlack.
	Slack float64
	// Epsilon is the imbalance ε of the samples: a move may not take |U_i|
	// above ⌈(1+ε)·n/k⌉ (nor above its size before, if larger). 0 means
	// DefaultRefineEpsilon.
	Epsilon float64
	// Passes bounds the passes over the samples; 0 means
	// DefaultRoundPasses.
	Passes int
}

// Defaults of RoundOptions.
const (
	DefaultRoundSlack  = 0.02
	DefaultRoundPasses = 30
)

// roundPowers are the powers q of the potential that RefineRound lowers,
// one after the other: a low power first trades traffic between all the
// machines, the higher ones then focus on the busiest, as the largest term
// comes to dominate. On 20 Newsgroups (k = 8, from Best's placement) the
// sequence 8–32 reached R_max 21,368, a single q = 8 21,688, q = 12 21,414,
// q = 32 21,562; 48 and 64 after 32 (with roundFewMoves 300) lowered the
// mean over six seeds of R_max balanced by direction from 21,224 to
// 21,209 in 13.5 passes instead of 15.8.
var roundPowers = []int{8, 12, 16, 24, 32, 48, 64}

// roundFewMoves: a pass that moves fewer than one sample in roundFewMoves
// ends its power. The last passes of each power move a handful of
// samples (on 20 Newsgroups, k = 8, from Best's placement, powers 8–32:
// 26 passes in all to convergence, R_max 21,372; 16 with a cut at 1,000,
// R_max 21,370, and about as low with 300 in 12).
const roundFewMoves = 300

// Validate checks the settings and names the field and its bound.
func (o RoundOptions) Validate() error {
	switch {
	case !(o.Slack >= 0) || math.IsInf(o.Slack, 0):
		return fmt.Errorf("round slack = %g: want a finite share ≥ 0 (0: %g)", o.Slack, DefaultRoundSlack)
	case !(o.Epsilon >= 0) || math.IsInf(o.Epsilon, 0):
		return fmt.Errorf("round epsilon = %g: want a finite ε ≥ 0 (0: %g)", o.Epsilon, DefaultRefineEpsilon)
	case o.Passes < 0:
		return fmt.Errorf("round passes = %d: want a positive count (0: %d)", o.Passes, DefaultRoundPasses)
	}
	return nil
}

func (o RoundOptions) withDefaults() RoundOptions {
	if o.Slack == 0 {
		o.Slack = DefaultRoundSlack
	}
	if o.Epsilon == 0 {
		o.Epsilon = DefaultRefineEpsilon
	}
	if o.Passes == 0 {
		o.Passes = DefaultRoundPasses
	}
	return o
}

// RoundStats reports a run of RefineRound.
type RoundStats struct {
	// Before and After are R_max (placement.Cost.RMax) before and after.
	Before int64 `json:"R_max_before"`
	After  int64 `json:"R_max_after"`
	// TSumBefore and TSumAfter are T_sum before and after; TSumAfter ≤
	// (1+Slack)·TSumBefore.
	TSumBefore int64 `json:"T_sum_before"`
	TSumAfter  int64 `json:"T_sum_after"`
	// Passes is the number of passes run (each a sweep of the parameters
	// and one of the samples), SampleMoves and ParamMoves the moves made.
	Passes      int   `json:"passes"`
	SampleMoves int64 `json:"sample_moves"`
	ParamMoves  int64 `json:"param_moves"`
	Converged   bool  `json:"converged"`
}

// RefineRound returns a copy of p whose samples and parameters were moved
// together to lower the round bound of synchronous training, R_max =
// max_i R_i with R_i = max(T_i, 2·W_i) = W_i + max(S_i, W_i)
// (placement.Cost.Round): the time a BSP round keeps machine i's link
// busy, when its worker pulls W_i values and then pushes W_i gradients
// while its server answers S_i pulls.
//
// Alg. 2 and the refinements for T_max balance T_i = W_i + S_i and leave
// some machines heavy clients (W_i > S_i), whose rounds take 2·W_i;
// BalanceDirections then moves parameters only, on a fixed data partition,
// and cannot help a machine whose samples need many parameters that
// others need too, nor a machine whose samples need so few that it cannot
// pull its share. RefineRound also moves the samples, so that no machine
// pulls more than half of what its link carries in a round (2·W_i ≤ R)
// while its server's answers keep T_i ≤ R, for one R as low as it finds.
//
// It lowers the potential Φ = Σ_i (T_i/R_0)^q + (2·W_i/R_0)^q (R_0 the
// R_max of p), a smooth stand-in for Σ_i (R_i/R_0)^q: R_i's kink at S_i =
// W_i would leave every machine balanced there stuck, unable to trade a
// little of one for the other. It takes the powers q of roundPowers in
// turn (a low power spreads the traffic over all the machines, a high one
// is led by the busiest), each in passes of two sweeps:
//
//   - the parameters used by two machines or more, or held by a machine
//     that does not use them, each moved to the machine of C_v (the
//     machines whose workers use v) that lowers Φ the most, if any does
//     (until a sweep moves none): moving v from o to j takes W_j one pull
//     lower and adds |C_v| − 1 answers to S_j, and does the reverse on o;
//   - the samples, in an order drawn from seed, each moved to the machine
//     that lowers Φ the most with the parameters where they are: a sample
//     leaving machine i takes i out of C_v for each parameter v only it
//     needed there (one pull fewer for W_i and one answer fewer for v's
//     server, unless i holds v), and one joining j adds j to C_v for each
//     parameter j did not use yet (one pull more for W_j and one answer
//     more for v's server, unless j holds v).
//
// A move is made only when it lowers Φ (by more than rounding could), T_sum
// stays within (1+Slack) of p's and every machine's samples within
// ⌈(1+ε)·n/k⌉ (or its count in p, if larger); so the passes end by
// themselves (Passes caps them per power). Parameters used by no sample
// stay where they are. Should the result's R_max be above p's, p itself is
// returned (a copy): R_max never rises.
//
// A pass takes O(Σ_(u,v)∈E (1 + k − |C_v|) + n·k²) time (a sample's move
// visits, for each of its parameters, the machines that do not use it yet:
// on text most of its edges lead to parameters every machine uses; a
// sample whose leaving would end no pull cannot lower Φ and is skipped,
// from a count kept per sample) plus
// O(Σ_v |C_v|) per parameter sweep, and the state 4·k + 8·⌈k/64⌉ bytes per
// parameter; on 20 Newsgroups at k = 8, from the start rmax refines, 14
// passes, about 0.3 s of CPU. The statistics are kept
// incrementally and equal placement.Evaluate's on the result. It is a
// pure function of its arguments, on the calling goroutine.
func RefineRound(g *graph.Graph, p *placement.Placement, opt RoundOptions, seed uint64) (*placement.Placement, RoundStats, error) {
	return refineRound(g, p, opt, seed, nil)
}

// errRoundStopped is refineRound's error when its stop flag was set.
var errRoundStopped = errors.New("partition: the refinement for R_max was stopped")

// refineRound is RefineRound, which gives up with errRoundStopped at the
// start of a pass once stop (if not nil) is set: Best refines a start
// ahead of time on a goroutine left idle, and stops it when another start
// is the one to refine.
func refineRound(g *graph.Graph, p *placement.Placement, opt RoundOptions, seed uint64, stop *atomic.Bool) (*placement.Placement, RoundStats, error) {
	if err := p.Validate(g); err != nil {
		return nil, RoundStats{}, err
	}
	if err := opt.Validate(); err != nil {
		return nil, RoundStats{}, err
	}
	opt = opt.withDefaults()
	q := p.Clone()
	r := newRoundState(g, q, opt)
	st := RoundStats{Before: r.rmax(), TSumBefore: r.tsum}
	rng := placement.NewRand(seed ^ 0x726f756e64)
	order := make([]uint32, g.NumSamples())
	for u := range order {
		order[u] = uint32(u)
	}
	for _, pw := range roundPowers {
		r.setPower(pw)
		for pass := 0; pass < opt.Passes; pass++ {
			if stop != nil && stop.Load() {
				return nil, st, errRoundStopped
			}
			st.Passes++
			st.ParamMoves += r.paramSweeps()
			rng.Shuffle(len(order), func(a, b int) { order[a], order[b] = order[b], order[a] })
			moved := int64(0)
			for _, u := range order {
				if r.moveSample(int(u)) {
					moved++
				}
			}
			st.SampleMoves += moved
			if st.Converged = moved == 0; st.Converged || moved*roundFewMoves < int64(len(order)) {
				break
			}
		}
	}
	// Samples moved in the last pass may leave parameters to move.
	st.ParamMoves += r.paramSweeps()
	st.After, st.TSumAfter = r.rmax(), r.tsum
	if st.After > st.Before {
		st.After, st.TSumAfter = st.Before, st.TSumBefore
		return p.Clone(), st, nil
	}
	return q, st, nil
}

// roundState is the bookkeeping of RefineRound.
type roundState struct {
	g           *graph.Graph
	k           int
	data, param []int32
	cnt         []int32 // cnt[v*k+i] = |{u ∈ U_i : v ∈ N(u)}|
	c           []int32 // c_v = |C_v|
	// sets[v*stride : (v+1)*stride] is what sampleDeltas reads of
	// parameter v, in one place: its machine, C_v as a bit set (words
	// words, bit i of word i/64 for machine i) and the machines of C_v
	// with one sample using v (words more). Kept beside cnt and param, so
	// that a sample's deltas read one record per parameter and visit only
	// the machines that do not use it, not all k.
	sets          []uint64
	words, stride int
	// ends[u] is the number of pulls that end were sample u to leave its
	// machine i: its parameters v that no other sample of i uses and
	// that i does not hold. A sample with none cannot lower the
	// potential by moving (a move then only adds pulls and answers, and
	// every term grows with both), so moveSample skips it without reading
	// its parameters: on 20 Newsgroups at k = 8 about 45% of the samples.
	ends        []int32
	w, s        []int64 // W_i, S_i
	size, hi    []int64
	tsum, limit int64
	ref         float64   // R_0
	q           int       // the power of the potential
	term        []float64 // each machine's term of the potential

	// memo[C_v·k + o] is bestParamMove's answer for the parameters of
	// users C_v on machine o (k ≤ memoMaxK, where C_v is one word), valid
	// while its gen is gen, which each change of a term advances: in a
	// sweep that moves few parameters most of them share their C_v and o
	// with one seen before (on 20 Newsgroups at k = 8, 54k parameters
	// fall into at most 255·8 such classes). Nil for larger k.
	memo []paramMemo
	gen  uint32

	// Scratch of moveSample.
	remW, remS, addW, addS []int64
}

func newRoundState(g *graph.Graph, p *placement.Placement, opt RoundOptions) *roundState {
	k, n, m := p.K, g.NumSamples(), g.NumParams()
	words := (k + 63) / 64
	stride := 1 + 2*words
	r := &roundState{g: g, k: k, data: p.Data, param: p.Param,
		cnt: make([]int32, m*k), c: make([]int32, m), sets: make([]uint64, m*stride), words: words, stride: stride,
		ends: make([]int32, n), w: make([]int64, k), s: make([]int64, k), size: make([]int64, k), hi: make([]int64, k),
		remW: make([]int64, k), remS: make([]int64, k), addW: make([]int64, k),
		addS: make([]int64, k*k)}
	off, adj := g.SampleOffsets(), g.SampleAdjacency()
	for u, i := range p.Data {
		r.size[i]++
		for _, v := range adj[off[u]:off[u+1]] {
			if r.cnt[int(v)*k+int(i)] == 0 {
				r.c[v]++
			}
			r.cnt[int(v)*k+int(i)]++
		}
	}
	for v := 0; v < m; v++ {
		row := r.cnt[v*k : v*k+k]
		o := p.Param[v]
		set := r.sets[v*stride : v*stride+stride]
		set[0] = uint64(o)
		for i, x := range row {
			if x > 0 {
				set[1+i/64] |= 1 << (i % 64)
			}
			if x == 1 {
				set[1+words+i/64] |= 1 << (i % 64)
			}
		}
		for i, x := range row {
			if x > 0 && int32(i) != o {
				r.w[i]++
				r.s[o]++
			}
		}
	}
	for u := range n {
		r.ends[u] = r.countEnds(u)
	}
	for i := range k {
		r.tsum += r.w[i] + r.s[i]
		r.hi[i] = max(int64(math.Ceil((1+opt.Epsilon)*float64(n)/float64(k))), r.size[i])
	}
	r.limit = r.tsum + int64(opt.Slack*float64(r.tsum))
	r.ref = float64(max(1, r.rmax()))
	if k <= memoMaxK {
		r.memo = make([]paramMemo, (1<<k)*k)
	}
	r.setPower(roundPowers[0])
	return r
}

// countEnds counts ends[u] from the counts and the parameters' machines.
func (r *roundState) countEnds(u int) int32 {
	i := r.data[u]
	e := int32(0)
	for _, v := range r.g.Params(u) {
		if r.cnt[int(v)*r.k+int(i)] == 1 && r.param[v] != i {
			e++
		}
	}
	return e
}

// endsOfSingle adds d to ends of the one sample of machine i using
// parameter v, if exactly one does (found among v's samples), other than
// sample skip.
func (r *roundState) endsOfSingle(v, i int, d int32, skip int) {
	if r.cnt[v*r.k+i] != 1 {
		return
	}
	for _, x := range r.g.Samples(v) {
		if int(r.data[x]) == i && int(x) != skip {
			r.ends[x] += d
			return
		}
	}
}

// paramMemo is an entry of roundState.memo.
type paramMemo struct {
	gen uint32
	to  int32
}

// memoMaxK is the most machines for which moveParam keeps its memo
// (2^k·k entries).
const memoMaxK = 12

func (r *roundState) rmax() int64 {
	b := int64(0)
	for i := range r.k {
		b = max(b, r.w[i]+max(r.s[i], r.w[i]))
	}
	return b
}

// setPower sets the power of the potential and the terms.
func (r *roundState) setPower(q int) {
	r.gen++
	r.q = q
	if r.term == nil {
		r.term = make([]float64, r.k)
	}
	for i := range r.k {
		r.term[i] = r.termOf(r.w[i], r.s[i])
	}
}

// termOf is a machine's term of the potential, (T_i/R_0)^q + (2·W_i/R_0)^q
// with T_i = w+s, W_i = w: a smooth stand-in for (R_i/R_0)^q, without
// R_i's kink at S_i = W_i (a machine balanced there could not trade a
// little of one for the other).
func (r *roundState) termOf(w, s int64) float64 {
	return power(float64(w+s)/r.ref, r.q) + power(float64(2*w)/r.ref, r.q)
}

// power is x^q for q ≥ 1, by squaring.
func power(x float64, q int) float64 {
	y := 1.0
	for ; q > 0; q >>= 1 {
		if q&1 == 1 {
			y *= x
		}
		x *= x
	}
	return y
}

// minGain is the least drop of the potential that makes a move, so that
// rounding can never let a move and its reverse both pass.
const minGain = 1e-12

// paramSweeps sweeps the parameters until a sweep moves none (or
// MaxParamSweeps) and returns the moves.
func (r *roundState) paramSweeps() int64 {
	k := r.k
	var moves int64
	for range MaxParamSweeps {
		moved := int64(0)
		for v := range r.c {
			if r.moveParam(v, k) {
				moved++
			}
		}
		moves += moved
		if moved == 0 {
			break
		}
	}
	return moves
}

// moveParam moves parameter v to the machine of C_v that lowers Φ the
// most, if any does, and reports whether it moved.
func (r *roundState) moveParam(v, k int) bool {
	c := r.c[v]
	row := r.cnt[v*k : v*k+k]
	o := int(r.param[v])
	if c == 0 || (c == 1 && row[o] > 0) {
		return false
	}
	var best int
	if r.memo == nil {
		best = r.bestParamMove(v, o, row)
	} else {
		key := int(r.sets[v*r.stride+1])*k + o
		if e := r.memo[key]; e.gen == r.gen {
			best = int(e.to)
		} else {
			best = r.bestParamMove(v, o, row)
			r.memo[key] = paramMemo{r.gen, int32(best)}
		}
	}
	if best < 0 {
		return false
	}
	r.applyParam(v, best)
	return true
}

// bestParamMove returns the machine of C_v (the machines j with row[j] >
// 0) to which moving v from o lowers Φ the most, or −1 if none does. It
// reads of v only C_v and o: parameters alike in both move alike.
func (r *roundState) bestParamMove(v, o int, row []int32) int {
	best, bestGain := -1, -minGain
	// o's change is the same whatever the machine j (paramAfter): its
	// term is computed once, and added first, as the sum's order was.
	leave, left := 0.0, false
	for j, x := range row {
		if x == 0 || j == o {
			continue
		}
		wo, so, wj, sj := r.paramAfter(v, j)
		if !left {
			leave, left = r.termOf(wo, so)-r.term[o], true
		}
		if d := leave + r.termOf(wj, sj) - r.term[j]; d < bestGain {
			best, bestGain = j, d
		}
	}
	return best
}

// paramAfter returns W and S of v's machine o and of machine j ≠ o were v
// moved from o to j.
func (r *roundState) paramAfter(v, j int) (wo, so, wj, sj int64) {
	k := r.k
	c := int64(r.c[v])
	row := r.cnt[v*k : v*k+k]
	o := r.param[v]
	// o without v: if it uses v it pulls it now and no longer answers its
	// own worker's pull.
	wo, so = r.w[o], r.s[o]-c
	if row[o] > 0 {
		wo, so = r.w[o]+1, r.s[o]-(c-1)
	}
	wj, sj = r.w[j], r.s[j]+c
	if row[j] > 0 {
		wj, sj = r.w[j]-1, r.s[j]+c-1
	}
	return wo, so, wj, sj
}

// applyParam moves parameter v to machine j.
func (r *roundState) applyParam(v, j int) {
	o := int(r.param[v])
	if j == o {
		return
	}
	wo, so, wj, sj := r.paramAfter(v, j)
	// A sole user of v on o pulls it from now on, one on j no longer.
	r.endsOfSingle(v, o, 1, -1)
	r.endsOfSingle(v, j, -1, -1)
	r.gen++
	r.tsum += wo + so + wj + sj - r.w[o] - r.s[o] - r.w[j] - r.s[j]
	r.w[o], r.s[o], r.w[j], r.s[j] = wo, so, wj, sj
	r.param[v] = int32(j)
	r.sets[v*r.stride] = uint64(j)
	r.term[o] = r.termOf(wo, so)
	r.term[j] = r.termOf(wj, sj)
}

// moveSample moves sample u to the machine that lowers Φ the most with the
// parameters where they are, if any does within the bounds on the sizes
// and on T_sum, and reports whether it moved.
func (r *roundState) moveSample(u int) bool {
	k := r.k
	i := int(r.data[u])
	if r.size[i] <= 1 || r.ends[u] == 0 {
		return false
	}
	rem := r.sampleDeltas(u)
	best, bestGain := -1, -minGain
	for j := range k {
		if j == i || r.size[j] >= r.hi[j] || r.tsum+2*(r.addW[j]-rem) > r.limit {
			continue
		}
		d := 0.0
		for x := range k {
			nw, ns := r.sampleAfter(j, x)
			if nw != r.w[x] || ns != r.s[x] {
				d += r.termOf(nw, ns) - r.term[x]
			}
		}
		if d < bestGain {
			best, bestGain = j, d
		}
	}
	if best < 0 {
		return false
	}
	r.applySample(u, best, rem)
	return true
}

// sampleDeltas fills the scratch arrays with what moving sample u off its
// machine i changes (remW, remS) and what adding it to each machine j
// changes (addW[j] for W_j, addS[j·k+x] for S_x), and returns the pulls
// that end when u leaves i.
func (r *roundState) sampleDeltas(u int) (rem int64) {
	if r.words == 1 {
		return r.sampleDeltas1(u)
	}
	return r.sampleDeltasWords(u)
}

// sampleDeltas1 is sampleDeltas for k ≤ 64, where a parameter's record is
// three words and the machines outside C_v ∪ {o} one word: on 20
// Newsgroups at k = 8 RefineRound's sampleDeltas 1.52 → 0.95 billion
// instructions.
func (r *roundState) sampleDeltas1(u int) (rem int64) {
	k := r.k
	i := int(r.data[u])
	clear(r.remW)
	clear(r.remS)
	clear(r.addW)
	clear(r.addS)
	last := ^uint64(0) // the machines
	if k < 64 {
		last = 1<<k - 1
	}
	if k <= 8 {
		rem = deltas8(r.g.Params(u), r.sets, i, k, last, r.remS, r.addW, r.addS)
	} else {
		rem = deltas1(r.g.Params(u), r.sets, i, k, last, r.remS, r.addW, r.addS)
	}
	r.remW[i] -= rem
	return rem
}

// deltas1 is sampleDeltas1's loop over the parameters of a sample on
// machine i, for k ≤ 64 machines (last their mask): it adds to remS,
// addW and addS from the parameters' records in sets and returns rem. A
// function of its own, not inlined: inlined, its loop reloaded
// sampleDeltas1's slices from the stack at every parameter.
//
//go:noinline
func deltas1(params []uint32, sets []uint64, i, k int, last uint64, remS, addW, addS []int64) (rem int64) {
	for _, v := range params {
		rec := sets[int(v)*3 : int(v)*3+3 : int(v)*3+3]
		o := int(rec[0])
		// As in sampleDeltasWords: u alone uses v on i, which does not
		// hold it; and the machines joining C_v.
		if rec[2]>>uint(i)&1 == 1 && o != i {
			remS[o]--
			rem++
		}
		for out := ^rec[1] &^ (1 << uint(o)) & last; out != 0; out &= out - 1 {
			j := bits.TrailingZeros64(out)
			addW[j]++
			addS[j*k+o]++
		}
	}
	return rem
}

// deltas8 is deltas1 for k ≤ 8, without a branch on the data: a
// parameter's machines joining C_v are added, as a mask spread over the
// bytes of a word (byteLanes), to the word of its server o, and the
// words are added to addW and addS every 255 parameters; u's use of v
// alone on i is counted through a flag. deltas1's loop over the machines
// joining ended after an unpredictable number of them.
//
//go:noinline
func deltas8(params []uint32, sets []uint64, i, k int, last uint64, remS, addW, addS []int64) (rem int64) {
	for len(params) > 0 {
		part := params[:min(len(params), 255)]
		params = params[len(part):]
		var cols [8]uint64 // per server, the machines joining, a byte each
		for _, v := range part {
			rec := sets[int(v)*3 : int(v)*3+3 : int(v)*3+3]
			o := int(rec[0]) & 7 // k ≤ 8: indexes cols without a check
			f := int64(rec[2] >> uint(i) & 1)
			if o == i {
				f = 0
			}
			remS[o] -= f
			rem += f
			cols[o] += byteLanes[byte(^rec[1]&^(1<<uint(o))&last)]
		}
		for o, c := range cols[:k] {
			if c == 0 {
				continue
			}
			for j := range k {
				x := int64(c >> (8 * j) & 0xff)
				addW[j] += x
				addS[j*k+o] += x
			}
		}
	}
	return rem
}

// sampleDeltasWords is sampleDeltas for any k.
func (r *roundState) sampleDeltasWords(u int) (rem int64) {
	k := r.k
	i := int(r.data[u])
	clear(r.remW)
	clear(r.remS)
	clear(r.addW)
	clear(r.addS)
	words, stride := r.words, r.stride
	iw, ib := 1+words+i/64, uint(i%64)
	last := ^uint64(0) // the machines of the last word
	if k%64 != 0 {
		last = 1<<(k%64) - 1
	}
	sets, addW, addS := r.sets, r.addW, r.addS
	for _, v := range r.g.Params(u) {
		at := int(v) * stride
		o := int(sets[at])
		// i leaves C_v when u is its only sample using v: it pulls v no
		// longer, and v's server answers one pull fewer; if i holds v, its
		// server now answers every user of v as before.
		if sets[at+iw]>>ib&1 == 1 && o != i {
			r.remW[i]--
			r.remS[o]--
			rem++
		}
		// j ∉ C_v ∪ {o} joins C_v: it pulls v, one more answer for v's
		// server. The machines outside C_v are the zero bits of its set
		// (below k); on text most of a sample's parameters are used
		// everywhere, and have none.
		for x := range words {
			out := ^sets[at+1+x]
			if x == o/64 {
				out &^= 1 << (o % 64)
			}
			if x == words-1 {
				out &= last
			}
			for ; out != 0; out &= out - 1 {
				j := x*64 + bits.TrailingZeros64(out)
				addW[j]++
				addS[j*k+o]++
			}
		}
	}
	return rem
}

// sampleAfter returns W_x and S_x were the sample of the last
// sampleDeltas moved to machine j.
func (r *roundState) sampleAfter(j, x int) (w, s int64) {
	w = r.w[x] + r.remW[x]
	s = r.s[x] + r.remS[x] + r.addS[j*r.k+x]
	if x == j {
		w += r.addW[j]
	}
	return w, s
}

// applySample moves sample u to machine j ≠ its own, given the
// sampleDeltas of u and the pulls rem they returned.
func (r *roundState) applySample(u, j int, rem int64) {
	k := r.k
	i := int(r.data[u])
	r.gen++
	for x := range k {
		w, s := r.sampleAfter(j, x)
		if w != r.w[x] || s != r.s[x] {
			r.w[x], r.s[x] = w, s
			r.term[x] = r.termOf(w, s)
		}
	}
	r.tsum += 2 * (r.addW[j] - rem)
	for _, v := range r.g.Params(u) {
		row := r.cnt[int(v)*k : int(v)*k+k]
		// A sample of j that was v's sole user there is one no longer.
		if row[j] == 1 && int(r.param[v]) != j {
			r.endsOfSingle(int(v), j, -1, u)
		}
		row[i]--
		row[j]++
		// One of i left as v's sole user there becomes one.
		if row[i] == 1 && int(r.param[v]) != i {
			r.endsOfSingle(int(v), i, 1, u)
		}
		if row[i] == 0 {
			r.c[v]--
		}
		if row[j] == 1 {
			r.c[v]++
		}
		set := r.sets[int(v)*r.stride : int(v)*r.stride+r.stride]
		setBits(set[1:], i, row[i] > 0)
		setBits(set[1+r.words:], i, row[i] == 1)
		setBits(set[1:], j, true)
		setBits(set[1+r.words:], j, row[j] == 1)
	}
	r.data[u] = int32(j)
	r.ends[u] = r.countEnds(u)
	r.size[i]--
	r.size[j]++
}

// setBits sets bit i of the bit set b to on.
func setBits(b []uint64, i int, on bool) {
	if on {
		b[i/64] |= 1 << (i % 64)
	} else {
		b[i/64] &^= 1 << (i % 64)
	}
}
