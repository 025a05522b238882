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
//
// # Hosts
//
// Links between endpoints model the path between two processes; hosts
// model the machines they run on. SetHost places an endpoint on a host (a
// machine: its server and its worker endpoints, say), and three kinds of
// host-level wires then apply on top of the per-link model, as for a
// full-duplex network interface per host on a non-blocking switch:
//
//   - SetNIC gives a host an egress and an ingress rate. Every message
//     that leaves the host (to an endpoint on another host, or on none)
//     crosses the host's egress wire; every message that arrives from off
//     the host crosses its ingress wire. All of the host's endpoints
//     share them, so two endpoints of a 100 Mbit/s machine together send
//     at 100 Mbit/s, not twice that.
//   - SetHostLink gives the directed path between two hosts a rate,
//     shared by all their endpoints: a heterogeneous network, as in a
//     transport.Bandwidth matrix.
//   - Traffic between two endpoints of one host takes nothing from
//     host-level wires (it does not leave the machine), and neither does
//     traffic to or from an endpoint set apart with SetHostExempt (a
//     management network, such as the scheduler's control traffic).
//
// Each of these is a wire of its rate shared the way a network card and
// a switch port share theirs: by connection, in turns. A connection is a
// directed pair of endpoints; its messages are one stream, in order. The
// connections with bytes queued on a wire take turns of Config.Quantum
// bytes (a deficit round robin; DefaultQuantum is one full Ethernet frame,
// 1514 bytes, the quantum of Linux's default queueing discipline), so a
// message waits for what its own connection queued before it and for one
// turn of each other busy connection, not for whole messages of others:
// at 100 Mbit/s an acknowledgement of a few bytes behind three 180 kB
// pushes to other hosts leaves within 3·1514 bytes, 0.36 ms, instead of
// 43 ms behind a queue of whole messages. A wire never idles while a
// connection has bytes for it and nothing takes more than its size, so
// the bytes through each wire and every rate are exact: n bytes through a
// 1 MB/s NIC take n microseconds, however many endpoints share it. The
// arithmetic is in closed form (O(k) per message for k busy connections,
// never a step per turn) and runs on the clock of package time.
//
// A message enters every wire that applies at once (its host pair's path,
// the source's egress and the destination's ingress) and its link's own
// bandwidth besides. The sender waits until the wires on its side (link,
// host pair, egress) have carried it; the message arrives when the
// ingress has carried it too, plus Latency, without holding the sender: a
// busy receiver delays its own input, not the sender's traffic to others
// (the switch buffers). A message holds all its wires from the same
// moment, not one after the other as hops would, so a wire that is not
// its bottleneck is busy a little earlier than a real one would be; the
// bytes through each wire stay exact. A Send blocks until its message has
// left, as a write into a socket with no buffer would: a caller that
// answers several peers sends to each from its own goroutine, and their
// messages then share the wires.
//
//	net.SetHost(2, 0) // server 0 and worker 0 on machine 0
//	net.SetHost(3, 0)
//	net.SetHost(4, 1) // server 1 and worker 1 on machine 1
//	net.SetHost(5, 1)
//	net.SetNIC(0, 12.5e6, 12.5e6) // 100 Mbit/s each way
//	net.SetNIC(1, 12.5e6, 12.5e6)
//	net.SetHostLink(0, 1, 1.25e6) // and a 10 Mbit/s path from 0 to 1
package mem

import (
	"context"
	"fmt"
	"sync"
	"time"

	"colo/transport"
	"colo/transport/internal/peers"
)

// DefaultQuantum is the bytes a connection sends in its turn on a shared
// host-level wire unless Config.Quantum says otherwise: one full Ethernet
// frame, transport.DefaultQuantum.
const DefaultQuantum = transport.DefaultQuantum

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
	// Quantum is the bytes a connection sends in its turn on a shared
	// host-level wire (a NIC, a path between hosts); 0 is
	// DefaultQuantum.
	Quantum int
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
	if c.Quantum < 0 || c.Quantum > 1<<30 {
		return fmt.Errorf("mem: Quantum %d out of range [0, 2^30]", c.Quantum)
	}
	return nil
}

// Network is an in-memory network. It is safe for concurrent use.
type Network struct {
	cfg     Config
	max     int
	quantum int

	mu     sync.Mutex
	eps    map[transport.NodeID]*Endpoint // attached, not closed
	known  map[transport.NodeID]bool      // ever attached
	links  map[pair]*link
	models map[pair]Link

	// Host-level shaping: a host of each placed endpoint, the NIC
	// cards of hosts, the cards of host pairs, the exempt endpoints.
	// shape makes a message's entry on its cards atomic.
	hosts     map[transport.NodeID]int
	nics      map[int]nic
	hostLinks map[[2]int]*transport.Wire
	exempt    map[transport.NodeID]bool
	shape     sync.Mutex
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
	quantum := cfg.Quantum
	if quantum == 0 {
		quantum = DefaultQuantum
	}
	return &Network{
		cfg:     cfg,
		max:     max,
		quantum: quantum,
		eps:     make(map[transport.NodeID]*Endpoint),
		known:   make(map[transport.NodeID]bool),
		links:   make(map[pair]*link),
		models:  make(map[pair]Link),

		hosts:     make(map[transport.NodeID]int),
		nics:      make(map[int]nic),
		hostLinks: make(map[[2]int]*transport.Wire),
		exempt:    make(map[transport.NodeID]bool),
	}, nil
}

// Attach returns a new endpoint with the given id. An id may be attached
// again once its endpoint is closing (a restarted node, or a backup that
// takes over a failed server's id as soon as a peer saw the link fail):
// the closing endpoint leaves the network at once, and its Close still
// ends its links.
func (n *Network) Attach(id transport.NodeID) (*Endpoint, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if old := n.eps[id]; old != nil {
		if old.ctx.Err() == nil {
			return nil, fmt.Errorf("mem: node %d is already attached", id)
		}
		n.evict(old)
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

// evict takes closing endpoint e off the network: its id is free to
// attach again, and its links, kept in e.evicted for its Close, are no
// longer found by senders. Called with n.mu held.
func (n *Network) evict(e *Endpoint) {
	if n.eps[e.id] == e {
		delete(n.eps, e.id)
	}
	for p, l := range n.links {
		if l.src == e || l.dst == e {
			delete(n.links, p)
			e.evicted = append(e.evicted, l)
		}
	}
}

// detach removes e from the network and returns its links and the peers
// it had links with.
func (n *Network) detach(e *Endpoint) (out []*link, others []*Endpoint) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.evict(e)
	seen := map[*Endpoint]bool{e: true}
	for _, l := range e.evicted {
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

	// evicted are the links of the endpoint once it left the network
	// (Network.evict), guarded by the network's mu.
	evicted []*link
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
	model, lb := l.snapshot()
	now := time.Now()
	var wait time.Duration // the link's own bandwidth
	if lb != nil {
		wait = lb.Reserve(size)
	}
	var arr [2]*transport.Wire
	side, in := e.net.hostCards(arr[:0], e.id, to)
	// The host pair's path and the NICs carry the message among the other
	// connections' (host.go); the sender waits until the link and its own
	// cards have carried it (the message has left), and the message
	// arrives when the destination's ingress has carried it too.
	f := e.net.launch(side, in, e.id, to, size, now)
	if wait > 0 {
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return closedErr()
		case <-e.ctx.Done():
			t.Stop()
			return closedErr()
		}
	}
	if f != nil {
		select {
		case <-f.left:
		case <-ctx.Done():
			return closedErr()
		case <-e.ctx.Done():
			return closedErr()
		}
	}
	if ctx.Err() != nil || e.ctx.Err() != nil {
		return closedErr()
	}
	if model.Cut || (model.Drop > 0 && l.rng.Float64() < model.Drop) {
		l.sent.Sent(size)
		l.sent.Dropped()
		return nil
	}
	c := l.dst.pool.Clone(m)
	c.Sender, c.Receiver = e.id, to
	// Counted before the message is queued, as package tcp counts before
	// the write, so that a peer that has the message (and anything that
	// follows from it) never sees a counter without it.
	l.sent.Sent(size)
	select {
	case l.queue <- item{m: c, size: size, due: now.Add(wait + model.Latency), latency: model.Latency, f: f}:
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
