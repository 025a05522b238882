package partition

import (
	"math"
	"math/bits"
	"runtime"
	"sync"
)

// gainCache keeps, during the FM passes of a level, what bestMove reads
// of a vertex's nets, so that a rating costs O(k) instead of a pass over
// the vertex's nets (as the gain caches of KaHyPar do). Vertex u has a
// row of k+cacheHead values, rows[u·stride:]:
//
//   - cacheLeave: the weight of the nets u alone needs in its block and
//     that the block does not serve;
//   - cacheAll: the weight of u's nets;
//   - cacheWide: the weight of u's nets in more than k/2 blocks, with
//     which bestMove rates every block, not only those u's nets touch;
//   - then per block b, the weight of u's nets present in b or served by
//     it. The gain of a move of u to b is leave − all + that: what u
//     leaves behind minus the nets absent from b and not served by it.
//
// A move changes other vertices' rows only where a net's pin count in a
// block crosses 0↔1 (the entry of the block and the wide weight of its
// pins) or 1↔2 (the leave of the one pin left alone or joined);
// kstate.move applies those changes. The values are sums of net weights,
// kept in 32 bits: the cache is used on levels whose nets weigh less
// than 2³¹ in all.
type gainCache struct {
	rows   []int32
	stride int
	tie    []uint64 // scratch: the blocks tied for a rating, w words
}

// The head of a vertex's row in the gain cache.
const (
	cacheLeave = iota
	cacheAll
	cacheWide
	cacheHead
)

// maxCacheEntries bounds n·k of the levels whose FM passes keep a gain
// cache (4 bytes an entry).
const maxCacheEntries = 1 << 24

// cacheMode forces the gain cache on (+1) or off (−1); 0 keeps one where
// it pays and fits: k > 2 (with two blocks a rating reads one word per
// net, and keeping the cache costs more than it saves: Bisect on w8a at
// k = 16 took 0.65 s with it, 0.63 s without) and n·k ≤ maxCacheEntries.
type cacheMode int8

// wantCache reports whether the FM passes of s keep a gain cache.
func (s *kstate) wantCache() bool {
	var total int64
	for _, w := range s.lv.nw {
		total += w
	}
	if total > math.MaxInt32 {
		return false
	}
	switch s.cacheMode {
	case 1:
		return true
	case -1:
		return false
	}
	return s.k > 2 && int64(s.lv.n)*int64(s.k) <= maxCacheEntries
}

// buildCache fills s.gc from the counts: each vertex is rated once by
// rate or rate1, whose ratings are the entries of its row less the weight
// of its nets in more than k/2 blocks (by cacheRow1Unit for nets of
// weight 1 that float and k ≤ 64); on several goroutines for large
// levels, each vertex writing its own row.
func (s *kstate) buildCache() {
	lv, k := s.lv, s.k
	n := lv.n
	stride := k + cacheHead
	c := &gainCache{rows: make([]int32, n*stride), stride: stride, tie: make([]uint64, s.w)}
	workers := max(1, min(runtime.GOMAXPROCS(0), len(lv.vadj)/minRatePins))
	// wideOf[m]: whether a net of k ≤ 8 blocks with the mask m is in
	// more than k/2 of them (a load instead of a popcount per pin).
	var wideOf [256]uint8
	for m := range wideOf {
		if 2*bits.OnesCount8(uint8(m)) > k {
			wideOf[m] = 1
		}
	}
	var wg sync.WaitGroup
	for t := range workers {
		lo, hi := n*t/workers, n*(t+1)/workers
		wg.Go(func() {
			r := *s
			r.bc, r.bo, r.tmark = make([]int64, k), make([]int64, k), make([]bool, k)
			r.touched, r.gm, r.g1, r.gw, r.gown = nil, nil, nil, nil, nil
			r.gc = nil
			for u := lo; u < hi; u++ {
				if r.w == 1 && r.unit && r.floating {
					r.cacheRow1Unit(u, c.rows[u*stride:u*stride+stride:u*stride+stride], &wideOf)
					continue
				}
				var leave, small, all int64
				switch {
				case r.w == 1:
					leave, small, all = r.rate1(u)
				default:
					leave, small, all = r.rate(u)
				}
				row := c.rows[u*stride : u*stride+stride : u*stride+stride]
				row[cacheLeave], row[cacheAll], row[cacheWide] = int32(leave), int32(all), int32(all-small)
				p := row[cacheHead:]
				for b := range p {
					p[b] = int32(r.bc[b] + r.bo[b] + all - small)
				}
				p[r.part[u]] = int32(all) // rate skips the nets needed by u's block alone
				clear(r.bc)
				clear(r.bo)
			}
		})
	}
	wg.Wait()
	s.gc = c
}

// cacheRow1Unit fills the row of vertex u for k ≤ 64 and nets of weight
// 1 that float: the masks of its nets are added 8 blocks per word into
// byte-wide lanes (as rate1Unit does), flushed every 255 nets; wideOf is
// buildCache's table of the wide masks for k ≤ 8.
func (s *kstate) cacheRow1Unit(u int, row []int32, wideOf *[256]uint8) {
	k := s.k
	a := uint(s.part[u]) & 63 // < k: the shifts need no check of their count
	nets := s.lv.nets(u)
	nd := s.nd
	nb := (k + 7) / 8
	p := row[cacheHead:]
	var leave, wide int64
	if nb == 1 {
		// k ≤ 8: one lane word, its bytes the blocks; the nets with a
		// single pin in each block counted in lanes too (u's block's
		// count is what it leaves), and whether a net is wide read from
		// wideOf.
		for start := 0; start < len(nets); start += 255 {
			lanes, singles, w := laneSums8(nets[start:min(len(nets), start+255)], nd, wideOf[:])
			leave += int64(singles >> (8 * a) & 0xff)
			wide += w
			for b := range p {
				p[b] += int32(lanes >> (8 * (b & 7)) & 0xff)
			}
		}
		row[cacheLeave], row[cacheAll], row[cacheWide] = int32(leave), int32(len(nets)), int32(wide)
		return
	}
	for start := 0; start < len(nets); start += 255 {
		var lanes [8]uint64
		for _, e := range nets[start:min(len(nets), start+255)] {
			r := nd[int(e)*2 : int(e)*2+2 : int(e)*2+2]
			m := r[0]
			leave += int64(r[1] >> a & 1)
			wide += int64(uint64(k-2*bits.OnesCount64(m)) >> 63)
			for j := range nb {
				lanes[j&7] += byteLanes[byte(m>>(8*j))]
			}
		}
		for b := range p {
			p[b] += int32(lanes[b>>3&7] >> (8 * (b & 7)) & 0xff)
		}
	}
	row[cacheLeave], row[cacheAll], row[cacheWide] = int32(leave), int32(len(nets)), int32(wide)
}

// laneSums8 adds up, for at most 255 nets of k ≤ 8 blocks with unit
// records in nd, the masks of their blocks and the masks of the blocks
// where they have a single pin into byte-wide lanes, and counts those
// wideOf marks wide: cacheRow1Unit's inner loop, a function of its own
// so that its sums stay in registers, and not inlined: inlined, they
// went to the stack at every net (cacheRow1Unit 0.82 → 0.50 billion
// instructions on 20 Newsgroups at k = 8 with the call).
//
//go:noinline
func laneSums8(nets []uint32, nd []uint64, wideOf []uint8) (lanes, singles uint64, wide int64) {
	wideOf = wideOf[:256] // a byte indexes it without a check
	for _, e := range nets {
		r := nd[int(e)*2 : int(e)*2+2 : int(e)*2+2]
		m := byte(r[0])
		singles += byteLanes[byte(r[1])]
		wide += int64(wideOf[m])
		lanes += byteLanes[m]
	}
	return lanes, singles, wide
}

// cachedLeave returns what vertex u leaves behind, from the cache.
func (s *kstate) cachedLeave(u int) int64 {
	return int64(s.gc.rows[u*s.gc.stride+cacheLeave])
}

// updateCache applies to s.gc the move of vertex u from block a to b
// through net e, whose counts have been updated (u's block not yet).
func (s *kstate) updateCache(u, e, a, b int) {
	k := s.k
	ca, cb := s.cnt[e*k+a], s.cnt[e*k+b]
	if ca >= 2 && cb >= 3 {
		return
	}
	rows, stride := s.gc.rows, s.gc.stride
	o := -1
	if !s.floating {
		o = int(s.owner[e])
	}
	w := int32(s.lv.nw[e])
	goneA := ca == 0 && o != a // a no longer present
	newB := cb == 1 && o != b  // b now present
	var dw int32               // change of the wide weight
	if ca == 0 || cb == 1 {
		l := s.lambda(e)
		lb := l
		if ca == 0 {
			lb++
		}
		if cb == 1 {
			lb--
		}
		if wa, wb := 2*l > k, 2*lb > k; wa != wb {
			dw = w
			if wb {
				dw = -w
			}
		}
	}
	aloneA := ca == 1 && o != a // the pin left in a now leaves e behind
	joinB := cb == 2 && o != b  // the pin alone in b no longer does
	pins := s.lv.pins(e)
	if goneA {
		for _, x := range pins {
			rows[int(x)*stride+cacheHead+a] -= w
		}
	}
	if newB {
		for _, x := range pins {
			rows[int(x)*stride+cacheHead+b] += w
		}
	}
	if dw != 0 {
		for _, x := range pins {
			rows[int(x)*stride+cacheWide] += dw
		}
	}
	if !aloneA && !joinB {
		return
	}
	// The pin alone in a, the one that was alone in b.
	left := 0
	if aloneA {
		left++
	}
	if joinB {
		left++
	}
	for _, x := range pins {
		x := int(x)
		if x == u {
			continue
		}
		switch int(s.part[x]) {
		case a:
			if aloneA {
				rows[x*stride+cacheLeave] += w
				if left--; left == 0 {
					return
				}
			}
		case b:
			if joinB {
				rows[x*stride+cacheLeave] -= w
				if left--; left == 0 {
					return
				}
			}
		}
	}
}

// cachedMove is bestMove from the gain cache: the same block and gain,
// ties broken in the order in which rate lists the blocks (see
// firstTouched). The free move's gain is bestMove's too, and so is its
// block when it is used: when no move fits (−1) or the free one gains
// more than the best that fits; otherwise it may be another block of
// equal gain.
func (s *kstate) cachedMove(u int) (int, int64) {
	c, k := s.gc, s.k
	a := int(s.part[u])
	row := c.rows[u*c.stride : u*c.stride+c.stride : u*c.stride+c.stride]
	leave, all := int64(row[cacheLeave]), int64(row[cacheAll])
	base := leave - all
	wide := row[cacheWide] > 0
	vw := s.lv.vw[u]
	size, hi := s.size[:k:k], s.hi[:k:k]
	// Moves within θ whatever they gain, without calling fits.
	roomy := s.theta == 0
	p := row[cacheHead:]
	// The largest gain over the blocks rated (those u's nets touch, or
	// all when u has a wide net), and how many reach it; likewise over
	// those with room, then the smallest size among the latter.
	const none = math.MinInt64
	freeTo, freeGain, nFree := -1, int64(none), 0
	best, bg, bsize, nBest := -1, int64(none), int64(0), 0
	for b, pb := range p {
		if b == a || (pb == 0 && !wide) {
			continue
		}
		g := base + int64(pb)
		if g > freeGain {
			freeTo, freeGain, nFree = b, g, 0
		}
		if g == freeGain {
			nFree++
		}
		if sz := size[b]; sz+vw <= hi[b] && g >= bg && (roomy || s.fits(u, b, all, leave-g)) {
			if g > bg || sz < bsize {
				best, bg, bsize, nBest = b, g, sz, 0
			}
			if sz == bsize {
				nBest++
			}
		}
	}
	if nFree == 0 {
		freeGain = 0
	}
	if nBest == 0 {
		bg = 0
	}
	if nFree > 1 && (nBest == 0 || freeGain > bg) {
		tie := c.tie
		clear(tie)
		for b, pb := range p {
			if b != a && (pb != 0 || wide) && base+int64(pb) == freeGain {
				tie[b>>6] |= 1 << (b & 63)
			}
		}
		freeTo = s.firstTouched(u, tie)
	}
	if nBest > 1 {
		tie := c.tie
		clear(tie)
		for b, pb := range p {
			if b != a && (pb != 0 || wide) && base+int64(pb) == bg && size[b] == bsize &&
				size[b]+vw <= hi[b] && (roomy || s.fits(u, b, all, leave-bg)) {
				tie[b>>6] |= 1 << (b & 63)
			}
		}
		best = s.firstTouched(u, tie)
	}
	s.freeTo, s.freeGain = freeTo, freeGain
	return best, bg
}

// firstTouched returns the block of the set tie that rate lists first:
// rate lists the blocks of u's nets in λ ≤ k/2 blocks, net by net in the
// order of u's nets, each net's blocks in increasing order and then its
// server, and after them, when u has a net in more blocks, the other
// blocks in increasing order.
func (s *kstate) firstTouched(u int, tie []uint64) int {
	k, sw, sd := s.k, s.w, s.sd
	if sw == 1 && s.floating {
		// k ≤ 64 and no servers: a net's blocks are one word.
		t, nd := tie[0], s.nd
		for _, e := range s.lv.nets(u) {
			m := nd[int(e)*sd]
			if 2*bits.OnesCount64(m) > k {
				continue
			}
			if z := m & t; z != 0 {
				return bits.TrailingZeros64(z)
			}
		}
		if t != 0 {
			return bits.TrailingZeros64(t)
		}
		return -1
	}
	for _, e := range s.lv.nets(u) {
		rec := s.nd[int(e)*sd : int(e)*sd+sw : int(e)*sd+sw]
		lambda := 0
		for _, x := range rec {
			lambda += bits.OnesCount64(x)
		}
		if 2*lambda > k {
			continue
		}
		for x, m := range rec {
			if z := m & tie[x]; z != 0 {
				return x<<6 | bits.TrailingZeros64(z)
			}
		}
		if !s.floating {
			if o := int(s.owner[e]); o >= 0 && rec[o>>6]>>(o&63)&1 == 0 && tie[o>>6]>>(o&63)&1 != 0 {
				return o
			}
		}
	}
	for x, z := range tie {
		if z != 0 {
			return x<<6 | bits.TrailingZeros64(z)
		}
	}
	return -1
}
