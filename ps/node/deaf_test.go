package node

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"colo/kv"
	"colo/ps/clock"
	"colo/ps/internal/mailbox"
	"colo/ps/proto"
	"colo/ps/route"
	"colo/ps/server"
	"colo/transport"
	"colo/transport/mem"
	"colo/transport/tcp"
)

// deafGuard bounds the waits for what must come while a worker reads
// nothing: generous for a loaded machine, a failure of the test, never
// a pace.
const deafGuard = 30 * time.Second

// deafKeys is the keys of server 0 in the tests of a deaf worker: an
// answer to a pull of all of them is 1 MB.
const deafKeys = 250_000

// sparseRequest returns worker w's sparse request for keys [0, n) of
// server 0: a pull, or a push of ones.
func sparseRequest(w int, id uint64, n int, push bool) *transport.Message {
	keys := make([]uint64, n)
	for i := range keys {
		keys[i] = uint64(i)
	}
	m := &transport.Message{
		Header: transport.Header{Type: transport.TypeData, Flags: transport.FlagRequest | transport.FlagPull, Cmd: proto.DataSparse, ID: id,
			Sender: proto.WorkerID(w), Receiver: proto.ServerID(0)},
		Body: proto.AppendMeta(nil, 0),
		KV:   kv.Batch{Keys: keys},
	}
	if push {
		m.Flags = transport.FlagRequest | transport.FlagPush
		m.KV.Vals = slices.Repeat([]float32{1}, n)
	}
	return m
}

// deafServer runs server 0 of a job of two workers under mode, with
// deafKeys keys of width 1, on a node whose server member sends through
// ep, and returns the member: requests pushed on its data box are
// served by Run, as from the node's loop. The server ends, and its
// context, when the test ends, before what the caller's cleanups
// registered earlier (the endpoints' close).
func deafServer(t *testing.T, ep Endpoint, mode clock.Mode) (*member, *server.Server) {
	t.Helper()
	ctx, cancel := context.WithCancelCause(context.Background())
	// A failed send waits for the scheduler's verdict (Node.lost) for
	// longer than any test.
	n := &Node{ctx: ctx, cancel: cancel, started: make(chan struct{}), done: make(chan struct{}), cfg: Config{Logf: t.Logf},
		assign: proto.Assign{Server: proto.ServerID(0), Job: proto.Job{Mode: mode.String(), Timeout: time.Hour}}}
	close(n.started)
	m := &member{n: n, id: proto.ServerID(0), ep: ep, data: mailbox.New[*transport.Message]()}
	n.members = []*member{m}
	tb, err := route.Uniform(1, deafKeys)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.NewServer(server.Config{Rank: 0, Workers: 2, Table: tb, Width: 1, Clock: clock.Config{Mode: mode}})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx, m.data.C(), serverConn{m}) }()
	t.Cleanup(func() {
		cancel(context.Canceled)
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("Run: %v", err)
		}
		m.data.Close()
	})
	return m, srv
}

// holdReader makes ep's link reader hold the first message it reads
// until hear is called (or the test ends, before the endpoints close),
// so that what follows fills the sockets' buffers: a worker that reads
// nothing.
func holdReader(t *testing.T, ep *tcp.Endpoint) (hear func()) {
	heard := make(chan struct{})
	ep.SetSink(func(*transport.Message) bool {
		<-heard
		return false
	})
	hear = sync.OnceFunc(func() { close(heard) })
	t.Cleanup(hear)
	return hear
}

// awaitAnswers checks that ep receives the answers ids in order within
// deafGuard, each holding vals when it is a pull's (vals not nil).
func awaitAnswers(t *testing.T, ep transport.Endpoint, who string, vals []float32, ids ...uint64) {
	t.Helper()
	deadline := time.NewTimer(deafGuard)
	defer deadline.Stop()
	for _, id := range ids {
		select {
		case got := <-ep.Recv():
			if got.ID != id {
				t.Fatalf("%s got answer %d, want %d", who, got.ID, id)
			}
			if got.Flags&transport.FlagPull != 0 && !slices.Equal(got.KV.Vals, vals) {
				t.Fatalf("%s got answer %d holding %d values (first %v), want %d of %v", who, id, len(got.KV.Vals), got.KV.Vals[:min(1, len(got.KV.Vals))], len(vals), vals[:1])
			}
		case <-deadline.C:
			t.Fatalf("%s got no answer %d within %v", who, id, deafGuard)
		}
	}
}

// TestDeafWorkerHoldsNoOther: worker 0 of an asynchronous job reads
// nothing more (its process stopped, or its link's reader stuck) after
// it pulled 12 MB from server 0: more than its link, its socket
// buffers and its queue (ReplyBuffer) hold. Worker 1 then pushes and
// pulls: it gets both answers, its pull holding its push, while worker
// 0 still reads nothing (before, the server's loop waited for room in
// worker 0's queue, and served nobody else until the scheduler declared
// worker 0 failed). Once worker 0 reads again it gets its 12 answers,
// in order, each holding the store before worker 1's push.
func TestDeafWorkerHoldsNoOther(t *testing.T) {
	const pulls = 12
	for _, tc := range []struct {
		name string
		// listen returns server 0's endpoint and those of workers 0
		// and 1; worker 0 reads nothing until hear is called.
		listen func(t *testing.T) (srv Endpoint, w0, w1 transport.Endpoint, hear func())
	}{
		{"tcp", func(t *testing.T) (Endpoint, transport.Endpoint, transport.Endpoint, func()) {
			srv := listenTCP(t, proto.ServerID(0), 256)
			w0 := listenTCP(t, proto.WorkerID(0), pulls)
			w1 := listenTCP(t, proto.WorkerID(1), 256)
			// The link's reader holds the first answer, and the
			// sockets' buffers (64 KiB) fill.
			hear := holdReader(t, w0)
			srv.SetPeer(proto.WorkerID(0), w0.Addr().String())
			srv.SetPeer(proto.WorkerID(1), w1.Addr().String())
			return tcpEndpoint{srv, func() {}}, w0, w1, hear
		}},
		{"mem", func(t *testing.T) (Endpoint, transport.Endpoint, transport.Endpoint, func()) {
			// Worker 0's Recv is not read: its link holds one message
			// delivered and one in flight, and then a Send waits.
			cfg := mem.DefaultConfig()
			cfg.InboxSize, cfg.QueueSize = 1, 1
			net, err := mem.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { net.Close() })
			var eps [3]*mem.Endpoint
			for i, id := range []transport.NodeID{proto.ServerID(0), proto.WorkerID(0), proto.WorkerID(1)} {
				if eps[i], err = net.Attach(id); err != nil {
					t.Fatal(err)
				}
			}
			return memEndpoint{eps[0]}, eps[1], eps[2], func() {}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srvEp, w0, w1, hear := tc.listen(t)
			m, _ := deafServer(t, srvEp, clock.Async)
			for id := range uint64(pulls) {
				m.data.Push(sparseRequest(0, 1+id, deafKeys, false))
			}
			m.data.Push(sparseRequest(1, 100, deafKeys, true))
			m.data.Push(sparseRequest(1, 101, deafKeys, false))
			awaitAnswers(t, w1, "worker 1, while worker 0 reads nothing,", slices.Repeat([]float32{1}, deafKeys), 100, 101)
			// The node's counters show the answers waiting for worker 0:
			// all but those its link took (a few).
			st := m.n.Stats()
			i := slices.IndexFunc(st.Replies, func(q ReplyQueueStats) bool { return q.To == proto.WorkerID(0) })
			if answer := uint64(localSize(&transport.Message{KV: kv.Batch{Vals: make([]float32, deafKeys)}})); i < 0 ||
				st.Replies[i].From != proto.ServerID(0) || st.Replies[i].Replies < pulls-4 || st.Replies[i].Bytes != uint64(st.Replies[i].Replies)*answer || st.Replies[i].MaxBytes < st.Replies[i].Bytes {
				t.Fatalf("the node's reply queues %+v, want server 0's to worker 0 holding at least %d answers of %d bytes", st.Replies, pulls-4, answer)
			}
			hear()
			ids := make([]uint64, pulls)
			for i := range ids {
				ids[i] = uint64(1 + i)
			}
			awaitAnswers(t, w0, "worker 0", make([]float32, deafKeys), ids...)
		})
	}
}

// deafEndpoint is an endpoint whose sends to deaf take nothing and end
// only with their context, as a write into the full socket of a process
// that stopped does; blocked receives a value as each begins.
type deafEndpoint struct {
	Endpoint
	deaf    transport.NodeID
	blocked chan struct{}
}

func (e deafEndpoint) Send(ctx context.Context, to transport.NodeID, m *transport.Message) error {
	if to != e.deaf {
		return e.Endpoint.Send(ctx, to, m)
	}
	select {
	case e.blocked <- struct{}{}:
	default:
	}
	<-ctx.Done()
	return &transport.PeerError{Peer: to, Op: "send", Err: context.Cause(ctx)}
}

// memNet returns an in-memory network closed when the test ends.
func memNet(t *testing.T) *mem.Network {
	t.Helper()
	net, err := mem.New(mem.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { net.Close() })
	return net
}

// TestDeafWorkerAckHoldsNoOther: a link's reader has the idle server
// handle worker 0's push (serveOnReader), whose acknowledgement it then
// sends itself, and worker 0 takes nothing more. Worker 1's push is
// still served and acknowledged: the reader waits for worker 0 with the
// server free (before, it sent while the server was held, and the
// server's loop waited for it, until the job ended: a pause did not end
// that send). Worker 0's replies abandoned, as a pause does, the
// reader goes on.
func TestDeafWorkerAckHoldsNoOther(t *testing.T) {
	net := memNet(t)
	srvEp, err := net.Attach(proto.ServerID(0))
	if err != nil {
		t.Fatal(err)
	}
	w1, err := net.Attach(proto.WorkerID(1))
	if err != nil {
		t.Fatal(err)
	}
	w0 := proto.WorkerID(0)
	ep := deafEndpoint{memEndpoint{srvEp}, w0, make(chan struct{}, 1)}
	m, srv := deafServer(t, ep, clock.Async)
	offered := make(chan bool, 1)
	go func() {
		// Offer declines while Run holds the core, which it does at its
		// start (nothing else is queued here): the reader offers again
		// until the idle server takes the push, instead of queueing it
		// for Run as a node's reader would.
		push := sparseRequest(0, 1, 8, true)
		ok := m.serveOnReader(m.n.ctx, srv, push)
		for !ok && m.n.ctx.Err() == nil {
			runtime.Gosched()
			ok = m.serveOnReader(m.n.ctx, srv, push)
		}
		offered <- ok
	}()
	guard := time.NewTimer(deafGuard)
	defer guard.Stop()
	select {
	case <-ep.blocked:
	case <-guard.C:
		t.Fatalf("no send to worker 0 began within %v", deafGuard)
	}
	m.data.Push(sparseRequest(1, 2, 8, true))
	awaitAnswers(t, w1, "worker 1, while worker 0 takes nothing,", nil, 2)
	m.n.abandon([]*member{m}, []transport.NodeID{w0}, errors.New("worker 0 failed"))
	select {
	case ok := <-offered:
		if !ok {
			t.Fatal("the idle server declined worker 0's push on the reader")
		}
	case <-guard.C:
		t.Fatalf("the reader still sending to worker 0 %v after its replies were abandoned", deafGuard)
	}
	if m.n.ctx.Err() != nil {
		t.Fatalf("the abandoned acknowledgement ended the job: %v", context.Cause(m.n.ctx))
	}
}

// TestDeafEvaluatorHoldsNoWorker: an evaluator of a BSP job takes
// nothing more when server 0 answers its pull of the whole store (a
// view of the store, lent under BSP, whose send begins and cannot end).
// Both workers' pushes of the round are still applied and acknowledged,
// and their pulls answered with the sum: an evaluator is in no round, so
// a push does not wait for its answer to leave (before, it was lent to
// the evaluator as to the round's workers, and every push waited for it
// until the scheduler declared the evaluator failed).
func TestDeafEvaluatorHoldsNoWorker(t *testing.T) {
	net := memNet(t)
	ids := []transport.NodeID{proto.ServerID(0), proto.WorkerID(0), proto.WorkerID(1)}
	eps := make([]*mem.Endpoint, len(ids))
	for i, id := range ids {
		var err error
		if eps[i], err = net.Attach(id); err != nil {
			t.Fatal(err)
		}
	}
	ev := proto.EvaluatorID(0)
	ep := deafEndpoint{memEndpoint{eps[0]}, ev, make(chan struct{}, 1)}
	m, _ := deafServer(t, ep, clock.BSP)
	pull := rangeRequest(0, 1, deafKeys, false)
	pull.Sender = ev
	m.data.Push(pull)
	guard := time.NewTimer(deafGuard)
	defer guard.Stop()
	select {
	case <-ep.blocked:
	case <-guard.C:
		t.Fatalf("no send to the evaluator began within %v", deafGuard)
	}
	for w := range 2 {
		m.data.Push(rangeRequest(w, 10, deafKeys, true))
	}
	for w := range 2 {
		m.data.Push(rangeRequest(w, 11, deafKeys, false))
	}
	sum := slices.Repeat([]float32{2}, deafKeys)
	for w := range 2 {
		awaitAnswers(t, eps[1+w], fmt.Sprintf("worker %d, while the evaluator takes nothing,", w), sum, 10, 11)
	}
}

// pullWatch signals on began as each answer to a pull to peer begins
// to leave. With deaf, that send takes nothing and ends only with its
// context (a link that lends nothing, whose peer stopped reading);
// without, it goes through Endpoint.
type pullWatch struct {
	Endpoint
	peer  transport.NodeID
	deaf  bool
	began chan struct{}
}

func (e pullWatch) watch(to transport.NodeID, m *transport.Message) bool {
	if to != e.peer || m.Flags&transport.FlagPull == 0 {
		return false
	}
	select {
	case e.began <- struct{}{}:
	default:
	}
	return true
}

func (e pullWatch) Send(ctx context.Context, to transport.NodeID, m *transport.Message) error {
	if e.watch(to, m) && e.deaf {
		<-ctx.Done()
		return &transport.PeerError{Peer: to, Op: "send", Err: context.Cause(ctx)}
	}
	return e.Endpoint.Send(ctx, to, m)
}

// lentPullWatch is a pullWatch over a link that writes lent values
// (transport.LentSender).
type lentPullWatch struct{ pullWatch }

func (e lentPullWatch) SendLent(ctx context.Context, to transport.NodeID, m *transport.Message, l *transport.Lent) error {
	e.watch(to, m)
	return e.Endpoint.(transport.LentSender).SendLent(ctx, to, m, l)
}

// TestDeafWorkerHoldsNoEvaluator: under BSP, server 0's answer to
// worker 0's pull of round 0 (the whole store, 1 MB, a view of the
// store lent to the link) is half written when worker 0 stops reading.
// Worker 1, answered, pushes round 1, and an evaluator then pulls the
// whole store: it gets its answer, holding the store of round 0, while
// worker 0 still reads nothing (before, every push waited for the views
// leaving, and the evaluator's pull waited behind worker 1's push until
// the scheduler declared worker 0 failed; worker 1's push of round 1
// changes nothing before worker 0's, which needs the answer). Once
// worker 0 reads again it gets its answer, holding the same store.
func TestDeafWorkerHoldsNoEvaluator(t *testing.T) {
	for _, tc := range []struct {
		name string
		// listen returns server 0's endpoint and those of workers 0
		// and 1 and of the evaluator; worker 0 reads nothing of its
		// answer until hear is called, when hear is not nil.
		listen func(t *testing.T) (srv Endpoint, began <-chan struct{}, w0, w1, ev transport.Endpoint, hear func())
	}{
		{"tcp", func(t *testing.T) (Endpoint, <-chan struct{}, transport.Endpoint, transport.Endpoint, transport.Endpoint, func()) {
			srv := listenTCP(t, proto.ServerID(0), 256)
			w0 := listenTCP(t, proto.WorkerID(0), 256)
			w1 := listenTCP(t, proto.WorkerID(1), 256)
			ev := listenTCP(t, proto.EvaluatorID(0), 256)
			// The link's reader holds the first message (the push's
			// acknowledgement), and the sockets' buffers (64 KiB)
			// fill with the answer.
			hear := holdReader(t, w0)
			for _, p := range []*tcp.Endpoint{w0, w1, ev} {
				srv.SetPeer(p.ID(), p.Addr().String())
			}
			w := lentPullWatch{pullWatch{tcpEndpoint{srv, func() {}}, proto.WorkerID(0), false, make(chan struct{}, 1)}}
			return w, w.began, w0, w1, ev, hear
		}},
		{"deaf", func(t *testing.T) (Endpoint, <-chan struct{}, transport.Endpoint, transport.Endpoint, transport.Endpoint, func()) {
			net := memNet(t)
			ids := []transport.NodeID{proto.ServerID(0), proto.WorkerID(0), proto.WorkerID(1), proto.EvaluatorID(0)}
			eps := make([]*mem.Endpoint, len(ids))
			for i, id := range ids {
				var err error
				if eps[i], err = net.Attach(id); err != nil {
					t.Fatal(err)
				}
			}
			w := pullWatch{memEndpoint{eps[0]}, ids[1], true, make(chan struct{}, 1)}
			return w, w.began, eps[1], eps[2], eps[3], nil
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srvEp, began, w0, w1, ev, hear := tc.listen(t)
			m, _ := deafServer(t, srvEp, clock.BSP)
			for w := range 2 {
				m.data.Push(rangeRequest(w, 1, deafKeys, true))
			}
			for w := range 2 {
				m.data.Push(rangeRequest(w, 2, deafKeys, false))
			}
			guard := time.NewTimer(deafGuard)
			defer guard.Stop()
			select {
			case <-began:
			case <-guard.C:
				t.Fatalf("no answer to worker 0's pull began to leave within %v", deafGuard)
			}
			sum := slices.Repeat([]float32{2}, deafKeys)
			awaitAnswers(t, w1, "worker 1", sum, 1, 2)
			push := rangeRequest(1, 3, deafKeys, true)
			push.Body = proto.AppendMeta(nil, 1)
			m.data.Push(push)
			pull := rangeRequest(0, 4, deafKeys, false)
			pull.Sender = proto.EvaluatorID(0)
			m.data.Push(pull)
			awaitAnswers(t, ev, "the evaluator, while worker 0 reads nothing,", sum, 4)
			if hear != nil {
				hear()
				awaitAnswers(t, w0, "worker 0", sum, 1, 2)
			}
		})
	}
}

// TestKilledWorkerRepliesFail: worker 0's process is killed (its
// endpoint closes, its sockets with it) while server 0's answers to it
// are stuck in a full socket and 10 MB more are queued. The send in
// flight fails on the reset link, and those queued fail at the dial of
// the address nobody listens at any more: the queue empties at once,
// without the scheduler's verdict, and the node waits for that verdict
// on a peer that closed its link (Node.lost), the job not ended by this
// node.
func TestKilledWorkerRepliesFail(t *testing.T) {
	const pulls = 12
	srv := listenTCP(t, proto.ServerID(0), 256)
	w0 := listenTCP(t, proto.WorkerID(0), pulls)
	// The link's reader holds the first answer until the test ends:
	// the process is gone, its socket closed under it.
	held := make(chan struct{})
	w0.SetSink(func(*transport.Message) bool {
		<-held
		return true
	})
	srv.SetPeer(proto.WorkerID(0), w0.Addr().String())
	var closed sync.WaitGroup
	t.Cleanup(closed.Wait)
	t.Cleanup(sync.OnceFunc(func() { close(held) }))
	m, _ := deafServer(t, tcpEndpoint{srv, func() {}}, clock.Async)
	for id := range uint64(pulls) {
		m.data.Push(sparseRequest(0, 1+id, deafKeys, false))
	}
	// The reader holds the first answer; the second (1 MB) fills the
	// sockets (64 KiB) and cannot leave.
	queued := func() (left int, running, stuck bool) {
		m.replies.mu.Lock()
		defer m.replies.mu.Unlock()
		q := m.replies.qs[proto.WorkerID(0)]
		if q == nil {
			return 0, false, false
		}
		return len(q.items), q.running, len(q.items) == pulls-1 && q.items[0].leaving
	}
	deadline := time.Now().Add(deafGuard)
	for _, _, stuck := queued(); !stuck; _, _, stuck = queued() {
		if time.Now().After(deadline) {
			t.Fatalf("the second answer to worker 0 never began to leave")
		}
		time.Sleep(time.Millisecond)
	}
	closed.Go(func() { w0.Close() }) // returns once the sink lets go
	deadline = time.Now().Add(deafGuard)
	for {
		left, running, _ := queued()
		if left == 0 && !running {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d answers to the killed worker still queued after %v", left, deafGuard)
		}
		time.Sleep(time.Millisecond)
	}
	n := m.n
	n.mu.Lock()
	ended, err := n.ended, n.err
	n.mu.Unlock()
	if ended || !n.awaiting.Load() {
		t.Fatalf("after the failed sends to a peer that closed its link: ended %v (%v), awaiting the scheduler %v; want awaiting", ended, err, n.awaiting.Load())
	}
}

// serverNode returns a node of server 0 alone, in a BSP job with
// replicas, whose one member sends through ep, with other in its book
// at the address "old"; the test's end cancels the node and waits for
// its goroutines.
func serverNode(t *testing.T, ep Endpoint, other transport.NodeID) (*Node, *member) {
	ctx, cancel := context.WithCancelCause(context.Background())
	n := &Node{ctx: ctx, cancel: cancel, started: make(chan struct{}), done: make(chan struct{}), resumed: make(chan struct{}), cfg: Config{Logf: t.Logf},
		assign: proto.Assign{Server: proto.ServerID(0), Job: proto.Job{Mode: clock.BSP.String(), Timeout: time.Hour, Replicas: 1}},
		book:   map[transport.NodeID]proto.Peer{other: {ID: other, Addr: "old"}},
		failed: make(map[transport.NodeID]string), failedSeq: make(map[transport.NodeID]int), failovers: make(map[int]bool), opened: make(map[int]bool)}
	close(n.started)
	close(n.resumed)
	m := &member{n: n, id: proto.ServerID(0), ep: ep, out: mailbox.NewOutbox(ep, time.Second), data: mailbox.New[*transport.Message]()}
	t.Cleanup(func() { cancel(context.Canceled); n.wg.Wait(); m.out.Close(); m.data.Close() })
	n.members = []*member{m}
	return n, m
}

// TestFailoverAbandonsReplies: server 0's replies to server 1 (updates
// of the ranges server 1 backs up) are stuck, one leaving into a link
// that takes nothing (server 1's process stopped) and one queued, when
// the scheduler announces server 1's failover. The announcement ends
// them, as server 1's death would: the queue empties at once instead of
// waiting on the stopped process, holding its replies, for the rest of
// the job, and the job goes on.
func TestFailoverAbandonsReplies(t *testing.T) {
	net := memNet(t)
	srvEp, err := net.Attach(proto.ServerID(0))
	if err != nil {
		t.Fatal(err)
	}
	s1 := proto.ServerID(1)
	ep := deafEndpoint{memEndpoint{srvEp}, s1, make(chan struct{}, 1)}
	n, m := serverNode(t, ep, s1)
	ctx := n.ctx
	c := serverConn{m}
	for id := range uint64(2) {
		if err := c.Reply(ctx, s1, message(1+id, 1<<20)); err != nil {
			t.Fatal(err)
		}
	}
	guard := time.NewTimer(deafGuard)
	defer guard.Stop()
	select {
	case <-ep.blocked:
	case <-guard.C:
		t.Fatalf("no send to server 1 began within %v", deafGuard)
	}
	f := proto.Failover{Server: 1, Backup: 0, Seq: 1, Reason: "no heartbeat"}
	n.failover(m, f, proto.Control(proto.CmdFailover, f))
	deadline := time.Now().Add(deafGuard)
	for {
		st := n.Stats()
		i := slices.IndexFunc(st.Replies, func(q ReplyQueueStats) bool { return q.To == s1 })
		if i >= 0 && st.Replies[i].Replies == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("server 0's replies to the failed server 1 still queued %v after the failover: %+v", deafGuard, st.Replies)
		}
		time.Sleep(time.Millisecond)
	}
	if ctx.Err() != nil {
		t.Fatalf("the abandoned replies ended the job: %v", context.Cause(ctx))
	}
}

// movingEndpoint is a deafEndpoint until SetPeer gives its deaf peer a
// new address (a failover's second step: the backup's endpoint): the
// sends begun after go through, those begun before stay stuck, as a
// write into the old link to the stopped process does.
type movingEndpoint struct {
	deafEndpoint
	moved *atomic.Bool
}

func (e movingEndpoint) SetPeer(id transport.NodeID, addr string) {
	if id == e.deaf {
		e.moved.Store(true)
	}
	e.deafEndpoint.SetPeer(id, addr)
}

func (e movingEndpoint) Send(ctx context.Context, to transport.NodeID, m *transport.Message) error {
	if to == e.deaf && e.moved.Load() {
		return e.Endpoint.Send(ctx, to, m)
	}
	return e.deafEndpoint.Send(ctx, to, m)
}

// TestFailoverWindowRepliesFail: server 0 posts a reply to server 1
// after the scheduler announced server 1's failover (step 1, which
// abandoned the replies queued then) and before it gave the backup's
// new endpoint (step 2): server 1's process is stopped, and its link
// takes nothing. The reply fails at once, as those abandoned at step 1
// did, without a send to the failed server, and without ending the
// job (before, it was queued behind nothing and sent into the stopped
// process's link, where it waited for ever, and every reply to server
// 1's id behind it, the backup's too). After step 2 the replies to
// server 1's id are sent again, to the backup, and the one posted in
// between never reaches it.
func TestFailoverWindowRepliesFail(t *testing.T) {
	s1 := proto.ServerID(1)
	n, m, ep, backup := failingPeer(t, s1) // backup: the backup's endpoint serving server 1's id
	ctx := n.ctx
	c := serverConn{m}
	if err := c.Reply(ctx, s1, message(1, 1<<20)); err != nil {
		t.Fatal(err)
	}
	guard := time.NewTimer(deafGuard)
	defer guard.Stop()
	select {
	case <-ep.blocked:
	case <-guard.C:
		t.Fatalf("no send to server 1 began within %v", deafGuard)
	}
	f := proto.Failover{Server: 1, Backup: 0, Seq: 1, Reason: "no heartbeat"}
	n.failover(m, f, proto.Control(proto.CmdFailover, f))
	sent := make(chan struct{})
	if err := c.ReplyThen(ctx, s1, message(2, 1<<20), func() { close(sent) }); err != nil {
		t.Fatal(err)
	}
	select {
	case <-sent:
	case <-guard.C:
		t.Fatalf("server 0's reply to the failed server 1, posted between the failover's two steps, neither sent nor failed within %v", deafGuard)
	}
	select {
	case <-ep.blocked:
		t.Fatal("the reply posted between the failover's two steps was sent to the failed server")
	default:
	}
	f.Addr = "backup"
	n.failover(m, f, proto.Control(proto.CmdFailover, f))
	n.wg.Wait() // moveTo
	if err := c.Reply(ctx, s1, message(3, 1<<10)); err != nil {
		t.Fatal(err)
	}
	awaitAnswers(t, backup, "the backup serving server 1's id", nil, 3)
	if ctx.Err() != nil {
		t.Fatalf("the failed replies ended the job: %v", context.Cause(ctx))
	}
}

// failingPeer returns serverNode's node of server 0 in an in-memory
// network, its member's endpoint deaf to peer (a stopped process's
// link) until SetPeer moves peer, and the endpoint that serves peer's id
// once moved (a backup or a replacement).
func failingPeer(t *testing.T, peer transport.NodeID) (*Node, *member, movingEndpoint, transport.Endpoint) {
	t.Helper()
	net := memNet(t)
	srvEp, err := net.Attach(proto.ServerID(0))
	if err != nil {
		t.Fatal(err)
	}
	moved, err := net.Attach(peer)
	if err != nil {
		t.Fatal(err)
	}
	ep := movingEndpoint{deafEndpoint{memEndpoint{srvEp}, peer, make(chan struct{}, 1)}, new(atomic.Bool)}
	n, m := serverNode(t, ep, peer)
	return n, m, ep, moved
}

// replyFailsUnsent posts a reply to to through c and waits until it
// ends (failed, as one to a failed server must), checking that no send
// to to began.
func replyFailsUnsent(t *testing.T, c serverConn, ep movingEndpoint, to transport.NodeID, id uint64) {
	t.Helper()
	sent := make(chan struct{})
	if err := c.ReplyThen(c.m.n.ctx, to, message(id, 1<<20), func() { close(sent) }); err != nil {
		t.Fatal(err)
	}
	select {
	case <-sent:
	case <-time.After(deafGuard):
		t.Fatalf("reply %d to the failed %s neither sent nor failed within %v", id, proto.Name(to), deafGuard)
	}
	select {
	case <-ep.blocked:
		t.Fatalf("reply %d was sent to the failed %s", id, proto.Name(to))
	default:
	}
}

// TestFailoverNeverMovedRepliesReopen: server 1's failover reached its
// step 1 (its replies fail from then on, replies.fail), but never its
// step 2: its backup went silent while taking over, and the job paused
// to replace server 1. Once the job resumes with the replacement in the
// book, server 0's replies to server 1's id reach the replacement
// (before, they failed unsent for the rest of the job, and the
// primary's updates to the replacement with them).
func TestFailoverNeverMovedRepliesReopen(t *testing.T) {
	s1 := proto.ServerID(1)
	n, m, ep, replacement := failingPeer(t, s1)
	c := serverConn{m}
	f := proto.Failover{Server: 1, Backup: 2, Seq: 1, Reason: "no heartbeat"}
	n.failover(m, f, proto.Control(proto.CmdFailover, f))
	replyFailsUnsent(t, c, ep, s1, 1)
	n.pause(proto.Pause{Node: s1, Epoch: 1, Reason: "server 2 failed while taking over"})
	n.resume(proto.Resume{Epoch: 1, Peers: []proto.Peer{{ID: s1, Addr: "replacement"}}})
	if err := c.Reply(n.ctx, s1, message(2, 1<<10)); err != nil {
		t.Fatal(err)
	}
	awaitAnswers(t, replacement, "server 1's replacement", nil, 2)
}

// TestFailoverStepsCrossed: a machine's two members get a failover's
// steps in either order, and step 2's moveTo runs off the member loop.
// Step 1 handled on one member after the other received step 2 but
// before its moveTo pointed the id at the backup still fails the
// replies to the id (the address is still the stopped process's); once
// moveTo has run, they reach the backup.
func TestFailoverStepsCrossed(t *testing.T) {
	s1 := proto.ServerID(1)
	n, m, ep, backup := failingPeer(t, s1)
	c := serverConn{m}
	f := proto.Failover{Server: 1, Backup: 0, Seq: 1, Reason: "no heartbeat"}
	// Step 2 received on the other member, its moveTo not run yet.
	n.mu.Lock()
	n.failovers[f.Seq] = true
	n.mu.Unlock()
	n.failover(m, f, proto.Control(proto.CmdFailover, f))
	replyFailsUnsent(t, c, ep, s1, 1)
	f.Addr = "backup"
	n.moveTo(f, proto.Peer{ID: s1, Addr: f.Addr})
	if err := c.Reply(n.ctx, s1, message(2, 1<<10)); err != nil {
		t.Fatal(err)
	}
	awaitAnswers(t, backup, "the backup serving server 1's id", nil, 2)
	// A step 1 that comes after moveTo abandons what is queued and
	// fails nothing later.
	n.failover(m, proto.Failover{Server: 1, Backup: 0, Seq: 1}, proto.Control(proto.CmdFailover, proto.Failover{Server: 1, Backup: 0, Seq: 1}))
	if err := c.Reply(n.ctx, s1, message(3, 1<<10)); err != nil {
		t.Fatal(err)
	}
	awaitAnswers(t, backup, "the backup serving server 1's id", nil, 3)
}
