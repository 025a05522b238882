// Package mailbox holds the unbounded queues that connect the goroutines
// of a parameter-server node: a Box delivers what is pushed on a channel
// without ever blocking the pusher, and an Outbox sends messages to peers
// in order, one goroutine per peer, so that a slow or dead peer never
// blocks a node's driver and no cycle of full queues can deadlock two
// nodes.
//
// An Outbox bounds the send of a control message by a fixed timeout, but
// not the send of a data message: a push on a slow link takes as long as
// its bytes need, and only the end of the job (or Close) cancels it. A
// dead peer is the failure detector's to declare (heartbeats), not a
// per-message deadline's: a rate-limited link that still carries bytes is
// not a dead peer. Every failed send is reported on Errors, data or
// control, so that the node can end the job rather than wait for an
// answer that will never come.
package mailbox

import (
	"context"
	"sync"
	"time"

	"colo/transport"
)

// Box is an unbounded FIFO queue read from a channel. Items go straight
// into the channel's buffer while it has room, so the common case costs
// one channel operation; the overflow waits in a slice that a goroutine
// moves into the channel, in order.
type Box[T any] struct {
	mu      sync.Mutex
	queue   []T  // overflow, older than nothing in out
	holding bool // the goroutine holds an item it is about to send
	pushed  uint64
	wake    chan struct{}
	out     chan T
	done    chan struct{}
	exited  chan struct{}
	once    sync.Once
}

// boxBuffer is the capacity of a Box's channel.
const boxBuffer = 1024

// New starts a Box and its delivery goroutine.
func New[T any]() *Box[T] {
	b := &Box[T]{wake: make(chan struct{}, 1), out: make(chan T, boxBuffer), done: make(chan struct{}), exited: make(chan struct{})}
	go b.run()
	return b
}

// C returns the delivery channel, closed by Close.
func (b *Box[T]) C() <-chan T { return b.out }

// Push queues x. It never blocks.
func (b *Box[T]) Push(x T) {
	b.mu.Lock()
	b.pushed++
	if len(b.queue) == 0 && !b.holding {
		select {
		case <-b.done:
			b.mu.Unlock()
			return
		default:
		}
		select {
		case b.out <- x:
			b.mu.Unlock()
			return
		default:
		}
	}
	b.queue = append(b.queue, x)
	b.mu.Unlock()
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

// Pushed returns how many items were pushed so far. A reader that counts
// the items it took and finished with can tell, by comparing the two, that
// nothing is queued or in its hands: the test a caller makes before it
// does the reader's work itself on an item it would otherwise push.
func (b *Box[T]) Pushed() uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.pushed
}

// Len returns the number of queued items.
func (b *Box[T]) Len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.queue) + len(b.out)
}

// Close stops delivery, drops what is queued and closes the channel. It
// is idempotent and waits for the delivery goroutine.
func (b *Box[T]) Close() {
	b.once.Do(func() { close(b.done) })
	<-b.exited
}

func (b *Box[T]) run() {
	defer close(b.exited)
	defer func() {
		// Pushes check done under the lock before sending.
		b.mu.Lock()
		close(b.out)
		b.mu.Unlock()
	}()
	var zero T
	for {
		b.mu.Lock()
		var x T
		ok := len(b.queue) > 0
		if ok {
			x = b.queue[0]
			b.queue[0] = zero
			b.queue = b.queue[1:]
			b.holding = true
		}
		b.mu.Unlock()
		if !ok {
			select {
			case <-b.wake:
				continue
			case <-b.done:
				return
			}
		}
		select {
		case b.out <- x:
		case <-b.done:
			return
		}
		b.mu.Lock()
		b.holding = false
		b.mu.Unlock()
	}
}

// SendError is a failed send of an Outbox.
type SendError struct {
	To transport.NodeID
	// Data is set for a data message (transport.TypeData), clear for a
	// control message.
	Data bool
	Err  error
}

// Outbox sends messages through an endpoint, in order per peer, without
// blocking the caller.
type Outbox struct {
	ep       transport.Endpoint
	timeout  time.Duration
	ctx      context.Context // control messages: ends with Close
	stop     context.CancelFunc
	data     context.Context // data messages: ends with the job or Close
	stopData context.CancelFunc
	errs     *Box[SendError]
	wg       sync.WaitGroup

	mu    sync.Mutex
	peers map[transport.NodeID]*Box[*transport.Message]
	busy  int // messages posted, not yet sent
	// pbusy counts them per peer; flushing counts the FlushPeer calls
	// waiting.
	pbusy    map[transport.NodeID]int
	flushing int
	// posted and taken count, per peer, the messages posted and the
	// ones run took; those numbered below cut[peer] were abandoned
	// (Abandon), whose cancelling of pctx[peer] ends the data send in
	// progress to it.
	posted, taken, cut map[transport.NodeID]uint64
	pctx               map[transport.NodeID]peerContext
	idle               *sync.Cond
	closed             bool
	// idleC is closed when busy falls to 0 and made anew when it rises
	// from 0 (Idle).
	idleC chan struct{}
}

// NewOutbox returns an Outbox for ep whose data messages are cancelled
// only by Close; see NewOutboxContext.
func NewOutbox(ep transport.Endpoint, timeout time.Duration) *Outbox {
	return NewOutboxContext(ep, context.Background(), timeout)
}

// NewOutboxContext returns an Outbox for ep. The send of a control
// message is bounded by timeout (0 for none). The send of a data message
// has no deadline: it lasts as long as the link takes to carry the
// message, however slow, and fails only when the transport gives up on
// the link (the peer closed it, it broke, the frame is too large); it is
// cancelled when job ends or the Outbox is closed. A cancelled send is
// not an error.
func NewOutboxContext(ep transport.Endpoint, job context.Context, timeout time.Duration) *Outbox {
	ctx, stop := context.WithCancel(context.Background())
	data, stopData := context.WithCancel(job)
	o := &Outbox{
		ep: ep, timeout: timeout, ctx: ctx, stop: stop, data: data, stopData: stopData,
		errs: New[SendError](), peers: make(map[transport.NodeID]*Box[*transport.Message]),
		posted: make(map[transport.NodeID]uint64), taken: make(map[transport.NodeID]uint64),
		cut: make(map[transport.NodeID]uint64), pctx: make(map[transport.NodeID]peerContext),
	}
	o.idle = sync.NewCond(&o.mu)
	o.idleC = make(chan struct{})
	close(o.idleC)
	return o
}

// Idle returns a channel closed once every message posted so far has
// been sent (or failed): at once when none is pending.
func (o *Outbox) Idle() <-chan struct{} {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.idleC
}

// Errors returns the channel of failed sends.
func (o *Outbox) Errors() <-chan SendError { return o.errs.C() }

// Post queues m for peer to. It never blocks; after Close it drops m.
func (o *Outbox) Post(to transport.NodeID, m *transport.Message) {
	o.mu.Lock()
	if o.closed {
		o.mu.Unlock()
		return
	}
	b := o.peers[to]
	if b == nil {
		b = New[*transport.Message]()
		o.peers[to] = b
		o.wg.Add(1)
		go o.run(to, b)
	}
	if o.busy == 0 {
		o.idleC = make(chan struct{})
	}
	o.busy++
	if o.pbusy == nil {
		o.pbusy = make(map[transport.NodeID]int)
	}
	o.pbusy[to]++
	o.posted[to]++
	o.mu.Unlock()
	b.Push(m)
}

// run sends the messages for one peer.
func (o *Outbox) run(to transport.NodeID, b *Box[*transport.Message]) {
	defer o.wg.Done()
	for m := range b.C() {
		data := m.Type == transport.TypeData
		o.mu.Lock()
		o.taken[to]++
		abandoned := o.taken[to] <= o.cut[to]
		pc, ok := o.pctx[to]
		if !ok {
			// One context per peer until an Abandon cancels it.
			pc.ctx, pc.cancel = context.WithCancel(o.data)
			o.pctx[to] = pc
		}
		o.mu.Unlock()
		var err error
		switch {
		case data && abandoned:
		case data:
			err = o.ep.Send(pc.ctx, to, m)
			if err != nil && pc.ctx.Err() == nil {
				o.errs.Push(SendError{To: to, Data: true, Err: err})
			}
		default:
			ctx, cancel := o.ctx, context.CancelFunc(func() {})
			if o.timeout > 0 {
				ctx, cancel = context.WithTimeout(o.ctx, o.timeout)
			}
			err = o.ep.Send(ctx, to, m)
			cancel()
			if err != nil && o.ctx.Err() == nil {
				o.errs.Push(SendError{To: to, Err: err})
			}
		}
		o.mu.Lock()
		o.busy--
		o.pbusy[to]--
		if o.busy == 0 {
			close(o.idleC)
		}
		if o.busy == 0 || o.flushing > 0 && o.pbusy[to] == 0 {
			o.idle.Broadcast()
		}
		o.mu.Unlock()
	}
}

// Flush waits until every posted message was sent (or failed), at most d.
func (o *Outbox) Flush(d time.Duration) {
	t := time.AfterFunc(d, func() {
		o.mu.Lock()
		o.idle.Broadcast()
		o.mu.Unlock()
	})
	defer t.Stop()
	deadline := time.Now().Add(d)
	o.mu.Lock()
	for o.busy > 0 && time.Now().Before(deadline) {
		o.idle.Wait()
	}
	o.mu.Unlock()
}

// FlushPeer waits until every message posted to peer to was sent (or
// failed), at most d, and reports whether they were.
func (o *Outbox) FlushPeer(to transport.NodeID, d time.Duration) bool {
	t := time.AfterFunc(d, func() {
		o.mu.Lock()
		o.idle.Broadcast()
		o.mu.Unlock()
	})
	defer t.Stop()
	deadline := time.Now().Add(d)
	o.mu.Lock()
	defer o.mu.Unlock()
	o.flushing++
	for o.pbusy[to] > 0 && time.Now().Before(deadline) {
		o.idle.Wait()
	}
	o.flushing--
	return o.pbusy[to] == 0
}

// Abandon gives up the data messages posted to peer to so far: the send
// in progress is cancelled (a send blocked on a peer that stopped
// reading returns at once) and the ones queued are dropped, none of them
// reported as failed; control messages still go. Messages posted after
// it are sent as usual. It does not block.
func (o *Outbox) Abandon(to transport.NodeID) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.cut[to] = o.posted[to]
	if pc, ok := o.pctx[to]; ok {
		pc.cancel()
		delete(o.pctx, to)
	}
}

// peerContext is the context of the data sends to one peer, derived
// from the Outbox's data context.
type peerContext struct {
	ctx    context.Context
	cancel context.CancelFunc
}

// Close drops what is queued, cancels sends in progress and waits for the
// peer goroutines. It is idempotent.
func (o *Outbox) Close() {
	o.mu.Lock()
	if o.closed {
		o.mu.Unlock()
		return
	}
	o.closed = true
	peers := o.peers
	o.mu.Unlock()
	o.stop()
	o.stopData()
	for _, b := range peers {
		b.Close()
	}
	o.wg.Wait()
	o.errs.Close()
}
