package tcp

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"colo/internal/colotest"
	"colo/transport"
	"colo/transport/transporttest"
)

// newKeyedEndpoints returns n endpoints with identities that know each
// other's public keys; ids from 100 on prove the token.
func newKeyedEndpoints(tb testing.TB, n int, tune func(*Config)) []*Endpoint {
	tb.Helper()
	eps := newEndpoints(tb, n, func(c *Config) {
		c.Identity = NewIdentity()
		c.Keyed = func(peer transport.NodeID) bool { return peer < 100 }
		if tune != nil {
			tune(c)
		}
	})
	for _, a := range eps {
		for _, b := range eps {
			if err := a.SetPeerKey(b.ID(), b.PublicKey()); err != nil {
				tb.Fatal(err)
			}
		}
	}
	return eps
}

// TestConformanceKeyed runs the conformance suite on links that prove
// link keys.
func TestConformanceKeyed(t *testing.T) {
	transporttest.Run(t, conformance(newKeyedEndpoints, nil))
}

// dialAs runs the dialer's half of the handshake to ep as node from,
// proving the link key of pub and key when pub is not nil, the token
// otherwise.
func dialAs(t *testing.T, ep *Endpoint, from transport.NodeID, pub, key []byte) error {
	t.Helper()
	nc, err := net.Dial("tcp", ep.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(colotest.HangTimeout(t)))
	if pub == nil {
		return Handshake(nc, from, ep.ID(), testToken)
	}
	return handshake(nc, from, ep.ID(), testToken, pub, func([]byte) ([]byte, error) { return key, nil })
}

// TestLinkKeys: a peer that knows the token cannot claim a member's id,
// neither with the token alone nor with a key of its own; the member
// itself can; an id that needs no key proves the token; and nobody is
// blamed for a refusal.
//
// The key of its own is offered to another process of node 1 whose
// handshake times out in 300 ms, since that refusal waits for the
// handshake's deadline (a replacement's key may be on its way); the
// members wait for each other and for the other strangers as long as a
// test waits for anything, so that nothing slowed down on a loaded
// machine is refused for its slowness.
func TestLinkKeys(t *testing.T) {
	var refused, refusedLate <-chan refusal
	eps := newKeyedEndpoints(t, 2, func(c *Config) {
		c.HandshakeTimeout = colotest.HangTimeout(t)
		if c.ID == 1 {
			refused = recordRefusals(c)
		}
	})
	impatient := newEndpoints(t, 1, func(c *Config) {
		c.ID, c.Identity = 1, NewIdentity()
		c.Keyed = func(peer transport.NodeID) bool { return peer < 100 }
		c.HandshakeTimeout = 300 * time.Millisecond
		refusedLate = recordRefusals(c)
	})[0]
	if err := impatient.SetPeerKey(0, eps[0].PublicKey()); err != nil {
		t.Fatal(err)
	}
	// The members talk.
	if err := eps[0].Send(context.Background(), 1, &transport.Message{Header: transport.Header{ID: 7}}); err != nil {
		t.Fatal(err)
	}
	if m := <-eps[1].Recv(); m.Sender != 0 || m.ID != 7 {
		t.Fatalf("got %+v", m.Header)
	}
	// A stranger with the token, claiming node 0.
	err := dialAs(t, eps[1], 0, nil, nil)
	if !errors.Is(err, transport.ErrRefused) || !strings.Contains(err.Error(), "has to prove the link key") {
		t.Fatalf("token alone, claiming a member: %v", err)
	}
	if r := nextRefusal(t, refused); r.claimed != 0 {
		t.Fatalf("refusal %+v", r)
	}
	// With a key pair of its own, offering it as node 0's: not the one
	// published, refused once the handshake's deadline passed.
	own := NewIdentity()
	late, _ := linkKey(own, impatient.cfg.Identity.PublicKey(), testToken, 0, 1)
	err = dialAs(t, impatient, 0, own.PublicKey().Bytes(), late)
	if !errors.Is(err, transport.ErrRefused) || !strings.Contains(err.Error(), "not the one published") {
		t.Fatalf("own key, claiming a member: %v", err)
	}
	nextRefusal(t, refusedLate)
	noDown(t, impatient)
	key, _ := linkKey(own, eps[1].cfg.Identity.PublicKey(), testToken, 0, 1)
	// With node 0's public key but not its private one: the acceptor's
	// proof does not match, and the stranger gives up.
	err = dialAs(t, eps[1], 0, eps[0].PublicKey(), key)
	if !errors.Is(err, transport.ErrRefused) || !strings.Contains(err.Error(), "wrong link key") {
		t.Fatalf("member's public key, claiming it: %v", err)
	}
	nextRefusal(t, refused)
	// A key offered to an endpoint without an identity is refused.
	plain := newEndpoints(t, 1, nil)[0]
	err = dialAs(t, plain, 5, eps[0].PublicKey(), key)
	if !errors.Is(err, transport.ErrRefused) || !strings.Contains(err.Error(), "no link keys") {
		t.Fatalf("key to a plain endpoint: %v", err)
	}
	noDown(t, eps[1])
	// The members still talk.
	if err := eps[1].Send(context.Background(), 0, &transport.Message{Header: transport.Header{ID: 8}}); err != nil {
		t.Fatal(err)
	}
	if m := <-eps[0].Recv(); m.Sender != 1 || m.ID != 8 {
		t.Fatalf("got %+v", m.Header)
	}
	// An id that needs no key: the token.
	if err := dialAs(t, eps[1], 100, nil, nil); err != nil {
		t.Fatalf("unkeyed id with the token: %v", err)
	}
}

// TestReplacedPeerKey: a node replaced by a new process with a new key
// may dial a peer before the peer learnt the new key, or be dialled by
// it; the peer waits for the key within the handshake's deadline, and
// then accepts, or proves its own.
func TestReplacedPeerKey(t *testing.T) {
	for _, survivorDials := range []bool{false, true} {
		t.Run(map[bool]string{false: "replacement dials", true: "survivor dials"}[survivorDials], func(t *testing.T) { replacedPeerKey(t, survivorDials) })
	}
}

func replacedPeerKey(t *testing.T, survivorDials bool) {
	// The handshakes wait for the key as long as a test waits for
	// anything: the key comes when the goroutine below runs, which on a
	// loaded machine may be late.
	patient := func(c *Config) { c.HandshakeTimeout = colotest.HangTimeout(t) }
	eps := newKeyedEndpoints(t, 2, patient)
	eps[0].Close()
	cfg := DefaultConfig()
	cfg.ID, cfg.Token, cfg.Identity = 0, testToken, NewIdentity()
	patient(&cfg)
	again, err := Listen(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	again.SetPeer(1, eps[1].Addr().String())
	if err := again.SetPeerKey(1, eps[1].PublicKey()); err != nil {
		t.Fatal(err)
	}
	go func() {
		time.Sleep(100 * time.Millisecond)
		eps[1].SetPeerKey(0, again.PublicKey())
	}()
	if survivorDials {
		eps[1].SetPeer(0, again.Addr().String())
		if err := eps[1].Send(context.Background(), 0, &transport.Message{Header: transport.Header{ID: 9}}); err != nil {
			t.Fatal(err)
		}
		if m := <-again.Recv(); m.Sender != 1 || m.ID != 9 {
			t.Fatalf("got %+v", m.Header)
		}
		return
	}
	if err := again.Send(context.Background(), 1, &transport.Message{Header: transport.Header{ID: 9}}); err != nil {
		t.Fatal(err)
	}
	if m := <-eps[1].Recv(); m.Sender != 0 || m.ID != 9 {
		t.Fatalf("got %+v", m.Header)
	}
}

func TestSetPeerKeyErrors(t *testing.T) {
	ep := newKeyedEndpoints(t, 1, nil)[0]
	if err := ep.SetPeerKey(3, []byte("short")); err == nil || !strings.Contains(err.Error(), "node 3") {
		t.Fatalf("short key: %v", err)
	}
	if err := newEndpoints(t, 1, nil)[0].SetPeerKey(3, []byte("short")); err != nil {
		t.Fatalf("without an identity: %v", err)
	}
}
