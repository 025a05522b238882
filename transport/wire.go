package transport

import (
	"math"
	"sync"
	"time"
)

// DefaultQuantum is the bytes a flow sends in its turn on a Wire unless
// its maker says otherwise: one full Ethernet frame (a 1500-byte MTU and
// its 14-byte header), the quantum of Linux's default queueing discipline
// (fq_codel).
const DefaultQuantum = 1514

// Flow is a connection on a Wire: the directed Flow of endpoints whose
// bytes it carries, one stream in order.
type Flow struct{ From, To NodeID }

// fq is the arithmetic of one shared wire (a host's egress or ingress, a
// path between hosts): a deficit round robin over the flows that have
// bytes to send, each taking up to quantum bytes in its turn, at rate
// bytes per second in all. A flow is one connection, a directed Flow of
// endpoints; its messages go in order, as bytes of one stream, so one
// ends within a turn and the next goes on in the same turn. The wire
// never idles while a flow has bytes, and nothing takes more than its
// size: the bytes through it and its rate are exact.
//
// It holds no clock and no lock: add and advance take the time, and
// next says when the next message will have passed; Wire drives it. A
// call costs O(k) for k flows with bytes queued, plus O(k) for each
// message that passes; never a step per quantum.
type fq struct {
	rate    float64 // bytes per second
	quantum int64

	at     time.Time // the moment the state holds for
	credit float64   // bytes paid for by at and not yet sent, < 1
	flows  []*flow   // with bytes queued, in turn order; flows[0] sends
	left   int64     // bytes left in flows[0]'s turn, > 0
	byKey  map[Flow]*flow
}

// flow is a connection's queue on a wire.
type flow struct {
	key   Flow
	queue []*part // head first; the head's rem is what is left of it
}

// part is a message's passage through one wire.
type part struct {
	rem  int64
	done func(at time.Time) // called once, with the moment it passed
}

func newFQ(rate float64, quantum int) *fq {
	return &fq{rate: rate, quantum: int64(quantum), byKey: make(map[Flow]*flow)}
}

// add advances to now and queues size bytes on flow key; done is called
// with the moment the last of them has passed (from a later call of
// advance or add).
func (q *fq) add(now time.Time, key Flow, size int, done func(time.Time)) {
	q.advance(now)
	f := q.byKey[key]
	if f == nil {
		f = &flow{key: key}
		q.byKey[key] = f
	}
	if len(f.queue) == 0 {
		if len(q.flows) == 0 {
			q.left = q.quantum
		}
		q.flows = append(q.flows, f)
	}
	f.queue = append(f.queue, &part{rem: int64(size), done: done})
}

// eps is the shortfall in bytes within which a message counts as passed:
// the rounding of a time to the nanosecond must not leave a message a
// hair short of the moment next returned for it.
const eps = 1e-6

// advance sends what the wire carries from q.at to now, calling the done
// of each message that passes, with its moment. A now before q.at
// changes nothing.
func (q *fq) advance(now time.Time) {
	if !now.After(q.at) {
		return
	}
	if len(q.flows) == 0 {
		q.at, q.credit = now, 0
		return
	}
	from, credit := q.at, q.credit
	budget := credit + float64(now.Sub(from))*q.rate/1e9
	var spent int64
	for len(q.flows) > 0 {
		p, f := q.first()
		if float64(p) > budget+eps {
			b := int64(budget)
			q.serve(b)
			budget -= float64(b)
			break
		}
		q.serve(p)
		spent += p
		budget = max(0, budget-float64(p))
		q.pass(f, q.moment(from, credit, spent))
	}
	q.at = now
	q.credit = 0
	if len(q.flows) > 0 {
		q.credit = min(budget, 1)
	}
}

// moment returns when the wire, which had credit bytes paid for at from,
// has sent spent bytes more, rounded up to the nanosecond.
func (q *fq) moment(from time.Time, credit float64, spent int64) time.Time {
	ns := math.Ceil((float64(spent) - credit) * 1e9 / q.rate)
	return from.Add(time.Duration(max(0, ns)))
}

// next returns the moment the next message will have passed if nothing
// more is added, and false when no message is queued.
func (q *fq) next() (time.Time, bool) {
	if len(q.flows) == 0 {
		return time.Time{}, false
	}
	p, _ := q.first()
	return q.moment(q.at, q.credit, p), true
}

// first returns the bytes the wire sends until the first head of a queue
// has passed, and its flow. Until then every flow takes whole turns (one
// that ended its head within a turn would pass first), so flow i of k
// (in turn order, flows[0] sending with left bytes of its turn), whose
// head has r bytes left, passes after
//
//	r                                  i = 0, r ≤ left
//	left + (n−1)kQ + (k−1)Q + r−left−(n−1)Q,  i = 0, n = ⌈(r−left)/Q⌉
//	left + (n−1)kQ + (i−1)Q + r−(n−1)Q,       i > 0, n = ⌈r/Q⌉
//
// bytes, Q the quantum: O(k).
func (q *fq) first() (int64, *flow) {
	k, Q := int64(len(q.flows)), q.quantum
	best, at := int64(math.MaxInt64), 0
	for i, f := range q.flows {
		r := f.queue[0].rem
		var p int64
		switch {
		case i == 0 && r <= q.left:
			p = r
		case i == 0:
			n := (r - q.left + Q - 1) / Q
			p = q.left + (n-1)*k*Q + (k-1)*Q + r - q.left - (n-1)*Q
		default:
			n := (r + Q - 1) / Q
			p = q.left + (n-1)*k*Q + int64(i-1)*Q + r - (n-1)*Q
		}
		if p < best {
			best, at = p, i
		}
	}
	return best, q.flows[at]
}

// serve sends b bytes, no more than first's: no head passes before the
// last of them. O(k).
func (q *fq) serve(b int64) {
	for b > 0 {
		f := q.flows[0]
		if b < q.left {
			f.queue[0].rem -= b
			q.left -= b
			return
		}
		f.queue[0].rem -= q.left
		b -= q.left
		q.rotate()
		if k := int64(len(q.flows)); b >= k*q.quantum {
			m := b / (k * q.quantum)
			for _, g := range q.flows {
				g.queue[0].rem -= m * q.quantum
			}
			b -= m * k * q.quantum
		}
	}
}

// rotate ends flows[0]'s turn: it goes last, and the next flow's turn
// begins.
func (q *fq) rotate() {
	f := q.flows[0]
	copy(q.flows, q.flows[1:])
	q.flows[len(q.flows)-1] = f
	q.left = q.quantum
}

// pass takes flow f's head, which has been sent, off its queue and calls
// its done. A flow left without bytes leaves the turns; if it was
// sending, the next flow's turn begins, and if not, the turn in progress
// goes on.
func (q *fq) pass(f *flow, at time.Time) {
	h := f.queue[0]
	f.queue[0] = nil
	f.queue = f.queue[1:]
	if len(f.queue) == 0 {
		f.queue = nil
		delete(q.byKey, f.key)
		for i, g := range q.flows {
			if g == f {
				q.flows = append(q.flows[:i], q.flows[i+1:]...)
				if i == 0 {
					q.left = q.quantum
				}
				break
			}
		}
	}
	h.done(at)
}

// Wire is a shared wire of a network, a host's network interface one
// way or the path between two hosts, as transport/mem and transport/tcp
// emulate it: the flows (connections) with bytes queued on it take turns
// of quantum bytes, a deficit round robin, at rate bytes per second in
// all. A message waits for what its own flow queued before it and for
// one turn of each other busy flow, not for whole messages of others;
// the wire never idles while a flow has bytes, and the bytes through it
// and its rate are exact. The arithmetic is in closed form: O(k) per
// message for k busy flows, never a step per turn.
//
// It reads the clock only through package time, so it runs on a
// testing/synctest bubble's fake clock. An idle Wire holds no goroutine
// and no pending timer. It is safe for concurrent use.
type Wire struct {
	mu      sync.Mutex
	q       *fq
	timer   *time.Timer
	carried int64
}

// NewWire returns an idle wire of rate bytes per second whose flows take
// turns of quantum bytes (DefaultQuantum: one Ethernet frame). It panics
// unless rate > 0 and quantum ≥ 1, which are programming errors
// (configurations are validated before).
func NewWire(rate float64, quantum int) *Wire {
	if !(rate > 0) || quantum < 1 {
		panic("transport: NewWire needs rate > 0 and quantum ≥ 1")
	}
	return &Wire{q: newFQ(rate, quantum)}
}

// Rate returns the rate in bytes per second.
func (c *Wire) Rate() float64 { return c.q.rate }

// Carried returns the bytes queued on the wire since it was made: those
// it carried and those it still carries.
func (c *Wire) Carried() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.carried
}

// Add queues size bytes of flow at now, after the bytes flow queued
// before; done is called, under the wire's lock (it must not call the
// wire), with the moment the last of them has passed. Bytes of one flow
// added in several parts pass as one stream: their turns are those of
// one message of their sum.
func (c *Wire) Add(now time.Time, flow Flow, size int, done func(time.Time)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.carried += int64(size)
	c.q.add(now, flow, size, done)
	c.schedule()
}

// fire advances the wire to the clock's now.
func (c *Wire) fire() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.q.advance(time.Now())
	c.schedule()
}

// schedule sets the timer for the next message to pass; c.mu is held.
func (c *Wire) schedule() {
	at, ok := c.q.next()
	if !ok {
		if c.timer != nil {
			c.timer.Stop()
		}
		return
	}
	d := max(time.Until(at), 0)
	if c.timer == nil {
		c.timer = time.AfterFunc(d, c.fire)
	} else {
		c.timer.Reset(d)
	}
}
