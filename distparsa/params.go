package distparsa

import (
	"context"
	"fmt"
	"math"
	"math/bits"
	"slices"

	"colo/partition"
	"colo/ps/worker"
)

// Alg. 2 of seed 001 across the workers (partition.AssignParams, the
// "parsa" parameter assignment), once every sample is placed. Given the
// data placement, parameter v's cost depends only on C_v, the machines
// whose samples use v, and on the loads T_i of the machines when its turn
// comes; the loads are k numbers. So:
//
//  1. masks: each worker ORs, over its own samples, the machine of each
//     sample into the mask of each of its parameters and pushes the masks,
//     in chunks of maskChunk parameters (a count per pair (v, i) on the
//     servers, as the neighbour sets are: i ∈ C_v ⇔ count > 0);
//  2. sizes: worker w pulls the masks of the parameters m·w/W..m·(w+1)/W,
//     pushes their sizes c_v, and all-reduces its share of the initial
//     loads T_i = |N(U_i)| = Σ_v [i ∈ C_v];
//  3. order: every worker pulls every c_v and computes the order of
//     Alg. 2 (partition.ParamOrder: decreasing c_v, ties drawn from the
//     seed), the same everywhere; worker w takes the slice
//     m·w/W..m·(w+1)/W of the order and pulls its parameters' masks;
//  4. greedy: worker 0, then 1, …, W−1 assigns its slice in order, each
//     from the loads left by the slices before, and all-reduces the
//     change of the loads, which every worker adds;
//  5. sweeps: the same ring for each sweep of the local search, whose
//     all-reduce also counts the moves; the sweeps end, on every worker
//     alike, after a sweep that moved nothing (or MaxParamSweeps);
//  6. result: each worker pushes its slice's machines; worker 0 pulls them.
//
// The greedy pass and the sweeps visit the parameters in the sequential
// order with the loads the sequential run would have at each parameter,
// so the assignment is partition.AssignParams' for the same data
// placement and seed, exactly, for any W. What is distributed is the
// work over the edges (the masks, step 1), the memory (a worker holds the
// masks of its own samples' parameters and of its slice, k bits each, and
// the order, 8 bytes per parameter) and the pushes; the steps of the ring
// run one worker at a time, as the sequential order requires, each
// O(Σ_{v in the slice} c_v) and one all-reduce of k + 1 numbers, W of
// them per pass. The loads travel as exact integers (float64 sums of
// integers below 2^53).

// ownBlock is a block a worker partitioned: its samples, sorted, and the
// machine of each.
type ownBlock struct {
	j       int
	samples []uint32
	part    []int32
}

// paramRun is one worker's share of the distributed Alg. 2.
type paramRun struct {
	w    *worker.Worker
	l    Layout
	ctx  context.Context
	rank int
	// The slice of the order this worker assigns: its parameters, their
	// masks C_v (MaskWords(k) words each) and machines.
	slice []uint32
	masks []uint64
	param []int32
	size  []int32 // c_v of every parameter
	cost  []int64 // T_i
	st    partition.ParamStats
	// first is the slice's first position in the order, zero the position
	// of the first parameter no sample uses.
	first, zero int
}

// assignParams runs the distributed Alg. 2 with the given seed over the
// data placement of the workers' own blocks. local holds the masks C_v of
// this worker's samples (MaskWords(k) words per parameter), gathered from
// its blocks; when it is nil (samples of this worker moved since), they
// are computed again from the blocks' rows. It returns the statistics,
// the same on every worker.
func assignParams(ctx context.Context, w *worker.Worker, l Layout, own []ownBlock, local []uint64, rows func(j int) (partition.BlockRows, error), seed uint64) (partition.ParamStats, error) {
	pr := &paramRun{w: w, l: l, ctx: ctx, rank: w.Rank()}
	if err := pr.pushMasks(own, local, rows); err != nil {
		return pr.st, err
	}
	if err := pr.pushSizes(); err != nil {
		return pr.st, err
	}
	if err := pr.order(seed); err != nil {
		return pr.st, err
	}
	if err := pr.greedy(); err != nil {
		return pr.st, err
	}
	if err := pr.sweeps(); err != nil {
		return pr.st, err
	}
	if err := pr.pushParams(); err != nil {
		return pr.st, err
	}
	return pr.st, nil
}

func (pr *paramRun) errorf(format string, a ...any) error {
	return fmt.Errorf("distparsa: worker %d: parameter assignment: "+format, append([]any{pr.rank}, a...)...)
}

// barrier waits for every worker.
func (pr *paramRun) barrier(what string) error {
	if err := pr.w.Barrier(pr.ctx); err != nil {
		return pr.errorf("barrier after %s: %w", what, err)
	}
	return nil
}

// pushMasks is step 1.
func (pr *paramRun) pushMasks(own []ownBlock, local []uint64, rows func(j int) (partition.BlockRows, error)) error {
	m, k := pr.l.Params, pr.l.K
	mw := partition.MaskWords(k)
	if local == nil {
		local = make([]uint64, m*mw)
		for _, ob := range own {
			br, err := rows(ob.j)
			if err != nil {
				return pr.errorf("block %d: %w", ob.j, err)
			}
			for s, i := range ob.part {
				for _, v := range br.Row(s) {
					local[int(v)*mw+int(i)>>6] |= 1 << (i & 63)
				}
			}
		}
	}
	// One push per chunk of maskChunk parameters, the same number on
	// every worker (the rounds of BSP), so that a push's values stay
	// small whatever m.
	var keys []uint64
	var vals []float32
	base := uint64(pr.l.used())
	for lo := 0; lo < m || lo == 0; lo += maskChunk {
		keys, vals = keys[:0], vals[:0]
		for v := lo; v < min(m, lo+maskChunk); v++ {
			row := local[v*mw : (v+1)*mw]
			if !slices.ContainsFunc(row, func(x uint64) bool { return x != 0 }) {
				continue
			}
			keys = append(keys, base+uint64(v))
			at := len(vals)
			vals = append(vals, make([]float32, k)...)
			eachBit(row, func(i int) { vals[at+i] = 1 })
		}
		if err := pr.w.Push(keys, vals).Wait(); err != nil {
			return pr.errorf("push of the machine masks of %d parameters: %w", len(keys), err)
		}
	}
	return pr.barrier("the machine masks")
}

// maskChunk is the number of parameters whose masks one push carries at
// most.
const maskChunk = 1 << 16

// vrange returns worker rank's share of 0..x−1.
func (pr *paramRun) vrange(x int) (int, int) {
	W := pr.l.Workers
	return x * pr.rank / W, x * (pr.rank + 1) / W
}

// pullMasks pulls the masks C_v of the sorted parameters vs into dst
// (MaskWords(k) words each).
func (pr *paramRun) pullMasks(vs []uint32, dst []uint64) error {
	k := pr.l.K
	mw := partition.MaskWords(k)
	const chunk = 1 << 14
	keys := make([]uint64, 0, min(chunk, len(vs)))
	vals := make([]float32, min(chunk, len(vs))*k)
	for at := 0; at < len(vs); at += chunk {
		part := vs[at:min(len(vs), at+chunk)]
		keys = keys[:0]
		for _, v := range part {
			keys = append(keys, uint64(pr.l.used())+uint64(v))
		}
		if err := pr.w.Pull(keys, vals[:len(keys)*k]).Wait(); err != nil {
			return pr.errorf("pull of the machine masks of %d parameters: %w", len(keys), err)
		}
		for x := range part {
			row := dst[(at+x)*mw : (at+x+1)*mw]
			clear(row)
			for i, c := range vals[x*k : (x+1)*k] {
				if c > 0 {
					row[i>>6] |= 1 << (i & 63)
				}
			}
		}
	}
	return nil
}

// pushSizes is step 2: this worker's range of the sizes c_v, and the
// initial loads.
func (pr *paramRun) pushSizes() error {
	k := pr.l.K
	mw := partition.MaskWords(k)
	lo, hi := pr.vrange(pr.l.Params)
	vs := make([]uint32, hi-lo)
	for x := range vs {
		vs[x] = uint32(lo + x)
	}
	masks := make([]uint64, len(vs)*mw)
	if err := pr.pullMasks(vs, masks); err != nil {
		return err
	}
	share := make([]float64, k)
	var keys []uint64
	var vals []float32
	for x, v := range vs {
		c := 0
		eachBit(masks[x*mw:(x+1)*mw], func(i int) { share[i]++; c++ })
		key := uint64(pr.l.sizes() + int(v)/k)
		if len(keys) == 0 || keys[len(keys)-1] != key {
			keys = append(keys, key)
			vals = append(vals, make([]float32, k)...)
		}
		vals[len(vals)-k+int(v)%k] = float32(c)
	}
	if err := pr.w.Push(keys, vals).Wait(); err != nil {
		return pr.errorf("push of the sizes of parameters %d..%d: %w", lo, hi-1, err)
	}
	sum, err := pr.w.AllReduce(pr.ctx, share)
	if err != nil {
		return pr.errorf("all-reduce of |N(U_i)|: %w", err)
	}
	pr.cost = make([]int64, k)
	for i, x := range sum {
		pr.cost[i] = int64(x)
	}
	return nil
}

// order is step 3.
func (pr *paramRun) order(seed uint64) error {
	m, k := pr.l.Params, pr.l.K
	rows := pr.l.packed(m)
	vals := make([]float32, rows*k)
	base := uint64(pr.l.sizes())
	if err := pr.w.PullRange(base, base+uint64(rows), vals).Wait(); err != nil {
		return pr.errorf("pull of the sizes c_v: %w", err)
	}
	pr.size = make([]int32, m)
	for v := range m {
		c := vals[v]
		if c != float32(math.Trunc(float64(c))) || c < 0 || c > float32(k) {
			return pr.errorf("parameter %d: the servers hold %g machines using it: want 0..%d", v, c, k)
		}
		pr.size[v] = int32(c)
		if c > 0 {
			pr.zero++
		}
	}
	vals = nil
	order := partition.ParamOrder(m, func(v int) int { return int(pr.size[v]) }, seed)
	lo, hi := pr.vrange(m)
	pr.first = lo
	pr.slice = slices.Clone(order[lo:hi])
	order = nil
	// The masks are pulled by increasing parameter and kept in slice order.
	mw := partition.MaskWords(k)
	idx := make([]int32, len(pr.slice))
	for x := range idx {
		idx[x] = int32(x)
	}
	slices.SortFunc(idx, func(a, b int32) int { return int(pr.slice[a]) - int(pr.slice[b]) })
	sorted := make([]uint32, len(idx))
	for x, at := range idx {
		sorted[x] = pr.slice[at]
	}
	byParam := make([]uint64, len(sorted)*mw)
	if err := pr.pullMasks(sorted, byParam); err != nil {
		return err
	}
	pr.masks = make([]uint64, len(sorted)*mw)
	for x, at := range idx {
		copy(pr.masks[int(at)*mw:(int(at)+1)*mw], byParam[x*mw:(x+1)*mw])
	}
	pr.param = make([]int32, len(pr.slice))
	return nil
}

// ring runs one pass of the ring: worker s, for s = 0..W−1 in turn,
// changes its copy of the loads by step, and every worker adds the
// change. It returns the sum of what the steps returned.
func (pr *paramRun) ring(what string, step func(cost []int64) int64) (int64, error) {
	k := pr.l.K
	delta := make([]float64, k+1)
	var total int64
	for s := range pr.l.Workers {
		clear(delta)
		if s == pr.rank {
			cost := slices.Clone(pr.cost)
			delta[k] = float64(step(cost))
			for i := range k {
				delta[i] = float64(cost[i] - pr.cost[i])
			}
		}
		sum, err := pr.w.AllReduce(pr.ctx, delta)
		if err != nil {
			return 0, pr.errorf("%s, slice of worker %d: all-reduce of the loads: %w", what, s, err)
		}
		for i := range k {
			pr.cost[i] += int64(sum[i])
		}
		total += int64(sum[k])
	}
	return total, nil
}

// cheapest returns the machine of the mask other than skip with the least
// cost, the lower on ties, or −1.
func cheapest(mask []uint64, cost []int64, skip int32) int32 {
	best := int32(-1)
	eachBit(mask, func(i int) {
		if j := int32(i); j != skip && (best < 0 || cost[j] < cost[best]) {
			best = j
		}
	})
	return best
}

// greedy is step 4.
func (pr *paramRun) greedy() error {
	k := pr.l.K
	mw := partition.MaskWords(k)
	_, err := pr.ring("greedy pass", func(cost []int64) int64 {
		for x, v := range pr.slice {
			c := int64(pr.size[v])
			if c == 0 {
				// Dealt round-robin, in order, after the used ones.
				pr.param[x] = int32((pr.first + x - pr.zero) % k)
				continue
			}
			best := cheapest(pr.masks[x*mw:(x+1)*mw], cost, -1)
			pr.param[x] = best
			cost[best] += c - 2
		}
		return 0
	})
	pr.st.GreedyTMax = slices.Max(pr.cost)
	return err
}

// sweeps is step 5.
func (pr *paramRun) sweeps() error {
	mw := partition.MaskWords(pr.l.K)
	var movable []int
	for x, v := range pr.slice {
		if pr.size[v] >= 3 {
			movable = append(movable, x)
		}
	}
	for pr.st.Sweeps < partition.MaxParamSweeps {
		pr.st.Sweeps++
		moved, err := pr.ring(fmt.Sprintf("sweep %d", pr.st.Sweeps), func(cost []int64) int64 {
			var moved int64
			for _, x := range movable {
				o := pr.param[x]
				size := int64(pr.size[pr.slice[x]]) - 2
				best := cheapest(pr.masks[x*mw:(x+1)*mw], cost, o)
				if cost[best]+size < cost[o] {
					cost[o] -= size
					cost[best] += size
					pr.param[x] = best
					moved++
				}
			}
			return moved
		})
		if err != nil {
			return err
		}
		pr.st.Moves += moved
		if moved == 0 {
			pr.st.Converged = true
			break
		}
	}
	pr.st.TMax = slices.Max(pr.cost)
	return nil
}

// pushParams is step 6: the machines of this worker's slice.
func (pr *paramRun) pushParams() error {
	k := pr.l.K
	idx := make([]int32, len(pr.slice))
	for x := range idx {
		idx[x] = int32(x)
	}
	slices.SortFunc(idx, func(a, b int32) int { return int(pr.slice[a]) - int(pr.slice[b]) })
	var keys []uint64
	var vals []float32
	for _, x := range idx {
		v := int(pr.slice[x])
		key := uint64(pr.l.params() + v/k)
		if len(keys) == 0 || keys[len(keys)-1] != key {
			keys = append(keys, key)
			vals = append(vals, make([]float32, k)...)
		}
		vals[len(vals)-k+v%k] = float32(pr.param[x] + 1)
	}
	if err := pr.w.Push(keys, vals).Wait(); err != nil {
		return pr.errorf("push of the machines of %d parameters: %w", len(pr.slice), err)
	}
	return pr.barrier("the parameters' machines")
}

// pullParams pulls every parameter's machine into dst (worker 0, after
// assignParams) and checks that each was assigned once.
func pullParams(w *worker.Worker, l Layout, dst []int32) error {
	m, k := l.Params, l.K
	rows := l.packed(m)
	vals := make([]float32, rows*k)
	base := uint64(l.params())
	if err := w.PullRange(base, base+uint64(rows), vals).Wait(); err != nil {
		return fmt.Errorf("distparsa: worker %d: pull of the parameters' machines: %w", w.Rank(), err)
	}
	for v := range m {
		x := vals[v]
		if x != float32(math.Trunc(float64(x))) || x < 1 || x > float32(k) {
			return fmt.Errorf("distparsa: parameter %d: the servers hold %g for its machine + 1: assigned by no worker, or by more than one", v, x)
		}
		dst[v] = int32(x) - 1
	}
	return nil
}

// eachBit calls f with the index of each set bit of mask, increasing.
func eachBit(mask []uint64, f func(i int)) {
	for x, word := range mask {
		for word != 0 {
			f(x*64 + bits.TrailingZeros64(word))
			word &= word - 1
		}
	}
}
