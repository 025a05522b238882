package worker

import (
	"math/bits"
	"sync/atomic"
	"time"
)

// LatencyBuckets is the number of bounded buckets of Latency.Hist.
const LatencyBuckets = 20

// LatencyBound returns the upper bound of bucket i of Latency.Hist:
// 10 µs · 2^i, from 10 µs to 5.24 s.
func LatencyBound(i int) time.Duration { return 10 * time.Microsecond << i }

// Latency is a histogram of the round trips of a worker's requests to one
// server: the time from the call (Push, Pull and their variants) to the
// server's answer. A push under BSP or bounded delay includes the wait
// for the slower workers (the server holds its answer), and a pull the
// wait for the round gate.
type Latency struct {
	// Count is the number of answers, Nanos their summed round trips.
	Count uint64 `json:"count"`
	Nanos uint64 `json:"nanos"`
	// Hist[i] counts the round trips in (LatencyBound(i−1),
	// LatencyBound(i)]; the last bucket those beyond LatencyBound of
	// LatencyBuckets−1.
	Hist [LatencyBuckets + 1]uint64 `json:"histogram"`
}

// ServerLatency is what a worker measured of one server's answers.
type ServerLatency struct {
	Push Latency `json:"push"`
	Pull Latency `json:"pull"`
}

// latencyBucket returns the bucket of a round trip of d.
func latencyBucket(d time.Duration) int {
	if d <= LatencyBound(0) {
		return 0
	}
	q := (uint64(d) + uint64(LatencyBound(0)) - 1) / uint64(LatencyBound(0)) // ⌈d / 10 µs⌉ ≥ 2
	return min(bits.Len64(q-1), LatencyBuckets)
}

// latencies counts round trips per server and kind, written by the
// worker's driver and read by any goroutine (Worker.Stats): one
// observation is two atomic additions.
type latencies []struct{ push, pull latencyCounter }

// latencyCounter is a Latency in atomic counters; the count is the sum of
// the buckets, so that a snapshot taken between two additions still
// counts every bucket.
type latencyCounter struct {
	nanos atomic.Uint64
	hist  [LatencyBuckets + 1]atomic.Uint64
}

func (l *latencyCounter) observe(d time.Duration) {
	d = max(d, 0)
	l.hist[latencyBucket(d)].Add(1)
	l.nanos.Add(uint64(d))
}

func (l *latencyCounter) load() Latency {
	var out Latency
	out.Nanos = l.nanos.Load()
	for i := range l.hist {
		out.Hist[i] = l.hist[i].Load()
		out.Count += out.Hist[i]
	}
	return out
}

// load returns a snapshot of every server's histograms.
func (ls latencies) load() []ServerLatency {
	out := make([]ServerLatency, len(ls))
	for s := range ls {
		out[s] = ServerLatency{Push: ls[s].push.load(), Pull: ls[s].pull.load()}
	}
	return out
}
