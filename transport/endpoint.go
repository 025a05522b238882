package transport

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
)

// Endpoint is one node's attachment to the network: it sends messages to
// other nodes by id and receives theirs. Implementations are safe for
// concurrent use by many goroutines.
type Endpoint interface {
	// ID returns the node id of this endpoint.
	ID() NodeID
	// Send delivers m to node to (possibly this node itself). Messages
	// sent on one link, from this endpoint to one peer, arrive in the
	// order their Send calls returned; messages on different links are
	// not ordered. Send returns once the message is handed to the
	// network, after which the caller may reuse m's arrays; it blocks
	// while the link is busy or the receiver is not keeping up, until ctx
	// is done. An error is a *PeerError naming the peer, or wraps
	// ErrClosed, ErrFrameTooLarge or ctx's error. A failed Send may or
	// may not have delivered the message.
	Send(ctx context.Context, to NodeID, m *Message) error
	// Recv returns the channel of received messages from all peers. It is
	// closed by Close.
	Recv() <-chan *Message
	// Down returns the channel on which the endpoint reports peers whose
	// link failed: a closed or reset connection, a malformed or oversized
	// frame, a read that timed out. Only links whose peer proved it
	// belongs to the cluster are reported: an incoming connection refused
	// at the handshake (a wrong token, a wrong node id, no certificate of
	// the cluster's CA) names a node only
	// by its own claim, so it is never reported here, and the node it
	// claims to be is not blamed (see tcp.Config.Refused). A peer is
	// reported once until its link is re-established; messages on the
	// failed link may have been lost. Reports are queued, never dropped,
	// and the channel is closed by Close.
	Down() <-chan *PeerError
	// Stats returns a snapshot of the per-link counters.
	Stats() Stats
	// Close shuts the endpoint down: it stops accepting, closes every
	// link, makes blocked and later Sends return ErrClosed and closes the
	// Recv and Down channels. Messages not yet received are discarded.
	// Close is idempotent and returns once every goroutine of the
	// endpoint has exited.
	Close() error
}

// Sinker is implemented by an endpoint that can hand received messages to
// a function on the goroutine that read them, instead of queueing them
// on Recv: a receiver that would only move them into a queue of its own
// saves a hand-off between goroutines per message, which on a machine
// whose cores are busy costs a wait for a core each.
type Sinker interface {
	// SetSink makes the endpoint call sink with every message it
	// receives; the messages for which sink returns true are the sink's,
	// the others go to Recv as before. Messages of one link reach sink,
	// or Recv, in their order; a message sink declines may be delivered
	// on Recv after later ones it took. The link reads nothing while
	// sink runs: sink may do the receiver's work on the message, sends
	// of its answers included, but must never wait for anything that
	// needs this endpoint's links read (a peer blocked writing here
	// cannot read what sink sends it).
	SetSink(sink func(*Message) bool)
}

// ErrClosed is wrapped by Send's error after Close.
var ErrClosed = errors.New("endpoint closed")

// ErrUnknownPeer is wrapped by Send's error for a peer the endpoint has no
// address for.
var ErrUnknownPeer = errors.New("unknown peer")

// ErrPeerClosed is wrapped by the errors for a peer that closed its
// endpoint or its side of the link.
var ErrPeerClosed = errors.New("peer closed the link")

// ErrRefused is wrapped by the errors for a connection refused at the
// handshake, by either side: a wrong cluster token, a wrong node id, a
// certificate the other side does not accept, TLS on one side only.
var ErrRefused = errors.New("refused")

// PeerError is an error on the link to one peer. Its message starts with
// the peer's id so that logs say which node failed.
type PeerError struct {
	Peer NodeID
	// Addr is the peer's network address when known.
	Addr string
	// Op is what failed: "send", "recv", "dial" or "handshake".
	Op  string
	Err error
}

// Error returns "peer ID (ADDR): OP: ERR".
func (e *PeerError) Error() string {
	if e.Addr != "" {
		return fmt.Sprintf("peer %d (%s): %s: %v", e.Peer, e.Addr, e.Op, e.Err)
	}
	return fmt.Sprintf("peer %d: %s: %v", e.Peer, e.Op, e.Err)
}

// Unwrap returns the underlying error.
func (e *PeerError) Unwrap() error { return e.Err }

// LinkStats counts the traffic on the link with one peer, in frames and
// frame bytes as FrameSize gives them (handshakes are not counted).
type LinkStats struct {
	MsgsSent, BytesSent uint64
	MsgsRecv, BytesRecv uint64
	// Dropped counts messages sent but lost on purpose by a link model
	// (the in-memory network's drop and cut); they are also in MsgsSent
	// and BytesSent.
	Dropped uint64
}

// Add returns the element-wise sum of s and o.
func (s LinkStats) Add(o LinkStats) LinkStats {
	return LinkStats{
		MsgsSent: s.MsgsSent + o.MsgsSent, BytesSent: s.BytesSent + o.BytesSent,
		MsgsRecv: s.MsgsRecv + o.MsgsRecv, BytesRecv: s.BytesRecv + o.BytesRecv,
		Dropped: s.Dropped + o.Dropped,
	}
}

// Stats is a snapshot of an endpoint's counters, by peer.
type Stats struct {
	Links map[NodeID]LinkStats
}

// Peers returns the peers with counters, in increasing order.
func (s Stats) Peers() []NodeID {
	return slices.Sorted(maps.Keys(s.Links))
}

// Total returns the sum over all links.
func (s Stats) Total() LinkStats {
	var t LinkStats
	for _, l := range s.Links {
		t = t.Add(l)
	}
	return t
}

// Sum returns the sum over the links whose peer satisfies keep. With keep
// reporting whether a peer is on this node's machine, it splits traffic
// into inner-machine and inter-machine traffic.
func (s Stats) Sum(keep func(NodeID) bool) LinkStats {
	var t LinkStats
	for p, l := range s.Links {
		if keep(p) {
			t = t.Add(l)
		}
	}
	return t
}

// TrySender is implemented by an endpoint that can send a small message
// only when the send would not wait (tcp.Endpoint.TrySend): the link is
// up, free and its socket has room to spare. TrySend reports whether it sent
// m; false with a nil error sent nothing. A server's link reader uses it
// to acknowledge a push at once while it holds the server, where a send
// that could wait (a peer that reads nothing) must not.
type TrySender interface {
	TrySend(to NodeID, m *Message) (bool, error)
}
