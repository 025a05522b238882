package node

import (
	"context"
	"crypto/ecdh"
	"sync"

	"colo/transport"
)

// wrapNet is a network whose endpoints are Network's, each passed
// through wrap with the id of its node once opened: a test states only
// what its endpoints do differently. wrap returns the endpoint itself for
// a node it leaves alone (a wrapped endpoint hides the optional
// interfaces of the transport's, such as transport.TrySender).
type wrapNet struct {
	Network
	wrap func(id transport.NodeID, ep Endpoint) Endpoint
	// mu, when not nil, is held from the opening of an endpoint until
	// wrap returns (addrBook: a send must not reach an endpoint that has
	// no address yet).
	mu sync.Locker
}

func (w wrapNet) Listen(id transport.NodeID, identity *ecdh.PrivateKey) (Endpoint, error) {
	return w.ListenOn(id, id, identity)
}

func (w wrapNet) ListenOn(id, on transport.NodeID, identity *ecdh.PrivateKey) (Endpoint, error) {
	if w.mu != nil {
		w.mu.Lock()
		defer w.mu.Unlock()
	}
	ep, err := listenOn(w.Network, id, on, identity)
	if err != nil {
		return nil, err
	}
	return w.wrap(id, ep), nil
}

// sendFunc sees a message before the endpoint sends it, and either takes
// it (taken, with the error the send returns) or leaves it to be sent.
type sendFunc func(ctx context.Context, to transport.NodeID, m *transport.Message) (taken bool, err error)

// sendEndpoint is an endpoint whose sends go through send first.
type sendEndpoint struct {
	Endpoint
	send sendFunc
}

func (e sendEndpoint) Send(ctx context.Context, to transport.NodeID, m *transport.Message) error {
	if taken, err := e.send(ctx, to, m); taken {
		return err
	}
	return e.Endpoint.Send(ctx, to, m)
}

// sendNet is nw whose endpoint of node from sends through send
// (sendEndpoint); the other endpoints are nw's.
func sendNet(nw Network, from transport.NodeID, send sendFunc) Network {
	return wrapNet{Network: nw, wrap: func(id transport.NodeID, ep Endpoint) Endpoint {
		if id != from {
			return ep
		}
		return sendEndpoint{ep, send}
	}}
}

// tapNet is nw whose endpoint of node from passes the messages it sends
// through tap first, which drops those it returns true for.
func tapNet(nw Network, from transport.NodeID, tap func(to transport.NodeID, m *transport.Message) bool) Network {
	return sendNet(nw, from, func(_ context.Context, to transport.NodeID, m *transport.Message) (bool, error) {
		return tap(to, m), nil
	})
}
