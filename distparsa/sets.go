package distparsa

import (
	"errors"
	"fmt"
	"math/bits"
	"slices"
	"sync"
	"time"

	"colo/partition"
	"colo/ps/worker"
)

// Layout is the key space of a distributed run on the parameter server,
// every key Width() = k float32 values wide:
//
//	key v, v < m            count of pushes that put parameter v in S_i, i = 0..k−1
//	key m + 4w + 0, + 1     worker w's share of |S_i|: low 20 bits, high bits
//	key m + 4w + 2, + 3     worker w's share of |U_i|: low 20 bits, high bits
//	key m + 4W + u/k        sample u's partition + 1 in value u mod k (the result)
//	key C + v, C = m + 4W + ⌈n/k⌉
//	                        count of workers whose samples on machine i use v (C_v, Alg. 2)
//	key C + m + v/k         c_v = |C_v| in value v mod k
//	key C + m + ⌈m/k⌉ + v/k parameter v's machine + 1 in value v mod k (the result)
//
// The servers add what workers push (update rule "sum"). A union of
// sets is not among the parameter server's update rules, so a set
// membership is a count: a worker pushes 1 for each (v, i) that its block
// added and its view did not have, and v ∈ S_i ⇔ count > 0. Two workers
// adding the same pair in the same round raise the count to 2 and the
// union is still right; bit masks packed into floats would carry into
// the next bit instead. Counts stay below the number of blocks, far from
// float32's 2^24 exact integers. A worker's share of |S_i| and |U_i| is
// exact in its own memory and pushed as the change of its low 20 bits
// and of the rest, so that every value on the servers is a small exact
// integer however large the graph.
type Layout struct {
	// Params m, Samples n, K partitions, Workers W.
	Params, Samples, K, Workers int
}

// NumKeys returns the size of the key space.
func (l Layout) NumKeys() uint64 { return uint64(l.params()) + uint64(l.packed(l.Params)) }

// ServerBytes returns what one of the W servers holds of the key space:
// its share of the keys' values and, under BSP (bsp), of the round's
// sums, as many again; sets of the keys used from the start (the
// neighbour sets, the counts, the data placement), params of the keys
// the parameter assignment adds (the masks C_v, the sizes c_v and the
// parameters' machines).
func (l Layout) ServerBytes(bsp bool) (sets, params int64) {
	per := 4 * int64(l.Width())
	if bsp {
		per *= 2
	}
	W := int64(max(1, l.Workers))
	share := func(keys int64) int64 { return (per*keys + W - 1) / W }
	used := int64(l.used())
	return share(used), share(int64(l.NumKeys()) - used)
}

// Width returns the values per key: k.
func (l Layout) Width() int { return l.K }

func (l Layout) slot(w, x int) uint64 { return uint64(l.Params + 4*w + x) }
func (l Layout) data() int            { return l.Params + 4*l.Workers }

// packed returns the keys of x values packed k to a key.
func (l Layout) packed(x int) int { return (x + l.K - 1) / l.K }

// used, sizes and params are the first keys of the masks C_v, of the
// sizes c_v and of the parameters' machines.
func (l Layout) used() int   { return l.data() + l.packed(l.Samples) }
func (l Layout) sizes() int  { return l.used() + l.Params }
func (l Layout) params() int { return l.sizes() + l.packed(l.Params) }

// lowBits is the split of a worker's exact counts into two float32s.
const lowBits = 20

// Sets are the neighbour sets S_1..S_k and the counts |U_i| held by the
// servers of a parameter server, as one worker sees them
// (partition.SharedSets). Pull is one pull of the block's parameters and
// of every worker's counts; Push and PushBlock are one push, which ends
// the worker's round, of the pairs (v, i) the block added to its view and
// of the changes to this worker's counts. Sizes and Counts are those of
// the last Pull. Push waits for nothing: the next Pull or Push, or Err,
// waits for it.
//
// The interface has no errors: the first failure of the parameter server
// is kept and returned by Err, and the calls after it do nothing (Pull
// returns empty sets). Reset empties nothing on the servers, whose sets
// start empty: it fails once this worker pushed.
type Sets struct {
	w   *worker.Worker
	l   Layout
	mu  sync.Mutex
	err error

	pending *worker.Future // the last push
	pushed  bool
	stats   SetStats

	// The last pull: the parameters (their array, to recognise a Push of
	// the same block), the masks returned, the sums of the workers' counts.
	viewOf []uint32
	view   []uint64
	sizes  []int64
	counts []int64
	// This worker's exact shares of |S_i| and |U_i|.
	mySizes, myCounts []int64

	// Scratch reused from block to block.
	order []int32
	keys  []uint64
	vals  []float32
}

// NewSets returns the sets of layout l as worker w sees them. w's width
// must be l.Width().
func NewSets(w *worker.Worker, l Layout) (*Sets, error) {
	if w.Width() != l.Width() {
		return nil, fmt.Errorf("distparsa: the cluster's width is %d, the layout's %d (k)", w.Width(), l.Width())
	}
	k := l.K
	return &Sets{w: w, l: l, sizes: make([]int64, k), counts: make([]int64, k),
		mySizes: make([]int64, k), myCounts: make([]int64, k)}, nil
}

// Err returns the first failure, after waiting for the last push.
func (s *Sets) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.settle()
	return s.err
}

// settle waits for the last push and keeps its failure. It holds mu.
func (s *Sets) settle() {
	if s.pending == nil {
		return
	}
	t0 := time.Now()
	err := s.pending.Wait()
	s.stats.PushWaitSeconds += time.Since(t0).Seconds()
	if err != nil && s.err == nil {
		s.err = fmt.Errorf("distparsa: worker %d: push: %w", s.w.Rank(), err)
	}
	s.pending = nil
}

// fail keeps err if it is the first failure. It holds mu.
func (s *Sets) fail(err error) {
	if s.err == nil {
		s.err = err
	}
}

// Pull implements partition.NeighborSets: one pull of params' keys and of
// every worker's count keys.
func (s *Sets) Pull(params []uint32, dst []uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pull(params, dst)
	s.viewOf = params
	s.view = append(s.view[:0], dst[:len(params)*partition.MaskWords(s.l.K)]...)
}

// pull fills dst with the masks of params and sets sizes and counts. It
// holds mu.
func (s *Sets) pull(params []uint32, dst []uint64) {
	k, mw := s.l.K, partition.MaskWords(s.l.K)
	clear(dst[:len(params)*mw])
	s.settle()
	if s.err != nil {
		return
	}
	s.sortParams(params)
	np := len(s.keys)
	for wr := range s.l.Workers {
		for x := range 4 {
			s.keys = append(s.keys, s.l.slot(wr, x))
		}
	}
	s.vals = slices.Grow(s.vals[:0], len(s.keys)*k)[:len(s.keys)*k]
	t0 := time.Now()
	err := s.w.Pull(s.keys, s.vals).Wait()
	s.stats.PullSeconds += time.Since(t0).Seconds()
	s.stats.Pulls++
	s.stats.PulledKeys += int64(len(s.keys))
	if err != nil {
		s.fail(fmt.Errorf("distparsa: worker %d: pull of %d neighbour sets: %w", s.w.Rank(), np, err))
		return
	}
	for j, idx := range s.order {
		row := s.vals[j*k : (j+1)*k]
		m := dst[int(idx)*mw : (int(idx)+1)*mw]
		for i, c := range row {
			if c > 0 {
				m[i>>6] |= 1 << (i & 63)
			}
		}
	}
	clear(s.sizes)
	clear(s.counts)
	for wr := range s.l.Workers {
		base := (np + 4*wr) * k
		for i := range k {
			s.sizes[i] += int64(s.vals[base+i]) + int64(s.vals[base+k+i])<<lowBits
			s.counts[i] += int64(s.vals[base+2*k+i]) + int64(s.vals[base+3*k+i])<<lowBits
		}
	}
}

// sortParams sets s.keys to params sorted and s.order to their indices in
// params.
func (s *Sets) sortParams(params []uint32) {
	s.order = slices.Grow(s.order[:0], len(params))[:len(params)]
	for j := range s.order {
		s.order[j] = int32(j)
	}
	slices.SortFunc(s.order, func(a, b int32) int { return int(params[a]) - int(params[b]) })
	s.keys = slices.Grow(s.keys[:0], len(params))[:len(params)]
	for j, idx := range s.order {
		s.keys[j] = uint64(params[idx])
	}
}

// Push implements partition.NeighborSets.
func (s *Sets) Push(params []uint32, masks []uint64) { s.PushBlock(params, masks, nil) }

// PushBlock implements partition.SharedSets: one push of the pairs (v, i)
// of masks that the last Pull of the same params did not return (without
// one, the sets are pulled first) and of the changes to this worker's
// shares of |S_i| and |U_i| (added).
func (s *Sets) PushBlock(params []uint32, masks []uint64, added []int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k, mw := s.l.K, partition.MaskWords(s.l.K)
	view := s.view
	if len(params) == 0 || len(s.viewOf) != len(params) || &s.viewOf[0] != &params[0] {
		view = make([]uint64, len(params)*mw)
		s.pull(params, view)
	}
	s.viewOf = nil
	s.settle()
	if s.err != nil {
		return
	}
	// The last pull was of params, so s.order sorts them.
	keys := s.keys[:0]
	vals := s.vals[:0]
	oldS, oldU := slices.Clone(s.mySizes), slices.Clone(s.myCounts)
	for _, idx := range s.order {
		var news bool
		for x := range mw {
			news = news || masks[int(idx)*mw+x]&^view[int(idx)*mw+x] != 0
		}
		if !news {
			continue
		}
		keys = append(keys, uint64(params[idx]))
		start := len(vals)
		vals = slices.Grow(vals, k)[:start+k]
		clear(vals[start:])
		for x := range mw {
			add := masks[int(idx)*mw+x] &^ view[int(idx)*mw+x]
			for add != 0 {
				i := x*64 + bits.TrailingZeros64(add)
				vals[start+i] = 1
				s.mySizes[i]++
				add &= add - 1
			}
		}
	}
	for i, a := range added {
		s.myCounts[i] += a
	}
	rank := s.w.Rank()
	for x, pair := range [][2][]int64{{oldS, s.mySizes}, {oldU, s.myCounts}} {
		lo := make([]float32, k)
		hi := make([]float32, k)
		changed := false
		for i := range k {
			o, n := pair[0][i], pair[1][i]
			lo[i] = float32(n&(1<<lowBits-1) - o&(1<<lowBits-1))
			hi[i] = float32(n>>lowBits - o>>lowBits)
			changed = changed || o != n
		}
		if changed {
			keys = append(keys, s.l.slot(rank, 2*x), s.l.slot(rank, 2*x+1))
			vals = append(vals, lo...)
			vals = append(vals, hi...)
		}
	}
	s.keys, s.vals = keys, vals
	// The arrays stay untouched until the push is done: the next call
	// waits for it before reusing them.
	s.pending = s.w.Push(keys, vals)
	s.pushed = true
	s.stats.Pushes++
	s.stats.PushedKeys += int64(len(keys))
}

// SetStats counts a worker's traffic with the servers and the time it
// waited for it.
type SetStats struct {
	Pulls      int   `json:"pulls"`
	PulledKeys int64 `json:"pulled_keys"`
	Pushes     int   `json:"pushes"`
	PushedKeys int64 `json:"pushed_keys"`
	// PullSeconds is the time spent waiting for pulls, PushWaitSeconds
	// for the acknowledgement of pushes (under BSP: for the slowest
	// worker of the round).
	PullSeconds     float64 `json:"pull_seconds"`
	PushWaitSeconds float64 `json:"push_wait_seconds"`
}

// Stats returns the counters.
func (s *Sets) Stats() SetStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stats
}

// Reset implements partition.NeighborSets. The servers' sets start empty
// and a union cannot be undone by adding, so Reset does nothing before
// this worker's first push and fails after it.
func (s *Sets) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pushed {
		s.fail(errors.New("distparsa: the neighbour sets on the parameter server cannot be reset once pushed"))
	}
}

// Sizes implements partition.NeighborSets: |S_i| as of the last Pull,
// the sum of every worker's share. Each share counts the pairs its worker
// added to its view, so a pair two workers add between their pulls is
// counted twice: exact when each block sees all the blocks before it.
func (s *Sets) Sizes(dst []int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	copy(dst, s.sizes)
}

// Counts implements partition.SharedSets: |U_i| as of the last Pull, as
// a block should see them when the W workers' blocks of a round share
// that view. A block fills the partitions with the fewest samples first;
// if each of W blocks filled the whole deficit of a partition that all of
// them see, the partition would end W times over, and the next round
// would see the opposite deficit. So each block sees each partition's
// distance from the mean divided by W: the W blocks fill the deficit
// together. With one worker the counts are exact.
func (s *Sets) Counts(dst []int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	copy(dst, s.counts)
	W := int64(s.l.Workers)
	if W == 1 || len(dst) == 0 {
		return
	}
	var sum int64
	for _, c := range dst {
		sum += c
	}
	k := int64(len(dst))
	for i, c := range dst {
		// mean + (c − mean)/W with mean = sum/k, in integers:
		// (sum·(W−1) + c·k) / (k·W), rounded down.
		dst[i] = (sum*(W-1) + c*k) / (k * W)
	}
}

// Totals writes the exact |U_i| as of the last Pull into dst: the sum of
// every worker's count.
func (s *Sets) Totals(dst []int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	copy(dst, s.counts)
}

// PushEmpty ends the worker's round with a push of nothing: a worker
// without a block in a round.
func (s *Sets) PushEmpty() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.settle()
	if s.err != nil {
		return
	}
	s.keys, s.vals = s.keys[:0], s.vals[:0]
	s.pending = s.w.Push(s.keys, s.vals)
}
