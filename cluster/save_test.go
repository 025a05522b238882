package cluster

import (
	"context"
	"runtime"
	"testing"
	"time"

	"colo/ps/clock"
)

// TestSaveCoLocatedKeepsTheCopy checks that the snapshot of a co-located
// server comes to its worker as the one copy the server makes of its
// store: Save returns the pushed values, and allocates less than twice
// the snapshot's size (a copy in the answer and another in the worker
// would take three times).
func TestSaveCoLocatedKeepsTheCopy(t *testing.T) {
	const n = 1 << 15
	cfg := DefaultConfig()
	cfg.Machines, cfg.NumKeys, cfg.Clock = 1, n, clock.Config{Mode: clock.Async}
	cfg.Timeout = 10 * time.Second
	c, err := Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	w := c.Worker(0)
	vals := make([]float32, n)
	for i := range vals {
		vals[i] = float32(i%1000) - 500
	}
	if err := w.PushRange(0, vals).Wait(); err != nil {
		t.Fatal(err)
	}
	want, err := w.Save(0)
	if err != nil {
		t.Fatal(err)
	}
	if len(want.Keys) != n {
		t.Fatalf("snapshot of %d keys, want %d", len(want.Keys), n)
	}
	size := uint64(8*len(want.Keys) + 4*len(want.Vals) + 4*len(want.Lens))
	got := make([]float32, n)
	if err := w.PullRange(0, n, got).Wait(); err != nil {
		t.Fatal(err)
	}
	for i, k := range want.Keys {
		if k != uint64(i) || want.Vals[i] != got[i] {
			t.Fatalf("snapshot key %d: %d = %v, the store holds %v", i, k, want.Vals[i], got[i])
		}
	}
	const saves = 4
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range saves {
		if _, err := w.Save(0); err != nil {
			t.Fatal(err)
		}
	}
	runtime.ReadMemStats(&after)
	if per := (after.TotalAlloc - before.TotalAlloc) / saves; per >= 2*size {
		t.Fatalf("a save of %d bytes allocated %d bytes, want less than twice its size", size, per)
	} else {
		t.Logf("a save of %d bytes allocated %d bytes", size, per)
	}
}
