package partition

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"

	"colo/graph"
	"colo/placement"
)

// bisectWindow is the share of a subset's samples by which a bisection
// may move its cut away from the proportional position, looking for the
// position where the fewest parameters are needed on both sides (the
// capacity bound still applies).
const bisectWindow = 0.02

// The bounds of evictNets: the pins one eviction moves, the passes, and
// the work of a pass (pins visited) as a multiple of the edges.
const (
	evictMax    = 256
	evictPasses = 4
	evictWork   = 2
)

// bisectPasses bounds the FM passes of each bisection.
const bisectPasses = 8

// Bisect places g on opt.K machines by recursive bisection. A subset of
// samples that is to fill machines [lo, hi) is split in two, and each
// side fills its half of the machines. Two bisections are made and the
// one of lower connectivity (parameters needed on both sides) kept:
//
//   - flat: the samples in rarity order computed within the subset (each
//     sample's parameters ranked by how few samples of the subset use
//     them, compared lexicographically, as Lex does for the whole graph),
//     cut where the fewest parameters are needed on both sides within
//     bisectWindow of the proportional position;
//   - multilevel: samples that share parameters clustered level by level
//     down to about 200 vertices, the coarsest level cut the same way (in
//     rarity order or breadth-first order, the better), then two-way FM
//     on every level on the way back.
//
// Both are then improved by evictNets, which moves all of a parameter's
// samples on one side to the other, and by two-way FM. The sides hold at
// most their machines times ⌊(1+ε)·n/k⌋ samples (ε is
// opt.Refine.Epsilon, default DefaultRefineEpsilon), so every machine
// ends within the bound Refine keeps. Samples that need no parameter are
// left out of the bisections, which gives the others all of that room,
// and fill the machines with room at the end. Then the parameters, by
// opt.ParamAlgo.
//
// On data whose parameters are few and each used by many samples (a9a,
// w8a), ranking rarity within each half finds the parameters that split
// it, which one global order (Lex) cannot: the parameters a half no
// longer shares with the other are no longer rare in it. It takes
// O(|E| log |E|) per level of the recursion, ⌈log₂ k⌉ levels, and reports
// nothing.
func Bisect(g *graph.Graph, opt Options) (*placement.Placement, error) {
	n, k := g.NumSamples(), opt.K
	if err := opt.Validate(n); err != nil {
		return nil, err
	}
	eps := opt.Refine.Epsilon
	if eps == 0 {
		eps = DefaultRefineEpsilon
	}
	capacity := max(int64(math.Floor((1+eps)*float64(n)/float64(k))), (int64(n)+int64(k)-1)/int64(k))
	p := placement.New(k, n, g.NumParams())
	b := &bisector{lv: finest(g), data: p.Data, capacity: capacity,
		rng: placement.NewRand(opt.Seed ^ 0x626973656374), local: make([]int32, g.NumParams())}
	for v := range b.local {
		b.local[v] = -1
	}
	// Samples without parameters cost nothing anywhere: they are left
	// out of the bisections, which gives the others all the room of the
	// size bound, and fill the machines with room at the end.
	var real, empty []int32
	for u := 0; u < n; u++ {
		if g.SampleDegree(u) == 0 {
			empty = append(empty, int32(u))
		} else {
			real = append(real, int32(u))
		}
	}
	b.split(real, 0, k)
	fill(p.Data, k, empty, capacity)
	if _, err := AssignParamsWith(g, p, opt.ParamAlgo, opt.Seed); err != nil {
		return nil, err
	}
	return p, nil
}

// bisector holds what the recursion of Bisect shares.
type bisector struct {
	lv       *level
	data     []int32
	capacity int64 // samples per machine
	rng      *rand.Rand
	// local numbers the parameters of the current subset 0, 1, …; −1
	// outside it. It is reset after each use.
	local []int32
}

// split places the samples of set on machines [lo, hi).
func (b *bisector) split(set []int32, lo, hi int) {
	if hi-lo == 1 {
		for _, u := range set {
			b.data[u] = int32(lo)
		}
		return
	}
	mid := lo + (hi-lo)/2
	sub, params := b.induce(set)
	floating := floatingNets(sub.m)
	bounds := []int64{int64(mid-lo) * b.capacity, int64(hi-mid) * b.capacity}
	var part []int32
	var best int64
	keep := func(try []int32) {
		evictNets(sub, try, bounds)
		s := newKState(sub, 2, try, floating, bounds, 0)
		s.fm(b.rng, bisectPasses)
		if v := s.volume(); part == nil || v < best {
			part, best = try, v
		}
	}
	keep(b.initial(sub, rarityOrder(sub, nil), mid-lo, hi-mid))
	keep(b.multilevel(sub, mid-lo, hi-mid, bounds))
	for _, v := range params {
		b.local[v] = -1
	}
	var l, r []int32
	for u, i := range part {
		if i == 0 {
			l = append(l, set[u])
		} else {
			r = append(r, set[u])
		}
	}
	b.split(l, lo, mid)
	b.split(r, mid, hi)
}

// induce returns the subgraph of the samples of set as a level (sample x
// of it is set[x], its nets the parameters those samples use, numbered in
// b.local) and the parameters, whose local numbers the caller resets.
func (b *bisector) induce(set []int32) (*level, []uint32) {
	lv := b.lv
	var params []uint32
	var edges int64
	for _, u := range set {
		for _, v := range lv.nets(int(u)) {
			if b.local[v] < 0 {
				b.local[v] = int32(len(params))
				params = append(params, v)
			}
		}
		edges += lv.voff[u+1] - lv.voff[u]
	}
	sub := &level{n: len(set), m: len(params), vw: make([]int64, len(set)), nw: make([]int64, len(params)),
		voff: make([]int64, len(set)+1), vadj: make([]uint32, 0, edges), noff: make([]int64, len(params)+1)}
	for x, u := range set {
		sub.vw[x] = lv.vw[u]
		for _, v := range lv.nets(int(u)) {
			sub.vadj = append(sub.vadj, uint32(b.local[v]))
			sub.noff[b.local[v]+1]++
		}
		sub.voff[x+1] = int64(len(sub.vadj))
	}
	for e, v := range params {
		sub.nw[e] = lv.nw[v]
		sub.noff[e+1] += sub.noff[e]
	}
	sub.nadj = make([]uint32, edges)
	fill := slices.Clone(sub.noff[:len(params)])
	for x := range set {
		for _, e := range sub.nets(x) {
			sub.nadj[fill[e]] = uint32(x)
			fill[e]++
		}
	}
	return sub, params
}

// cut returns how many of the first samples of order go left, for l
// machines left and r right: the position whose weight is within
// bisectWindow of the total around the proportional one, and within the
// capacity of both sides, where the fewest nets have pins on both sides
// (ties to the proportional weight).
func (b *bisector) cut(sub *level, order []int32, l, r int) int {
	n := len(order)
	var total int64
	for _, u := range order {
		total += sub.vw[u]
	}
	prop := total * int64(l) / int64(l+r)
	w := int64(bisectWindow * float64(total))
	lo := max(prop-w, total-int64(r)*b.capacity)
	hi := min(prop+w, int64(l)*b.capacity)
	left := make([]int32, sub.m)
	shared, best, bestAt, bestOff := 0, math.MaxInt, -1, int64(0)
	var wt int64
	for x := 0; x <= n; x++ {
		if wt >= lo && wt <= hi {
			off := wt - prop
			if off < 0 {
				off = -off
			}
			if bestAt < 0 || shared < best || shared == best && off < bestOff {
				best, bestAt, bestOff = shared, x, off
			}
		}
		if x == n || wt > hi {
			break
		}
		u := order[x]
		wt += sub.vw[u]
		for _, e := range sub.nets(int(u)) {
			left[e]++
			size := int32(sub.noff[e+1] - sub.noff[e])
			if left[e] == 1 && size > 1 {
				shared++
			}
			if left[e] == size && size > 1 {
				shared--
			}
		}
	}
	if bestAt < 0 {
		// No position fits (coarse weights can jump over the window):
		// the last one within the left capacity.
		wt, bestAt = 0, 0
		for x, u := range order {
			if wt+sub.vw[u] > int64(l)*b.capacity {
				break
			}
			wt += sub.vw[u]
			bestAt = x + 1
		}
	}
	return bestAt
}

// evictNets improves a two-way partition of lv by moving, for a net with
// pins on both sides, all of its pins on one side to the other, when that
// lowers the connectivity and fits the size bounds. Single-vertex moves
// cannot find these: while more than one pin of a net remains on a side,
// moving one of them gains nothing, and FM does not rate such vertices.
// Each pass tries the nets from the fewest pins on a side up, to evictMax
// pins and within evictWork·|E| pins visited; passes repeat while they
// gain, up to evictPasses. It returns the connectivity gained.
func evictNets(lv *level, part []int32, bounds []int64) int64 {
	cnt := [2][]int64{make([]int64, lv.m), make([]int64, lv.m)}
	var size [2]int64
	for u := 0; u < lv.n; u++ {
		a := part[u]
		size[a] += lv.vw[u]
		for _, e := range lv.nets(u) {
			cnt[a][e]++
		}
	}
	d := make([]int64, lv.m)
	var touched []uint32
	var moving []uint32
	var total int64
	order := make([]int32, lv.m)
	for pass := 0; pass < evictPasses; pass++ {
		for e := range order {
			order[e] = int32(e)
		}
		small := func(e int32) int64 { return min(cnt[0][e], cnt[1][e]) }
		slices.SortStableFunc(order, func(x, y int32) int { return cmp.Compare(small(x), small(y)) })
		var gained int64
		work := int64(0)
		for _, e := range order {
			if work > evictWork*int64(len(lv.vadj)) {
				break
			}
			if cnt[0][e] == 0 || cnt[1][e] == 0 {
				continue
			}
			if small(e) > evictMax {
				break // sorted: the rest are larger
			}
			for a := int32(0); a < 2; a++ {
				if cnt[a][e] == 0 || cnt[1-a][e] == 0 {
					break
				}
				moving = moving[:0]
				var w int64
				work += lv.noff[e+1] - lv.noff[e]
				for _, u := range lv.pins(int(e)) {
					if part[u] == a {
						moving = append(moving, u)
						w += lv.vw[u]
					}
				}
				if size[1-a]+w > bounds[1-a] {
					continue
				}
				touched = touched[:0]
				for _, u := range moving {
					work += lv.voff[u+1] - lv.voff[u]
					for _, f := range lv.nets(int(u)) {
						if d[f] == 0 {
							touched = append(touched, f)
						}
						d[f]++
					}
				}
				var gain int64
				for _, f := range touched {
					before := cnt[a][f] > 0 && cnt[1-a][f] > 0
					after := cnt[a][f]-d[f] > 0
					if before && !after {
						gain += lv.nw[f]
					} else if !before && after {
						gain -= lv.nw[f]
					}
				}
				if gain > 0 {
					for _, f := range touched {
						cnt[a][f] -= d[f]
						cnt[1-a][f] += d[f]
					}
					for _, u := range moving {
						part[u] = 1 - a
					}
					size[a] -= w
					size[1-a] += w
					gained += gain
				}
				for _, f := range touched {
					d[f] = 0
				}
			}
		}
		total += gained
		if gained == 0 {
			break
		}
	}
	return total
}

// growOrder returns the vertices of lv in the order a breadth-first search
// reaches them, each component in turn from its vertex of rarest net, and
// from each vertex its nets rarest first: the vertices of a group that
// shares nets with nothing else come out together.
func growOrder(lv *level) []int32 {
	order := make([]int32, 0, lv.n)
	seen := make([]bool, lv.n)
	done := make([]bool, lv.m)
	nets, rank := netRanks(lv)
	var row []uint32
	visit := func(e int32) {
		done[e] = true
		for _, u := range lv.pins(int(e)) {
			if !seen[u] {
				seen[u] = true
				order = append(order, int32(u))
			}
		}
	}
	for _, start := range nets {
		if done[start] {
			continue
		}
		head := len(order)
		visit(start)
		for ; head < len(order); head++ {
			row = append(row[:0], lv.nets(int(order[head]))...)
			slices.SortFunc(row, func(a, b uint32) int { return cmp.Compare(rank[a], rank[b]) })
			for _, e := range row {
				if !done[e] {
					visit(int32(e))
				}
			}
		}
	}
	for u := range seen {
		if !seen[u] {
			order = append(order, int32(u)) // samples without parameters
		}
	}
	return order
}

// fill places the samples of empty, which need no parameter, on the
// machines with the most room below capacity, one at a time, so that the
// sizes of data stay within it (the caller leaves room for them).
func fill(data []int32, k int, empty []int32, capacity int64) {
	size := make([]int64, k)
	for _, i := range data {
		if i >= 0 {
			size[i]++
		}
	}
	for _, u := range empty {
		i := 0
		for j := 1; j < k; j++ {
			if size[j] < size[i] {
				i = j
			}
		}
		data[u] = int32(i)
		size[i]++
	}
}

// initial cuts order for l machines left and r right (see cut).
func (b *bisector) initial(sub *level, order []int32, l, r int) []int32 {
	left := b.cut(sub, order, l, r)
	part := make([]int32, sub.n)
	for x, u := range order {
		if x >= left {
			part[u] = 1
		}
	}
	return part
}

// multilevel bisects sub by coarsening it, clustering samples that share
// parameters, cutting the coarsest level and refining with FM on every
// level on the way back.
func (b *bisector) multilevel(sub *level, l, r int, bounds []int64) []int32 {
	levels := []*level{sub}
	var total int64
	for _, w := range sub.vw {
		total += w
	}
	const limit = 200
	for {
		cur := levels[len(levels)-1]
		if cur.n <= limit {
			break
		}
		cid, nc := cluster(cur, nil, max(1, 2*total/limit), false, true, b.rng)
		if float64(nc) > 0.9*float64(cur.n) {
			break
		}
		levels = append(levels, contract(cur, cid, nc, nil, 0))
	}
	top := levels[len(levels)-1]
	var part []int32
	var best int64
	for _, order := range [][]int32{rarityOrder(top, nil), growOrder(top)} {
		try := b.initial(top, order, l, r)
		floating := floatingNets(top.m)
		s := newKState(top, 2, try, floating, bounds, 0)
		s.fm(b.rng, bisectPasses)
		if v := s.volume(); part == nil || v < best {
			part, best = try, v
		}
	}
	for x := len(levels) - 2; x >= 0; x-- {
		cur := levels[x]
		fine := make([]int32, cur.n)
		for u, c := range cur.vmap {
			fine[u] = part[c]
		}
		part = fine
		floating := floatingNets(cur.m)
		newKState(cur, 2, part, floating, bounds, 0).fm(b.rng, bisectPasses)
	}
	return part
}
