package node

import (
	"fmt"

	"colo/ps/proto"
	"colo/transport"
	"colo/transport/tcp"
)

// Rates is the emulated rate policy of a cluster's TCP links: every link
// between two nodes of different machines is limited to Link bytes per
// second and, when Matrix is set, to its entry between the two machines;
// links to the scheduler, and of nodes not yet registered, are not
// limited. It limits each link separately (tcp.Config.Rate), not a
// network interface shared by a machine's links.
//
// Host says which machine a server or worker is. Nil means its rank: a
// machine's server r and worker r are machine r, which talk through
// memory; a separate server and worker of the same rank (separate
// processes) are limited by Link alone.
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

// Rate returns the rate of the link from node from to node to, 0 for
// unlimited.
func (r Rates) Rate(from, to transport.NodeID) float64 {
	a, okA := r.host(from)
	b, okB := r.host(to)
	if !okA || !okB || (a == b && r.Host != nil) {
		return 0
	}
	rate := r.Link
	if m := r.Matrix; m != nil && a != b && a < m.K && b < m.K {
		rate = transport.MinRate(rate, m.Rate(a, b))
	}
	return rate
}

// Tune returns tune (nil: none) followed by the rates of r, each endpoint
// limited as Rate says and by the rate tune set, the smaller; tune
// itself when r limits nothing.
func (r Rates) Tune(tune func(*tcp.Config)) func(*tcp.Config) {
	if r.Zero() {
		return tune
	}
	return func(tc *tcp.Config) {
		if tune != nil {
			tune(tc)
		}
		self, prev := tc.ID, tc.Rate
		tc.Rate = func(peer transport.NodeID) float64 {
			rate := r.Rate(self, peer)
			if prev != nil {
				rate = transport.MinRate(rate, prev(peer))
			}
			return rate
		}
	}
}
