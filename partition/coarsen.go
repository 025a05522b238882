package partition

import (
	"math"
	"math/rand/v2"
	"slices"
)

// maxRateNet is the largest net through which coarsening looks for
// partners: a net with more pins says little about which two belong
// together.
const maxRateNet = 100

// A rated net's pins are counted in bytes (pinsByBlock).
const _ = uint8(maxRateNet)

// cluster groups the vertices of lv for contraction. Vertices are visited
// in a random order; a vertex still alone joins the cluster of the
// neighbour it shares most with, rated Σ_e w_e / (|e| − 1) over the shared
// nets (the heavy-edge rating of hypergraph coarsening), provided the
// cluster stays within maxW and, when part is set, the neighbour sits in
// the same block. With matching, clusters are pairs: a vertex only joins a
// neighbour that is still alone. With byRarity, the vertices still alone
// then pair along rarityOrder. It returns the cluster of each vertex,
// numbered 0..nc−1, and nc.
func cluster(lv *level, part []int32, maxW int64, matching, byRarity bool, rng *rand.Rand) ([]int32, int) {
	return clusterIn(lv, part, maxW, matching, byRarity, rng.Perm(lv.n))
}

// clusterIn is cluster visiting the vertices in the given order, a
// permutation of 0..lv.n−1; it draws nothing at random.
func clusterIn(lv *level, part []int32, maxW int64, matching, byRarity bool, order []int) ([]int32, int) {
	return clusterScan(lv, part, maxW, matching, byRarity, order, true)
}

// clusterScan is clusterIn; with grouped and part, each vertex scans only
// the pins of its own block in each net (pinsByBlock), otherwise every
// pin, skipping the other blocks'. Both give the same clusters: the pins
// of a block keep their order, and with it the order in which ratings
// add up (TestClusterGrouped).
func clusterScan(lv *level, part []int32, maxW int64, matching, byRarity bool, order []int, grouped bool) ([]int32, int) {
	return clusterScanMem(lv, part, maxW, matching, byRarity, order, grouped, nil)
}

// clusterScanMem is clusterScan with its memory taken from mem (see
// levelMem), the clusters it returns included; it gives back the rest.
func clusterScanMem(lv *level, part []int32, maxW int64, matching, byRarity bool, order []int, grouped bool, mem *levelMem) ([]int32, int) {
	n := lv.n
	cid := mem.grabI32(n)
	for u := range cid {
		cid[u] = int32(u)
	}
	cw := mem.grabI64(n)
	copy(cw, lv.vw)
	alone := mem.grabBools(n)
	for u := range alone {
		alone[u] = true
	}
	// rating[c] is the rating of cluster c while u is scanned (0 for
	// those not rated), −1 once c is paired when matching.
	rating := mem.getF64(n)
	// rate[e] is what net e adds to the rating of each of its pins, 0 for
	// the nets not rated through.
	rate := mem.grabF64(lv.m)
	for e := range rate {
		rate[e] = 0
		if d := lv.noff[e+1] - lv.noff[e]; d >= 2 && d <= maxRateNet {
			rate[e] = float64(lv.nw[e]) / float64(d-1)
		}
	}
	// tag[x] is the block of x (0 without part), or −1 when matching and
	// x is paired already: the pins of another tag than u's are skipped.
	tag := mem.getI32(n)
	if part != nil {
		copy(tag, part)
	}
	// With part, the pins of each rated net grouped by block (in their
	// order within a block), so that u scans only its own block's: the
	// others would all be skipped, 1 − 1/k of a net's pins.
	grouped = grouped && part != nil
	pins := lv.nadj
	var at []uint8 // with grouped, the blocks' offsets in each rated net
	nb1 := 0
	// With grouped (up to scanBlocks blocks), what the scan reads of a
	// net in one record: the rating, where its pins start and its
	// blocks' offsets, one cache line instead of three arrays.
	var nets []scanNet
	if grouped {
		if nb := numBlocks(part); nb <= scanBlocks && len(pins) <= math.MaxUint32 {
			pins, nets = scanRecordsMem(lv, part, nb, rate, mem)
		} else {
			pins, at, nb1 = pinsByBlock(lv, part, rate)
		}
	}
	var touched []int32
	var sel []uint32 // with nets: the list of nets of rateAlone and rateClusters
	if nets != nil {
		touched = mem.grabI32(n)[:0]
		most := 0
		for u := range n {
			most = max(most, int(lv.voff[u+1]-lv.voff[u]))
		}
		sel = mem.grabU32(most)
	}
	for _, u := range order {
		if !alone[u] { // u joined a cluster, or others joined it
			continue
		}
		touched = touched[:0]
		pu := tag[u]
		if nets != nil {
			// As the grouped scan below, from the records.
			if cap(touched) < n {
				touched = make([]int32, 0, n)
			}
			// Each cluster is listed once (its rating is then positive),
			// so touched[:n] holds them all.
			var nt int
			if matching {
				nt = rateAlone(u, int(pu), lv.nets(u), nets, pins, rating, touched[:n], sel)
			} else {
				nt = rateClusters(u, int(pu), lv.nets(u), nets, pins, cid, rating, touched[:n], sel)
			}
			touched = touched[:nt]
		} else {
			for _, e := range lv.nets(u) {
				r := rate[e]
				if r == 0 {
					continue
				}
				ps := pins[lv.noff[e]:lv.noff[e+1]]
				if grouped {
					// u's block's pins only (pu is −1 once u is paired, and
					// u is then not visited).
					o := int(e)*nb1 + int(pu)
					ps = ps[at[o]:at[o+1]]
					if !matching {
						// Every pin here is in u's block and none is
						// skipped but u: tag need not be read.
						for _, x := range ps {
							if int(x) == u {
								continue
							}
							c := cid[x]
							if rating[c] == 0 {
								touched = append(touched, c)
							}
							rating[c] += r
						}
						continue
					}
					// Matching: the pins paired already are skipped, and
					// alone (a byte a vertex, a quarter of tag) says which.
					for _, x := range ps {
						if int(x) == u || !alone[x] {
							continue
						}
						c := int32(x)
						if rating[c] == 0 {
							touched = append(touched, c)
						}
						rating[c] += r
					}
					continue
				}
				for _, x := range ps {
					// Skip the pins that could not be chosen below: those in
					// another block and, when matching, those paired already
					// (a vertex still alone is its own cluster). The others'
					// ratings add up in the same order.
					if int(x) == u || tag[x] != pu {
						continue
					}
					c := int32(x)
					if !matching {
						c = cid[x]
					}
					if rating[c] == 0 {
						touched = append(touched, c)
					}
					rating[c] += r
				}
			}
		}
		best := bestRated(touched, rating, cw, maxW-lv.vw[u])
		if best < 0 {
			continue
		}
		cid[u] = best
		cw[best] += lv.vw[u]
		alone[u] = false
		alone[best] = false
		if matching {
			tag[u], tag[best] = -1, -1
			// Paired for good: rateAlone skips them by their rating.
			rating[u], rating[best] = -1, -1
		}
	}
	// Vertices left alone, whose nets are all too large to rate through,
	// pair with their successor in rarity order (see rarityOrder): the
	// two share their rarest parameters as far as any two do.
	// (Within a block when part is set: the previous alone vertex of the
	// same block.)
	prev := make([]int32, numBlocks(part))
	for b := range prev {
		prev[b] = -1
	}
	var left []int32
	if byRarity {
		for u, a := range alone {
			if a {
				left = append(left, int32(u))
			}
		}
		if len(left) > 0 {
			left = rarityOrderMem(lv, left, mem)
		}
	}
	for _, u := range left {
		b := 0
		if part != nil {
			b = int(part[u])
		}
		if v := prev[b]; v >= 0 && cw[v]+lv.vw[u] <= maxW {
			cid[u] = v
			cw[v] += lv.vw[u]
			alone[u], alone[v] = false, false
			prev[b] = -1
			continue
		}
		prev[b] = u
	}
	// Number the clusters densely; a cluster's id is its leader's.
	id := mem.grabI32(n)
	for u := range id {
		id[u] = -1
	}
	nc := 0
	for u := 0; u < n; u++ {
		if cid[u] == int32(u) {
			id[u] = int32(nc)
			nc++
		}
	}
	for u := 0; u < n; u++ {
		cid[u] = id[cid[u]]
	}
	mem.putI32(id, tag, touched)
	mem.putU32(sel)
	mem.putI64(cw)
	mem.putBools(alone)
	mem.putF64(rating, rate)
	if nets != nil {
		mem.putU32(pins)
		mem.putNets(nets)
	}
	return cid, nc
}

// bestRated returns the cluster of touched of highest rating whose
// weight (cw) is at most room, ties to the lighter and then the first
// listed; −1 if none fits. It clears the ratings of touched. Every
// cluster of touched is in u's block (a pin of u's block, or its
// cluster's leader, and clusters stay within blocks) and, when matching,
// still alone (the pins paired already were skipped): only the weight
// bound is left to check. Not inlined, as rateAlonePins.
//
//go:noinline
func bestRated(touched []int32, rating []float64, cw []int64, room int64) int32 {
	best, br := int32(-1), 0.0
	for _, c := range touched {
		r := rating[c]
		rating[c] = 0
		if cw[c] > room {
			continue
		}
		if r > br || (r == br && best >= 0 && cw[c] < cw[best]) {
			best, br = c, r
		}
	}
	return best
}

// rateClusters is clusterScan's grouped scan of vertex u, of block b,
// from the records: the rating of each net of u (unets) is added to the
// clusters of its pins in b but u, those first rated written to touched
// in turn; it returns how many. A net whose block b holds u alone is
// skipped. The nets with pins to scan are listed first, in sel, as in
// rateAlone.
func rateClusters(u, b int, unets []uint32, nets []scanNet, pins []uint32, cid []int32, rating []float64, touched []int32, sel []uint32) int {
	ns := 0
	for _, e := range unets {
		sel[ns] = e
		if nets[e].n[b] > 1 { // 0 for a net not rated through
			ns++
		}
	}
	nt := 0
	for _, e := range sel[:ns] {
		ne := &nets[e]
		n := uint32(ne.n[b])
		lo := ne.start + uint32(ne.at[b])
		nt = rateClusterPins(u, ne.rate, pins[lo:lo+n], cid, rating, touched, nt)
	}
	return nt
}

// rateClusterPins is rateClusters' scan of one net's pins ps of u's
// block, each rated r, those first rated written to touched from nt on;
// it returns the new nt. Not inlined, as rateAlonePins.
//
//go:noinline
func rateClusterPins(u int, r float64, ps []uint32, cid []int32, rating []float64, touched []int32, nt int) int {
	rb := math.Float64bits(r)
	for _, x := range ps {
		// Without a branch on the data, as rateAlonePins: u's cluster
		// is u alone, whose rating stays 0 when +0 is added.
		c := cid[x]
		rc := rating[c]
		other := 0
		if int(x) != u {
			other = 1
		}
		first := 0
		if rc == 0 {
			first = other
		}
		touched[nt] = c
		nt += first
		rating[c] = rc + math.Float64frombits(rb&-uint64(other))
	}
	return nt
}

// rateAlone is rateClusters with matching: the pins are rated only while
// alone, and as a pin paired already stays paired, the first scan that
// meets it drops it from its block's pins in the record (those left keep
// their order): on 20 Newsgroups most pins scanned were u or paired.
// A vertex paired already has a negative rating (clusterScan marks it
// so), so that one load of rating[x] tells both whether x is alone and
// whether it is rated yet. Every pin left is written back in place, and
// the count with it, which spares the loop a branch on whether any was
// dropped. An unrated net has no pins counted in its record (n = 0).
//
// The nets with pins to scan are listed first, in sel (of at least
// len(unets)), without a branch on the data: most nets of a vertex have
// none, and which ones is not predictable.
func rateAlone(u, b int, unets []uint32, nets []scanNet, pins []uint32, rating []float64, touched []int32, sel []uint32) int {
	ns := 0
	for _, e := range unets {
		sel[ns] = e
		if nets[e].n[b] > 1 {
			ns++
		}
	}
	nt := 0
	for _, e := range sel[:ns] {
		ne := &nets[e]
		n := uint32(ne.n[b])
		lo := ne.start + uint32(ne.at[b])
		var w int
		w, nt = rateAlonePins(u, ne.rate, pins[lo:lo+n], rating, touched, nt)
		ne.n[b] = uint8(w)
	}
	return nt
}

// rateAlonePins is rateAlone's scan of one net's pins ps of u's block,
// each rated r: those alone are kept at the front of ps, those first
// rated written to touched from nt on. It returns how many are kept and
// the new nt. A function of its own, not inlined: inlined into
// rateAlone, its loop reloaded rateAlone's slices from the stack at every
// pin (on 20 Newsgroups rateAlone took 1.11 billion instructions so, 0.94
// with the call).
//
//go:noinline
func rateAlonePins(u int, r float64, ps []uint32, rating []float64, touched []int32, nt int) (w, nt1 int) {
	rb := math.Float64bits(r)
	for _, x := range ps {
		rx := rating[x]
		// Without a branch on the data: a pin is kept unless paired;
		// it is listed when alone, not u, and not yet rated; r is added
		// unless it is paired or u (adding +0 leaves the rating as it
		// is, bit for bit).
		ps[w] = x
		keep := 0
		if rx >= 0 {
			keep = 1
		}
		w += keep
		other := 0
		if int(x) != u {
			other = 1
		}
		first := 0
		if rx == 0 {
			first = other
		}
		touched[nt] = int32(x)
		nt += first
		add := rb & -uint64(keep&other)
		rating[x] = rx + math.Float64frombits(add)
	}
	return w, nt
}

// scanBlocks is the most blocks for which clusterScan reads a net's
// offsets from its scanNet record (64 bytes, a cache line).
const scanBlocks = 26

// scanNet is what clusterScan's grouped scan reads of a net: its rating
// (0: not rated through), the offset of its pins, where each block's
// pins start among them (pinsByBlock's at) and how many of those the
// scan reads: all of them, or with matching those not paired yet.
type scanNet struct {
	rate  float64
	start uint32
	at    [scanBlocks]uint8
	n     [scanBlocks]uint8
}

// numBlocks returns the number of blocks of part, its largest block
// plus one (1 when empty).
func numBlocks(part []int32) int {
	nb := 1
	for _, b := range part {
		nb = max(nb, int(b)+1)
	}
	return nb
}

// scanRecords returns the pins of the rated nets (rate[e] ≠ 0) for
// nb ≤ scanBlocks blocks, each net's grouped by block as pinsByBlock
// groups them, the nets one after the other in net order (the scan
// reads no other net's pins: on 20 Newsgroups 30% of the pins of the
// finest level), and each net's scanNet record: its rating (rate), the
// start of its pins there and, for b < nb, at[b], where block b's pins
// start within the net, and n[b], how many there are (all 0 for a net
// not rated). One pass over the rated nets instead of the sort and then
// the records. A rated net's blocks are read from part once, into a
// buffer of the net's size, for both the count and the placing; a net
// whose pins are all in one block keeps their order. O(pins + nets·nb)
// time.
func scanRecords(lv *level, part []int32, nb int, rate []float64) (pins []uint32, nets []scanNet) {
	return scanRecordsMem(lv, part, nb, rate, nil)
}

// scanRecordsMem is scanRecords with its memory taken from mem.
func scanRecordsMem(lv *level, part []int32, nb int, rate []float64, mem *levelMem) (pins []uint32, nets []scanNet) {
	np := 0
	for e, r := range rate {
		if r != 0 {
			np += int(lv.noff[e+1] - lv.noff[e])
		}
	}
	pins = mem.grabU32(np)
	nets = mem.getNets(lv.m)
	var blk [maxRateNet]uint8
	np = 0
	for e := range nets {
		ne := &nets[e]
		ne.rate = rate[e]
		if rate[e] == 0 {
			continue
		}
		ps := lv.pins(e)
		lo := np
		np += len(ps)
		ne.start = uint32(lo)
		bs := blk[:len(ps)] // a rated net has at most maxRateNet pins
		// The counts and starts in arrays of 32, indexed by a block
		// masked to 31 (every block is below scanBlocks), without a
		// bounds check.
		var cnt, pos [32]uint8
		for i, x := range ps {
			b := uint8(part[x])
			bs[i] = b
			cnt[b&31]++
		}
		if int(cnt[bs[0]&31]) == len(ps) {
			// One block: the pins in their order, at[b] = 0 for b up
			// to it and len(ps) after it.
			copy(pins[lo:np], ps)
			copy(ne.n[:], cnt[:scanBlocks])
			for b := int(bs[0]) + 1; b < nb; b++ {
				ne.at[b] = uint8(len(ps))
			}
			continue
		}
		var s uint8
		for b := range nb {
			pos[b&31] = s
			s += cnt[b&31]
		}
		copy(ne.at[:], pos[:scanBlocks])
		copy(ne.n[:], cnt[:scanBlocks])
		out := pins[lo:np]
		for i, x := range ps {
			b := bs[i] & 31
			out[pos[b]] = x
			pos[b]++
		}
	}
	return pins, nets
}

// pinsByBlock returns lv's net → vertex adjacency (laid out as lv.nadj,
// by lv.noff) with the pins of each net rated through (rate[e] ≠ 0, so of
// at most maxRateNet pins) sorted by their block in part, stably, the
// other nets' pins left as they are; and the offsets of the blocks within
// each rated net: block b of net e holds pins at[e·nb1+b] to at[e·nb1+b+1]
// of it, nb1 being the number of blocks plus one. O(pins + nets·blocks)
// time, by counting.
func pinsByBlock(lv *level, part []int32, rate []float64) (pins []uint32, at []uint8, nb1 int) {
	nb := numBlocks(part)
	nb1 = nb + 1
	pins = make([]uint32, len(lv.nadj))
	copy(pins, lv.nadj)
	at = make([]uint8, lv.m*nb1)
	for e := range lv.m {
		if rate[e] == 0 {
			continue
		}
		ps := lv.pins(e)
		off := at[e*nb1 : e*nb1+nb1]
		for _, x := range ps {
			off[part[x]+1]++
		}
		for b := range nb {
			off[b+1] += off[b]
		}
		out := pins[lv.noff[e]:lv.noff[e+1]]
		for _, x := range ps {
			out[off[part[x]]] = x
			off[part[x]]++
		}
		// off[b] now ends block b: shift back to starts.
		copy(off[1:], off[:nb])
		off[0] = 0
	}
	return pins, at, nb1
}

// contract returns the level whose vertices are the clusters cid of lv's
// vertices and whose nets are the groups ncid of lv's nets (nil: one net
// per net), and sets lv.vmap and lv.nmap. A coarse net's pins are the
// clusters holding a pin of one of its nets; nets left with fewer than two
// pins are dropped (nmap −1), as no placement of their cluster makes them
// cross.
func contract(lv *level, cid []int32, nc int, ncid []int32, nnc int) *level {
	return contractMem(lv, cid, nc, ncid, nnc, nil)
}

// contractMem is contract with the arrays of the level it returns and
// lv.nmap taken from mem (see levelMem.putLevel) and its scratch memory
// given back.
func contractMem(lv *level, cid []int32, nc int, ncid []int32, nnc int, mem *levelMem) *level {
	c := &level{n: nc, vw: mem.getI64(nc)}
	for u := 0; u < lv.n; u++ {
		c.vw[cid[u]] += lv.vw[u]
	}
	// Members of each net group, to gather their pins: without ncid,
	// net g alone (goff and gm nil).
	var goff []int64
	var gm []int32
	if ncid != nil {
		goff = make([]int64, nnc+1)
		for _, g := range ncid {
			goff[g+1]++
		}
		for g := 0; g < nnc; g++ {
			goff[g+1] += goff[g]
		}
		gm = make([]int32, lv.m)
		fill := make([]int64, nnc)
		copy(fill, goff[:nnc])
		for e, g := range ncid {
			gm[fill[g]] = int32(e)
			fill[g]++
		}
	} else {
		nnc = lv.m
	}
	stamp := mem.grabI32(nc)
	for i := range stamp {
		stamp[i] = -1
	}
	nmapG := mem.grabI32(nnc)
	// At most as many pins and nets as lv's: nadj is written in place,
	// up to len(lv.nadj) pins. voff[x+1] counts the nets of cluster x
	// as they are gathered (a dropped net's pins are taken back).
	nadj := mem.grabU32(len(lv.nadj))
	voff := mem.getI64(nc + 1)
	c.nw = mem.grabI64(nnc)[:0]
	c.noff = mem.grabI64(nnc + 1)[:1]
	c.noff[0] = 0
	np := 0
	for g := 0; g < nnc; g++ {
		start := np
		var w int64
		lo, hi := int64(g), int64(g+1)
		if gm != nil {
			lo, hi = goff[g], goff[g+1]
		}
		for i := lo; i < hi; i++ {
			e := int(i)
			if gm != nil {
				e = int(gm[i])
			}
			w += lv.nw[e]
			np += gatherPins(lv.pins(e), cid, stamp, int32(g), nadj[np:], voff[1:])
		}
		if np-start < 2 {
			for _, x := range nadj[start:np] {
				voff[x+1]--
			}
			np = start
			nmapG[g] = -1
			continue
		}
		nmapG[g] = int32(c.m)
		c.m++
		c.nw = append(c.nw, w)
		c.noff = append(c.noff, int64(np))
	}
	c.nadj = nadj[:np] // the whole of nadj goes back to mem with the level
	// Transpose.
	for u := 0; u < nc; u++ {
		voff[u+1] += voff[u]
	}
	vadj := mem.grabU32(len(c.nadj))
	pos := mem.grabI64(nc)
	copy(pos, voff[:nc])
	for e := 0; e < c.m; e++ {
		for _, x := range c.pins(e) {
			vadj[pos[x]] = uint32(e)
			pos[x]++
		}
	}
	c.voff, c.vadj = voff, vadj
	mem.putI32(stamp)
	mem.putI64(pos)
	lv.vmap = cid
	if ncid == nil {
		lv.nmap = nmapG
	} else {
		lv.nmap = make([]int32, lv.m)
		for e, g := range ncid {
			lv.nmap[e] = nmapG[g]
		}
	}
	return c
}

// gatherPins writes to out, in turn, the clusters (cid) of the pins ps
// not stamped g yet, stamps them g and counts each in count, and returns
// how many it wrote: contract's gathering of one net's pins. A function
// of its own, not inlined: inlined, its loop reloaded contract's slices
// from the stack at every pin (on 20 Newsgroups contract took 1.41
// billion instructions so, 1.16 with the call).
//
//go:noinline
func gatherPins(ps []uint32, cid, stamp []int32, g int32, out []uint32, count []int64) int {
	np := 0
	for _, x := range ps {
		// Without a branch on the data, as rateAlonePins: every
		// cluster is written, and counted only the first time.
		cx := cid[x]
		fresh := 0
		if stamp[cx] != g {
			fresh = 1
		}
		stamp[cx] = g
		out[np] = uint32(cx)
		count[cx] += int64(fresh)
		np += fresh
	}
	return np
}

// transposed returns lv with the roles of vertices and nets swapped, for
// clustering the nets by the vertices they share.
func (lv *level) transposed() *level {
	return &level{n: lv.m, m: lv.n, vw: lv.nw, nw: lv.vw, voff: lv.noff, vadj: lv.nadj, noff: lv.voff, nadj: lv.vadj}
}

// rarityOrder returns the vertices of lv (those of subset, when not nil)
// sorted by their nets, each vertex's nets listed from the smallest
// (rarest) up and compared lexicographically: vertices that share their
// rarest nets come out next to each other. Ties keep the vertex order.
func rarityOrder(lv *level, subset []int32) []int32 {
	return rarityOrderMem(lv, subset, nil)
}

// rarityOrderMem is rarityOrder with its scratch memory taken from mem
// and given back.
func rarityOrderMem(lv *level, subset []int32, mem *levelMem) []int32 {
	nets, rank := netRanksMem(lv, mem)
	mem.putI32(nets)
	order := subset
	if order == nil {
		order = make([]int32, lv.n)
		for u := range order {
			order[u] = int32(u)
		}
	}
	// The keys of the vertices of order only, vertex u's from at[u]
	// (coarsening ranks the few vertices left alone).
	at := mem.grabI64(lv.n)
	var total int64
	for _, u := range order {
		at[u] = total
		total += lv.voff[u+1] - lv.voff[u]
	}
	keys := mem.grabI32(int(total))
	row := func(u int32) []int32 { return keys[at[u] : at[u]+lv.voff[u+1]-lv.voff[u]] }
	for _, u := range order {
		r := row(u)
		for x, e := range lv.nets(int(u)) {
			r[x] = rank[e]
		}
		slices.Sort(r)
	}
	slices.SortStableFunc(order, func(a, b int32) int {
		return slices.Compare(row(a), row(b))
	})
	mem.putI32(keys, rank)
	mem.putI64(at)
	return order
}

// netRanks returns the nets of lv from the smallest (rarest) up, ties in
// net order, and the rank of each net in that order.
func netRanks(lv *level) (nets, rank []int32) {
	return netRanksMem(lv, nil)
}

// netRanksMem is netRanks with nets and rank taken from mem.
func netRanksMem(lv *level, mem *levelMem) (nets, rank []int32) {
	// A counting sort by size: stable, as the nets are taken in order.
	var most int64
	for e := 0; e < lv.m; e++ {
		most = max(most, lv.noff[e+1]-lv.noff[e])
	}
	start := make([]int32, most+2)
	for e := 0; e < lv.m; e++ {
		start[lv.noff[e+1]-lv.noff[e]+1]++
	}
	for d := int64(1); d <= most+1; d++ {
		start[d] += start[d-1]
	}
	nets = mem.grabI32(lv.m)
	for e := 0; e < lv.m; e++ {
		d := lv.noff[e+1] - lv.noff[e]
		nets[start[d]] = int32(e)
		start[d]++
	}
	rank = mem.grabI32(lv.m)
	for r, e := range nets {
		rank[e] = int32(r)
	}
	return nets, rank
}

// floatingNets returns owners for m nets that all float (−1): FM on the
// samples alone, each parameter assumed on a machine that needs it.
func floatingNets(m int) []int32 {
	owner := make([]int32, m)
	for e := range owner {
		owner[e] = -1
	}
	return owner
}
