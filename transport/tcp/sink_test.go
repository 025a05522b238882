package tcp

import (
	"context"
	"sync"
	"testing"

	"colo/transport"
)

// TestSink checks that the messages a sink takes are handed to it in
// their order and never reach Recv, and that the ones it declines do.
func TestSink(t *testing.T) {
	eps := newEndpoints(t, 2, nil)
	var mu sync.Mutex
	var took []uint64
	all := make(chan struct{})
	const n = 200
	eps[1].SetSink(func(m *transport.Message) bool {
		if m.ID%3 == 0 {
			return false
		}
		mu.Lock()
		took = append(took, m.ID)
		if len(took) == n-n/3-1 {
			close(all)
		}
		mu.Unlock()
		return true
	})
	for i := range uint64(n) {
		m := &transport.Message{Header: transport.Header{Type: transport.TypeData, ID: i}, Body: []byte{byte(i)}}
		if err := eps[0].Send(context.Background(), 1, m); err != nil {
			t.Fatal(err)
		}
	}
	for i := uint64(0); i < n; i += 3 {
		m := <-eps[1].Recv()
		if m.ID != i {
			t.Fatalf("Recv delivered message %d, want %d", m.ID, i)
		}
	}
	<-all
	mu.Lock()
	defer mu.Unlock()
	prev := uint64(0)
	for k, id := range took {
		if id%3 == 0 || k > 0 && id <= prev {
			t.Fatalf("the sink took message %d after %d", id, prev)
		}
		prev = id
	}
	select {
	case m := <-eps[1].Recv():
		t.Fatalf("Recv delivered message %d that the sink took", m.ID)
	default:
	}
}
