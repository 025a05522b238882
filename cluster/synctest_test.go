package cluster

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"colo/ps/clock"
	"colo/ps/proto"
	"colo/transport"
)

// TestSilentFailureOnFakeTime runs a whole in-memory cluster on the fake
// clock of a synctest bubble: a server cut off the network without
// closing anything is declared dead by the heartbeats after exactly the
// timeout (to the tick), and the job ends with an error naming it, with no
// sleeping in real time.
func TestSilentFailureOnFakeTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := DefaultConfig()
		cfg.Machines, cfg.Servers, cfg.Workers = 0, 2, 1
		cfg.Clock = clock.Config{Mode: clock.Async}
		cfg.Heartbeat, cfg.Timeout = 100*time.Millisecond, time.Second
		c, err := Start(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if err := c.Worker(0).Push([]uint64{1, 1 << 62}, []float32{1, 2}).Wait(); err != nil {
			t.Fatal(err)
		}
		srv, _ := c.ServerNode(1).IDs()
		cut := time.Now()
		for _, id := range []transport.NodeID{proto.SchedulerID, proto.ServerID(0), proto.WorkerID(0)} {
			c.Network().Cut(srv, id)
		}
		err = c.Scheduler().Wait()
		took := time.Since(cut)
		if err == nil || !strings.Contains(err.Error(), "server 1") {
			t.Fatalf("job ended with %v", err)
		}
		if took <= cfg.Timeout || took > cfg.Timeout+2*cfg.Heartbeat {
			t.Fatalf("declared dead after %v, timeout %v, heartbeat %v", took, cfg.Timeout, cfg.Heartbeat)
		}
		// The worker learns of the end from the scheduler's abort, a
		// message that can still be on its way when the scheduler's Wait
		// returns (a pull of server 0's key then succeeds, as it should).
		// Once the worker's node has ended, its next call fails naming
		// the server.
		if err := c.WorkerNode(0).Wait(); err == nil || !strings.Contains(err.Error(), "server 1") {
			t.Fatalf("the worker's node ended with %v", err)
		}
		if err := c.Worker(0).Pull([]uint64{1}, make([]float32, 1)).Wait(); err == nil || !strings.Contains(err.Error(), "server 1") {
			t.Fatalf("call after the failure: %v", err)
		}
		t.Logf("declared dead %v after the cut", took)
	})
}
