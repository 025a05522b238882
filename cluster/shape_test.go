package cluster

import (
	"colo/ps/node"
	"context"
	"math"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"colo/ps/clock"
	"colo/ps/proto"
	"colo/ps/worker"
	"colo/transport"
)

// TestLinkBandwidthOnFakeTime pushes n dense floats from workers to the
// server of another machine through machine interfaces of rate bytes/s
// on the fake clock: a push and its acknowledgement take their frame
// bytes divided by the rate, to the nanosecond; the interfaces are full
// duplex, shared by a machine's endpoints, and a bandwidth matrix slows
// one path. The scheduler's traffic is not shaped: heartbeats go on
// during the pushes.
func TestLinkBandwidthOnFakeTime(t *testing.T) {
	const (
		n    = 250_000 // floats per push: 1 MB
		rate = 1e6     // bytes/s: a push takes about 1 s
	)
	type push struct{ worker, server int }
	for _, tc := range []struct {
		name     string
		machines int     // 0: 2 servers and 2 workers
		matrix   float64 // rate from host 0 to host 1, 0 for none
		pushes   []push
		factor   float64 // time of the last push in units of (push bytes)/rate
	}{
		{"one push", 2, 0, []push{{0, 1}}, 1},
		{"full duplex", 2, 0, []push{{0, 1}, {1, 0}}, 1},
		{"matrix", 2, rate / 4, []push{{0, 1}, {1, 0}}, 4},
		// Workers 0 and 1 are hosts 2 and 3, both sending into host 1.
		{"separate, shared ingress", 0, 0, []push{{0, 1}, {1, 1}}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cfg := DefaultConfig()
				cfg.Machines = tc.machines
				if tc.machines == 0 {
					cfg.Servers, cfg.Workers = 2, 2
				}
				cfg.Clock = clock.Config{Mode: clock.Async}
				cfg.NumKeys = 2 * n
				cfg.LinkBandwidth = rate
				cfg.Heartbeat, cfg.Timeout = 100*time.Millisecond, time.Second
				if tc.matrix > 0 {
					k := cfg.hosts()
					cfg.Bandwidth = &transport.Bandwidth{K: k, Rates: make([]float64, k*k)}
					cfg.Bandwidth.Rates[0*k+1] = tc.matrix
				}
				c, err := Start(context.Background(), cfg)
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				start := time.Now()
				var wg sync.WaitGroup
				took := make([]time.Duration, len(tc.pushes))
				for i, p := range tc.pushes {
					wg.Go(func() {
						// Server s owns keys [s·n, (s+1)·n).
						if err := c.Worker(p.worker).PushRange(uint64(p.server)*n, make([]float32, n)).Wait(); err != nil {
							t.Error(err)
						}
						took[i] = time.Since(start)
					})
				}
				wg.Wait()
				// The bytes of each push and of its acknowledgement.
				var last time.Duration
				var pushBytes uint64
				for i, p := range tc.pushes {
					var sent, recv uint64
					for _, l := range c.WorkerNode(p.worker).Stats().Links {
						if l.From == proto.WorkerID(p.worker) && l.To == proto.ServerID(p.server) {
							sent, recv = l.BytesSent, l.BytesRecv
						}
					}
					t.Logf("worker %d → server %d: %d bytes (ack %d) in %v", p.worker, p.server, sent, recv, took[i])
					if sent < 4*n {
						t.Fatalf("push of %d bytes", sent)
					}
					last, pushBytes = max(last, took[i]), max(pushBytes, sent)
					if len(tc.pushes) == 1 {
						// Alone, to the nanosecond: push and ack.
						if want := time.Duration(float64(sent+recv) / rate * float64(time.Second)); took[i] < want-2 || took[i] > want+2 {
							t.Errorf("took %v, want %v", took[i], want)
						}
					}
				}
				// The last push ends after factor × its bytes / rate, plus
				// acknowledgements queued behind pushes (under 0.1 %).
				want := time.Duration(tc.factor * float64(pushBytes) / rate * float64(time.Second))
				if last < want || last > want+want/1000 {
					t.Errorf("last push done after %v, want %v", last, want)
				}
				if err := c.Run(context.Background(), func(context.Context, *worker.Worker) error { return nil }); err != nil {
					t.Fatalf("job after the pushes: %v", err)
				}
			})
		})
	}
}

func TestShapeValidate(t *testing.T) {
	for want, f := range map[string]func(*Config){
		"LinkBandwidth -1 out of range [0, 1e+18]": func(c *Config) { c.LinkBandwidth = -1 },
		"Bandwidth is 3×3, want K = 2":             func(c *Config) { c.Bandwidth = &transport.Bandwidth{K: 3, Rates: make([]float64, 9)} },
		"Bandwidth is 2×2, want K = 5": func(c *Config) {
			c.Machines, c.Servers, c.Workers = 0, 2, 3
			c.Bandwidth = &transport.Bandwidth{K: 2, Rates: make([]float64, 4)}
		},
		"Bandwidth rate 1→0 = NaN": func(c *Config) {
			c.Bandwidth = &transport.Bandwidth{K: 2, Rates: []float64{0, 1, math.NaN(), 0}}
		},
	} {
		cfg := DefaultConfig()
		f(&cfg)
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v", want, err)
		}
	}
	// The rates of TCP links: between machines, never the scheduler's.
	cfg := DefaultConfig()
	cfg.Machines, cfg.Servers, cfg.Workers = 0, 1, 2
	cfg.LinkBandwidth = 100
	cfg.Bandwidth = &transport.Bandwidth{K: 3, Rates: []float64{0, 50, 0, 0, 0, 0, 0, 200, 0}}
	for _, c := range []struct {
		from, to transport.NodeID
		want     float64
	}{
		{proto.ServerID(0), proto.WorkerID(0), 50},   // host 0 → 1
		{proto.WorkerID(0), proto.ServerID(0), 100},  // host 1 → 0
		{proto.WorkerID(1), proto.WorkerID(0), 100},  // host 2 → 1: 200 above the NIC
		{proto.WorkerID(0), proto.SchedulerID, 0},    // control traffic
		{proto.Provisional(9), proto.SchedulerID, 0}, // registration
	} {
		if got := cfg.rates().Rate(c.from, c.to); got != c.want {
			t.Errorf("%s → %s: %v, want %v", proto.Name(c.from), proto.Name(c.to), got, c.want)
		}
	}
}

// TestLinkBandwidthTCP limits the TCP links between machines: a 1 MB push
// from worker 0 to server 1 at 10 MB/s takes about 0.1 s (the first
// Burst bytes are free), and the scheduler's links are not limited.
func TestLinkBandwidthTCP(t *testing.T) {
	const (
		n    = 250_000
		rate = 10e6
	)
	cfg := DefaultConfig()
	cfg.Network = node.TCP{}
	cfg.Clock = clock.Config{Mode: clock.Async}
	cfg.NumKeys = 2 * n
	cfg.LinkBandwidth = rate
	c, _ := startTest(t, cfg, 30*time.Second)
	start := time.Now()
	if err := c.Worker(0).PushRange(n, make([]float32, n)).Wait(); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	floor := time.Duration(float64(4*n-(64<<10)) / rate * float64(time.Second))
	t.Logf("1 MB at %v B/s in %v", rate, took)
	if took < floor {
		t.Fatalf("1 MB at %v B/s in %v, below %v", rate, took, floor)
	}
}

// TestInterfaceTCP checks that over TCP a machine's links share its
// network interface, as on the in-memory network: worker 0 of 4 machines
// pushes 1 MB to each of the 3 other machines' servers at once through
// an interface of 10 MB/s, which takes at least 0.3 s (the first Burst
// bytes free); links limited separately would take 0.1 s. A loaded
// machine only takes longer.
func TestInterfaceTCP(t *testing.T) {
	const (
		n    = 250_000 // keys per server
		rate = 10e6
	)
	cfg := DefaultConfig()
	cfg.Machines = 4
	cfg.Network = node.TCP{}
	cfg.Clock = clock.Config{Mode: clock.Async}
	cfg.NumKeys = 4 * n
	cfg.LinkBandwidth = rate
	cfg.Timeout = loadedTimeout
	c, _ := startTest(t, cfg, 30*time.Second)
	start := time.Now()
	if err := c.Worker(0).PushRange(0, make([]float32, 4*n)).Wait(); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	floor := time.Duration(float64(3*4*n-(64<<10)) / rate * float64(time.Second))
	t.Logf("3 × 1 MB through a %v B/s interface in %v", rate, took)
	if took < floor {
		t.Fatalf("3 × 1 MB through a %v B/s interface in %v, below %v", rate, took, floor)
	}
}
