package node

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"colo/ps/clock"
	"colo/ps/proto"
	"colo/ps/sched"
	"colo/ps/server"
	"colo/ps/update"
	"colo/ps/worker"
	"colo/transport"
	"colo/transport/mem"
)

// replCluster is a job of 3 servers and 2 workers, each in a node of its
// own, on an in-memory network, with replicas backups of each server's
// ranges.
type replCluster struct {
	net     *mem.Network
	s       *sched.Scheduler
	servers []*Node
	workers []*Node
	// hold, while set, makes server 2 drop its acknowledgements of
	// server 1's updates (each is counted on held): server 1 applied
	// them and server 2 has them (it acknowledges an update on receipt,
	// before it applies it), but server 1 acknowledges no push of them.
	hold *atomic.Bool
	held chan struct{}
	// backedUp gets the scheduler's new copies in place (proto.Backup).
	backedUp chan proto.Backup
}

const replKeys = 12

// startReplicated starts a replCluster; wrap, when given, wraps the
// network of each node.
func startReplicated(t *testing.T, mode clock.Mode, replicas int, rule update.Rule, wrap ...func(role proto.Role, rank int, nw Network) Network) *replCluster {
	t.Helper()
	net, _ := mem.New(mem.DefaultConfig())
	t.Cleanup(func() { net.Close() })
	sep, _ := net.Attach(proto.SchedulerID)
	sc := sched.DefaultConfig()
	sc.NumServers, sc.NumWorkers, sc.Token, sc.NumKeys, sc.Width = 3, 2, "t", replKeys, 2
	sc.Clock = clock.Config{Mode: mode}
	sc.Heartbeat, sc.Timeout, sc.Replicas = 20*time.Millisecond, 2*time.Second, replicas
	backedUp := make(chan proto.Backup, 16)
	sc.OnBackedUp = func(b proto.Backup) { backedUp <- b }
	s, err := sched.Start(sc, sep, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	// Machine r is server r; the workers are machines 3 and 4.
	for r := range 3 {
		net.SetHost(proto.ServerID(r), r)
	}
	for r := range 2 {
		net.SetHost(proto.WorkerID(r), 3+r)
	}
	c := &replCluster{net: net, s: s, servers: make([]*Node, 3), workers: make([]*Node, 2), hold: new(atomic.Bool), held: make(chan struct{}, 1<<16), backedUp: backedUp}
	c.startNodes(t, func(role proto.Role, rank int) Config {
		cfg := DefaultConfig()
		cfg.Role, cfg.Token, cfg.Rank, cfg.Rule = role, "t", rank, rule
		cfg.Logf = t.Logf
		cfg.Network = Mem{Net: net}
		if role == proto.RoleServer && rank == 2 {
			// The hold (replCluster.hold); the acknowledgements to other
			// primaries pass (server 2 may back up another server's
			// ranges after a failover, whose pushes must still be
			// acknowledged).
			cfg.Network = tapNet(cfg.Network, proto.ServerID(2), func(to transport.NodeID, m *transport.Message) bool {
				if m.Type == transport.TypeData && m.Cmd == proto.DataReplicaAck && to == proto.ServerID(1) && c.hold.Load() {
					c.held <- struct{}{}
					return true
				}
				return false
			})
		}
		for _, w := range wrap {
			cfg.Network = w(role, rank, cfg.Network)
		}
		return cfg
	})
	return c
}

// grad is worker w's gradient of round r, for every key: a function of
// the values it pulled, so that a round computed on other values shows.
func grad(w int, r int64, pulled []float32) []float32 {
	g := make([]float32, len(pulled))
	for i, v := range pulled {
		g[i] = float32(math.Sin(float64(v)+float64(w)*0.37+float64(r)*0.11+float64(i))) * 0.5
	}
	return g
}

// bspRun trains rounds BSP rounds; at round killAt, kill runs with the
// round's stage: "start" before the pulls, "mid" between worker 0's push
// and worker 1's, "end" after both pushes were sent, "acked" once both
// were acknowledged (the next round's pulls sent). It returns the
// model.
func bspRun(t *testing.T, c *replCluster, rounds, killAt int64, kill func(stage string)) []float32 {
	t.Helper()
	return bspRunAt(t, c, rounds, func(r int64, stage string) {
		if r == killAt && kill != nil {
			kill(stage)
		}
	})
}

// bspRunAt is bspRun calling at with every round and stage.
func bspRunAt(t *testing.T, c *replCluster, rounds int64, at func(r int64, stage string)) []float32 {
	t.Helper()
	keys := make([]uint64, replKeys)
	for i := range keys {
		keys[i] = uint64(i)
	}
	pulled := [2][]float32{make([]float32, 2*replKeys), make([]float32, 2*replKeys)}
	// Each round's pulls are sent right after the pushes of the round
	// before, as the training loop does: they wait behind the round gate
	// for each server's acknowledgement.
	var pulls [2]*worker.Future
	for w, n := range c.workers {
		pulls[w] = n.Worker().Pull(keys, pulled[w])
	}
	for r := range rounds {
		at(r, "start")
		for w := range c.workers {
			if err := pulls[w].Wait(); err != nil {
				t.Fatalf("round %d: worker %d's pull: %v", r, w, err)
			}
		}
		f0 := c.workers[0].Worker().Push(keys, grad(0, r, pulled[0]))
		at(r, "mid")
		f1 := c.workers[1].Worker().Push(keys, grad(1, r, pulled[1]))
		at(r, "end")
		for w, n := range c.workers {
			pulls[w] = n.Worker().Pull(keys, pulled[w])
		}
		if err := errors.Join(f0.Wait(), f1.Wait()); err != nil {
			t.Fatalf("round %d: push: %v", r, err)
		}
		at(r, "acked")
	}
	for w := range c.workers {
		if err := pulls[w].Wait(); err != nil {
			t.Fatal(err)
		}
	}
	return pulled[0]
}

// TestReplicatedBackupState checks that each server's backup holds its
// ranges bit for bit, values and AdaGrad states, after BSP rounds, and
// counts what each server sent its backup.
//
// Nothing waits for a backup to have a server's last update: under BSP
// a round's acknowledgements wait only for the backups to have the
// round before, so the job can end, and the backup with it, before the
// last round's sum reached it. The test waits, before it ends the job,
// until each backup acknowledged every update of its primary (a backup
// applies an update right after acknowledging it, on the same
// goroutine, which the node's Close waits for).
func TestReplicatedBackupState(t *testing.T) {
	for _, mode := range []clock.Mode{clock.BSP, clock.Async} {
		t.Run(mode.String(), func(t *testing.T) {
			acked := make(chan [2]uint64, 1<<12)
			c := startReplicated(t, mode, 1, update.AdaGrad{LR: 0.1, Eps: 1e-6}, func(role proto.Role, rank int, nw Network) Network {
				if role != proto.RoleServer {
					return nw
				}
				// Each acknowledgement of replicated updates a server
				// sends is passed on acked: the rank of the primary it
				// goes to and the number of its updates applied in order
				// (the acknowledgement's ID).
				return wrapNet{Network: nw, wrap: func(_ transport.NodeID, ep Endpoint) Endpoint {
					return sendEndpoint{ep, func(_ context.Context, to transport.NodeID, m *transport.Message) (bool, error) {
						if m.Type == transport.TypeData && m.Cmd == proto.DataReplicaAck {
							if r, p := proto.Identify(to); r == proto.RoleServer {
								acked <- [2]uint64{uint64(p), m.ID}
							}
						}
						return false, nil
					}}
				}}
			})
			bspRun(t, c, 8, -1, nil)
			updates := uint64(8) // a sum a round under BSP
			if mode == clock.Async {
				updates = 2 * 8 // each worker's pushes
			}
			var have [3]uint64
			timeout := time.After(time.Minute)
			for slices.Min(have[:]) < updates {
				select {
				case a := <-acked:
					have[a[0]] = max(have[a[0]], a[1])
				case <-timeout:
					t.Fatalf("after a minute the backups acknowledged %v of their primaries' %d updates", have, updates)
				}
			}
			for _, w := range c.workers {
				w.Finish(nil)
			}
			for _, n := range append(slices.Clone(c.servers), c.workers...) {
				if err := n.Wait(); err != nil {
					t.Fatal(err)
				}
				n.Close()
			}
			for p := range 3 {
				b := (p + 1) % 3
				got := c.servers[b].Server().Copy(p)
				want := c.servers[p].Server().Core().Store()
				if got == nil {
					t.Fatalf("server %d holds no copy of server %d", b, p)
				}
				g, w := got.Snapshot(0, got.Keys()), want.Snapshot(0, want.Keys())
				if !slices.Equal(g.Keys, w.Keys) || !slices.EqualFunc(g.Vals, w.Vals, func(a, b float32) bool { return math.Float32bits(a) == math.Float32bits(b) }) {
					t.Errorf("server %d's copy of server %d differs:\n%v\n%v", b, p, g, w)
				}
				if len(w.Vals) != 2*2*4 {
					// 4 keys of width 2, values and one AdaGrad state.
					t.Errorf("server %d holds %d values and states, want 16", p, len(w.Vals))
				}
			}
			// Each server sent its backup 8 updates of 8 values (4 keys of
			// width 2): the rounds' sums under BSP, each worker's pushes
			// under async.
			for p, n := range c.servers {
				want := server.ReplicaStats{Updates: 8, Sums: 8, Values: 8 * 8}
				if mode == clock.Async {
					want = server.ReplicaStats{Updates: 2 * 8, Values: 2 * 8 * 8}
				}
				got := n.Server().Stats().Replication
				got.Held, got.HeldNanos = 0, 0
				if got != want {
					t.Errorf("server %d replicated %+v, want %+v", p, got, want)
				}
			}
		})
	}
}

// TestFailoverBSP kills server 1 during a BSP round, at several rounds:
// the job goes on with no call failing and no round computed again, and
// the model is bit for bit the one of the run without failure. Server 1
// replicates its rounds' sums (replication after aggregation), and the
// kills land where each part of the protocol is needed:
//   - mid: in the middle of a round, worker 0's push sent and worker
//     1's not (worker 1's goes to the backup, worker 0's is sent again);
//   - summed: once the backup has the round's sum, with server 1's
//     acknowledgements of the round dropped: the workers send the
//     round's pushes again, which the backup acknowledges without
//     applying them twice;
//   - unsummed: once every worker has the round's acknowledgements, and
//     the pulls of the next round were sent (server 1's answers
//     dropped), with the round's sum dropped before it reached the
//     backup: the workers send the pushes they kept, the backup sums the
//     round from them, and answers the pulls sent again only then;
//   - backup: server 2, server 1's backup, killed instead: server 1 stops
//     waiting for it, and server 0 takes server 2's ranges over.
func TestFailoverBSP(t *testing.T) {
	const rounds = 6
	rule := update.AdaGrad{LR: 0.1, Eps: 1e-6}
	want := bspRun(t, startReplicated(t, clock.BSP, 1, rule), rounds, -1, nil)
	for _, tc := range []struct {
		name   string
		killAt int64
		stage  string // mid, summed, unsummed
		victim int    // the server killed: 1 (backed up by 2), or 2 (server 1's backup, backed up by 0)
	}{
		{"mid0", 0, "mid", 1}, {"mid2", 2, "mid", 1}, {"mid5", 5, "mid", 1},
		{"summed0", 0, "summed", 1}, {"summed1", 1, "summed", 1}, {"summed4", 4, "summed", 1}, {"summed5", 5, "summed", 1},
		{"unsummed0", 0, "unsummed", 1}, {"unsummed3", 3, "unsummed", 1}, {"unsummed4", 4, "unsummed", 1},
		{"backup2", 2, "mid", 2}, {"backup4", 4, "mid", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var (
				dropAcks atomic.Bool   // server 1's push acknowledgements to the workers
				dropVals atomic.Bool   // server 1's answers to pulls
				sumSeq   atomic.Uint64 // the sequence number of server 1's sum of round killAt
				summed   = make(chan struct{})
				once     sync.Once
			)
			tap := func(role proto.Role, rank int, nw Network) Network {
				switch {
				case role == proto.RoleServer && rank == 1:
					return tapNet(nw, proto.ServerID(1), func(to transport.NodeID, m *transport.Message) bool {
						if m.Type != transport.TypeData {
							return false
						}
						if r, _ := proto.Identify(to); r == proto.RoleWorker {
							return dropAcks.Load() && m.Flags&transport.FlagPush != 0 || dropVals.Load() && m.Flags&transport.FlagPull != 0
						}
						if m.Cmd != proto.DataReplicate {
							return false
						}
						round, _, seq, _, cmd, err := proto.ParseReplica(m)
						if err == nil && cmd == proto.DataCopy {
							return false // a new backup's copy, once server 2 failed
						}
						if err != nil || cmd != proto.DataRound {
							t.Errorf("server 1 sent an update that is not a round's sum: %v %v", cmd, err)
							return false
						}
						if round == tc.killAt {
							sumSeq.Store(seq)
						}
						return tc.stage == "unsummed" && round >= tc.killAt
					})
				case role == proto.RoleServer && rank == 2:
					return tapNet(nw, proto.ServerID(2), func(to transport.NodeID, m *transport.Message) bool {
						if m.Type == transport.TypeData && m.Cmd == proto.DataReplicaAck && to == proto.ServerID(1) {
							if q := sumSeq.Load(); q > 0 && m.ID >= q {
								once.Do(func() { close(summed) }) // the backup has the round's sum
							}
						}
						return false
					})
				}
				return nw
			}
			c := startReplicated(t, clock.BSP, 1, rule, tap)
			got := bspRun(t, c, rounds, tc.killAt, func(stage string) {
				switch {
				case tc.stage == "mid" && stage == "mid":
					c.servers[tc.victim].Close()
				case tc.stage == "summed" && stage == "start":
					dropAcks.Store(true)
				case tc.stage == "summed" && stage == "end":
					<-summed
					c.servers[tc.victim].Close()
				case tc.stage == "unsummed" && stage == "end":
					// The next round's pulls are left to the backup.
					dropVals.Store(true)
				case tc.stage == "unsummed" && stage == "acked":
					c.servers[tc.victim].Close()
				}
			})
			checkFailover(t, c, got, want, rounds, tc.victim)
		})
	}
}

// checkFailover checks a BSP run of rounds rounds in which server victim
// was killed: the model got is bit for bit want, the one of the run
// without failure; the victim's backup serves its ranges; each worker
// computed exactly the rounds; the job was never paused; the victim's id
// is on the backup's machine (its network interface).
func checkFailover(t *testing.T, c *replCluster, got, want []float32, rounds int64, victim int) {
	t.Helper()
	if !slices.EqualFunc(got, want, func(a, b float32) bool { return math.Float32bits(a) == math.Float32bits(b) }) {
		t.Errorf("model after the failover\n%v\nwant\n%v", got, want)
	}
	heir := c.servers[(victim+1)%3]
	heir.mu.Lock()
	taken := len(heir.taken)
	heir.mu.Unlock()
	if taken != 1 {
		t.Errorf("server %d's node serves %d failed servers, want 1", (victim+1)%3, taken)
	}
	if h, ok := c.net.Host(proto.ServerID(victim)); !ok || h != (victim+1)%3 {
		t.Errorf("server %d is served on machine %d (%v), want its backup's, %d", victim, h, ok, (victim+1)%3)
	}
	for w, n := range c.workers {
		if r := n.Worker().Round(); r != rounds {
			t.Errorf("worker %d computed %d rounds, want %d", w, r, rounds)
		}
		if n.Epoch() != 0 {
			t.Errorf("worker %d in epoch %d: the job was paused", w, n.Epoch())
		}
	}
}

// TestFailoverBSPEveryStage kills server 1 at every stage of every round
// but the last (its failover is then not awaited), with and without its
// rounds' sums dropped from that round on (the backup lacks them, the
// workers send the pushes they kept), and, for a kill once the round is
// acknowledged, with server 1's answers to the next round's pulls
// dropped: the model is bit for bit the one of the run without failure
// and no round is computed again.
func TestFailoverBSPEveryStage(t *testing.T) {
	const rounds = 6
	rule := update.AdaGrad{LR: 0.1, Eps: 1e-6}
	want := bspRun(t, startReplicated(t, clock.BSP, 1, rule), rounds, -1, nil)
	for killAt := range int64(rounds - 1) {
		for _, stage := range []string{"start", "mid", "end", "acked"} {
			for _, dropSums := range []bool{false, true} {
				t.Run(fmt.Sprintf("%d-%s-%v", killAt, stage, dropSums), func(t *testing.T) {
					var dropVals atomic.Bool
					c := startReplicated(t, clock.BSP, 1, rule, func(role proto.Role, rank int, nw Network) Network {
						if role != proto.RoleServer || rank != 1 {
							return nw
						}
						return tapNet(nw, proto.ServerID(1), func(to transport.NodeID, m *transport.Message) bool {
							if m.Type != transport.TypeData {
								return false
							}
							if r, _ := proto.Identify(to); r == proto.RoleWorker {
								return dropVals.Load() && m.Flags&transport.FlagPull != 0
							}
							round, _, _, _, _, err := proto.ParseReplica(m)
							return dropSums && m.Cmd == proto.DataReplicate && err == nil && round >= killAt
						})
					})
					got := bspRun(t, c, rounds, killAt, func(s string) {
						if stage == "acked" && s == "end" {
							dropVals.Store(true)
						}
						if s == stage {
							c.servers[1].Close()
						}
					})
					checkFailover(t, c, got, want, rounds, 1)
				})
			}
		}
	}
}

// TestFailoverAsync kills server 1 while two workers push
// asynchronously without waiting: every push is acknowledged, and the
// sums are exact (nothing acknowledged lost, nothing applied twice).
func TestFailoverAsync(t *testing.T) {
	const pushes = 200
	c := startReplicated(t, clock.Async, 1, nil)
	keys := make([]uint64, replKeys)
	for i := range keys {
		keys[i] = uint64(i)
	}
	one := make([]float32, 2*replKeys)
	for i := range one {
		one[i] = 1
	}
	half := make(chan struct{})
	done := make(chan error, 2)
	for w, n := range c.workers {
		go func() {
			var fs []*worker.Future
			for i := range pushes {
				fs = append(fs, n.Worker().Push(keys, one))
				if w == 0 && i == pushes/2 {
					fs[len(fs)-1].Wait()
					c.hold.Store(true)
					close(half)
				}
			}
			var errs []error
			for _, f := range fs {
				errs = append(errs, f.Wait())
			}
			done <- errors.Join(errs...)
		}()
	}
	<-half
	for range 20 {
		<-c.held // pushes on the backup, not acknowledged
	}
	c.servers[1].Close()
	for range 2 {
		// Every push acknowledged: none lost with server 1.
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	out := make([]float32, 2*replKeys)
	if err := c.workers[0].Worker().Pull(keys, out).Wait(); err != nil {
		t.Fatal(err)
	}
	c.servers[2].mu.Lock()
	taken := len(c.servers[2].taken)
	c.servers[2].mu.Unlock()
	if taken != 1 {
		t.Errorf("server 2's node serves %d failed servers, want 1", taken)
	}
	for i, v := range out {
		if v != 2*pushes {
			t.Fatalf("key %d value %d: %v, want %d", i/2, i%2, v, 2*pushes)
		}
	}
}

// TestReplicatedSendFailureEnds: with replicated key ranges, a send to a
// live server that fails (a push over the frame limit, a forward to a
// backup) ends the job with the error instead of leaving the request
// unanswered: only sends to a server the scheduler announced as failed
// are ignored, to be sent again to its backup.
func TestReplicatedSendFailureEnds(t *testing.T) {
	for _, tc := range []struct {
		name     string
		from, to transport.NodeID
	}{
		{"push", proto.WorkerID(0), proto.ServerID(1)},
		{"forward", proto.ServerID(1), proto.ServerID(2)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tooLarge := fmt.Errorf("%w: 1 bytes over the limit", transport.ErrFrameTooLarge)
				c := startReplicated(t, clock.Async, 1, nil, func(role proto.Role, rank int, nw Network) Network {
					// tc.from's data messages to tc.to fail.
					return sendNet(nw, tc.from, func(_ context.Context, to transport.NodeID, m *transport.Message) (bool, error) {
						if m.Type == transport.TypeData && to == tc.to {
							return true, &transport.PeerError{Peer: to, Op: "send", Err: tooLarge}
						}
						return false, nil
					})
				})
				keys := make([]uint64, replKeys)
				for i := range keys {
					keys[i] = uint64(i)
				}
				f := c.workers[0].Worker().Push(keys, make([]float32, 2*replKeys))
				select {
				case <-f.Done():
				case <-time.After(time.Hour):
					t.Fatal("push neither answered nor failed after an hour")
				}
				if err := f.Err(); !errors.Is(err, transport.ErrFrameTooLarge) {
					if tc.name == "push" || err == nil {
						t.Fatalf("push: %v, want the failure of the send", err)
					}
				}
				t.Logf("push: %v; scheduler: %v", f.Err(), c.s.Wait())
				if err := c.s.Wait(); err == nil {
					t.Fatal("the scheduler ended the job without an error")
				}
			})
		})
	}
}

// TestFailoverFrozenSend: worker 0's push to server 1 blocks in a write
// that never ends (server 1 stopped), and server 1 is declared failed.
// The failover abandons the blocked write and waits for it off the
// member loop: worker 0 keeps its heartbeats, sends the push again to
// server 1's backup, and the job ends with the model of the run without
// failure, never paused.
func TestFailoverFrozenSend(t *testing.T) {
	const rounds = 4
	rule := update.AdaGrad{LR: 0.1, Eps: 1e-6}
	synctest.Test(t, func(t *testing.T) {
		want := bspRun(t, startReplicated(t, clock.BSP, 1, rule), rounds, -1, nil)
		frozen := new(atomic.Bool)
		blocked := make(chan struct{}, 1)
		c := startReplicated(t, clock.BSP, 1, rule, func(role proto.Role, rank int, nw Network) Network {
			// Worker 0's pushes to server 1 block, once frozen is set,
			// until their context ends: the writes to a process that
			// stopped (SIGSTOP), whose link takes nothing. The first
			// write that ends clears frozen. Pulls pass: the round's
			// pulls, sent at the end of the round before, may still be
			// queued when frozen is set, and one of them blocked would
			// hold the round before its push.
			return sendNet(nw, proto.WorkerID(0), func(ctx context.Context, to transport.NodeID, m *transport.Message) (bool, error) {
				if m.Type == transport.TypeData && m.Flags&transport.FlagPush != 0 && to == proto.ServerID(1) && frozen.Load() {
					blocked <- struct{}{}
					<-ctx.Done()
					frozen.Store(false)
					return true, ctx.Err()
				}
				return false, nil
			})
		})
		// A bound on a hang: the nodes closed, every call fails.
		stop := time.AfterFunc(time.Hour, func() {
			for _, n := range append(slices.Clone(c.servers), c.workers...) {
				n.Close()
			}
		})
		defer stop.Stop()
		got := bspRun(t, c, rounds, 1, func(stage string) {
			switch stage {
			case "start":
				frozen.Store(true)
			case "mid":
				<-blocked // worker 0's push to server 1 blocks
				c.servers[1].Close()
			}
		})
		if !slices.EqualFunc(got, want, func(a, b float32) bool { return math.Float32bits(a) == math.Float32bits(b) }) {
			t.Errorf("model after the failover\n%v\nwant\n%v", got, want)
		}
		for w, n := range c.workers {
			if n.Epoch() != 0 {
				t.Errorf("worker %d in epoch %d: the job was paused", w, n.Epoch())
			}
		}
	})
}

// awaitBackup waits for the scheduler to report that server backup holds
// a new copy of server p's ranges, failing the test after a minute.
func (c *replCluster) awaitBackup(t *testing.T, p, backup int) {
	t.Helper()
	limit := time.NewTimer(time.Minute)
	defer limit.Stop()
	for {
		select {
		case b := <-c.backedUp:
			if b == (proto.Backup{Server: p, Backup: backup}) {
				return
			}
		case <-limit.C:
			t.Fatalf("no new copy of server %d's ranges on server %d within a minute", p, backup)
		}
	}
}

// TestFailoverTwice kills server 0 during a BSP round; its backup,
// server 1, takes its ranges over and makes a new copy of them on
// server 2 while the rounds go on. Once the scheduler reports that copy
// in place, server 1's process, which now serves the ranges of both
// ranks 0 and 1, is killed in a later round: server 2 takes both over,
// and the model is bit for bit the one of the run without failure, with
// no round computed again and no pause.
func TestFailoverTwice(t *testing.T) {
	const rounds = 8
	rule := update.AdaGrad{LR: 0.1, Eps: 1e-6}
	want := bspRun(t, startReplicated(t, clock.BSP, 1, rule), rounds, -1, nil)
	for _, tc := range []struct {
		first, second int64  // the rounds of the kills
		stage         string // of the second kill
	}{{1, 3, "mid"}, {0, 2, "end"}, {2, 6, "start"}, {1, 2, "acked"}} {
		t.Run(fmt.Sprintf("%d-%d-%s", tc.first, tc.second, tc.stage), func(t *testing.T) {
			book := &addrBook{at: make(map[transport.NodeID]string)}
			c := startReplicated(t, clock.BSP, 1, rule, func(_ proto.Role, _ int, nw Network) Network { return book.net(nw) })
			got := bspRunAt(t, c, rounds, func(r int64, stage string) {
				switch {
				case r == tc.first && stage == "mid":
					c.servers[0].Close()
				case r == tc.second && stage == "start":
					c.awaitBackup(t, 0, 2)
				}
				if r == tc.second && stage == tc.stage {
					c.servers[1].Close()
				}
			})
			checkTwice(t, c, got, want, rounds)
		})
	}
}

// checkTwice checks a BSP run of rounds rounds in which servers 0 and 1
// were killed, the second once server 2 held a new copy of server 0's
// ranges: the model got is bit for bit want; server 2's node serves
// both; each worker computed exactly the rounds; the job was never
// paused.
func checkTwice(t *testing.T, c *replCluster, got, want []float32, rounds int64) {
	t.Helper()
	if !slices.EqualFunc(got, want, func(a, b float32) bool { return math.Float32bits(a) == math.Float32bits(b) }) {
		t.Errorf("model after two failovers\n%v\nwant\n%v", got, want)
	}
	heir := c.servers[2]
	heir.mu.Lock()
	taken := len(heir.taken)
	heir.mu.Unlock()
	if taken != 2 {
		t.Errorf("server 2's node serves %d failed servers, want 2", taken)
	}
	for w, n := range c.workers {
		if r := n.Worker().Round(); r != rounds {
			t.Errorf("worker %d computed %d rounds, want %d", w, r, rounds)
		}
		if n.Epoch() != 0 {
			t.Errorf("worker %d in epoch %d: the job was paused", w, n.Epoch())
		}
	}
}

// TestFailoverTwiceAsync kills server 0 while two workers push
// asynchronously without waiting, then, once server 2 holds a new copy
// of server 0's ranges, server 1's process, which serves them: every
// push is acknowledged, and the sums are exact (nothing acknowledged
// lost, nothing applied twice).
func TestFailoverTwiceAsync(t *testing.T) {
	const pushes = 300
	book := &addrBook{at: make(map[transport.NodeID]string)}
	c := startReplicated(t, clock.Async, 1, nil, func(_ proto.Role, _ int, nw Network) Network { return book.net(nw) })
	keys := make([]uint64, replKeys)
	for i := range keys {
		keys[i] = uint64(i)
	}
	one := make([]float32, 2*replKeys)
	for i := range one {
		one[i] = 1
	}
	first, second := make(chan struct{}), make(chan struct{})
	done := make(chan error, 2)
	for w, n := range c.workers {
		go func() {
			var fs []*worker.Future
			for i := range pushes {
				fs = append(fs, n.Worker().Push(keys, one))
				if w == 0 && (i == pushes/3 || i == 2*pushes/3) {
					fs[len(fs)-1].Wait()
					if i == pushes/3 {
						close(first)
					} else {
						close(second)
					}
				}
			}
			var errs []error
			for _, f := range fs {
				errs = append(errs, f.Wait())
			}
			done <- errors.Join(errs...)
		}()
	}
	<-first
	c.servers[0].Close()
	c.awaitBackup(t, 0, 2)
	<-second
	c.servers[1].Close()
	for range 2 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	out := make([]float32, 2*replKeys)
	if err := c.workers[0].Worker().Pull(keys, out).Wait(); err != nil {
		t.Fatal(err)
	}
	c.servers[2].mu.Lock()
	taken := len(c.servers[2].taken)
	c.servers[2].mu.Unlock()
	if taken != 2 {
		t.Errorf("server 2's node serves %d failed servers, want 2", taken)
	}
	for i, v := range out {
		if v != 2*pushes {
			t.Fatalf("key %d value %d: %v, want %d", i/2, i%2, v, 2*pushes)
		}
	}
}

// addrBook gives each endpoint of an in-memory network an address of
// its own, as TCP does: a server's id taken over by its backup is at
// another address than before, which its peers reach only once they
// know it (addrEndpoint). The in-memory network routes by id alone: a
// worker's push sent to the failed server's id before the worker heard
// of the failover would reach the backup that took the id over, which a
// TCP endpoint never sees (it dials the failed server's address).
type addrBook struct {
	// mu is held to attach (Listen) and read for a whole send, so that
	// a send cannot reach an endpoint attached after its check.
	mu sync.RWMutex
	at map[transport.NodeID]string
	n  int
}

// net is nw whose endpoints have addresses of their own in b
// (addrEndpoint).
func (b *addrBook) net(nw Network) Network {
	return wrapNet{Network: nw, mu: &b.mu, wrap: func(id transport.NodeID, ep Endpoint) Endpoint {
		b.n++
		addr := fmt.Sprintf("mem/%d", b.n)
		b.at[id] = addr
		return &addrEndpoint{Endpoint: ep, book: b, addr: addr, peers: make(map[transport.NodeID]string)}
	}}
}

// addrEndpoint fails a data send to a server at another address than
// the one the endpoint knows for it, as a send to a process that died.
type addrEndpoint struct {
	Endpoint
	book  *addrBook
	addr  string
	mu    sync.Mutex
	peers map[transport.NodeID]string
}

func (e *addrEndpoint) Addr() string { return e.addr }

func (e *addrEndpoint) SetPeer(id transport.NodeID, addr string) {
	e.mu.Lock()
	e.peers[id] = addr
	e.mu.Unlock()
	e.Endpoint.SetPeer(id, addr)
}

func (e *addrEndpoint) Send(ctx context.Context, to transport.NodeID, m *transport.Message) error {
	e.mu.Lock()
	want, known := e.peers[to]
	e.mu.Unlock()
	e.book.mu.RLock()
	defer e.book.mu.RUnlock()
	at := e.book.at[to]
	if r, _ := proto.Identify(to); known && r == proto.RoleServer && m.Type == transport.TypeData && want != at {
		return &transport.PeerError{Peer: to, Addr: want, Op: "send", Err: transport.ErrPeerClosed}
	}
	return e.Endpoint.Send(ctx, to, m)
}

// startNodes starts c's servers and workers at once, each with the
// Config that cfg gives it, fails the test on an error, and closes every
// node when the test ends.
func (c *replCluster) startNodes(t *testing.T, cfg func(role proto.Role, rank int) Config) {
	t.Helper()
	errs := make(chan error, len(c.servers)+len(c.workers))
	start := func(dst **Node, role proto.Role, rank int) {
		n, err := Start(context.Background(), cfg(role, rank))
		*dst = n
		errs <- err
	}
	for i := range c.servers {
		go start(&c.servers[i], proto.RoleServer, i)
	}
	for i := range c.workers {
		go start(&c.workers[i], proto.RoleWorker, i)
	}
	for range len(c.servers) + len(c.workers) {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range append(slices.Clone(c.servers), c.workers...) {
		t.Cleanup(func() { n.Close() })
	}
}
