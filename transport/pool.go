package transport

import (
	"math/bits"
	"sync"

	"colo/kv"
)

// Pool recycles the arrays of received messages: a receiver that calls
// Message.Release when done with a message lets the next message of a
// similar size reuse its memory instead of allocating and zeroing new
// memory, which for a stream of 4 MB messages costs as much as copying
// them. A Pool is safe for concurrent use; endpoints own one each. The
// zero value is ready to use.
//
// Arrays are kept in size classes four per power of two, so an array is
// at most 25% larger than asked for; arrays under 1 KiB are not pooled.
// Arrays of 4 MiB and more start on a 2 MiB boundary and are advised to
// transparent huge pages on Linux (makePooled), so that the kernel's copy
// of a dense push into one walks two pages per 4 MiB, not a thousand.
// Pooled memory is released to the garbage collector like any sync.Pool.
type Pool struct {
	bytes classes
	u64   classes
	f32   classes
	i32   classes
}

// numClasses covers arrays up to 2^40 elements.
const numClasses = 4 * 41

// classes are one sync.Pool per size class, created on first use.
type classes struct {
	once sync.Once
	p    []sync.Pool
}

// pools returns the class pools.
func (c *classes) pools() []sync.Pool {
	c.once.Do(func() { c.p = make([]sync.Pool, numClasses) })
	return c.p
}

// minPooled is the smallest array, in bytes, worth pooling.
const minPooled = 1 << 10

// classSize returns the capacity of class c.
func classSize(c int) int {
	p, s := c/4, c%4
	return 1<<(p-1) + (s+1)<<(p-3)
}

// classOf returns the smallest class whose size is at least n (n ≥ 8).
func classOf(n int) int {
	p := bits.Len(uint(n - 1)) // 2^(p-1) < n ≤ 2^p
	if n <= 1<<(p-1) {
		p--
	}
	step := 1 << (p - 3)
	s := (n - 1<<(p-1) + step - 1) / step // 1..4
	return 4*p + s - 1
}

// get returns an array of length n from the pool, or allocates one.
func get[T any](c *classes, n int, elem int) []T {
	if n == 0 {
		return nil
	}
	if n*elem < minPooled {
		return make([]T, n)
	}
	k := classOf(n)
	if k >= numClasses {
		return make([]T, n)
	}
	if v, ok := c.pools()[k].Get().(*[]T); ok {
		return (*v)[:n]
	}
	return makePooled[T](n, classSize(k), elem)
}

// put returns s to the pool.
func put[T any](c *classes, s []T, elem int) {
	n := cap(s)
	if n*elem < minPooled {
		return
	}
	k := classOf(n)
	if classSize(k) > n {
		k-- // the largest class that s can serve
	}
	if k < 0 || k >= numClasses {
		return
	}
	s = s[:0]
	c.pools()[k].Put(&s)
}

// Clone returns a deep copy of m whose arrays come from the pool; the
// copy's Release returns them.
func (p *Pool) Clone(m *Message) *Message {
	c := &Message{Header: m.Header, pool: p}
	if m.Body != nil {
		c.Body = get[byte](&p.bytes, len(m.Body), 1)
		copy(c.Body, m.Body)
	}
	if m.KV.Keys != nil {
		c.KV.Keys = get[uint64](&p.u64, len(m.KV.Keys), 8)
		copy(c.KV.Keys, m.KV.Keys)
	}
	if m.KV.Vals != nil {
		c.KV.Vals = get[float32](&p.f32, len(m.KV.Vals), 4)
		copy(c.KV.Vals, m.KV.Vals)
	}
	if m.KV.Lens != nil {
		c.KV.Lens = get[int32](&p.i32, len(m.KV.Lens), 4)
		copy(c.KV.Lens, m.KV.Lens)
	}
	return c
}

// CloneLanded is Clone for a message whose values are already where its
// receiver wants them (the receiver's own array, as a berth is, see
// Berths): the copy shares m's KV.Vals, which its Release leaves alone,
// and copies the rest.
func (p *Pool) CloneLanded(m *Message) *Message {
	t := &Message{Header: m.Header, Body: m.Body, KV: kv.Batch{Keys: m.KV.Keys, Lens: m.KV.Lens}}
	c := p.Clone(t)
	c.KV.Vals, c.landed = m.KV.Vals, true
	return c
}

// Release hands m's arrays back to the pool of the endpoint that received
// it, for reuse by later messages. It is optional: a message that is
// never released is garbage-collected as usual. After Release, m's
// arrays belong to the pool and must not be used; m itself is left
// empty. Release does nothing for messages not made by a pool. The values
// of a message delivered early (see Message.Early) go back only once they
// have all been read: a release before then leaves them to the Decoder
// and then to the garbage collector.
func (m *Message) Release() {
	p := m.pool
	if p == nil {
		return
	}
	put(&p.bytes, m.Body, 1)
	if !m.sharedKeys {
		put(&p.u64, m.KV.Keys, 8)
	}
	if !m.landed && m.settled() {
		put(&p.f32, m.KV.Vals, 4)
	}
	put(&p.i32, m.KV.Lens, 4)
	*m = Message{Header: m.Header}
}
