package cluster

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"colo/ps/clock"
	"colo/ps/node"
	"colo/ps/server"
)

// TestDensePushSumsExactly pushes dense ranges from two workers at once to
// two servers over TCP, where the servers' endpoints deliver large pushes
// before their values are read and the servers apply the values as they
// arrive (asynchronous and bounded-delay training) or once they all have
// (BSP), and checks the exact sums: each server's part is larger than the
// endpoints' threshold by a few application steps and a remainder, and
// the range starts and ends inside the servers' runs of keys.
func TestDensePushSumsExactly(t *testing.T) {
	const perServer = node.EarlyPush + 3*server.ApplyStep + 7
	const numKeys, begin, end = 2 * perServer, 5, 2*perServer - 3
	const rounds = 4
	val := func(w, r, i int) float32 { return float32((i*7+w*3+r)%11 - 5) }
	for _, ck := range []clock.Config{{Mode: clock.Async}, {Mode: clock.Bounded, Tau: 1}, clock.DefaultConfig()} {
		t.Run(fmt.Sprint(ck.Mode), func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Machines, cfg.Servers, cfg.Workers = 0, 2, 2
			cfg.Network, cfg.NumKeys, cfg.Clock = node.TCP{}, numKeys, ck
			cfg.Timeout = 20 * time.Second
			c, err := Start(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			var wg sync.WaitGroup
			for w := range 2 {
				wg.Go(func() {
					vals := make([]float32, end-begin)
					for r := range rounds {
						for i := range vals {
							vals[i] = val(w, r, begin+i)
						}
						if err := c.Worker(w).PushRange(begin, vals).Wait(); err != nil {
							t.Errorf("worker %d round %d: %v", w, r, err)
							return
						}
					}
					if err := c.Worker(w).Barrier(context.Background()); err != nil {
						t.Errorf("worker %d barrier: %v", w, err)
					}
				})
			}
			wg.Wait()
			if t.Failed() {
				return
			}
			got := make([]float32, numKeys)
			if err := c.Worker(0).PullRange(0, numKeys, got).Wait(); err != nil {
				t.Fatal(err)
			}
			for i, v := range got {
				var want float32
				if i >= begin && i < end {
					for w := range 2 {
						for r := range rounds {
							want += val(w, r, i)
						}
					}
				}
				if v != want {
					t.Fatalf("key %d is %v, want %v", i, v, want)
				}
			}
		})
	}
}
