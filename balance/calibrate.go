package balance

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"colo/ps/worker"
)

// Calibration is what a balancer with Config.Auto measured before its
// first decision: the latency coefficient α of Eq. 1 on the running
// system and the slice granularity of Eq. 4 it gives.
type Calibration struct {
	// Alpha is α in keys: the time a message costs beyond its bytes (β,
	// the time of a one-key pull) over the time one more key costs (1/W,
	// from a pull of Keys keys), the mean over the workers of the median
	// over their links.
	Alpha float64 `json:"alpha_keys"`
	// Slice is Eq. 4's x = √(M·α/N), rounded, at least 1 key and at most
	// M/N: the granularity every later decision uses.
	Slice uint64 `json:"slice"`
	// Keys is the size of the long pulls; Links the links measured in
	// all (those of a server with fewer than two keys are not).
	Keys  uint64 `json:"pull_keys"`
	Links int    `json:"links"`
	// Latency is the median one-key pull time in seconds, the mean over
	// the workers; Seconds the time the calibration took on worker 0.
	Latency float64 `json:"latency_seconds"`
	Seconds float64 `json:"seconds"`
	// Note says why α could not be measured (then Slice is
	// Config.Slice).
	Note string `json:"note,omitempty"`
}

// Calibration settings: each worker pulls from each other server, one
// server at a time and every server answering one worker at a time, a
// one-key range and a range of calibrationKeys keys (or the server's
// whole range if smaller), calibrationReps times each; the fastest of
// each size is the one that waited for nothing else.
const (
	calibrationKeys = 8192
	calibrationReps = 4
)

// AlphaOf returns α in keys from the time of a one-key message (small)
// and of a message of keys keys (large): the fixed cost of a message,
// small, over the cost of one more key, (large − small)/(keys − 1). It
// reports false when the times do not allow it (keys < 2, small ≤ 0, or
// large ≤ small: the bytes cost nothing that can be seen).
func AlphaOf(small, large time.Duration, keys uint64) (float64, bool) {
	if keys < 2 || small <= 0 || large <= small {
		return 0, false
	}
	perKey := float64(large-small) / float64(keys-1)
	return float64(small) / perKey, true
}

// calibrate measures α on the links of a job of co-located machines and
// returns it with Eq. 4's slice for a model of b.keys keys. Every worker
// calls it at the same round (between two rounds, as a decision); the
// workers step together through the N−1 shifts s, worker i pulling from
// server (i+s) mod N at shift s, so that each server answers one worker
// at a time, with a barrier between shifts. The per-worker estimates are
// summed in an all-reduce, so that every worker takes the same slice.
func (b *Balancer) calibrate(ctx context.Context, w *worker.Worker) (Calibration, error) {
	start := time.Now()
	n, me := b.n, w.Rank()
	t := w.Table()
	long := uint64(calibrationKeys)
	var alphas, lats []float64
	buf := make([]float32, long*uint64(max(1, w.Width())))
	timed := func(lo, hi uint64) (time.Duration, error) {
		t0 := time.Now()
		err := w.PullRange(lo, hi, buf[:(hi-lo)*uint64(max(1, w.Width()))]).Wait()
		return time.Since(t0), err
	}
	if err := w.Barrier(ctx); err != nil {
		return Calibration{}, fmt.Errorf("calibrating: %w", err)
	}
	for s := 1; s < n; s++ {
		j := (me + s) % n
		lo, hi, _ := t.Range(j)
		hi = min(hi, b.keys)
		if hi > lo+1 {
			size := min(hi-lo, long)
			small, large := time.Duration(math.MaxInt64), time.Duration(math.MaxInt64)
			for range calibrationReps {
				d1, err := timed(lo, lo+1)
				if err != nil {
					return Calibration{}, fmt.Errorf("calibrating the link from server %d: %w", j, err)
				}
				d2, err := timed(lo, lo+size)
				if err != nil {
					return Calibration{}, fmt.Errorf("calibrating the link from server %d: %w", j, err)
				}
				small, large = min(small, d1), min(large, d2)
			}
			if a, ok := AlphaOf(small, large, size); ok {
				alphas = append(alphas, a)
				lats = append(lats, small.Seconds())
			}
		}
		if err := w.Barrier(ctx); err != nil {
			return Calibration{}, fmt.Errorf("calibrating: %w", err)
		}
	}
	v := []float64{0, 0, 0, float64(len(alphas))}
	if len(alphas) > 0 {
		v[0], v[1], v[2] = medianOf(alphas), medianOf(lats), 1
	}
	sum, err := w.AllReduce(ctx, v)
	if err != nil {
		return Calibration{}, fmt.Errorf("calibrating: exchanging the estimates: %w", err)
	}
	b.report.ControlBytes += int64(8 * len(v))
	c := Calibration{Keys: long, Links: int(sum[3]), Seconds: time.Since(start).Seconds()}
	if sum[2] == 0 {
		c.Slice = b.cfg.Slice
		c.Note = fmt.Sprintf("no link gave a time that grows with the bytes; the slice stays %d keys", c.Slice)
		return c, nil
	}
	c.Alpha, c.Latency = sum[0]/sum[2], sum[1]/sum[2]
	c.Slice = SliceFor(float64(b.keys), c.Alpha, n)
	return c, nil
}

// SliceFor returns Eq. 4's granularity for a model of M keys over n
// servers and latency coefficient α (keys), as a whole number of keys
// between 1 and M/n (a larger slice would leave a server no whole slice
// of an even split).
func SliceFor(M, alpha float64, n int) uint64 {
	x, err := Granularity(M, alpha, n)
	if err != nil {
		return 1
	}
	return uint64(max(1, min(math.Round(x), math.Floor(M/float64(n)))))
}

// medianOf returns the median of xs, which must not be empty.
func medianOf(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
