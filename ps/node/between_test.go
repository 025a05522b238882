package node

import (
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"colo/internal/colotest"
	"colo/kv"
	"colo/ps/clock"
	"colo/ps/proto"
	"colo/ps/update"
	"colo/transport"
)

// seeNet is nw whose endpoint of node id passes each message it
// receives to see before its node reads it.
func seeNet(nw Network, id transport.NodeID, see func(m *transport.Message)) Network {
	return wrapNet{Network: nw, wrap: func(of transport.NodeID, ep Endpoint) Endpoint {
		if of != id {
			return ep
		}
		e := &seeEndpoint{Endpoint: ep, in: make(chan *transport.Message), done: make(chan struct{})}
		go func() {
			defer close(e.in)
			for m := range ep.Recv() {
				see(m)
				select {
				case e.in <- m:
				case <-e.done:
					return
				}
			}
		}()
		return e
	}}
}

type seeEndpoint struct {
	Endpoint
	in   chan *transport.Message
	done chan struct{}
	once sync.Once
}

func (e *seeEndpoint) Recv() <-chan *transport.Message { return e.in }

func (e *seeEndpoint) Close() error {
	e.once.Do(func() { close(e.done) })
	return e.Endpoint.Close()
}

// TestFailoverSnapshotWaitsForRound kills server 1 between two BSP
// rounds, where a checkpoint is taken: every worker has server 1's
// acknowledgements of round 1, given before its backup, server 2, had
// the round (its sum is dropped on the way), and worker 0 asks server 1
// for its snapshot (server 1's answer dropped too). Worker 0 sends
// server 2, which takes server 1's ranges over, its kept push of round
// 1 and then the snapshot's request; worker 1's kept push of round 1
// comes only once that request is there. The backup answers the
// snapshot once it has summed round 1 from both pushes: bit for bit
// the snapshot of the run without failure, not a refusal because
// worker 0's push of round 1 is held. The job then goes on as that run.
func TestFailoverSnapshotWaitsForRound(t *testing.T) {
	const rounds, at = 4, int64(1)
	rule := update.AdaGrad{LR: 0.1, Eps: 1e-6}
	base := startReplicated(t, clock.BSP, 1, rule)
	var wantSnap kv.Batch
	want := bspRunAt(t, base, rounds, func(r int64, stage string) {
		if r == at && stage == "acked" {
			var err error
			if wantSnap, err = base.workers[0].Worker().Save(1); err != nil {
				t.Fatalf("the run without failure: %v", err)
			}
		}
	})

	hang := colotest.HangTimeout(t)
	var dropVals atomic.Bool     // server 1's answers to pulls and snapshots
	asked := make(chan struct{}) // worker 0's snapshot request reached server 2's takeover
	var once sync.Once
	c := startReplicated(t, clock.BSP, 1, rule, func(role proto.Role, rank int, nw Network) Network {
		switch {
		case role == proto.RoleServer && rank == 1:
			return tapNet(nw, proto.ServerID(1), func(to transport.NodeID, m *transport.Message) bool {
				if m.Type != transport.TypeData {
					return false
				}
				if r, _ := proto.Identify(to); r == proto.RoleWorker {
					return dropVals.Load() && m.Flags&transport.FlagPull != 0
				}
				round, _, _, _, cmd, err := proto.ParseReplica(m)
				return m.Cmd == proto.DataReplicate && err == nil && cmd == proto.DataRound && round >= at
			})
		case role == proto.RoleServer && rank == 2:
			return seeNet(nw, proto.ServerID(1), func(m *transport.Message) {
				if m.Sender == proto.WorkerID(0) && m.Type == transport.TypeData && m.Cmd == proto.DataSave {
					once.Do(func() { close(asked) })
				}
			})
		case role == proto.RoleWorker && rank == 1:
			return tapNet(nw, proto.WorkerID(1), func(to transport.NodeID, m *transport.Message) bool {
				if to == proto.ServerID(1) && m.Type == transport.TypeData && m.Flags&proto.FlagResent != 0 {
					select {
					case <-asked:
					case <-time.After(hang):
						t.Errorf("worker 0's snapshot request did not reach server 1's ranges' new owner within %v", hang)
					}
				}
				return false
			})
		}
		return nw
	})
	got := bspRunAt(t, c, rounds, func(r int64, stage string) {
		if r != at || stage != "acked" {
			return
		}
		dropVals.Store(true)
		type saved struct {
			b   kv.Batch
			err error
		}
		done := make(chan saved, 1)
		go func() {
			b, err := c.workers[0].Worker().Save(1)
			done <- saved{b, err}
		}()
		c.servers[1].Close()
		var s saved
		select {
		case s = <-done:
		case <-time.After(hang):
			t.Fatalf("no snapshot of server 1 within %v", hang)
		}
		if s.err != nil {
			t.Fatalf("snapshot of server 1 after its failure: %v", s.err)
		}
		same := func(a, b float32) bool { return math.Float32bits(a) == math.Float32bits(b) }
		if !slices.Equal(s.b.Keys, wantSnap.Keys) || !slices.EqualFunc(s.b.Vals, wantSnap.Vals, same) {
			t.Errorf("snapshot of server 1 after its failure\n%v %v\nwant the run's without failure\n%v %v", s.b.Keys, s.b.Vals, wantSnap.Keys, wantSnap.Vals)
		}
	})
	checkFailover(t, c, got, want, rounds, 1)
}
