package node

import (
	"context"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"colo/kv"
	"colo/ps/clock"
	"colo/ps/internal/mailbox"
	"colo/ps/proto"
	"colo/ps/route"
	"colo/ps/server"
	"colo/transport"
	"colo/transport/mem"
)

// replyServer returns the member of a server 0 on host 0, whose 1 MB/s
// interface it shares with nobody, and workers 0 and 1 on hosts 1 and 2,
// of a BSP job (its views are lent).
func replyServer(t *testing.T) (serverConn, []*mem.Endpoint) {
	t.Helper()
	net, err := mem.New(mem.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { net.Close() })
	ids := []transport.NodeID{proto.ServerID(0), proto.WorkerID(0), proto.WorkerID(1)}
	eps := make([]*mem.Endpoint, len(ids))
	for h, id := range ids {
		net.SetHost(id, h)
		if eps[h], err = net.Attach(id); err != nil {
			t.Fatal(err)
		}
	}
	net.SetNIC(0, 1e6, 0)
	n := &Node{ctx: context.Background(), started: make(chan struct{}), assign: proto.Assign{Job: proto.Job{Mode: clock.BSP.String()}}}
	close(n.started)
	m := &member{n: n, id: ids[0], ep: memEndpoint{eps[0]}}
	return serverConn{m}, eps[1:]
}

// message returns a data message of about size bytes with request id.
func message(id uint64, size int) *transport.Message {
	return &transport.Message{Header: transport.Header{Type: transport.TypeData, Cmd: proto.DataSparse, ID: id}, KV: kv.Batch{Vals: make([]float32, size/4)}}
}

// TestRepliesShareTheWire: a server answers worker 0 with 1 MB and then
// worker 1 with a few bytes through its 1 MB/s interface. Reply returns
// at once both times, and the answer to worker 1 arrives within a few
// frames, not after the second that worker 0's takes: it does not wait
// for that answer's wire time. Worker 0's two answers arrive in order.
func TestRepliesShareTheWire(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, workers := replyServer(t)
		ctx := context.Background()
		start := time.Now()
		for _, r := range []struct {
			to   transport.NodeID
			id   uint64
			size int
		}{{proto.WorkerID(0), 1, 1_000_000}, {proto.WorkerID(1), 2, 16}, {proto.WorkerID(0), 3, 16}} {
			if err := c.Reply(ctx, r.to, message(r.id, r.size)); err != nil {
				t.Fatal(err)
			}
		}
		if d := time.Since(start); d != 0 {
			t.Fatalf("Reply blocked for %v", d)
		}
		m := <-workers[1].Recv()
		if d := time.Since(start); m.ID != 2 || d > 10*time.Millisecond {
			t.Fatalf("answer %d to worker 1 after %v, want within 10ms", m.ID, d)
		}
		for _, want := range []uint64{1, 3} {
			m := <-workers[0].Recv()
			if m.ID != want {
				t.Fatalf("worker 0 got answer %d, want %d", m.ID, want)
			}
			if d := time.Since(start); d < time.Second || d > 1100*time.Millisecond {
				t.Fatalf("answer %d to worker 0 after %v, want 1–1.1 s", m.ID, d)
			}
		}
	})
}

// TestRepliesNeverWait: replies to one worker are queued at once,
// however many bytes wait for it (three of 2 MB behind a 1 MB/s
// interface): the poster never waits for that worker's wire time.
// ReplyThen's sent is called as each leaves, in order, and a Reply whose
// context has ended queues nothing and returns its cause.
func TestRepliesNeverWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, workers := replyServer(t)
		ctx := context.Background()
		const size = 2 << 20
		wire := time.Duration(localSize(message(0, size))) * time.Microsecond
		start := time.Now()
		var sent []time.Duration
		for i := range 3 {
			err := c.ReplyThen(ctx, proto.WorkerID(0), message(uint64(i), size), func() { sent = append(sent, time.Since(start)) })
			if err != nil {
				t.Fatal(err)
			}
			if d := time.Since(start); d != 0 {
				t.Fatalf("reply %d queued after %v, want at once", i, d)
			}
		}
		for i := range 3 {
			if m := <-workers[0].Recv(); m.ID != uint64(i) {
				t.Fatalf("answer %d, want %d", m.ID, i)
			}
		}
		synctest.Wait()
		for i, d := range sent {
			if want := time.Duration(i+1) * wire; d < want || d > want+time.Millisecond {
				t.Fatalf("sent at %v, want reply %d's after %v", sent, i, want)
			}
		}
		if len(sent) != 3 {
			t.Fatalf("sent at %v, want 3", sent)
		}
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		if err := c.Reply(cctx, proto.WorkerID(0), message(8, 16)); err == nil {
			t.Fatal("Reply with an ended context returned no error")
		}
		synctest.Wait()
		select {
		case m := <-workers[0].Recv():
			t.Fatalf("answer %d sent after its context ended", m.ID)
		default:
		}
	})
}

// TestAnswersAfterPushes: on a machine whose 1 MB/s interface carries
// its worker's push of 1 MB to server 1 and, posted just after, its
// server's answer of 1 MB to worker 1's pull, the push has the
// interface alone and arrives after 1 s, the answer after 2 s; an
// acknowledgement queued before the answer is not held behind the push.
// Under the other consistency models they share the interface, both
// arriving after 2 s.
func TestAnswersAfterPushes(t *testing.T) {
	for _, tc := range []struct {
		mode clock.Mode
		push time.Duration
	}{{clock.BSP, time.Second}, {clock.Async, 2 * time.Second}, {clock.Bounded, 2 * time.Second}} {
		t.Run(tc.mode.String(), func(t *testing.T) { answersAfterPushes(t, tc.mode, tc.push) })
	}
}

func answersAfterPushes(t *testing.T, mode clock.Mode, push time.Duration) {
	synctest.Test(t, func(t *testing.T) {
		ids, eps, n, srv, wrk := sharedMachine(t, mode)
		ctx := n.ctx
		start := time.Now()
		req := message(1, 1_000_000)
		req.Flags = transport.FlagRequest | transport.FlagPush
		workerConn{wrk}.Post(1, req)
		ack := message(2, 16)
		ack.Flags = transport.FlagPush
		answer := message(3, 1_000_000)
		answer.Flags = transport.FlagPull
		c := serverConn{srv}
		for _, m := range []*transport.Message{ack, answer} {
			if err := c.Reply(ctx, ids[2], m); err != nil {
				t.Fatal(err)
			}
		}
		synctest.Wait()
		for _, r := range []struct {
			ep       *mem.Endpoint
			id       uint64
			min, max time.Duration
		}{
			{eps[2], 2, 0, 10 * time.Millisecond},
			{eps[3], 1, push - 100*time.Millisecond, push + 100*time.Millisecond},
			{eps[2], 3, 1900 * time.Millisecond, 2100 * time.Millisecond},
		} {
			m := <-r.ep.Recv()
			if d := time.Since(start); m.ID != r.id || d < r.min || d > r.max {
				t.Fatalf("message %d after %v, want %d after %v–%v", m.ID, d, r.id, r.min, r.max)
			}
		}
	})
}

// rangeRequest returns worker w's request for keys [0, n) of server 0: a
// pull, or a push of ones.
func rangeRequest(w int, id uint64, n int, push bool) *transport.Message {
	m := &transport.Message{
		Header: transport.Header{Type: transport.TypeData, Flags: transport.FlagRequest | transport.FlagPull, Cmd: proto.DataRange, ID: id,
			Sender: proto.WorkerID(w), Receiver: proto.ServerID(0)},
		Body: proto.AppendMeta(nil, 0),
		KV:   kv.Batch{Keys: []uint64{0, uint64(n)}},
	}
	if push {
		m.Flags = transport.FlagRequest | transport.FlagPush
		m.KV.Vals = slices.Repeat([]float32{1}, n)
	}
	return m
}

// TestViewsLentUntilSent runs a server behind replyServer's 1 MB/s
// interface: worker 0 pulls the whole store (1 MB), and again once the
// first answer is leaving, and worker 1 then pushes ones to it. The answers are views of the store, queued
// without a copy: the first is leaving, the second waits behind it. The
// push copies the second out of the store (the queue's detach) and
// waits for the first to leave, about 1 s, not for both (2 s); both
// answers hold the store before the push, and a pull after it the
// push's ones.
func TestViewsLentUntilSent(t *testing.T) {
	const n = 250_000
	synctest.Test(t, func(t *testing.T) {
		c, workers := replyServer(t)
		in, stop := runServer(t, c, n)
		start := time.Now()
		in <- rangeRequest(0, 1, n, false)
		synctest.Wait() // the first answer is leaving
		in <- rangeRequest(0, 2, n, false)
		synctest.Wait()
		in <- rangeRequest(1, 3, n, true)
		ack := <-workers[1].Recv()
		if d := time.Since(start); ack.ID != 3 || d < time.Second || d > 1100*time.Millisecond {
			t.Fatalf("answer %d to worker 1 after %v, want the push's acknowledgement after 1–1.1 s", ack.ID, d)
		}
		in <- rangeRequest(0, 4, n, false)
		zeros, ones := make([]float32, n), slices.Repeat([]float32{1}, n)
		for _, want := range []struct {
			id   uint64
			vals []float32
		}{{1, zeros}, {2, zeros}, {4, ones}} {
			m := <-workers[0].Recv()
			if m.ID != want.id || !slices.Equal(m.KV.Vals, want.vals) {
				t.Fatalf("worker 0 got answer %d (%d values, first %v), want %d holding %v…", m.ID, len(m.KV.Vals), m.KV.Vals[:1], want.id, want.vals[:1])
			}
		}
		stop()
	})
}

// TestViewDetachedBehindPushes: under BSP a lent answer to a pull waits
// for the co-located worker's push (TestAnswersAfterPushes); detach then
// copies it, so that its poster returns at once and the view may change,
// and the answer still leaves after the push, holding the values it had
// when it was lent.
func TestViewDetachedBehindPushes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ids, eps, n, srv, wrk := sharedMachine(t, clock.BSP)
		start := time.Now()
		req := message(1, 1_000_000)
		req.Flags = transport.FlagRequest | transport.FlagPush
		workerConn{wrk}.Post(1, req)
		answer := message(2, 1_000)
		answer.Flags = transport.FlagPull
		for i := range answer.KV.Vals {
			answer.KV.Vals[i] = 3
		}
		c := serverConn{srv}
		lent := make(chan error, 1)
		go func() { lent <- c.ReplyView(n.ctx, ids[2], answer, nil) }()
		synctest.Wait()
		select {
		case err := <-lent:
			t.Fatalf("ReplyView returned (%v) before its answer left or was copied", err)
		default:
		}
		c.Detach()
		if err := <-lent; err != nil || time.Since(start) != 0 {
			t.Fatalf("ReplyView returned %v after %v, want nil at once after Detach", err, time.Since(start))
		}
		for i := range answer.KV.Vals {
			answer.KV.Vals[i] = 7
		}
		if m := <-eps[3].Recv(); m.ID != 1 {
			t.Fatalf("server 1 got message %d, want the push", m.ID)
		}
		m := <-eps[2].Recv()
		if d := time.Since(start); m.ID != 2 || d < time.Second || slices.ContainsFunc(m.KV.Vals, func(v float32) bool { return v != 3 }) {
			t.Fatalf("worker 1 got message %d after %v holding %v…, want the answer after the push's 1 s holding 3s", m.ID, d, m.KV.Vals[:1])
		}
	})
}

// TestLentRepliesUntilLeft: lent replies queue as copies do, at once:
// with two lent ones of 2 MB queued behind a 1 MB/s interface, a copy
// posted behind them returns at once, and each lent one's poster
// returns once its reply has left.
func TestLentRepliesUntilLeft(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, workers := replyServer(t)
		// The sends end before the network closes (replyServer's cleanup).
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		const size = 2 << 20
		wire := time.Duration(localSize(message(0, size))) * time.Microsecond
		start := time.Now()
		returned := make(chan time.Duration, 2)
		for i := range 2 {
			go func() {
				c.ReplyView(ctx, proto.WorkerID(0), message(uint64(i), size), nil)
				returned <- time.Since(start)
			}()
			synctest.Wait()
		}
		if err := c.Reply(ctx, proto.WorkerID(0), message(2, size)); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d != 0 {
			t.Fatalf("reply queued after %v behind two lent ones, want at once", d)
		}
		for i := range 2 {
			if d := <-returned; d < time.Duration(i+1)*wire || d > time.Duration(i+1)*wire+10*time.Millisecond {
				t.Fatalf("lent reply %d's poster returned after %v, want when it left, %v", i, d, time.Duration(i+1)*wire)
			}
		}
		for i := range 3 {
			if m := <-workers[0].Recv(); m.ID != uint64(i) {
				t.Fatalf("answer %d, want %d", m.ID, i)
			}
		}
	})
}

// TestViewPostedAfterDetach: a view posted while a push waits for the
// views in flight (between Detach and attach: its goroutine was late) is
// queued as a copy, so that ReplyView returns at once, not once the
// answer ahead of it (1 MB at 1 MB/s) and it have left; it still leaves
// in order, holding the values it had when posted.
func TestViewPostedAfterDetach(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, workers := replyServer(t)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		start := time.Now()
		if err := c.Reply(ctx, proto.WorkerID(0), message(1, 1_000_000)); err != nil {
			t.Fatal(err)
		}
		attach := c.Detach()
		view := message(2, 1000)
		for i := range view.KV.Vals {
			view.KV.Vals[i] = 3
		}
		if err := c.ReplyView(ctx, proto.WorkerID(0), view, nil); err != nil || time.Since(start) != 0 {
			t.Fatalf("ReplyView between Detach and attach returned %v after %v, want nil at once", err, time.Since(start))
		}
		for i := range view.KV.Vals {
			view.KV.Vals[i] = 7 // the push changes the store
		}
		attach()
		for _, id := range []uint64{1, 2} {
			m := <-workers[0].Recv()
			if m.ID != id || id == 2 && slices.ContainsFunc(m.KV.Vals, func(v float32) bool { return v != 3 }) {
				t.Fatalf("worker 0 got answer %d holding %v…, want %d (answer 2 holding 3s)", m.ID, m.KV.Vals[:min(1, len(m.KV.Vals))], id)
			}
		}
	})
}

// TestAsyncViewsCopied: without rounds (asynchronous SGD, bounded
// delay) a view of the store is queued as a copy: a push that comes
// while a 2.4 MB answer leaves at 1 MB/s is applied and acknowledged at
// once, not after the answer's 2.4 s of wire time (as when the view was
// lent, every push of the server waiting as long).
func TestAsyncViewsCopied(t *testing.T) {
	const n = 600_000
	for _, mode := range []clock.Mode{clock.Async, clock.Bounded} {
		t.Run(mode.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c, workers := replyServer(t)
				c.m.n.assign.Job.Mode = mode.String()
				in, stop := runServer(t, c, n)
				start := time.Now()
				in <- rangeRequest(0, 1, n, false)
				synctest.Wait() // the answer is leaving
				in <- rangeRequest(1, 2, n, true)
				ack := <-workers[1].Recv()
				if d := time.Since(start); ack.ID != 2 || d > 10*time.Millisecond {
					t.Fatalf("answer %d to worker 1 after %v, want the push's acknowledgement within 10ms", ack.ID, d)
				}
				m := <-workers[0].Recv()
				if m.ID != 1 || !slices.Equal(m.KV.Vals, make([]float32, n)) {
					t.Fatalf("worker 0 got answer %d, want 1 holding the values before the push", m.ID)
				}
				stop()
			})
		})
	}
}

// sharedMachine attaches, on an in-memory network, server 0 and worker 0
// on machine 0 (whose interface carries 1 MB/s each way), worker 1 on
// machine 1 and server 1 on machine 2 (ids and eps in that order), and
// returns a started node of the given mode running server 0 (srv) and
// worker 0 (wrk, with its outbox) on machine 0. The node's context ends
// before the network closes, so that a send cut short by a failure ends
// nothing else; both close when the test ends. Call it inside a
// synctest bubble.
func sharedMachine(t *testing.T, mode clock.Mode) (ids []transport.NodeID, eps []*mem.Endpoint, n *Node, srv, wrk *member) {
	t.Helper()
	net, err := mem.New(mem.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { net.Close() })
	ids = []transport.NodeID{proto.ServerID(0), proto.WorkerID(0), proto.WorkerID(1), proto.ServerID(1)}
	hosts := []int{0, 0, 1, 2}
	eps = make([]*mem.Endpoint, len(ids))
	for i, id := range ids {
		net.SetHost(id, hosts[i])
		if eps[i], err = net.Attach(id); err != nil {
			t.Fatal(err)
		}
	}
	net.SetNIC(0, 1e6, 0)
	job, end := context.WithCancel(context.Background())
	t.Cleanup(end)
	n = &Node{ctx: job, started: make(chan struct{}), assign: proto.Assign{Server: ids[0], Worker: ids[1], Job: proto.Job{Mode: mode.String()}}}
	close(n.started)
	srv = &member{n: n, id: ids[0], ep: memEndpoint{eps[0]}}
	wrk = &member{n: n, id: ids[1], ep: memEndpoint{eps[1]}, out: mailbox.NewOutbox(memEndpoint{eps[1]}, time.Second)}
	t.Cleanup(func() { wrk.out.Close() })
	n.members = []*member{srv, wrk}
	return ids, eps, n, srv, wrk
}

// runServer runs a server of n keys of width 1 for two workers,
// asynchronous, on c (replyServer's), and returns its input and stop,
// which ends it and checks that Run ended for that reason. The server
// also ends with the test, before the network closes.
func runServer(t *testing.T, c serverConn, n int) (in chan<- *transport.Message, stop func()) {
	t.Helper()
	tb, err := route.Uniform(1, uint64(n))
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.NewServer(server.Config{Rank: 0, Workers: 2, Table: tb, Width: 1, Clock: clock.Config{Mode: clock.Async}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	ch := make(chan *transport.Message, 4)
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx, ch, c) }()
	return ch, func() {
		t.Helper()
		cancel()
		if err := <-done; err != context.Canceled {
			t.Fatalf("Run: %v", err)
		}
	}
}
