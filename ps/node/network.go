package node

import (
	"net"

	"colo/transport"
	"colo/transport/mem"
	"colo/transport/tcp"
)

// Network opens the endpoints of a node: one per node id.
type Network interface {
	// Listen opens an endpoint for node id.
	Listen(id transport.NodeID) (Endpoint, error)
}

// Endpoint is a transport endpoint with an address book.
type Endpoint interface {
	transport.Endpoint
	// Addr returns the address peers reach this endpoint at.
	Addr() string
	// SetPeer records the address of a peer.
	SetPeer(id transport.NodeID, addr string)
}

// TCP opens TCP endpoints on Host, on ports the kernel picks.
type TCP struct {
	// Host is the address to listen on and to advertise, such as
	// "127.0.0.1" or "10.0.0.2".
	Host string
	// Token is the cluster token.
	Token string
	// Tune, when not nil, adjusts each endpoint's configuration.
	Tune func(*tcp.Config)
}

// Listen opens a TCP endpoint for id.
func (n TCP) Listen(id transport.NodeID) (Endpoint, error) {
	cfg := tcp.DefaultConfig()
	host := n.Host
	if host == "" {
		host = "127.0.0.1"
	}
	cfg.ID, cfg.Addr, cfg.Token = id, net.JoinHostPort(host, "0"), n.Token
	if n.Tune != nil {
		n.Tune(&cfg)
	}
	ep, err := tcp.Listen(cfg)
	if err != nil {
		return nil, err
	}
	return tcpEndpoint{ep}, nil
}

type tcpEndpoint struct{ *tcp.Endpoint }

func (e tcpEndpoint) Addr() string { return e.Endpoint.Addr().String() }

// Mem attaches endpoints to an in-memory network.
type Mem struct{ Net *mem.Network }

// Listen attaches an endpoint for id.
func (n Mem) Listen(id transport.NodeID) (Endpoint, error) {
	ep, err := n.Net.Attach(id)
	if err != nil {
		return nil, err
	}
	return memEndpoint{ep}, nil
}

type memEndpoint struct{ *mem.Endpoint }

func (memEndpoint) Addr() string                     { return "mem" }
func (memEndpoint) SetPeer(transport.NodeID, string) {}
