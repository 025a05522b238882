package tcp

import (
	"testing"

	"colo/transport"
	"colo/transport/transporttest"
)

// testToken is the cluster token of the tests.
const testToken = "colo-test"

// newEndpoints starts n loopback endpoints that know each other, with
// configuration changes applied by tune.
func newEndpoints(tb testing.TB, n int, tune func(*Config)) []*Endpoint {
	tb.Helper()
	eps := make([]*Endpoint, n)
	for i := range eps {
		cfg := DefaultConfig()
		cfg.ID, cfg.Token = transport.NodeID(i), testToken
		if tune != nil {
			tune(&cfg)
		}
		ep, err := Listen(cfg)
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { ep.Close() })
		eps[i] = ep
	}
	for _, a := range eps {
		for _, b := range eps {
			a.SetPeer(b.ID(), b.Addr().String())
		}
	}
	return eps
}

// factory is newEndpoints for the conformance suite.
func factory(tb testing.TB, n int, opts transporttest.Options) []transport.Endpoint {
	return conformance(newEndpoints, nil)(tb, n, opts)
}

// conformance returns a factory for the conformance suite that opens
// endpoints with open, tuned by tune (nil for none) and by the suite's
// options.
func conformance(open func(testing.TB, int, func(*Config)) []*Endpoint, tune func(testing.TB) func(*Config)) func(testing.TB, int, transporttest.Options) []transport.Endpoint {
	return func(tb testing.TB, n int, opts transporttest.Options) []transport.Endpoint {
		eps := open(tb, n, func(c *Config) {
			if tune != nil {
				tune(tb)(c)
			}
			// The suite's frame options, with the key caching of the
			// configuration (on by default) unless the suite sets it.
			keyCache := c.Frame.KeyCache
			c.Frame = opts.Frame
			if opts.Frame.KeyCache == 0 {
				c.Frame.KeyCache = keyCache
			}
			if opts.Buffer > 0 {
				c.InboxSize = opts.Buffer
				c.SocketBuffer = 64 << 10
			}
		})
		out := make([]transport.Endpoint, n)
		for i, e := range eps {
			out[i] = e
		}
		return out
	}
}

func TestConformance(t *testing.T) { transporttest.Run(t, factory) }

// TestConformanceNoKeyCache runs the suite with key caching off.
func TestConformanceNoKeyCache(t *testing.T) {
	transporttest.Run(t, conformance(newEndpoints, func(testing.TB) func(*Config) {
		return func(c *Config) { c.Frame.KeyCache = 0 }
	}))
}

func BenchmarkTCP(b *testing.B) { transporttest.Benchmark(b, factory) }
