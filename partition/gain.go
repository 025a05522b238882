package partition

import (
	"math/bits"
	"runtime"
	"slices"
	"sort"
	"sync"
)

// The incremental gain state of the k-way passes: kstate places the
// vertices of a level on k blocks and keeps, per net, its pin count in
// each block and two masks (blocks with a pin, blocks with exactly one),
// so that the gain of moving a vertex is read from its nets' records
// without a recount, and a move updates them in O(degree).
//
// bestMove rates a vertex by one of three hand-specialised raters, or by
// the gain cache of kwaycache.go when the FM passes keep one (then none
// of these runs per move). All three give the same ratings; TestKWayGains
// checks bestMove through each of them against gain, the plain recount:
//
//	rater      used when                              how
//	rate1Unit  k ≤ 64, every net weighs 1 and floats  counts a mask at a time in byte-wide
//	           (Bisect, Refine's FM on the finest     lanes, 8 blocks per word, no branch on
//	           level: the samples alone)              the data; O(d·k/8) per vertex
//	rate1      k ≤ 64 otherwise: weighted nets        gathers the one-word records of u's nets
//	           (coarser levels) or nets with an       first, then marks blocks in a bit mask
//	           owner (MBP, Refine's max phase)
//	rate       k > 64, several mask words per net     the general case: walks each record's
//	                                                  words, marks blocks in s.tmark
//
// Each adds into s.bc and s.bo and lists the blocks it marked in
// s.touched; choose turns that into the best block within the size and
// memory bounds, and the best one ignoring them (freeTo, freeGain).

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
	// keepCache keeps gc once fm returns, up to date through move, for
	// the next call of fm on the same state.
	keepCache bool
}

func newKState(lv *level, k int, part, owner []int32, hi []int64, theta int64) *kstate {
	return newKStateMem(lv, k, part, owner, hi, theta, nil)
}

// newKStateMem is newKState with the counts and records taken from mem;
// release gives them back.
func newKStateMem(lv *level, k int, part, owner []int32, hi []int64, theta int64, mem *levelMem) *kstate {
	s := &kstate{lv: lv, k: k, w: MaskWords(k), part: part, owner: owner, hi: hi, theta: theta,
		cnt: mem.getI32(lv.m * k), size: make([]int64, k), mem: make([]int64, k),
		bc: make([]int64, k), bo: make([]int64, k), tmark: make([]bool, k)}
	s.floating = !slices.ContainsFunc(owner, func(o int32) bool { return o >= 0 })
	s.unit = !slices.ContainsFunc(lv.nw, func(w int64) bool { return w != 1 })
	s.sd = 2 * s.w
	if !s.unit {
		s.sd++
	}
	s.nd = mem.getU64(lv.m * s.sd)
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

// release gives the counts and records of s, made by newKStateMem, back
// to mem; s is not used after.
func (s *kstate) release(mem *levelMem) {
	mem.putI32(s.cnt)
	mem.putU64(s.nd)
	s.cnt, s.nd = nil, nil
}

// serving turns s into the state of the same placement of the vertices
// with the nets served by owner, under the memory bound theta and
// without a gain cache, and returns it: the counts and masks of a
// placement do not depend on who serves the nets, so a phase that
// follows the parameter assignment takes them over instead of counting
// every pin anew.
func (s *kstate) serving(owner []int32, theta int64) *kstate {
	s.owner, s.theta = owner, theta
	s.floating = !slices.ContainsFunc(owner, func(o int32) bool { return o >= 0 })
	s.gc, s.keepCache = nil, false
	return s
}

// minCountPins is the fewest pins per goroutine that newKState counts.
const minCountPins = 1 << 16

// countNets fills the counts and records of nets lo..hi−1 from their pins
// and adds their memory to mem.
func (s *kstate) countNets(lo, hi int, mem []int64) {
	lv, k, sw, sd, part := s.lv, s.k, s.w, s.sd, s.part
	for e := lo; e < hi; e++ {
		row := s.cnt[e*k : e*k+k]
		rec := s.nd[e*sd : e*sd+sd]
		if sw == 1 {
			// k ≤ 64: the mask of blocks with a pin built in a register.
			var m uint64
			for _, x := range lv.pins(e) {
				b := int(part[x])
				row[b]++
				m |= 1 << (b & 63)
			}
			rec[0] |= m
		} else {
			for _, x := range lv.pins(e) {
				b := int(part[x])
				row[b]++
				rec[b>>6] |= 1 << (b & 63)
			}
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

// shift counts one pin of net e less in block a and one more in block b,
// as remove(e, a) and then add(e, b) do, in one call, and returns the
// counts of a and b after.
func (s *kstate) shift(e, a, b int) (ca, cb int32) {
	k, sw := s.k, s.w
	row := s.cnt[e*k : e*k+k : e*k+k]
	rec := s.nd[e*s.sd : e*s.sd+2*sw : e*s.sd+2*sw]
	w := s.lv.nw[e]
	row[a]--
	at, bit := a>>6, uint64(1)<<(a&63)
	switch row[a] {
	case 0:
		rec[at] &^= bit
		rec[sw+at] &^= bit
		s.mem[a] -= w
	case 1:
		rec[sw+at] |= bit
	}
	row[b]++
	at, bit = b>>6, uint64(1)<<(b&63)
	switch row[b] {
	case 1:
		rec[at] |= bit
		rec[sw+at] |= bit
		s.mem[b] += w
	case 2:
		rec[sw+at] &^= bit
	}
	return row[a], row[b]
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
	lv := s.lv
	a := int(s.part[u])
	gc := s.gc
	if a == b {
		gc = nil
	}
	var leave int64
	for _, e := range lv.nets(u) {
		e := int(e)
		ca, cb := s.shift(e, a, b)
		if gc != nil {
			if ca < 2 || cb < 3 { // else updateCache changes nothing
				s.updateCache(u, e, a, b)
			}
			if cb == 1 && (s.floating || int(s.owner[e]) != b) {
				leave += lv.nw[e]
			}
		}
		// Only two transitions raise other pins' gains: the last pin
		// left in a may now leave it free, and b is now a free target
		// for the rest. Lowered gains are found when popped.
		if changed != nil && (ca == 1 || cb == 1) {
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
