package tcp

import (
	"context"
	"testing"
	"time"

	"colo/kv"
	"colo/transport"
)

// TestCancelBerthWhilePaying cancels the berth of a frame that an
// endpoint reads through a slow ingress (Config.Shared: a wire that
// carries the frame in a minute) once the frame is on the wire: Cancel
// breaks the link and returns at once, not once the ingress has carried
// the frame. A worker cancels its berths holding its own lock (a pause,
// the end of a job), so that wait would hold the worker for as long as
// the emulated interface is busy.
func TestCancelBerthWhilePaying(t *testing.T) {
	const ingressTime = time.Minute
	vals := make([]float32, 1<<18) // 1 MiB
	msg := &transport.Message{Header: transport.Header{ID: 7}, KV: kv.Batch{Vals: vals}}
	size := transport.FrameSize(msg, transport.FrameOptions{})
	var in *transport.Wire
	eps := newEndpoints(t, 2, func(c *Config) {
		if c.ID != 0 {
			return
		}
		in = transport.NewWire(float64(size)/ingressTime.Seconds(), transport.DefaultQuantum)
		c.Shared = func(transport.NodeID) ([]*transport.Wire, []*transport.Wire) {
			return nil, []*transport.Wire{in}
		}
	})
	eps[0].Berths().Expect(1, 7, make([]float32, len(vals)))
	go eps[1].Send(context.Background(), 0, msg)
	poll := time.NewTicker(time.Millisecond)
	defer poll.Stop()
	for deadline := time.Now().Add(time.Minute); in.Carried() == 0; {
		if time.Now().After(deadline) {
			t.Fatal("the frame's prefix was not read in a minute")
		}
		<-poll.C
	}
	start := time.Now()
	eps[0].Berths().Cancel(1, 7)
	took := time.Since(start)
	if eps[0].Berths().Len() != 0 {
		t.Fatal("the berth is still registered after Cancel")
	}
	t.Logf("Cancel returned %v after the frame went on the ingress (%v to carry it)", took, ingressTime)
	if took > ingressTime/2 {
		t.Errorf("Cancel returned %v after the frame went on an ingress of %v: it waited for the ingress", took, ingressTime)
	}
}
