package tcp

import (
	"context"
	"testing"

	"colo/internal/workload"
	"colo/kv"
	"colo/transport"
	"colo/transport/transporttest"
)

// BenchmarkPlainTCP is the baseline of BenchmarkTCP: the same round trips,
// byte for byte the same frame sizes, over a bare loopback TCP
// connection with length-prefixed messages read into reused buffers and
// no framing, decoding or allocation. BenchmarkTCP's throughput divided by
// this one's is the transport's efficiency.
func BenchmarkPlainTCP(b *testing.B) {
	keys := workload.SparseKeySet()
	deltaKeys, _ := kv.KeysSize(keys)
	denseKeys, _ := kv.KeysSize([]uint64{0, workload.DenseVals})
	const hdr = transport.PrefixSize + transport.HeaderSize
	for _, w := range []struct {
		name      string
		req, resp int // frame sizes
		bytes     int
		keys      int
		valsBytes int
	}{
		{"sparse-push", hdr + deltaKeys + 4*workload.SparseKeys, hdr, 12 * workload.SparseKeys, workload.SparseKeys, 0},
		{"sparse-pull", hdr + deltaKeys, hdr + 4*workload.SparseKeys, 12 * workload.SparseKeys, workload.SparseKeys, 0},
		{"sparse-push-rawkeys", hdr + 12*workload.SparseKeys, hdr, 12 * workload.SparseKeys, workload.SparseKeys, 0},
		{"sparse-pull-rawkeys", hdr + 8*workload.SparseKeys, hdr + 4*workload.SparseKeys, 12 * workload.SparseKeys, workload.SparseKeys, 0},
		{"dense-push", hdr + denseKeys + 4*workload.DenseVals, hdr, 4 * workload.DenseVals, 0, 4 * workload.DenseVals},
		{"dense-pull", hdr + denseKeys, hdr + 4*workload.DenseVals, 4 * workload.DenseVals, 0, 4 * workload.DenseVals},
	} {
		b.Run(w.name, func(b *testing.B) {
			b.SetBytes(int64(w.bytes))
			sec := transporttest.PlainTCPRoundTrips(b, 1, 1, w.req, w.resp)
			if w.keys > 0 {
				b.ReportMetric(float64(w.keys)/sec/1e6, "Mkeys/s")
			}
			if w.valsBytes > 0 {
				b.ReportMetric(float64(w.valsBytes)/sec/1e9, "GB/s")
			}
		})
	}
}

// BenchmarkHandshake measures the set-up of one link on loopback: the
// TCP connection and the challenge–response, plain over the token, plain
// over the link key (derived once per peer by SetPeerKey, see
// BenchmarkSetPeerKey), and over the token inside TLS 1.3 with
// certificates on both sides (ECDSA P-256). A link is set up once and
// kept, so this is paid once per pair of nodes.
func BenchmarkHandshake(b *testing.B) {
	ca := newCA(b, "cluster")
	for _, mode := range []struct {
		name  string
		tune  func(*Config)
		keyed bool
	}{{"plain", nil, false}, {"keyed", nil, true}, {"tls", overTLS(b, ca), false}} {
		b.Run(mode.name, func(b *testing.B) {
			open := newEndpoints
			if mode.keyed {
				open = newKeyedEndpoints
			}
			eps := open(b, 2, mode.tune)
			addr := eps[1].Addr().String()
			ctx := context.Background()
			for b.Loop() {
				c, err := eps[0].dial(ctx, 1, addr)
				if err != nil {
					b.Fatal(err)
				}
				eps[0].fail(c, "send", transport.ErrClosed, false)
			}
		})
	}
}

// BenchmarkSetPeerKey measures what a node pays per peer to derive the
// link key from the peer's published key (an X25519 agreement and an
// HMAC).
func BenchmarkSetPeerKey(b *testing.B) {
	ep := newKeyedEndpoints(b, 1, nil)[0]
	pub := NewIdentity().PublicKey().Bytes()
	for b.Loop() {
		if err := ep.SetPeerKey(7, pub); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTLS is BenchmarkTCP with every link over mutual TLS 1.3.
func BenchmarkTLS(b *testing.B) {
	ca := newCA(b, "cluster")
	transporttest.Benchmark(b, conformance(newEndpoints, func(tb testing.TB) func(*Config) { return overTLS(tb, ca) }))
}
