package node

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"colo/ps/proto"
	"colo/ps/sched"
	"colo/transport"
	"colo/transport/mem"
)

// heldEndpoint is the scheduler's endpoint whose sends to one peer wait
// until release is closed: the link to that member is slow to come up
// (a handshake that takes longer than the whole job).
type heldEndpoint struct {
	transport.Endpoint
	peer    transport.NodeID
	release chan struct{}
}

func (e heldEndpoint) Send(ctx context.Context, to transport.NodeID, m *transport.Message) error {
	if to == e.peer {
		select {
		case <-e.release:
		case <-ctx.Done():
			return &transport.PeerError{Peer: to, Op: "send", Err: fmt.Errorf("held: %w", ctx.Err())}
		}
	}
	return e.Endpoint.Send(ctx, to, m)
}

// TestMachineWaitsForEveryShutdown: a machine starts on the first Start
// of its two members and the job can end before the scheduler's
// messages to the other member arrive. The machine does not end on the
// worker's Shutdown while the server's Start and Shutdown are on their
// way; once they arrive it ends cleanly, and the scheduler has sent
// both to the server (its counters show them).
func TestMachineWaitsForEveryShutdown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sep, held, _, s, n := startHeldMachine(t)
		if t.Failed() {
			return
		}
		n.Finish(nil)
		synctest.Wait()
		select {
		case <-n.Done():
			t.Fatalf("the machine ended (%v) on the worker's Shutdown, before the server's Start and Shutdown arrived", n.Wait())
		default:
		}
		close(held.release)
		if err := n.Wait(); err != nil {
			t.Fatalf("node: %v", err)
		}
		if err := s.Wait(); err != nil {
			t.Fatalf("scheduler: %v", err)
		}
		// What the driver does once the node's job ended (launch.RunNode).
		n.Close()
		if got := sep.Stats().Links[proto.ServerID(0)].MsgsSent; got != 2 {
			t.Errorf("scheduler sent %d messages to server 0, want 2 (Start, Shutdown)", got)
		}
		var recv uint64
		for _, l := range n.Stats().Links {
			if l.From == proto.ServerID(0) && l.To == proto.SchedulerID {
				recv = l.MsgsRecv
			}
		}
		if recv < 2 {
			t.Errorf("server 0 received %d messages from the scheduler, want at least Start and Shutdown", recv)
		}
	})
}

// TestMachineShutdownWithoutTheOther: the scheduler's messages to the
// server of a machine never get through. The worker's Shutdown does not
// end the machine at once, but the scheduler's departure does, cleanly:
// the job is over.
func TestMachineShutdownWithoutTheOther(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, _, sc, s, n := startHeldMachine(t)
		if t.Failed() {
			return
		}
		n.Finish(nil)
		if err := s.Wait(); err != nil {
			t.Fatalf("scheduler: %v", err)
		}
		t0 := time.Now()
		s.Close()
		if err := n.Wait(); err != nil {
			t.Fatalf("node: %v, want a clean end", err)
		}
		if took := time.Since(t0); took > (SchedulerGrace+1)*sc.Heartbeat {
			t.Errorf("the machine ended %v after the scheduler left, want at most %d heartbeats of %v", took, SchedulerGrace+1, sc.Heartbeat)
		}
	})
}

// startHeldMachine starts, on fake time, a scheduler whose sends to
// server 0 wait for held.release (see heldEndpoint) and one machine
// (server 0 and worker 0); both are closed with the test. sep is the
// scheduler's endpoint under held.
func startHeldMachine(t *testing.T) (sep *mem.Endpoint, held heldEndpoint, sc sched.Config, s *sched.Scheduler, n *Node) {
	net, _ := mem.New(mem.DefaultConfig())
	t.Cleanup(func() { net.Close() })
	sep, _ = net.Attach(proto.SchedulerID)
	held = heldEndpoint{Endpoint: sep, peer: proto.ServerID(0), release: make(chan struct{})}
	sc = sched.DefaultConfig()
	sc.NumServers, sc.NumWorkers, sc.Token, sc.NumKeys = 1, 1, "t", 10
	sc.Heartbeat, sc.Timeout = 100*time.Millisecond, time.Second
	s, err := sched.Start(sc, held, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	cfg := DefaultConfig()
	cfg.Role, cfg.Token = proto.RoleMachine, "t"
	cfg.Network = Mem{Net: net}
	if n, err = Start(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	if srv, wrk := n.IDs(); srv != proto.ServerID(0) || wrk != proto.WorkerID(0) {
		t.Errorf("ids %d, %d: want server 0 and worker 0", srv, wrk)
	}
	return sep, held, sc, s, n
}

// endsFirst is the scheduler's endpoint that notes, for each Shutdown it
// sends, whether the scheduler had said the job ended (ended) before.
type endsFirst struct {
	transport.Endpoint
	ended *atomic.Int32
	late  *atomic.Int32 // Shutdowns sent before
	sent  *atomic.Int32
}

func (e endsFirst) Send(ctx context.Context, to transport.NodeID, m *transport.Message) error {
	if m.Type == transport.TypeControl && m.Cmd == proto.CmdShutdown {
		e.sent.Add(1)
		if e.ended.Load() == 0 {
			e.late.Add(1)
		}
	}
	return e.Endpoint.Send(ctx, to, m)
}

// TestOnEndBeforeShutdown: the scheduler's driver says the job ended
// well (Config.OnEnd, once, with nil) before it sends any node its
// Shutdown, so that a launcher reading it knows the job ended before a
// node can end on it (launch prints "job finished" from it).
func TestOnEndBeforeShutdown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		net, _ := mem.New(mem.DefaultConfig())
		defer net.Close()
		sep, _ := net.Attach(proto.SchedulerID)
		var ended, late, sent atomic.Int32
		sc := sched.DefaultConfig()
		sc.NumServers, sc.NumWorkers, sc.Token, sc.NumKeys = 1, 1, "t", 10
		sc.Heartbeat, sc.Timeout = 100*time.Millisecond, time.Second
		var results []error
		sc.OnEnd = func(err error) {
			results = append(results, err)
			ended.Add(1)
		}
		s, err := sched.Start(sc, endsFirst{Endpoint: sep, ended: &ended, late: &late, sent: &sent}, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		cfg := DefaultConfig()
		cfg.Role, cfg.Token = proto.RoleMachine, "t"
		cfg.Network = Mem{Net: net}
		n, err := Start(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer n.Close()
		n.Finish(nil)
		if err := n.Wait(); err != nil {
			t.Fatalf("node: %v", err)
		}
		if err := s.Wait(); err != nil {
			t.Fatalf("scheduler: %v", err)
		}
		if len(results) != 1 || results[0] != nil {
			t.Errorf("OnEnd told %v, want nil once", results)
		}
		if sent.Load() == 0 || late.Load() != 0 {
			t.Errorf("%d of %d Shutdowns sent before OnEnd", late.Load(), sent.Load())
		}
	})
}
