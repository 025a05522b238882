package partition

import (
	"math/rand/v2"
	"runtime"
	"sync"
)

// The k-way refinement passes over a kstate (gain.go): fm, passes of
// k-way FM (Fiduccia–Mattheyses) with lazily corrected gains, the move of
// largest gain first and the best prefix kept; and lpPass, one round of
// label propagation, the cheap pass that MBP uses on large levels. Refine
// (kwayrefine.go), MBP (mbp.go) and Bisect (bisect.go) drive them level by
// level; the queues they use are in pqueue.go.

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
// volume, or maxPasses; it returns the volume gained. The gain cache is
// built unless s has one (kept from an earlier call with s.keepCache),
// and dropped at the end unless s.keepCache.
func (s *kstate) fm(rng *rand.Rand, maxPasses int) int64 {
	sc := newFMScratch(s.lv.n, s.k)
	if s.gc == nil && s.wantCache() {
		s.buildCache()
	}
	if !s.keepCache {
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
