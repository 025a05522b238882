package tcp

import (
	"context"
	"testing"
	"time"

	"colo/kv"
	"colo/transport"
)

// TestCancelBerthWhilePaying cancels the berth of a frame that an
// endpoint reads through a slow ingress (Config.Shared: one chunk of
// Burst bytes every 10 s) just after its reader took the tokens of a
// chunk: Cancel breaks the link and returns at once, not once the
// reader has waited out its chunk. A worker cancels its berths holding
// its own lock (a pause, the end of a job), so that wait would hold the
// worker for as long as the emulated interface is busy.
func TestCancelBerthWhilePaying(t *testing.T) {
	const chunkWait = 10 * time.Second
	var in *transport.TokenBucket
	eps := newEndpoints(t, 2, func(c *Config) {
		if c.ID != 0 {
			return
		}
		in = transport.NewTokenBucket(float64(c.Burst)/chunkWait.Seconds(), c.Burst)
		c.Shared = func(transport.NodeID) ([]*transport.TokenBucket, []*transport.TokenBucket) {
			return nil, []*transport.TokenBucket{in}
		}
	})
	vals := make([]float32, 1<<18) // 1 MiB: 16 chunks
	eps[0].Berths().Expect(1, 7, make([]float32, len(vals)))
	go eps[1].Send(context.Background(), 0, &transport.Message{Header: transport.Header{ID: 7}, KV: kv.Batch{Vals: vals}})
	// The first chunk is the bucket's burst; the second's tokens are
	// taken when the reader starts its wait of chunkWait.
	burst := int64(DefaultConfig().Burst)
	poll := time.NewTicker(time.Millisecond)
	defer poll.Stop()
	for deadline := time.Now().Add(time.Minute); in.Taken() <= burst; {
		if time.Now().After(deadline) {
			t.Fatalf("the reader took %d bytes in a minute, want more than %d", in.Taken(), burst)
		}
		<-poll.C
	}
	start := time.Now()
	eps[0].Berths().Cancel(1, 7)
	took := time.Since(start)
	if eps[0].Berths().Len() != 0 {
		t.Fatal("the berth is still registered after Cancel")
	}
	t.Logf("Cancel returned %v after the reader began to pay for its chunk (%v a chunk)", took, chunkWait)
	if took > chunkWait/2 {
		t.Errorf("Cancel returned %v after the reader began to pay for a chunk of %v: it waited for the tokens", took, chunkWait)
	}
}
