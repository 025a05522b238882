// Package peers holds the bookkeeping shared by the transport
// implementations: per-peer traffic counters and the queue of link
// failures.
package peers

import (
	"sync"
	"sync/atomic"

	"colo/transport"
)

// Counters are one link's traffic counters, updated atomically.
type Counters struct {
	msgsSent, bytesSent atomic.Uint64
	msgsRecv, bytesRecv atomic.Uint64
	dropped             atomic.Uint64
}

// Sent counts one frame of n bytes sent.
func (c *Counters) Sent(n int) {
	c.msgsSent.Add(1)
	c.bytesSent.Add(uint64(n))
}

// Recv counts one frame of n bytes received.
func (c *Counters) Recv(n int) {
	c.msgsRecv.Add(1)
	c.bytesRecv.Add(uint64(n))
}

// Dropped counts one message lost by a link model.
func (c *Counters) Dropped() { c.dropped.Add(1) }

// Table maps peers to their counters. The zero value is ready to use.
type Table struct {
	mu sync.Mutex
	m  map[transport.NodeID]*Counters
}

// Get returns the counters of peer, creating them.
func (t *Table) Get(peer transport.NodeID) *Counters {
	t.mu.Lock()
	defer t.mu.Unlock()
	c := t.m[peer]
	if c == nil {
		if t.m == nil {
			t.m = make(map[transport.NodeID]*Counters)
		}
		c = new(Counters)
		t.m[peer] = c
	}
	return c
}

// Snapshot returns the current counters.
func (t *Table) Snapshot() transport.Stats {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := transport.Stats{Links: make(map[transport.NodeID]transport.LinkStats, len(t.m))}
	for p, c := range t.m {
		s.Links[p] = transport.LinkStats{
			MsgsSent: c.msgsSent.Load(), BytesSent: c.bytesSent.Load(),
			MsgsRecv: c.msgsRecv.Load(), BytesRecv: c.bytesRecv.Load(),
			Dropped: c.dropped.Load(),
		}
	}
	return s
}

// DownQueue delivers link failures on a channel without ever blocking the
// reporter or dropping a report: reports wait in an unbounded queue until
// the consumer takes them.
type DownQueue struct {
	mu     sync.Mutex
	queue  []*transport.PeerError
	wake   chan struct{}
	out    chan *transport.PeerError
	done   chan struct{}
	exited chan struct{}
	once   sync.Once
}

// NewDownQueue starts a queue and its delivery goroutine.
func NewDownQueue() *DownQueue {
	q := &DownQueue{
		wake:   make(chan struct{}, 1),
		out:    make(chan *transport.PeerError),
		done:   make(chan struct{}),
		exited: make(chan struct{}),
	}
	go q.run()
	return q
}

// C returns the delivery channel, closed by Close.
func (q *DownQueue) C() <-chan *transport.PeerError { return q.out }

// Push queues e; after Close it does nothing.
func (q *DownQueue) Push(e *transport.PeerError) {
	q.mu.Lock()
	q.queue = append(q.queue, e)
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// Close stops delivery, discards what is queued, closes the channel and
// waits for the delivery goroutine. It is idempotent.
func (q *DownQueue) Close() {
	q.once.Do(func() { close(q.done) })
	<-q.exited
}

// run moves queued reports to the channel.
func (q *DownQueue) run() {
	defer close(q.exited)
	defer close(q.out)
	for {
		q.mu.Lock()
		var e *transport.PeerError
		if len(q.queue) > 0 {
			e = q.queue[0]
			q.queue[0] = nil
			q.queue = q.queue[1:]
		}
		q.mu.Unlock()
		if e == nil {
			select {
			case <-q.wake:
				continue
			case <-q.done:
				return
			}
		}
		select {
		case q.out <- e:
		case <-q.done:
			return
		}
	}
}
