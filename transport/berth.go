package transport

import "sync"

// Berths are destinations that a receiver registers for the values of
// messages it expects, so that a Decoder reads those values straight
// into their final memory instead of into a buffer the receiver then
// copies from. A worker registers the part of the caller's array that a
// server's answer to a pull fills: the answer's values land where the
// application wants them, with no copy after the read.
//
// A berth is keyed by the sender and the message's request id, and is
// used by the first frame from that sender with that id whose number of
// values is exactly the berth's length and that has no lengths; any other
// frame is read as usual. The message delivered then has the berth as
// its KV.Vals, which Message.Release leaves alone. A berth is used once.
//
// Berths are safe for concurrent use. The zero value is ready to use.
type Berths struct {
	mu   sync.Mutex
	cond sync.Cond
	m    map[berthKey]*berth
}

type berthKey struct {
	from NodeID
	id   uint64
}

// berth is one registered destination.
type berth struct {
	dst []float32
	// reading is set while a Decoder reads into dst; abort, when not nil,
	// interrupts that read.
	reading bool
	abort   func()
}

// Expect registers dst for the values of the message from sender from
// with request id id. dst must not be read or written until the message
// arrives or Cancel returns; an empty dst registers nothing.
func (b *Berths) Expect(from NodeID, id uint64, dst []float32) {
	if len(dst) == 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.m == nil {
		b.m = make(map[berthKey]*berth)
		b.cond.L = &b.mu
	}
	b.m[berthKey{from, id}] = &berth{dst: dst}
}

// Cancel withdraws the berth of (from, id), if any. It returns once no
// read into it is in progress: a read that has started is interrupted,
// which breaks the link it arrives on (the frame cannot be finished
// elsewhere), so Cancel a berth in use only when giving up on the link.
// A berth whose message was delivered is gone already, and Cancel costs a
// map lookup.
func (b *Berths) Cancel(from NodeID, id uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.cancel(berthKey{from, id})
}

// CancelAll withdraws every berth, as Cancel does each.
func (b *Berths) CancelAll() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for k := range b.m {
		b.cancel(k)
	}
}

// Len returns the number of registered berths.
func (b *Berths) Len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.m)
}

// cancel withdraws the berth of k; b.mu is held.
func (b *Berths) cancel(k berthKey) {
	for {
		e := b.m[k]
		if e == nil {
			return
		}
		if !e.reading {
			delete(b.m, k)
			return
		}
		if abort := e.abort; abort != nil {
			e.abort = nil
			b.mu.Unlock()
			abort()
			b.mu.Lock()
			continue
		}
		b.cond.Wait()
	}
}

// claim returns the berth of (from, id) for a frame of n values and no
// lengths, marking it in use, or nil when there is none or it does not
// fit. abort interrupts the read; release must follow.
func (b *Berths) claim(from NodeID, id uint64, n int, abort func()) []float32 {
	b.mu.Lock()
	defer b.mu.Unlock()
	e := b.m[berthKey{from, id}]
	if e == nil || e.reading || len(e.dst) != n {
		return nil
	}
	e.reading, e.abort = true, abort
	return e.dst
}

// release ends the use of the berth of (from, id): it is gone.
func (b *Berths) release(from NodeID, id uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.m, berthKey{from, id})
	b.cond.Broadcast()
}
