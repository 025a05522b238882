package tcp

import (
	"context"
	"sync"
	"testing"
	"time"

	"colo/kv"
	"colo/transport"
	"colo/transport/transporttest"
)

// interfaces gives every endpoint of a test an emulated network
// interface, one egress and one ingress wire of rate bytes per second
// shared by all its links (Config.Shared), and records them by node.
type interfaces struct {
	rate float64
	mu   sync.Mutex
	out  map[transport.NodeID]*transport.Wire
	in   map[transport.NodeID]*transport.Wire
}

func newInterfaces(rate float64) *interfaces {
	return &interfaces{rate: rate, out: make(map[transport.NodeID]*transport.Wire), in: make(map[transport.NodeID]*transport.Wire)}
}

// tune gives the endpoint it tunes its interface.
func (f *interfaces) tune(c *Config) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := transport.NewWire(f.rate, transport.DefaultQuantum)
	in := transport.NewWire(f.rate, transport.DefaultQuantum)
	f.out[c.ID], f.in[c.ID] = out, in
	c.Shared = func(transport.NodeID) ([]*transport.Wire, []*transport.Wire) {
		return []*transport.Wire{out}, []*transport.Wire{in}
	}
}

// TestConformanceNIC runs the conformance suite with every endpoint
// behind an interface fast enough not to slow it (1 GB/s each way).
func TestConformanceNIC(t *testing.T) {
	transporttest.Run(t, conformance(newEndpoints, func(testing.TB) func(*Config) { return newInterfaces(1e9).tune }))
}

// drain releases what ep receives and counts the frame bytes of what
// arrived; done is closed when want bytes arrived.
func drain(ep *Endpoint, want int, done chan<- time.Time) {
	got := 0
	for m := range ep.Recv() {
		got += transport.FrameSize(m, transport.FrameOptions{})
		m.Release()
		if got == want {
			done <- time.Now()
		}
	}
}

// TestSharedEgress sends from one endpoint to several peers at once over
// an interface of 8 MB/s, per peer count. The interface's wire carries
// exactly the bytes of every frame to every peer, and the sends,
// together, take at least the time the interface needs for all of them:
// a bound that a loaded machine can only exceed by more, never break
// (per-link wires would finish n times sooner). The peers' ingress
// carries what each received.
func TestSharedEgress(t *testing.T) {
	const rate = 8e6
	msg := &transport.Message{KV: kv.Batch{Vals: make([]float32, 200_000)}} // 800 kB
	size := transport.FrameSize(msg, transport.FrameOptions{})
	for _, peers := range []int{1, 2, 3} {
		nics := newInterfaces(rate)
		eps := newEndpoints(t, 1+peers, nics.tune)
		done := make(chan time.Time, peers)
		for _, ep := range eps[1:] {
			go drain(ep, size, done)
		}
		start := time.Now()
		var wg sync.WaitGroup
		errs := make(chan error, peers)
		for p := 1; p <= peers; p++ {
			wg.Go(func() {
				if err := eps[0].Send(context.Background(), transport.NodeID(p), msg); err != nil {
					errs <- err
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		last := start
		for range peers {
			if d := <-done; d.After(last) {
				last = d
			}
		}
		elapsed := last.Sub(start)
		if got, want := nics.out[0].Carried(), int64(peers*size); got != want {
			t.Errorf("%d peers: the interface carried %d bytes, want %d (%d frames of %d)", peers, got, want, peers, size)
		}
		for p := 1; p <= peers; p++ {
			if got := nics.in[transport.NodeID(p)].Carried(); got != int64(size) {
				t.Errorf("%d peers: peer %d's ingress carried %d bytes, want %d", peers, p, got, size)
			}
			if got := eps[0].Stats().Links[transport.NodeID(p)].BytesSent; got != uint64(size) {
				t.Errorf("%d peers: %d bytes sent to peer %d, want %d", peers, got, p, size)
			}
		}
		floor := time.Duration(float64(peers*size) / rate * float64(time.Second))
		t.Logf("%d peers: %d bytes in %v (at least %v at %.0f MB/s)", peers, peers*size, elapsed, floor, rate/1e6)
		if elapsed < floor {
			t.Errorf("%d peers: %d bytes left an interface of %.0f MB/s in %v, under %v", peers, peers*size, rate/1e6, elapsed, floor)
		}
	}
}

// TestSharedIngress sends from several endpoints at once to one whose
// interface receives at 8 MB/s, the senders' own unlimited: the
// receiver's ingress wire carries exactly the bytes of every frame, and
// they arrive no sooner than the interface allows.
func TestSharedIngress(t *testing.T) {
	const rate, senders = 8e6, 3
	var in *transport.Wire
	eps := newEndpoints(t, 1+senders, func(c *Config) {
		if c.ID != 0 {
			return
		}
		in = transport.NewWire(rate, transport.DefaultQuantum)
		c.Shared = func(transport.NodeID) ([]*transport.Wire, []*transport.Wire) {
			return nil, []*transport.Wire{in}
		}
	})
	msg := &transport.Message{KV: kv.Batch{Vals: make([]float32, 200_000)}}
	size := transport.FrameSize(msg, transport.FrameOptions{})
	done := make(chan time.Time, 1)
	go drain(eps[0], senders*size, done)
	start := time.Now()
	var wg sync.WaitGroup
	for _, ep := range eps[1:] {
		wg.Go(func() {
			if err := ep.Send(context.Background(), 0, msg); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	elapsed := (<-done).Sub(start)
	if got := in.Carried(); got != int64(senders*size) {
		t.Errorf("the ingress carried %d bytes, want %d", got, senders*size)
	}
	floor := time.Duration(float64(senders*size) / rate * float64(time.Second))
	t.Logf("%d bytes from %d senders in %v (at least %v)", senders*size, senders, elapsed, floor)
	if elapsed < floor {
		t.Errorf("%d bytes came through an ingress of %.0f MB/s in %v, under %v", senders*size, rate/1e6, elapsed, floor)
	}
}

// TestSendLeavesBeforeIngress: a frame of 2 MiB to an endpoint whose
// ingress carries it in a minute, over sockets of 64 KiB buffers. The
// sender's side is not limited, so its Send returns once the frame is
// written: the receiver reads the frame as it comes but its last byte,
// and only the delivery waits for the ingress. (Were the ingress paid
// before reading on, the full socket buffers would hold the Send for
// the minute.) Send must return within half the ingress's time, and the
// message must not be delivered yet.
func TestSendLeavesBeforeIngress(t *testing.T) {
	const ingressTime = time.Minute
	msg := &transport.Message{KV: kv.Batch{Vals: make([]float32, 1<<19)}}
	size := transport.FrameSize(msg, transport.FrameOptions{})
	var in *transport.Wire
	eps := newEndpoints(t, 2, func(c *Config) {
		c.SocketBuffer = 64 << 10
		if c.ID != 0 {
			return
		}
		in = transport.NewWire(float64(size)/ingressTime.Seconds(), transport.DefaultQuantum)
		c.Shared = func(transport.NodeID) ([]*transport.Wire, []*transport.Wire) {
			return nil, []*transport.Wire{in}
		}
	})
	sent := make(chan error, 1)
	start := time.Now()
	go func() { sent <- eps[1].Send(context.Background(), 0, msg) }()
	select {
	case err := <-sent:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(ingressTime / 2):
		t.Fatalf("Send of %d bytes did not return in %v: it waits for the receiver's ingress", size, ingressTime/2)
	}
	t.Logf("Send of %d bytes returned after %v, the ingress carries them in %v", size, time.Since(start), ingressTime)
	select {
	case m := <-eps[0].Recv():
		t.Fatalf("a message of %d bytes delivered %v after the start, before the ingress carried it", transport.FrameSize(m, transport.FrameOptions{}), time.Since(start))
	default:
	}
	if got := in.Carried(); got != int64(size) {
		t.Errorf("the ingress carries %d bytes, want the frame's %d", got, size)
	}
}

// TestSmallPassesBulkTCP: endpoint 0 sends 256 KiB to endpoint 1 through
// an egress that carries 2 kB/s (131 s), and then a small message to
// endpoint 2. The connections take turns of one Ethernet frame on the
// wire, so the small message waits for one turn of the bulk one (about
// 0.8 s), not for the bulk message nor a chunk of it (Burst, 33 s): it
// must arrive within half the chunk's time, before the bulk one. The
// egress is that slow so that the margin (15 s) holds on a loaded
// machine: at 8 kB/s it was 4 s.
func TestSmallPassesBulkTCP(t *testing.T) {
	const rate = 2e3
	var out *transport.Wire
	eps := newEndpoints(t, 3, func(c *Config) {
		if c.ID != 0 {
			return
		}
		out = transport.NewWire(rate, transport.DefaultQuantum)
		c.Shared = func(transport.NodeID) ([]*transport.Wire, []*transport.Wire) {
			return []*transport.Wire{out}, nil
		}
	})
	bulk := &transport.Message{KV: kv.Batch{Vals: make([]float32, 1<<16)}}
	small := &transport.Message{Header: transport.Header{ID: 1}}
	go eps[0].Send(context.Background(), 1, bulk)
	poll := time.NewTicker(time.Millisecond)
	defer poll.Stop()
	for deadline := time.Now().Add(time.Minute); out.Carried() == 0; {
		if time.Now().After(deadline) {
			t.Fatal("the bulk message did not go on the wire in a minute")
		}
		<-poll.C
	}
	chunk := time.Duration(float64(DefaultConfig().Burst) / rate * float64(time.Second))
	bound := chunk / 2
	start := time.Now()
	if err := eps[0].Send(context.Background(), 2, small); err != nil {
		t.Fatal(err)
	}
	select {
	case m := <-eps[2].Recv():
		t.Logf("the small message arrived %v after it was sent", time.Since(start))
		m.Release()
	case <-time.After(bound):
		t.Fatalf("the small message did not arrive in %v behind a bulk one on an egress of %v B/s (a chunk of it takes %v)", bound, rate, chunk)
	}
	select {
	case <-eps[1].Recv():
		t.Fatal("the bulk message arrived before its bytes' time")
	default:
	}
}

// TestSlowIngressHoldsSender: a sender that outruns its receiver's
// ingress is held back by TCP's flow control, so that the receiver holds
// at most one frame of a connection (and the sockets' buffers): over
// sockets of 64 KiB buffers, to an endpoint whose ingress carries a
// frame of 2 MiB in 2 s, the first Send returns before the ingress
// carried its frame (TestSendLeavesBeforeIngress), and the second
// returns no sooner than the first frame was carried: until then the
// reader reads nothing of it.
func TestSlowIngressHoldsSender(t *testing.T) {
	const ingressTime = 2 * time.Second
	msg := &transport.Message{KV: kv.Batch{Vals: make([]float32, 1<<19)}}
	size := transport.FrameSize(msg, transport.FrameOptions{})
	eps := newEndpoints(t, 2, func(c *Config) {
		c.SocketBuffer = 64 << 10
		if c.ID != 0 {
			return
		}
		in := transport.NewWire(float64(size)/ingressTime.Seconds(), transport.DefaultQuantum)
		c.Shared = func(transport.NodeID) ([]*transport.Wire, []*transport.Wire) {
			return nil, []*transport.Wire{in}
		}
	})
	start := time.Now()
	for i := range 2 {
		if err := eps[1].Send(context.Background(), 0, msg); err != nil {
			t.Fatal(err)
		}
		t.Logf("Send %d of %d bytes returned after %v", i, size, time.Since(start))
	}
	if d := time.Since(start); d < ingressTime {
		t.Fatalf("two frames of %d bytes sent in %v, before the receiver's ingress carried the first (%v): the receiver buffers what its ingress has not carried", size, d, ingressTime)
	}
	for range 2 {
		(<-eps[0].Recv()).Release()
	}
}
