package partition

import (
	"colo/graph"
)

// block is the working state of Alg. 3 of seed 001 on one block of samples:
// the block's subgraph in CSR form both ways over local ids, the neighbour
// sets S_i restricted to the block's parameters, and per partition i a
// bucket queue of the costs A_i(u) = |N(u) \ S_i| of the unassigned
// samples.
//
// A bucket queue is an array of doubly linked lists, one per cost, with a
// head per cost (seed 001 Fig. 5). Costs only decrease, by one at a time,
// so a decrement moves a sample to the front of the next lower list in
// O(1) and the minimum is found by moving a cursor that only goes down on
// a decrement and up over empty lists. The lists are circular through a
// sentinel node per cost, which is the list's head, so that moving a
// sample takes no branch on whether it is first or last. All of Alg. 3 on a block of n_b
// samples and e_b edges takes O(k·(n_b + e_b) + k·maxdeg) time.
//
// A block is reused from job to job to keep allocations out of the loop.
type block struct {
	k, w int // partitions, mask words per parameter

	// The subgraph. Local sample s is samples[s]; local parameter l is
	// params[l]. sadj holds local parameter ids, cadj local sample ids.
	samples []uint32
	params  []uint32
	soff    []int64
	sadj    []uint32
	coff    []int64
	cend    []int64 // end of the live part of each column
	cadj    []uint32
	loc     []int32 // global parameter → local id, -1 outside a build

	// mask[l*w:(l+1)*w] is {i : params[l] ∈ S_i}: pulled, then grown.
	// own is {i : params[l] ∈ N(U_{i,block})}: what this block adds.
	mask []uint64
	own  []uint64

	// Bucket queues: queue i is nodes[i*qs:(i+1)*qs], qs = nb+hc. Its
	// node s < nb holds A_i(s) and its list links; its node nb+c is the
	// sentinel of the circular list of cost c, whose next is the first
	// sample of that cost (the sentinel itself when there is none). Links
	// are node numbers within the queue.
	nb, hc   int
	qs       int
	nodes    []qnode
	minc     []int32
	assigned []bool
	out      []int32 // partition of each local sample

	// The view of |U_i| and |S_i| used to choose the partition to grow,
	// and the rule: smallest |U_i|, or smallest |S_i| with |U_i| < cap.
	count   []int64
	size    []int64
	byParam bool
	cap     int64
	added   []int64 // samples this block gave each partition

	have  []int32  // scratch: per-partition counts of one sample
	lanes []uint64 // scratch: byte-lane counters, 8 partitions per word
	// tick, when set, is called every tickEvery assignments.
	tick func(n int)
	// tieByIndex breaks ties between the smallest partitions by index, as
	// seed 000 does, rather than by the cheapest sample.
	tieByIndex bool
	// tsh, when set, replaces the selection step by that of seed 000
	// Alg. 1 (tsh.go).
	tsh *tshState
	// hubLimit, when positive, is the column length above which prepare
	// treats a parameter as in every S_i.
	hubLimit int
}

// qnode is one entry of a bucket queue.
type qnode struct{ prev, next, cost int32 }

// tickEvery is the number of assignments between progress ticks.
const tickEvery = 1 << 14

func newBlock(k, m int) *block {
	b := &block{k: k, w: MaskWords(k), loc: make([]int32, m),
		minc: make([]int32, k), count: make([]int64, k), size: make([]int64, k),
		added: make([]int64, k), have: make([]int32, k), lanes: make([]uint64, (k+7)/8)}
	for i := range b.loc {
		b.loc[i] = -1
	}
	return b
}

// build loads the subgraph of g induced by the given samples: local ids,
// adjacency both ways. It does not touch the neighbour sets.
func (b *block) build(g *graph.Graph, samples []uint32) {
	b.buildRows(samples, g.SampleOffsets(), g.SampleAdjacency(), false)
}

// buildRows is build from rows in CSR form (off, adj): the rows of the
// samples by their ids, or with local the rows 0..len(samples)−1 in order
// (a block read from disk).
func (b *block) buildRows(samples []uint32, off []int64, adj []uint32, local bool) {
	b.samples = samples
	nb := len(samples)
	b.nb = nb
	row := func(s int) uint32 {
		if local {
			return uint32(s)
		}
		return samples[s]
	}
	var e int64
	for s := range samples {
		u := row(s)
		e += off[u+1] - off[u]
	}
	// Locals rather than the block's fields in the loops, so that the
	// slices' headers stay in registers.
	soff := grow(b.soff, nb+1)
	sadj := grow(b.sadj, int(e))
	params := b.params[:0]
	loc := b.loc
	soff[0] = 0
	pos := 0
	for s := range samples {
		u := row(s)
		vs := adj[off[u]:off[u+1]]
		params = localize(vs, loc, params, sadj[pos:pos+len(vs)])
		pos += len(vs)
		soff[s+1] = int64(pos)
	}
	for _, v := range params {
		loc[v] = -1
	}
	mb := len(params)
	// Transpose: local parameter → local samples, in increasing order.
	coff := grow(b.coff, mb+1)
	clear(coff)
	for _, l := range sadj {
		coff[l+1]++
	}
	for l := 0; l < mb; l++ {
		coff[l+1] += coff[l]
	}
	cadj := grow(b.cadj, int(e))
	transposeRows(cadj, coff, soff[:nb+1], sadj)
	for l := mb; l > 0; l-- {
		coff[l] = coff[l-1]
	}
	coff[0] = 0
	b.soff, b.sadj, b.params, b.coff, b.cadj = soff, sadj, params, coff, cadj
	b.cend = grow(b.cend, mb)
	copy(b.cend, coff[1:])
	w := b.w
	b.mask = grow(b.mask, mb*w)
	b.own = grow(b.own, mb*w)
	clear(b.own)
}

// localize writes to out the local id of each parameter of vs, giving
// the next id (and appending to params) to one met for the first time
// (loc −1), and returns params: buildRows' inner loop. A function of its
// own, not inlined: inlined, its loop reloaded buildRows' slices from the
// stack at every parameter.
//
//go:noinline
func localize(vs []uint32, loc []int32, params, out []uint32) []uint32 {
	out = out[:len(vs)]
	for i, v := range vs {
		l := loc[v]
		if l < 0 {
			l = int32(len(params))
			loc[v] = l
			params = append(params, v)
		}
		out[i] = uint32(l)
	}
	return params
}

// transposeRows writes each row s of (soff, sadj) into cadj at coff[l]
// for each of its entries l, in row order, advancing coff[l]. Not
// inlined, as localize.
//
//go:noinline
func transposeRows(cadj []uint32, coff, soff []int64, sadj []uint32) {
	for s := range len(soff) - 1 {
		for _, l := range sadj[soff[s]:soff[s+1]] {
			cadj[coff[l]] = uint32(s)
			coff[l]++
		}
	}
}

// pull fills the block's masks from the shared sets.
func (b *block) pull(sets NeighborSets) {
	sets.Pull(b.params, b.mask)
}

// prepare computes the initial costs A_i(s) = |N(s) \ S_i| from the masks
// and fills the bucket queues. The caller has set count, size, byParam
// and cap.
func (b *block) prepare() {
	k, nb := b.k, b.nb
	maxDeg := 0
	for s := 0; s < nb; s++ {
		maxDeg = max(maxDeg, int(b.soff[s+1]-b.soff[s]))
	}
	b.hc = maxDeg + 1
	b.qs = nb + b.hc
	b.nodes = grow(b.nodes, k*b.qs)
	for i := 0; i < k; i++ {
		q := b.nodes[i*b.qs : (i+1)*b.qs]
		for c := 0; c < b.hc; c++ {
			x := int32(nb + c)
			q[x] = qnode{prev: x, next: x, cost: int32(c)}
		}
	}
	b.assigned = grow(b.assigned, nb)
	clear(b.assigned)
	b.out = grow(b.out, nb)
	clear(b.added)
	for i := range b.minc {
		b.minc[i] = int32(maxDeg)
	}
	if b.hubLimit > 0 {
		// Parameters this many samples of the block use will be in
		// every S_i before long: count them as there already, which
		// spares the scans of their long columns.
		w := b.w
		for l := range b.params {
			if b.coff[l+1]-b.coff[l] > int64(b.hubLimit) {
				for x := 0; x < w; x++ {
					b.mask[l*w+x] = ^uint64(0)
				}
			}
		}
	}
	have := b.have
	lanes := b.lanes
	nbytes := (k + 7) / 8
	// Insert in decreasing local order so that each list runs in
	// increasing local order: ties go to the earliest sample of the
	// (randomly ordered) block.
	for s := nb - 1; s >= 0; s-- {
		row := b.sadj[b.soff[s]:b.soff[s+1]]
		b.countBits(row, have, lanes, nbytes)
		deg := int32(len(row))
		for i := 0; i < k; i++ {
			c := deg - have[i]
			q := b.nodes[i*b.qs : (i+1)*b.qs]
			sent := int32(nb) + c
			h := q[sent].next
			q[s] = qnode{prev: sent, next: h, cost: c}
			q[h].prev = int32(s)
			q[sent].next = int32(s)
			if c < b.minc[i] {
				b.minc[i] = c
			}
		}
	}
}

// byteLanes[x] spreads the 8 bits of x over the 8 bytes of a word: byte j
// of byteLanes[x] is bit j of x.
var byteLanes = func() (t [256]uint64) {
	for x := range t {
		for j := 0; j < 8; j++ {
			t[x] |= uint64(x>>j&1) << (8 * j)
		}
	}
	return t
}()

// laneSum8 adds up the masks of the parameters part (at most 255), of
// k ≤ 8 blocks, into the byte-wide lanes of one word: countBits' loop
// for k ≤ 8, in a function of its own, not inlined, whose sum stays in a
// register (countBits 0.25 → 0.11 billion instructions over rmax's
// starts on 20 Newsgroups at k = 8).
//
//go:noinline
func laneSum8(part []uint32, mask []uint64) uint64 {
	var lanes uint64
	for _, l := range part {
		lanes += byteLanes[byte(mask[l])]
	}
	return lanes
}

// countBits sets have[i] to the number of local parameters of row that
// are in S_i. It adds the masks byte by byte into byte-wide lanes, 8
// partitions per word, flushing before a lane can overflow, so that a
// parameter costs k/8 additions rather than one per set bit.
func (b *block) countBits(row []uint32, have []int32, lanes []uint64, nbytes int) {
	clear(have)
	w := b.w
	lanes = lanes[:nbytes]
	for start := 0; start < len(row); start += 255 {
		clear(lanes)
		part := row[start:min(len(row), start+255)]
		if nbytes == 1 {
			// k ≤ 8: one byte of each parameter's word, one lane word.
			lanes[0] = laneSum8(part, b.mask)
		} else if w == 1 {
			// k ≤ 64: one word per parameter, its bytes in turn.
			for _, l := range part {
				m := b.mask[l]
				for x := range lanes {
					lanes[x] += byteLanes[byte(m)]
					m >>= 8
				}
			}
		} else {
			for _, l := range part {
				base := int(l) * w
				for x := range lanes {
					m := b.mask[base+x>>3]
					lanes[x] += byteLanes[byte(m>>(8*(x&7)))]
				}
			}
		}
		for x, v := range lanes {
			for j := 0; j < 8 && x*8+j < len(have); j++ {
				have[x*8+j] += int32(v >> (8 * j) & 0xff)
			}
		}
	}
}

// run assigns every sample of the block (Alg. 3, lines 5–15).
func (b *block) run() {
	if b.tsh != nil {
		b.runTSH()
		return
	}
	for r := 1; r <= b.nb; r++ {
		b.step()
		if b.tick != nil && r%tickEvery == 0 {
			b.tick(tickEvery)
		}
	}
	if b.tick != nil {
		b.tick(b.nb % tickEvery)
	}
}

// step grows one partition by its cheapest sample and returns the
// partition, the local sample and the cost it had.
func (b *block) step() (int, int32, int32) {
	i := b.choose()
	s, c := b.popMin(i)
	b.assign(s, i)
	return i, s, c
}

// choose returns the partition to grow: the smallest by |U_i|, or with
// byParam the smallest by |S_i| among those with |U_i| < cap. Ties go to
// the lowest index.
func (b *block) choose() int {
	best := 0
	if !b.byParam {
		// Among the smallest partitions, the one with the cheapest sample.
		lo := b.count[0]
		for i := 1; i < b.k; i++ {
			lo = min(lo, b.count[i])
			if b.tieByIndex && b.count[i] < b.count[best] {
				best = i
			}
		}
		if b.tieByIndex {
			return best
		}
		best = -1
		var bc int32
		for i := 0; i < b.k; i++ {
			if b.count[i] != lo {
				continue
			}
			c := b.minCost(i)
			if best < 0 || c < bc {
				best, bc = i, c
			}
		}
		return best
	}
	best = -1
	for i := 0; i < b.k; i++ {
		if b.count[i] >= b.cap {
			continue
		}
		if best < 0 || b.size[i] < b.size[best] {
			best = i
		}
	}
	if best < 0 { // cannot happen: k·cap ≥ n
		panic("partition: every partition is full")
	}
	return best
}

// minCost returns the least cost in queue i, which is not empty.
func (b *block) minCost(i int) int32 {
	base := i*b.qs + b.nb
	c := b.minc[i]
	for b.nodes[base+int(c)].next == int32(b.nb)+c {
		c++
	}
	b.minc[i] = c
	return c
}

// popMin removes and returns the cheapest unassigned sample of queue i.
func (b *block) popMin(i int) (int32, int32) {
	c := b.minCost(i)
	s := b.nodes[i*b.qs+b.nb+int(c)].next
	b.unlink(i, s)
	return s, c
}

// unlink removes local sample s from queue i.
func (b *block) unlink(i int, s int32) {
	q := b.nodes[i*b.qs : (i+1)*b.qs]
	n := q[s]
	q[n.prev].next = n.next
	q[n.next].prev = n.prev
}

// lowerColumn drops the assigned samples from col, the users of a
// parameter new to S_i (without a branch per user: a kept one advances
// the end), then lowers by one A_i(t) of each unassigned user t, in the
// column's order, moving t to the front of the lower list of queue i
// (q, its sentinels from sent0 on); minc is the least cost in queue i,
// returned lowered with them. It returns how many users it kept. A
// function of its own, not inlined, whose loops keep the queue and the
// slices in registers: assign's loop, calling a method per user,
// reloaded them at every one (assign and decrement 0.71 → 0.56 billion
// instructions over rmax's starts on 20 Newsgroups at k = 8).
//
//go:noinline
func lowerColumn(col []uint32, assigned []bool, q []qnode, sent0, minc int32) (int, int32) {
	x := 0
	for _, t := range col {
		col[x] = t
		if !assigned[t] {
			x++
		}
	}
	for _, t := range col[:x] {
		t := int32(t)
		n := q[t]
		q[n.prev].next = n.next
		q[n.next].prev = n.prev
		c := n.cost - 1
		sent := sent0 + c
		h := q[sent].next
		q[t] = qnode{prev: sent, next: h, cost: c}
		q[h].prev = t
		q[sent].next = t
		minc = min(minc, c)
	}
	return x, minc
}

// assign puts local sample s in partition i (Alg. 3, lines 8–14): it
// leaves every queue, and each of its parameters new to S_i joins S_i and
// lowers the cost in queue i of the unassigned samples that use it.
func (b *block) assign(s int32, i int) {
	b.assigned[s] = true
	b.out[s] = int32(i)
	b.count[i]++
	b.added[i]++
	for j := 0; j < b.k; j++ {
		if j != i {
			b.unlink(j, s)
		}
	}
	x := i >> 6
	bit := uint64(1) << (i & 63)
	w := b.w
	assigned, own, mask, cadj, coff, cend := b.assigned, b.own, b.mask, b.cadj, b.coff, b.cend
	q := b.nodes[i*b.qs : (i+1)*b.qs]
	minc, added := b.minc[i], int64(0)
	for _, l := range b.sadj[b.soff[s]:b.soff[s+1]] {
		at := int(l)*w + x
		own[at] |= bit
		if mask[at]&bit != 0 {
			continue
		}
		mask[at] |= bit
		added++
		// Drop the assigned users of l from the column for later scans,
		// then lower the costs of the others.
		var kept int
		kept, minc = lowerColumn(cadj[coff[l]:cend[l]], assigned, q, int32(b.nb), minc)
		cend[l] = coff[l] + int64(kept)
	}
	b.minc[i] = minc
	b.size[i] += added
}

// grow returns s resliced to length n, reallocating when too small. The
// contents are not preserved.
func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}
