package mem

import (
	"fmt"
	"sync"
	"time"

	"colo/transport"
)

// nic is the network interface of a host: a card (a transport.Wire)
// each way, nil when unlimited.
type nic struct{ egress, ingress *transport.Wire }

// newCard returns a wire of rate bytes per second, nil for 0
// (unlimited).
func newCard(rate float64, quantum int) *transport.Wire {
	if rate == 0 {
		return nil
	}
	return transport.NewWire(rate, quantum)
}

// validRate checks a host-level rate in bytes per second.
func validRate(field string, r float64) error {
	if !(r >= 0) || r > 1e18 {
		return fmt.Errorf("%s %v out of range [0, 1e18]", field, r)
	}
	return nil
}

// SetHost places endpoint id, attached or not yet, on host (≥ 0). An
// endpoint is on no host until placed; its place survives a re-attach.
func (n *Network) SetHost(id transport.NodeID, host int) error {
	if host < 0 {
		return fmt.Errorf("mem: node %d: host %d is negative", id, host)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.hosts[id] = host
	return nil
}

// Host returns the host of endpoint id, and false when it is on none.
func (n *Network) Host(id transport.NodeID) (int, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	h, ok := n.hosts[id]
	return h, ok
}

// SetNIC sets the rates of host's network interface in bytes per second,
// 0 for unlimited: egress for every message leaving the host, ingress for
// every message arriving from off the host. Setting it again starts new
// buckets: messages already reserved keep their times.
func (n *Network) SetNIC(host int, egress, ingress float64) error {
	if host < 0 {
		return fmt.Errorf("mem: NIC of host %d: host is negative", host)
	}
	if err := validRate("egress", egress); err != nil {
		return fmt.Errorf("mem: NIC of host %d: %w", host, err)
	}
	if err := validRate("ingress", ingress); err != nil {
		return fmt.Errorf("mem: NIC of host %d: %w", host, err)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.nics[host] = nic{egress: newCard(egress, n.quantum), ingress: newCard(ingress, n.quantum)}
	return nil
}

// SetHostLink sets the rate in bytes per second (0 for unlimited) of the
// directed path from one host to another, shared by every message from
// an endpoint of the first to an endpoint of the second.
func (n *Network) SetHostLink(from, to int, rate float64) error {
	if from < 0 || to < 0 || from == to {
		return fmt.Errorf("mem: host link %d→%d: hosts must be distinct and not negative", from, to)
	}
	if err := validRate("rate", rate); err != nil {
		return fmt.Errorf("mem: host link %d→%d: %w", from, to, err)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if c := newCard(rate, n.quantum); c != nil {
		n.hostLinks[[2]int{from, to}] = c
	} else {
		delete(n.hostLinks, [2]int{from, to})
	}
	return nil
}

// SetHostExempt sets apart endpoint id (attached or not yet): its traffic
// takes nothing from host-level cards, as if it went through a
// separate management network. Its per-link models still apply.
func (n *Network) SetHostExempt(id transport.NodeID, exempt bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if exempt {
		n.exempt[id] = true
	} else {
		delete(n.exempt, id)
	}
}

// hostCards appends to dst the host-level cards of a message from one
// endpoint to another on the sender's side (its host's egress and the
// host pair's path) and returns the destination host's ingress card, nil
// when none applies.
func (n *Network) hostCards(dst []*transport.Wire, from, to transport.NodeID) ([]*transport.Wire, *transport.Wire) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.exempt[from] || n.exempt[to] {
		return dst, nil
	}
	hf, okf := n.hosts[from]
	ht, okt := n.hosts[to]
	if okf && okt && hf == ht {
		return dst, nil
	}
	if okf {
		if c := n.nics[hf].egress; c != nil {
			dst = append(dst, c)
		}
	}
	if okf && okt {
		if c := n.hostLinks[[2]int{hf, ht}]; c != nil {
			dst = append(dst, c)
		}
	}
	var in *transport.Wire
	if okt {
		in = n.nics[ht].ingress
	}
	return dst, in
}

// flight is a message's passage through its cards: the sender's (egress,
// host pair's path) and the destination's ingress. Its moments start at
// the end of the link's own bandwidth wait.
type flight struct {
	mu        sync.Mutex
	side, all int           // cards not yet passed: the sender's, all
	sideAt    time.Time     // when the sender's cards have carried it
	doneAt    time.Time     // when every card has
	left      chan struct{} // closed when side reaches 0
	done      chan struct{} // closed when all reaches 0
}

// pass records that one card, the sender's or not, carried the message
// at the moment at.
func (f *flight) pass(sender bool, at time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.doneAt = later(f.doneAt, at)
	if sender {
		f.sideAt = later(f.sideAt, at)
		if f.side--; f.side == 0 {
			close(f.left)
		}
	}
	if f.all--; f.all == 0 {
		close(f.done)
	}
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// launch queues a message of size bytes from endpoint from to endpoint to
// on its cards at once, at the moment start, and returns its flight, or
// nil when no card applies.
func (n *Network) launch(side []*transport.Wire, in *transport.Wire, from, to transport.NodeID, size int, start time.Time) *flight {
	all := len(side)
	if in != nil {
		all++
	}
	if all == 0 {
		return nil
	}
	f := &flight{side: len(side), all: all, sideAt: start, doneAt: start, left: make(chan struct{}), done: make(chan struct{})}
	if len(side) == 0 {
		close(f.left)
	}
	key := transport.Flow{From: from, To: to}
	n.shape.Lock()
	defer n.shape.Unlock()
	for _, c := range side {
		c.Add(start, key, size, func(at time.Time) { f.pass(true, at) })
	}
	if in != nil {
		in.Add(start, key, size, func(at time.Time) { f.pass(false, at) })
	}
	return f
}
