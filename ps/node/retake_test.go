package node

import (
	"sync"
	"sync/atomic"
	"testing"

	"colo/internal/colotest"
	"colo/ps/clock"
	"colo/ps/proto"
	"colo/ps/update"
	"colo/transport"
)

// TestRetakeCounted checks that a capture of an incremental checkpoint
// that the worker takes again, because a takeover of its server fell
// into it (worker.Worker.SaveSince), is counted in the node's Stats
// (Retakes), as its failovers are (its log line shows with -v): worker
// 1 captures server 1 after rounds 1, 2 and 3, and server 1 stops at
// round 2 once it has answered the capture's begin, leaving the rest to
// its backup, which refuses it. Without the failure no capture is taken
// again.
func TestRetakeCounted(t *testing.T) {
	const rounds, victim, capturer, at = 5, 1, 1, int64(2)
	rule := update.AdaGrad{LR: 0.1, Eps: 1e-6}
	for _, tc := range []struct {
		name  string
		fail  bool // server 1 stops during the capture of round at
		delta bool // the capture of round at is a delta: its changed slots are left to the backup, else its whole store's
		want  []Retake
	}{
		{"no failover", false, true, nil},
		{"delta", true, true, []Retake{{Server: victim, Round: int(at)}}},
		{"whole", true, false, []Retake{{Server: victim, Round: int(at)}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var (
				saves    sync.Map    // the IDs of worker 1's DataSave requests to server 1
				armed    atomic.Bool // during the capture of round at
				answered atomic.Bool // server 1 answered its begin: it drops the rest
				cut      = make(chan struct{})
				once     sync.Once
			)
			c := startReplicated(t, clock.BSP, 1, rule, func(role proto.Role, rank int, nw Network) Network {
				switch {
				case role == proto.RoleWorker && rank == capturer:
					return tapNet(nw, proto.WorkerID(capturer), func(to transport.NodeID, m *transport.Message) bool {
						if to == proto.ServerID(victim) && m.Type == transport.TypeData && m.Cmd == proto.DataSave {
							saves.Store(m.ID, true)
						}
						return false
					})
				case role == proto.RoleServer && rank == victim:
					return tapNet(nw, proto.ServerID(victim), func(to transport.NodeID, m *transport.Message) bool {
						if to != proto.WorkerID(capturer) || m.Type != transport.TypeData || m.Flags&transport.FlagPull == 0 || !armed.Load() {
							return false
						}
						if _, ok := saves.Load(m.ID); !ok {
							return false // a pull's answer
						}
						if answered.Swap(true) {
							once.Do(func() { close(cut) })
							return true
						}
						return false // the capture's begin
					})
				}
				return nw
			})
			hang := colotest.HangTimeout(t)
			bspRunAt(t, c, rounds, func(r int64, stage string) {
				if r < 1 || r > at+1 || stage != "acked" {
					return
				}
				armed.Store(tc.fail && r == at)
				var stop <-chan struct{}
				if tc.fail && r == at {
					stop = cut
				}
				captureCut(t, c, capturer, victim, r, captureBase(r, at, tc.delta), stop, "answered no more than the capture's begin", hang)
			})
			got := c.workers[capturer].Stats().Retakes
			for i := range got {
				if got[i].UnixNano <= 0 {
					t.Errorf("retake %d has no time: %+v", i, got[i])
				}
				got[i].UnixNano = 0
			}
			if len(got) != len(tc.want) || len(got) > 0 && got[0] != tc.want[0] {
				t.Errorf("worker 1's node counted the retakes %+v, want %+v", got, tc.want)
			}
			if other := c.workers[0].Stats().Retakes; len(other) != 0 {
				t.Errorf("worker 0, which captured nothing, counted the retakes %+v", other)
			}
		})
	}
}
