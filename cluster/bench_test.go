package cluster

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"colo/kv"
	"colo/ps/clock"
	"colo/ps/worker"
	"colo/transport"
	"colo/transport/tcp"
	"colo/transport/transporttest"
)

// benchCluster starts servers × workers separate nodes over TCP loopback
// with a summing server, asynchronous (one request in flight per worker,
// no round gate), keys [0, 2^24) split in ranges.
func benchCluster(b *testing.B, servers, workers int, rawKeys bool) *Cluster {
	cfg := DefaultConfig()
	cfg.Machines, cfg.Servers, cfg.Workers = 0, servers, workers
	cfg.Transport, cfg.NumKeys, cfg.Clock = "tcp", transporttest.SparseSpace, clock.Config{Mode: clock.Async}
	cfg.Timeout = 10 * time.Second
	cfg.TCP = func(c *tcp.Config) { c.Frame.RawKeys = rawKeys }
	c, err := Start(context.Background(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	return c
}

// BenchmarkKV measures push and pull through the whole path (worker
// splitting, TCP loopback, server decoding and summing into its store,
// the reply, the worker merging) with one request in flight per worker:
// sparse requests of 100k random keys of 2^24 with one float each, and
// dense requests of 1M float32 in one range, for 1 server × 1 worker and
// 2 × 2. Throughput counts every worker's keys; GB/s is of values.
func BenchmarkKV(b *testing.B) {
	keys := transporttest.SparseKeySet()
	vals := make([]float32, transporttest.DenseVals)
	for i := range vals {
		vals[i] = 1
	}
	for _, shape := range [][2]int{{1, 1}, {2, 2}} {
		for _, w := range []struct {
			name string
			raw  bool
			op   func(w *worker.Worker, dst []float32) *worker.Future
			keys int
		}{
			{"sparse-push", true, func(w *worker.Worker, _ []float32) *worker.Future { return w.Push(keys, vals[:len(keys)]) }, len(keys)},
			{"sparse-pull", true, func(w *worker.Worker, dst []float32) *worker.Future { return w.Pull(keys, dst[:len(keys)]) }, len(keys)},
			{"sparse-push-gapkeys", false, func(w *worker.Worker, _ []float32) *worker.Future { return w.Push(keys, vals[:len(keys)]) }, len(keys)},
			{"sparse-pull-gapkeys", false, func(w *worker.Worker, dst []float32) *worker.Future { return w.Pull(keys, dst[:len(keys)]) }, len(keys)},
			{"dense-push", true, func(w *worker.Worker, _ []float32) *worker.Future { return w.PushRange(0, vals) }, len(vals)},
			{"dense-pull", true, func(w *worker.Worker, dst []float32) *worker.Future { return w.PullRange(0, uint64(len(vals)), dst) }, len(vals)},
		} {
			b.Run(fmt.Sprintf("%dx%d/%s", shape[0], shape[1], w.name), func(b *testing.B) {
				c := benchCluster(b, shape[0], shape[1], w.raw)
				dsts := make([][]float32, c.NumWorkers())
				for i := range dsts {
					dsts[i] = make([]float32, len(vals))
					// Warm the links and the pools.
					if err := w.op(c.Worker(i), dsts[i]).Wait(); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportAllocs()
				b.ResetTimer()
				var wg sync.WaitGroup
				for i := range c.NumWorkers() {
					wg.Go(func() {
						for range b.N {
							if err := w.op(c.Worker(i), dsts[i]).Wait(); err != nil {
								b.Error(err)
								return
							}
						}
					})
				}
				wg.Wait()
				b.StopTimer()
				sec := b.Elapsed().Seconds()
				total := float64(w.keys) * float64(b.N) * float64(c.NumWorkers())
				b.ReportMetric(total/sec/1e6, "Mkeys/s")
				if w.name[:5] == "dense" {
					b.ReportMetric(4*total/sec/1e9, "GB/s")
				}
			})
		}
	}
}

// BenchmarkPlainTCP is the baseline of BenchmarkKV's dense requests and
// raw-key sparse requests: the same request and answer sizes as bare
// length-prefixed messages over one loopback TCP connection, read into
// reused buffers, with nothing decoded or applied.
func BenchmarkPlainTCP(b *testing.B) {
	const hdr = transport.PrefixSize + transport.HeaderSize + 8 // + the round
	n, d := transporttest.SparseKeys, transporttest.DenseVals
	for _, w := range []struct {
		name      string
		req, resp int
		keys      int
		dense     bool
	}{
		{"sparse-push", hdr + 12*n, hdr, n, false},
		{"sparse-pull", hdr + 8*n, hdr + 4*n, n, false},
		{"dense-push", hdr + 16 + 4*d, hdr, d, true},
		{"dense-pull", hdr + 16, hdr + 4*d, d, true},
	} {
		b.Run(w.name, func(b *testing.B) {
			b.SetBytes(int64(4 * w.keys))
			sec := transporttest.PlainTCPRoundTrips(b, w.req, w.resp)
			b.ReportMetric(float64(w.keys)/sec/1e6, "Mkeys/s")
			if w.dense {
				b.ReportMetric(float64(4*w.keys)/sec/1e9, "GB/s")
			}
		})
	}
}

// BenchmarkClusterStart starts and stops a cluster of 2 machines over
// TCP loopback: scheduler, registration, endpoints, address book.
func BenchmarkClusterStart(b *testing.B) {
	cfg := DefaultConfig()
	cfg.Transport = "tcp"
	for b.Loop() {
		c, err := Start(context.Background(), cfg)
		if err != nil {
			b.Fatal(err)
		}
		c.Close()
	}
	b.ReportMetric(b.Elapsed().Seconds()/float64(b.N)*1e3, "ms/start")
}

var _ = kv.Batch{}
