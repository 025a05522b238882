package node

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"colo/kv"
	"colo/ps/clock"
	"colo/ps/internal/mailbox"
	"colo/ps/proto"
	"colo/transport"
	"colo/transport/mem"
)

// replyServer returns the member of a server 0 on host 0, whose 1 MB/s
// interface it shares with nobody, and workers 0 and 1 on hosts 1 and 2.
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
	n := &Node{ctx: context.Background(), started: make(chan struct{})}
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

// TestRepliesBounded: replies to one worker wait in a queue of at most
// ReplyBuffer bytes; Reply blocks beyond it until the wire has taken
// enough, and ReplyThen's sent is called as each leaves.
func TestRepliesBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, workers := replyServer(t)
		ctx := context.Background()
		size := ReplyBuffer/2 - 1024
		start := time.Now()
		var sent []time.Duration
		for i := range 3 {
			err := c.ReplyThen(ctx, proto.WorkerID(0), message(uint64(i), size), func() { sent = append(sent, time.Since(start)) })
			if err != nil {
				t.Fatal(err)
			}
			// Two fill the queue; the third waits for the first to leave.
			wire := time.Duration(localSize(message(0, size))) * time.Microsecond
			if d := time.Since(start); i < 2 && d != 0 || i == 2 && (d < wire || d > wire+time.Millisecond) {
				t.Fatalf("reply %d queued after %v; the first takes %v on the wire", i, d, wire)
			}
		}
		for i := range 3 {
			if m := <-workers[0].Recv(); m.ID != uint64(i) {
				t.Fatalf("answer %d, want %d", m.ID, i)
			}
		}
		synctest.Wait()
		if len(sent) != 3 || !(sent[0] < sent[1] && sent[1] < sent[2]) {
			t.Fatalf("sent at %v", sent)
		}
		cctx, cancel := context.WithCancel(ctx)
		c.Reply(cctx, proto.WorkerID(0), message(7, ReplyBuffer))
		go cancel()
		if err := c.Reply(cctx, proto.WorkerID(0), message(8, 16)); err == nil {
			t.Fatal("Reply on a full queue returned no error when its context ended")
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
		net, err := mem.New(mem.DefaultConfig())
		if err != nil {
			t.Fatal(err)
		}
		defer net.Close()
		ids := []transport.NodeID{proto.ServerID(0), proto.WorkerID(0), proto.WorkerID(1), proto.ServerID(1)}
		hosts := []int{0, 0, 1, 2}
		eps := make([]*mem.Endpoint, len(ids))
		for i, id := range ids {
			net.SetHost(id, hosts[i])
			if eps[i], err = net.Attach(id); err != nil {
				t.Fatal(err)
			}
		}
		net.SetNIC(0, 1e6, 0)
		// The job's context ends before the network closes, so that a send
		// cut short by a failure below ends nothing else.
		job, end := context.WithCancel(context.Background())
		defer end()
		n := &Node{ctx: job, started: make(chan struct{}), assign: proto.Assign{Server: ids[0], Worker: ids[1], Job: proto.Job{Mode: mode.String()}}}
		close(n.started)
		srv := &member{n: n, id: ids[0], ep: memEndpoint{eps[0]}}
		wrk := &member{n: n, id: ids[1], ep: memEndpoint{eps[1]}, out: mailbox.NewOutbox(memEndpoint{eps[1]}, time.Second)}
		defer wrk.out.Close()
		n.members = []*member{srv, wrk}
		ctx := job
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
