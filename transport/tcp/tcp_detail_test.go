package tcp

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"

	"colo/kv"
	"colo/transport"
)

// waitDown returns the next failure reported by ep.
func waitDown(t *testing.T, ep *Endpoint) *transport.PeerError {
	t.Helper()
	select {
	case pe := <-ep.Down():
		return pe
	case <-time.After(5 * time.Second):
		t.Fatalf("node %d reports no failure", ep.ID())
		return nil
	}
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
	var refused <-chan refusal
	eps := newEndpoints(t, 2, func(c *Config) {
		if c.ID == 1 {
			refused = recordRefusals(c)
		}
	})
	bad := newEndpoints(t, 1, func(c *Config) { c.ID, c.Token = 7, "not the token" })[0]
	bad.SetPeer(1, eps[1].Addr().String())
	err := bad.Send(context.Background(), 1, &transport.Message{})
	var pe *transport.PeerError
	if !errors.As(err, &pe) || pe.Peer != 1 || !errors.Is(err, transport.ErrRefused) || !strings.Contains(err.Error(), "wrong cluster token") {
		t.Fatalf("dialer: %v, want a refusal by peer 1 for the token", err)
	}
	// The acceptor says whom it refused and why, as a log line, not as a
	// failure of node 7.
	r := <-refused
	if r.claimed != 7 || !errors.Is(r.err, transport.ErrRefused) || r.err.Error() != "refused: wrong cluster token" || r.addr == "" {
		t.Fatalf("acceptor: %+v", r)
	}
	t.Logf("dialer: %v\nacceptor: %s claiming node %d: %v", err, r.addr, r.claimed, r.err)
	// The right token still gets in.
	if err := eps[0].Send(context.Background(), 1, &transport.Message{}); err != nil {
		t.Fatal(err)
	}
	<-eps[1].Recv()
	noDown(t, eps[1])
}

// TestSpoofedHandshakes: strangers claim the id of a node whose link is
// up, with a wrong token, an empty one and one of the right length, or
// send garbage and an oversized hello. Each is refused and told to
// Config.Refused; nothing is reported on Down, and the real node's link
// keeps working.
func TestSpoofedHandshakes(t *testing.T) {
	var refused <-chan refusal
	eps := newEndpoints(t, 2, func(c *Config) {
		if c.ID == 1 {
			refused = recordRefusals(c)
		}
	})
	ctx := context.Background()
	if err := eps[0].Send(ctx, 1, &transport.Message{}); err != nil {
		t.Fatal(err)
	}
	<-eps[1].Recv()
	sameLength := strings.Repeat("x", len(testToken))
	oversized := appendHello(nil, hello{from: 0, to: 1})
	binary.LittleEndian.PutUint16(oversized[12:], MaxTokenLen+1)
	for _, c := range []struct {
		name    string
		hello   []byte
		claimed transport.NodeID
		want    string
	}{
		{"wrong token", appendHello(nil, hello{from: 0, to: 1, token: "wrong"}), 0, "refused: wrong cluster token"},
		{"empty token", appendHello(nil, hello{from: 0, to: 1}), 0, "refused: wrong cluster token"},
		{"token of the right length", appendHello(nil, hello{from: 0, to: 1, token: sameLength}), 0, "refused: wrong cluster token"},
		{"the receiver's own id", appendHello(nil, hello{from: 1, to: 1, token: sameLength}), 1, "refused: wrong cluster token"},
		{"garbage", []byte("\x00\x01garbage that is no hello"), 0, "not a colo node: magic 0x0, want 0xc6"},
		{"oversized token", oversized, 0, "token of 1025 bytes, limit 1024"},
	} {
		nc, err := net.Dial("tcp", eps[1].Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		nc.Write(c.hello)
		nc.SetReadDeadline(time.Now().Add(5 * time.Second))
		io.Copy(io.Discard, nc) // the acceptor closes the connection
		nc.Close()
		r := <-refused
		if r.claimed != c.claimed || r.err.Error() != c.want {
			t.Errorf("%s: refused as %d: %v; want claimed %d: %s", c.name, r.claimed, r.err, c.claimed, c.want)
		}
		noDown(t, eps[1])
	}
	// The real node 0 is still connected and heard.
	if err := eps[0].Send(ctx, 1, &transport.Message{Header: transport.Header{ID: 42}}); err != nil {
		t.Fatal(err)
	}
	if m := <-eps[1].Recv(); m.Sender != 0 || m.ID != 42 {
		t.Fatalf("after the strangers: %+v", m.Header)
	}
	noDown(t, eps[1])
	noDown(t, eps[0])
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
	if _, err := c.Write(appendHello(nil, hello{from: from, to: ep.ID(), token: testToken})); err != nil {
		t.Fatal(err)
	}
	r, err := readReply(c)
	if err != nil || !r.accepted {
		t.Fatalf("handshake: %+v, %v", r, err)
	}
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
	// The connection is closed.
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Fatal("connection still open")
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
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := c.Read(make([]byte, 100)); err == nil {
		t.Fatalf("stranger got %d bytes", n)
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
// a bandwidth matrix and checks the achieved rate. The bounds are wide:
// the limit may not be exceeded by more than the burst, and a loaded
// machine may fall short of it.
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
	if rate > 1.1*limit || rate < 0.3*limit {
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
	cfg := DefaultConfig()
	cfg.ID, cfg.Token = 1, testToken
	again, err := Listen(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
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

func FuzzHandshake(f *testing.F) {
	f.Add(appendHello(nil, hello{from: 1, to: 2, token: "secret"}))
	f.Add(appendReply(nil, reply{accepted: true, id: 3}))
	f.Add(appendReply(nil, reply{id: 3, reason: "wrong cluster token"}))
	f.Add([]byte("GET / HTTP/1.1\r\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if h, err := readHello(bytes.NewReader(data)); err == nil {
			if enc := appendHello(nil, h); !bytes.HasPrefix(data, enc) {
				t.Fatalf("hello %+v re-encodes to %x, input %x", h, enc, data)
			}
		}
		if r, err := readReply(bytes.NewReader(data)); err == nil {
			if enc := appendReply(nil, r); !bytes.HasPrefix(data, enc) {
				t.Fatalf("reply %+v re-encodes to %x, input %x", r, enc, data)
			}
		}
	})
}

// countingProxy forwards one connection to target and counts the bytes
// it carried towards target.
type countingProxy struct {
	ln    net.Listener
	bytes chan int64
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
		go io.Copy(in, out)
		n, _ := io.Copy(out, in)
		out.Close()
		p.bytes <- n
	}()
	t.Cleanup(func() { ln.Close() })
	return p
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
	hello := int64(len(appendHello(nil, hello{from: 0, to: 1, token: testToken})))
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
	deadline := time.Now().Add(10 * time.Second)
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
