package peers

import (
	"sync"
	"testing"

	"colo/transport"
)

func TestTable(t *testing.T) {
	var tab Table
	tab.Get(1).Sent(10)
	tab.Get(1).Recv(20)
	tab.Get(2).Dropped()
	s := tab.Snapshot()
	if s.Links[1] != (transport.LinkStats{MsgsSent: 1, BytesSent: 10, MsgsRecv: 1, BytesRecv: 20}) || s.Links[2].Dropped != 1 {
		t.Fatalf("snapshot %+v", s)
	}
}

// TestDownQueue checks that reports are never dropped or reordered, even
// when the consumer is late, and that Close ends delivery.
func TestDownQueue(t *testing.T) {
	q := NewDownQueue()
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 250 {
				q.Push(&transport.PeerError{Peer: transport.NodeID(g*1000 + i)})
			}
		})
	}
	wg.Wait()
	last := map[int]int{}
	for range 1000 {
		pe := <-q.C()
		g, i := int(pe.Peer)/1000, int(pe.Peer)%1000
		if prev, ok := last[g]; ok && i != prev+1 {
			t.Fatalf("producer %d: %d after %d", g, i, prev)
		}
		last[g] = i
	}
	q.Push(&transport.PeerError{})
	q.Close()
	q.Close()
	for range q.C() {
	}
	q.Push(&transport.PeerError{}) // after Close: ignored
}
