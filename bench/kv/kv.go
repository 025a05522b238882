// Package kv is the parameter-server benchmark behind `colo bench kv`:
// push and pull through the whole path (worker splitting, TCP loopback,
// server decoding and summing into its store, the reply, the worker
// merging), on real clusters of separate servers and workers started
// with cluster.Start, each line followed by its plain-TCP reference
// (package transport/tcp/plain) carrying the same bytes without colo.
//
// Four request kinds run on every cluster shape, in this order: sparse
// push, sparse pull, dense push, dense pull. A sparse request carries
// SparseKeys random keys of [0, 2^24) with one float32 each (keys framed
// raw, 8 bytes); a dense request one range of DenseVals float32 that is
// the whole model, so that every server holds and serves its share. Each
// worker has one request in flight; the servers sum; the clock is
// asynchronous. Run returns one Record per shape and kind:
//
//	cfg := kv.DefaultConfig() // 1 × 1 and 2 × 2, 100k keys, 1M values, 1 s each
//	recs, err := kv.Run(ctx, cfg)
//	for _, r := range recs {
//		fmt.Println(r.Mode, r.Op, r.MBPerS, r.PlainMBPerS)
//	}
//
// A run takes about 2 × Duration per shape and kind (the cluster, then
// its plain reference), plus the start of a fresh cluster for each. The
// Go benchmarks BenchmarkKV and BenchmarkPlainTCP of this package measure
// the same paths under `go test -bench`.
package kv

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"colo/cluster"
	"colo/internal/cputime"
	"colo/internal/workload"
	"colo/ps/clock"
	"colo/ps/node"
	"colo/ps/proto"
	"colo/ps/worker"
	"colo/transport"
	"colo/transport/tcp"
	"colo/transport/tcp/plain"
)

// Record is the measurement of one request kind on one cluster shape, a
// line of `colo bench kv --json`.
type Record struct {
	// Mode is "sparse" (random keys, one float32 each) or "dense" (one
	// range of float32).
	Mode string `json:"mode"`
	// TLS: the links ran over mutual TLS (Config.TLS).
	TLS     bool `json:"tls,omitempty"`
	Servers int  `json:"servers"`
	Workers int  `json:"workers"`
	// Op is "push" or "pull".
	Op string `json:"op"`
	// KeysPerS counts the keys of every worker's requests per second.
	KeysPerS float64 `json:"keys_per_s"`
	// MBPerS is the payload per second in 10^6 bytes: 8 bytes of key and 4
	// of value per sparse key, 4 bytes per dense value.
	MBPerS float64 `json:"mb_per_s"`
	// P50us and P99us are percentiles of the request latency, from the
	// call to the end of Wait, in microseconds.
	P50us    float64 `json:"p50_us"`
	P99us    float64 `json:"p99_us"`
	Requests int     `json:"requests"`
	Seconds  float64 `json:"seconds"`
	// CPUus is the CPU time of the whole process (every node of the
	// cluster, the runtime included) over the counted requests, per
	// request, in microseconds: what a request costs,
	// which a busy machine changes less than the rates. 0 where the
	// process's CPU time is not known.
	CPUus float64 `json:"cpu_us,omitempty"`
	// PlainMBPerS is MBPerS of the same traffic without colo, measured
	// right after: requests and answers of the same sizes per server, as
	// bare length-prefixed messages over loopback TCP connections of the
	// same shape, one request in flight per worker, nothing decoded or
	// applied (package transport/tcp/plain). It is what the machine's loopback
	// gives at that moment, the reference for MBPerS.
	PlainMBPerS float64 `json:"plain_mb_per_s"`
}

// kvKind is a request kind of the benchmark: mode "sparse" or "dense",
// op "push" or "pull".
type kvKind struct{ mode, op string }

// kvKinds are the request kinds, in the order they are measured.
var kvKinds = []kvKind{{"sparse", "push"}, {"sparse", "pull"}, {"dense", "push"}, {"dense", "pull"}}

// keys returns the keys of one request of the kind.
func (k kvKind) keys(sparseKeys, denseVals int) int {
	if k.mode == "sparse" {
		return sparseKeys
	}
	return denseVals
}

// space is the key space of the cluster that serves the kind: the sparse
// keys' [0, 2^24), or the dense model's [0, denseVals).
func (k kvKind) space(denseVals int) uint64 {
	if k.mode == "sparse" {
		return workload.SparseSpace
	}
	return uint64(denseVals)
}

// bytesPerKey is the payload of one key of the kind: 8 bytes of key and 4
// of value when sparse, 4 of value when dense.
func (k kvKind) bytesPerKey() float64 {
	if k.mode == "sparse" {
		return 12
	}
	return 4
}

// plainSizes returns the request and answer frames, in bytes, that one
// server sees of a request of n keys of the kind split evenly over
// servers, as colo frames them with raw keys. A request has the length
// prefix, the header and the round, then 12 bytes per sparse key pushed
// (key and value), 8 per sparse key pulled or 16 bytes of range per dense
// request, and 4 per value pushed; an answer has the prefix and the header,
// then 4 bytes per value pulled. TestPlainSizes checks them against the
// traffic of a cluster.
func (k kvKind) plainSizes(n, servers int) (req, resp int) {
	const hdr = transport.PrefixSize + transport.HeaderSize
	const reqHdr = hdr + proto.MetaSize
	part := (n + servers - 1) / servers
	switch {
	case k.mode == "sparse" && k.op == "push":
		return reqHdr + 12*part, hdr
	case k.mode == "sparse":
		return reqHdr + 8*part, hdr + 4*part
	case k.op == "push":
		return reqHdr + 16 + 4*part, hdr
	default:
		return reqHdr + 16, hdr + 4*part
	}
}

// Config configures Run.
type Config struct {
	// Shapes lists the clusters to measure as {servers, workers}.
	Shapes [][2]int
	// Duration is how long each request kind runs on each shape.
	Duration time.Duration
	// SparseKeys is the number of random keys of a sparse request, drawn
	// from [0, 2^24); DenseVals the number of values of a dense request.
	SparseKeys, DenseVals int
	// Watch, when set, is called with each cluster's Cluster.Stats once
	// it has started (colo bench kv --metrics serves them).
	Watch func(stats func() []node.Stats)
	// TLS, when not nil, runs every link of the clusters over mutual TLS
	// with it (tcp.Config.TLS); the plain-TCP reference stays plain.
	TLS *tls.Config
}

// DefaultConfig returns the configuration of `colo bench kv`: 1 × 1 and
// 2 × 2 clusters, the requests of package internal/workload (sparse ones
// of 100k keys, dense ones of 1M float32), one second each.
func DefaultConfig() Config {
	return Config{
		Shapes:     [][2]int{{1, 1}, {2, 2}},
		Duration:   time.Second,
		SparseKeys: workload.SparseKeys,
		DenseVals:  workload.DenseVals,
	}
}

// Validate checks the configuration.
func (c Config) Validate() error {
	if len(c.Shapes) == 0 {
		return fmt.Errorf("shapes: want at least one servers × workers shape")
	}
	for _, s := range c.Shapes {
		if s[0] < 1 || s[1] < 1 {
			return fmt.Errorf("shape %d × %d: want at least one server and one worker", s[0], s[1])
		}
	}
	switch {
	case c.Duration <= 0:
		return fmt.Errorf("duration %v: want a positive time", c.Duration)
	case c.SparseKeys < 1 || c.SparseKeys > workload.SparseSpace/2:
		return fmt.Errorf("sparse keys %d: want 1..%d", c.SparseKeys, workload.SparseSpace/2)
	case c.DenseVals < 1:
		return fmt.Errorf("dense values %d: want at least 1", c.DenseVals)
	}
	return nil
}

// Run measures push and pull through the whole parameter-server path
// over TCP loopback: separate server and worker nodes, a summing server,
// asynchronous consistency and one request in flight per worker. Each
// shape gets a fresh cluster per request kind; the first request of every
// worker warms the links and the store up, and the workers start counting
// once all of them are warm.
func Run(ctx context.Context, cfg Config) ([]Record, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	keys := sparseKeys(cfg.SparseKeys)
	vals := make([]float32, max(cfg.DenseVals, cfg.SparseKeys))
	for i := range vals {
		vals[i] = 1
	}
	dense := vals[:cfg.DenseVals]
	calls := map[kvKind]func(w *worker.Worker, dst []float32) *worker.Future{
		{"sparse", "push"}: func(w *worker.Worker, _ []float32) *worker.Future { return w.Push(keys, vals[:len(keys)]) },
		{"sparse", "pull"}: func(w *worker.Worker, dst []float32) *worker.Future { return w.Pull(keys, dst[:len(keys)]) },
		{"dense", "push"}:  func(w *worker.Worker, _ []float32) *worker.Future { return w.PushRange(0, dense) },
		{"dense", "pull"}: func(w *worker.Worker, dst []float32) *worker.Future {
			return w.PullRange(0, uint64(len(dense)), dst[:len(dense)])
		},
	}
	var out []Record
	for _, shape := range cfg.Shapes {
		for _, kind := range kvKinds {
			n := kind.keys(len(keys), len(dense))
			rec, err := benchOne(ctx, shape, kind.space(len(dense)), cfg.Duration, n, len(vals), calls[kind], cfg.Watch, cfg.TLS)
			if err != nil {
				return out, fmt.Errorf("%d × %d %s %s: %w", shape[0], shape[1], kind.mode, kind.op, err)
			}
			rec.Mode, rec.Op, rec.TLS = kind.mode, kind.op, cfg.TLS != nil
			rec.MBPerS = rec.KeysPerS * kind.bytesPerKey() / 1e6
			sec, err := benchPlain(ctx, shape, cfg.Duration, kind, n)
			if err != nil {
				return out, fmt.Errorf("%d × %d %s %s over plain TCP: %w", shape[0], shape[1], kind.mode, kind.op, err)
			}
			rec.PlainMBPerS = float64(n) * float64(shape[1]) / sec * kind.bytesPerKey() / 1e6
			out = append(out, rec)
		}
	}
	return out, nil
}

// benchPlain measures the traffic of one request kind over plain TCP
// connections of the given shape for d and returns the seconds per round
// of one worker.
func benchPlain(ctx context.Context, shape [2]int, d time.Duration, kind kvKind, n int) (float64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	req, resp := kind.plainSizes(n, shape[0])
	p, err := plain.Start(shape[0], shape[1], req, resp)
	if err != nil {
		return 0, err
	}
	defer p.Close()
	_, sec, err := p.Measure(d)
	return sec, err
}

// benchConfig is the cluster of a benchmark: servers × workers separate
// nodes over TCP loopback, summing servers, asynchronous (one request in
// flight per worker, no round gate), keys [0, numKeys) split in even
// ranges over the servers. Sparse requests use keys [0, 2^24); a dense
// request covers the whole model, numKeys = its length, so that every
// server holds and serves its share of it. tlsConfig, when not nil, puts
// every link on mutual TLS.
func benchConfig(servers, workers int, numKeys uint64, rawKeys bool, tlsConfig *tls.Config) cluster.Config {
	cfg := cluster.DefaultConfig()
	cfg.Machines, cfg.Servers, cfg.Workers = 0, servers, workers
	cfg.NumKeys, cfg.Clock = numKeys, clock.Config{Mode: clock.Async}
	cfg.Timeout = 10 * time.Second
	cfg.Network = node.TCP{TLS: tlsConfig, Tune: func(c *tcp.Config) { c.Frame.RawKeys = rawKeys }}
	return cfg
}

// benchOne runs one request kind on a fresh cluster of the given shape
// and key space, keys framed raw (8 bytes each, as plainSizes counts
// them).
func benchOne(ctx context.Context, shape [2]int, numKeys uint64, d time.Duration, n int, dstLen int,
	call func(*worker.Worker, []float32) *worker.Future, watch func(func() []node.Stats), tlsConfig *tls.Config) (Record, error) {
	c, err := cluster.Start(ctx, benchConfig(shape[0], shape[1], numKeys, true, tlsConfig))
	if err != nil {
		return Record{}, err
	}
	defer c.Close()
	if watch != nil {
		watch(c.Stats)
		// Once the cluster ends, the watcher keeps its final counters,
		// not the cluster: holding a finished cluster's stores alive would
		// slow the collections of the clusters after it.
		defer func() {
			final := c.Stats()
			watch(func() []node.Stats { return final })
		}()
	}
	lat := make([][]time.Duration, c.NumWorkers())
	errs := make([]error, c.NumWorkers())
	dsts := make([][]float32, c.NumWorkers())
	// Every worker's first request warms its links and the store's pages
	// up, all of them before the clock and the CPU time start.
	var warm sync.WaitGroup
	for i := range c.NumWorkers() {
		warm.Go(func() {
			dsts[i] = make([]float32, dstLen)
			errs[i] = call(c.Worker(i), dsts[i]).Wait()
		})
	}
	warm.Wait()
	if err := errors.Join(errs...); err != nil {
		return Record{}, err
	}
	cpu0 := cputime.Process()
	var wg sync.WaitGroup
	for i := range c.NumWorkers() {
		wg.Go(func() {
			w, dst := c.Worker(i), dsts[i]
			for begin := time.Now(); time.Since(begin) < d; {
				t := time.Now()
				if errs[i] = call(w, dst).Wait(); errs[i] != nil {
					return
				}
				lat[i] = append(lat[i], time.Since(t))
			}
		})
	}
	wg.Wait()
	cpu := cputime.Process() - cpu0
	var all []time.Duration
	for i, e := range errs {
		if e != nil {
			return Record{}, e
		}
		all = append(all, lat[i]...)
	}
	if len(all) == 0 {
		return Record{}, fmt.Errorf("no request completed in %v", d)
	}
	slices.Sort(all)
	var busy time.Duration
	for _, l := range all {
		busy += l
	}
	// Throughput over the time the workers were busy with counted
	// requests, averaged over workers, so warm-up does not count.
	perWorker := busy.Seconds() / float64(c.NumWorkers())
	return Record{
		Servers:  shape[0],
		Workers:  shape[1],
		KeysPerS: float64(n) * float64(len(all)) / perWorker,
		P50us:    us(all[len(all)/2]),
		P99us:    us(all[min(len(all)-1, len(all)*99/100)]),
		Requests: len(all),
		Seconds:  perWorker,
		CPUus:    us(cpu) / float64(len(all)),
	}, nil
}

func us(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }

// sparseKeys returns n distinct sorted keys spread over [0, 2^24) by a
// fixed odd multiplier, the same set on every run.
func sparseKeys(n int) []uint64 {
	if n == workload.SparseKeys {
		return workload.SparseKeySet()
	}
	keys := make([]uint64, n)
	for i := range keys {
		keys[i] = uint64(i) * 2654435761 % workload.SparseSpace
	}
	slices.Sort(keys)
	return slices.Compact(keys)
}
