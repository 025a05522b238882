package transport

import (
	"context"
	"net"
	"sync"
	"unsafe"
)

// LentSender is implemented by an endpoint that can send a message whose
// values are lent by their owner (a view of a server's store) and give
// them back before the message has left: SendLent is Send, each of its
// writes of the frame through l.Write, from l's copy once Reclaim made
// one.
type LentSender interface {
	SendLent(ctx context.Context, to NodeID, m *Message, l *Lent) error
}

// Lent is the lending of a message's values (KV.Vals) to a LentSender.
// The owner may change the values once Reclaim has returned: Reclaim
// waits for the write handing some of them to the kernel, if any, and
// copies the rest, which the link then writes from the copy. So an
// asynchronous answer to a dense pull leaves without a copy of the
// store when nothing changes the store before it has left, and a push
// that comes meanwhile waits for at most one write's copy, not for the
// answer's wire time, and copies only what is not written yet. The
// values the peer receives are those of the store when the message was
// lent. Release returns the copy to the pool once the send ended.
type Lent struct {
	mu    sync.Mutex
	vals  []byte // the owner's values
	own   []byte // the copy, once reclaimed; len(vals), filled from sent on
	owned []float32
	sent  int  // bytes of vals handed to the kernel
	taken bool // reclaimed once the kernel had every value: no copy, vals dropped
	pool  *Pool
}

// NewLent returns the lending of vals, whose copy, when one is made,
// comes from pool (nil: allocated).
func NewLent(vals []float32, pool *Pool) *Lent {
	return &Lent{vals: floatBytes(vals), pool: pool}
}

// floatBytes returns the bytes of v.
func floatBytes(v []float32) []byte {
	if len(v) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(v))), 4*len(v))
}

// Reclaim gives the values back to their owner: once it returns, the
// link reads only its copy of them. It waits while a write (Write) is
// under way, and copies only what the writes have not taken. Calling
// it again does nothing.
func (l *Lent) Reclaim() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.own != nil || len(l.vals) == 0 {
		return
	}
	if l.sent == len(l.vals) {
		// The writes handed every value to the kernel: nothing is left
		// to copy, and with vals dropped no write reads the owner's
		// values again (offset finds nothing in them).
		l.vals, l.taken = nil, true
		return
	}
	n := len(l.vals) / 4
	if l.pool != nil {
		l.owned = get[float32](&l.pool.f32, n, 4)
	} else {
		l.owned = make([]float32, n)
	}
	l.own = floatBytes(l.owned)
	copy(l.own[l.sent:], l.vals[l.sent:])
}

// Detach reclaims the values (Reclaim) and points the buffers of bufs
// that lie in them at the copy, for a link that writes the frame
// otherwise than through Write.
func (l *Lent) Detach(bufs net.Buffers) {
	l.Reclaim()
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, b := range bufs {
		if off, ok := l.offset(b); ok && l.own != nil {
			bufs[i] = l.own[off : off+len(b)]
		}
	}
}

// Release returns the copy to the pool; the send must have ended. A
// Reclaim after it does nothing.
func (l *Lent) Release() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.owned != nil && l.pool != nil {
		put(&l.pool.f32, l.owned, 4)
	}
	l.owned, l.own, l.vals, l.taken = nil, nil, nil, false
}

// Reclaimed reports whether Reclaim gave the values back before
// Release: with a copy of what the writes had not taken, or with none
// once they had taken everything.
func (l *Lent) Reclaimed() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.own != nil || l.taken
}

// Write calls write once with bufs, under l's hold, the buffers of bufs
// that lie in the owner's values pointed at l's copy once Reclaim made
// one (in place), and records how far into the values write took them
// (it returns the bytes it took, from the start of bufs). A link calls
// it for each write of the frame of the lent message: one non-blocking
// writev of what is left, so that Reclaim waits for at most the copy of
// one writev into the kernel, and the frame costs the system calls it
// costs unlent.
func (l *Lent) Write(bufs net.Buffers, write func(net.Buffers) (int, error)) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.own != nil {
		for i, b := range bufs {
			if off, ok := l.offset(b); ok {
				bufs[i] = l.own[off : off+len(b)]
			}
		}
	}
	n, err := write(bufs)
	left := n
	for _, b := range bufs {
		if left <= 0 {
			break
		}
		k := min(left, len(b))
		if off, ok := l.offset(b); ok {
			l.sent = max(l.sent, off+k)
		}
		left -= k
	}
	return n, err
}

// offset returns where b lies in the owner's values, if it does.
func (l *Lent) offset(b []byte) (int, bool) {
	if len(b) == 0 || len(l.vals) == 0 {
		return 0, false
	}
	base := uintptr(unsafe.Pointer(unsafe.SliceData(l.vals)))
	p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	if p < base || p+uintptr(len(b)) > base+uintptr(len(l.vals)) {
		return 0, false
	}
	return int(p - base), true
}
