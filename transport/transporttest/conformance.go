// Package transporttest is the conformance and benchmark suite that every
// transport.Endpoint implementation runs: the TCP one and the in-memory
// one pass the same tests and report the same benchmarks.
//
// An implementation's tests provide a Factory and call Run; its
// benchmarks call Benchmark:
//
//	func TestConformance(t *testing.T) { transporttest.Run(t, factory) }
//	func BenchmarkEndpoint(b *testing.B) { transporttest.Benchmark(b, factory) }
//
// Run checks, against ideal links (no loss, no emulated bandwidth): that
// every header field and segment arrives intact, in both key encodings;
// ordered delivery per link; exactly-once delivery from many concurrent
// senders on many links; messages of 8 MB; that a closed peer is reported
// on Down and by Send with an error naming it, including to a sender
// blocked on it; Close semantics (idempotent, closes Recv and Down, fails
// later and blocked Sends with transport.ErrClosed); context
// cancellation; the frame limit; and that Stats count exactly the frame
// bytes of what was sent.
package transporttest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"colo/kv"
	"colo/transport"
)

// Options configure the endpoints a Factory makes.
type Options struct {
	// Frame sets the frame limit and key encoding.
	Frame transport.FrameOptions
	// Buffer, when positive, is the capacity of each endpoint's Recv
	// channel and of any per-link queue, so that a receiver that does
	// not read blocks its senders soon.
	Buffer int
}

// Factory returns n endpoints with ids 0 … n−1 that can all reach each
// other (and themselves), configured by opts. It registers their Close
// with tb.Cleanup; tests may close them earlier.
type Factory func(tb testing.TB, n int, opts Options) []transport.Endpoint

// timeout bounds every wait of the suite; a conforming implementation
// needs far less.
const timeout = 10 * time.Second

// Run runs the conformance suite against the endpoints of f.
func Run(t *testing.T, f Factory) {
	for _, tc := range []struct {
		name string
		fn   func(*testing.T, Factory)
	}{
		{"RoundTrip", testRoundTrip},
		{"Ordered", testOrdered},
		{"Concurrent", testConcurrent},
		{"Large", testLarge},
		{"UnknownPeer", testUnknownPeer},
		{"PeerDeath", testPeerDeath},
		{"BlockedSenderPeerDeath", testBlockedSenderPeerDeath},
		{"Close", testClose},
		{"CloseUnblocksSend", testCloseUnblocksSend},
		{"ContextCancel", testContextCancel},
		{"FrameTooLarge", testFrameTooLarge},
		{"Stats", testStats},
		{"RepeatedKeys", testRepeatedKeys},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, f) })
	}
}

// recv returns the next message of ep, failing the test after timeout.
func recv(t testing.TB, ep transport.Endpoint) *transport.Message {
	t.Helper()
	select {
	case m, ok := <-ep.Recv():
		if !ok {
			t.Fatalf("node %d: Recv closed", ep.ID())
		}
		return m
	case <-time.After(timeout):
		t.Fatalf("node %d: nothing received in %v", ep.ID(), timeout)
		return nil
	}
}

// send sends m and fails the test on error.
func send(t testing.TB, from transport.Endpoint, to transport.NodeID, m *transport.Message) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := from.Send(ctx, to, m); err != nil {
		t.Fatalf("send %d→%d: %v", from.ID(), to, err)
	}
}

// normal returns a copy of m with empty segments as nil, for comparison.
func normal(m *transport.Message) transport.Message {
	c := *m
	if len(c.Body) == 0 {
		c.Body = nil
	}
	if len(c.KV.Keys) == 0 {
		c.KV.Keys = nil
	}
	if len(c.KV.Vals) == 0 {
		c.KV.Vals = nil
	}
	if len(c.KV.Lens) == 0 {
		c.KV.Lens = nil
	}
	return c
}

// sameMessage fails unless got is want as sent from one node to another.
func sameMessage(t testing.TB, got, want *transport.Message, from, to transport.NodeID) {
	t.Helper()
	w := normal(want)
	w.Sender, w.Receiver = from, to
	g := normal(got)
	if g.Header != w.Header || !slices.Equal(g.Body, w.Body) || (g.Body == nil) != (w.Body == nil) ||
		!slices.Equal(g.KV.Keys, w.KV.Keys) || (g.KV.Keys == nil) != (w.KV.Keys == nil) ||
		!slices.Equal(g.KV.Vals, w.KV.Vals) || (g.KV.Vals == nil) != (w.KV.Vals == nil) ||
		!slices.Equal(g.KV.Lens, w.KV.Lens) || (g.KV.Lens == nil) != (w.KV.Lens == nil) {
		t.Fatalf("received %v, want %v", got, &w)
	}
}

// sampleMessages covers the header fields and both key encodings.
func sampleMessages() []*transport.Message {
	r := rand.New(rand.NewPCG(1, 1))
	sorted := make([]uint64, 1000)
	for i := range sorted {
		sorted[i] = uint64(i)*7 + uint64(r.IntN(7))
	}
	vals := make([]float32, 1000)
	for i := range vals {
		vals[i] = r.Float32()
	}
	return []*transport.Message{
		{},
		{Header: transport.Header{Type: transport.TypeControl, Cmd: 7, App: 3, Customer: 9, ID: 1 << 40, Flags: transport.FlagRequest}, Body: []byte("address book")},
		{Header: transport.Header{Flags: transport.FlagRequest | transport.FlagPush, ID: 42}, KV: kv.Batch{Keys: sorted, Vals: vals}},
		{Header: transport.Header{Flags: transport.FlagPull, ID: 43}, KV: kv.Batch{Keys: []uint64{9, 3, 1 << 63}, Vals: []float32{1, 2, 3}}},
		{Header: transport.Header{Type: 200, Flags: 0xffff, Cmd: 0xffff, App: 0xffffffff, Customer: 0xffffffff, ID: ^uint64(0)},
			Body: []byte{0}, KV: kv.Batch{Keys: []uint64{0, ^uint64(0)}, Vals: []float32{1, 2, 3}, Lens: []int32{1, 2}}},
	}
}

func testRoundTrip(t *testing.T, f Factory) {
	for _, raw := range []bool{false, true} {
		eps := f(t, 2, Options{Frame: transport.FrameOptions{RawKeys: raw}})
		for _, m := range sampleMessages() {
			orig := m.Clone()
			send(t, eps[0], 1, m)
			if !reflect.DeepEqual(m, orig) {
				t.Fatal("Send modified its message")
			}
			sameMessage(t, recv(t, eps[1]), m, 0, 1)
			send(t, eps[0], 0, m)
			sameMessage(t, recv(t, eps[0]), m, 0, 0)
		}
	}
}

func testOrdered(t *testing.T, f Factory) {
	eps := f(t, 2, Options{})
	const n = 2000
	var wg sync.WaitGroup
	for dir := range 2 {
		from, to := eps[dir], eps[1-dir]
		wg.Go(func() {
			for i := range n {
				m := &transport.Message{Header: transport.Header{ID: uint64(i)}, KV: kv.Batch{Keys: []uint64{uint64(i)}}}
				if err := from.Send(context.Background(), to.ID(), m); err != nil {
					t.Errorf("send %d: %v", i, err)
					return
				}
			}
		})
	}
	for dir := range 2 {
		for i := range n {
			m := recv(t, eps[dir])
			if m.ID != uint64(i) {
				t.Fatalf("node %d: message %d has id %d", dir, i, m.ID)
			}
		}
	}
	wg.Wait()
}

func testConcurrent(t *testing.T, f Factory) {
	const nodes, goroutines, perG = 4, 4, 150
	eps := f(t, nodes, Options{})
	// ID = sender<<32 | goroutine<<16 | seq.
	var wg sync.WaitGroup
	for _, ep := range eps {
		for g := range goroutines {
			wg.Go(func() {
				r := rand.New(rand.NewPCG(uint64(ep.ID()), uint64(g)))
				for s := range perG {
					to := transport.NodeID(r.IntN(nodes))
					id := uint64(ep.ID())<<32 | uint64(g)<<16 | uint64(s)
					m := &transport.Message{Header: transport.Header{ID: id}, KV: kv.Batch{Keys: []uint64{id}, Vals: make([]float32, r.IntN(100))}}
					if err := ep.Send(context.Background(), to, m); err != nil {
						t.Errorf("send: %v", err)
						return
					}
				}
			})
		}
	}
	// Receive until every message is accounted for.
	got := make([]map[uint64]bool, nodes)
	var mu sync.Mutex
	total := 0
	var rwg sync.WaitGroup
	stop := make(chan struct{})
	for i, ep := range eps {
		got[i] = map[uint64]bool{}
		rwg.Go(func() {
			last := map[uint64]uint64{} // per (sender, goroutine): last seq + 1
			for {
				select {
				case m := <-ep.Recv():
					if m.KV.Keys[0] != m.ID || m.Sender != transport.NodeID(m.ID>>32) {
						t.Errorf("node %d: corrupt message %v", i, m)
					}
					stream, seq := m.ID>>16, m.ID&0xffff
					if seq+1 <= last[stream] {
						t.Errorf("node %d: stream %x: seq %d after %d", i, stream, seq, last[stream]-1)
					}
					last[stream] = seq + 1
					mu.Lock()
					if got[i][m.ID] {
						t.Errorf("node %d: message %x received twice", i, m.ID)
					}
					got[i][m.ID] = true
					total++
					mu.Unlock()
				case <-stop:
					return
				}
			}
		})
	}
	wg.Wait()
	deadline := time.Now().Add(timeout)
	for {
		mu.Lock()
		n := total
		mu.Unlock()
		if n == nodes*goroutines*perG {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("received %d of %d messages", n, nodes*goroutines*perG)
		}
		time.Sleep(5 * time.Millisecond)
	}
	close(stop)
	rwg.Wait()
}

func testLarge(t *testing.T, f Factory) {
	eps := f(t, 2, Options{})
	const nvals = 2 << 20 // 8 MB of float32
	mk := func(id uint64) *transport.Message {
		m := &transport.Message{Header: transport.Header{ID: id}}
		m.KV.Keys = make([]uint64, 1024)
		m.KV.Lens = make([]int32, 1024)
		for i := range m.KV.Keys {
			m.KV.Keys[i] = uint64(i) << 20
			m.KV.Lens[i] = nvals / 1024
		}
		m.KV.Vals = make([]float32, nvals)
		for i := range m.KV.Vals {
			m.KV.Vals[i] = float32(i) * float32(id)
		}
		return m
	}
	a, b := mk(1), mk(2)
	// Both directions at once: neither side may wait for the other.
	var wg sync.WaitGroup
	wg.Go(func() { send(t, eps[0], 1, a) })
	wg.Go(func() { send(t, eps[1], 0, b) })
	sameMessage(t, recv(t, eps[1]), a, 0, 1)
	sameMessage(t, recv(t, eps[0]), b, 1, 0)
	wg.Wait()
}

// isPeerError fails unless err is a *transport.PeerError naming peer.
func isPeerError(t testing.TB, err error, peer transport.NodeID) *transport.PeerError {
	t.Helper()
	var pe *transport.PeerError
	if !errors.As(err, &pe) || pe.Peer != peer {
		t.Fatalf("error %v does not name peer %d", err, peer)
	}
	if !strings.Contains(err.Error(), fmt.Sprintf("peer %d", peer)) {
		t.Fatalf("error message %q does not name peer %d", err, peer)
	}
	return pe
}

func testUnknownPeer(t *testing.T, f Factory) {
	eps := f(t, 1, Options{})
	err := eps[0].Send(context.Background(), 99, &transport.Message{})
	isPeerError(t, err, 99)
	if !errors.Is(err, transport.ErrUnknownPeer) {
		t.Fatalf("Send to an unknown peer: %v, want ErrUnknownPeer", err)
	}
}

// waitDown waits for ep to report peer on Down.
func waitDown(t testing.TB, ep transport.Endpoint, peer transport.NodeID) {
	t.Helper()
	select {
	case pe, ok := <-ep.Down():
		if !ok {
			t.Fatalf("node %d: Down closed", ep.ID())
		}
		isPeerError(t, pe, peer)
	case <-time.After(timeout):
		t.Fatalf("node %d: peer %d not reported down in %v", ep.ID(), peer, timeout)
	}
}

func testPeerDeath(t *testing.T, f Factory) {
	eps := f(t, 3, Options{})
	send(t, eps[0], 1, &transport.Message{})
	recv(t, eps[1])
	send(t, eps[1], 0, &transport.Message{})
	recv(t, eps[0])
	eps[1].Close()
	waitDown(t, eps[0], 1)
	// Sends to the dead peer fail, naming it, soon (a TCP write may
	// still land in a kernel buffer first).
	deadline := time.Now().Add(timeout)
	for {
		err := eps[0].Send(context.Background(), 1, &transport.Message{})
		if err != nil {
			isPeerError(t, err, 1)
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("Send to a closed peer keeps succeeding")
		}
		time.Sleep(time.Millisecond)
	}
	// The others are unaffected.
	send(t, eps[0], 2, &transport.Message{Header: transport.Header{ID: 5}})
	if m := recv(t, eps[2]); m.ID != 5 {
		t.Fatalf("got %v", m)
	}
	select {
	case pe := <-eps[2].Down():
		t.Fatalf("node 2 reports %v but had no link with node 1", pe)
	default:
	}
}

// fillUntilBlocked sends large messages from ep to peer in a goroutine
// until a Send stays blocked, and returns the channel that receives that
// Send's error.
func fillUntilBlocked(t testing.TB, ep transport.Endpoint, peer transport.NodeID, ctx context.Context) <-chan error {
	t.Helper()
	m := &transport.Message{KV: kv.Batch{Vals: make([]float32, 256<<10)}} // 1 MB
	var sent atomic.Int64
	errc := make(chan error, 1)
	go func() {
		for {
			if err := ep.Send(ctx, peer, m); err != nil {
				errc <- err
				return
			}
			sent.Add(1)
		}
	}()
	deadline := time.Now().Add(timeout)
	last, since := int64(-1), time.Now()
	for time.Since(since) < 300*time.Millisecond {
		if n := sent.Load(); n != last {
			last, since = n, time.Now()
		}
		select {
		case err := <-errc:
			t.Fatalf("Send failed before blocking: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("Send never blocks on a receiver that does not read")
		}
		time.Sleep(10 * time.Millisecond)
	}
	return errc
}

// waitErr waits for an error from errc.
func waitErr(t testing.TB, errc <-chan error, what string) error {
	t.Helper()
	select {
	case err := <-errc:
		return err
	case <-time.After(timeout):
		t.Fatalf("%s: blocked Send still blocked after %v", what, timeout)
		return nil
	}
}

func testBlockedSenderPeerDeath(t *testing.T, f Factory) {
	eps := f(t, 2, Options{Buffer: 1})
	errc := fillUntilBlocked(t, eps[0], 1, context.Background())
	eps[1].Close()
	isPeerError(t, waitErr(t, errc, "peer closed"), 1)
}

func testClose(t *testing.T, f Factory) {
	eps := f(t, 2, Options{})
	send(t, eps[0], 1, &transport.Message{})
	recv(t, eps[1])
	for range 2 {
		if err := eps[1].Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
	}
	for m := range eps[1].Recv() {
		t.Fatalf("received %v after Close", m)
	}
	for range eps[1].Down() {
	}
	err := eps[1].Send(context.Background(), 0, &transport.Message{})
	if !errors.Is(err, transport.ErrClosed) {
		t.Fatalf("Send after Close: %v, want ErrClosed", err)
	}
	isPeerError(t, err, 0)
	if err := eps[1].Send(context.Background(), 1, &transport.Message{}); !errors.Is(err, transport.ErrClosed) {
		t.Fatalf("Send to self after Close: %v, want ErrClosed", err)
	}
	eps[1].Stats() // still answers
}

func testCloseUnblocksSend(t *testing.T, f Factory) {
	eps := f(t, 2, Options{Buffer: 1})
	errc := fillUntilBlocked(t, eps[0], 1, context.Background())
	done := make(chan struct{})
	go func() {
		eps[0].Close()
		close(done)
	}()
	if err := waitErr(t, errc, "sender closed"); !errors.Is(err, transport.ErrClosed) {
		t.Fatalf("blocked Send after Close: %v, want ErrClosed", err)
	}
	select {
	case <-done:
	case <-time.After(timeout):
		t.Fatal("Close does not return")
	}
	// A blocked Send to self, too.
	self := f(t, 1, Options{Buffer: 1})
	errc = fillUntilBlocked(t, self[0], 0, context.Background())
	self[0].Close()
	if err := waitErr(t, errc, "self"); !errors.Is(err, transport.ErrClosed) {
		t.Fatalf("blocked Send to self after Close: %v", err)
	}
}

func testContextCancel(t *testing.T, f Factory) {
	eps := f(t, 2, Options{Buffer: 1})
	ctx, cancel := context.WithCancel(context.Background())
	errc := fillUntilBlocked(t, eps[0], 1, ctx)
	cancel()
	if err := waitErr(t, errc, "cancel"); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Send: %v, want context.Canceled", err)
	}
	// Drain the receiver: the link still works, or reconnects, for the
	// next message.
	go func() {
		for range eps[1].Recv() {
		}
	}()
	ctx, cancel = context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := eps[0].Send(ctx, 1, &transport.Message{}); err != nil {
		t.Fatalf("Send after a cancelled Send: %v", err)
	}
	// An already cancelled context fails without sending.
	if err := eps[0].Send(canceled(), 0, &transport.Message{}); !errors.Is(err, context.Canceled) {
		// Self sends may complete before looking at ctx; both are fine
		// when the inbox has room, so only a wrong error fails.
		if err != nil {
			t.Fatalf("Send with a cancelled context: %v", err)
		}
	}
}

// canceled returns a cancelled context.
func canceled() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}

func testFrameTooLarge(t *testing.T, f Factory) {
	const limit = 1 << 20
	opts := Options{Frame: transport.FrameOptions{MaxFrame: limit}}
	eps := f(t, 2, opts)
	big := &transport.Message{KV: kv.Batch{Vals: make([]float32, limit/4)}}
	for _, to := range []transport.NodeID{1, 0} {
		err := eps[0].Send(context.Background(), to, big)
		if !errors.Is(err, transport.ErrFrameTooLarge) {
			t.Fatalf("oversized Send to %d: %v, want ErrFrameTooLarge", to, err)
		}
		isPeerError(t, err, to)
	}
	// Exactly at the limit is fine, and the link is intact.
	fit := &transport.Message{Header: transport.Header{ID: 3}, KV: kv.Batch{Vals: make([]float32, (limit-transport.PrefixSize-transport.HeaderSize)/4)}}
	if n := transport.FrameSize(fit, opts.Frame); n != limit {
		t.Fatalf("FrameSize %d, want %d", n, limit)
	}
	send(t, eps[0], 1, fit)
	if m := recv(t, eps[1]); m.ID != 3 {
		t.Fatalf("got %v", m)
	}
	if s := eps[0].Stats().Links[1]; s.MsgsSent != 1 {
		t.Fatalf("refused frames counted as sent: %+v", s)
	}
}

func testStats(t *testing.T, f Factory) {
	for _, raw := range []bool{false, true} {
		opts := Options{Frame: transport.FrameOptions{RawKeys: raw}}
		eps := f(t, 3, opts)
		want := map[[2]transport.NodeID]transport.LinkStats{}
		count := func(from, to transport.NodeID, m *transport.Message) {
			n := uint64(transport.FrameSize(m, opts.Frame))
			s := want[[2]transport.NodeID{from, to}]
			s.MsgsSent++
			s.BytesSent += n
			want[[2]transport.NodeID{from, to}] = s
		}
		msgs := sampleMessages()
		for i, m := range msgs {
			for _, p := range [][2]transport.NodeID{{0, 1}, {1, 0}, {0, 2}, {2, 2}} {
				if (i+int(p[0])+int(p[1]))%2 == 0 || p[0] == p[1] {
					send(t, eps[p[0]], p[1], m)
					recv(t, eps[p[1]])
					count(p[0], p[1], m)
				}
			}
		}
		for _, ep := range eps {
			st := ep.Stats()
			for _, peer := range st.Peers() {
				got := st.Links[peer]
				out, in := want[[2]transport.NodeID{ep.ID(), peer}], want[[2]transport.NodeID{peer, ep.ID()}]
				w := transport.LinkStats{MsgsSent: out.MsgsSent, BytesSent: out.BytesSent, MsgsRecv: in.MsgsSent, BytesRecv: in.BytesSent}
				if got != w {
					t.Errorf("raw=%v: node %d, peer %d: stats %+v, want %+v", raw, ep.ID(), peer, got, w)
				}
			}
			var total transport.LinkStats
			for k, s := range want {
				if k[0] == ep.ID() {
					total.MsgsSent += s.MsgsSent
					total.BytesSent += s.BytesSent
				}
				if k[1] == ep.ID() {
					total.MsgsRecv += s.MsgsSent
					total.BytesRecv += s.BytesSent
				}
			}
			if got := st.Total(); got != total {
				t.Errorf("raw=%v: node %d: total %+v, want %+v", raw, ep.ID(), got, total)
			}
		}
	}
}

// testRepeatedKeys: senders send the same key lists again and again
// (what key caching saves, see transport.KeyCache), among lists that
// differ from them in one key only and lists too short to cache; every
// message arrives with its own keys, the messages a receiver keeps are
// unchanged by the later ones, and the counters count every frame at
// FrameSize.
func testRepeatedKeys(t *testing.T, f Factory) {
	for _, raw := range []bool{false, true} {
		opts := Options{Frame: transport.FrameOptions{RawKeys: raw}}
		eps := f(t, 3, opts)
		r := rand.New(rand.NewPCG(7, 7))
		var lists [][]uint64
		for range 8 {
			keys := make([]uint64, 256+r.IntN(4000))
			k := uint64(0)
			for i := range keys {
				k += 1 + r.Uint64N(1<<uint(r.IntN(24)))
				keys[i] = k
			}
			twin := slices.Clone(keys)
			twin[1] = (twin[0] + twin[1]) / 2
			lists = append(lists, keys, twin)
		}
		lists = append(lists, []uint64{5, 9}, nil)
		const perSender = 150
		// Message ID = sender<<16 | seq; its keys are lists[pick(id)].
		pick := func(id uint64) int {
			x := (id*0x9E3779B97F4A7C15)>>40 + id
			return int(x % uint64(len(lists)))
		}
		var wg sync.WaitGroup
		var bytesSent [3]uint64
		for _, from := range []transport.NodeID{0, 2} {
			wg.Go(func() {
				for s := range uint64(perSender) {
					id := uint64(from)<<16 | s
					keys := lists[pick(id)]
					m := &transport.Message{Header: transport.Header{ID: id}, KV: kv.Batch{Keys: keys, Vals: make([]float32, len(keys))}}
					for i := range m.KV.Vals {
						m.KV.Vals[i] = float32(id)
					}
					bytesSent[from] += uint64(transport.FrameSize(m, opts.Frame))
					if err := eps[from].Send(context.Background(), 1, m); err != nil {
						t.Errorf("send %d→1: %v", from, err)
						return
					}
				}
			})
		}
		var kept []*transport.Message
		for range 2 * perSender {
			m := recv(t, eps[1])
			want := lists[pick(m.ID)]
			if !slices.Equal(m.KV.Keys, want) || len(m.KV.Vals) != len(want) || (len(want) > 0 && m.KV.Vals[0] != float32(m.ID)) {
				t.Fatalf("raw=%v: message %x from %d: %d keys, want list %d of %d keys", raw, m.ID, m.Sender, len(m.KV.Keys), pick(m.ID), len(want))
			}
			if m.ID%3 == 0 {
				m.Release()
			} else {
				kept = append(kept, m)
			}
		}
		wg.Wait()
		for _, m := range kept {
			if !slices.Equal(m.KV.Keys, lists[pick(m.ID)]) {
				t.Fatalf("raw=%v: message %x changed after later messages", raw, m.ID)
			}
		}
		st := eps[1].Stats()
		for _, from := range []transport.NodeID{0, 2} {
			if got := st.Links[from]; got.BytesRecv != bytesSent[from] || got.MsgsRecv != perSender {
				t.Errorf("raw=%v: from %d: received %d messages, %d bytes; sent %d, %d at FrameSize", raw, from, got.MsgsRecv, got.BytesRecv, perSender, bytesSent[from])
			}
			if got := eps[from].Stats().Links[1]; got.BytesSent != bytesSent[from] {
				t.Errorf("raw=%v: %d counted %d bytes sent, %d at FrameSize", raw, from, got.BytesSent, bytesSent[from])
			}
		}
	}
}
