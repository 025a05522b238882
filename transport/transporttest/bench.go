package transporttest

import (
	"context"
	"sync"
	"testing"

	"colo/internal/workload"
	"colo/kv"
	"colo/transport"
	"colo/transport/tcp/plain"
)

// Benchmark measures request–response round trips between two endpoints
// of f with one request in flight, as a worker pushing to or pulling from
// one server:
//
//	sparse-push  request 100k keys + 100k float32, response empty
//	sparse-pull  request 100k keys, response 100k float32
//	dense-push   request a range + 1M float32 (4 MB), response empty
//	dense-pull   request a range, response 1M float32
//
// with gap-coded keys, and the sparse ones again with raw keys
// (sparse-push-rawkeys, sparse-pull-rawkeys).
//
// The server answers pulls from a preallocated array and ignores pushed
// values, so the figures are the transport's. Both sides release the
// messages they receive, as a server does once it applied a push and a
// worker once it copied a pull's values out. Throughput is reported with
// b.SetBytes (the values and keys carried per round trip) and as Mkeys/s
// (sparse) or GB/s of values (dense).
func Benchmark(b *testing.B, f Factory) {
	keys := workload.SparseKeySet()
	vals := make([]float32, max(workload.SparseKeys, workload.DenseVals))
	for i := range vals {
		vals[i] = float32(i)
	}
	dense := []uint64{0, workload.DenseVals}
	rng := transport.Header{Flags: transport.FlagRequest, Cmd: cmdRange}
	push := transport.Header{Flags: transport.FlagRequest | transport.FlagPush}
	pull := transport.Header{Flags: transport.FlagRequest | transport.FlagPull}
	for _, w := range []struct {
		name      string
		raw       bool // RawKeys
		req       *transport.Message
		pull      bool
		keys      int // keys per request, for Mkeys/s
		bytes     int // payload bytes per round trip
		valsBytes int // value bytes per round trip, for GB/s
	}{
		{"sparse-push", false, &transport.Message{Header: push, KV: kv.Batch{Keys: keys, Vals: vals[:workload.SparseKeys]}}, false, workload.SparseKeys, 12 * workload.SparseKeys, 0},
		{"sparse-pull", false, &transport.Message{Header: pull, KV: kv.Batch{Keys: keys}}, true, workload.SparseKeys, 12 * workload.SparseKeys, 0},
		{"sparse-push-rawkeys", true, &transport.Message{Header: push, KV: kv.Batch{Keys: keys, Vals: vals[:workload.SparseKeys]}}, false, workload.SparseKeys, 12 * workload.SparseKeys, 0},
		{"sparse-pull-rawkeys", true, &transport.Message{Header: pull, KV: kv.Batch{Keys: keys}}, true, workload.SparseKeys, 12 * workload.SparseKeys, 0},
		{"dense-push", false, &transport.Message{Header: with(rng, transport.FlagPush), KV: kv.Batch{Keys: dense, Vals: vals[:workload.DenseVals]}}, false, 0, 4 * workload.DenseVals, 4 * workload.DenseVals},
		{"dense-pull", false, &transport.Message{Header: with(rng, transport.FlagPull), KV: kv.Batch{Keys: dense}}, true, 0, 4 * workload.DenseVals, 4 * workload.DenseVals},
	} {
		b.Run(w.name, func(b *testing.B) {
			eps := f(b, 2, Options{Frame: transport.FrameOptions{RawKeys: w.raw}})
			worker, server := eps[0], eps[1]
			ctx := context.Background()
			go serveEcho(ctx, server, vals)
			b.SetBytes(int64(w.bytes))
			b.ReportAllocs()
			id := uint64(0)
			for b.Loop() {
				id++
				w.req.ID = id
				if err := worker.Send(ctx, server.ID(), w.req); err != nil {
					b.Fatal(err)
				}
				m, ok := <-worker.Recv()
				if !ok || m.ID != id {
					b.Fatalf("response %v to request %d", m, id)
				}
				if w.pull && len(m.KV.Vals) == 0 {
					b.Fatal("empty pull response")
				}
				m.Release()
			}
			sec := b.Elapsed().Seconds() / float64(b.N)
			if w.keys > 0 {
				b.ReportMetric(float64(w.keys)/sec/1e6, "Mkeys/s")
			}
			if w.valsBytes > 0 {
				b.ReportMetric(float64(w.valsBytes)/sec/1e9, "GB/s")
			}
		})
	}
}

// cmdRange marks a request whose two keys are a range [begin, end).
const cmdRange = 1

// with returns h with flags f added.
func with(h transport.Header, f transport.Flags) transport.Header {
	h.Flags |= f
	return h
}

// serveEcho answers every request on ep until Recv is closed: pushes with
// an empty response, pulls with the values of the requested keys (a
// prefix of vals) or range.
func serveEcho(ctx context.Context, ep transport.Endpoint, vals []float32) {
	for m := range ep.Recv() {
		resp := &transport.Message{Header: transport.Header{ID: m.ID, App: m.App, Customer: m.Customer}}
		if m.Flags&transport.FlagPull != 0 {
			n := uint64(len(m.KV.Keys))
			if m.Cmd == cmdRange && len(m.KV.Keys) == 2 {
				n = m.KV.Keys[1] - m.KV.Keys[0]
			}
			resp.KV.Vals = vals[:min(n, uint64(len(vals)))]
		}
		if err := ep.Send(ctx, m.Sender, resp); err != nil {
			return
		}
		m.Release()
	}
}

// PlainTCPRoundTrips runs b.N rounds on every worker of a servers ×
// workers plain.Mesh at once and returns the seconds per round of one
// worker; the caller reports its own metrics from it. With 1 × 1 it is
// round trips of a req-byte request and a resp-byte answer over one
// connection.
func PlainTCPRoundTrips(b *testing.B, servers, workers, req, resp int) float64 {
	b.Helper()
	p, err := plain.Start(servers, workers, req, resp)
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	for i := range workers {
		if err := p.Round(i); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	var wg sync.WaitGroup
	for i := range workers {
		wg.Go(func() {
			for range b.N {
				if err := p.Round(i); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	return b.Elapsed().Seconds() / float64(b.N)
}
