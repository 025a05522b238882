package node

import (
	"maps"
	"slices"

	"colo/ps/proto"
	"colo/ps/server"
	"colo/ps/worker"
	"colo/transport"
)

// LinkStats is the traffic between one of the node's endpoints and a
// peer.
type LinkStats struct {
	From, To transport.NodeID
	// Inner is set for a peer on the same machine: a link that used
	// memory, not the network.
	Inner bool
	transport.LinkStats
}

// Stats is a snapshot of a node's counters.
type Stats struct {
	Machine int
	// Links lists the traffic per link, by endpoint then peer.
	Links []LinkStats
	// Inner and Inter sum the links to peers on the same machine and on
	// others (the scheduler's included).
	Inner, Inter transport.LinkStats
	Server       *server.Stats `json:",omitempty"`
	Worker       *worker.Stats `json:",omitempty"`
	// Failovers are the failovers of servers the node's worker saw
	// (proto.Failover): when it was told, and when it had sent again
	// what the failed server had not answered.
	Failovers []FailoverTimes `json:",omitempty"`
	// Retakes are the incremental-checkpoint captures the node's worker
	// took again, whole, of the backup that took their server's ranges
	// over during the capture (worker.Worker.SaveSince): a recovery of
	// the failover, as Failovers are.
	Retakes []Retake `json:",omitempty"`
	// Takeovers are the takeovers of the scheduler the node saw
	// (proto.Job.Standby): when it lost the scheduler, and when it
	// heard the one that took the job over.
	Takeovers []TakeoverTimes `json:",omitempty"`
	// Replies are the queues of the answers its servers sent over the
	// network, by server then destination: a destination that reads
	// slowly or not at all shows there, its answers waiting (no one
	// else's).
	Replies []ReplyQueueStats `json:",omitempty"`
}

// ReplyQueueStats is the queue of a server's answers to one destination
// (a worker or an evaluator; with backups, a server it sends updates or
// acknowledgements of updates to): the replies and their frame bytes queued
// now, the one leaving included, and the most bytes it held at once.
type ReplyQueueStats struct {
	From     transport.NodeID `json:"from"`
	To       transport.NodeID `json:"to"`
	Replies  int              `json:"replies"`
	Bytes    uint64           `json:"bytes"`
	MaxBytes uint64           `json:"max_bytes"`
}

// FailoverTimes is what a worker's node saw of the failover of server
// rank Server: when it was told the server failed (ToldUnixNano) and
// when it had sent its requests to the backup (ResentUnixNano).
type FailoverTimes struct {
	Server         int   `json:"server"`
	ToldUnixNano   int64 `json:"told_unix_nano"`
	ResentUnixNano int64 `json:"resent_unix_nano"`
}

// Retake is a capture of server rank Server's store after round Round
// that the node's worker took again (at UnixNano, when it started the
// try again): a takeover of the server fell into the try before.
type Retake struct {
	Server   int   `json:"server"`
	Round    int   `json:"round"`
	UnixNano int64 `json:"unix_nano"`
}

// Stats returns the node's counters.
func (n *Node) Stats() Stats {
	st := Stats{Machine: n.assign.Machine}
	book := n.Peers()
	n.mu.Lock()
	members := append(slices.Clone(n.members), n.taken...)
	st.Failovers = slices.Clone(n.failoverTimes)
	st.Retakes = slices.Clone(n.retakes)
	st.Takeovers = slices.Clone(n.takeovers)
	n.mu.Unlock()
	for _, m := range members {
		st.Replies = m.replies.stats(st.Replies, m.id)
		es := m.ep.Stats()
		for _, p := range slices.Sorted(maps.Keys(es.Links)) {
			l := LinkStats{From: m.id, To: p, LinkStats: es.Links[p]}
			if bp, ok := book[p]; ok && bp.Machine == n.assign.Machine {
				l.Inner = true
			}
			st.Links = append(st.Links, l)
		}
		if s := m.local.msgsSent.Load() + m.local.msgsRecv.Load(); s > 0 {
			peer := n.assign.Server
			if peer == m.id {
				peer = n.assign.Worker
			}
			st.Links = append(st.Links, LinkStats{From: m.id, To: peer, Inner: true, LinkStats: transport.LinkStats{
				MsgsSent: m.local.msgsSent.Load(), BytesSent: m.local.bytesSent.Load(),
				MsgsRecv: m.local.msgsRecv.Load(), BytesRecv: m.local.bytesRecv.Load(),
			}})
		}
	}
	for _, l := range st.Links {
		if l.Inner {
			st.Inner = st.Inner.Add(l.LinkStats)
		} else {
			st.Inter = st.Inter.Add(l.LinkStats)
		}
	}
	if n.srv != nil {
		s := n.srv.Stats()
		st.Server = &s
	}
	if n.wrk != nil {
		w := n.wrk.Stats()
		st.Worker = &w
	}
	return st
}

// Name returns the name of a node for logs and metrics: "server 0".
func Name(id transport.NodeID) string { return proto.Name(id) }
