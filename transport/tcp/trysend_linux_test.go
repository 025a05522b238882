package tcp

import (
	"context"
	"errors"
	"net"
	"os"
	"testing"
	"time"

	"colo/transport"
)

// TestTakes fills a socket whose peer reads nothing: a fresh socket
// takes a small write, a full one does not, and once the peer has read
// everything it does again.
func TestTakes(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			accepted <- c
		}
		close(accepted)
	}()
	nc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	peer := <-accepted
	if peer == nil {
		t.Fatal("no connection accepted")
	}
	defer peer.Close()
	c := newConn(nc.(*net.TCPConn), 1, ln.Addr().String())
	if !c.takes(100) {
		t.Fatal("a fresh socket does not take 100 bytes")
	}
	// Write until a write no longer goes through: the peer reads
	// nothing, so both its receive buffer and this send buffer fill.
	chunk := make([]byte, 64<<10)
	for {
		nc.SetWriteDeadline(time.Now().Add(200 * time.Millisecond))
		if _, err := nc.Write(chunk); err != nil {
			if !errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatal(err)
			}
			break
		}
	}
	if c.takes(100) {
		t.Fatal("a socket whose writes wait takes 100 bytes")
	}
	// The peer reads everything; its host acknowledges it.
	go func() {
		b := make([]byte, 1<<20)
		for {
			if _, err := peer.Read(b); err != nil {
				return
			}
		}
	}()
	deadline := time.Now().Add(time.Minute)
	for !c.takes(100) {
		if time.Now().After(deadline) {
			t.Fatal("the socket takes nothing a minute after its peer read everything")
		}
		time.Sleep(time.Millisecond)
	}
}

// TestTrySend sends only on a link that is up and not rate-limited,
// plain or over TLS: none before the first Send dialled it, then at
// once, and never on a rate-limited link, whose writes wait for its
// wires.
func TestTrySend(t *testing.T) {
	small := &transport.Message{Header: transport.Header{Type: transport.TypeData, ID: 7}}
	for _, tc := range []struct {
		name string
		tune func(*Config)
	}{{"plain", nil}, {"tls", overTLS(t, newCA(t, "colo test CA"))}} {
		t.Run(tc.name, func(t *testing.T) { trySendUp(t, newEndpoints(t, 2, tc.tune), small) })
	}
	t.Run("rate-limited", func(t *testing.T) {
		eps := newEndpoints(t, 2, func(c *Config) { c.Rate = func(transport.NodeID) float64 { return 1e9 } })
		if err := eps[0].Send(context.Background(), 1, &transport.Message{Body: []byte("first")}); err != nil {
			t.Fatal(err)
		}
		(<-eps[1].Recv()).Release()
		if sent, err := eps[0].TrySend(1, small); sent || err != nil {
			t.Fatalf("sent %v, %v", sent, err)
		}
	})
}

// trySendUp checks TrySend on eps[0]'s link to eps[1]: nothing before
// the first Send, then small sent at once (and received), and neither a
// frame over trySendMax nor one to itself.
func trySendUp(t *testing.T, eps []*Endpoint, small *transport.Message) {
	if sent, err := eps[0].TrySend(1, small); sent || err != nil {
		t.Fatalf("before any connection: sent %v, %v", sent, err)
	}
	if err := eps[0].Send(context.Background(), 1, &transport.Message{Body: []byte("first")}); err != nil {
		t.Fatal(err)
	}
	(<-eps[1].Recv()).Release()
	// The first frame's bytes are acknowledged at once on loopback
	// (well within the socket's quarter); wait for the event anyway.
	deadline := time.Now().Add(time.Minute)
	for {
		sent, err := eps[0].TrySend(1, small)
		if err != nil {
			t.Fatal(err)
		}
		if sent {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("TrySend sent nothing on an idle link for a minute")
		}
		time.Sleep(time.Millisecond)
	}
	m := <-eps[1].Recv()
	if m.ID != 7 || m.Sender != 0 {
		t.Fatalf("received %+v", m.Header)
	}
	m.Release()
	big := &transport.Message{Body: make([]byte, 4<<10)}
	if sent, err := eps[0].TrySend(1, big); sent || err != nil {
		t.Fatalf("a frame over %d bytes: sent %v, %v", trySendMax, sent, err)
	}
	if sent, err := eps[0].TrySend(0, small); sent || err != nil {
		t.Fatalf("to itself: sent %v, %v", sent, err)
	}
}
