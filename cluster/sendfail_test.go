package cluster

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"colo/ps/clock"
	"colo/ps/proto"
	"colo/ps/worker"
	"colo/transport"
)

// wait returns f's error, failing the test if f is not done within d of
// fake time: a regression hangs no longer than that.
func wait(t *testing.T, f *worker.Future, d time.Duration) error {
	t.Helper()
	select {
	case <-f.Done():
		return f.Err()
	case <-time.After(d):
		t.Fatalf("call not done after %v", d)
		return nil
	}
}

// TestSlowLinkOnFakeTime pushes 4 MB between machines whose interfaces
// carry 10 Mbit/s, a push of 3.2 s with a timeout of 1 s: a send that
// makes progress is not a failure, so the push completes, the heartbeats
// go on, and the values pulled back are the ones pushed.
func TestSlowLinkOnFakeTime(t *testing.T) {
	const (
		n    = 1 << 20 // floats per server: 4 MB
		rate = 1.25e6  // bytes/s
	)
	for _, model := range []clock.Config{{Mode: clock.BSP}, {Mode: clock.Async}} {
		t.Run(model.Mode.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cfg := DefaultConfig()
				cfg.Clock = model
				cfg.NumKeys = 2 * n
				cfg.LinkBandwidth = rate
				cfg.Heartbeat, cfg.Timeout = 100*time.Millisecond, time.Second
				c, err := Start(context.Background(), cfg)
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				vals := make([]float32, 2*n)
				for i := range vals {
					vals[i] = float32(i % 1000)
				}
				start := time.Now()
				// Worker 1's push is empty: it ends the round under BSP.
				f1 := c.Worker(1).PushRange(0, nil)
				if err := wait(t, c.Worker(0).PushRange(0, vals), time.Minute); err != nil {
					t.Fatal(err)
				}
				took := time.Since(start)
				if want := time.Duration(4 * n / rate * float64(time.Second)); took < want {
					t.Fatalf("push of 4 MB at %v B/s in %v, below %v", rate, took, want)
				}
				if err := wait(t, f1, time.Minute); err != nil {
					t.Fatal(err)
				}
				got := make([]float32, 2*n)
				if err := wait(t, c.Worker(1).PullRange(0, 2*n, got), time.Minute); err != nil {
					t.Fatal(err)
				}
				for i := range got {
					if got[i] != vals[i] {
						t.Fatalf("key %d: %v, want %v", i, got[i], vals[i])
					}
				}
				t.Logf("4 MB push in %v of fake time, timeout %v", took, cfg.Timeout)
				if err := c.Run(context.Background(), func(context.Context, *worker.Worker) error { return nil }); err != nil {
					t.Fatalf("job after the pushes: %v", err)
				}
			})
		})
	}
}

// TestSendFailsOnFakeTime checks that a data message that cannot be
// delivered fails the call waiting for it with an error naming the peer,
// never hangs it: a server closed while a push to it is on the wire, a
// push over the frame limit (the server is alive and never hears of it)
// and a pull whose answer is over the frame limit.
func TestSendFailsOnFakeTime(t *testing.T) {
	const (
		n    = 1 << 19 // floats per server: 2 MB
		rate = 1e6     // bytes/s
	)
	start := func(t *testing.T, machines int, maxFrame int) (*Cluster, Config) {
		cfg := DefaultConfig()
		cfg.Machines = machines
		if machines == 0 {
			cfg.Servers, cfg.Workers = 2, 1
		}
		cfg.Clock = clock.Config{Mode: clock.Async}
		cfg.NumKeys = 2 * n
		cfg.LinkBandwidth = rate
		cfg.Mem.Frame.MaxFrame = maxFrame
		cfg.Heartbeat, cfg.Timeout = 100*time.Millisecond, time.Second
		c, err := Start(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		return c, cfg
	}
	// namesServer1 checks that err is a *proto.NodeError naming server 1,
	// or one naming another node whose cause does.
	namesServer1 := func(t *testing.T, what string, err error) {
		t.Helper()
		var ne *proto.NodeError
		if !errors.As(err, &ne) || !strings.Contains(err.Error(), "server 1") {
			t.Fatalf("%s: %v, want an error naming server 1", what, err)
		}
	}

	t.Run("closed mid-push", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			c, cfg := start(t, 0, 0)
			defer c.Close()
			f := c.Worker(0).PushRange(n, make([]float32, n)) // 2 s on the wire
			time.Sleep(cfg.Timeout / 2)
			closed := time.Now()
			c.ServerNode(1).Close()
			err := wait(t, f, time.Minute)
			if took := time.Since(closed); took > cfg.Timeout {
				t.Fatalf("push failed %v after the close, timeout %v", took, cfg.Timeout)
			}
			namesServer1(t, "push", err)
			namesServer1(t, "job", c.Scheduler().Wait())
		})
	})

	for _, machines := range []int{0, 2} {
		name := "separate"
		if machines > 0 {
			name = "machines"
		}
		t.Run("push over the frame limit, "+name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c, cfg := start(t, machines, 1<<20)
				defer c.Close()
				// Half of it, to server 0, fits; the other half does not.
				sent := time.Now()
				err := wait(t, c.Worker(0).PushRange(3*n/4, make([]float32, n)), time.Minute)
				namesServer1(t, "push", err)
				if !errors.Is(err, transport.ErrFrameTooLarge) {
					t.Fatalf("push: %v, want ErrFrameTooLarge", err)
				}
				// The job ends everywhere, within the timeout.
				select {
				case <-c.Scheduler().Done():
				case <-time.After(cfg.Timeout + 2*cfg.Heartbeat):
					t.Fatalf("job still running %v after the failed push", time.Since(sent))
				}
				namesServer1(t, "job", c.Scheduler().Wait())
				for _, nd := range c.Nodes() {
					namesServer1(t, "node", nd.Wait())
				}
			})
		})
	}

	t.Run("answer over the frame limit", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			c, _ := start(t, 2, 1<<20)
			defer c.Close()
			err := wait(t, c.Worker(0).PullRange(n, 2*n, make([]float32, n)), time.Minute)
			namesServer1(t, "pull", err)
			if !strings.Contains(err.Error(), "frame too large") {
				t.Fatalf("pull: %v", err)
			}
			// Only that pull failed: the job goes on.
			if err := wait(t, c.Worker(0).PullRange(n, n+1000, make([]float32, 1000)), time.Minute); err != nil {
				t.Fatal(err)
			}
			if err := c.Run(context.Background(), func(context.Context, *worker.Worker) error { return nil }); err != nil {
				t.Fatalf("job after the failed pull: %v", err)
			}
		})
	})
}
