package tcp

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"colo/internal/colotest"
	"colo/kv"
	"colo/transport"
)

// waitDown returns the next failure reported by ep.
func waitDown(t *testing.T, ep *Endpoint) *transport.PeerError {
	t.Helper()
	select {
	case pe := <-ep.Down():
		return pe
	case <-time.After(colotest.HangTimeout(t)):
		t.Fatalf("node %d reports no failure", ep.ID())
		return nil
	}
}

// listenAs starts an endpoint with node id, another process of a node
// (a replacement), closed when the test ends.
func listenAs(t *testing.T, id transport.NodeID) *Endpoint {
	t.Helper()
	cfg := DefaultConfig()
	cfg.ID, cfg.Token = id, testToken
	ep, err := Listen(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ep.Close() })
	return ep
}

// refusal is one call of Config.Refused.
type refusal struct {
	addr    string
	claimed transport.NodeID
	err     error
}

// recordRefusals sets c.Refused to send each refusal on the returned
// channel.
func recordRefusals(c *Config) <-chan refusal {
	ch := make(chan refusal, 64)
	c.Refused = func(addr string, claimed transport.NodeID, err error) { ch <- refusal{addr, claimed, err} }
	return ch
}

// nextRefusal returns the next refusal on ch, failing when none comes
// (a hang).
func nextRefusal(t *testing.T, ch <-chan refusal) refusal {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(colotest.HangTimeout(t)):
		t.Fatal("no refusal")
		return refusal{}
	}
}

// noDown fails if ep reported a failure.
func noDown(t *testing.T, ep *Endpoint) {
	t.Helper()
	select {
	case pe := <-ep.Down():
		t.Fatalf("node %d reported %v", ep.ID(), pe)
	default:
	}
}

func TestWrongTokenRefused(t *testing.T) {
	// A dialer with the wrong token, then an acceptor with the wrong
	// token: either way, both sides refuse.
	for _, c := range []struct {
		name             string
		dialer, acceptor string
	}{
		{"dialer wrong", "not the token", testToken},
		{"acceptor wrong", testToken, "not the token"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var refused <-chan refusal
			eps := newEndpoints(t, 2, func(cfg *Config) {
				if cfg.ID == 1 {
					cfg.Token = c.acceptor
					refused = recordRefusals(cfg)
				}
			})
			other := newEndpoints(t, 1, func(cfg *Config) { cfg.ID, cfg.Token = 7, c.dialer })[0]
			other.SetPeer(1, eps[1].Addr().String())
			err := other.Send(context.Background(), 1, &transport.Message{})
			var pe *transport.PeerError
			if !errors.As(err, &pe) || pe.Peer != 1 || !errors.Is(err, transport.ErrRefused) || !strings.Contains(err.Error(), "wrong cluster token: the acceptor's proof did not match") {
				t.Fatalf("dialer: %v, want a refusal of peer 1 for the token", err)
			}
			// The acceptor says whom it refused and why, as a log line, not
			// as a failure of node 7.
			r := nextRefusal(t, refused)
			if r.claimed != 7 || !errors.Is(r.err, transport.ErrRefused) || r.err.Error() != `refused by the dialer: "wrong cluster token: the acceptor's proof did not match"` || r.addr == "" {
				t.Fatalf("acceptor: %+v", r)
			}
			t.Logf("dialer: %v\nacceptor: %s claiming node %d: %v", err, r.addr, r.claimed, r.err)
			noDown(t, eps[1])
			noDown(t, other)
		})
	}
}

// TestHandshakeTokens runs both halves of the handshake over a pipe for
// every pair of tokens: equal ones (empty included: an open cluster)
// are accepted, different ones refused on both sides with the reason.
func TestHandshakeTokens(t *testing.T) {
	for _, c := range []struct {
		dialer, acceptor string
		want             string // "" to accept; else in both sides' errors
	}{
		{"tok", "tok", ""},
		{"", "", ""},
		{"tok", "other", "wrong cluster token: the acceptor's proof did not match"},
		{"other", "tok", "wrong cluster token: the acceptor's proof did not match"},
		{"tok", "tok2", "wrong cluster token: the acceptor's proof did not match"},
		{"", "tok", "wrong cluster token: the dialer has none and this node has one"},
		{"tok", "", "wrong cluster token: this node has none (an insecure cluster) and the dialer has one"},
	} {
		a, b := net.Pipe()
		a.SetDeadline(time.Now().Add(colotest.HangTimeout(t)))
		b.SetDeadline(time.Now().Add(colotest.HangTimeout(t)))
		type result struct {
			from transport.NodeID
			err  error
		}
		done := make(chan result, 1)
		go func() {
			from, err := accept(b, 2, c.acceptor, nil, nil)
			b.Close()
			done <- result{from, err}
		}()
		derr := Handshake(a, 5, 2, c.dialer)
		a.Close()
		r := <-done
		if r.from != 5 {
			t.Errorf("%q to %q: acceptor saw node %d, want 5", c.dialer, c.acceptor, r.from)
		}
		if c.want == "" {
			if derr != nil || r.err != nil {
				t.Errorf("%q to %q: dialer %v, acceptor %v; want both accepted", c.dialer, c.acceptor, derr, r.err)
			}
			continue
		}
		for side, err := range map[string]error{"dialer": derr, "acceptor": r.err} {
			if !errors.Is(err, transport.ErrRefused) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%q to %q: %s: %v, want a refusal: %s", c.dialer, c.acceptor, side, err, c.want)
			}
		}
	}
}

// stranger dials ep and plays the dialer's side by hand: it sends hello,
// and, when the node answers with a challenge, the proof that prove
// returns for it (nil: none, the stranger falls silent). It reads until
// the node closes the connection.
func stranger(t *testing.T, ep *Endpoint, hello []byte, prove func(c challenge) []byte) {
	t.Helper()
	nc, err := net.Dial("tcp", ep.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(colotest.HangTimeout(t)))
	nc.Write(hello)
	if prove != nil {
		if c, _, ok, err := readChallenge(nc); err == nil && ok {
			if p := prove(c); p != nil {
				nc.Write(p)
			}
		}
	}
	io.Copy(io.Discard, nc) // the acceptor closes the connection
}

// TestSpoofedHandshakes: strangers claim the id of a node whose link is
// up, with no token, proofs made with a wrong token or of random bytes,
// the acceptor's own proof sent back, the handshake of the previous
// version that sent the token, a recorded handshake replayed, or send
// garbage, an oversized refusal, a refusal forging a log line or fall
// silent. Each is refused and told to Config.Refused; nothing is
// reported on Down, and the real node's link keeps working.
//
// The silent strangers knock at another process of node 1 whose
// handshake times out in 300 ms; the others at node 1 itself, which
// waits for a stranger's next bytes as long as a test waits for
// anything, so that a stranger slowed down on a loaded machine is
// refused for what it sent, never for its slowness.
func TestSpoofedHandshakes(t *testing.T) {
	var refused, refusedSilent <-chan refusal
	eps := newEndpoints(t, 2, func(c *Config) {
		if c.ID == 1 {
			refused = recordRefusals(c)
			c.HandshakeTimeout = colotest.HangTimeout(t)
		}
	})
	impatient := newEndpoints(t, 1, func(c *Config) {
		c.ID = 1
		refusedSilent = recordRefusals(c)
		c.HandshakeTimeout = 300 * time.Millisecond
	})[0]
	ctx := context.Background()
	// The real node 0's link, recorded on its way.
	proxy := newCountingProxy(t, eps[1].Addr().String())
	eps[0].SetPeer(1, proxy.ln.Addr().String())
	if err := eps[0].Send(ctx, 1, &transport.Message{}); err != nil {
		t.Fatal(err)
	}
	<-eps[1].Recv()
	recorded := proxy.sent()
	if len(recorded) < helloLen+proofLen {
		t.Fatalf("recorded %d bytes", len(recorded))
	}
	sameLength := strings.Repeat("x", len(testToken))
	withToken := func(from transport.NodeID) hello { return hello{from: from, to: 1, token: true, nonce: newNonce()} }
	proofWith := func(h hello, token string) func(c challenge) []byte {
		return func(c challenge) []byte {
			return appendProof(nil, mac([]byte(token), labelDialer, h.from, h.to, &h.nonce, &c.nonce))
		}
	}
	random := func(challenge) []byte { n := newNonce(); return appendProof(nil, n) }
	// The hello of version 1: the token itself.
	v1 := []byte{transport.Magic, 1, 'H', 0, 0, 0, 0, 0, 1, 0, 0, 0, byte(len(testToken)), 0}
	v1 = append(v1, testToken...)
	oversized := appendReply(nil, reply{id: 0})
	binary.LittleEndian.PutUint16(oversized[8:], maxReasonLen+1)
	h0, h1, h2 := withToken(0), withToken(1), withToken(0)
	for _, c := range []struct {
		name    string
		hello   []byte
		prove   func(challenge) []byte
		claimed transport.NodeID
		want    string
	}{
		{"wrong token", appendHello(nil, h0), proofWith(h0, "wrong"), 0, "refused: wrong cluster token: the dialer's proof did not match"},
		{"token of the right length", appendHello(nil, h2), proofWith(h2, sameLength), 0, "refused: wrong cluster token: the dialer's proof did not match"},
		{"random proof", appendHello(nil, withToken(0)), random, 0, "refused: wrong cluster token: the dialer's proof did not match"},
		{"the acceptor's proof reflected", appendHello(nil, withToken(0)), func(c challenge) []byte { return appendProof(nil, c.mac) }, 0, "refused: wrong cluster token: the dialer's proof did not match"},
		{"the receiver's own id", appendHello(nil, h1), proofWith(h1, "wrong"), 1, "refused: wrong cluster token: the dialer's proof did not match"},
		{"empty token", appendHello(nil, hello{from: 0, to: 1}), nil, 0, "refused: wrong cluster token: the dialer has none and this node has one"},
		{"replayed handshake", recorded[:helloLen+proofLen], nil, 0, "refused: wrong cluster token: the dialer's proof did not match"},
		{"version 1 with the token", v1, nil, 0, "handshake version 1, want 3"},
		{"garbage", []byte("\x00\x01garbage that is no hello"), nil, 0, "not a colo node: magic 0x0, want 0xc6"},
		{"oversized refusal", appendHello(nil, withToken(0)), func(challenge) []byte { return oversized }, 0, "reason of 1025 bytes, limit 1024"},
		{"refusal forging a log line", appendHello(nil, withToken(0)), func(challenge) []byte {
			return appendReply(nil, reply{reason: "no\nscheduler: worker 0 failed\x1b[2K"})
		}, 0, `refused by the dialer: "no?scheduler: worker 0 failed?[2K"`}, // quoted: the peer's words, not this node's
		{"silent after the challenge", appendHello(nil, withToken(0)), func(challenge) []byte { return nil }, 0, "i/o timeout"},
		{"silent after part of a hello", appendHello(nil, withToken(0))[:10], nil, 0, "i/o timeout"},
	} {
		ep, ch := eps[1], refused
		if c.want == "i/o timeout" {
			ep, ch = impatient, refusedSilent
		}
		stranger(t, ep, c.hello, c.prove)
		r := nextRefusal(t, ch)
		if r.claimed != c.claimed || !strings.Contains(r.err.Error(), c.want) {
			t.Errorf("%s: refused as %d: %v; want claimed %d: %s", c.name, r.claimed, r.err, c.claimed, c.want)
		}
		noDown(t, ep)
	}
	// The real node 0 is still connected and heard by node 1 (the
	// silent strangers knocked at impatient, which they leave as
	// noDown checked, not at node 1).
	if err := eps[0].Send(ctx, 1, &transport.Message{Header: transport.Header{ID: 42}}); err != nil {
		t.Fatal(err)
	}
	if m := <-eps[1].Recv(); m.Sender != 0 || m.ID != 42 {
		t.Fatalf("after the strangers: %+v", m.Header)
	}
	noDown(t, eps[1])
	noDown(t, eps[0])
}

// TestTokenNotOnTheWire records both directions of a link's handshake
// and its first frames: the token is in neither, nor is any 8-byte piece
// of it.
func TestTokenNotOnTheWire(t *testing.T) {
	const token = "a-token-that-must-never-be-seen-on-the-wire"
	eps := newEndpoints(t, 2, func(c *Config) { c.Token = token })
	proxy := newCountingProxy(t, eps[1].Addr().String())
	eps[0].SetPeer(1, proxy.ln.Addr().String())
	for i := range 3 {
		if err := eps[0].Send(context.Background(), 1, &transport.Message{Header: transport.Header{ID: uint64(i)}, Body: []byte("payload")}); err != nil {
			t.Fatal(err)
		}
		<-eps[1].Recv()
	}
	sent, answered := proxy.sent(), proxy.answered()
	if len(sent) < helloLen+proofLen || len(answered) < challengeLen+10 {
		t.Fatalf("recorded %d bytes sent and %d answered", len(sent), len(answered))
	}
	for i := 0; i+8 <= len(token); i++ {
		for dir, b := range map[string][]byte{"dialer": sent, "acceptor": answered} {
			if bytes.Contains(b, []byte(token[i:i+8])) {
				t.Fatalf("the %s wrote %q, a piece of the token: %q", dir, token[i:i+8], b)
			}
		}
	}
	if !bytes.Contains(sent, []byte("payload")) {
		t.Fatal("the recording misses the frames")
	}
}

func TestWrongNodeRefused(t *testing.T) {
	eps := newEndpoints(t, 2, nil)
	eps[0].SetPeer(5, eps[1].Addr().String()) // a stale address book
	err := eps[0].Send(context.Background(), 5, &transport.Message{})
	if !errors.Is(err, transport.ErrRefused) || !strings.Contains(err.Error(), "this is node 1, not node 5") {
		t.Fatalf("Send to the wrong node: %v", err)
	}
}

// rawPeer connects to ep and completes the handshake as node from.
func rawPeer(t *testing.T, ep *Endpoint, from transport.NodeID) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", ep.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(colotest.HangTimeout(t)))
	if err := Handshake(c, from, ep.ID(), testToken); err != nil {
		t.Fatalf("handshake: %v", err)
	}
	c.SetDeadline(time.Time{})
	return c
}

// TestOversizedFrameFromPeer sends a length prefix announcing 1 GiB to a
// node whose limit is 1 MiB: the node refuses it without allocating it
// and names the sender.
func TestOversizedFrameFromPeer(t *testing.T) {
	ep := newEndpoints(t, 1, func(c *Config) { c.Frame.MaxFrame = 1 << 20 })[0]
	c := rawPeer(t, ep, 9)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	c.Write(binary.LittleEndian.AppendUint32(nil, 1<<30))
	pe := waitDown(t, ep)
	runtime.ReadMemStats(&after)
	if pe.Peer != 9 || !errors.Is(pe, transport.ErrFrameTooLarge) {
		t.Fatalf("reported %v", pe)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 16<<20 {
		t.Fatalf("allocated %d bytes while refusing the frame", grew)
	}
	// The connection is closed: the read ends, and not at its deadline.
	c.SetReadDeadline(time.Now().Add(colotest.HangTimeout(t)))
	if _, err := c.Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("connection still open: read %v", err)
	}
}

func TestMalformedFrameFromPeer(t *testing.T) {
	good, _ := transport.AppendFrame(nil, &transport.Message{}, 9, 0, transport.FrameOptions{})
	spoofed, _ := transport.AppendFrame(nil, &transport.Message{}, 8, 0, transport.FrameOptions{})
	bad := bytes.Clone(good)
	bad[4] = 'X'
	for name, frame := range map[string][]byte{"bad magic": bad, "spoofed sender": spoofed} {
		ep := newEndpoints(t, 1, nil)[0]
		c := rawPeer(t, ep, 9)
		c.Write(good)
		if m := <-ep.Recv(); m.Sender != 9 {
			t.Fatalf("%s: got %v", name, m)
		}
		c.Write(frame)
		if pe := waitDown(t, ep); pe.Peer != 9 || !errors.Is(pe, transport.ErrBadFrame) {
			t.Fatalf("%s: reported %v", name, pe)
		}
	}
}

// TestNotAColoNode checks that a stranger is disconnected quietly.
func TestNotAColoNode(t *testing.T) {
	eps := newEndpoints(t, 2, nil)
	c, err := net.Dial("tcp", eps[1].Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	c.SetReadDeadline(time.Now().Add(colotest.HangTimeout(t)))
	if n, err := c.Read(make([]byte, 100)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("stranger got %d bytes and %v, want its connection closed", n, err)
	}
	if err := eps[0].Send(context.Background(), 1, &transport.Message{}); err != nil {
		t.Fatal(err)
	}
	<-eps[1].Recv()
	select {
	case pe := <-eps[1].Down():
		t.Fatalf("stranger reported as %v", pe)
	default:
	}
}

func TestIdleTimeout(t *testing.T) {
	ep := newEndpoints(t, 1, func(c *Config) { c.IdleTimeout = 200 * time.Millisecond })[0]
	start := time.Now()
	rawPeer(t, ep, 4) // says hello, then nothing
	pe := waitDown(t, ep)
	if pe.Peer != 4 || !strings.Contains(pe.Error(), "nothing received for 200ms") {
		t.Fatalf("reported %v", pe)
	}
	if d := time.Since(start); d < 200*time.Millisecond {
		t.Fatalf("declared dead after %v", d)
	}
}

// TestRateLimit sends 6 MB over a link limited to 160 Mbit/s (20 MB/s) by
// a bandwidth matrix and checks that the link paces its writes: never
// faster than the limit past the burst. No floor: under -race on two
// loaded cores it fell to 4.7 MB/s of the 20 (load 26).
func TestRateLimit(t *testing.T) {
	bw, err := transport.ParseBandwidth(strings.NewReader("0 160mbit\n160mbit 0\n"), "links")
	if err != nil {
		t.Fatal(err)
	}
	machine := func(id transport.NodeID) int { return int(id) } // one node per machine
	eps := newEndpoints(t, 2, func(c *Config) {
		self := c.ID
		c.Rate = func(p transport.NodeID) float64 { return bw.Rate(machine(self), machine(p)) }
	})
	go func() {
		for m := range eps[1].Recv() {
			m.Release()
		}
	}()
	msg := &transport.Message{KV: kv.Batch{Vals: make([]float32, 512<<10)}} // 2 MB
	size := transport.FrameSize(msg, transport.FrameOptions{})
	start := time.Now()
	const n = 3
	for range n {
		if err := eps[0].Send(context.Background(), 1, msg); err != nil {
			t.Fatal(err)
		}
	}
	elapsed := time.Since(start)
	limit := bw.Rate(0, 1)
	// The first Burst bytes are free.
	rate := float64(n*size-DefaultConfig().Burst) / elapsed.Seconds()
	t.Logf("%d bytes in %v: %.1f MB/s, limit %.1f MB/s", n*size, elapsed, rate/1e6, limit/1e6)
	if rate > 1.1*limit {
		t.Fatalf("achieved %.1f MB/s on a %.1f MB/s link", rate/1e6, limit/1e6)
	}
}

func TestRestartedPeer(t *testing.T) {
	eps := newEndpoints(t, 2, nil)
	if err := eps[0].Send(context.Background(), 1, &transport.Message{}); err != nil {
		t.Fatal(err)
	}
	<-eps[1].Recv()
	eps[1].Close()
	waitDown(t, eps[0])
	again := listenAs(t, 1)
	eps[0].SetPeer(1, again.Addr().String())
	// The first Send may still fail on the old connection; then the link
	// is dialled afresh.
	if err := eps[0].Send(context.Background(), 1, &transport.Message{Header: transport.Header{ID: 1}}); err != nil {
		if err := eps[0].Send(context.Background(), 1, &transport.Message{Header: transport.Header{ID: 1}}); err != nil {
			t.Fatal(err)
		}
	}
	if m := <-again.Recv(); m.ID != 1 {
		t.Fatalf("got %v", m)
	}
}

// TestMovedPeer: a peer given a new address (SetPeer), as a node's
// replacement is, gets the next Send at that address, even while the
// link to the old one is still up (its process gone but not noticed
// yet, where a frame would be lost); the old link's end is no failure
// of the peer.
func TestMovedPeer(t *testing.T) {
	eps := newEndpoints(t, 2, nil)
	if err := eps[0].Send(context.Background(), 1, &transport.Message{}); err != nil {
		t.Fatal(err)
	}
	<-eps[1].Recv()
	moved := listenAs(t, 1)
	eps[0].SetPeer(1, moved.Addr().String())
	if err := eps[0].Send(context.Background(), 1, &transport.Message{Header: transport.Header{ID: 7}}); err != nil {
		t.Fatal(err)
	}
	select {
	case m := <-moved.Recv():
		if m.ID != 7 {
			t.Fatalf("got %v at the new address", m)
		}
	case m := <-eps[1].Recv():
		t.Fatalf("%v went to the old address", m)
	case <-time.After(colotest.HangTimeout(t)):
		t.Fatal("nothing arrived")
	}
	select {
	case pe := <-eps[0].Down():
		t.Fatalf("the end of the link to the old address reported: %v", pe)
	case <-time.After(50 * time.Millisecond):
	}
}

// TestClosedPeer: once a peer closed its endpoint, sends to it fail with
// an error wrapping ErrPeerClosed, whether the write meets the closed
// connection (a broken pipe or a reset) or the link is dialled afresh
// and refused.
func TestClosedPeer(t *testing.T) {
	eps := newEndpoints(t, 2, nil)
	m := &transport.Message{KV: kv.Batch{Vals: make([]float32, 256<<10)}}
	if err := eps[0].Send(context.Background(), 1, m); err != nil {
		t.Fatal(err)
	}
	eps[1].Close()
	sends := 0
	for ; sends < 100; sends++ {
		err := eps[0].Send(context.Background(), 1, m)
		if err == nil {
			continue // into the socket's buffer before the peer's end was seen
		}
		if !errors.Is(err, transport.ErrPeerClosed) || !strings.Contains(err.Error(), "peer 1") {
			t.Fatalf("send %d to a closed peer: %v, want an error wrapping ErrPeerClosed", sends, err)
		}
		if sends < 5 {
			continue // both kinds: on the old connection, then dialled afresh
		}
		return
	}
	t.Fatalf("%d sends to a closed peer succeeded", sends)
}

// TestPeerGoneInHandshake: a peer that closes the connection while the
// link is being opened (a process killed then) is a peer that closed its
// link, so that its failure is left to the scheduler, which sees it too,
// and not blamed on the sender.
func TestPeerGoneInHandshake(t *testing.T) {
	for _, reset := range []bool{false, true} {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			if reset {
				c.(*net.TCPConn).SetLinger(0) // an RST, as from a killed process
			}
			c.Close()
		}()
		eps := newEndpoints(t, 1, nil)
		eps[0].SetPeer(1, ln.Addr().String())
		err = eps[0].Send(context.Background(), 1, &transport.Message{})
		ln.Close()
		if !errors.Is(err, transport.ErrPeerClosed) || !strings.Contains(err.Error(), "peer 1") {
			t.Fatalf("reset %v: send to a peer gone in the handshake: %v, want an error wrapping ErrPeerClosed", reset, err)
		}
	}
}

func TestListener(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.Addr, cfg.Listener, cfg.Token = "", ln, testToken
	ep, err := Listen(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if ep.Addr().String() != ln.Addr().String() {
		t.Fatalf("listening on %v", ep.Addr())
	}
	ep.Close()
	if _, err := net.Dial("tcp", ln.Addr().String()); err == nil {
		t.Fatal("listener still open after Close")
	}
}

func TestConfigValidate(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatal(err)
	}
	for name, f := range map[string]func(*Config){
		"Addr":             func(c *Config) { c.Addr = "" },
		"Token":            func(c *Config) { c.Token = strings.Repeat("x", MaxTokenLen+1) },
		"MaxFrame":         func(c *Config) { c.Frame.MaxFrame = 10 },
		"Burst":            func(c *Config) { c.Burst = 10 },
		"InboxSize":        func(c *Config) { c.InboxSize = -1 },
		"DialTimeout":      func(c *Config) { c.DialTimeout = 0 },
		"HandshakeTimeout": func(c *Config) { c.HandshakeTimeout = -1 },
		"IdleTimeout":      func(c *Config) { c.IdleTimeout = -1 },
		"SocketBuffer":     func(c *Config) { c.SocketBuffer = -1 },
		"LocalSendBuffer":  func(c *Config) { c.LocalSendBuffer = -1 },
	} {
		c := DefaultConfig()
		f(&c)
		err := c.Validate()
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: Validate = %v", name, err)
		}
		if _, err := Listen(c); err == nil {
			t.Errorf("%s: Listen accepted an invalid config", name)
		}
	}
}

// FuzzHandshake feeds arbitrary bytes to every decoder of the handshake
// (what decodes re-encodes to the input's prefix) and to both halves of
// it, which must never accept them: without the token nothing can answer
// a fresh nonce.
func FuzzHandshake(f *testing.F) {
	h := hello{from: 1, to: 2, token: true, nonce: newNonce()}
	c := challenge{id: 2, token: true, nonce: newNonce()}
	c.mac = mac([]byte("secret"), labelAcceptor, 1, 2, &h.nonce, &c.nonce)
	f.Add(appendHello(nil, h))
	f.Add(appendChallenge(nil, c))
	f.Add(appendProof(nil, mac([]byte("secret"), labelDialer, 1, 2, &h.nonce, &c.nonce)))
	f.Add(append(appendHello(nil, h), appendProof(nil, c.mac)...))
	f.Add(appendReply(nil, reply{accepted: true, id: 3}))
	f.Add(appendReply(nil, reply{id: 3, reason: "wrong cluster token"}))
	f.Add(append(appendChallenge(nil, c), appendReply(nil, reply{accepted: true, id: 2})...))
	f.Add([]byte("GET / HTTP/1.1\r\n"))
	// With link keys: the public keys follow the hello and the challenge.
	id := NewIdentity()
	hk, ck := h, c
	hk.pub, ck.pub = id.PublicKey().Bytes(), id.PublicKey().Bytes()
	f.Add(appendHello(nil, hk))
	f.Add(appendChallenge(nil, ck))
	f.Fuzz(func(t *testing.T, data []byte) {
		if h, err := readHello(bytes.NewReader(data)); err == nil {
			if enc := appendHello(nil, h); !bytes.HasPrefix(data, enc) {
				t.Fatalf("hello %+v re-encodes to %x, input %x", h, enc, data)
			}
		}
		if c, r, ok, err := readChallenge(bytes.NewReader(data)); err == nil {
			enc := appendReply(nil, r)
			if ok {
				enc = appendChallenge(nil, c)
			}
			if !reencodes(data, enc) {
				t.Fatalf("challenge %+v / %+v re-encodes to %x, input %x", c, r, enc, data)
			}
		}
		if m, r, ok, err := readProof(bytes.NewReader(data)); err == nil {
			enc := appendReply(nil, r)
			if ok {
				enc = appendProof(nil, m)
			}
			if !reencodes(data, enc) {
				t.Fatalf("proof %x / %+v re-encodes to %x, input %x", m, r, enc, data)
			}
		}
		if r, err := readReply(bytes.NewReader(data)); err == nil {
			if enc := appendReply(nil, r); !reencodes(data, enc) {
				t.Fatalf("reply %+v re-encodes to %x, input %x", r, enc, data)
			}
			for _, c := range []byte(r.reason) {
				if c < 0x20 || c > 0x7e {
					t.Fatalf("reason %q not printable", r.reason)
				}
			}
		}
		rw := struct {
			io.Reader
			io.Writer
		}{bytes.NewReader(data), io.Discard}
		if _, err := accept(rw, 2, "secret", nil, nil); err == nil {
			t.Fatalf("the acceptor accepted %x", data)
		}
		rw.Reader = bytes.NewReader(data)
		keyFor := func(transport.NodeID, []byte) ([]byte, error) { return []byte("link key"), nil }
		if _, err := accept(rw, 2, "secret", id.PublicKey().Bytes(), keyFor); err == nil {
			t.Fatalf("the acceptor with link keys accepted %x", data)
		}
		rw.Reader = bytes.NewReader(data)
		if err := Handshake(rw, 1, 2, "secret"); err == nil {
			t.Fatalf("the dialer accepted %x", data)
		}
		rw.Reader = bytes.NewReader(data)
		if err := handshake(rw, 1, 2, "secret", id.PublicKey().Bytes(), func([]byte) ([]byte, error) { return []byte("link key"), nil }); err == nil {
			t.Fatalf("the dialer with link keys accepted %x", data)
		}
	})
}

// reencodes reports whether enc, a decoded message encoded again, is the
// start of data, but for the reason of a reply, whose bytes that are not
// printable ASCII decode as '?'.
func reencodes(data, enc []byte) bool {
	if len(enc) > len(data) {
		return false
	}
	want := bytes.Clone(data[:len(enc)])
	if len(want) >= 10 && (want[2] == kindRefuse || want[2] == kindAccept) {
		printable(want[10:])
	}
	return bytes.Equal(want, enc)
}

// countingProxy forwards one connection to target, counts the bytes it
// carried towards target and records the first 64 KiB of each direction.
type countingProxy struct {
	ln    net.Listener
	bytes chan int64

	mu             sync.Mutex
	toward, answer []byte
}

// recorder appends what is written to it to *dst, up to 64 KiB.
type recorder struct {
	mu  *sync.Mutex
	dst *[]byte
}

func (r recorder) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if room := 64<<10 - len(*r.dst); room > 0 {
		*r.dst = append(*r.dst, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

func newCountingProxy(t *testing.T, target string) *countingProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &countingProxy{ln: ln, bytes: make(chan int64, 1)}
	go func() {
		in, err := ln.Accept()
		if err != nil {
			return
		}
		out, err := net.Dial("tcp", target)
		if err != nil {
			in.Close()
			return
		}
		go io.Copy(io.MultiWriter(recorder{&p.mu, &p.answer}, in), out)
		n, _ := io.Copy(io.MultiWriter(recorder{&p.mu, &p.toward}, out), in)
		out.Close()
		p.bytes <- n
	}()
	t.Cleanup(func() { ln.Close() })
	return p
}

// sent returns what the proxy carried towards target so far.
func (p *countingProxy) sent() []byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	return bytes.Clone(p.toward)
}

// answered returns what the proxy carried back from target so far.
func (p *countingProxy) answered() []byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	return bytes.Clone(p.answer)
}

// TestStatsMatchWire checks the counters against the bytes that crossed
// the network: everything after the handshake is counted, exactly.
func TestStatsMatchWire(t *testing.T) {
	eps := newEndpoints(t, 2, nil)
	proxy := newCountingProxy(t, eps[1].Addr().String())
	eps[0].SetPeer(1, proxy.ln.Addr().String())
	keys := make([]uint64, 5000)
	for i := range keys {
		keys[i] = uint64(i * i)
	}
	for i := range 20 {
		m := &transport.Message{Body: make([]byte, i), KV: kv.Batch{Keys: keys[:i*200], Vals: make([]float32, i*100)}}
		if err := eps[0].Send(context.Background(), 1, m); err != nil {
			t.Fatal(err)
		}
		<-eps[1].Recv()
	}
	eps[0].Close()
	wire := <-proxy.bytes
	hello := int64(helloLen + proofLen) // the dialer's part of the handshake
	sent, recv := eps[0].Stats().Links[1], eps[1].Stats().Links[0]
	if int64(sent.BytesSent) != wire-hello || recv.BytesRecv != sent.BytesSent || sent.MsgsSent != 20 || recv.MsgsRecv != 20 {
		t.Fatalf("wire carried %d bytes after a %d-byte hello; sender counted %+v, receiver %+v", wire, hello, sent, recv)
	}
}

// TestWriteTimeout checks that a peer that stops reading is declared
// dead after WriteTimeout instead of blocking its senders forever.
func TestWriteTimeout(t *testing.T) {
	eps := newEndpoints(t, 2, func(c *Config) {
		c.WriteTimeout = 200 * time.Millisecond
		c.InboxSize = 1
		c.SocketBuffer = 64 << 10
	})
	m := &transport.Message{KV: kv.Batch{Vals: make([]float32, 256<<10)}}
	deadline := time.Now().Add(colotest.HangTimeout(t))
	var err error
	for err == nil && time.Now().Before(deadline) {
		err = eps[0].Send(context.Background(), 1, m) // node 1 never reads
	}
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() || !strings.Contains(err.Error(), "peer 1") {
		t.Fatalf("Send to a stalled peer: %v", err)
	}
	if pe := waitDown(t, eps[0]); pe.Peer != 1 {
		t.Fatalf("reported %v", pe)
	}
}

// TestOpenCluster: endpoints without a token talk to each other (an
// insecure cluster), and one with a token is refused by them, and refuses
// them, with the reason.
func TestOpenCluster(t *testing.T) {
	var refused <-chan refusal
	eps := newEndpoints(t, 2, func(c *Config) {
		c.Token = ""
		if c.ID == 1 {
			refused = recordRefusals(c)
		}
	})
	ctx := context.Background()
	if err := eps[0].Send(ctx, 1, &transport.Message{Header: transport.Header{ID: 3}}); err != nil {
		t.Fatal(err)
	}
	if m := <-eps[1].Recv(); m.Sender != 0 || m.ID != 3 {
		t.Fatalf("got %+v", m.Header)
	}
	secure := newEndpoints(t, 1, func(c *Config) { c.ID = 7 })[0]
	secure.SetPeer(1, eps[1].Addr().String())
	err := secure.Send(ctx, 1, &transport.Message{})
	if !errors.Is(err, transport.ErrRefused) || !strings.Contains(err.Error(), "wrong cluster token: this node has none (an insecure cluster) and the dialer has one") {
		t.Fatalf("a dialer with a token: %v", err)
	}
	if r := nextRefusal(t, refused); r.claimed != 7 || !strings.Contains(r.err.Error(), "this node has none") {
		t.Fatalf("acceptor: %+v", r)
	}
	eps[0].SetPeer(7, secure.Addr().String())
	err = eps[0].Send(ctx, 7, &transport.Message{})
	if !errors.Is(err, transport.ErrRefused) || !strings.Contains(err.Error(), "wrong cluster token: the dialer has none and this node has one") {
		t.Fatalf("a dialer without a token: %v", err)
	}
	noDown(t, eps[1])
	noDown(t, secure)
}

// TestOtherVersionTold: a dialer of the previous handshake version is
// refused with a reply that says why.
func TestOtherVersionTold(t *testing.T) {
	ep := newEndpoints(t, 1, nil)[0]
	nc, err := net.Dial("tcp", ep.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(colotest.HangTimeout(t)))
	v1 := append([]byte{transport.Magic, 1, 'H', 0, 9, 0, 0, 0, 0, 0, 0, 0, byte(len(testToken)), 0}, testToken...)
	nc.Write(v1)
	r, err := readReply(nc)
	if err != nil || r.accepted || r.reason != "handshake version 1, want 3 (nodes of different versions of colo)" {
		t.Fatalf("answer %+v, %v", r, err)
	}
}

// TestStaleLinkFailureLeavesReportsOn: a peer's old process closes its
// link only after the peer's new process has linked up (a replacement
// with the same id). The old link's end is reported, and so is the new
// link's end later: the late report of a stale link does not silence
// the peer's next failure.
func TestStaleLinkFailureLeavesReportsOn(t *testing.T) {
	eps := newEndpoints(t, 2, nil)
	// The old process (eps[1]) links to eps[0].
	if err := eps[1].Send(context.Background(), 0, &transport.Message{}); err != nil {
		t.Fatal(err)
	}
	<-eps[0].Recv()
	moved := listenAs(t, 1)
	moved.SetPeer(0, eps[0].Addr().String())
	// The new process links up.
	if err := moved.Send(context.Background(), 0, &transport.Message{}); err != nil {
		t.Fatal(err)
	}
	<-eps[0].Recv()
	// Then the old process ends, and later the new one.
	eps[1].Close()
	if pe := waitDown(t, eps[0]); pe.Peer != 1 {
		t.Fatalf("the old link's end reported as %v", pe)
	}
	moved.Close()
	if pe := waitDown(t, eps[0]); pe.Peer != 1 {
		t.Fatalf("the new link's end reported as %v", pe)
	}
}
