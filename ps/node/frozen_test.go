package node

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"colo/ps/clock"
	"colo/ps/proto"
	"colo/transport"
	"colo/transport/tcp"
)

// frozenGuard bounds the waits for what must happen at once: a failure
// of the test, never a pace.
const frozenGuard = 20 * time.Second

// listenTCP returns a loopback endpoint of node id whose Recv holds
// inbox messages (0 for the default), with socket buffers of 64 KiB: the kernel's
// autotuning would let a receive buffer grow to tcp_rmem's largest
// (32 MiB here), taking a whole answer the process never reads.
func listenTCP(t *testing.T, id transport.NodeID, inbox int) *tcp.Endpoint {
	t.Helper()
	cfg := tcp.DefaultConfig()
	cfg.ID, cfg.Addr, cfg.InboxSize, cfg.SocketBuffer = id, "127.0.0.1:0", inbox, 64<<10
	ep, err := tcp.Listen(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ep.Close() })
	return ep
}

// leaving returns once a reply of at least size bytes queued to node to,
// other than before, is leaving (its send has begun), and returns it.
func leaving(t *testing.T, r *replies, to transport.NodeID, size int, before *queuedReply) *queuedReply {
	t.Helper()
	deadline := time.Now().Add(frozenGuard)
	for time.Now().Before(deadline) {
		r.mu.Lock()
		var it *queuedReply
		if q := r.qs[to]; q != nil && len(q.items) > 0 {
			it = q.items[0]
		}
		on := it != nil && it != before && it.size >= size && it.leaving
		r.mu.Unlock()
		if on {
			return it
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatalf("no answer of %d bytes to %s began to leave", size, proto.Name(to))
	return nil
}

// TestFrozenWorkerAbandoned: a server of a BSP job answers worker 0
// over TCP with a view of its store (a dense range pull's answer, 32 MB)
// while worker 0's process is stopped with its socket open (its reader
// holds an answer it cannot hand over: it reads nothing more). The view
// begins to leave and cannot end; a push's Detach does not copy it (it
// is leaving), so the push would wait for it for ever. The scheduler's
// Pause naming worker 0 abandons the answer: the view's ReplyView
// returns, and the push goes on. An answer posted during the pause to
// the stopped process is stuck the same way until the Resume gives
// worker 0 a replacement's address; later answers reach the
// replacement.
func TestFrozenWorkerAbandoned(t *testing.T) {
	ctx := context.Background()
	w0 := proto.WorkerID(0)
	srv := listenTCP(t, proto.ServerID(0), 256)
	// The stopped process: its link's reader holds the first message
	// it decoded and reads nothing more.
	frozen := listenTCP(t, w0, 1)
	stopped := make(chan struct{})
	t.Cleanup(func() { close(stopped) }) // before the endpoints close
	frozen.SetSink(func(*transport.Message) bool {
		<-stopped
		return true
	})
	n := &Node{ctx: ctx, started: make(chan struct{}), cfg: Config{Logf: t.Logf}, assign: proto.Assign{Job: proto.Job{Mode: clock.BSP.String()}}}
	close(n.started)
	n.book = map[transport.NodeID]proto.Peer{w0: {ID: w0, Addr: frozen.Addr().String()}}
	m := &member{n: n, id: proto.ServerID(0), ep: tcpEndpoint{srv, func() {}}}
	n.members = []*member{m}
	srv.SetPeer(w0, frozen.Addr().String())
	c := serverConn{m}

	// The stopped process's reader takes this one and holds it.
	if err := c.Reply(ctx, w0, message(1, 16)); err != nil {
		t.Fatal(err)
	}
	view := func(id uint64) <-chan error {
		done := make(chan error, 1)
		go func() { done <- c.ReplyView(ctx, w0, message(id, 32<<20), nil) }()
		return done
	}
	done := view(2)
	first := leaving(t, &m.replies, w0, 32<<20, nil)
	attach := c.Detach() // a push, as server.Server's unview
	select {
	case err := <-done:
		t.Fatalf("the view returned (%v) while the stopped worker could read none of it", err)
	default:
	}
	n.pause(proto.Pause{Node: w0, Addr: frozen.Addr().String(), Reason: "no heartbeat", Epoch: 1, Peers: []transport.NodeID{w0}})
	select {
	case <-done:
	case <-time.After(frozenGuard):
		t.Fatalf("the view to the stopped worker still leaving %v after the pause that declared it failed: every push of the server waits for it", frozenGuard)
	}
	attach()

	// During the pause, an answer to the old address (the process
	// still there, its socket open: it takes a new link, whose reader
	// holds the first answer) is stuck again, until the Resume.
	if err := c.Reply(ctx, w0, message(5, 16)); err != nil {
		t.Fatal(err)
	}
	done = view(3)
	leaving(t, &m.replies, w0, 32<<20, first)
	replacement := listenTCP(t, w0, 256)
	n.resume(proto.Resume{Epoch: 1, Peers: []proto.Peer{{ID: w0, Addr: replacement.Addr().String()}}})
	select {
	case <-done:
	case <-time.After(frozenGuard):
		t.Fatalf("the view to the replaced worker's old process still leaving %v after the Resume", frozenGuard)
	}
	if err := c.Reply(ctx, w0, message(4, 16)); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-replacement.Recv():
		if got.ID != 4 {
			t.Fatalf("the replacement got answer %d, want 4", got.ID)
		}
	case <-time.After(frozenGuard):
		t.Fatal("the replacement got no answer")
	}
	n.mu.Lock()
	ended, err := n.ended, n.err
	n.mu.Unlock()
	if ended {
		t.Fatalf("an abandoned answer ended the node: %v", err)
	}
}

// TestAsyncViewReclaimed: a server of an asynchronous job answers worker
// 0 over TCP with a view of its store (32 MB) while worker 0's reader
// holds a message it cannot hand over, so that the view begins to leave
// and cannot end. A push's Detach takes the view back at once: it
// copies what the socket has not taken, the view's ReplyView returns,
// and the store may change; once worker 0 reads again it gets the
// values the store held when the view was posted, none of the change.
func TestAsyncViewReclaimed(t *testing.T) {
	ctx, w0, m, worker, unstick := stuckAsyncServer(t)
	c := serverConn{m}
	view := message(2, 32<<20)
	store := view.KV.Vals
	for i := range store {
		store[i] = float32(i % 1000)
	}
	want := slices.Clone(store)
	done := make(chan error, 1)
	go func() { done <- c.ReplyView(ctx, w0, view, nil) }()
	it := leaving(t, &m.replies, w0, 32<<20, nil)
	if it.lend == nil {
		t.Fatal("the view of an asynchronous job over TCP leaves as a copy, want it lent")
	}
	detached := make(chan func())
	go func() { detached <- c.Detach() }() // a push, as server.Server's unview
	select {
	case attach := <-detached:
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(frozenGuard):
			t.Fatalf("the view still held %v after Detach: the push would wait for its wire time", frozenGuard)
		}
		for i := range store {
			store[i] = -1 // the push changes the store
		}
		attach()
	case <-time.After(frozenGuard):
		t.Fatalf("Detach still waiting after %v for a view the worker does not read", frozenGuard)
	}
	unstick()
	receiveAnswers(t, worker, want)
}

// TestAsyncViewQueuedBehind: a server of an asynchronous job answers
// worker 0 over TCP with two views of its store (8 MB each: the second
// is queued behind the first) while worker 0's reader holds a message
// it cannot hand over. A push's Detach takes the first back (it is
// leaving) and copies the second: both views' ReplyView calls return,
// and the store may change, without waiting for the first answer's wire
// time (for ever here). Once worker 0 reads
// again it gets both answers in order, with the values the store held
// when they were posted.
func TestAsyncViewQueuedBehind(t *testing.T) {
	ctx, w0, m, worker, unstick := stuckAsyncServer(t)
	c := serverConn{m}
	const size = 8 << 20
	var stores, wants [2][]float32
	done := make(chan error, 2)
	post := func(i int) {
		view := message(uint64(2+i), size)
		stores[i] = view.KV.Vals
		for j := range stores[i] {
			stores[i][j] = float32(j%1000 + i)
		}
		wants[i] = slices.Clone(stores[i])
		go func() { done <- c.ReplyView(ctx, w0, view, nil) }()
	}
	post(0)
	first := leaving(t, &m.replies, w0, size, nil)
	if first.lend == nil {
		t.Fatal("the view of an asynchronous job over TCP leaves as a copy, want it lent")
	}
	post(1)
	// The second view is queued, lent, behind the first.
	deadline := time.Now().Add(frozenGuard)
	for {
		m.replies.mu.Lock()
		lent := m.replies.lent
		m.replies.mu.Unlock()
		if lent > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the second view was never queued")
		}
		time.Sleep(time.Millisecond)
	}
	detached := make(chan func())
	go func() { detached <- c.Detach() }() // a push, as server.Server's unview
	var attach func()
	select {
	case attach = <-detached:
	case <-time.After(frozenGuard):
		t.Fatalf("Detach still waiting after %v for views the worker does not read", frozenGuard)
	}
	for range 2 {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(frozenGuard):
			t.Fatalf("a view still held %v after Detach: the push would wait for the first answer's wire time", frozenGuard)
		}
	}
	for i := range stores {
		for j := range stores[i] {
			stores[i][j] = -1 // the push changes the store
		}
	}
	attach()
	unstick()
	receiveAnswers(t, worker, wants[:]...)
}

// stuckAsyncServer returns the server 0 of an asynchronous job over TCP
// (its member m) and the endpoint of its worker 0 (w0), whose reader
// holds message 1, which the server has sent it already, until unstick
// is called: what the server sends after it begins to leave and cannot
// end. The context's sends end (t.Cleanup) before the worker reads again
// and before the endpoints close, should the test fail while they are
// stuck.
func stuckAsyncServer(t *testing.T) (ctx context.Context, w0 transport.NodeID, m *member, worker *tcp.Endpoint, unstick func()) {
	t.Helper()
	w0 = proto.WorkerID(0)
	srv := listenTCP(t, proto.ServerID(0), 256)
	worker = listenTCP(t, w0, 256)
	stuck := make(chan struct{})
	var once sync.Once
	unstick = func() { once.Do(func() { close(stuck) }) }
	t.Cleanup(unstick) // before the endpoints close
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	worker.SetSink(func(m *transport.Message) bool {
		if m.ID == 1 {
			<-stuck
		}
		return false
	})
	n := &Node{ctx: ctx, started: make(chan struct{}), cfg: Config{Logf: t.Logf}, assign: proto.Assign{Job: proto.Job{Mode: clock.Async.String()}}}
	close(n.started)
	n.book = map[transport.NodeID]proto.Peer{w0: {ID: w0, Addr: worker.Addr().String()}}
	m = &member{n: n, id: proto.ServerID(0), ep: tcpEndpoint{srv, func() {}}}
	n.members = []*member{m}
	srv.SetPeer(w0, worker.Addr().String())
	if err := (serverConn{m}).Reply(ctx, w0, message(1, 16)); err != nil {
		t.Fatal(err)
	}
	return ctx, w0, m, worker, unstick
}

// receiveAnswers checks that worker receives message 1 (stuckAsyncServer's)
// and then the answers 2, 3, … in order, answer 2+i holding the values
// wants[i]: those of the store when it was posted.
func receiveAnswers(t *testing.T, worker *tcp.Endpoint, wants ...[]float32) {
	t.Helper()
	for id := uint64(1); id <= uint64(1+len(wants)); id++ {
		select {
		case got := <-worker.Recv():
			if got.ID != id {
				t.Fatalf("worker 0 got message %d, want %d", got.ID, id)
			}
			if id >= 2 && !slices.Equal(got.KV.Vals, wants[id-2]) {
				t.Fatalf("answer %d holds values written after it was posted", id)
			}
		case <-time.After(frozenGuard):
			t.Fatalf("worker 0 got no message %d", id)
		}
	}
}
