package node

import (
	"crypto/ecdh"
	"crypto/tls"
	"net"

	"colo/internal/ratelog"
	"colo/ps/proto"
	"colo/transport"
	"colo/transport/mem"
	"colo/transport/tcp"
)

// Network opens the endpoints of a node: one per node id.
type Network interface {
	// Listen opens an endpoint for node id. identity, when not nil, is
	// the node's key: the endpoint's links with members prove link keys
	// derived from it and the members' published keys (SetPeerKey), so
	// that no other process can claim the node's ids; a transport without
	// a handshake ignores it.
	Listen(id transport.NodeID, identity *ecdh.PrivateKey) (Endpoint, error)
}

// Endpoint is a transport endpoint with an address book.
type Endpoint interface {
	transport.Endpoint
	// Addr returns the address peers reach this endpoint at.
	Addr() string
	// SetPeer records the address of a peer.
	SetPeer(id transport.NodeID, addr string)
	// SetPeerKey records the public key published for a peer (see
	// Network.Listen); it does nothing on an endpoint without identity.
	SetPeerKey(id transport.NodeID, pub []byte) error
}

// TCP opens TCP endpoints on Host, on ports the kernel picks.
type TCP struct {
	// Host is the address to listen on and to advertise, such as
	// "127.0.0.1" or "10.0.0.2".
	Host string
	// Token is the cluster token, which the endpoints prove to each other
	// without sending it.
	Token string
	// TLS, when not nil, runs every link over mutual TLS (tcp.Config.TLS).
	TLS *tls.Config
	// Tune, when not nil, adjusts each endpoint's configuration.
	Tune func(*tcp.Config)
	// Logf, when not nil, receives a line for every incoming connection
	// an endpoint refused at the handshake (a wrong token, a wrong node
	// id, not a colo node). Such a connection never counts as a failure
	// of the node it claimed to be (see tcp.Config.Refused).
	Logf func(format string, args ...any)
}

// Listen opens a TCP endpoint for id. Every endpoint delivers whole
// messages: a server's link reader reads a dense push to its end, then
// acknowledges and sums it on its own goroutine when the server is idle
// (server.Server.Offer), so that the worker's next push crosses the
// socket while this one is summed. Delivering a dense push before its
// values are read (tcp.Config.Early), to be summed on the server's
// goroutine as they arrive, cost a fifth more CPU per push: a read of
// 128 KiB at a time and a wake-up of that goroutine per part (docs/ps.md).
func (n TCP) Listen(id transport.NodeID, identity *ecdh.PrivateKey) (Endpoint, error) {
	cfg := tcp.DefaultConfig()
	host := n.Host
	if host == "" {
		host = "127.0.0.1"
	}
	cfg.ID, cfg.Addr, cfg.Token, cfg.TLS = id, net.JoinHostPort(host, "0"), n.Token, n.TLS
	if identity != nil {
		// Every peer but a registration's provisional id proves the link
		// key the scheduler published for it.
		cfg.Identity = identity
		cfg.Keyed = func(peer transport.NodeID) bool { return !proto.IsProvisional(peer) }
	}
	flush := func() {}
	if n.Logf != nil {
		cfg.Refused, flush = RefusedLogger(id, n.Logf)
	}
	if n.Tune != nil {
		n.Tune(&cfg)
	}
	ep, err := tcp.Listen(cfg)
	if err != nil {
		return nil, err
	}
	return tcpEndpoint{ep, flush}, nil
}

// tcpEndpoint is a node's TCP endpoint; closing it logs the refusals it
// held back (RefusedLogger).
type tcpEndpoint struct {
	*tcp.Endpoint
	flush func()
}

// Close closes the endpoint, then logs the count of refusals not yet said.
func (e tcpEndpoint) Close() error {
	err := e.Endpoint.Close()
	e.flush()
	return err
}

func (e tcpEndpoint) Addr() string { return e.Endpoint.Addr().String() }

// Mem attaches endpoints to an in-memory network.
type Mem struct{ Net *mem.Network }

// Listen attaches an endpoint for id; an in-memory network has no
// strangers, and ignores identity.
func (n Mem) Listen(id transport.NodeID, _ *ecdh.PrivateKey) (Endpoint, error) {
	ep, err := n.Net.Attach(id)
	if err != nil {
		return nil, err
	}
	return memEndpoint{ep}, nil
}

type memEndpoint struct{ *mem.Endpoint }

func (memEndpoint) Addr() string                              { return "mem" }
func (memEndpoint) SetPeer(transport.NodeID, string)          {}
func (memEndpoint) SetPeerKey(transport.NodeID, []byte) error { return nil }

// RefusedLogger returns a tcp.Config.Refused that logs each refused
// connection to the endpoint of node id through logf: "scheduler:
// refused a connection from 10.0.0.9:41234 (claiming to be worker 0):
// refused: wrong cluster token: the dialer's proof did not match".
//
// At most proto.RefusalBurst lines go out per proto.RefusalPeriod; the others are
// counted, and the count is logged ("scheduler: suppressed 811 more
// refused connections in 30s") with the next line or at the end of the
// period. What the stranger sent is quoted in the error (see tcp's
// handshake), so it cannot pass for the node's own words.
//
// flush logs the count not yet said; call it when the endpoint closes.
func RefusedLogger(id transport.NodeID, logf func(format string, args ...any)) (refused func(string, transport.NodeID, error), flush func()) {
	logf, flush = ratelog.Logger(logf, proto.RefusalBurst, proto.RefusalPeriod, proto.Name(id)+": refused connections")
	return func(addr string, claimed transport.NodeID, err error) {
		who := "no valid hello"
		if claimed != 0 {
			who = "claiming to be " + proto.Name(claimed)
		}
		logf("%s: refused a connection from %s (%s): %v", proto.Name(id), addr, who, err)
	}, flush
}
