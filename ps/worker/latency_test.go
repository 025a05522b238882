package worker

import (
	"testing"
	"time"

	"colo/kv"
	"colo/ps/clock"
	"colo/transport"
)

func TestLatencyBucket(t *testing.T) {
	us := time.Microsecond
	for _, c := range []struct {
		d    time.Duration
		want int
	}{
		{-us, 0}, {0, 0}, {10 * us, 0}, {10*us + 1, 1}, {20 * us, 1}, {20*us + 1, 2}, {40 * us, 2},
		{3 * time.Millisecond, 9}, {LatencyBound(19), 19}, {LatencyBound(19) + 1, 20}, {time.Hour, 20},
	} {
		if got := latencyBucket(max(c.d, 0)); got != c.want {
			t.Errorf("latencyBucket(%v) = %d, want %d", c.d, got, c.want)
		}
		// The bucket's bounds hold d.
		if b := latencyBucket(max(c.d, 0)); c.d > 0 && (b < LatencyBuckets && c.d > LatencyBound(b) || b > 0 && c.d <= LatencyBound(b-1)) {
			t.Errorf("%v in bucket %d, whose bounds do not hold it", c.d, b)
		}
	}
}

// TestLatencyByHand walks a push and a pull to two servers on a clock set
// by hand: each answer is counted once, for its server and kind, from
// the call to the answer.
func TestLatencyByHand(t *testing.T) {
	now := time.Unix(0, 0)
	c, err := NewCore(Config{Rank: 0, Table: mustUniform(2, 8), Width: 1, Clock: clock.Config{Mode: clock.Async}, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	answer := func(s int, id uint64, flags transport.Flags, vals []float32) {
		c.Receive(s, &transport.Message{Header: transport.Header{Type: transport.TypeData, Flags: flags, ID: id}, KV: kv.Batch{Vals: vals}})
	}
	push := c.Submit(&Op{kind: opPushRange, begin: 0, end: 8, vals: make([]float32, 8), fut: newFuture()})
	id := push[0].M.ID
	now = now.Add(15 * time.Microsecond)
	answer(0, id, transport.FlagPush, nil)
	now = now.Add(3*time.Millisecond - 15*time.Microsecond)
	answer(1, id, transport.FlagPush, nil)
	pull := c.Submit(&Op{kind: opPullRange, begin: 0, end: 8, dst: make([]float32, 8), fut: newFuture()})
	id = pull[0].M.ID
	now = now.Add(10 * time.Microsecond)
	answer(1, id, transport.FlagPull, make([]float32, 4))
	now = now.Add(10 * time.Second)
	answer(0, id, transport.FlagPull, make([]float32, 4))
	answer(0, id, transport.FlagPull, make([]float32, 4)) // a late duplicate: not a request any more
	lat := c.Latency()
	if c.Stats().Latency != nil {
		t.Error("Core.Stats copies the histograms")
	}
	for _, w := range []struct {
		l      Latency
		bucket int
		nanos  time.Duration
	}{
		{lat[0].Push, 1, 15 * time.Microsecond},
		{lat[1].Push, 9, 3 * time.Millisecond},
		{lat[1].Pull, 0, 10 * time.Microsecond},
		{lat[0].Pull, LatencyBuckets, 10*time.Second + 10*time.Microsecond},
	} {
		var want Latency
		want.Count, want.Nanos, want.Hist[w.bucket] = 1, uint64(w.nanos), 1
		if w.l != want {
			t.Errorf("got %+v, want %+v", w.l, want)
		}
	}
}
