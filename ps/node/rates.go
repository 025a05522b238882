package node

import (
	"fmt"
	"slices"
	"sync"

	"colo/ps/proto"
	"colo/transport"
	"colo/transport/tcp"
)

// Rates is the emulated rate policy of a cluster's TCP links, the model
// of transport/mem's hosts (mem.Network.SetNIC, SetHostLink) over TCP:
// every machine has a network interface that sends at Link bytes per
// second and receives at Link, shared by all of its nodes' links to other
// machines; when Matrix is set, the directed path between two machines
// carries at most its entry, shared by all of the first machine's links
// to the second. Traffic within a machine, with the scheduler, and of
// nodes not yet registered is not limited.
//
// Tune gives the endpoints it tunes these wires: the endpoints of one
// process share one interface per machine, so a machine is best one
// process (colo node and colo run's programs run a machine's server and
// worker in one). A machine whose nodes run as separate processes gets an
// interface in each.
//
// Host says which machine a server or worker is. Nil means its rank: a
// machine's server r and worker r are machine r.
type Rates struct {
	Link   float64
	Matrix *transport.Bandwidth
	Host   func(id transport.NodeID) (machine int, ok bool)
}

// Apart returns the Host of a cluster of servers apart from workers:
// server r is machine r, worker r machine servers+r.
func Apart(servers int) func(transport.NodeID) (int, bool) {
	return func(id transport.NodeID) (int, bool) {
		switch role, rank := proto.Identify(id); role {
		case proto.RoleServer:
			return rank, true
		case proto.RoleWorker:
			return servers + rank, true
		}
		return 0, false
	}
}

// ParseRates reads the rates a command line gives: link, a rate such as
// "100mbit" (empty: unlimited), and the file of a bandwidth matrix (empty:
// none) of at least machines rows. Errors name the rate or the file.
func ParseRates(link, matrix string, machines int) (Rates, error) {
	var r Rates
	if link != "" {
		rate, err := transport.ParseRate(link)
		if err != nil {
			return r, fmt.Errorf("link bandwidth: %w", err)
		}
		r.Link = rate
	}
	if matrix != "" {
		b, err := transport.ReadBandwidthFile(matrix)
		if err != nil {
			return r, err
		}
		if b.K < machines {
			return r, fmt.Errorf("bandwidth matrix %s is for %d machines, the cluster has %d", matrix, b.K, machines)
		}
		r.Matrix = b
	}
	return r, nil
}

// host returns the machine of a server or worker id.
func (r Rates) host(id transport.NodeID) (int, bool) {
	if r.Host != nil {
		return r.Host(id)
	}
	role, rank := proto.Identify(id)
	if id == proto.SchedulerID || rank < 0 || (role != proto.RoleServer && role != proto.RoleWorker) {
		return 0, false
	}
	return rank, true
}

// Zero reports whether r limits nothing.
func (r Rates) Zero() bool { return r.Link == 0 && r.Matrix == nil }

// Rate returns the rate in bytes per second of the path from node from
// to node to when nothing else crosses the two machines' interfaces: the
// smaller of Link and the matrix's entry; 0 (unlimited) within a machine
// and for nodes on none.
func (r Rates) Rate(from, to transport.NodeID) float64 {
	a, okA := r.host(from)
	b, okB := r.host(to)
	if !okA || !okB || a == b {
		return 0
	}
	rate := r.Link
	if m := r.Matrix; m != nil && a < m.K && b < m.K {
		rate = transport.MinRate(rate, m.Rate(a, b))
	}
	return rate
}

// Tune returns tune (nil: none) followed by the rates of r: every frame
// an endpoint sends to another machine's node crosses, besides what tune
// set, its machine's egress wire and the path's, and every frame it
// receives from one its machine's ingress wire (tcp.Config.Shared); the
// connections on a wire take turns of transport.DefaultQuantum bytes, as
// on transport/mem's hosts. The wires belong to the returned function and
// are shared by every endpoint it tunes (a process's). Tune returns tune
// itself when r limits nothing.
func (r Rates) Tune(tune func(*tcp.Config)) func(*tcp.Config) {
	if r.Zero() {
		return tune
	}
	hosts := &hostWires{r: r, nics: make(map[int]nic), paths: make(map[[2]int]*transport.Wire)}
	return func(tc *tcp.Config) {
		if tune != nil {
			tune(tc)
		}
		self, prev := tc.ID, tc.Shared
		tc.Shared = func(peer transport.NodeID) (out, in []*transport.Wire) {
			if prev != nil {
				out, in = prev(peer)
			}
			o, i := hosts.wires(self, peer)
			return slices.Concat(out, o), slices.Concat(in, i)
		}
	}
}

// nic is a machine's emulated network interface: a wire each way.
type nic struct{ egress, ingress *transport.Wire }

// hostWires holds the interfaces of machines and the paths between
// them, made on first use.
type hostWires struct {
	r     Rates
	mu    sync.Mutex
	nics  map[int]nic
	paths map[[2]int]*transport.Wire
}

// wires returns the wires of the traffic between node self and node
// peer: out, self's machine's egress and the path to peer's machine; in,
// self's machine's ingress. Both are empty within a machine and for a
// node on none.
func (h *hostWires) wires(self, peer transport.NodeID) (out, in []*transport.Wire) {
	a, okA := h.r.host(self)
	b, okB := h.r.host(peer)
	if !okA || !okB || a == b {
		return nil, nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.r.Link > 0 {
		n, ok := h.nics[a]
		if !ok {
			n = nic{transport.NewWire(h.r.Link, transport.DefaultQuantum), transport.NewWire(h.r.Link, transport.DefaultQuantum)}
			h.nics[a] = n
		}
		out, in = append(out, n.egress), append(in, n.ingress)
	}
	if m := h.r.Matrix; m != nil && a < m.K && b < m.K {
		if rate := m.Rate(a, b); rate > 0 {
			p := h.paths[[2]int{a, b}]
			if p == nil {
				p = transport.NewWire(rate, transport.DefaultQuantum)
				h.paths[[2]int{a, b}] = p
			}
			out = append(out, p)
		}
	}
	return out, in
}
