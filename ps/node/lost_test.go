package node

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"colo/ps/proto"
	"colo/ps/sched"
	"colo/transport"
	"colo/transport/mem"
)

// errBroken is the failure of a send on a broken link (startBroken).
var errBroken = errors.New("link broken")

// TestLostReplyOnFakeTime: a server alone cannot send its answer to a
// worker that is alive and heard by the scheduler. The server ends with
// an error naming the worker and falls silent, so the scheduler aborts
// the job within the timeout and the worker's call fails naming the
// server: nobody waits for the lost answer.
func TestLostReplyOnFakeTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sc, s, nodes := startBroken(t, nil)
		if t.Failed() {
			return
		}
		f := nodes[1].Worker().Pull([]uint64{1}, make([]float32, 1))
		sent := time.Now()
		select {
		case <-f.Done():
		case <-time.After(time.Minute):
			t.Fatal("pull not done after a minute")
		}
		if took := time.Since(sent); took > sc.Timeout+2*sc.Heartbeat {
			t.Fatalf("pull failed after %v, timeout %v", took, sc.Timeout)
		}
		var ne *proto.NodeError
		if err := f.Err(); !errors.As(err, &ne) || ne.ID != proto.ServerID(0) {
			t.Fatalf("pull: %v, want an error naming server 0", err)
		}
		if err := nodes[0].Wait(); !errors.Is(err, errBroken) || !strings.Contains(err.Error(), "worker 0") {
			t.Fatalf("server: %v, want an error naming worker 0", err)
		}
		if err := s.Wait(); err == nil || !strings.Contains(err.Error(), "server 0") {
			t.Fatalf("scheduler: %v", err)
		}
	})
}

// TestPeerClosedAwaitsAbort: a server's answer fails because the worker
// closed its link, yet the worker still reaches the scheduler. The
// server does not leave at once, which could have the scheduler blame it
// for the worker's death; it keeps its heartbeats and waits for the
// scheduler's abort, and only after the timeout, none having come, ends
// with an error naming the worker.
func TestPeerClosedAwaitsAbort(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sc, s, nodes := startBroken(t, transport.ErrPeerClosed)
		if t.Failed() {
			return
		}
		f := nodes[1].Worker().Pull([]uint64{1}, make([]float32, 1))
		sent := time.Now()
		time.Sleep(sc.Timeout - sc.Heartbeat)
		synctest.Wait()
		select {
		case <-nodes[0].Done():
			t.Fatalf("server left within %v of the closed link, before the timeout %v: %v", time.Since(sent), sc.Timeout, nodes[0].Wait())
		case <-f.Done():
			t.Fatalf("pull failed before the timeout: %v", f.Err())
		default:
		}
		err := nodes[0].Wait()
		if took := time.Since(sent); took < sc.Timeout || took > sc.Timeout+sc.Heartbeat {
			t.Fatalf("server left %v after the closed link, want the timeout %v", took, sc.Timeout)
		}
		if !errors.Is(err, transport.ErrPeerClosed) || !strings.Contains(err.Error(), "worker 0") {
			t.Fatalf("server: %v, want an error naming worker 0", err)
		}
		// Then it is silent: the scheduler declares it dead and the
		// worker's call fails naming it.
		<-f.Done()
		var ne *proto.NodeError
		if err := f.Err(); !errors.As(err, &ne) || ne.ID != proto.ServerID(0) {
			t.Fatalf("pull: %v, want an error naming server 0", err)
		}
		if took := time.Since(sent); took > 2*sc.Timeout+2*sc.Heartbeat {
			t.Fatalf("pull failed after %v, timeout %v", took, sc.Timeout)
		}
		if err := s.Wait(); err == nil || !strings.Contains(err.Error(), "server 0") {
			t.Fatalf("scheduler: %v", err)
		}
	})
}

// startBroken starts, on fake time, a scheduler, a server whose data
// messages to worker 0 fail with sendErr (errBroken when nil) and
// worker 0; the nodes are closed with the test.
func startBroken(t *testing.T, sendErr error) (sched.Config, *sched.Scheduler, []*Node) {
	net, _ := mem.New(mem.DefaultConfig())
	t.Cleanup(func() { net.Close() })
	sep, _ := net.Attach(proto.SchedulerID)
	sc := sched.DefaultConfig()
	sc.NumServers, sc.NumWorkers, sc.Token, sc.NumKeys = 1, 1, "t", 10
	sc.Heartbeat, sc.Timeout = 100*time.Millisecond, time.Second
	s, err := sched.Start(sc, sep, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	nodes := make([]*Node, 2)
	var wg sync.WaitGroup
	for i, role := range []proto.Role{proto.RoleServer, proto.RoleWorker} {
		wg.Go(func() {
			cfg := DefaultConfig()
			cfg.Role, cfg.Token = role, "t"
			cfg.Network = Mem{Net: net}
			if role == proto.RoleServer {
				// Every data message to the worker fails: a link broken
				// one way while both nodes still reach the scheduler.
				cfg.Network = wrapNet{Network: Mem{Net: net}, wrap: func(_ transport.NodeID, ep Endpoint) Endpoint {
					return sendEndpoint{ep, func(_ context.Context, to transport.NodeID, m *transport.Message) (bool, error) {
						if m.Type != transport.TypeData || to != proto.WorkerID(0) {
							return false, nil
						}
						err := sendErr
						if err == nil {
							err = errBroken
						}
						return true, &transport.PeerError{Peer: to, Op: "send", Err: err}
					}}
				}}
			}
			var err error
			if nodes[i], err = Start(context.Background(), cfg); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	for _, n := range nodes {
		if n != nil {
			t.Cleanup(func() { n.Close() })
		}
	}
	return sc, s, nodes
}
