// Package mem is an in-memory network of transport.Endpoints for tests,
// examples and single-process clusters, with a seeded model of each
// link's bandwidth, latency, loss and partitions.
//
// A Network connects endpoints attached to it by node id. Each ordered
// pair of endpoints has a link with a Link model:
//
//   - Bandwidth: a message of s bytes (its transport.FrameSize) occupies
//     the link for s/Bandwidth seconds; senders on one link wait their
//     turn, as on a wire.
//   - Latency: a message arrives Latency after it left the link, in
//     order.
//   - Drop: each message is lost with this probability, decided by a
//     random stream of the link seeded from Config.Seed and the two node
//     ids, so the n-th message on a link is lost or not independently of
//     what other links do.
//   - Cut: every message is lost (a partition); Cut and Heal set it in
//     both directions.
//
// Lost messages vanish silently, as on a real network: Send succeeds and
// the layer above must notice through its timeouts and heartbeats. A
// closed endpoint, in contrast, is reported: Send to it fails with a
// *transport.PeerError wrapping transport.ErrPeerClosed, and every
// endpoint that had a link with it receives that error on Down. Messages
// already sent by an endpoint that closes are still delivered.
//
// Messages are copied on Send, so sender and receiver never share arrays,
// and counted in frame bytes exactly as on TCP. Time is read only through
// package time: inside a testing/synctest bubble, latency and bandwidth
// run on the bubble's fake clock and a test is deterministic, to the
// nanosecond and the dropped message.
//
//	net, _ := mem.New(mem.DefaultConfig())
//	a, _ := net.Attach(1)
//	b, _ := net.Attach(2)
//	net.SetLink(1, 2, mem.Link{Bandwidth: 125e6, Latency: time.Millisecond})
//	a.Send(ctx, 2, msg)
//	got := <-b.Recv()
package mem

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"colo/transport"
	"colo/transport/internal/peers"
)

// Link is the model of one direction of a link.
type Link struct {
	// Bandwidth in bytes per second; 0 is unlimited.
	Bandwidth float64
	// Latency is the one-way delay added to every message.
	Latency time.Duration
	// Drop is the probability that a message is lost, in [0, 1].
	Drop float64
	// Cut loses every message.
	Cut bool
}

// Validate checks l; errors name the field and the bound.
func (l Link) Validate() error {
	if !(l.Bandwidth >= 0) || l.Bandwidth > 1e18 {
		return fmt.Errorf("Bandwidth %v out of range [0, 1e18]", l.Bandwidth)
	}
	if l.Latency < 0 {
		return fmt.Errorf("Latency %v is negative", l.Latency)
	}
	if !(l.Drop >= 0 && l.Drop <= 1) {
		return fmt.Errorf("Drop %v out of range [0, 1]", l.Drop)
	}
	return nil
}

// Config configures a Network.
type Config struct {
	// Seed seeds the links' loss decisions.
	Seed uint64
	// Frame sets the frame limit and the key encoding that sizes are
	// counted with.
	Frame transport.FrameOptions
	// InboxSize is the capacity of each endpoint's Recv channel.
	InboxSize int
	// QueueSize is the number of messages a link holds in flight (sent,
	// not yet received) before Send blocks.
	QueueSize int
	// Link is the model of every link not set with SetLink.
	Link Link
}

// DefaultConfig returns a configuration of ideal links.
func DefaultConfig() Config {
	return Config{Seed: 1, InboxSize: 256, QueueSize: 1024}
}

// Validate checks c; errors name the field and the bound.
func (c Config) Validate() error {
	if err := c.Frame.Validate(); err != nil {
		return fmt.Errorf("mem: Frame.%w", err)
	}
	if c.InboxSize < 0 {
		return fmt.Errorf("mem: InboxSize %d is negative", c.InboxSize)
	}
	if c.QueueSize < 1 {
		return fmt.Errorf("mem: QueueSize %d, at least 1", c.QueueSize)
	}
	if err := c.Link.Validate(); err != nil {
		return fmt.Errorf("mem: Link.%w", err)
	}
	return nil
}

// pair is a directed link.
type pair struct{ from, to transport.NodeID }

// Network is an in-memory network. It is safe for concurrent use.
type Network struct {
	cfg Config
	max int

	mu     sync.Mutex
	eps    map[transport.NodeID]*Endpoint // attached, not closed
	known  map[transport.NodeID]bool      // ever attached
	links  map[pair]*link
	models map[pair]Link
}

// New returns an empty network.
func New(cfg Config) (*Network, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	max := cfg.Frame.MaxFrame
	if max == 0 {
		max = transport.DefaultMaxFrame
	}
	return &Network{
		cfg:    cfg,
		max:    max,
		eps:    make(map[transport.NodeID]*Endpoint),
		known:  make(map[transport.NodeID]bool),
		links:  make(map[pair]*link),
		models: make(map[pair]Link),
	}, nil
}

// Attach returns a new endpoint with the given id. An id may be attached
// again after its endpoint is closed (a restarted node).
func (n *Network) Attach(id transport.NodeID) (*Endpoint, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.eps[id] != nil {
		return nil, fmt.Errorf("mem: node %d is already attached", id)
	}
	ctx, stop := context.WithCancel(context.Background())
	e := &Endpoint{
		net:    n,
		id:     id,
		inbox:  make(chan *transport.Message, n.cfg.InboxSize),
		down:   peers.NewDownQueue(),
		ctx:    ctx,
		stop:   stop,
		isDown: make(map[transport.NodeID]bool),
	}
	n.eps[id] = e
	n.known[id] = true
	return e, nil
}

// SetLink sets the model of the link from one node to another, including
// links not yet used and links of nodes not yet attached.
func (n *Network) SetLink(from, to transport.NodeID, l Link) error {
	if err := l.Validate(); err != nil {
		return fmt.Errorf("mem: link %d→%d: %w", from, to, err)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.models[pair{from, to}] = l
	if lk := n.links[pair{from, to}]; lk != nil {
		lk.setModel(l)
	}
	return nil
}

// Link returns the model of the link from one node to another.
func (n *Network) Link(from, to transport.NodeID) Link {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.model(pair{from, to})
}

// model returns a link's model; n.mu is held.
func (n *Network) model(p pair) Link {
	if l, ok := n.models[p]; ok {
		return l
	}
	return n.cfg.Link
}

// Cut partitions a and b: messages between them are lost both ways.
func (n *Network) Cut(a, b transport.NodeID) { n.setCut(a, b, true) }

// Heal undoes Cut.
func (n *Network) Heal(a, b transport.NodeID) { n.setCut(a, b, false) }

// setCut sets Cut on both directions between a and b.
func (n *Network) setCut(a, b transport.NodeID, cut bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, p := range []pair{{a, b}, {b, a}} {
		l := n.model(p)
		l.Cut = cut
		n.models[p] = l
		if lk := n.links[p]; lk != nil {
			lk.setModel(l)
		}
	}
}

// Close closes every attached endpoint.
func (n *Network) Close() error {
	n.mu.Lock()
	eps := make([]*Endpoint, 0, len(n.eps))
	for _, e := range n.eps {
		eps = append(eps, e)
	}
	n.mu.Unlock()
	for _, e := range eps {
		e.Close()
	}
	return nil
}

// link returns the link from src to node to, creating it and starting its
// delivery goroutine.
func (n *Network) link(src *Endpoint, to transport.NodeID) (*link, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	dst := n.eps[to]
	if dst == nil {
		err := transport.ErrUnknownPeer
		if n.known[to] {
			err = transport.ErrPeerClosed
		}
		return nil, &transport.PeerError{Peer: to, Op: "send", Err: err}
	}
	p := pair{src.id, to}
	l := n.links[p]
	if l == nil || l.src != src || l.dst != dst {
		l = &link{
			src:   src,
			dst:   dst,
			sem:   make(chan struct{}, 1),
			queue: make(chan item, n.cfg.QueueSize),
			rng:   rand.New(rand.NewPCG(n.cfg.Seed, uint64(src.id)<<32|uint64(to))),
			sent:  src.stats.Get(to),
			recv:  dst.stats.Get(src.id),
		}
		l.setModel(n.model(p))
		n.links[p] = l
		src.up(to)
		dst.up(src.id)
		dst.inWG.Add(1)
		go l.run()
	}
	return l, nil
}

// detach removes e from the network and returns its links and the peers
// it had links with.
func (n *Network) detach(e *Endpoint) (out []*link, others []*Endpoint) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.eps[e.id] == e {
		delete(n.eps, e.id)
	}
	seen := map[*Endpoint]bool{e: true}
	for p, l := range n.links {
		if l.src != e && l.dst != e {
			continue
		}
		delete(n.links, p)
		if l.src == e {
			out = append(out, l)
		}
		for _, o := range []*Endpoint{l.src, l.dst} {
			if !seen[o] {
				seen[o] = true
				others = append(others, o)
			}
		}
	}
	return out, others
}

// item is a message in flight.
type item struct {
	m    *transport.Message
	size int
	due  time.Time
}

// link is one direction between two endpoints.
type link struct {
	src, dst *Endpoint
	sem      chan struct{} // one slot: serialises senders, owns rng
	queue    chan item     // closed when src closes
	rng      *rand.Rand
	sent     *peers.Counters
	recv     *peers.Counters

	mu     sync.Mutex
	model  Link
	bucket *transport.TokenBucket
}

// setModel changes the link's model.
func (l *link) setModel(m Link) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if m.Bandwidth != l.model.Bandwidth || l.bucket == nil {
		l.bucket = nil
		if m.Bandwidth > 0 {
			l.bucket = transport.NewTokenBucket(m.Bandwidth, 0)
		}
	}
	l.model = m
}

// snapshot returns the model and bucket.
func (l *link) snapshot() (Link, *transport.TokenBucket) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.model, l.bucket
}

// run delivers the link's messages in order until the queue is closed and
// drained or the receiver closes.
func (l *link) run() {
	defer l.dst.inWG.Done()
	done := l.dst.ctx.Done()
	var timer *time.Timer
	for {
		var it item
		var ok bool
		select {
		case it, ok = <-l.queue:
			if !ok {
				return
			}
		case <-done:
			return
		}
		if d := time.Until(it.due); d > 0 {
			if timer == nil {
				timer = time.NewTimer(d)
			} else {
				timer.Reset(d)
			}
			select {
			case <-timer.C:
			case <-done:
				return
			}
		}
		// Counted on arrival, before the receiver takes it, as on TCP.
		l.recv.Recv(it.size)
		select {
		case l.dst.inbox <- it.m:
		case <-done:
			return
		}
	}
}

// Endpoint is an endpoint of a Network. It implements
// transport.Endpoint.
type Endpoint struct {
	net   *Network
	id    transport.NodeID
	inbox chan *transport.Message
	down  *peers.DownQueue
	stats peers.Table
	pool  transport.Pool  // arrays of received messages
	ctx   context.Context // cancelled by Close
	stop  context.CancelFunc
	wg    sync.WaitGroup // Sends in progress
	inWG  sync.WaitGroup // links delivering to this endpoint
	once  sync.Once

	mu     sync.Mutex
	closed bool
	isDown map[transport.NodeID]bool
}

var _ transport.Endpoint = (*Endpoint)(nil)

// ID returns the node id.
func (e *Endpoint) ID() transport.NodeID { return e.id }

// Recv returns the channel of received messages.
func (e *Endpoint) Recv() <-chan *transport.Message { return e.inbox }

// Down returns the channel of link failures.
func (e *Endpoint) Down() <-chan *transport.PeerError { return e.down.C() }

// Stats returns the per-link counters.
func (e *Endpoint) Stats() transport.Stats { return e.stats.Snapshot() }

// Send delivers a copy of m to node to through the link model; see
// transport.Endpoint. Errors are *transport.PeerError.
func (e *Endpoint) Send(ctx context.Context, to transport.NodeID, m *transport.Message) error {
	fail := func(err error) error { return &transport.PeerError{Peer: to, Op: "send", Err: err} }
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return fail(transport.ErrClosed)
	}
	e.wg.Add(1)
	e.mu.Unlock()
	defer e.wg.Done()

	size := transport.FrameSize(m, e.net.cfg.Frame)
	if size > e.net.max {
		return fail(fmt.Errorf("%w: %d bytes, limit %d", transport.ErrFrameTooLarge, size, e.net.max))
	}
	l, err := e.net.link(e, to)
	if err != nil {
		return err
	}
	closedErr := func() error {
		if e.ctx.Err() != nil {
			return fail(transport.ErrClosed)
		}
		if l.dst.ctx.Err() != nil {
			return fail(transport.ErrPeerClosed)
		}
		return fail(ctx.Err())
	}
	select {
	case l.sem <- struct{}{}:
	case <-ctx.Done():
		return closedErr()
	case <-e.ctx.Done():
		return closedErr()
	case <-l.dst.ctx.Done():
		return closedErr()
	}
	defer func() { <-l.sem }()
	model, bucket := l.snapshot()
	if bucket != nil {
		// The wire is busy for size/bandwidth.
		wctx, cancel := context.WithCancel(ctx)
		stop := context.AfterFunc(e.ctx, cancel)
		err := bucket.Wait(wctx, size)
		stop()
		cancel()
		if err != nil {
			return closedErr()
		}
	}
	if model.Cut || (model.Drop > 0 && l.rng.Float64() < model.Drop) {
		l.sent.Sent(size)
		l.sent.Dropped()
		return nil
	}
	c := l.dst.pool.Clone(m)
	c.Sender, c.Receiver = e.id, to
	select {
	case l.queue <- item{m: c, size: size, due: time.Now().Add(model.Latency)}:
		l.sent.Sent(size)
		return nil
	case <-ctx.Done():
	case <-e.ctx.Done():
	case <-l.dst.ctx.Done():
	}
	return closedErr()
}

// up records a new link with peer.
func (e *Endpoint) up(peer transport.NodeID) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.isDown, peer)
}

// report queues a failure on Down, once per peer until a new link.
func (e *Endpoint) report(pe *transport.PeerError) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed || e.isDown[pe.Peer] {
		return
	}
	e.isDown[pe.Peer] = true
	e.down.Push(pe)
}

// Close shuts the endpoint down; see transport.Endpoint. Messages it sent
// before are still delivered.
func (e *Endpoint) Close() error {
	e.once.Do(func() {
		e.mu.Lock()
		e.closed = true
		e.mu.Unlock()
		e.stop()
		e.wg.Wait()
		out, others := e.net.detach(e)
		for _, l := range out {
			close(l.queue)
		}
		e.inWG.Wait()
		close(e.inbox)
		e.down.Close()
		for _, o := range others {
			o.report(&transport.PeerError{Peer: e.id, Op: "recv", Err: transport.ErrPeerClosed})
		}
	})
	return nil
}
