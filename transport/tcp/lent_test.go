package tcp

import (
	"context"
	"slices"
	"testing"

	"colo/kv"
	"colo/transport"
)

// TestSendLentReclaimed: the owner of a lent 4 MB message takes its
// values back while the message leaves and overwrites them; the peer
// receives the values as they were lent, whatever part of the frame was
// written by then. Endpoint is a transport.LentSender.
func TestSendLentReclaimed(t *testing.T) {
	var _ transport.LentSender = (*Endpoint)(nil)
	eps := newEndpoints(t, 2, nil)
	const n = 1 << 20
	ctx := context.Background()
	for round := range 4 {
		vals := make([]float32, n)
		for i := range vals {
			vals[i] = float32(i + round)
		}
		want := slices.Clone(vals)
		l := transport.NewLent(vals, nil)
		m := &transport.Message{Header: transport.Header{Type: transport.TypeData, ID: uint64(round)}, KV: kv.Batch{Keys: []uint64{0}, Vals: vals}}
		sent := make(chan error, 1)
		go func() { sent <- eps[0].SendLent(ctx, eps[1].ID(), m, l) }()
		if round > 0 { // round 0: the values stay lent to the end
			l.Reclaim()
			for i := range vals {
				vals[i] = -1
			}
		}
		got := <-eps[1].Recv()
		if err := <-sent; err != nil {
			t.Fatal(err)
		}
		if got.ID != uint64(round) || !slices.Equal(got.KV.Vals, want) {
			t.Fatalf("round %d: message %d with %d values, not those lent", round, got.ID, len(got.KV.Vals))
		}
		l.Release()
	}
}
