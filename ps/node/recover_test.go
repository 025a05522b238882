package node

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"colo/ps/proto"
	"colo/ps/sched"
	"colo/ps/worker"
	"colo/transport"
	"colo/transport/tcp"
)

// recoverCluster starts over TCP on loopback a scheduler that waits
// wait for replacements and two machines, closed with the test.
func recoverCluster(t *testing.T, wait time.Duration) (*sched.Scheduler, []*Node) {
	t.Helper()
	// A failure is a closed link, seen at once: the timeout of silence is
	// an hour, so that a loaded machine's late heartbeats are not one, and
	// the tests' guards of a minute fail a failure that only the timeout
	// would notice.
	return recoverClusterOn(t, wait, time.Hour, func(ep *tcp.Endpoint) transport.Endpoint { return ep })
}

// recoverClusterOn is recoverCluster with the scheduler on wrap of its
// TCP endpoint, declaring a node failed after timeout of silence.
func recoverClusterOn(t *testing.T, wait, timeout time.Duration, wrap func(*tcp.Endpoint) transport.Endpoint) (*sched.Scheduler, []*Node) {
	t.Helper()
	cfg := tcp.DefaultConfig()
	cfg.ID, cfg.Token = proto.SchedulerID, "t"
	sep, err := tcp.Listen(cfg)
	if err != nil {
		t.Fatal(err)
	}
	sc := sched.DefaultConfig()
	sc.NumServers, sc.NumWorkers, sc.Token, sc.NumKeys = 2, 2, "t", 10
	sc.Heartbeat, sc.Timeout, sc.RecoverWait = 20*time.Millisecond, timeout, wait
	s, err := sched.Start(sc, wrap(sep), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	nodes := make([]*Node, 2)
	errs := make(chan error, 2)
	for i := range nodes {
		go func() {
			var err error
			nodes[i], err = startMachine(sep.Addr().String(), i, false)
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
	return s, nodes
}

// startMachine starts machine rank of the cluster of the scheduler at
// addr, as a replacement when recover is set.
func startMachine(addr string, rank int, recover bool) (*Node, error) {
	cfg := DefaultConfig()
	cfg.Token, cfg.Scheduler, cfg.Rank, cfg.Recover = "t", addr, rank, recover
	cfg.Network, cfg.JoinTimeout = TCP{Host: "127.0.0.1", Token: "t"}, 10*time.Second
	return Start(context.Background(), cfg)
}

// pushBoth has both workers push one round of vals to keys 1 (server 0)
// and 7 (server 1) and waits for the acknowledgements.
func pushBoth(t *testing.T, ns []*Node, vals ...float32) {
	t.Helper()
	var errs []error
	var fs []*worker.Future
	for i, n := range ns {
		fs = append(fs, n.Worker().Push([]uint64{1, 7}, []float32{vals[2*i], vals[2*i+1]}))
	}
	for _, f := range fs {
		errs = append(errs, f.Wait())
	}
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
}

// TestReplaceMachine kills (closes) machine 1 of a running BSP job: the
// job pauses instead of ending, machine 0's calls fail with
// proto.ErrPaused and its barriers too; a new machine that recovers
// rank 1 resumes the job in epoch 1, machine 0 rejoins, the servers
// start afresh at round 0 with the first request of the new epoch, and
// barriers and the end of the job work again.
func TestReplaceMachine(t *testing.T) {
	s, ns := recoverCluster(t, 10*time.Second)
	pushBoth(t, ns, 1, 2, 10, 20)
	machine := ns[1].Machine()
	ns[1].Close()
	// A pull of machine 0 fails with the pause, which names machine 1's
	// server or worker. The closed links pause the job at once; the
	// guard of a minute is against a hang.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for ns[0].Epoch() != 1 {
		select {
		case <-ctx.Done():
			t.Fatal("machine 0 not paused a minute after machine 1 left")
		case <-time.After(5 * time.Millisecond):
		}
	}
	err := ns[0].Worker().Pull([]uint64{1, 7}, make([]float32, 2)).Wait()
	if !errors.Is(err, proto.ErrPaused) || !strings.Contains(err.Error(), " 1 (node ") {
		t.Fatalf("pull while paused: %v", err)
	}
	if _, err := ns[0].AllReduce(context.Background(), "workers", []float64{1}); !errors.Is(err, proto.ErrPaused) {
		t.Fatalf("all-reduce while paused: %v", err)
	}
	// The replacement.
	n1, err := startMachine(ns[0].cfg.Scheduler, 1, true)
	if err != nil {
		t.Fatal(err)
	}
	defer n1.Close()
	if a := n1.Assignment(); a.Server != proto.ServerID(1) || a.Worker != proto.WorkerID(1) || a.Machine != machine || a.Epoch != 1 {
		t.Fatalf("replacement assigned %+v", a)
	}
	ns = rejoinWith(ctx, t, ns[0], n1)
	// Round 0 again: the servers forgot the epoch before.
	pushBoth(t, ns, 3, 4, 30, 40)
	got := make([]float32, 2)
	if err := ns[0].Worker().Pull([]uint64{1, 7}, got).Wait(); err != nil {
		t.Fatal(err)
	}
	if got[0] != 33 || got[1] != 44 {
		t.Fatalf("pulled %v after the replacement, want [33 44]: the pushes of the new epoch alone", got)
	}
	allReduceBoth(ctx, t, ns, "after the replacement")
	for _, n := range ns {
		n.Finish(nil)
	}
	for _, n := range ns {
		if err := n.Wait(); err != nil {
			t.Fatalf("end of job: %v", err)
		}
	}
	if err := s.Wait(); err != nil {
		t.Fatalf("scheduler: %v", err)
	}
}

// lateDown is a scheduler's TCP endpoint whose link failures reach the
// scheduler late: held back until release is closed, then delivered in
// order (delivered is closed once they are), and the later ones as they
// come.
type lateDown struct {
	*tcp.Endpoint
	down      chan *transport.PeerError
	held      chan transport.NodeID // the peer of each failure held back
	release   chan struct{}
	delivered chan struct{}
	stop      chan struct{}
}

func holdDown(ep *tcp.Endpoint) *lateDown {
	l := &lateDown{Endpoint: ep, down: make(chan *transport.PeerError), held: make(chan transport.NodeID, 64),
		release: make(chan struct{}), delivered: make(chan struct{}), stop: make(chan struct{})}
	go func() {
		defer close(l.down)
		var held []*transport.PeerError
		in := ep.Down()
	hold:
		for {
			select {
			case pe, ok := <-in:
				if !ok {
					return
				}
				held = append(held, pe)
				l.held <- pe.Peer
			case <-l.release:
				break hold
			}
		}
		for _, pe := range held {
			select {
			case l.down <- pe:
			case <-l.stop:
				return
			}
		}
		close(l.delivered)
		for pe := range in {
			select {
			case l.down <- pe:
			case <-l.stop:
				return
			}
		}
	}()
	return l
}

func (l *lateDown) Down() <-chan *transport.PeerError { return l.down }

// TestLateLinkFailureOfReplacedMachine: the scheduler learns that the
// links of machine 1, closed, failed only after a replacement took its
// place and the job resumed (on a loaded machine, the transport's
// goroutines that notice the closed links can run that late). Those
// failures name machine 1's addresses, not the replacement's: the job
// neither pauses again nor drops the replacement, which gets its
// heartbeats and ends the job with machine 0. The replacement's own
// failure still pauses the job.
func TestLateLinkFailureOfReplacedMachine(t *testing.T) {
	var late *lateDown
	// The replacement's registration tells the scheduler that machine 1
	// failed, before its held link failures: the timeout of silence is an
	// hour, so that late heartbeats of a loaded machine 0 (1 s, as it
	// was, is reachable) do not end the job.
	s, ns := recoverClusterOn(t, 10*time.Second, time.Hour, func(ep *tcp.Endpoint) transport.Endpoint {
		late = holdDown(ep)
		return late
	})
	t.Cleanup(func() { close(late.stop) })
	pushBoth(t, ns, 1, 2, 10, 20)
	ns[1].Close()
	seen := map[transport.NodeID]bool{}
	timeout := time.After(time.Minute) // against a hang: the links close at once
	for !seen[proto.ServerID(1)] || !seen[proto.WorkerID(1)] {
		select {
		case id := <-late.held:
			seen[id] = true
		case <-timeout:
			t.Fatalf("failures of machine 1's links held back: %v, want server 1 and worker 1", seen)
		}
	}
	n1, err := startMachine(ns[0].cfg.Scheduler, 1, true)
	if err != nil {
		t.Fatal(err)
	}
	defer n1.Close()
	close(late.release)
	<-late.delivered
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // against a hang
	defer cancel()
	// Machine 0 has the pause before the resume, on the same link.
	for ns[0].Epoch() < 1 {
		select {
		case <-ctx.Done():
			t.Fatal("machine 0 not paused after its peer was replaced")
		case <-time.After(time.Millisecond):
		}
	}
	ns = rejoinWith(ctx, t, ns[0], n1)
	pushBoth(t, ns, 3, 4, 30, 40)
	allReduceBoth(ctx, t, ns, "after the late failures")
	if e0, e1 := ns[0].Epoch(), n1.Epoch(); e0 != 1 || e1 != 1 {
		t.Fatalf("epochs %d and %d after the late failures, want 1", e0, e1)
	}
	// The replacement's own links name its address.
	n1.Close()
	for ns[0].Epoch() != 2 {
		select {
		case <-ctx.Done():
			t.Fatal("machine 0 not paused again after the replacement left")
		case <-time.After(5 * time.Millisecond):
		}
	}
	if err := ns[0].Worker().Pull([]uint64{1}, make([]float32, 1)).Wait(); !errors.Is(err, proto.ErrPaused) || !strings.Contains(err.Error(), "link lost") {
		t.Fatalf("pull after the replacement left: %v, want a pause for its lost link", err)
	}
	s.Close()
}

// TestNoReplacement: when no replacement comes within the scheduler's
// wait, the job ends for every survivor with an error that names the
// failed ranks and the cause.
func TestNoReplacement(t *testing.T) {
	// The scheduler's timeout of silence, which could end the job too,
	// is an hour: only the recovery wait of 200 ms (10 heartbeats of
	// 20 ms) ends it within the test's guard of a minute, 300 times the
	// wait, which no load stretches 10 ticks to; a scheduler that never
	// gave up, or waited its timeout instead, fails the guard.
	s, ns := recoverClusterOn(t, 200*time.Millisecond, time.Hour, func(ep *tcp.Endpoint) transport.Endpoint { return ep })
	pushBoth(t, ns, 1, 2, 10, 20)
	ns[1].Close()
	ended := make(chan error, 1)
	go func() { ended <- ns[0].Wait() }()
	var err error
	select {
	case err = <-ended:
	case <-time.After(time.Minute):
		t.Fatal("the survivor still runs a minute after machine 1 left, with a recovery wait of 200ms")
	}
	const want = "failed: no replacement for server 1 and worker 1 ready within 200ms (after link lost: "
	var ne *proto.NodeError
	if err == nil || !strings.Contains(err.Error(), want) || !errors.As(err, &ne) || (ne.ID != proto.ServerID(1) && ne.ID != proto.WorkerID(1)) {
		t.Fatalf("survivor ended with %v, want a *proto.NodeError naming machine 1 with %q", err, want)
	}
	if err := s.Wait(); err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("scheduler: %v", err)
	}
}

// TestReplacementAfterSchedulerLeft: a replacement started as the job
// ends (its process died after its work was done, and the others
// finished) finds nothing listening at the scheduler's address and
// fails at once saying the scheduler left, instead of dialling it again
// until its join timeout (a minute for colo train's processes).
func TestReplacementAfterSchedulerLeft(t *testing.T) {
	s, ns := recoverCluster(t, 10*time.Second)
	pushBoth(t, ns, 1, 2, 10, 20)
	addr := ns[0].cfg.Scheduler
	s.Close()
	s.Wait()
	cfg := DefaultConfig()
	cfg.Token, cfg.Scheduler, cfg.Rank, cfg.Recover = "t", addr, 1, true
	cfg.Network = TCP{Host: "127.0.0.1", Token: "t"}
	// Dialled again until then, the call would end saying it cannot
	// reach the scheduler.
	cfg.JoinTimeout = 5 * time.Second
	_, err := Start(context.Background(), cfg)
	if err == nil || !strings.Contains(err.Error(), "has left") || !errors.Is(err, transport.ErrPeerClosed) {
		t.Fatalf("replacement with the scheduler gone: %v, want its departure", err)
	}
}

// allReduceBoth sums 1 and 2 over the two machines' workers (an
// all-reduce after a recovery, when) and checks that both get 3.
func allReduceBoth(ctx context.Context, t *testing.T, ns []*Node, when string) {
	t.Helper()
	sums := make([][]float64, 2)
	errs := make(chan error, 2)
	for i, n := range ns {
		go func() {
			var err error
			sums[i], err = n.AllReduce(ctx, "workers", []float64{float64(i + 1)})
			errs <- err
		}()
	}
	for range ns {
		if err := <-errs; err != nil {
			t.Fatalf("all-reduce %s: %v", when, err)
		}
	}
	if sums[0][0] != 3 || sums[1][0] != 3 {
		t.Fatalf("all-reduce sums %v %s, want 3", sums, when)
	}
}

// rejoinWith has survivor's worker rejoin the job in epoch 1 and resume,
// and returns the machines: survivor and the replacement.
func rejoinWith(ctx context.Context, t *testing.T, survivor, replacement *Node) []*Node {
	t.Helper()
	if e, err := survivor.Worker().Rejoin(ctx); err != nil || e != 1 {
		t.Fatalf("rejoin: epoch %d, %v", e, err)
	}
	if err := survivor.Worker().Resume(); err != nil {
		t.Fatal(err)
	}
	return []*Node{survivor, replacement}
}
