package node

import (
	"context"
	"math"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"colo/ps/clock"
	"colo/ps/proto"
	"colo/ps/sched"
	"colo/ps/update"
	"colo/transport"
	"colo/transport/mem"
)

// startRecovering starts the job of startReplicated (3 servers, 2
// workers, BSP, one copy a server), with addresses of its own per
// endpoint (addrBook) and a scheduler that replaces a failed node; the
// scheduler's messages that drop returns true for are dropped. It
// returns the cluster and a function that starts a replacement of
// server rank.
func startRecovering(t *testing.T, rule update.Rule, drop func(to transport.NodeID, m *transport.Message) bool) (*replCluster, func(rank int) *Node) {
	t.Helper()
	net, _ := mem.New(mem.DefaultConfig())
	t.Cleanup(func() { net.Close() })
	mep, _ := net.Attach(proto.SchedulerID)
	sep := dropEndpoint{mep, drop}
	sc := sched.DefaultConfig()
	sc.NumServers, sc.NumWorkers, sc.Token, sc.NumKeys, sc.Width = 3, 2, "t", replKeys, 2
	sc.Heartbeat, sc.Timeout, sc.Replicas, sc.RecoverWait = 20*time.Millisecond, 2*time.Second, 1, 30*time.Second
	backedUp := make(chan proto.Backup, 16)
	sc.OnBackedUp = func(b proto.Backup) { backedUp <- b }
	s, err := sched.Start(sc, sep, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	book := &addrBook{at: make(map[transport.NodeID]string)}
	c := &replCluster{s: s, servers: make([]*Node, 3), workers: make([]*Node, 2), backedUp: backedUp}
	config := func(role proto.Role, rank int, recover bool) Config {
		cfg := DefaultConfig()
		cfg.Role, cfg.Token, cfg.Rank, cfg.Rule, cfg.Recover = role, "t", rank, rule, recover
		cfg.Network = book.net(Mem{Net: net})
		return cfg
	}
	c.startNodes(t, func(role proto.Role, rank int) Config { return config(role, rank, false) })
	replace := func(rank int) *Node {
		n, err := Start(context.Background(), config(proto.RoleServer, rank, true))
		if err != nil {
			t.Fatalf("the replacement of server %d: %v", rank, err)
		}
		t.Cleanup(func() { n.Close() })
		return n
	}
	return c, replace
}

// TestRollbackAfterFailover: server 0's process dies and server 1 takes
// its ranges over; the new copy of server 0's ranges is made on server
// 2, and that of server 2's (whose chain was server 0) on server 1 is
// lost on its way. Server 2's process then dies with no copy of its own
// ranges: the job pauses, server 2 is replaced, and the workers roll
// back (here to the start: the servers forget the epoch before). The
// replacement must neither replicate to server 0's id (its process is
// gone, and server 1's node, which serves it, keeps no copy) nor miss the
// copy of server 0's ranges that server 1's node replicates to server 2
// (its new copy, made before): the job must go on, its rounds the run
// without failure's bit for bit, and the copy of server 2's ranges that
// the job lacks must be made once it resumes.
func TestRollbackAfterFailover(t *testing.T) {
	const rounds = 6
	rule := update.AdaGrad{LR: 0.1, Eps: 1e-6}
	want := bspRun(t, startReplicated(t, clock.BSP, 1, rule), rounds, -1, nil)
	// Server 2 is asked for a copy of its ranges on server 1 after
	// server 0's failover, and is killed before it made it (the request
	// dropped on its way, as if the server had no quiet point yet).
	var dropping atomic.Bool
	dropping.Store(true)
	drop := func(to transport.NodeID, m *transport.Message) bool {
		var b proto.Backup
		return dropping.Load() && to == proto.ServerID(2) && m.Cmd == proto.CmdBackup && proto.Decode(m, &b) == nil && b.Server == 2
	}
	c, replace := startRecovering(t, rule, drop)
	bspRun(t, c, 3, -1, nil)
	c.servers[0].Close()
	c.awaitBackup(t, 0, 2)
	bspRun(t, c, 2, -1, nil)
	c.servers[2].Close()
	for _, n := range c.workers {
		for deadline := time.Now().Add(30 * time.Second); n.Epoch() != 1; time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("the workers not paused 30 s after server 2's process died")
			}
		}
	}
	dropping.Store(false) // the replacement is asked again once the job resumes
	c.servers[2] = replace(2)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for w, n := range c.workers {
		if e, err := n.Worker().Rejoin(ctx); err != nil || e != 1 {
			t.Fatalf("worker %d's rejoin: epoch %d, %v", w, e, err)
		}
		if err := n.Worker().Resume(); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan []float32, 1)
	go func() { done <- bspRun(t, c, rounds, -1, nil) }()
	var got []float32
	select {
	case got = <-done:
	case <-time.After(time.Minute):
		t.Fatal("the rounds after the rollback did not end within a minute")
	}
	if !slices.EqualFunc(got, want, func(a, b float32) bool { return math.Float32bits(a) == math.Float32bits(b) }) {
		t.Errorf("model after the rollback\n%v\nwant\n%v", got, want)
	}
	c.awaitBackup(t, 2, 1)
}

// dropEndpoint is a scheduler's endpoint that drops the messages drop
// returns true for.
type dropEndpoint struct {
	*mem.Endpoint
	drop func(to transport.NodeID, m *transport.Message) bool
}

func (e dropEndpoint) Send(ctx context.Context, to transport.NodeID, m *transport.Message) error {
	if e.drop(to, m) {
		return nil
	}
	return e.Endpoint.Send(ctx, to, m)
}
