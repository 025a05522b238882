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

// gatedConn is a Conn whose replies of pulls block until gate is closed.
// It records what each pull reply held when it entered Reply and when it
// was let through, and the order of the replies.
type gatedConn struct {
	gate chan struct{}

	mu      sync.Mutex
	entered []string
	at      map[uint64][]float32 // a pull's values on entering Reply
	sent    map[uint64][]float32 // and when it was let through
}

func (c *gatedConn) Reply(_ context.Context, _ transport.NodeID, m *transport.Message) error {
	pull := m.Flags&transport.FlagPull != 0
	c.mu.Lock()
	kind := "ack"
	if pull {
		kind = "pull"
		c.at[m.ID] = slices.Clone(m.KV.Vals)
	}
	c.entered = append(c.entered, kind)
	c.mu.Unlock()
	if pull {
		<-c.gate
		c.mu.Lock()
		c.sent[m.ID] = slices.Clone(m.KV.Vals)
		c.mu.Unlock()
	}
	return nil
}

func (c *gatedConn) log() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.entered)
}

// rangeRequest returns worker w's request for the keys [0, n): a pull, or
// a push of ones.
func rangeRequest(w int, id uint64, n int, push bool) *transport.Message {
	m := &transport.Message{
		Header: transport.Header{Type: transport.TypeData, Flags: transport.FlagRequest | transport.FlagPull, Cmd: proto.DataRange, ID: id,
			Sender: proto.WorkerID(w), Receiver: proto.ServerID(0)},
		Body: make([]byte, 8),
		KV:   kv.Batch{Keys: []uint64{0, uint64(n)}},
	}
	if push {
		m.Flags = transport.FlagRequest | transport.FlagPush
		m.KV.Vals = slices.Repeat([]float32{1}, n)
	}
	return m
}

// TestServerViewReplies checks that a server answers dense range pulls,
// whose replies are the store's own memory, several at a time, and that
// a push waits until those replies are written: a worker never receives
// values that change under it while they are sent.
func TestServerViewReplies(t *testing.T) {
	const n = 64
	synctest.Test(t, func(t *testing.T) {
		tb, _ := route.Uniform(1, n)
		s, err := NewServer(Config{Rank: 0, Workers: 3, Table: tb, Width: 1, Clock: clock.Config{Mode: clock.Async}})
		if err != nil {
			t.Fatal(err)
		}
		conn := &gatedConn{gate: make(chan struct{}), at: map[uint64][]float32{}, sent: map[uint64][]float32{}}
		in := make(chan *transport.Message, 3)
		release, stop := sync.OnceFunc(func() { close(conn.gate) }), sync.OnceFunc(func() { close(in) })
		defer release()
		defer stop()
		done := make(chan error, 1)
		go func() { done <- s.Run(context.Background(), in, conn) }()
		in <- rangeRequest(0, 1, n, false)
		in <- rangeRequest(1, 2, n, false)
		in <- rangeRequest(2, 3, n, true)
		synctest.Wait()
		// Both pulls are being sent at once; the push waits for them.
		if got := conn.log(); !slices.Equal(got, []string{"pull", "pull"}) {
			t.Fatalf("replies entered while the pulls are held: %v, want two pulls and no push acknowledgement", got)
		}
		if v := s.core.Store().vals[:n]; slices.ContainsFunc(v, func(x float32) bool { return x != 0 }) {
			t.Fatalf("the push changed the store while pulls of it were being sent: %v", v)
		}
		release()
		synctest.Wait()
		if got := conn.log(); !slices.Equal(got, []string{"pull", "pull", "ack"}) {
			t.Fatalf("replies %v, want two pulls, then the push's acknowledgement", got)
		}
		zeros := make([]float32, n)
		for id := uint64(1); id <= 2; id++ {
			if !slices.Equal(conn.at[id], zeros) || !slices.Equal(conn.sent[id], zeros) {
				t.Fatalf("pull %d held %v when sent and %v when done, want zeros", id, conn.at[id], conn.sent[id])
			}
		}
		if v := s.core.Store().vals[:n]; !slices.Equal(v, slices.Repeat([]float32{1}, n)) {
			t.Fatalf("store after the push: %v", v)
		}
		stop()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
}
