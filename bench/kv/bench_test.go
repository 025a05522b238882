package kv

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"colo/cluster"
	"colo/internal/cputime"
	"colo/internal/workload"
	"colo/ps/worker"
	"colo/transport/transporttest"
)

// benchCluster starts the cluster of benchConfig.
func benchCluster(b testing.TB, servers, workers int, numKeys uint64, rawKeys bool) *cluster.Cluster {
	c, err := cluster.Start(context.Background(), benchConfig(servers, workers, numKeys, rawKeys, nil))
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
	keys := workload.SparseKeySet()
	vals := make([]float32, workload.DenseVals)
	for i := range vals {
		vals[i] = 1
	}
	for _, shape := range [][2]int{{1, 1}, {2, 2}} {
		sparse, dense := kvKind{mode: "sparse"}, kvKind{mode: "dense"}
		for _, w := range []struct {
			name string
			kind kvKind
			raw  bool
			op   func(w *worker.Worker, dst []float32) *worker.Future
			keys int
		}{
			{"sparse-push", sparse, true, func(w *worker.Worker, _ []float32) *worker.Future { return w.Push(keys, vals[:len(keys)]) }, len(keys)},
			{"sparse-pull", sparse, true, func(w *worker.Worker, dst []float32) *worker.Future { return w.Pull(keys, dst[:len(keys)]) }, len(keys)},
			{"sparse-push-gapkeys", sparse, false, func(w *worker.Worker, _ []float32) *worker.Future { return w.Push(keys, vals[:len(keys)]) }, len(keys)},
			{"sparse-pull-gapkeys", sparse, false, func(w *worker.Worker, dst []float32) *worker.Future { return w.Pull(keys, dst[:len(keys)]) }, len(keys)},
			{"dense-push", dense, true, func(w *worker.Worker, _ []float32) *worker.Future { return w.PushRange(0, vals) }, len(vals)},
			{"dense-pull", dense, true, func(w *worker.Worker, dst []float32) *worker.Future { return w.PullRange(0, uint64(len(vals)), dst) }, len(vals)},
		} {
			b.Run(fmt.Sprintf("%dx%d/%s", shape[0], shape[1], w.name), func(b *testing.B) {
				c := benchCluster(b, shape[0], shape[1], w.kind.space(len(vals)), w.raw)
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
				c0 := cputime.Process()
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
				// The process's CPU time per request: on a machine whose
				// cores are busy it is what a request costs, where the
				// wall time also counts the waits for a core.
				b.ReportMetric(float64(cputime.Process()-c0)/float64(b.N*c.NumWorkers()), "cpu-ns/op")
				sec := b.Elapsed().Seconds()
				total := float64(w.keys) * float64(b.N) * float64(c.NumWorkers())
				b.ReportMetric(total/sec/1e6, "Mkeys/s")
				if w.kind == dense {
					b.ReportMetric(4*total/sec/1e9, "GB/s")
				}
			})
		}
	}
}

// BenchmarkPlainTCP is the baseline of BenchmarkKV, shape for shape: the
// same request and answer sizes (per server) as bare length-prefixed
// messages over loopback TCP connections from every worker to every
// server, read into reused buffers, with nothing decoded or applied
// (package transport/tcp/plain). BenchmarkKV's throughput divided by this one's
// is the parameter server's efficiency on this machine.
func BenchmarkPlainTCP(b *testing.B) {
	for _, shape := range [][2]int{{1, 1}, {2, 2}} {
		for _, k := range kvKinds {
			n := k.keys(workload.SparseKeys, workload.DenseVals)
			b.Run(fmt.Sprintf("%dx%d/%s-%s", shape[0], shape[1], k.mode, k.op), func(b *testing.B) {
				req, resp := k.plainSizes(n, shape[0])
				sec := transporttest.PlainTCPRoundTrips(b, shape[0], shape[1], req, resp)
				total := float64(n) * float64(shape[1])
				b.ReportMetric(total/sec/1e6, "Mkeys/s")
				if k.mode == "dense" {
					b.ReportMetric(4*total/sec/1e9, "GB/s")
				}
			})
		}
	}
}
