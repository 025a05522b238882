package cluster

import (
	"colo/ps/node"
	"context"
	"strings"
	"testing"
	"time"

	"colo/ps/clock"
	"colo/transport/tcp"
)

// TestPullLandsInPlace pulls over TCP from two separate servers, whose
// answers are read straight into the caller's array: range and sparse
// pulls return exactly what was pushed, an answer over the frame limit
// fails only its pull (its registration is withdrawn unused), and the
// pulls after it land again.
func TestPullLandsInPlace(t *testing.T) {
	const n = 1 << 16 // keys per server
	cfg := DefaultConfig()
	cfg.Machines, cfg.Servers, cfg.Workers = 0, 2, 1
	cfg.Network, cfg.NumKeys, cfg.Clock = node.TCP{}, 2*n, clock.Config{Mode: clock.Async}
	cfg.Timeout = 10 * time.Second
	// Room for a pull of n/2 values, not for one of n.
	cfg.Network = node.TCP{Tune: func(c *tcp.Config) { c.Frame.MaxFrame = 3 * n }}
	c, err := Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	w := c.Worker(0)
	vals := make([]float32, 2*n)
	for i := range vals {
		vals[i] = float32(i%1000) - 500
	}
	// Two pushes of half the keys each fit in a frame.
	for _, half := range []int{0, 1} {
		lo, hi := half*n/2, half*n/2+n/2
		for _, base := range []int{0, n} {
			if err := w.PushRange(uint64(base+lo), vals[base+lo:base+hi]).Wait(); err != nil {
				t.Fatal(err)
			}
		}
	}
	check := func(what string, got []float32, key func(i int) int) {
		t.Helper()
		for i, v := range got {
			if want := vals[key(i)]; v != want {
				t.Fatalf("%s: value %d is %v, want %v", what, i, v, want)
			}
		}
	}
	// A range across both servers, n/2 values from each.
	got := make([]float32, n)
	if err := w.PullRange(n/2, n/2+n, got).Wait(); err != nil {
		t.Fatal(err)
	}
	check("range pull", got, func(i int) int { return n/2 + i })
	// Sparse keys on both servers.
	keys := make([]uint64, 0, n/2)
	for k := uint64(3); k < 2*n; k += 4 {
		keys = append(keys, k)
	}
	got = make([]float32, len(keys))
	if err := w.Pull(keys, got).Wait(); err != nil {
		t.Fatal(err)
	}
	check("sparse pull", got, func(i int) int { return int(keys[i]) })
	// n values from server 1 do not fit: that pull fails, server 0's part
	// lands, and the next pulls work.
	got = make([]float32, n+n/4)
	err = w.PullRange(n-n/4, 2*n, got).Wait()
	if err == nil || !strings.Contains(err.Error(), "frame too large") {
		t.Fatalf("pull over the limit: %v", err)
	}
	for range 3 {
		got = make([]float32, n/2)
		if err := w.PullRange(n+n/4, n+3*n/4, got).Wait(); err != nil {
			t.Fatal(err)
		}
		check("range pull after the failure", got, func(i int) int { return n + n/4 + i })
	}
}
