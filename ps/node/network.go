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

// machineListener is implemented by a Network whose endpoints belong to
// emulated machines (their network interfaces): ListenOn opens an
// endpoint for node id on the machine of node host, as a backup does to
// serve a failed server's id (Node.takeover) through its own machine's
// interface, not the failed machine's.
type machineListener interface {
	ListenOn(id, host transport.NodeID, identity *ecdh.PrivateKey) (Endpoint, error)
}

// listenOn opens an endpoint for node id on nw, on the machine of node
// host when nw knows machines.
func listenOn(nw Network, id, host transport.NodeID, identity *ecdh.PrivateKey) (Endpoint, error) {
	if ml, ok := nw.(machineListener); ok {
		return ml.ListenOn(id, host, identity)
	}
	return nw.Listen(id, identity)
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
	// Tune, when not nil, adjusts each endpoint's configuration. For an
	// endpoint opened for one node's id on another node's machine
	// (ListenOn), it sees the ID of the node whose machine it is (the
	// rates of that machine's interface, Rates.Tune), and the endpoint
	// takes its own id after.
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
	return n.ListenOn(id, id, identity)
}

// ListenOn is Listen for an endpoint of node id on the machine of node
// on: Tune sees on's id (see TCP.Tune).
func (n TCP) ListenOn(id, on transport.NodeID, identity *ecdh.PrivateKey) (Endpoint, error) {
	cfg, flush := n.config(id, on, identity)
	ep, err := tcp.Listen(cfg)
	if err != nil {
		return nil, err
	}
	return tcpEndpoint{ep, flush}, nil
}

// config returns the configuration of ListenOn's endpoint and the flush
// of its refusal logger.
func (n TCP) config(id, on transport.NodeID, identity *ecdh.PrivateKey) (tcp.Config, func()) {
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
		cfg.ID = on
		n.Tune(&cfg)
		cfg.ID = id
	}
	return cfg, flush
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

// ListenOn attaches an endpoint for id and places it on the host of node
// host (mem.Network.SetHost), when that node is on one.
func (n Mem) ListenOn(id, host transport.NodeID, identity *ecdh.PrivateKey) (Endpoint, error) {
	ep, err := n.Listen(id, identity)
	if err != nil {
		return nil, err
	}
	if h, ok := n.Net.Host(host); ok && id != host {
		if err := n.Net.SetHost(id, h); err != nil {
			ep.Close()
			return nil, err
		}
	}
	return ep, nil
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
