package transport

import (
	"bytes"
	"fmt"

	"colo/kv"
)

// Key caching (Li et al., "Scaling Distributed Machine Learning with the
// Parameter Server", OSDI 2014, §3.5 "Key caching"; one of the filters of
// the training that seed 001 §5 accelerates): a worker pushes and pulls
// the same key lists to a server round after round (the features of its
// samples in full-batch training, the rows of an embedding, a PyTorch
// client's fixed parameter sets), and so does a server's answer. The
// receiver of a stream keeps a few key lists it was sent, and the sender
// then names the list instead of sending it again: a frame of 100,000
// raw keys and their values shrinks from 1.2 MB to 0.4 MB, and neither
// side copies the 0.8 MB of keys through the kernel.
//
// The sender decides everything and the receiver does what it is told,
// so that both agree without an eviction policy of their own: each
// stream (one connection, one way) has KeySlots slots. A frame whose key
// encoding is 3 or 4 (raw or gap-coded keys, see the frame layout) says
// "keep my keys in slot s", after emptying the slots of a 16-bit mask
// (the sender's evictions); one whose encoding is 2 carries no key bytes
// and says "my keys are slot s's". A slot is never written in place: a
// store puts a new array in it, so a message still holding the old keys
// keeps them, and decoded messages share the slot's array read-only
// (Message.Release leaves it alone). The bytes of the lists held, 8 a
// key, stay within FrameOptions.KeyCache on both sides: the sender
// evicts to stay within its own, the receiver refuses (ErrBadFrame) a
// store that would take it over its own, a reference to an empty slot
// and a count of keys that is not the slot's.
//
// A repeat is found exactly, never by a hash alone: a fingerprint of the
// length and eight sampled keys picks the candidate slot in O(1), and
// bytes.Equal over the whole list confirms it (about 40 µs for 100,000
// keys, less than reading them from a socket). A list is stored the
// second time its fingerprint is seen, so traffic whose key lists never
// repeat pays a fingerprint and a scan of 2·KeySlots small entries per
// frame and stores nothing; lists shorter than MinCachedKeys are never
// cached (their frame costs little anyway: a dense push's one key).
//
// The sender's table changes only once the frame that changes it has
// been written whole (Encoder.Sent): a frame that never left changes
// nothing. A new stream starts empty on both sides (Encoder.ResetKeys,
// and a new Decoder): transport/tcp resets its link's Encoder whenever
// it dials, so a slot is never named on a connection that did not carry
// its store.
const (
	// KeySlots is the number of key slots of a stream.
	KeySlots = 16
	// DefaultKeyCache is the usual FrameOptions.KeyCache: 64 MiB of
	// keys, 8M keys.
	DefaultKeyCache = 64 << 20
	// MinCachedKeys is the length below which a key list is never
	// cached.
	MinCachedKeys = 256
)

// fingerprint identifies a key list cheaply, but not exactly: the
// length and a mix of eight sampled keys.
type fingerprint struct {
	n   int
	mix uint64
}

// fingerprintOf samples keys at eight evenly spaced places, the first
// and last included: O(1).
func fingerprintOf(keys []uint64) fingerprint {
	n := len(keys)
	f := fingerprint{n: n}
	if n == 0 {
		return f
	}
	for i := range 8 {
		k := keys[i*(n-1)/7]
		f.mix = (f.mix^k)*0x100000001b3 + uint64(i)
	}
	return f
}

// keySlot is a sender's record of a slot.
type keySlot struct {
	keys    []uint64 // the sender's own copy; nil when empty
	fp      fingerprint
	nominal int    // bytes of the keys in the frame that stored them
	used    uint64 // last use, for eviction
}

// keyStore is a store the Encoder framed and has not been told was sent.
type keyStore struct {
	slot    int
	mask    uint16
	keys    []uint64 // the message's, copied when the store is sent
	fp      fingerprint
	nominal int
}

// senderKeys is an Encoder's table of its stream's key slots.
type senderKeys struct {
	limit  int // bytes
	slots  [KeySlots]keySlot
	total  int                       // bytes held in slots
	seen   [2 * KeySlots]fingerprint // lists sent once and not stored
	next   int                       // where seen is written next
	tick   uint64
	staged *keyStore
	store  keyStore // staged points here
}

// find returns the slot holding exactly keys, or -1.
func (c *senderKeys) find(fp fingerprint, keys []uint64) int {
	for s := range c.slots {
		sl := &c.slots[s]
		if sl.keys != nil && sl.fp == fp && bytes.Equal(asBytes(sl.keys), asBytes(keys)) {
			return s
		}
	}
	return -1
}

// sawBefore reports whether fp was seen and not stored; if not, it
// remembers fp, in place of the oldest.
func (c *senderKeys) sawBefore(fp fingerprint) bool {
	for i, f := range c.seen {
		if f == fp {
			c.seen[i] = fingerprint{}
			return true
		}
	}
	c.seen[c.next] = fp
	c.next = (c.next + 1) % len(c.seen)
	return false
}

// plan chooses the slot for a list of need bytes (an empty one, else the
// least recently used) and the other slots to empty so that the slots
// hold at most limit bytes after the store.
func (c *senderKeys) plan(need int) (int, uint16) {
	lru := func(skip uint16) int {
		best := -1
		for s := range c.slots {
			if skip&(1<<s) == 0 && c.slots[s].keys != nil && (best < 0 || c.slots[s].used < c.slots[best].used) {
				best = s
			}
		}
		return best
	}
	slot := -1
	for s := range c.slots {
		if c.slots[s].keys == nil {
			slot = s
			break
		}
	}
	if slot < 0 {
		slot = lru(0)
	}
	taken := uint16(1) << slot
	var mask uint16
	held := c.total - 8*len(c.slots[slot].keys)
	for held+need > c.limit {
		t := lru(taken | mask)
		if t < 0 {
			break // need ≤ limit, so held is 0 here
		}
		mask |= 1 << t
		held -= 8 * len(c.slots[t].keys)
	}
	return slot, mask
}

// commit applies the staged store, if any: its frame was sent.
func (c *senderKeys) commit() {
	st := c.staged
	if st == nil {
		return
	}
	c.staged = nil
	for s := range c.slots {
		if st.mask&(1<<s) != 0 || s == st.slot {
			c.total -= 8 * len(c.slots[s].keys)
			c.slots[s] = keySlot{}
		}
	}
	c.tick++
	c.slots[st.slot] = keySlot{keys: append([]uint64(nil), st.keys...), fp: st.fp, nominal: st.nominal, used: c.tick}
	c.total += 8 * len(st.keys)
	st.keys = nil
}

// reset empties the table, for a new stream.
func (c *senderKeys) reset() {
	*c = senderKeys{limit: c.limit}
}

// receiverKeys is a Decoder's table of its stream's key slots.
type receiverKeys struct {
	limit     int
	slots     [KeySlots][]uint64
	nominal   [KeySlots]int
	ascending [KeySlots]bool // the slot's keys strictly increase
	total     int
}

// lookup returns the keys of slot s for a frame of n keys, and the
// size of their encoding in the frame that stored them.
func (c *receiverKeys) lookup(s int, n uint32) ([]uint64, int, error) {
	if c.limit == 0 {
		return nil, 0, fmt.Errorf("%w: frame uses key slot %d, but key caching is off on this end", ErrBadFrame, s)
	}
	keys := c.slots[s]
	if keys == nil {
		return nil, 0, fmt.Errorf("%w: frame uses key slot %d, which is empty", ErrBadFrame, s)
	}
	if uint64(len(keys)) != uint64(n) {
		return nil, 0, fmt.Errorf("%w: frame has %d keys, key slot %d holds %d", ErrBadFrame, n, s, len(keys))
	}
	return keys, c.nominal[s], nil
}

// prepare empties the slots of mask and slot s, for a store of n keys
// in s, and checks that the store keeps the table within its limit.
func (c *receiverKeys) prepare(s int, mask uint16, n uint32) error {
	if c.limit == 0 {
		return fmt.Errorf("%w: frame stores its keys in key slot %d, but key caching is off on this end", ErrBadFrame, s)
	}
	mask |= 1 << s
	for t := range c.slots {
		if mask&(1<<t) != 0 {
			c.total -= 8 * len(c.slots[t])
			c.slots[t], c.nominal[t], c.ascending[t] = nil, 0, false
		}
	}
	if need := uint64(c.total) + 8*uint64(n); need > uint64(c.limit) {
		return fmt.Errorf("%w: storing %d keys in key slot %d takes the key cache to %d bytes, limit %d", ErrBadFrame, n, s, need, c.limit)
	}
	return nil
}

// keep stores keys, framed in nominal bytes, in slot s (after prepare),
// and returns whether they strictly increase: checked once here, so that
// the messages that name the slot need not be (Message.KeysAscending).
func (c *receiverKeys) keep(s int, keys []uint64, nominal int) bool {
	asc := kv.Batch{Keys: keys}.Validate() == nil
	c.slots[s], c.nominal[s], c.ascending[s] = keys, nominal, asc
	c.total += 8 * len(keys)
	return asc
}
