package partition

import (
	"container/heap"
	"math/bits"
	"math/rand/v2"
	"slices"

	"colo/graph"
)

// level is one level of the multilevel hierarchy: a weighted bipartite
// graph of sample clusters (vertices) and parameter groups (nets). The
// finest level is the graph itself, all weights 1; a coarser one has a
// vertex per cluster of samples weighing its samples, and a net per group
// of parameters weighing its parameters, whose pins are the clusters that
// hold a sample using one of them.
type level struct {
	n, m int
	vw   []int64 // vertex weight: samples
	nw   []int64 // net weight: parameters
	voff []int64
	vadj []uint32 // vertex → nets
	noff []int64
	nadj []uint32 // net → vertices
	// vmap[u] is the vertex of the next coarser level that u belongs to;
	// nmap likewise for nets (nil: nets are those of the finer level,
	// less the dropped ones, see contract).
	vmap []int32
	nmap []int32
}

// finest returns the level of g itself.
func finest(g *graph.Graph) *level {
	lv := &level{n: g.NumSamples(), m: g.NumParams(),
		voff: g.SampleOffsets(), vadj: g.SampleAdjacency(), noff: g.ParamOffsets(), nadj: g.ParamAdjacency()}
	lv.vw = make([]int64, lv.n)
	for i := range lv.vw {
		lv.vw[i] = 1
	}
	lv.nw = make([]int64, lv.m)
	for i := range lv.nw {
		lv.nw[i] = 1
	}
	return lv
}

func (lv *level) nets(u int) []uint32 { return lv.vadj[lv.voff[u]:lv.voff[u+1]] }
func (lv *level) pins(e int) []uint32 { return lv.nadj[lv.noff[e]:lv.noff[e+1]] }

// kstate is a placement of a level with the counts that make gains
// incremental: cnt[e*k+i] pins of net e in block i, the set of blocks
// with a pin as a bit mask, and per block its sample weight and memory
// M_i = Σ_e w_e [cnt > 0]. owner[e] is the block serving net e, or -1 for
// a floating net, one that is assumed to sit on a block that needs it (as
// every parameter assignment of this package does).
//
// The volume is Σ_e w_e · |C_e \ {owner_e}| with C_e the blocks of net
// e's pins: half of T_sum. For a floating net it is w_e · (λ_e − 1), the
// connectivity metric of hypergraph partitioning, up to a constant.
type kstate struct {
	lv    *level
	k, w  int
	part  []int32
	owner []int32
	cnt   []int32
	mask  []uint64
	size  []int64
	mem   []int64
	hi    []int64 // size bound of each block
	theta int64   // memory bound (0: none)
	// floating reports that every net floats (owner −1), as in FM on the
	// samples alone.
	floating bool

	// freeTo and freeGain are the best target of the last bestMove and
	// its gain with the bounds ignored.
	freeTo   int
	freeGain int64

	// patience is the share of the vertices an FM pass may move past its
	// best prefix before it stops (0: defaultPatience).
	patience float64

	// scratch for gain computations
	bc, bo  []int64
	touched []int32
	tmark   []bool
}

func newKState(lv *level, k int, part, owner []int32, hi []int64, theta int64) *kstate {
	s := &kstate{lv: lv, k: k, w: MaskWords(k), part: part, owner: owner, hi: hi, theta: theta,
		cnt: make([]int32, lv.m*k), size: make([]int64, k), mem: make([]int64, k),
		bc: make([]int64, k), bo: make([]int64, k), tmark: make([]bool, k)}
	s.mask = make([]uint64, lv.m*s.w)
	s.floating = !slices.ContainsFunc(owner, func(o int32) bool { return o >= 0 })
	for u := 0; u < lv.n; u++ {
		i := int(part[u])
		s.size[i] += lv.vw[u]
		for _, e := range lv.nets(u) {
			s.add(int(e), i)
		}
	}
	return s
}

// add counts one more pin of net e in block i.
func (s *kstate) add(e, i int) bool {
	c := &s.cnt[e*s.k+i]
	*c++
	if *c == 1 {
		s.mask[e*s.w+i>>6] |= 1 << (i & 63)
		s.mem[i] += s.lv.nw[e]
		return true
	}
	return false
}

// remove counts one pin less of net e in block i.
func (s *kstate) remove(e, i int) bool {
	c := &s.cnt[e*s.k+i]
	*c--
	if *c == 0 {
		s.mask[e*s.w+i>>6] &^= 1 << (i & 63)
		s.mem[i] -= s.lv.nw[e]
		return true
	}
	return false
}

// has reports whether net e has a pin in block i.
func (s *kstate) has(e, i int) bool { return s.cnt[e*s.k+i] > 0 }

// lambda returns the number of blocks net e has pins in.
func (s *kstate) lambda(e int) int {
	n := 0
	for _, x := range s.mask[e*s.w : e*s.w+s.w] {
		n += bits.OnesCount64(x)
	}
	return n
}

// volume returns Σ_e w_e · |C_e \ {owner_e}|, floating nets counting
// w_e · (λ_e − 1).
func (s *kstate) volume() int64 {
	var v int64
	for e := 0; e < s.lv.m; e++ {
		l := int64(s.lambda(e))
		if l == 0 {
			continue
		}
		o := int(s.owner[e])
		if o < 0 || s.has(e, o) {
			l--
		}
		v += s.lv.nw[e] * l
	}
	return v
}

// bestMove returns the block that vertex u gains most by moving to, among
// the blocks its nets touch that have room, and the gain in volume; -1
// when there is none.
//
// The gain of a move to b is the weight of the nets that u alone needs in
// its block a (unless a serves them) minus the weight of those absent
// from b (unless b serves them). A net in λ ≤ k/2 blocks adds its weight
// to the blocks it is present in, the rest count as absent; a net in more
// blocks adds its weight as a penalty to the blocks it is absent from. So
// a gain costs O(Σ_e min(λ_e, k − λ_e) + k), not O(Σ_e λ_e).
func (s *kstate) bestMove(u int) (int, int64) {
	lv, k := s.lv, s.k
	a := int(s.part[u])
	var leave, small, all int64
	touched := s.touched[:0]
	wide := false
	mark := func(b int) {
		if !s.tmark[b] {
			s.tmark[b] = true
			touched = append(touched, int32(b))
		}
	}
	for _, e := range lv.nets(u) {
		e := int(e)
		w := lv.nw[e]
		o := int(s.owner[e])
		all += w
		if s.cnt[e*k+a] == 1 && o != a {
			leave += w
		}
		base := e * s.w
		if 2*s.lambda(e) > k {
			// Penalise the blocks it is absent from.
			wide = true
			for x := 0; x < s.w; x++ {
				full := ^uint64(0)
				if x == s.w-1 && k&63 != 0 {
					full = uint64(1)<<(k&63) - 1
				}
				for m := ^s.mask[base+x] & full; m != 0; m &= m - 1 {
					b := x<<6 | bits.TrailingZeros64(m)
					if b != o {
						s.bc[b] -= w
					}
				}
			}
			continue
		}
		small += w
		if s.w == 1 && s.mask[base] == 1<<a {
			// Needed by a alone: absent from every target.
		} else {
			for x := 0; x < s.w; x++ {
				for m := s.mask[base+x]; m != 0; m &= m - 1 {
					b := x<<6 | bits.TrailingZeros64(m)
					mark(b)
					s.bc[b] += w
				}
			}
		}
		if o >= 0 && s.cnt[e*k+o] == 0 {
			mark(o)
			s.bo[o] += w
		}
	}
	if wide { // every block is adjacent
		for b := 0; b < k; b++ {
			mark(b)
		}
	}
	best, bg := -1, int64(0)
	s.freeTo, s.freeGain = -1, 0
	vw := lv.vw[u]
	for _, b := range touched {
		b := int(b)
		if b == a {
			s.bc[b], s.bo[b] = 0, 0
			s.tmark[b] = false
			continue
		}
		g := leave - small + s.bc[b] + s.bo[b]
		if s.freeTo < 0 || g > s.freeGain {
			s.freeTo, s.freeGain = b, g
		}
		if s.size[b]+vw <= s.hi[b] && s.fits(u, b, all, leave-g) {
			if best < 0 || g > bg || (g == bg && s.size[b] < s.size[best]) {
				best, bg = b, g
			}
		}
		s.bc[b], s.bo[b] = 0, 0
		s.tmark[b] = false
	}
	if wide {
		clear(s.bc) // blocks penalised but not visited above are all visited
	}
	s.touched = touched
	return best, bg
}

// leave returns the weight of the nets that vertex u alone needs in its
// block and that the block does not serve: an upper bound on the gain of
// any move of u.
func (s *kstate) leave(u int) int64 {
	a := int(s.part[u])
	var x int64
	for _, e := range s.lv.nets(u) {
		if s.cnt[int(e)*s.k+a] == 1 && int(s.owner[e]) != a {
			x += s.lv.nw[e]
		}
	}
	return x
}

// fits reports whether moving vertex u to block b keeps M_b within θ.
// all is the weight of u's nets and lost the gain of the move subtracted
// from what u leaves behind, which with floating nets is exactly what the
// move adds to M_b; otherwise that is counted by absent.
func (s *kstate) fits(u, b int, all, lost int64) bool {
	if s.theta == 0 || s.mem[b]+all <= s.theta {
		return true
	}
	if !s.floating {
		lost = s.absent(u, b)
	}
	return s.mem[b]+lost <= s.theta
}

// absent returns the weight of u's nets with no pin in block b: what
// moving u to b adds to M_b.
func (s *kstate) absent(u, b int) int64 {
	var x int64
	for _, e := range s.lv.nets(u) {
		if s.cnt[int(e)*s.k+b] == 0 {
			x += s.lv.nw[e]
		}
	}
	return x
}

// gain returns the volume gained by moving vertex u to block b.
func (s *kstate) gain(u, b int) int64 {
	lv, k := s.lv, s.k
	a := int(s.part[u])
	var g int64
	for _, e := range lv.nets(u) {
		e := int(e)
		o := int(s.owner[e])
		if s.cnt[e*k+a] == 1 && o != a {
			g += lv.nw[e]
		}
		if s.cnt[e*k+b] == 0 && o != b {
			g -= lv.nw[e]
		}
	}
	return g
}

// move moves vertex u to block b; changed, when set, is called with each
// net whose pin counts crossed 0, 1 or 2 in a block.
func (s *kstate) move(u, b int, changed func(e int)) {
	lv, k := s.lv, s.k
	a := int(s.part[u])
	for _, e := range lv.nets(u) {
		e := int(e)
		s.remove(e, a)
		s.add(e, b)
		// Only two transitions raise other pins' gains: the last pin
		// left in a may now leave it free, and b is now a free target
		// for the rest. Lowered gains are found when popped.
		if changed != nil && (s.cnt[e*k+a] == 1 || s.cnt[e*k+b] == 1) {
			changed(e)
		}
	}
	s.part[u] = int32(b)
	s.size[a] -= lv.vw[u]
	s.size[b] += lv.vw[u]
}

// fmEntry is a candidate move in the FM priority queue.
type fmEntry struct {
	gain int64
	u    int32
	ver  int32
}

type fmHeap []fmEntry

func (h fmHeap) Len() int { return len(h) }
func (h fmHeap) Less(a, b int) bool {
	return h[a].gain > h[b].gain || (h[a].gain == h[b].gain && h[a].u < h[b].u)
}
func (h fmHeap) Swap(a, b int) { h[a], h[b] = h[b], h[a] }
func (h *fmHeap) Push(x any)   { *h = append(*h, x.(fmEntry)) }
func (h *fmHeap) Pop() any {
	x := (*h)[len(*h)-1]
	*h = (*h)[:len(*h)-1]
	return x
}

// defaultPatience is the share of a level's vertices that an FM pass
// moves past its best prefix before it stops: at least 32 moves.
const defaultPatience = 1.0 / 400

// maxUpdateNet is the largest net whose pins FM tracks after a move; the
// gains of pins of larger nets are corrected when they are popped.
const maxUpdateNet = 256

// maxWake is the most vertices that room in a block puts back in the FM
// queue, those of largest keys among the ones whose moves it blocked.
const maxWake = 8

// fmScratch is the per-vertex memory of FM passes, reused from pass to
// pass: locked vertices, the dirty marks and raises of the current move,
// and each vertex's key, an upper bound on its best gain (valid in the
// queue when queued, else a bound on what it leaves behind).
type fmScratch struct {
	locked []bool
	stamp  []bool
	queued []bool
	ver    []int32
	key    []int64
	raise  []int64
	wait   []fmHeap // per block, the vertices whose best move it blocks
}

func newFMScratch(n, k int) *fmScratch {
	return &fmScratch{locked: make([]bool, n), stamp: make([]bool, n), queued: make([]bool, n),
		ver: make([]int32, n), key: make([]int64, n), raise: make([]int64, n), wait: make([]fmHeap, k)}
}

// fmPass runs one pass of k-way FM on the vertices: the move of largest
// gain is made first, negative gains included, each vertex moves at most
// once, and after the pass the moves past the best prefix are undone. A
// pass stops early after a run of moves that do not reach the best
// prefix (s.patience of the vertices). It returns the volume gained
// (≥ 0).
//
// The queue holds upper bounds of the gains, corrected lazily: a move of
// u from a to b can raise another vertex's gain only through a net of u
// whose pins in a fell to one (that pin now leaves it behind) or in b
// rose to one (every other pin may now join it in b), each by the net's
// weight. Those raises are added to the keys of the pins, in O(1) per
// pin; every other change lowers gains. A popped vertex is rated afresh
// and pushed back when its gain is below its key, so the move made is
// one of largest gain (exactly so for nets of at most maxUpdateNet pins).
func (s *kstate) fmPass(rng *rand.Rand, sc *fmScratch) int64 {
	lv, k := s.lv, s.k
	locked, stamp, queued, ver, key, raise, wait := sc.locked, sc.stamp, sc.queued, sc.ver, sc.key, sc.raise, sc.wait
	clear(locked)
	clear(queued)
	for i := range wait {
		wait[i] = wait[i][:0]
	}
	h := fmHeap(make([]fmEntry, 0, lv.n/4+16))
	// enqueue takes u's rating by bestMove (b, g and the free move): its
	// key becomes the best gain with the bounds ignored, its best move
	// within the bounds is queued and, when that gains less, u waits for
	// room in the block of the free one.
	enqueue := func(u, b int, g int64) {
		ver[u]++
		key[u], queued[u] = s.freeGain, b >= 0
		if s.freeTo < 0 {
			key[u] = 0
		}
		if b >= 0 {
			heap.Push(&h, fmEntry{g, int32(u), ver[u]})
		}
		if s.freeTo >= 0 && (b < 0 || s.freeGain > g) {
			heap.Push(&wait[s.freeTo], fmEntry{s.freeGain, int32(u), ver[u]})
		}
	}
	for _, u := range rng.Perm(lv.n) {
		// A move gains at most what u leaves behind: skip the vertices
		// that leave nothing, whose moves cannot gain.
		key[u] = s.leave(u)
		if key[u] == 0 {
			continue
		}
		b, g := s.bestMove(u)
		enqueue(u, b, g)
	}
	type moved struct {
		u    int32
		from int32
	}
	var log []moved
	var cur, best int64
	bestLen := 0
	stall := 0
	maxStall := max(32, lv.n/400)
	if p := s.patience; p != 0 && p != defaultPatience {
		maxStall = max(32, int(p*float64(lv.n)))
	}
	var dirty []int32
	var mover, from, to int
	bump := func(x int, w int64) {
		if locked[x] || x == mover {
			return
		}
		if !stamp[x] {
			stamp[x] = true
			raise[x] = 0
			dirty = append(dirty, int32(x))
		}
		raise[x] += w
	}
	changed := func(e int) {
		if lv.noff[e+1]-lv.noff[e] > maxUpdateNet {
			return
		}
		w, o := lv.nw[e], int(s.owner[e])
		inA := s.cnt[e*k+from] == 1 && o != from
		inB := s.cnt[e*k+to] == 1 && o != to
		for _, x := range lv.pins(e) {
			x := int(x)
			if inB {
				bump(x, w) // may join it in b
			}
			if inA && s.part[x] == int32(from) {
				bump(x, w) // now leaves it behind
			}
		}
	}
	for h.Len() > 0 && stall < maxStall {
		top := heap.Pop(&h).(fmEntry)
		u := int(top.u)
		if locked[u] || top.ver != ver[u] {
			continue
		}
		b, g := s.bestMove(u)
		if b < 0 || g < top.gain {
			enqueue(u, b, g)
			continue
		}
		log = append(log, moved{top.u, s.part[u]})
		locked[u] = true
		mover, from, to = u, int(s.part[u]), b
		s.move(u, b, changed)
		cur += g
		if cur > best {
			best, bestLen, stall = cur, len(log), 0
		} else {
			stall++
		}
		for _, x := range dirty {
			stamp[x] = false
			key[x] += raise[x]
			if !queued[x] && key[x] <= 0 {
				continue
			}
			ver[x]++
			queued[x] = true
			heap.Push(&h, fmEntry{key[x], x, ver[x]})
		}
		dirty = dirty[:0]
		// Room in from: the moves it blocked of largest keys are
		// candidates again.
		for woken := 0; woken < maxWake && wait[from].Len() > 0; {
			w := heap.Pop(&wait[from]).(fmEntry)
			x := w.u
			if locked[x] || w.ver != ver[x] {
				continue
			}
			ver[x]++
			queued[x] = true
			heap.Push(&h, fmEntry{key[x], x, ver[x]})
			woken++
		}
	}
	for x := len(log) - 1; x >= bestLen; x-- {
		s.move(int(log[x].u), int(log[x].from), nil)
	}
	return best
}

// fm runs FM passes until one gains less than a fraction minGain of the
// volume, or maxPasses; it returns the volume gained.
func (s *kstate) fm(rng *rand.Rand, maxPasses int) int64 {
	sc := newFMScratch(s.lv.n, s.k)
	var total int64
	vol := s.volume()
	for p := 0; p < maxPasses; p++ {
		g := s.fmPass(rng, sc)
		total += g
		if g == 0 || float64(g) < 1e-3*float64(vol) {
			break
		}
		vol -= g
	}
	return total
}

// lpPass is one round of label propagation: the vertices, in a random
// order, move to their best target when that gains. It costs one gain
// evaluation per vertex that leaves something behind, and returns the
// volume gained.
func (s *kstate) lpPass(rng *rand.Rand) int64 {
	var total int64
	for _, u := range rng.Perm(s.lv.n) {
		if s.leave(u) == 0 {
			continue
		}
		if b, g := s.bestMove(u); b >= 0 && g > 0 {
			s.move(u, b, nil)
			total += g
		}
	}
	return total
}
