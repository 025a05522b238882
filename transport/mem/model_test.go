package mem

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"colo/kv"
	"colo/transport"
)

// network returns a network with nodes 0 … n−1 attached.
func network(t *testing.T, cfg Config, n int) (*Network, []*Endpoint) {
	t.Helper()
	net, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { net.Close() })
	eps := make([]*Endpoint, n)
	for i := range eps {
		if eps[i], err = net.Attach(transport.NodeID(i)); err != nil {
			t.Fatal(err)
		}
	}
	return net, eps
}

func TestLatency(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := DefaultConfig()
		cfg.Link = Link{Latency: 10 * time.Millisecond}
		_, eps := network(t, cfg, 2)
		start := time.Now()
		for i := range 3 {
			eps[0].Send(context.Background(), 1, &transport.Message{Header: transport.Header{ID: uint64(i)}})
			time.Sleep(time.Millisecond)
		}
		for i := range 3 {
			m := <-eps[1].Recv()
			want := time.Duration(i)*time.Millisecond + 10*time.Millisecond
			if m.ID != uint64(i) || time.Since(start) != want {
				t.Fatalf("message %d arrived at %v, want %v", m.ID, time.Since(start), want)
			}
		}
	})
}

func TestBandwidth(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		net, eps := network(t, DefaultConfig(), 3)
		net.SetLink(0, 1, Link{Bandwidth: 1e6, Latency: time.Millisecond})
		m := &transport.Message{KV: kv.Batch{Vals: make([]float32, 250_000-15)}} // 1 MB frame
		size := transport.FrameSize(m, transport.FrameOptions{})
		if size != 1_000_000 {
			t.Fatalf("frame of %d bytes", size)
		}
		start := time.Now()
		for range 2 {
			if err := eps[0].Send(context.Background(), 1, m); err != nil {
				t.Fatal(err)
			}
		}
		// Send waits while the message is on the wire.
		if d := time.Since(start); d != 2*time.Second {
			t.Fatalf("two 1 MB sends at 1 MB/s took %v", d)
		}
		<-eps[1].Recv()
		<-eps[1].Recv()
		if d := time.Since(start); d != 2*time.Second+time.Millisecond {
			t.Fatalf("second message arrived after %v", d)
		}
		// Other links are not slowed down.
		start = time.Now()
		eps[0].Send(context.Background(), 2, m)
		<-eps[2].Recv()
		if d := time.Since(start); d != 0 {
			t.Fatalf("unlimited link took %v", d)
		}
	})
}

// dropRun sends 1000 messages on a lossy link and returns the ids that
// arrived.
func dropRun(t *testing.T, seed uint64) []uint64 {
	var got []uint64
	synctest.Test(t, func(t *testing.T) {
		cfg := DefaultConfig()
		cfg.Seed = seed
		cfg.Link = Link{Drop: 0.3, Latency: time.Microsecond}
		cfg.InboxSize = 1000
		_, eps := network(t, cfg, 2)
		for i := range 1000 {
			if err := eps[0].Send(context.Background(), 1, &transport.Message{Header: transport.Header{ID: uint64(i)}}); err != nil {
				t.Fatal(err)
			}
		}
		synctest.Wait()
		time.Sleep(time.Millisecond)
		for len(eps[1].Recv()) > 0 {
			got = append(got, (<-eps[1].Recv()).ID)
		}
		st := eps[0].Stats().Links[1]
		if st.MsgsSent != 1000 || st.Dropped != uint64(1000-len(got)) {
			t.Fatalf("stats %+v for %d delivered", st, len(got))
		}
	})
	return got
}

func TestDropDeterministic(t *testing.T) {
	a, b, c := dropRun(t, 1), dropRun(t, 1), dropRun(t, 2)
	if !slices.Equal(a, b) {
		t.Fatal("same seed, different losses")
	}
	if slices.Equal(a, c) {
		t.Fatal("different seeds, same losses")
	}
	if len(a) < 620 || len(a) > 780 {
		t.Fatalf("%d of 1000 delivered at 30%% loss", len(a))
	}
	if !slices.IsSorted(a) {
		t.Fatal("delivery out of order")
	}
}

func TestCutHeal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		net, eps := network(t, DefaultConfig(), 3)
		net.Cut(0, 1)
		for _, p := range [][2]int{{0, 1}, {1, 0}} {
			if err := eps[p[0]].Send(context.Background(), transport.NodeID(p[1]), &transport.Message{}); err != nil {
				t.Fatal(err)
			}
		}
		eps[0].Send(context.Background(), 2, &transport.Message{})
		synctest.Wait()
		if len(eps[0].Recv()) != 0 || len(eps[1].Recv()) != 0 || len(eps[2].Recv()) != 1 {
			t.Fatal("messages crossed the cut, or the others were cut too")
		}
		if !net.Link(1, 0).Cut {
			t.Fatal("cut is one-way")
		}
		net.Heal(1, 0)
		eps[0].Send(context.Background(), 1, &transport.Message{Header: transport.Header{ID: 9}})
		if m := <-eps[1].Recv(); m.ID != 9 {
			t.Fatalf("got %v", m)
		}
	})
}

func TestReattach(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		net, eps := network(t, DefaultConfig(), 2)
		if _, err := net.Attach(1); err == nil {
			t.Fatal("attached node 1 twice")
		}
		eps[0].Send(context.Background(), 1, &transport.Message{})
		<-eps[1].Recv()
		eps[1].Close()
		if pe := <-eps[0].Down(); pe.Peer != 1 || !errors.Is(pe, transport.ErrPeerClosed) {
			t.Fatalf("reported %v", pe)
		}
		err := eps[0].Send(context.Background(), 1, &transport.Message{})
		if !errors.Is(err, transport.ErrPeerClosed) {
			t.Fatalf("Send to closed node: %v", err)
		}
		again, err := net.Attach(1)
		if err != nil {
			t.Fatal(err)
		}
		if err := eps[0].Send(context.Background(), 1, &transport.Message{Header: transport.Header{ID: 2}}); err != nil {
			t.Fatal(err)
		}
		if m := <-again.Recv(); m.ID != 2 {
			t.Fatalf("got %v", m)
		}
	})
}

// TestDrainOnClose checks that messages sent before the sender closed
// are still delivered.
func TestDrainOnClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := DefaultConfig()
		cfg.Link.Latency = time.Second
		_, eps := network(t, cfg, 2)
		for i := range 5 {
			eps[0].Send(context.Background(), 1, &transport.Message{Header: transport.Header{ID: uint64(i)}})
		}
		eps[0].Close()
		for i := range 5 {
			if m := <-eps[1].Recv(); m.ID != uint64(i) {
				t.Fatalf("got %v", m)
			}
		}
	})
}

func TestValidate(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatal(err)
	}
	for want, l := range map[string]Link{
		"Bandwidth": {Bandwidth: -1},
		"Latency":   {Latency: -1},
		"Drop":      {Drop: 1.5},
	} {
		cfg := DefaultConfig()
		cfg.Link = l
		if _, err := New(cfg); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: New = %v", want, err)
		}
		net, _ := New(DefaultConfig())
		if err := net.SetLink(0, 1, l); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: SetLink = %v", want, err)
		}
	}
	cfg := DefaultConfig()
	cfg.QueueSize = 0
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "QueueSize") {
		t.Errorf("QueueSize: %v", err)
	}
}
