package mailbox

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"colo/transport"
	"colo/transport/mem"
)

func TestBoxOrderAndClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := New[int]()
		for i := range 2000 {
			b.Push(i) // never blocks, nobody reads yet
		}
		if n := b.Pushed(); n != 2000 {
			t.Fatalf("Pushed %d, want 2000 (the channel's and the overflow's)", n)
		}
		for i := range 2000 {
			if got := <-b.C(); got != i {
				t.Fatalf("got %d, want %d", got, i)
			}
		}
		b.Push(1)
		b.Close()
		b.Close()
		for range b.C() {
		}
	})
}

func TestOutboxOrderAndErrors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		net, _ := mem.New(mem.DefaultConfig())
		a, _ := net.Attach(1)
		b, _ := net.Attach(2)
		o := NewOutbox(a, time.Second)
		for i := range 100 {
			o.Post(2, &transport.Message{Header: transport.Header{ID: uint64(i)}})
		}
		o.Flush(time.Minute)
		for i := range 100 {
			if m := <-b.Recv(); m.ID != uint64(i) {
				t.Fatalf("message %d has id %d", i, m.ID)
			}
		}
		// A send to nobody fails, reported on Errors.
		o.Post(9, &transport.Message{})
		if e := <-o.Errors(); e.To != 9 || e.Err == nil {
			t.Fatalf("error %+v", e)
		}
		o.Close()
		net.Close()
	})
}

// TestOutboxDataHasNoDeadline sends a data message that needs ten times
// the timeout on a slow link: it arrives, while a control message on the
// same slow link fails after the timeout. A data send in progress is
// cancelled by the end of the job, silently.
func TestOutboxDataHasNoDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const rate = 1e6 // bytes/s
		a, b := slowPair(t, mem.DefaultConfig(), rate)
		job, end := context.WithCancel(context.Background())
		o := NewOutboxContext(a, job, time.Second)
		defer o.Close()
		data := &transport.Message{Header: transport.Header{Type: transport.TypeData, ID: 1}, Body: make([]byte, 10*rate)}
		start := time.Now()
		o.Post(2, data)
		m := <-b.Recv()
		if took := time.Since(start); m.ID != 1 || took < 10*time.Second {
			t.Fatalf("message %d after %v", m.ID, took)
		}
		o.Post(2, &transport.Message{Header: transport.Header{Type: transport.TypeControl}, Body: make([]byte, 2*rate)})
		e := <-o.Errors()
		if e.To != 2 || e.Data || !errors.Is(e.Err, context.DeadlineExceeded) {
			t.Fatalf("control message: %+v", e)
		}
		o.Post(2, data)
		time.Sleep(time.Second)
		end()
		o.Flush(time.Minute)
		select {
		case e := <-o.Errors():
			t.Fatalf("cancelled send reported: %+v", e)
		default:
		}
	})
}

// TestOutboxDataErrors reports a data message that cannot be sent, over
// the frame limit or to a closed peer, as data, naming the peer.
func TestOutboxDataErrors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := mem.DefaultConfig()
		cfg.Frame.MaxFrame = 1 << 20
		a, b := slowPair(t, cfg, 1e5)
		o := NewOutboxContext(a, context.Background(), time.Second)
		defer o.Close()
		o.Post(2, &transport.Message{Header: transport.Header{Type: transport.TypeData}, Body: make([]byte, 2<<20)})
		if e := <-o.Errors(); e.To != 2 || !e.Data || !errors.Is(e.Err, transport.ErrFrameTooLarge) {
			t.Fatalf("oversized: %+v", e)
		}
		b.Close()
		o.Post(2, &transport.Message{Header: transport.Header{Type: transport.TypeData}, Body: make([]byte, 1e5)})
		e := <-o.Errors()
		var pe *transport.PeerError
		if e.To != 2 || !e.Data || !errors.As(e.Err, &pe) || pe.Peer != 2 {
			t.Fatalf("closed peer: %+v", e)
		}
	})
}

// stuckEndpoint blocks the send of message 1 until its context ends: a
// write to a peer that stopped reading.
type stuckEndpoint struct{ transport.Endpoint }

func (e stuckEndpoint) Send(ctx context.Context, to transport.NodeID, m *transport.Message) error {
	if m.ID == 1 {
		<-ctx.Done()
		return ctx.Err()
	}
	return e.Endpoint.Send(ctx, to, m)
}

// TestOutboxAbandon: a data send blocked on a peer and the data messages
// queued behind it are given up at once by Abandon, silently, while a
// control message queued among them still goes; a message posted after
// is sent.
func TestOutboxAbandon(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		net, _ := mem.New(mem.DefaultConfig())
		defer net.Close()
		a, _ := net.Attach(1)
		b, _ := net.Attach(2)
		o := NewOutboxContext(stuckEndpoint{a}, context.Background(), time.Hour)
		defer o.Close()
		o.Post(2, &transport.Message{Header: transport.Header{Type: transport.TypeData, ID: 1}})
		o.Post(2, &transport.Message{Header: transport.Header{Type: transport.TypeControl, ID: 2}})
		o.Post(2, &transport.Message{Header: transport.Header{Type: transport.TypeData, ID: 3}})
		synctest.Wait() // message 1 blocked
		if o.FlushPeer(2, time.Second) {
			t.Fatal("sends to peer 2 ended before Abandon")
		}
		start := time.Now()
		o.Abandon(2)
		if !o.FlushPeer(2, time.Minute) {
			t.Fatal("sends to peer 2 not ended a minute after Abandon")
		}
		if took := time.Since(start); took > 0 {
			t.Fatalf("abandoned sends ended after %v", took)
		}
		o.Post(2, &transport.Message{Header: transport.Header{Type: transport.TypeData, ID: 4}})
		var ids []uint64
		for len(ids) < 2 {
			m := <-b.Recv()
			ids = append(ids, m.ID)
		}
		if ids[0] != 2 || ids[1] != 4 {
			t.Fatalf("received %v, want [2 4]", ids)
		}
		select {
		case e := <-o.Errors():
			t.Fatalf("abandoned send reported: %+v", e)
		default:
		}
	})
}

// TestOutboxIdle: Idle is closed while nothing is pending, and a channel
// taken while a message is on a slow link is closed only once its send
// returned, after its bytes' time on the link; a later post opens a new
// one.
func TestOutboxIdle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const rate = 1e6 // bytes/s
		a, b := slowPair(t, mem.DefaultConfig(), rate)
		o := NewOutboxContext(a, context.Background(), time.Second)
		defer o.Close()
		select {
		case <-o.Idle():
		default:
			t.Fatal("Idle not closed before any post")
		}
		start := time.Now()
		o.Post(2, &transport.Message{Header: transport.Header{Type: transport.TypeData, ID: 1}, Body: make([]byte, 2*rate)})
		o.Post(2, &transport.Message{Header: transport.Header{Type: transport.TypeData, ID: 2}, Body: make([]byte, rate)})
		idle := o.Idle()
		synctest.Wait()
		select {
		case <-idle:
			t.Fatal("Idle closed with 3 MB on a 1 MB/s link")
		default:
		}
		<-idle
		if took := time.Since(start); took < 3*time.Second {
			t.Fatalf("Idle closed after %v, before the 3 s the bytes take", took)
		}
		for _, id := range []uint64{1, 2} {
			if m := <-b.Recv(); m.ID != id {
				t.Fatalf("message %d, want %d", m.ID, id)
			}
		}
		select {
		case <-o.Idle():
		default:
			t.Fatal("Idle not closed once every send returned")
		}
		o.Post(2, &transport.Message{Header: transport.Header{Type: transport.TypeData, ID: 3}, Body: make([]byte, rate)})
		if o.Idle() == idle {
			t.Fatal("a post after idle kept the closed channel")
		}
		<-o.Idle()
		<-b.Recv()
	})
}

// slowPair returns the endpoints of nodes 1 and 2 on an in-memory network
// of cfg whose link from 1 to 2 carries rate bytes a second; the network
// is closed when the test ends.
func slowPair(t *testing.T, cfg mem.Config, rate float64) (a, b *mem.Endpoint) {
	t.Helper()
	net, err := mem.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { net.Close() })
	a, _ = net.Attach(1)
	b, _ = net.Attach(2)
	net.SetLink(1, 2, mem.Link{Bandwidth: rate})
	return a, b
}
