package server

import (
	"fmt"
	"math"
	"math/bits"
	"slices"

	"colo/kv"
	"colo/ps/clock"
	"colo/ps/proto"
)

// Snapshots: the whole state of a store, for checkpoints.
//
// A snapshot of slots [lo, hi) is a kv.Batch: Keys the key of each slot
// in slot order; at width 0, Lens the number of values of each key (0
// for a key never pushed, which has none); Vals the values of the slots
// in order, followed by each update rule state's values for the same
// slots, so (1 + rule.States()) × V values for V values of the keys. A
// store restored from the snapshots of all its slots (Restore) holds the
// same values and states, so that training goes on bit for bit as it
// would have. A worker asks for a snapshot with proto.DataSave and
// installs one with proto.DataLoad (worker.Worker.Save and Load); under
// BSP a snapshot is refused while pushes of an incomplete round are
// held, so it is always of whole rounds.

// snapshotKeys returns the key of every slot, in slot order.
func (s *Store) snapshotKeys() []uint64 {
	keys := s.idx.AppendKeys(make([]uint64, 0, s.Keys()))
	if len(s.extra) == 0 && len(s.fams) == 0 {
		return keys
	}
	keys = keys[:s.Keys()]
	for k, j := range s.extra {
		keys[j] = k
	}
	s.familyKeys(keys)
	return keys
}

// Snapshot returns the slots [lo, min(hi, Keys())) of the store as a
// snapshot batch (see above), in new arrays.
func (s *Store) Snapshot(lo, hi int) kv.Batch {
	hi = min(hi, s.Keys())
	if lo < 0 || lo >= hi {
		return kv.Batch{Keys: []uint64{}, Vals: []float32{}}
	}
	keys := s.snapshotKeys()
	if lo > 0 || hi < len(keys) {
		// A chunk: a copy, so that the whole array is not kept.
		keys = slices.Clone(keys[lo:hi])
	}
	arrays := append([][]float32{s.vals}, s.state...)
	if s.width > 0 {
		a, b := lo*s.width, hi*s.width
		vals := make([]float32, 0, len(arrays)*(b-a))
		for _, arr := range arrays {
			vals = append(vals, arr[a:b]...)
		}
		return kv.Batch{Keys: keys, Vals: vals}
	}
	lens := make([]int32, hi-lo)
	n := 0
	for i := range lens {
		if j := lo + i; s.off[j] >= 0 {
			lens[i] = s.ln[j]
			n += int(s.ln[j])
		}
	}
	vals := make([]float32, 0, len(arrays)*n)
	for _, arr := range arrays {
		for i, l := range lens {
			if l > 0 {
				o := s.off[lo+i]
				vals = append(vals, arr[o:o+int(l)]...)
			}
		}
	}
	return kv.Batch{Keys: keys, Lens: lens, Vals: vals}
}

// Restore sets the values and rule states of the keys of b, a snapshot
// batch (see above) of a store with the same width and rule, giving keys
// outside the index slots of their own. It checks the whole batch first
// and changes nothing when the batch is malformed: lengths at width
// other than 0, lengths that do not sum to the values, or a key whose
// length differs from the one it has.
func (s *Store) Restore(b kv.Batch) error {
	arrays := 1 + len(s.state)
	n := len(b.Keys) * s.width
	if s.width > 0 {
		if b.Lens != nil {
			return fmt.Errorf("snapshot of %d keys has lengths, the store's width is %d", len(b.Keys), s.width)
		}
	} else {
		if len(b.Lens) != len(b.Keys) {
			return fmt.Errorf("snapshot of %d keys has %d lengths", len(b.Keys), len(b.Lens))
		}
		n = 0
		for i, l := range b.Lens {
			if l < 0 {
				return fmt.Errorf("snapshot key %d has length %d", b.Keys[i], l)
			}
			if j := s.slot(b.Keys[i], false); l > 0 && j >= 0 && s.off[j] >= 0 && s.ln[j] != l {
				return fmt.Errorf("snapshot key %d has %d values, the store %d", b.Keys[i], l, s.ln[j])
			}
			n += int(l)
		}
	}
	if len(b.Vals) != arrays*n {
		return fmt.Errorf("snapshot of %d keys with %d values: want %d (values and %d rule states)", len(b.Keys), len(b.Vals), arrays*n, len(s.state))
	}
	o := 0
	for i, k := range b.Keys {
		l := s.width
		if s.width == 0 {
			l = int(b.Lens[i])
			if l == 0 {
				continue
			}
		}
		j := s.slot(k, true)
		at, err := s.span(k, j, l)
		if err != nil {
			return err // checked above: cannot happen
		}
		copy(s.vals[at:at+l], b.Vals[o:o+l])
		for a, st := range s.state {
			copy(st[at:at+l], b.Vals[(1+a)*n+o:(1+a)*n+o+l])
		}
		o += l
	}
	return nil
}

// save answers a worker's DataSave of slots KV.Keys = {lo, hi}: their
// snapshot. Under BSP it is refused while pushes of an incomplete round
// are held. The requests of an incremental capture have four keys, the
// first saying which (proto.SaveBegin, SaveChanged, SaveEnd; see incremental).
func (c *Core) save(r Request) []Reply {
	reply := Reply{Worker: r.Worker, ID: r.ID, Pull: true}
	fail := func(err error) []Reply {
		c.stats.Errors++
		reply.Err = fmt.Errorf("server %d: snapshot: %w", c.cfg.Rank, err)
		return append(c.out, reply)
	}
	if len(r.KV.Keys) == 4 {
		b, err := c.incremental(r.KV.Keys)
		if err != nil {
			return fail(err)
		}
		reply.Keys, reply.Vals, reply.Lens, reply.own = b.Keys, b.Vals, b.Lens, true
		return append(c.out, reply)
	}
	if len(r.KV.Keys) != 2 || r.KV.Keys[1] < r.KV.Keys[0] {
		return fail(fmt.Errorf("slots %v, want {begin, end}", r.KV.Keys))
	}
	if err := c.between(); err != nil {
		return fail(err)
	}
	lo, hi := min(r.KV.Keys[0], uint64(c.store.Keys())), min(r.KV.Keys[1], uint64(c.store.Keys()))
	b := c.store.Snapshot(int(lo), int(hi))
	reply.Keys, reply.Vals, reply.Lens, reply.own = b.Keys, b.Vals, b.Lens, true
	return append(c.out, reply)
}

// between refuses a snapshot while pushes of an incomplete round are
// held (BSP).
func (c *Core) between() error {
	if err := c.holding(); err != nil {
		return fmt.Errorf("%w: snapshots are taken between rounds", err)
	}
	return nil
}

// holding returns the error naming the first worker whose pushes of an
// incomplete round are held (BSP), with the round of its first and what
// the clock has of the round, nil when none are: what a snapshot and a
// move, taken between rounds, refuse.
func (c *Core) holding() error {
	for w, q := range c.held {
		if len(q) > 0 {
			r := q[0].round
			return fmt.Errorf("worker %d's pushes of an incomplete round are held: %d from round %d, which %d of %d workers pushed; every worker pushed %d rounds",
				w, len(q), r, c.pushedRound(r), c.cfg.Workers, c.clock.Min())
		}
	}
	return nil
}

// pushedRound returns the number of workers that pushed round r.
func (c *Core) pushedRound(r int64) int {
	n := 0
	for w := range c.cfg.Workers {
		if c.clock.Done(w) > r {
			n++
		}
	}
	return n
}

// The requests of an incremental capture (DataSave with four keys, the
// first of them the request's kind, proto.SaveBegin, SaveChanged or
// SaveEnd):
//
//   - {SaveBegin, base+1, budget, 0} opens a capture. It is of the
//     changed slots when the store's marks count from the capture of
//     round base (the last one whose SaveEnd the server answered, with
//     no load or move since) and at most budget slots are marked; of the
//     whole store otherwise. The answer's keys are {1 for the changed
//     slots or 0 for the whole store, the store's slots, the slots
//     marked}. The worker then asks for the whole store by the ordinary
//     DataSave requests {lo, hi}, or for the changed slots of [lo, hi)
//     by {SaveChanged, lo, hi, 0} (Store.SnapshotChanged), in chunks;
//   - {SaveEnd, round+1, 0, 0} ends it: the store's marks are cleared
//     and count from round on.
//
// Until the end, the marks count from no capture: a capture cut short
// (a failed worker) makes the next one whole. The pushes of the next
// round wait for the end of every capture (the checkpoint's barrier).
// incremental answers a request of an incremental capture (above).
func (c *Core) incremental(k []uint64) (kv.Batch, error) {
	if err := c.between(); err != nil {
		return kv.Batch{}, err
	}
	switch k[0] {
	case proto.SaveBegin:
		changed := c.store.Changed()
		c.open = 1
		if c.store.Tracking() && c.since > 0 && k[1] == uint64(c.since) && uint64(changed) <= k[2] {
			c.open = 2
		}
		c.since = 0
		return kv.Batch{Keys: []uint64{uint64(c.open - 1), uint64(c.store.Keys()), uint64(changed)}, Vals: []float32{}}, nil
	case proto.SaveChanged:
		if c.open != 2 {
			return kv.Batch{}, fmt.Errorf("the changed slots asked for outside a capture of them")
		}
		if k[2] < k[1] {
			return kv.Batch{}, fmt.Errorf("slots [%d, %d) are reversed", k[1], k[2])
		}
		n := uint64(c.store.Keys())
		return c.store.SnapshotChanged(int(min(k[1], n)), int(min(k[2], n))), nil
	case proto.SaveEnd:
		if c.open == 0 {
			return kv.Batch{}, fmt.Errorf("the end of a capture that is not open")
		}
		if k[1] == 0 || k[1] > math.MaxInt64 {
			return kv.Batch{}, fmt.Errorf("the end of a capture of round %d", int64(k[1]-1))
		}
		c.store.Track()
		c.since, c.open = int64(k[1]), 0
		return kv.Batch{Keys: []uint64{}, Vals: []float32{}}, nil
	}
	return kv.Batch{}, fmt.Errorf("request %v: want {begin, end} or a capture's {%d, %d or %d, …}", k, proto.SaveBegin, proto.SaveChanged, proto.SaveEnd)
}

// load installs a snapshot a worker sent with DataLoad (Store.Restore).
func (c *Core) load(r Request) []Reply {
	reply := Reply{Worker: r.Worker, ID: r.ID}
	c.since = 0 // the next capture is of the whole store
	if err := c.store.Restore(r.KV); err != nil {
		c.stats.Errors++
		reply.Err = fmt.Errorf("server %d: loading a snapshot: %w", c.cfg.Rank, err)
	}
	return append(c.out, reply)
}

// Quiet reports whether the core holds no push: none waits for its
// round (BSP), and no acknowledgement waits for the clock. Its store and
// clock are then the whole of its state that a copy needs (a backup's
// new copy, see replicate.go): under BSP between two rounds, under
// asynchronous training after every push.
func (c *Core) Quiet() bool {
	if c.clock.Pending() > 0 {
		return false
	}
	for w := range c.ids {
		if len(c.ids[w]) > 0 || len(c.held[w]) > 0 {
			return false
		}
	}
	return true
}

// Copyable reports whether a copy made of the store and the clock
// (restoreCopy) applies the core's updates as the core does: not for a
// core with declared key families or keys moved in by a new routing
// table, whose copy would lack their declarations.
func (c *Core) Copyable() bool { return len(c.fams) == 0 && c.version == 0 && c.old == nil }

// restoreCopy makes a new core the copy of a quiet one (Quiet) whose
// store's snapshot is snap, whose clock counted pushes pushes and done[w]
// rounds of worker w: it restores the store and replays the rounds on
// the clock, in O(store + rounds × workers). It fails, with the core
// to be dropped, on a malformed snapshot or rounds the clock would not
// count: a worker ahead of the others by more than the bounded delay,
// or, but under asynchronous training, beyond limit rounds (the caller's
// own clock bounds how far another server's can be: a worker pushes a
// round to every server, and starts the next only once the servers
// allow it).
func (c *Core) restoreCopy(snap kv.Batch, pushes uint64, done []int64, limit int64) error {
	if len(done) != c.cfg.Workers {
		return fmt.Errorf("server %d: a copy of %d workers' rounds, want %d", c.cfg.Rank, len(done), c.cfg.Workers)
	}
	if hi := slices.Max(done); c.cfg.Clock.Mode != clock.Async && hi > limit {
		return fmt.Errorf("server %d: a copy whose workers pushed %d rounds, at most %d here", c.cfg.Rank, hi, limit)
	}
	if err := c.store.Restore(snap); err != nil {
		return fmt.Errorf("server %d: a copy: %w", c.cfg.Rank, err)
	}
	if c.cfg.Clock.Mode == clock.Async {
		for w, d := range done {
			if d > 0 {
				c.clock.Push(w, d-1) // any later round: cannot fail
			}
		}
	} else {
		lo, hi := slices.Min(done), slices.Max(done)
		if hi-lo > int64(max(c.cfg.Clock.Delay(), 0)) {
			return fmt.Errorf("server %d: a copy whose workers pushed %d to %d rounds", c.cfg.Rank, lo, hi)
		}
		for r := range hi {
			for w, d := range done {
				if r < d {
					if _, err := c.clock.Push(w, r); err != nil {
						return fmt.Errorf("server %d: a copy: %w", c.cfg.Rank, err)
					}
				}
			}
		}
		if c.clock.Pending() > 0 {
			return fmt.Errorf("server %d: a copy whose clock holds %d pushes", c.cfg.Rank, c.clock.Pending())
		}
	}
	c.stats.Pushes = pushes
	return nil
}

// Incremental checkpoints: the slots written since the last capture.
//
// Once Track is called, the store marks every slot a push writes or
// creates, by blocks of slots of at least 16 values and of as many slots
// as keep the marks within MaxMarks bytes (blockShift), a byte a block,
// which a push stores without reading: a store per key where a push is
// applied at once (for the sparse sum, in a pass over the keys of its
// own after scatterAdd's), a store per marked slot when Flush applies
// BSP's round's sum. SnapshotChanged returns the snapshot (see above) of
// the slots of the marked blocks of a range, in slot order, and Track
// clears the marks for the next capture. Restoring a full snapshot, then
// the snapshots of the changed slots of each later capture in order
// (Restore keeps the slots a store has, and appends the new ones in the
// order given, which is the order they were created in), gives the
// snapshot of the later capture, key for key: the chain of an
// incremental checkpoint. A store that never called Track marks nothing
// and pays one predictable branch per key (per push for the sparse sum).

// Track starts, or starts again, the marks of the slots written: every
// slot is unmarked.
func (s *Store) Track() {
	if !s.tracking {
		s.tracking, s.block = true, blockShift(s.nslots, s.width)
	}
	clear(s.changed)
	s.trackSlots()
}

// blockShift returns the base-2 logarithm of the slots a mark stands for
// in a store of slots slots of width w: a block of at least 16 values
// (64 bytes, a cache line) at a uniform width, a slot at width 0, whose
// rows are as long as their keys want; and blocks large enough that the
// marks of the store's slots fit in MaxMarks bytes, so that they stay
// in the processor's cache and a sparse push's mark costs no miss beside
// the one of the value it adds to. A mark per slot of a store of 2^24
// keys of one value would be 16 MiB of marks, a miss per key; one per
// 64 slots is 256 KiB.
func blockShift(slots, w int) uint {
	sh := uint(0)
	for w > 0 && w<<sh < 16 || slots>>sh > MaxMarks {
		sh++
	}
	return sh
}

// MaxMarks bounds the marks (bytes) of a store's written blocks when it
// starts to track its writes (Store.Track; a store that grows past it
// keeps its blocks and grows its marks).
const MaxMarks = 1 << 18

// trackSlots gives the marks a byte for every block of slots.
func (s *Store) trackSlots() {
	if n := s.nslots>>s.block + 1; len(s.changed) < n {
		s.changed = append(s.changed, make([]byte, n-len(s.changed))...)
	}
}

// touch marks slot j (its block) as written, when the store tracks its
// writes.
func (s *Store) touch(j int) {
	if s.tracking {
		s.changed[j>>s.block] = 1
	}
}

// touchRange marks slots [j, k) as touch does, a byte per block: a
// dense push of n slots costs n/2^block marks when the store tracks its
// writes and nothing when it does not, where a touch per slot cost a
// call and a test per value (1M of them a 4 MB push).
func (s *Store) touchRange(j, k int) {
	if !s.tracking || j >= k {
		return
	}
	marks := s.changed[j>>s.block : (k-1)>>s.block+1]
	for i := range marks {
		marks[i] = 1
	}
}

// touchWord marks the slots of word wi of a bitmap of slots (the round's
// sum's).
func (s *Store) touchWord(wi int, word uint64) {
	for word != 0 {
		s.changed[(wi*64+bits.TrailingZeros64(word))>>s.block] = 1
		word &= word - 1
	}
}

// marked reports whether slot j's block is marked.
func (s *Store) marked(j int) bool { return s.changed[j>>s.block] != 0 }

// Tracking reports whether the store marks the slots written (Track).
func (s *Store) Tracking() bool { return s.tracking }

// Changed returns the number of slots in marked blocks (the slots
// SnapshotChanged gives); 0 when the store does not track. O(blocks).
func (s *Store) Changed() int {
	n := 0
	for b, m := range s.changed {
		if m != 0 {
			lo := b << s.block
			n += max(0, min(lo+1<<s.block, s.nslots)-lo)
		}
	}
	return n
}

// SnapshotChanged returns the snapshot of the marked slots of [lo,
// min(hi, Keys())), in slot order, in new arrays: the form of Snapshot,
// with only those slots. O(hi−lo) for the marks and the size of the
// answer; at a uniform width, runs of marked slots are copied whole.
func (s *Store) SnapshotChanged(lo, hi int) kv.Batch {
	hi = min(hi, s.Keys())
	// The runs [r[0], r[1]) of marked slots.
	var runs [][2]int
	n := 0
	for j := max(lo, 0); j < hi; j++ {
		if !s.marked(j) {
			j |= 1<<s.block - 1 // the rest of the block
			continue
		}
		if k := len(runs) - 1; k >= 0 && runs[k][1] == j {
			runs[k][1]++
		} else {
			runs = append(runs, [2]int{j, j + 1})
		}
		n++
	}
	keys := make([]uint64, 0, n)
	if s.ranged && len(s.extra) == 0 && len(s.fams) == 0 {
		for _, r := range runs {
			for j := r[0]; j < r[1]; j++ {
				keys = append(keys, s.lo+uint64(j))
			}
		}
	} else {
		all := s.sumKeys()
		for _, r := range runs {
			keys = append(keys, all[r[0]:r[1]]...)
		}
	}
	arrays := append([][]float32{s.vals}, s.state...)
	if s.width > 0 {
		vals := make([]float32, 0, len(arrays)*n*s.width)
		for _, arr := range arrays {
			for _, r := range runs {
				vals = append(vals, arr[r[0]*s.width:r[1]*s.width]...)
			}
		}
		return kv.Batch{Keys: keys, Vals: vals}
	}
	lens := make([]int32, 0, n)
	total := 0
	for _, r := range runs {
		for j := r[0]; j < r[1]; j++ {
			l := int32(0)
			if s.off[j] >= 0 {
				l = s.ln[j]
			}
			lens = append(lens, l)
			total += int(l)
		}
	}
	vals := make([]float32, 0, len(arrays)*total)
	for _, arr := range arrays {
		for _, r := range runs {
			for j := r[0]; j < r[1]; j++ {
				if o := s.off[j]; o >= 0 && s.ln[j] > 0 {
					vals = append(vals, arr[o:o+int(s.ln[j])]...)
				}
			}
		}
	}
	return kv.Batch{Keys: keys, Lens: lens, Vals: vals}
}
