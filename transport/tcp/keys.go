package tcp

import (
	"bytes"
	"crypto/ecdh"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"sync"
	"time"

	"colo/transport"
)

// NewIdentity returns a fresh X25519 key pair for Config.Identity.
func NewIdentity() *ecdh.PrivateKey {
	k, err := ecdh.X25519().GenerateKey(rand.Reader)
	if err != nil {
		panic(err) // crypto/rand does not fail
	}
	return k
}

// linkKey returns the key of the link between nodes a and b: an
// HMAC-SHA256, keyed by the X25519 agreement of the two nodes' keys,
// over a label, both ids (the lower first, so both ends compute the same
// key) and the cluster token. Only the two nodes can compute it, and a
// node that leaked its private key but not the token still cannot.
func linkKey(priv *ecdh.PrivateKey, pub *ecdh.PublicKey, token string, a, b transport.NodeID) ([]byte, error) {
	shared, err := priv.ECDH(pub)
	if err != nil {
		return nil, err
	}
	h := hmac.New(sha256.New, shared)
	h.Write([]byte("colo link key\x00"))
	h.Write(binary.LittleEndian.AppendUint32(binary.LittleEndian.AppendUint32(nil, uint32(min(a, b))), uint32(max(a, b))))
	h.Write([]byte(token))
	return h.Sum(nil), nil
}

// keyRing holds the public keys published for the peers of an endpoint
// with an identity and the link keys derived from them.
type keyRing struct {
	mu      sync.Mutex
	pubs    map[transport.NodeID][]byte
	keys    map[transport.NodeID][]byte
	changed chan struct{} // closed and replaced on every change
}

// set records pub, and its link key, for peer.
func (r *keyRing) set(peer transport.NodeID, pub, key []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.pubs == nil {
		r.pubs, r.keys = map[transport.NodeID][]byte{}, map[transport.NodeID][]byte{}
	}
	r.pubs[peer], r.keys[peer] = bytes.Clone(pub), key
	if r.changed != nil {
		close(r.changed)
		r.changed = nil
	}
}

// wait returns the link key of peer once the public key published for it
// is pub, waiting until deadline or done.
func (r *keyRing) wait(peer transport.NodeID, pub []byte, deadline time.Time, done <-chan struct{}) ([]byte, error) {
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	for {
		r.mu.Lock()
		have, ok := r.pubs[peer]
		if ok && bytes.Equal(have, pub) {
			k := r.keys[peer]
			r.mu.Unlock()
			return k, nil
		}
		if r.changed == nil {
			r.changed = make(chan struct{})
		}
		ch := r.changed
		r.mu.Unlock()
		select {
		case <-ch:
		case <-done:
			return nil, transport.ErrClosed
		case <-t.C:
			if ok {
				return nil, fmt.Errorf("the key node %d offered is not the one published for it (a node it replaced, or a stranger's)", peer)
			}
			return nil, fmt.Errorf("no key published for node %d: it is not a member of this job, or not yet", peer)
		}
	}
}

// PublicKey returns the public key of the endpoint's identity, nil
// without one.
func (e *Endpoint) PublicKey() []byte {
	if e.cfg.Identity == nil {
		return nil
	}
	return e.cfg.Identity.PublicKey().Bytes()
}

// SetPeerKey records the public key of peer, as published by whoever
// vouches for the cluster's members (colo's scheduler), and derives the
// link key that links with peer prove from now on, when the endpoint has
// an identity; it replaces an earlier key (a node replaced by another).
// Without an identity it does nothing.
func (e *Endpoint) SetPeerKey(peer transport.NodeID, pub []byte) error {
	if e.cfg.Identity == nil {
		return nil
	}
	pk, err := ecdh.X25519().NewPublicKey(pub)
	if err != nil {
		return fmt.Errorf("tcp: public key of node %d: %w", peer, err)
	}
	key, err := linkKey(e.cfg.Identity, pk, e.cfg.Token, e.cfg.ID, peer)
	if err != nil {
		return fmt.Errorf("tcp: public key of node %d: %w", peer, err)
	}
	e.keys.set(peer, pub, key)
	return nil
}

// keyed reports whether links with peer prove a link key.
func (e *Endpoint) keyed(peer transport.NodeID) bool {
	return e.cfg.Identity != nil && (e.cfg.Keyed == nil || e.cfg.Keyed(peer))
}

// keyFor is the acceptor's choice of a key for a hello from peer
// offering the public key pub (nil for none): the link key, nil for the
// token, or the reason of a refusal.
func (e *Endpoint) keyFor(peer transport.NodeID, pub []byte, deadline time.Time) ([]byte, error) {
	switch {
	case e.cfg.Identity == nil && pub != nil:
		return nil, fmt.Errorf("%s", reasonNoKeys)
	case pub == nil && e.keyed(peer):
		return nil, fmt.Errorf("node %d has to prove the link key published for it: the cluster token alone does not prove a member's id", peer)
	case pub == nil:
		return nil, nil
	}
	return e.keys.wait(peer, pub, deadline, e.done)
}
