package server

import (
	"context"
	"slices"
	"sync"
	"testing"
	"testing/synctest"

	"colo/kv"
	"colo/ps/clock"
	"colo/ps/proto"
	"colo/ps/route"
	"colo/transport"
)

// logConn records the ids of the replies in the order they were sent.
type logConn struct {
	mu  sync.Mutex
	ids []uint64
}

func (c *logConn) Reply(_ context.Context, _ transport.NodeID, m *transport.Message) error {
	c.mu.Lock()
	c.ids = append(c.ids, m.ID)
	c.mu.Unlock()
	return nil
}

func (c *logConn) log() []uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.ids)
}

// sparsePush returns worker 0's push of one to key k.
func sparsePush(id, k uint64) *transport.Message {
	return &transport.Message{
		Header: transport.Header{Type: transport.TypeData, Flags: transport.FlagRequest | transport.FlagPush, Cmd: proto.DataSparse, ID: id,
			Sender: proto.WorkerID(0), Receiver: proto.ServerID(0)},
		Body: proto.AppendMetaEpoch(nil, int64(id), 0),
		KV:   kv.Batch{Keys: []uint64{k}, Vals: []float32{1}},
	}
}

// TestOffer: a request offered by a link's reader is handled on the
// reader's goroutine only when every message queued for Run was handled
// and the core is free, so that requests are served in the order they
// came; a message of another server is left to Run.
func TestOffer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tb, _ := route.Uniform(1, 16)
		s, err := NewServer(Config{Rank: 0, Workers: 1, Table: tb, Width: 1, Clock: clock.Config{Mode: clock.Async}})
		if err != nil {
			t.Fatal(err)
		}
		conn := &logConn{}
		ctx, cancel := context.WithCancel(context.Background())
		in := make(chan *transport.Message, 4)
		var queued uint64
		count := func() uint64 { return queued }
		// Queued before Run started: an offer must wait behind it.
		in <- sparsePush(1, 3)
		queued++
		if s.Offer(ctx, sparsePush(2, 3), conn, count) {
			t.Fatal("a request overtook one queued before it")
		}
		in <- sparsePush(2, 3)
		queued++
		done := make(chan error, 1)
		go func() { done <- s.Run(ctx, in, conn) }()
		synctest.Wait()
		if !s.Offer(ctx, sparsePush(3, 5), conn, count) {
			t.Fatal("a request was declined while Run had nothing queued")
		}
		if got := conn.log(); !slices.Equal(got, []uint64{1, 2, 3}) {
			t.Fatalf("replies %v, want 1, 2, 3", got)
		}
		if v := s.core.Store().vals; v[3] != 2 || v[5] != 1 {
			t.Fatalf("store %v, want 2 at key 3 and 1 at key 5", v)
		}
		// The core is held (a co-located pull, or Run's message).
		s.serve.Lock()
		if s.Offer(ctx, sparsePush(4, 5), conn, count) {
			t.Fatal("a request was handled while the core was held")
		}
		s.serve.Unlock()
		fromServer := sparsePush(5, 5)
		fromServer.Sender = proto.ServerID(1)
		if s.Offer(ctx, fromServer, conn, count) {
			t.Fatal("a message of another server was handled on the offering goroutine")
		}
		cancel()
		<-done
		if s.Offer(ctx, sparsePush(6, 5), conn, count) {
			t.Fatal("a request was handled after Run returned")
		}
	})
}

// TestOfferAfterRun: once Run returned (its channel closed, or its
// context ended while an offer was on its way), an offer is declined:
// Run waited for the replies it started, and none may start after.
func TestOfferAfterRun(t *testing.T) {
	tb, _ := route.Uniform(1, 16)
	s, err := NewServer(Config{Rank: 0, Workers: 1, Table: tb, Width: 1, Clock: clock.Config{Mode: clock.Async}})
	if err != nil {
		t.Fatal(err)
	}
	conn := &logConn{}
	in := make(chan *transport.Message)
	close(in)
	if err := s.Run(context.Background(), in, conn); err != nil {
		t.Fatal(err)
	}
	if s.Offer(context.Background(), sparsePush(1, 3), conn, func() uint64 { return 0 }) {
		t.Fatalf("a request was handled after Run returned (replies %v)", conn.log())
	}
}
