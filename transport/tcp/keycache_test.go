package tcp

import (
	"context"
	"slices"
	"testing"
	"time"

	"colo/internal/colotest"
	"colo/kv"
	"colo/transport"
)

// cacheList returns a key list long enough to be cached.
func cacheList(n int, step uint64) []uint64 {
	keys := make([]uint64, n)
	for i := range keys {
		keys[i] = uint64(i) * step
	}
	return keys
}

// sendKeys sends keys from a to peer with the id and fails unless the
// peer's endpoint b receives them exactly.
func sendKeys(t *testing.T, a, b *Endpoint, peer transport.NodeID, keys []uint64, id uint64) {
	t.Helper()
	m := &transport.Message{Header: transport.Header{ID: id}, KV: kv.Batch{Keys: keys, Vals: make([]float32, len(keys))}}
	if err := a.Send(context.Background(), peer, m); err != nil {
		t.Fatal(err)
	}
	expectKeys(t, b, keys, id)
}

// expectKeys fails unless ep's next message has the id and the keys.
func expectKeys(t *testing.T, ep *Endpoint, keys []uint64, id uint64) {
	t.Helper()
	select {
	case got := <-ep.Recv():
		if got.ID != id || !slices.Equal(got.KV.Keys, keys) {
			t.Fatalf("received message %d with %d keys, want %d with %d", got.ID, len(got.KV.Keys), id, len(keys))
		}
	case <-time.After(colotest.HangTimeout(t)):
		t.Fatalf("message %d not received", id)
	}
}

// TestKeyCacheNewConnection: a link dialled afresh (the peer moved, as a
// replacement does) starts with no key slots on either side, so the
// lists cached on the old connection are sent again, and cached again.
func TestKeyCacheNewConnection(t *testing.T) {
	eps := newEndpoints(t, 2, nil)
	keys := cacheList(2000, 3)
	for i := range 4 {
		sendKeys(t, eps[0], eps[1], 1, keys, uint64(i))
	}
	moved := listenAs(t, 1)
	eps[0].SetPeer(1, moved.Addr().String())
	for i := range 4 {
		sendKeys(t, eps[0], moved, 1, keys, uint64(10+i))
	}
	// The old receiver closes; its link is dialled again.
	eps[0].SetPeer(1, eps[1].Addr().String())
	for i := range 3 {
		sendKeys(t, eps[0], eps[1], 1, keys, uint64(20+i))
	}
}

// TestKeyCacheCancelledSends: a send cancelled before its frame left
// (waiting for a slow link's tokens) does not count as a store of its
// keys, one cancelled mid-frame breaks the link and the next starts
// afresh: whatever the cancellations did, every message that was sent
// arrives with its keys.
func TestKeyCacheCancelledSends(t *testing.T) {
	eps := newEndpoints(t, 2, func(c *Config) {
		c.Rate = func(transport.NodeID) float64 { return 200e3 }
		c.Burst = 1024
	})
	id := uint64(0)
	drain := &transport.Message{KV: kv.Batch{Vals: make([]float32, 4096)}}
	for i := range 20 {
		// Each list is seen once, then its store is cancelled (while the
		// link waits for the tokens a large message took, or not), then
		// it is sent again.
		keys := cacheList(300, uint64(i+2))
		sendKeys(t, eps[0], eps[1], 1, keys, id)
		id++
		drain.ID = id
		if err := eps[0].Send(context.Background(), 1, drain); err != nil {
			t.Fatal(err)
		}
		expectKeys(t, eps[1], nil, id)
		id++
		ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
		m := &transport.Message{Header: transport.Header{ID: id}, KV: kv.Batch{Keys: keys}}
		if err := eps[0].Send(ctx, 1, m); err == nil {
			expectKeys(t, eps[1], keys, id)
		}
		cancel()
		id++
		for range 2 {
			sendKeys(t, eps[0], eps[1], 1, keys, id)
			id++
		}
	}
}

// TestStatsWithKeyCache: a list sent again is counted at its full frame
// size, while the wire carries its keys only until the receiver keeps
// them: twice (sent once, then stored), never after.
func TestStatsWithKeyCache(t *testing.T) {
	eps := newEndpoints(t, 2, nil)
	proxy := newCountingProxy(t, eps[1].Addr().String())
	eps[0].SetPeer(1, proxy.ln.Addr().String())
	keys := cacheList(5000, 7)
	const sends = 6
	for i := range sends {
		sendKeys(t, eps[0], eps[1], 1, keys, uint64(i))
	}
	eps[0].Close()
	wire := <-proxy.bytes
	hello := int64(helloLen + proofLen)
	m := &transport.Message{KV: kv.Batch{Keys: keys, Vals: make([]float32, len(keys))}}
	size := transport.FrameSize(m, DefaultConfig().Frame)
	keyBytes, _ := kv.KeysSize(keys) // gap-coded: smaller than raw
	sent := eps[0].Stats().Links[1]
	if sent.BytesSent != uint64(sends*size) || eps[1].Stats().Links[0].BytesRecv != sent.BytesSent {
		t.Fatalf("counted %d bytes sent, %d received; want %d", sent.BytesSent, eps[1].Stats().Links[0].BytesRecv, sends*size)
	}
	if want := int64(sends*size - (sends-2)*keyBytes); wire-hello != want {
		t.Fatalf("wire carried %d bytes after the hello, want %d", wire-hello, want)
	}
}
