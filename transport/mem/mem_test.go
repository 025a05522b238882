package mem

import (
	"context"
	"testing"

	"colo/transport"
	"colo/transport/transporttest"
)

// factory attaches n endpoints to a fresh network with ideal links.
func factory(tb testing.TB, n int, opts transporttest.Options) []transport.Endpoint {
	cfg := DefaultConfig()
	cfg.Frame = opts.Frame
	if opts.Buffer > 0 {
		cfg.InboxSize, cfg.QueueSize = opts.Buffer, opts.Buffer
	}
	net, err := New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { net.Close() })
	eps := make([]transport.Endpoint, n)
	for i := range eps {
		if eps[i], err = net.Attach(transport.NodeID(i)); err != nil {
			tb.Fatal(err)
		}
	}
	return eps
}

func TestConformance(t *testing.T) { transporttest.Run(t, factory) }

func BenchmarkMem(b *testing.B) { transporttest.Benchmark(b, factory) }

// TestAttachWhileClosing attaches an id again while its endpoint is
// closing (its peers may see the link fail before its Close returns,
// and a backup then takes the id over at once): the new endpoint gets
// the id's messages, and the old one's Close still ends.
func TestAttachWhileClosing(t *testing.T) {
	n, _ := New(DefaultConfig())
	defer n.Close()
	a, _ := n.Attach(1)
	b, _ := n.Attach(2)
	ping := func(to transport.NodeID) {
		t.Helper()
		if err := b.Send(context.Background(), to, &transport.Message{Header: transport.Header{Type: transport.TypeData, ID: 7}}); err != nil {
			t.Fatal(err)
		}
	}
	ping(1)
	<-a.Recv()
	if _, err := n.Attach(1); err == nil {
		t.Fatal("an id attached twice")
	}
	a.stop() // Close has begun
	a2, err := n.Attach(1)
	if err != nil {
		t.Fatalf("attach while the old endpoint closes: %v", err)
	}
	ping(1)
	if m := <-a2.Recv(); m.ID != 7 || m.Sender != 2 {
		t.Fatalf("the new endpoint got %v", m)
	}
	a.Close() // ends its links, the one from 2 among them
	ping(1)
	if m := <-a2.Recv(); m.ID != 7 {
		t.Fatalf("after the old endpoint closed, the new one got %v", m)
	}
}
