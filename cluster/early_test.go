package cluster

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"colo/ps/clock"
	"colo/ps/node"
	"colo/ps/proto"
	"colo/ps/server"
	"colo/transport"
	"colo/transport/tcp"
)

// TestDensePushSumsExactly pushes dense ranges from two workers at once to
// two servers over TCP and checks the exact sums, with the servers'
// endpoints delivering whole messages (a server sums a push once it has
// arrived, on the link's reader when it is idle) and delivering large
// pushes before their values are read (tcp.Config.Early: the server
// applies the values as they arrive in asynchronous and bounded-delay
// training, once they all have in BSP): each server's part is larger than
// the early threshold by a few application steps and a remainder, and the
// range starts and ends inside the servers' runs of keys.
func TestDensePushSumsExactly(t *testing.T) {
	const threshold = 64 << 10
	const perServer = threshold + 3*server.ApplyStep + 7
	const numKeys, begin, end = 2 * perServer, 5, 2*perServer - 3
	const rounds = 4
	val := func(w, r, i int) float32 { return float32((i*7+w*3+r)%11 - 5) }
	// early chooses the dense pushes of at least threshold values.
	early := func(h *transport.Header, nvals int) bool {
		return h.Type == transport.TypeData && h.Cmd == proto.DataRange &&
			h.Flags&(transport.FlagRequest|transport.FlagPush) == transport.FlagRequest|transport.FlagPush &&
			nvals >= threshold
	}
	for _, delivery := range []struct {
		name  string
		early func(h *transport.Header, nvals int) bool
	}{{"whole", nil}, {"early", early}} {
		for _, ck := range []clock.Config{{Mode: clock.Async}, {Mode: clock.Bounded, Tau: 1}, clock.DefaultConfig()} {
			t.Run(fmt.Sprint(delivery.name, "/", ck.Mode), func(t *testing.T) {
				cfg := DefaultConfig()
				cfg.Machines, cfg.Servers, cfg.Workers = 0, 2, 2
				cfg.Network = node.TCP{Tune: func(c *tcp.Config) { c.Early = delivery.early }}
				cfg.NumKeys, cfg.Clock = numKeys, ck
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
}
