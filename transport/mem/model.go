package mem

import (
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

// pair is a directed link.
type pair struct{ from, to transport.NodeID }

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

// item is a message in flight: it arrives at due, and not before its
// flight (nil when no card applies) has passed every card plus latency.
type item struct {
	m       *transport.Message
	size    int
	due     time.Time
	latency time.Duration
	f       *flight
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
		if f := it.f; f != nil {
			select {
			case <-f.done:
			case <-done:
				return
			}
			it.due = later(it.due, f.doneAt.Add(it.latency))
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
