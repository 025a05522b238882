package mem

import (
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
