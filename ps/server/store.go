package server

import (
	"fmt"
	"math/bits"

	"colo/kv"
	"colo/ps/route"
	"colo/ps/update"
)

// Store holds one server's values densely: the keys the routing table
// places on the server get slots 0 … n−1 in key order (so a range of keys
// is a range of memory), and any other key a slot appended on its first
// push. With a uniform width w every key has w values at slot·w; with
// width 0 each key's length is fixed by its first push and its values are
// appended to the same array. The update rule's state arrays are parallel
// to the values. Arrays allocated whole (a uniform width) start on a
// 2 MiB boundary and are advised to transparent huge pages (hugeFloats,
// adviseHuge): a sparse push touches a page per key on 4 KiB pages.
//
// For synchronous training the Store also keeps the round's sum of
// gradients in an array parallel to the values, with a bitmap of the
// slots it touched, so Flush applies the rule once per key with the
// aggregate. Float32 addition is not associative, so the sum depends on
// the order of the Accumulate calls; under BSP the Core makes it worker
// rank order. A Store is not safe for concurrent use.
type Store struct {
	width  int
	rule   update.Rule
	scaled update.Scaled // rule, when it can scale its step
	sum    bool          // rule is update.Sum: inline the addition
	idx    *route.Index
	lo     uint64 // idx is one range of keys starting at lo
	ranged bool
	size   int // slots of the index

	vals  []float32
	state [][]float32
	// huge is why the values are not on huge pages, if they are not
	// (adviseHuge): the tests skip on it.
	huge  error
	extra map[uint64]int // slot of keys outside the index and the families
	// fams are the key families (see Family): each reserves a run of
	// slots, found from a key by arithmetic. last is the family that
	// answered last, tried first.
	fams []family
	last int
	// nslots counts the slots: the index's, the families' and extra's.
	nslots int
	// slotKeys is the key of every slot when it has nslots of them
	// (sumKeys): slots are only added (grow), each with its key for
	// good, so it is rebuilt only when the store gained slots.
	slotKeys []uint64
	// width 0: the span of each slot's values, −1 before its first push.
	off []int
	ln  []int32

	acc   []float32 // round's sum, parallel to vals
	mark  []uint64  // slots with something in acc
	dirty bool

	scratch [][]float32 // state views handed to the rule
	alone   []float32   // a push's values as a round's sum holds them (PushAlone)

	// changed marks, one bit a slot, the slots written since Track was
	// last called (for incremental checkpoints, see snapshot.go), when
	// tracking is set; a slot created since is marked too.
	changed  []byte
	tracking bool
	block    uint // a mark stands for 1<<block slots
}

// NewStore returns an empty store for the keys of idx with the given
// width (0 for per-key lengths) and update rule.
func NewStore(idx *route.Index, width int, rule update.Rule) *Store {
	s := &Store{width: width, rule: rule, idx: idx, size: idx.Size(), nslots: idx.Size(), extra: make(map[uint64]int)}
	_, s.sum = rule.(update.Sum)
	s.scaled, _ = rule.(update.Scaled)
	s.lo, s.ranged = idx.Offset()
	s.state = make([][]float32, rule.States())
	s.scratch = make([][]float32, rule.States())
	if width > 0 {
		s.vals = hugeFloats(s.size * width)
		s.huge = adviseHuge(s.vals)
		for i := range s.state {
			s.state[i] = hugeFloats(len(s.vals))
			adviseHuge(s.state[i])
		}
	} else {
		s.off = make([]int, s.size)
		s.ln = make([]int32, s.size)
		for i := range s.off {
			s.off[i] = -1
		}
	}
	return s
}

// Keys returns the number of keys with a slot: the index's, the
// families' and the others pushed so far.
func (s *Store) Keys() int { return s.nslots }

// Values returns the number of values stored.
func (s *Store) Values() int { return len(s.vals) }

// slot returns the slot of key, creating it when create is set; -1 when
// the key has none.
func (s *Store) slot(key uint64, create bool) int {
	if s.ranged {
		if j := key - s.lo; j < uint64(s.size) {
			return int(j)
		}
	} else if j := s.idx.Slot(key); j >= 0 {
		return j
	}
	if len(s.fams) > 0 {
		if j := s.famSlot(key); j >= 0 {
			return j
		}
	}
	if j, ok := s.extra[key]; ok {
		return j
	}
	if !create {
		return -1
	}
	j := s.nslots
	s.extra[key] = j
	s.grow(1)
	return j
}

// grow appends n slots.
func (s *Store) grow(n int) {
	s.nslots += n
	if s.tracking {
		s.trackSlots()
		for j := s.nslots - n; j < s.nslots; j++ {
			s.touch(j)
		}
	}
	if s.width > 0 {
		s.vals = append(s.vals, make([]float32, n*s.width)...)
		for i := range s.state {
			s.state[i] = append(s.state[i], make([]float32, n*s.width)...)
		}
		return
	}
	for range n {
		s.off = append(s.off, -1)
		s.ln = append(s.ln, 0)
	}
}

// span returns where the values of slot j are, allocating n values on
// the first push of a width-0 key; it fails when n differs from the
// key's length.
func (s *Store) span(key uint64, j, n int) (int, error) {
	if s.width > 0 {
		return j * s.width, nil
	}
	if s.off[j] < 0 {
		if len(s.fams) > 0 && j >= s.size && s.famPlace(j, n) {
			return s.off[j], nil
		}
		s.off[j], s.ln[j] = len(s.vals), int32(n)
		s.vals = append(s.vals, make([]float32, n)...)
		for i := range s.state {
			s.state[i] = append(s.state[i], make([]float32, n)...)
		}
	} else if int(s.ln[j]) != n {
		return 0, fmt.Errorf("key %d has %d values, pushed with %d", key, s.ln[j], n)
	}
	return s.off[j], nil
}

// apply runs the rule on values [o, o+len(g)), its step multiplied by f
// (1: the rule's own; another factor only for an update.Scaled rule).
// f = asSum runs it on 0 + g, what a round's sum of g alone holds, with
// the rule's own step (PushAlone).
func (s *Store) apply(o int, g []float32, f float32) {
	if f == asSum {
		s.alone = s.alone[:0]
		for _, v := range g {
			s.alone = append(s.alone, 0+v)
		}
		g, f = s.alone, 1
	}
	w := s.vals[o : o+len(g)]
	if s.sum {
		sumInto(w, g)
		return
	}
	for i := range s.state {
		s.scratch[i] = s.state[i][o : o+len(g)]
	}
	if f != 1 && s.scaled != nil {
		s.scaled.UpdateScaled(w, g, s.scratch, f)
		return
	}
	s.rule.Update(w, g, s.scratch)
}

// shape checks a pushed batch against the store's width.
func (s *Store) shape(b kv.Batch) error {
	if s.width > 0 {
		if b.Lens != nil {
			for i, l := range b.Lens {
				if int(l) != s.width {
					return fmt.Errorf("key %d pushed with %d values, width is %d", b.Keys[i], l, s.width)
				}
			}
		}
		if len(b.Vals) != s.width*len(b.Keys) {
			return fmt.Errorf("%d values for %d keys of width %d", len(b.Vals), len(b.Keys), s.width)
		}
		return nil
	}
	if b.Lens == nil {
		if len(b.Keys) > 0 && len(b.Vals)%len(b.Keys) != 0 {
			return fmt.Errorf("%d values are not a multiple of %d keys", len(b.Vals), len(b.Keys))
		}
		return nil
	}
	if len(b.Lens) != len(b.Keys) {
		return fmt.Errorf("%d lengths for %d keys", len(b.Lens), len(b.Keys))
	}
	sum := 0
	for _, l := range b.Lens {
		if l < 0 {
			return fmt.Errorf("negative length %d", l)
		}
		sum += int(l)
	}
	if sum != len(b.Vals) {
		return fmt.Errorf("lengths sum to %d for %d values", sum, len(b.Vals))
	}
	return nil
}

// check reports whether Push would fail on b, without changing the
// store: b's shape, and at width 0 the lengths of the keys that have one.
func (s *Store) check(b kv.Batch) error {
	if err := s.shape(b); err != nil {
		return err
	}
	if s.width > 0 {
		return nil
	}
	n := 0
	if b.Lens == nil && len(b.Keys) > 0 {
		n = len(b.Vals) / len(b.Keys)
	}
	for i, k := range b.Keys {
		if b.Lens != nil {
			n = int(b.Lens[i])
		}
		if j := s.slot(k, false); j >= 0 && s.off[j] >= 0 && int(s.ln[j]) != n {
			return fmt.Errorf("key %d has %d values, pushed with %d", k, s.ln[j], n)
		}
	}
	return nil
}

// checkRange reports whether PushRange would fail on begin and vals.
func (s *Store) checkRange(begin uint64, vals []float32) error {
	if s.width == 0 {
		return fmt.Errorf("range push to a store without a uniform width")
	}
	if len(vals)%s.width != 0 {
		return fmt.Errorf("%d values are not a multiple of width %d", len(vals), s.width)
	}
	if n := uint64(len(vals) / s.width); begin+n < begin {
		return fmt.Errorf("range [%d, +%d) overflows", begin, n)
	}
	return nil
}

// Push applies a batch of gradients with the rule, now.
func (s *Store) Push(b kv.Batch) error {
	return s.push(b, false, 1)
}

// Accumulate adds a batch of gradients to the round's sum, for Flush.
func (s *Store) Accumulate(b kv.Batch) error {
	return s.push(b, true, 1)
}

// push applies b with the rule's step times f, or adds it to the
// round's sum (acc). f = asSum applies it as the round's sum of b
// alone (PushAlone).
func (s *Store) push(b kv.Batch, acc bool, f float32) error {
	if err := s.shape(b); err != nil {
		return err
	}
	if acc {
		s.ensureAcc()
	}
	if !acc && f != asSum && s.sum && s.width == 1 && s.ranged {
		// The common sparse case: the keys of the index, then the rest
		// by the general path.
		n := scatterAdd(s.vals[:s.size], s.lo, b.Keys, b.Vals)
		if s.tracking {
			markKeys(s.changed, b.Keys[:n], s.lo, s.block)
		}
		if n == len(b.Keys) {
			return nil
		}
		b.Keys, b.Vals = b.Keys[n:], b.Vals[n:]
	}
	w := s.width
	if w == 0 && b.Lens == nil && len(b.Keys) > 0 {
		w = len(b.Vals) / len(b.Keys)
	}
	if !acc && !s.sum {
		return s.applyAll(b, w, f)
	}
	v := 0
	for i, k := range b.Keys {
		n := w
		if b.Lens != nil {
			n = int(b.Lens[i])
		}
		j := s.slot(k, true)
		o, err := s.span(k, j, n)
		if err != nil {
			return err
		}
		g := b.Vals[v : v+n]
		v += n
		if acc {
			s.add(j, o, g)
		} else {
			s.touch(j)
			s.apply(o, g, f)
		}
	}
	return nil
}

// applyAll applies b (w values a key, or b.Lens) with the rule's step
// times f, key after key as push does, with the place of each key's
// values found one key ahead and fetched into the cache (prefetch)
// while the rule runs on the key before: the rows of a sparse push are
// scattered over the store, and the rule's work on one row then hides
// the misses of the next instead of waiting for them. A key whose place
// fails (a length that contradicts the store's) ends it with the keys
// before it applied, as push.
func (s *Store) applyAll(b kv.Batch, w int, f float32) error {
	if len(b.Keys) == 0 {
		return nil
	}
	lenOf := func(i int) int {
		if b.Lens != nil {
			return int(b.Lens[i])
		}
		return w
	}
	j := s.slot(b.Keys[0], true)
	o, err := s.span(b.Keys[0], j, lenOf(0))
	if err != nil {
		return err
	}
	v := 0
	for i := range b.Keys {
		n := lenOf(i)
		next, nj, nerr := 0, 0, error(nil)
		if i+1 < len(b.Keys) {
			k, m := b.Keys[i+1], lenOf(i+1)
			nj = s.slot(k, true)
			if next, nerr = s.span(k, nj, m); nerr == nil && m > 0 {
				s.prefetch(next, m)
			}
		}
		s.touch(j)
		s.apply(o, b.Vals[v:v+n], f)
		v += n
		if nerr != nil {
			return nerr
		}
		o, j = next, nj
	}
	return nil
}

// prefetch fetches the values [o, o+n) and the rule's states of them
// into the cache, their first and last lines (a row of a few values).
func (s *Store) prefetch(o, n int) {
	prefetch2(&s.vals[o], &s.vals[o+n-1])
	for _, st := range s.state {
		prefetch2(&st[o], &st[o+n-1])
	}
}

// PushAlone applies b, a round's only push under BSP, as Accumulate
// and Flush would apply it, with the same bits, without the round's
// sum: the rule sees each value as the sum would hold it, 0 + g (g, but
// +0 for −0 and a quiet NaN for a signalling one), one key at a time.
// The rules are elementwise, so the order of the keys (Flush's is the
// slots') changes nothing. The keys must ascend without repeats, as a
// push's do; b must pass check.
func (s *Store) PushAlone(b kv.Batch) error {
	return s.push(b, false, asSum)
}

// asSum, as the factor of a step, applies gradients as a round's sum of
// them alone holds them (PushAlone); no scaled step is 0.
const asSum float32 = 0

// scatterAdd adds g[i] to vals[keys[i]−lo] for the keys from the first
// on while they are in [lo, lo+len(vals)), and returns how many it added;
// g holds at least len(keys) values. It is the hot loop of a sparse push,
// one miss in the cache per key: with lo and the bounds held in registers
// and no bounds checks left inside it, more iterations fit in the
// processor's window and more of those misses overlap (0.2 against 0.35–0.5
// ms of CPU for 100k keys of a store of 2^24 on huge pages).
func scatterAdd(vals []float32, lo uint64, keys []uint64, g []float32) int {
	g = g[:len(keys)]
	size := uint64(len(vals))
	for i, k := range keys {
		j := k - lo
		if j >= size {
			return i
		}
		vals[j] += g[i]
	}
	return len(keys)
}

// markKeys marks in changed (a byte per 1<<block slots, see
// Store.Track) the blocks of the slots of keys, all in [lo, lo+size): a
// pass of its own after scatterAdd's, whose loop stays as tight as it is
// (its cache misses overlap as many as the processor's window holds),
// over keys that are in the cache, with one store per key that nothing
// waits for.
func markKeys(changed []byte, keys []uint64, lo uint64, block uint) {
	for _, k := range keys {
		changed[(k-lo)>>block] = 1
	}
}

// gather sets dst[i] = vals[keys[i]−lo] for the keys from the first on
// while they are in [lo, lo+len(vals)), and returns how many it set; dst
// holds at least len(keys) values. It is the hot loop of a sparse pull,
// scatterAdd's twin.
func gather(dst, vals []float32, lo uint64, keys []uint64) int {
	dst = dst[:len(keys)]
	size := uint64(len(vals))
	for i, k := range keys {
		j := k - lo
		if j >= size {
			return i
		}
		dst[i] = vals[j]
	}
	return len(keys)
}

// ensureAcc allocates the round's sum.
func (s *Store) ensureAcc() {
	if len(s.acc) != len(s.vals) {
		s.acc = append(s.acc, make([]float32, len(s.vals)-len(s.acc))...)
	}
	if n := (s.Keys() + 63) / 64; len(s.mark) < n {
		s.mark = append(s.mark, make([]uint64, n-len(s.mark))...)
	}
}

// add adds g to the round's sum at slot j, values at o.
func (s *Store) add(j, o int, g []float32) {
	if j/64 >= len(s.mark) || o+len(g) > len(s.acc) {
		s.ensureAcc()
	}
	sumInto(s.acc[o:o+len(g)], g)
	s.mark[j/64] |= 1 << (j % 64)
	s.dirty = true
}

// rangeSlots returns the slots of keys [begin, end) when they are one run
// of index slots.
func (s *Store) rangeSlots(begin, end uint64) (int, bool) {
	if s.ranged && begin >= s.lo && end-s.lo <= uint64(s.size) && end >= begin {
		return int(begin - s.lo), true
	}
	return 0, false
}

// PushRange applies gradients to the keys [begin, begin+n) where n is
// len(vals)/width; acc adds them to the round's sum instead.
func (s *Store) PushRange(begin uint64, vals []float32, acc bool) error {
	return s.pushRange(begin, vals, acc, 1)
}

// pushRange is PushRange with the rule's step times f.
func (s *Store) pushRange(begin uint64, vals []float32, acc bool, f float32) error {
	if err := s.checkRange(begin, vals); err != nil {
		return err
	}
	n := uint64(len(vals) / s.width)
	if j, ok := s.rangeSlots(begin, begin+n); ok {
		o := j * s.width
		if !acc {
			s.touchRange(j, j+int(n))
			s.apply(o, vals, f)
			return nil
		}
		s.ensureAcc()
		sumInto(s.acc[o:o+len(vals)], vals)
		for q := j; q < j+int(n); q++ {
			s.mark[q/64] |= 1 << (q % 64)
		}
		s.dirty = true
		return nil
	}
	if acc {
		s.ensureAcc()
	}
	for i := range n {
		k := begin + i
		j := s.slot(k, true)
		g := vals[int(i)*s.width : int(i+1)*s.width]
		if acc {
			s.add(j, j*s.width, g)
		} else {
			s.touch(j)
			s.apply(j*s.width, g, f)
		}
	}
	return nil
}

// appendSum sets dst to the round's sum as a batch, reusing its
// arrays: the key of every slot with something in the accumulator, in
// slot order, and its summed values. Accumulating that batch into a
// store with the same slots marks the same slots with the same sums
// (see Core.TakeSum). It needs a uniform width. O(slots/64 + marked
// values), and O(slots) more in a round after the store gained slots
// when the index is not one range of keys (sumKeys).
func (s *Store) appendSum(dst kv.Batch) kv.Batch {
	dst.Keys, dst.Vals, dst.Lens = dst.Keys[:0], dst.Vals[:0], nil
	if !s.dirty {
		return dst
	}
	var keys []uint64
	if !s.ranged || len(s.extra) > 0 || len(s.fams) > 0 {
		keys = s.sumKeys()
	}
	for wi, word := range s.mark {
		for word != 0 {
			b := bits.TrailingZeros64(word)
			word &= word - 1
			j := wi*64 + b
			if keys != nil {
				dst.Keys = append(dst.Keys, keys[j])
			} else {
				dst.Keys = append(dst.Keys, s.lo+uint64(j))
			}
			dst.Vals = append(dst.Vals, s.acc[j*s.width:(j+1)*s.width]...)
		}
	}
	return dst
}

// sumKeys returns the key of every slot, kept from round to round: a
// round's sum then costs what it marked, not the store's slots.
func (s *Store) sumKeys() []uint64 {
	if len(s.slotKeys) != s.nslots {
		s.slotKeys = s.snapshotKeys()
	}
	return s.slotKeys
}

// Flush applies the round's sum with the rule and clears it. It visits
// the marked slots in order, applying the rule once per run of
// consecutive slots when the width is uniform.
func (s *Store) Flush() {
	if !s.dirty {
		return
	}
	s.dirty = false
	for wi, word := range s.mark {
		for word != 0 {
			b := bits.TrailingZeros64(word)
			// The run of set bits from b.
			run := bits.TrailingZeros64(^(word >> b))
			if b+run > 64 {
				run = 64 - b
			}
			j0, j1 := wi*64+b, wi*64+b+run
			if s.width > 0 {
				o0, o1 := j0*s.width, j1*s.width
				s.apply(o0, s.acc[o0:o1], 1)
				clear(s.acc[o0:o1])
			} else {
				for j := j0; j < j1; j++ {
					o, n := s.off[j], int(s.ln[j])
					if o >= 0 {
						s.apply(o, s.acc[o:o+n], 1)
						clear(s.acc[o : o+n])
					}
				}
			}
			if run == 64 {
				word = 0
			} else {
				word &^= (1<<run - 1) << b
			}
		}
		if s.tracking {
			s.touchWord(wi, s.mark[wi])
		}
		s.mark[wi] = 0
	}
}

// Pull appends the values of keys to dst.Vals[:0] (and, for width 0,
// their lengths to dst.Lens[:0]) and returns the batch. A key never
// pushed has zeros, or no values at width 0.
func (s *Store) Pull(dst kv.Batch, keys []uint64) kv.Batch {
	out := kv.Batch{Keys: keys, Vals: dst.Vals[:0]}
	if s.width > 0 {
		n := len(keys) * s.width
		if cap(out.Vals) < n {
			out.Vals = make([]float32, n)
		}
		out.Vals = out.Vals[:n]
		if s.width == 1 && s.ranged {
			// The keys of the index in one tight loop, any other key
			// (outside the window) by the general path.
			for i := 0; i < len(keys); {
				i += gather(out.Vals[i:], s.vals[:s.size], s.lo, keys[i:])
				if i < len(keys) {
					out.Vals[i] = s.slowGet(keys[i])
					i++
				}
			}
			return out
		}
		for i, k := range keys {
			d := out.Vals[i*s.width : (i+1)*s.width]
			if j := s.slot(k, false); j >= 0 {
				copy(d, s.vals[j*s.width:])
			} else {
				clear(d)
			}
		}
		return out
	}
	out.Lens = dst.Lens[:0]
	if len(s.fams) > 0 && len(keys) > 0 {
		// The keys of a family, found by arithmetic; the values land
		// where their answer goes, grown once.
		f := &s.fams[s.last]
		if _, ok := f.index(keys[0]); !ok {
			s.famSlot(keys[0])
			f = &s.fams[s.last]
		}
		return s.pullFamily(f, out, keys)
	}
	for _, k := range keys {
		j := s.slot(k, false)
		if j < 0 || s.off[j] < 0 {
			out.Lens = append(out.Lens, 0)
			continue
		}
		o, n := s.off[j], int(s.ln[j])
		out.Lens = append(out.Lens, int32(n))
		out.Vals = append(out.Vals, s.vals[o:o+n]...)
	}
	return out
}

// slowGet returns the value of a width-1 key outside the index.
func (s *Store) slowGet(k uint64) float32 {
	if j, ok := s.extra[k]; ok {
		return s.vals[j]
	}
	return 0
}

// PullRange returns the values of keys [begin, end): a view of the store
// when the keys are one run of slots (valid until the next change; view
// is set), else a copy in dst's memory.
func (s *Store) PullRange(begin, end uint64, dst []float32) (vals []float32, view bool, err error) {
	if s.width == 0 {
		return nil, false, fmt.Errorf("range pull from a store without a uniform width")
	}
	if end < begin || end-begin > uint64(route.MaxIndex) {
		return nil, false, fmt.Errorf("bad range [%d, %d)", begin, end)
	}
	if j, ok := s.rangeSlots(begin, end); ok {
		return s.vals[j*s.width : (j+int(end-begin))*s.width], true, nil
	}
	n := int(end-begin) * s.width
	if cap(dst) < n {
		dst = make([]float32, n)
	}
	dst = dst[:n]
	for i := range int(end - begin) {
		d := dst[i*s.width : (i+1)*s.width]
		if j := s.slot(begin+uint64(i), false); j >= 0 {
			copy(d, s.vals[j*s.width:])
		} else {
			clear(d)
		}
	}
	return dst, false, nil
}
