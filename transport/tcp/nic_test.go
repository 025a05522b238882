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
// interface, one egress and one ingress bucket of rate bytes per second
// shared by all its links (Config.Shared), and records them by node.
type interfaces struct {
	rate float64
	mu   sync.Mutex
	out  map[transport.NodeID]*transport.TokenBucket
	in   map[transport.NodeID]*transport.TokenBucket
}

func newInterfaces(rate float64) *interfaces {
	return &interfaces{rate: rate, out: make(map[transport.NodeID]*transport.TokenBucket), in: make(map[transport.NodeID]*transport.TokenBucket)}
}

// tune gives the endpoint it tunes its interface.
func (f *interfaces) tune(c *Config) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := transport.NewTokenBucket(f.rate, c.Burst)
	in := transport.NewTokenBucket(f.rate, c.Burst)
	f.out[c.ID], f.in[c.ID] = out, in
	c.Shared = func(transport.NodeID) ([]*transport.TokenBucket, []*transport.TokenBucket) {
		return []*transport.TokenBucket{out}, []*transport.TokenBucket{in}
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
// an interface of 8 MB/s, per peer count. The interface's bucket takes
// exactly the bytes of every frame to every peer (its reservation
// arithmetic), and the sends, together, take at least the time the
// interface needs for all of them but its burst: a bound that a loaded
// machine can only exceed by more, never break (per-link buckets would
// finish n times sooner). The peers' ingress takes what each received.
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
		if got, want := nics.out[0].Taken(), int64(peers*size); got != want {
			t.Errorf("%d peers: the interface took %d bytes, want %d (%d frames of %d)", peers, got, want, peers, size)
		}
		for p := 1; p <= peers; p++ {
			if got := nics.in[transport.NodeID(p)].Taken(); got != int64(size) {
				t.Errorf("%d peers: peer %d's ingress took %d bytes, want %d", peers, p, got, size)
			}
			if got := eps[0].Stats().Links[transport.NodeID(p)].BytesSent; got != uint64(size) {
				t.Errorf("%d peers: %d bytes sent to peer %d, want %d", peers, got, p, size)
			}
		}
		floor := time.Duration(float64(peers*size-DefaultConfig().Burst) / rate * float64(time.Second))
		t.Logf("%d peers: %d bytes in %v (at least %v at %.0f MB/s)", peers, peers*size, elapsed, floor, rate/1e6)
		if elapsed < floor {
			t.Errorf("%d peers: %d bytes left an interface of %.0f MB/s in %v, under %v", peers, peers*size, rate/1e6, elapsed, floor)
		}
	}
}

// TestSharedIngress sends from several endpoints at once to one whose
// interface receives at 8 MB/s, the senders' own unlimited: the
// receiver's ingress bucket takes exactly the bytes of every frame, and
// they arrive no sooner than the interface allows.
func TestSharedIngress(t *testing.T) {
	const rate, senders = 8e6, 3
	var in *transport.TokenBucket
	eps := newEndpoints(t, 1+senders, func(c *Config) {
		if c.ID != 0 {
			return
		}
		in = transport.NewTokenBucket(rate, c.Burst)
		c.Shared = func(transport.NodeID) ([]*transport.TokenBucket, []*transport.TokenBucket) {
			return nil, []*transport.TokenBucket{in}
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
	if got := in.Taken(); got != int64(senders*size) {
		t.Errorf("the ingress took %d bytes, want %d", got, senders*size)
	}
	floor := time.Duration(float64(senders*size-DefaultConfig().Burst) / rate * float64(time.Second))
	t.Logf("%d bytes from %d senders in %v (at least %v)", senders*size, senders, elapsed, floor)
	if elapsed < floor {
		t.Errorf("%d bytes came through an ingress of %.0f MB/s in %v, under %v", senders*size, rate/1e6, elapsed, floor)
	}
}
