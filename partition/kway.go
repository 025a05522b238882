package partition

import (
	"math/bits"
	"math/rand/v2"
	"runtime"
	"slices"
	"sort"
	"sync"

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
// incremental: cnt[e*k+i] pins of net e in block i, the sets of blocks
// with a pin and with exactly one pin as bit masks, and per block its
// sample weight and memory M_i = Σ_e w_e [cnt > 0]. owner[e] is the block
// serving net e, or -1 for a floating net, one that is assumed to sit on
// a block that needs it (as every parameter assignment of this package
// does).
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
	// nd holds what a gain reads of each net in one record of sd words,
	// so that rating a vertex touches one cache line per net: the mask of
	// the blocks with a pin (w words), the mask of the blocks with exactly
	// one pin (w words) and, unless every net weighs 1, the net's weight
	// (sd = 2w or 2w+1).
	nd    []uint64
	sd    int
	size  []int64
	mem   []int64
	hi    []int64 // size bound of each block
	theta int64   // memory bound (0: none)
	// floating reports that every net floats (owner −1), as in FM on the
	// samples alone.
	floating bool
	// unit reports that every net weighs 1.
	unit bool

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
	clearBC bool // bc holds values outside touched: choose clears it all
	// gathered records of one vertex's nets (rate1)
	gm, g1, gw []uint64
	gown       []int32

	// gc is the gain cache of the FM passes (nil: none), cacheMode
	// whether fm keeps one.
	gc        *gainCache
	cacheMode cacheMode
}

func newKState(lv *level, k int, part, owner []int32, hi []int64, theta int64) *kstate {
	s := &kstate{lv: lv, k: k, w: MaskWords(k), part: part, owner: owner, hi: hi, theta: theta,
		cnt: make([]int32, lv.m*k), size: make([]int64, k), mem: make([]int64, k),
		bc: make([]int64, k), bo: make([]int64, k), tmark: make([]bool, k)}
	s.floating = !slices.ContainsFunc(owner, func(o int32) bool { return o >= 0 })
	s.unit = !slices.ContainsFunc(lv.nw, func(w int64) bool { return w != 1 })
	s.sd = 2 * s.w
	if !s.unit {
		s.sd++
	}
	s.nd = make([]uint64, lv.m*s.sd)
	for u := 0; u < lv.n; u++ {
		s.size[part[u]] += lv.vw[u]
	}
	// Net by net, each on its row of counts and its record: ranges of
	// nets of about equal pins on up to GOMAXPROCS goroutines.
	workers := max(1, min(runtime.GOMAXPROCS(0), len(lv.nadj)/minCountPins))
	if workers == 1 {
		s.countNets(0, lv.m, s.mem)
		return s
	}
	mems := make([][]int64, workers)
	var wg sync.WaitGroup
	lo := 0
	for t := range workers {
		hi := lo
		if t == workers-1 {
			hi = lv.m
		} else {
			target := int64(len(lv.nadj)) * int64(t+1) / int64(workers)
			hi += sort.Search(lv.m-lo, func(x int) bool { return lv.noff[lo+x] >= target })
		}
		mems[t] = make([]int64, k)
		from := lo
		wg.Go(func() { s.countNets(from, hi, mems[t]) })
		lo = hi
	}
	wg.Wait()
	for _, m := range mems {
		for i, x := range m {
			s.mem[i] += x
		}
	}
	return s
}

// minCountPins is the fewest pins per goroutine that newKState counts.
const minCountPins = 1 << 16

// countNets fills the counts and records of nets lo..hi−1 from their pins
// and adds their memory to mem.
func (s *kstate) countNets(lo, hi int, mem []int64) {
	lv, k, sw, sd := s.lv, s.k, s.w, s.sd
	for e := lo; e < hi; e++ {
		row := s.cnt[e*k : e*k+k]
		rec := s.nd[e*sd : e*sd+sd]
		for _, x := range lv.pins(e) {
			b := int(s.part[x])
			row[b]++
			rec[b>>6] |= 1 << (b & 63)
		}
		w := lv.nw[e]
		if !s.unit {
			rec[2*sw] = uint64(w)
		}
		for x := 0; x < sw; x++ {
			for z := rec[x]; z != 0; z &= z - 1 {
				b := x<<6 | bits.TrailingZeros64(z)
				if row[b] == 1 {
					rec[sw+x] |= 1 << (b & 63)
				}
				mem[b] += w
			}
		}
	}
}

// add counts one more pin of net e in block i.
func (s *kstate) add(e, i int) bool {
	c := &s.cnt[e*s.k+i]
	*c++
	at, bit := e*s.sd+i>>6, uint64(1)<<(i&63)
	switch *c {
	case 1:
		s.nd[at] |= bit
		s.nd[at+s.w] |= bit
		s.mem[i] += s.lv.nw[e]
		return true
	case 2:
		s.nd[at+s.w] &^= bit
	}
	return false
}

// remove counts one pin less of net e in block i.
func (s *kstate) remove(e, i int) bool {
	c := &s.cnt[e*s.k+i]
	*c--
	at, bit := e*s.sd+i>>6, uint64(1)<<(i&63)
	switch *c {
	case 0:
		s.nd[at] &^= bit
		s.nd[at+s.w] &^= bit
		s.mem[i] -= s.lv.nw[e]
		return true
	case 1:
		s.nd[at+s.w] |= bit
	}
	return false
}

// has reports whether net e has a pin in block i.
func (s *kstate) has(e, i int) bool { return s.nd[e*s.sd+i>>6]>>(i&63)&1 != 0 }

// single reports whether net e has exactly one pin in block i.
func (s *kstate) single(e, i int) bool { return s.nd[e*s.sd+s.w+i>>6]>>(i&63)&1 != 0 }

// mask returns the mask of the blocks where net e has pins.
func (s *kstate) mask(e int) []uint64 { return s.nd[e*s.sd : e*s.sd+s.w] }

// lambda returns the number of blocks net e has pins in.
func (s *kstate) lambda(e int) int {
	n := 0
	for _, x := range s.mask(e) {
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
	if s.gc != nil {
		return s.cachedMove(u)
	}
	var leave, small, all int64
	switch {
	case s.w == 1 && s.unit && s.floating:
		leave, small, all = s.rate1Unit(u)
	case s.w == 1:
		leave, small, all = s.rate1(u)
	default:
		leave, small, all = s.rate(u)
	}
	return s.choose(u, leave, small, all)
}

// rate adds the weight of u's nets to s.bc and s.bo for bestMove (the
// blocks so marked listed in s.touched, in the order first marked) and
// returns the weight of the nets u leaves behind, of those with λ ≤ k/2
// and of all its nets.
func (s *kstate) rate(u int) (leave, small, all int64) {
	lv, k := s.lv, s.k
	a := int(s.part[u])
	touched := s.touched[:0]
	wide := false
	mark := func(b int) {
		if !s.tmark[b] {
			s.tmark[b] = true
			touched = append(touched, int32(b))
		}
	}
	sw, sd := s.w, s.sd
	aw, abit := a>>6, uint64(1)<<(a&63)
	for _, e := range lv.nets(u) {
		rec := s.nd[int(e)*sd : int(e)*sd+sd]
		w := int64(1)
		if !s.unit {
			w = int64(rec[2*sw])
		}
		o := -1
		if !s.floating {
			o = int(s.owner[e])
		}
		all += w
		if rec[sw+aw]&abit != 0 && o != a {
			leave += w
		}
		lambda := 0
		for _, x := range rec[:sw] {
			lambda += bits.OnesCount64(x)
		}
		if 2*lambda > k {
			// Penalise the blocks it is absent from.
			wide = true
			for x := 0; x < sw; x++ {
				full := ^uint64(0)
				if x == sw-1 && k&63 != 0 {
					full = uint64(1)<<(k&63) - 1
				}
				for m := ^rec[x] & full; m != 0; m &= m - 1 {
					b := x<<6 | bits.TrailingZeros64(m)
					if b != o {
						s.bc[b] -= w
					}
				}
			}
			continue
		}
		small += w
		if sw == 1 && rec[0] == abit {
			// Needed by a alone: absent from every target.
		} else {
			for x := 0; x < sw; x++ {
				for m := rec[x]; m != 0; m &= m - 1 {
					b := x<<6 | bits.TrailingZeros64(m)
					mark(b)
					s.bc[b] += w
				}
			}
		}
		if o >= 0 && rec[o>>6]>>(o&63)&1 == 0 {
			mark(o)
			s.bo[o] += w
		}
	}
	if wide { // every block is adjacent
		for b := 0; b < k; b++ {
			mark(b)
		}
	}
	for _, b := range touched {
		s.tmark[b] = false
	}
	s.touched, s.clearBC = touched, wide
	return leave, small, all
}

// rate1 is rate for k ≤ 64, one mask word per net: the records of u's
// nets are gathered first, in a loop whose loads overlap, and the blocks
// marked are kept in a mask.
func (s *kstate) rate1(u int) (leave, small, all int64) {
	lv, k := s.lv, s.k
	a := int(s.part[u])
	abit := uint64(1) << a
	nets := lv.nets(u)
	d := len(nets)
	if cap(s.gm) < d {
		s.gm, s.g1, s.gw = make([]uint64, d), make([]uint64, d), make([]uint64, d)
	}
	gm, g1, gw := s.gm[:d], s.g1[:d], s.gw[:d]
	nd := s.nd
	if s.unit {
		for x, e := range nets {
			r := nd[int(e)*2 : int(e)*2+2 : int(e)*2+2]
			gm[x], g1[x], gw[x] = r[0], r[1], 1
		}
	} else {
		for x, e := range nets {
			r := nd[int(e)*3 : int(e)*3+3 : int(e)*3+3]
			gm[x], g1[x], gw[x] = r[0], r[1], r[2]
		}
	}
	var owner []int32
	if !s.floating {
		if cap(s.gown) < d {
			s.gown = make([]int32, d)
		}
		owner = s.gown[:d]
		for x, e := range nets {
			owner[x] = s.owner[e]
		}
	}
	full := ^uint64(0)
	if k < 64 {
		full = uint64(1)<<k - 1
	}
	bc, bo := s.bc[:k:k], s.bo[:k:k]
	touched := s.touched[:0]
	var seen uint64
	wide := false
	for x, m := range gm {
		w := int64(gw[x])
		o := -1
		if owner != nil {
			o = int(owner[x])
		}
		all += w
		if g1[x]&abit != 0 && o != a {
			leave += w
		}
		if 2*bits.OnesCount64(m) > k {
			// Penalise the blocks it is absent from.
			wide = true
			for z := ^m & full; z != 0; z &= z - 1 {
				if b := bits.TrailingZeros64(z); b != o {
					bc[b&63] -= w
				}
			}
			continue
		}
		small += w
		if m != abit {
			for z := m &^ seen; z != 0; z &= z - 1 {
				touched = append(touched, int32(bits.TrailingZeros64(z)))
			}
			seen |= m
			for z := m; z != 0; z &= z - 1 {
				bc[bits.TrailingZeros64(z)&63] += w
			}
		}
		if o >= 0 && m>>o&1 == 0 {
			if seen>>o&1 == 0 {
				seen |= 1 << o
				touched = append(touched, int32(o))
			}
			bo[o] += w
		}
	}
	if wide { // every block is adjacent
		for z := full &^ seen; z != 0; z &= z - 1 {
			touched = append(touched, int32(bits.TrailingZeros64(z)))
		}
	}
	s.touched, s.clearBC = touched, wide
	return leave, small, all
}

// rate1Unit is rate1 for nets of weight 1 that float: the counts of the
// blocks are added a mask at a time into byte-wide lanes, 8 blocks per
// word, and flushed into s.bc every 255 nets, so that a net costs k/8
// additions rather than one per block it adds to.
func (s *kstate) rate1Unit(u int) (leave, small, all int64) {
	k := s.k
	a := int(s.part[u])
	abit := uint64(1) << a
	nets := s.lv.nets(u)
	d := len(nets)
	nd := s.nd
	full := ^uint64(0)
	if k < 64 {
		full = uint64(1)<<k - 1
	}
	nb := (k + 7) / 8
	bc := s.bc[:k:k]
	touched := s.touched[:0]
	var seen, wide uint64
	// Per net, without branches on the data: all ones in wm when the net
	// is wide, its blocks in zp when not, those it is absent from in zn
	// when it is, and its blocks in zt when not wide and not needed by a
	// alone (those bestMove marks).
	for start := 0; start < d; start += 255 {
		end := min(d, start+255)
		var p0, p1, n0, n1 uint64
		var pos, neg [8]uint64
		for _, e := range nets[start:end] {
			r := nd[int(e)*2 : int(e)*2+2 : int(e)*2+2]
			m := r[0]
			leave += int64(r[1] >> a & 1)
			wm := uint64(int64(k-2*bits.OnesCount64(m)) >> 63)
			wide |= wm
			small += int64(wm + 1)
			zp, zn := m&^wm, ^m&full&wm
			ne := m ^ abit
			zt := zp & -((ne | -ne) >> 63)
			if z := zt &^ seen; z != 0 {
				for ; z != 0; z &= z - 1 {
					touched = append(touched, int32(bits.TrailingZeros64(z)))
				}
				seen |= zt
			}
			if nb <= 2 {
				p0 += byteLanes[byte(zp)]
				p1 += byteLanes[byte(zp>>8)]
				n0 += byteLanes[byte(zn)]
				n1 += byteLanes[byte(zn>>8)]
				continue
			}
			for j := range nb {
				pos[j&7] += byteLanes[byte(zp>>(8*j))]
				neg[j&7] += byteLanes[byte(zn>>(8*j))]
			}
		}
		if nb <= 2 {
			pos[0], pos[1], neg[0], neg[1] = p0, p1, n0, n1
		}
		for b := range bc {
			sh := 8 * (b & 7)
			bc[b] += int64(pos[b>>3&7]>>sh&0xff) - int64(neg[b>>3&7]>>sh&0xff)
		}
	}
	if wide != 0 { // every block is adjacent
		for z := full &^ seen; z != 0; z &= z - 1 {
			touched = append(touched, int32(bits.TrailingZeros64(z)))
		}
	}
	// bc was written for every block, a and the untouched ones included.
	s.touched, s.clearBC = touched, true
	return leave, small, int64(d)
}

// choose returns bestMove's block and gain from the ratings of rate.
func (s *kstate) choose(u int, leave, small, all int64) (int, int64) {
	lv := s.lv
	a := int(s.part[u])
	touched := s.touched
	best, bg := -1, int64(0)
	s.freeTo, s.freeGain = -1, 0
	vw := lv.vw[u]
	for _, b := range touched {
		b := int(b)
		if b == a {
			s.bc[b], s.bo[b] = 0, 0
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
	}
	if s.clearBC {
		clear(s.bc) // blocks penalised but not visited above are all visited
	}
	return best, bg
}

// leave returns the weight of the nets that vertex u alone needs in its
// block and that the block does not serve: an upper bound on the gain of
// any move of u.
func (s *kstate) leave(u int) int64 {
	if s.gc != nil {
		return s.cachedLeave(u)
	}
	a := int(s.part[u])
	var x int64
	aw, abit := s.w+a>>6, uint64(1)<<(a&63)
	for _, e := range s.lv.nets(u) {
		rec := s.nd[int(e)*s.sd : int(e)*s.sd+s.sd]
		if rec[aw]&abit != 0 && (s.floating || int(s.owner[e]) != a) {
			if s.unit {
				x++
			} else {
				x += int64(rec[2*s.w])
			}
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
		if !s.has(int(e), b) {
			x += s.lv.nw[e]
		}
	}
	return x
}

// gain returns the volume gained by moving vertex u to block b.
func (s *kstate) gain(u, b int) int64 {
	lv := s.lv
	a := int(s.part[u])
	var g int64
	for _, e := range lv.nets(u) {
		e := int(e)
		o := int(s.owner[e])
		if s.single(e, a) && o != a {
			g += lv.nw[e]
		}
		if !s.has(e, b) && o != b {
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
	gc := s.gc
	if a == b {
		gc = nil
	}
	var leave int64
	for _, e := range lv.nets(u) {
		e := int(e)
		s.remove(e, a)
		s.add(e, b)
		if gc != nil {
			s.updateCache(u, e, a, b)
			if s.cnt[e*k+b] == 1 && (s.floating || int(s.owner[e]) != b) {
				leave += lv.nw[e]
			}
		}
		// Only two transitions raise other pins' gains: the last pin
		// left in a may now leave it free, and b is now a free target
		// for the rest. Lowered gains are found when popped.
		if changed != nil && (s.cnt[e*k+a] == 1 || s.cnt[e*k+b] == 1) {
			changed(e)
		}
	}
	if gc != nil {
		gc.rows[u*gc.stride+cacheLeave] = int32(leave)
	}
	s.part[u] = int32(b)
	s.size[a] -= lv.vw[u]
	s.size[b] += lv.vw[u]
}

// fmEntry is a candidate move waiting on a block, with the version of
// its vertex when queued.
type fmEntry struct {
	gain int64
	u    int32
	ver  int32
}

// fmHeap is a binary max-heap of candidate moves by gain, ties to the
// lower vertex, for the vertices waiting on a block. push and pop follow
// container/heap's algorithm without its interface calls.
type fmHeap []fmEntry

func (h fmHeap) Len() int { return len(h) }

func (e fmEntry) before(f fmEntry) bool {
	return e.gain > f.gain || (e.gain == f.gain && e.u < f.u)
}

func (h *fmHeap) push(x fmEntry) {
	*h = append(*h, x)
	q := *h
	j := len(q) - 1
	for j > 0 {
		i := (j - 1) / 2
		if i == j || !q[j].before(q[i]) {
			break
		}
		q[i], q[j] = q[j], q[i]
		j = i
	}
}

func (h *fmHeap) pop() fmEntry {
	q := *h
	n := len(q) - 1
	q[0], q[n] = q[n], q[0]
	i := 0
	for {
		j1 := 2*i + 1
		if j1 >= n || j1 < 0 {
			break
		}
		j := j1
		if j2 := j1 + 1; j2 < n && q[j2].before(q[j1]) {
			j = j2
		}
		if !q[j].before(q[i]) {
			break
		}
		q[i], q[j] = q[j], q[i]
		i = j
	}
	x := q[n]
	*h = q[:n]
	return x
}

// fmQueue is the FM priority queue: a 4-ary max-heap of candidate
// moves by gain, ties to the lower vertex, with at most one entry per
// vertex, whose position it keeps so that the entry can be changed or
// removed in place. A heap into which every change pushes a new entry,
// the old ones skipped as stale when popped, makes the same moves: its
// valid entries are these, and come out in the same order (gain, then
// vertex, is a total order on them); this one stays as small as the
// number of vertices queued.
type fmQueue struct {
	q   []fmSlot
	pos []int32 // per vertex: index in q, or −1
}

// fmSlot is an entry of fmQueue.
type fmSlot struct {
	gain int64
	u    int32
}

func (x fmSlot) before(y fmSlot) bool {
	return x.gain > y.gain || (x.gain == y.gain && x.u < y.u)
}

func newFMQueue(n int) *fmQueue {
	pos := make([]int32, n)
	for i := range pos {
		pos[i] = -1
	}
	return &fmQueue{pos: pos}
}

func (h *fmQueue) Len() int { return len(h.q) }

// reset empties the queue.
func (h *fmQueue) reset() {
	for _, x := range h.q {
		h.pos[x.u] = -1
	}
	h.q = h.q[:0]
}

// set queues vertex u with gain g, replacing its entry.
func (h *fmQueue) set(u int32, g int64) {
	x := fmSlot{g, u}
	j := int(h.pos[u])
	if j < 0 {
		h.q = append(h.q, x)
		h.up(len(h.q)-1, x)
		return
	}
	if old := h.q[j]; x.before(old) {
		h.up(j, x)
	} else {
		h.down(j, x)
	}
}

// remove takes u's entry out of the queue, if any.
func (h *fmQueue) remove(u int32) {
	j := int(h.pos[u])
	if j < 0 {
		return
	}
	h.pos[u] = -1
	n := len(h.q) - 1
	last := h.q[n]
	h.q = h.q[:n]
	if j == n {
		return
	}
	if last.before(h.q[j]) {
		h.up(j, last)
	} else {
		h.down(j, last)
	}
}

// pop removes and returns the entry of largest gain.
func (h *fmQueue) pop() fmSlot {
	top := h.q[0]
	h.pos[top.u] = -1
	n := len(h.q) - 1
	last := h.q[n]
	h.q = h.q[:n]
	if n > 0 {
		h.down(0, last)
	}
	return top
}

// up places x at index j or above.
func (h *fmQueue) up(j int, x fmSlot) {
	q, pos := h.q, h.pos
	for j > 0 {
		i := (j - 1) / 4
		if !x.before(q[i]) {
			break
		}
		q[j] = q[i]
		pos[q[j].u] = int32(j)
		j = i
	}
	q[j] = x
	pos[x.u] = int32(j)
}

// down places x at index i or below.
func (h *fmQueue) down(i int, x fmSlot) {
	q, pos := h.q, h.pos
	n := len(q)
	for {
		c := 4*i + 1
		if c >= n {
			break
		}
		j := c
		for d := c + 1; d < min(c+4, n); d++ {
			if q[d].before(q[j]) {
				j = d
			}
		}
		if !q[j].before(x) {
			break
		}
		q[i] = q[j]
		pos[q[i].u] = int32(i)
		i = j
	}
	q[i] = x
	pos[x.u] = int32(i)
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
	queue  *fmQueue // the candidate moves
	// the ratings of rateAll
	to, freeTo     []int32
	gain, freeGain []int64
}

func newFMScratch(n, k int) *fmScratch {
	return &fmScratch{locked: make([]bool, n), stamp: make([]bool, n), queued: make([]bool, n),
		ver: make([]int32, n), key: make([]int64, n), raise: make([]int64, n), wait: make([]fmHeap, k),
		queue: newFMQueue(n)}
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
	h := sc.queue
	defer h.reset()
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
			h.set(int32(u), g)
		} else {
			h.remove(int32(u))
		}
		if s.freeTo >= 0 && (b < 0 || s.freeGain > g) {
			wait[s.freeTo].push(fmEntry{s.freeGain, int32(u), ver[u]})
		}
	}
	// A move gains at most what u leaves behind: skip the vertices that
	// leave nothing, whose moves cannot gain. The ratings depend on the
	// state alone, so large levels rate on several goroutines and queue
	// in the order of perm after.
	perm := rng.Perm(lv.n)
	if workers := min(runtime.GOMAXPROCS(0), len(lv.vadj)/minRatePins); workers > 1 && s.gc == nil {
		s.rateAll(perm, workers, sc)
		for _, u := range perm {
			if key[u] == 0 {
				continue
			}
			s.freeTo, s.freeGain = int(sc.freeTo[u]), sc.freeGain[u]
			enqueue(u, int(sc.to[u]), sc.gain[u])
		}
	} else {
		for _, u := range perm {
			key[u] = s.leave(u)
			if key[u] == 0 {
				continue
			}
			b, g := s.bestMove(u)
			enqueue(u, b, g)
		}
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
		top := h.pop()
		u := int(top.u)
		if locked[u] {
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
			h.set(x, key[x])
		}
		dirty = dirty[:0]
		// Room in from: the moves it blocked of largest keys are
		// candidates again.
		for woken := 0; woken < maxWake && wait[from].Len() > 0; {
			w := wait[from].pop()
			x := w.u
			if locked[x] || w.ver != ver[x] {
				continue
			}
			ver[x]++
			queued[x] = true
			h.set(x, key[x])
			woken++
		}
	}
	for x := len(log) - 1; x >= bestLen; x-- {
		s.move(int(log[x].u), int(log[x].from), nil)
	}
	return best
}

// minRatePins is the fewest pins per goroutine for which fmPass rates
// the vertices at its start on several goroutines.
const minRatePins = 1 << 15

// rateAll sets sc.key of every vertex to what it leaves behind and, for
// those that leave something, sc.to, sc.gain, sc.freeTo and sc.freeGain
// to bestMove's result, on the given number of goroutines, each with its
// own scratch; s is only read.
func (s *kstate) rateAll(perm []int, workers int, sc *fmScratch) {
	if len(sc.to) < s.lv.n {
		n := s.lv.n
		sc.to, sc.freeTo = make([]int32, n), make([]int32, n)
		sc.gain, sc.freeGain = make([]int64, n), make([]int64, n)
	}
	var wg sync.WaitGroup
	for t := range workers {
		part := perm[len(perm)*t/workers : len(perm)*(t+1)/workers]
		wg.Go(func() {
			r := *s
			r.bc, r.bo, r.tmark = make([]int64, s.k), make([]int64, s.k), make([]bool, s.k)
			r.touched, r.gm, r.g1, r.gw, r.gown = nil, nil, nil, nil, nil
			for _, u := range part {
				sc.key[u] = r.leave(u)
				if sc.key[u] == 0 {
					continue
				}
				b, g := r.bestMove(u)
				sc.to[u], sc.gain[u] = int32(b), g
				sc.freeTo[u], sc.freeGain[u] = int32(r.freeTo), r.freeGain
			}
		})
	}
	wg.Wait()
}

// fm runs FM passes until one gains less than a fraction minGain of the
// volume, or maxPasses; it returns the volume gained.
func (s *kstate) fm(rng *rand.Rand, maxPasses int) int64 {
	sc := newFMScratch(s.lv.n, s.k)
	if s.wantCache() {
		s.buildCache()
		defer func() { s.gc = nil }()
	}
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
