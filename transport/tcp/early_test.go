package tcp

import (
	"context"
	"errors"
	"io"
	"testing"

	"colo/internal/colotest"
	"colo/kv"
	"colo/transport"
)

// TestEarlyValues checks that an endpoint configured with Early delivers
// the chosen frames before their values are read and reads them into the
// message, bit for bit, while other frames arrive whole; and that a link
// cut, or the endpoint closed, in the middle of the values fails the
// receiver's wait instead of leaving it hanging.
func TestEarlyValues(t *testing.T) {
	const n = 3*transport.EarlyRead/4 + 5
	vals := make([]float32, n)
	for i := range vals {
		vals[i] = float32(i) - 0.5
	}
	early := func(c *Config) {
		c.Early = func(h *transport.Header, nvals int) bool { return h.Cmd == 7 && nvals > 10 }
	}
	ctx, cancel := context.WithTimeout(context.Background(), colotest.HangTimeout(t))
	defer cancel()
	eps := newEndpoints(t, 2, early)
	for _, cmd := range []uint16{7, 8} {
		if err := eps[0].Send(ctx, 1, &transport.Message{Header: transport.Header{Cmd: cmd}, KV: kv.Batch{Keys: []uint64{0, n}, Vals: vals}}); err != nil {
			t.Fatal(err)
		}
		m := <-eps[1].Recv()
		if m.Early() != (cmd == 7) {
			t.Fatalf("cmd %d delivered early: %v", cmd, m.Early())
		}
		if err := m.Complete(ctx); err != nil {
			t.Fatal(err)
		}
		for i, v := range m.KV.Vals {
			if v != vals[i] {
				t.Fatalf("cmd %d: value %d is %v, want %v", cmd, i, v, vals[i])
			}
		}
		m.Release()
	}
	frame, err := transport.AppendFrame(nil, &transport.Message{Header: transport.Header{Cmd: 7}, KV: kv.Batch{Keys: []uint64{0, n}, Vals: vals}}, 9, 0, transport.FrameOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, how := range []string{"cut", "closed"} {
		ep := newEndpoints(t, 1, early)[0]
		c := rawPeer(t, ep, 9)
		if _, err := c.Write(frame[:len(frame)-4*n/2-1]); err != nil {
			t.Fatal(err)
		}
		m := <-ep.Recv()
		if !m.Early() {
			t.Fatalf("%s: not delivered early", how)
		}
		got, err := m.Await(ctx, 0)
		if err != nil || got == 0 {
			t.Fatalf("%s: Await: %d, %v", how, got, err)
		}
		if how == "cut" {
			c.Close()
		} else {
			ep.Close()
		}
		err = m.Complete(ctx)
		if err == nil || errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("%s: Complete: %v", how, err)
		}
		if how == "cut" {
			if pe := waitDown(t, ep); pe.Peer != 9 || !errors.Is(pe, io.ErrUnexpectedEOF) && !errors.Is(pe, transport.ErrPeerClosed) {
				t.Fatalf("cut: reported %v", pe)
			}
		}
		t.Logf("%s: %v", how, err)
	}
}
