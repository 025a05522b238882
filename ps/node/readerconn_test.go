package node

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"colo/ps/proto"
	"colo/transport"
)

// ack returns an acknowledgement, a data message of a header alone.
func ack(id uint64) *transport.Message {
	return &transport.Message{Header: transport.Header{Type: transport.TypeData, Cmd: proto.DataSparse, ID: id}}
}

// TestReaderAcksInOrder: on a link's reader (readerConn), an
// acknowledgement to the link's peer with nothing queued for it is held
// while the server works (Reply returns at once) and leaves on the
// caller's goroutine at flush (which returns once it has left, after
// its wire time on the 1 MB/s interface); one to a peer whose queue
// holds a reply, or to another worker than the link's peer, goes through
// the queue (Reply returns at once, the answers arrive in order); and a
// reply posted while an acknowledgement is held or leaving goes after
// it, its queue emptied by a goroutine started then.
func TestReaderAcksInOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sc, workers := replyServer(t)
		reader := func(peer transport.NodeID) readerConn { return readerConn{sc, peer, new(heldAck)} }
		ctx := context.Background()
		start := time.Now()
		if err := sc.Reply(ctx, proto.WorkerID(0), message(1, 1_000_000)); err != nil {
			t.Fatal(err)
		}
		rc := reader(proto.WorkerID(0))
		if err := rc.Reply(ctx, proto.WorkerID(0), ack(2)); err != nil {
			t.Fatal(err)
		}
		rc.flush()
		if d := time.Since(start); d != 0 {
			t.Fatalf("an acknowledgement behind a queued reply blocked for %v", d)
		}
		rc = reader(proto.WorkerID(1))
		if err := rc.Reply(ctx, proto.WorkerID(1), ack(3)); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d != 0 {
			t.Fatalf("a held acknowledgement blocked Reply for %v", d)
		}
		rc.flush()
		if d := time.Since(start); d == 0 || d > 10*time.Millisecond {
			t.Fatalf("flush of an acknowledgement to an idle worker returned after %v, want once it left (within 10ms)", d)
		}
		if m := <-workers[1].Recv(); m.ID != 3 {
			t.Fatalf("worker 1 got answer %d, want 3", m.ID)
		}
		for _, want := range []uint64{1, 2} {
			if m := <-workers[0].Recv(); m.ID != want {
				t.Fatalf("worker 0 got answer %d, want %d", m.ID, want)
			}
		}
		// On worker 0's reader, an acknowledgement to worker 1 is queued.
		synctest.Wait()
		now := time.Now()
		rc = reader(proto.WorkerID(0))
		if err := rc.Reply(ctx, proto.WorkerID(1), ack(6)); err != nil {
			t.Fatal(err)
		}
		rc.flush()
		if d := time.Since(now); d != 0 {
			t.Fatalf("an acknowledgement to another worker than the link's peer blocked for %v", d)
		}
		if m := <-workers[1].Recv(); m.ID != 6 {
			t.Fatalf("worker 1 got answer %d, want 6", m.ID)
		}
		// An acknowledgement held, a reply posted meanwhile.
		synctest.Wait()
		rc = reader(proto.WorkerID(1))
		if err := rc.Reply(ctx, proto.WorkerID(1), ack(4)); err != nil {
			t.Fatal(err)
		}
		if err := sc.Reply(ctx, proto.WorkerID(1), message(5, 16)); err != nil {
			t.Fatal(err)
		}
		rc.flush()
		for _, want := range []uint64{4, 5} {
			if m := <-workers[1].Recv(); m.ID != want {
				t.Fatalf("worker 1 got answer %d, want %d", m.ID, want)
			}
		}
		synctest.Wait()
		r := &sc.m.replies
		r.mu.Lock()
		defer r.mu.Unlock()
		for to, q := range r.qs {
			if q.running || len(q.items) > 0 {
				t.Fatalf("queue of %v left running %v with %d replies", to, q.running, len(q.items))
			}
		}
	})
}
