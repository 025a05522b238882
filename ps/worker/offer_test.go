package worker

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"

	"colo/ps/clock"
	"colo/ps/proto"
	"colo/ps/route"
	"colo/transport"
)

// postConn records the requests a worker posts.
type postConn struct {
	mu    sync.Mutex
	posts []*transport.Message
}

func (c *postConn) Post(_ int, m *transport.Message) {
	c.mu.Lock()
	c.posts = append(c.posts, m)
	c.mu.Unlock()
}

func (c *postConn) last() *transport.Message {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.posts[len(c.posts)-1]
}

// ack returns server 0's acknowledgement of push id.
func ack(id uint64) *transport.Message {
	return &transport.Message{Header: transport.Header{Type: transport.TypeData, Flags: transport.FlagPush, ID: id,
		Sender: proto.ServerID(0), Receiver: proto.WorkerID(0)}}
}

// TestOffer: a server's answer offered by a link's reader is handled on
// the reader's goroutine (the call completes before Offer returns) only
// while Run runs and every answer queued for Run was handled; else it is
// declined, to be queued behind the others.
func TestOffer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tb, _ := route.Uniform(1, 10)
		w, err := New(Config{Rank: 0, Table: tb, Width: 1, Clock: clock.Config{Mode: clock.Async}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		var queued uint64
		count := func() uint64 { return queued }
		if w.Offer(ack(1), count) {
			t.Fatal("an answer was handled before Run started")
		}
		conn := &postConn{}
		in := make(chan *transport.Message, 4)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- w.Run(ctx, in, conn) }()
		synctest.Wait()

		push := func() (*Future, uint64) {
			f := w.Push([]uint64{3}, []float32{1})
			synctest.Wait()
			return f, conn.last().ID
		}
		f1, id1 := push()
		if !w.Offer(ack(id1), count) {
			t.Fatal("an answer was declined while Run had nothing queued")
		}
		select {
		case <-f1.Done():
		default:
			t.Fatal("the push was not complete when Offer returned")
		}

		// One answer queued and not yet handled: the next one waits
		// behind it.
		f2, id2 := push()
		f3, id3 := push()
		queued++
		if w.Offer(ack(id3), func() uint64 { return queued }) {
			t.Fatal("an answer overtook one queued before it")
		}
		in <- ack(id2)
		in <- ack(id3)
		queued++
		synctest.Wait()
		for i, f := range []*Future{f2, f3} {
			if err := f.Wait(); err != nil {
				t.Fatalf("push %d: %v", i+2, err)
			}
		}
		f4, id4 := push()
		if !w.Offer(ack(id4), count) || f4.Wait() != nil {
			t.Fatal("an answer was declined once Run had handled everything queued")
		}
		if st := w.Stats(); st.Pushes != 4 {
			t.Fatalf("%d pushes counted, want 4", st.Pushes)
		}

		cancel()
		<-done
		if w.Offer(ack(99), count) {
			t.Fatal("an answer was handled after Run returned")
		}
	})
}
