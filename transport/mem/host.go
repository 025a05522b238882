package mem

import (
	"fmt"
	"time"

	"colo/transport"
)

// nic is the network interface of a host: a bucket each way, nil when
// unlimited.
type nic struct{ egress, ingress *transport.TokenBucket }

// validRate checks a host-level rate in bytes per second.
func validRate(field string, r float64) error {
	if !(r >= 0) || r > 1e18 {
		return fmt.Errorf("%s %v out of range [0, 1e18]", field, r)
	}
	return nil
}

// bucket returns a burst-0 bucket of rate r, nil for unlimited.
func bucket(r float64) *transport.TokenBucket {
	if r == 0 {
		return nil
	}
	return transport.NewTokenBucket(r, 0)
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
	n.nics[host] = nic{egress: bucket(egress), ingress: bucket(ingress)}
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
	if b := bucket(rate); b != nil {
		n.hostLinks[[2]int{from, to}] = b
	} else {
		delete(n.hostLinks, [2]int{from, to})
	}
	return nil
}

// SetHostExempt sets apart endpoint id (attached or not yet): its traffic
// takes nothing from host-level buckets, as if it went through a
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

// hostBuckets appends to dst the host-level buckets of a message from
// one endpoint to another on the sender's side (its host's egress and
// the host pair's path) and returns the destination host's ingress
// bucket, nil when none applies.
func (n *Network) hostBuckets(dst []*transport.TokenBucket, from, to transport.NodeID) ([]*transport.TokenBucket, *transport.TokenBucket) {
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
		if b := n.nics[hf].egress; b != nil {
			dst = append(dst, b)
		}
	}
	if okf && okt {
		if b := n.hostLinks[[2]int{hf, ht}]; b != nil {
			dst = append(dst, b)
		}
	}
	var in *transport.TokenBucket
	if okt {
		in = n.nics[ht].ingress
	}
	return dst, in
}

// reserve takes size bytes from every bucket at once and returns the
// longest wait of the sender's buckets and of the destination's ingress.
func (n *Network) reserve(buckets []*transport.TokenBucket, in *transport.TokenBucket, size int) (send, arrive time.Duration) {
	n.shape.Lock()
	defer n.shape.Unlock()
	for _, b := range buckets {
		send = max(send, b.Reserve(size))
	}
	arrive = send
	if in != nil {
		arrive = max(arrive, in.Reserve(size))
	}
	return send, arrive
}
