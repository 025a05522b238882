package node

import (
	"context"
	"crypto/ecdh"
	"fmt"
	"slices"
	"testing"
	"time"

	"colo/ps/proto"
	"colo/ps/sched"
	"colo/transport"
	"colo/transport/tcp"
)

// standbyScheduler starts over TCP at addr (port 0: any) a scheduler of
// 2 machines with a standby, with identity; takeover starts it as the
// one that takes a job over.
func standbyScheduler(t *testing.T, addr string, identity *ecdh.PrivateKey, takeover bool) (*sched.Scheduler, string) {
	t.Helper()
	cfg := tcp.DefaultConfig()
	cfg.ID, cfg.Token, cfg.Addr, cfg.Identity = proto.SchedulerID, "t", addr, identity
	cfg.Keyed = func(peer transport.NodeID) bool { return !proto.IsProvisional(peer) }
	ep, err := tcp.Listen(cfg)
	if err != nil {
		t.Fatal(err)
	}
	sc := sched.DefaultConfig()
	sc.NumServers, sc.NumWorkers, sc.Token, sc.NumKeys = 2, 2, "t", 10
	sc.Heartbeat, sc.Timeout, sc.Standby, sc.Takeover = 20*time.Millisecond, 10*time.Second, true, takeover
	s, err := sched.Start(sc, ep, func(format string, args ...any) { t.Logf(format, args...) })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, ep.Addr().String()
}

// trainRounds runs rounds BSP rounds on worker rank of n: each pulls
// keys 1 (server 0) and 7 (server 1), pushes what depends on the values
// and on the last all-reduce's sum, and all-reduces a value of what it
// pulled; before the all-reduce of round kill it calls killed (once, on
// rank 0). It returns the sums of the all-reduces.
func trainRounds(ctx context.Context, n *Node, rank, rounds, kill int, killed func()) ([]float64, error) {
	w := n.Worker()
	got := make([]float32, 2)
	var sums []float64
	s := 1.0
	for r := range rounds {
		if err := w.Pull([]uint64{1, 7}, got).Wait(); err != nil {
			return sums, fmt.Errorf("round %d: pull: %w", r, err)
		}
		g := []float32{float32(s)*0.5 + float32(rank+1), got[0]*0.25 - float32(rank)}
		if err := w.Push([]uint64{1, 7}, g).Wait(); err != nil {
			return sums, fmt.Errorf("round %d: push: %w", r, err)
		}
		if r == kill && killed != nil {
			killed()
		}
		v, err := n.AllReduce(ctx, "workers", []float64{float64(got[0]) + float64(got[1])*float64(rank+1)})
		if err != nil {
			return sums, fmt.Errorf("round %d: all-reduce: %w", r, err)
		}
		s = v[0] / 1000
		sums = append(sums, v[0])
	}
	return sums, nil
}

// runStandbyJob runs trainRounds on both machines of a cluster with a
// standby; with kill ≥ 0 its scheduler is closed (its links close, as
// when its process is killed) before worker 0's all-reduce of round
// kill, and a scheduler that takes the job over is started at its
// address. It returns each worker's sums and the final model.
func runStandbyJob(t *testing.T, rounds, kill int) ([][]float64, []float32) {
	t.Helper()
	identity := tcp.NewIdentity()
	s, addr := standbyScheduler(t, "127.0.0.1:0", identity, false)
	nodes := make([]*Node, 2)
	errs := make(chan error, 2)
	for i := range nodes {
		go func() {
			var err error
			nodes[i], err = startMachine(addr, i, false)
			errs <- err
		}()
	}
	for range nodes {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range nodes {
		t.Cleanup(func() { n.Close() })
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	next := make(chan *sched.Scheduler, 1)
	var killedAt int64
	killed := func() {
		killedAt = time.Now().UnixNano()
		s.Close()
		s2, _ := standbyScheduler(t, addr, identity, true)
		next <- s2
	}
	sums := make([][]float64, 2)
	model := make([]float32, 2)
	for i, n := range nodes {
		go func() {
			var k func()
			if i == 0 {
				k = killed
			}
			var err error
			sums[i], err = trainRounds(ctx, n, i, rounds, kill, k)
			if err == nil && i == 0 {
				err = n.Worker().Pull([]uint64{1, 7}, model).Wait()
			}
			n.Finish(err)
			errs <- err
		}()
	}
	for range nodes {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if kill >= 0 {
		s = <-next
	}
	if err := s.Wait(); err != nil {
		t.Fatalf("the job's end: %v", err)
	}
	for i, n := range nodes {
		if err := n.Wait(); err != nil {
			t.Fatalf("machine %d: %v", i, err)
		}
		// A node also starts reporting when the scheduler is silent for
		// SchedulerGrace heartbeats (a loaded machine), when a member
		// sees the old link fail after the other heard the new
		// scheduler, and when the link closes at the job's end before
		// the Shutdown is read: each is a loss heard again, and the
		// kill is one of them.
		tk := n.Takeovers()
		if kill >= 0 && !slices.ContainsFunc(tk, func(x TakeoverTimes) bool {
			return x.LostUnixNano >= killedAt && x.HeardUnixNano >= x.LostUnixNano
		}) {
			t.Errorf("machine %d saw the takeovers %+v, none lost after the kill (unix %d ns) and heard after", i, tk, killedAt)
		}
	}
	return sums, model
}

// TestSchedulerTakeover kills (closes) the scheduler of a BSP job with a
// standby in the middle of its rounds, at seeded rounds, and starts a
// scheduler that takes the job over at its address, with its identity:
// the nodes report to it, the barrier they waited at is released, and
// the job ends with the all-reduce sums and the model of the run
// without failure, bit for bit, the nodes never paused or rolled back.
func TestSchedulerTakeover(t *testing.T) {
	const rounds = 12
	wantSums, wantModel := runStandbyJob(t, rounds, -1)
	for _, kill := range []int{0, 5, 11} {
		sums, model := runStandbyJob(t, rounds, kill)
		for i := range sums {
			if !slices.Equal(sums[i], wantSums[i]) {
				t.Errorf("kill before the all-reduce of round %d: worker %d's sums %v, without failure %v", kill, i, sums[i], wantSums[i])
			}
		}
		if !slices.Equal(model, wantModel) {
			t.Errorf("kill before the all-reduce of round %d: model %v, without failure %v", kill, model, wantModel)
		}
	}
}
