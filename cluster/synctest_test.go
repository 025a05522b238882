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
	"colo/transport/mem"
)

// startFake starts, in a synctest bubble, an asynchronous cluster of two
// servers and a worker with heartbeats every 100 ms and a timeout of a
// second, and has the worker push to keys 1 and key.
func startFake(t *testing.T, key uint64) (*Cluster, Config) {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Machines, cfg.Servers, cfg.Workers = 0, 2, 1
	cfg.Clock = clock.Config{Mode: clock.Async}
	cfg.Heartbeat, cfg.Timeout = 100*time.Millisecond, time.Second
	c, err := Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Worker(0).Push([]uint64{1, key}, []float32{1, 2}).Wait(); err != nil {
		c.Close()
		t.Fatal(err)
	}
	return c, cfg
}

// TestSilentFailureOnFakeTime runs a whole in-memory cluster on the fake
// clock of a synctest bubble: a server cut off the network without
// closing anything is declared dead by the heartbeats after exactly the
// timeout (to the tick), and the job ends with an error naming it, with no
// sleeping in real time.
func TestSilentFailureOnFakeTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, cfg := startFake(t, 1<<62)
		defer c.Close()
		srv, _ := c.ServerNode(1).IDs()
		cut := time.Now()
		for _, id := range []transport.NodeID{proto.SchedulerID, proto.ServerID(0), proto.WorkerID(0)} {
			c.Network().Cut(srv, id)
		}
		err := c.Scheduler().Wait()
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

// TestSchedulerSilenceOnFakeTime cuts only the link from the scheduler to
// a server on the fake clock of a synctest bubble: the server hears no
// heartbeat and ends after the timeout, naming the scheduler, while the
// scheduler still hears it. A node that ended stops its heartbeats, so the
// scheduler declares it dead one timeout later and the job ends for
// everyone, naming it: a worker's pull from the server that ended fails
// instead of waiting for ever.
func TestSchedulerSilenceOnFakeTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, cfg := startFake(t, 1<<63)
		defer c.Close()
		srv, _ := c.ServerNode(1).IDs()
		if err := c.Network().SetLink(proto.SchedulerID, srv, mem.Link{Cut: true}); err != nil {
			t.Fatal(err)
		}
		cut := time.Now()
		<-c.ServerNode(1).Done()
		if err := c.ServerNode(1).Wait(); err == nil || !strings.Contains(err.Error(), "scheduler") {
			t.Fatalf("server 1's node ended with %v, want the scheduler's silence", err)
		}
		t.Logf("server 1's node ended %v after the cut", time.Since(cut))
		pull := c.Worker(0).Pull([]uint64{1 << 63}, make([]float32, 1))
		select {
		case <-c.Scheduler().Done():
		case <-time.After(10 * cfg.Timeout):
			t.Fatalf("the scheduler still runs %v after the cut, with server 1's node ended", time.Since(cut))
		}
		if err := c.Scheduler().Wait(); err == nil || !strings.Contains(err.Error(), "server 1") {
			t.Fatalf("job ended with %v, want server 1 named", err)
		}
		if took := time.Since(cut); took > 2*cfg.Timeout+2*cfg.Heartbeat {
			t.Fatalf("job ended %v after the cut, timeout %v", took, cfg.Timeout)
		}
		if err := pull.Wait(); err == nil || !strings.Contains(err.Error(), "server 1") {
			t.Fatalf("pull from server 1: %v, want its failure", err)
		}
		t.Logf("job ended %v after the cut: %v", time.Since(cut), c.Scheduler().Wait())
	})
}
