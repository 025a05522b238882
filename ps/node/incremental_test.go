package node

import (
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"colo/checkpoint"
	"colo/internal/colotest"
	"colo/kv"
	"colo/ps/clock"
	"colo/ps/proto"
	"colo/ps/update"
	"colo/ps/worker"
	"colo/transport"
)

// TestFailoverIncrementalCapture kills server 1 in the middle of an
// incremental checkpoint's capture of it (worker.Worker.SaveSince), once
// it answered part of the capture: its backup, server 2, takes its
// ranges over and gets the rest of the capture's requests, sent again,
// without the capture's begin, which server 1 alone saw. Worker 1 (the
// worker a checkpoint has capture server 1: rank 1 mod 2 workers)
// captures server 1 after rounds 1 (whole), 2 and 3; the failure is at
// round 2:
//   - begin: a delta's begin answered, the changed slots asked for are
//     left to the backup;
//   - changed: a delta's begin and changed slots answered, the end is
//     left to the backup;
//   - whole: a whole capture's begin answered (no base), its slots and
//     end are left to the backup.
//
// The capture of round 2 then restores to the snapshot of round 2 of the
// run without failure, bit for bit (it is the whole store: the backup
// kept no marks), the capture of round 3 is a delta on it (the backup's
// marks count from the capture's end), and the job goes on as that run.
// Before the worker took such a capture again, the backup's refusal of
// the changed slots or of the end failed it in all three cases.
func TestFailoverIncrementalCapture(t *testing.T) {
	const rounds, victim, capturer, at = 5, 1, 1, int64(2)
	rule := update.AdaGrad{LR: 0.1, Eps: 1e-6}
	for _, tc := range []struct {
		name  string
		cut   uint64 // the last request server 1 answers: SaveBegin or SaveChanged
		delta bool   // the capture of round at is a delta in the run without failure
	}{
		{"begin", proto.SaveBegin, true},
		{"changed", proto.SaveChanged, true},
		{"whole", proto.SaveBegin, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := startReplicated(t, clock.BSP, 1, rule)
			wantSnap := map[int64]kv.Batch{}
			want := bspRunAt(t, base, rounds, func(r int64, stage string) {
				if r < 1 || r > at+1 || stage != "acked" {
					return
				}
				got, err := base.workers[capturer].Worker().SaveSince(victim, int(r), captureBase(r, at, tc.delta), 1<<20)
				if err != nil {
					t.Fatalf("the run without failure: capture of round %d: %v", r, err)
				}
				if d := r > 1 && (r != at || tc.delta); got.Changed != d {
					t.Fatalf("the run without failure: capture of round %d is a delta: %v, want %v", r, got.Changed, d)
				}
				if wantSnap[r], err = base.workers[capturer].Worker().Save(victim); err != nil {
					t.Fatalf("the run without failure: snapshot of round %d: %v", r, err)
				}
			})

			hang := colotest.HangTimeout(t)
			var (
				kinds    sync.Map    // request ID → the kind of worker 1's DataSave to server 1
				dropping atomic.Bool // server 1 drops its answers to worker 1's DataSave
				armed    atomic.Bool // at round at, from the capture's start
				cut      = make(chan struct{})
				once     sync.Once
			)
			c := startReplicated(t, clock.BSP, 1, rule, func(role proto.Role, rank int, nw Network) Network {
				if role != proto.RoleServer || rank != victim {
					return nw
				}
				see := seeNet(nw, proto.ServerID(victim), func(m *transport.Message) {
					if m.Sender == proto.WorkerID(capturer) && m.Type == transport.TypeData && m.Cmd == proto.DataSave {
						kind := uint64(0) // a chunk of the whole store
						if len(m.KV.Keys) == 4 {
							kind = m.KV.Keys[0]
						}
						kinds.Store(m.ID, kind)
					}
				})
				return tapNet(see, proto.ServerID(victim), func(to transport.NodeID, m *transport.Message) bool {
					if to != proto.WorkerID(capturer) || m.Type != transport.TypeData || m.Flags&transport.FlagPull == 0 || !armed.Load() {
						return false
					}
					kind, ok := kinds.Load(m.ID)
					if !ok {
						return false // a pull's answer
					}
					if dropping.Load() {
						return true
					}
					if kind == tc.cut {
						dropping.Store(true)
						once.Do(func() { close(cut) })
					}
					return false
				})
			})
			var restored checkpoint.Snapshot
			got := bspRunAt(t, c, rounds, func(r int64, stage string) {
				if r < 1 || r > at+1 || stage != "acked" {
					return
				}
				armed.Store(r == at)
				var stop <-chan struct{}
				if r == at {
					stop = cut
				}
				got := captureCut(t, c, capturer, victim, r, captureBase(r, at, tc.delta), stop, fmt.Sprintf("did not answer the capture's %d", tc.cut), hang)
				snap := checkpoint.Snapshot{Server: victim, Width: 2, Batch: got.Batch, Delta: got.Changed, Base: int(r - 1)}
				switch {
				case r == at+1 && !snap.Delta:
					t.Errorf("capture of round %d after the failover is whole, want a delta on the capture of round %d", r, at)
				case r == 1 && snap.Delta:
					t.Fatalf("first capture is a delta")
				}
				if snap.Delta {
					var err error
					if snap, err = checkpoint.ApplyDelta(restored, snap); err != nil {
						t.Fatalf("capture of round %d: %v", r, err)
					}
				}
				restored = snap
				same := func(a, b float32) bool { return math.Float32bits(a) == math.Float32bits(b) }
				if w := wantSnap[r]; !slices.Equal(restored.Batch.Keys, w.Keys) || !slices.EqualFunc(restored.Batch.Vals, w.Vals, same) {
					t.Errorf("server 1 restored from the captures of rounds 1 to %d\n%v %v\nwant the snapshot of the run without failure\n%v %v", r, restored.Batch.Keys, restored.Batch.Vals, w.Keys, w.Vals)
				}
			})
			checkFailover(t, c, got, want, rounds, victim)
		})
	}
}

// captureBase is the base of round r's capture of a server in a
// checkpoint's sequence of captures (train.Checkpointer.capture): the
// capture of round r−1 when there is one and round r is not at with a
// whole capture (delta false), none (−1) otherwise.
func captureBase(r, at int64, delta bool) int {
	if r == 1 || r == at && !delta {
		return -1
	}
	return int(r - 1)
}

// captureCut takes round r's capture of server victim on c's worker
// capturer on base (worker.Worker.SaveSince), as a checkpoint does, and
// returns it. With cut not nil, server victim fails during the capture:
// captureCut waits for cut, closed when the server's answers are cut off
// (cutWhat says how far it answered, for the message if it never is),
// then closes server victim, and waits for the capture, which its
// backup completes. A wait longer than hang, or an error of the capture,
// fails t.
func captureCut(t *testing.T, c *replCluster, capturer, victim int, r int64, base int, cut <-chan struct{}, cutWhat string, hang time.Duration) worker.Capture {
	t.Helper()
	type result struct {
		c   worker.Capture
		err error
	}
	done := make(chan result, 1)
	go func() {
		got, err := c.workers[capturer].Worker().SaveSince(victim, int(r), base, 1<<20)
		done <- result{got, err}
	}()
	if cut != nil {
		select {
		case <-cut:
		case <-time.After(hang):
			t.Fatalf("server %d %s within %v", victim, cutWhat, hang)
		}
		c.servers[victim].Close()
	}
	var res result
	select {
	case res = <-done:
	case <-time.After(hang):
		t.Fatalf("no capture of server %d of round %d within %v", victim, r, hang)
	}
	if res.err != nil {
		t.Fatalf("capture of server %d of round %d: %v", victim, r, res.err)
	}
	return res.c
}
