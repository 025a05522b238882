package mem

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"colo/transport"
)

// TestSmallPassesBulk: endpoint 0 sends 1 MB to host 1 through host 0's
// 1 MB/s NIC and endpoint 1, on host 0 too, a small message on its own
// connection just after. The small one waits for one turn of the bulk
// message (a frame, DefaultQuantum bytes), not for the whole of it; the
// bulk message passes its own bytes' time and the small one's later.
func TestSmallPassesBulk(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		net, eps := network(t, DefaultConfig(), 4)
		place(t, net, 0, 0, 1, 1)
		net.SetNIC(0, 1e6, 0)
		small := &transport.Message{Header: transport.Header{ID: 1}}
		s := transport.FrameSize(small, transport.FrameOptions{})
		start := time.Now()
		go eps[0].Send(context.Background(), 2, megabyte(t))
		synctest.Wait()
		if err := eps[1].Send(context.Background(), 3, small); err != nil {
			t.Fatal(err)
		}
		if d, want := time.Since(start), time.Duration(transport.DefaultQuantum+s)*time.Microsecond; d != want {
			t.Fatalf("the small message left after %v, want %v", d, want)
		}
		(<-eps[3].Recv()).Release()
		(<-eps[2].Recv()).Release()
		if d, want := time.Since(start), time.Duration(1_000_000+s)*time.Microsecond; d != want {
			t.Fatalf("the bulk message arrived after %v, want %v", d, want)
		}
	})
}
