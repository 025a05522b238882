package mem

import (
	"context"
	"errors"
	"math"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"colo/kv"
	"colo/transport"
)

// megabyte is a message whose frame is exactly 1 MB.
func megabyte(t *testing.T) *transport.Message {
	m := &transport.Message{KV: kv.Batch{Vals: make([]float32, 250_000-15)}}
	if s := transport.FrameSize(m, transport.FrameOptions{}); s != 1_000_000 {
		t.Fatalf("frame of %d bytes", s)
	}
	return m
}

// sendAll sends one 1 MB message on each [from, to] pair, each from its
// own goroutine, and returns when each message arrived, in fake time
// from the start.
func sendAll(t *testing.T, eps []*Endpoint, pairs [][2]int) []time.Duration {
	t.Helper()
	m := megabyte(t)
	start := time.Now()
	took := make([]time.Duration, len(pairs))
	var mu sync.Mutex
	done := make([]bool, len(pairs))
	var wg sync.WaitGroup
	for _, p := range pairs {
		wg.Go(func() {
			if err := eps[p[0]].Send(context.Background(), transport.NodeID(p[1]), m); err != nil {
				t.Error(err)
			}
		})
	}
	count := map[int]int{}
	for _, p := range pairs {
		count[p[1]]++
	}
	for dst, n := range count {
		wg.Go(func() {
			for range n {
				msg := <-eps[dst].Recv()
				at := time.Since(start)
				mu.Lock()
				for i, p := range pairs {
					if !done[i] && p[1] == dst && transport.NodeID(p[0]) == msg.Sender {
						done[i], took[i] = true, at
						break
					}
				}
				mu.Unlock()
				msg.Release()
			}
		})
	}
	wg.Wait()
	return took
}

// maxOf returns the largest duration.
func maxOf(ds []time.Duration) time.Duration {
	var m time.Duration
	for _, d := range ds {
		m = max(m, d)
	}
	return m
}

// place puts endpoint i on hosts[i] (-1 for none).
func place(t *testing.T, net *Network, hosts ...int) {
	t.Helper()
	for i, h := range hosts {
		if h >= 0 {
			if err := net.SetHost(transport.NodeID(i), h); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestNICShared: two endpoints of host 0 send 1 MB each to two endpoints
// of host 1 through 1 MB/s NICs. The NIC is shared: 2 MB take 2 s, not
// the 1 s of two independent links. The two connections take turns of a
// frame (DefaultQuantum bytes): 1 MB is 660 turns and 760 bytes, so the
// first message leaves after 660·2·1514 + 760 bytes, 1.99924 s. Traffic
// inside a host is not shaped.
func TestNICShared(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		net, eps := network(t, DefaultConfig(), 4)
		place(t, net, 0, 0, 1, 1)
		for h := range 2 {
			if err := net.SetNIC(h, 1e6, 1e6); err != nil {
				t.Fatal(err)
			}
		}
		took := sendAll(t, eps, [][2]int{{0, 2}, {1, 3}})
		if min(took[0], took[1]) != 1_999_240*time.Microsecond || maxOf(took) != 2*time.Second {
			t.Fatalf("2 MB through a shared 1 MB/s NIC: sends returned after %v", took)
		}
		// The other way, in parallel with traffic inside the hosts.
		took = sendAll(t, eps, [][2]int{{2, 0}, {3, 1}, {0, 1}, {1, 0}, {2, 3}})
		if maxOf(took[:2]) != 2*time.Second || maxOf(took[2:]) != 0 {
			t.Fatalf("back: %v, inside the hosts: %v", took[:2], took[2:])
		}
		if h, ok := net.Host(3); !ok || h != 1 {
			t.Fatalf("Host(3) = %d, %v", h, ok)
		}
	})
}

// TestNICIngress: hosts 0 and 1 send 1 MB each to host 2, whose ingress
// is 1 MB/s; their own NICs are unlimited. The ingress is the
// bottleneck: 2 s. Host 3 receives from host 0 meanwhile, unslowed.
func TestNICIngress(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		net, eps := network(t, DefaultConfig(), 4)
		place(t, net, 0, 1, 2, 3)
		net.SetNIC(2, 0, 1e6)
		took := sendAll(t, eps, [][2]int{{0, 2}, {1, 2}, {0, 3}})
		if maxOf(took[:2]) != 2*time.Second || took[2] != 0 {
			t.Fatalf("two senders into one 1 MB/s ingress: %v", took)
		}
		// With host 0's egress at 0.5 MB/s, it is the bottleneck of its
		// message: 2 s, while host 1's takes 1 s.
		net.SetNIC(0, 5e5, 0)
		took = sendAll(t, eps, [][2]int{{0, 2}, {1, 2}})
		if took[0] != 2*time.Second || took[1] > 2*time.Second || took[1] < time.Second {
			t.Fatalf("egress bottleneck: %v", took)
		}
	})
}

// TestHostLink: a 0.5 MB/s path from host 0 to host 1 is shared by both
// endpoints of each host; the reverse path and other hosts are not
// limited; a per-link bandwidth below it is the bottleneck instead.
func TestHostLink(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		net, eps := network(t, DefaultConfig(), 5)
		place(t, net, 0, 0, 1, 1, 2)
		if err := net.SetHostLink(0, 1, 5e5); err != nil {
			t.Fatal(err)
		}
		took := sendAll(t, eps, [][2]int{{0, 2}, {1, 3}, {2, 0}, {0, 4}})
		if maxOf(took[:2]) != 4*time.Second || took[2] != 0 || took[3] != 0 {
			t.Fatalf("host link: %v", took)
		}
		net.SetLink(0, 2, Link{Bandwidth: 2.5e5})
		took = sendAll(t, eps, [][2]int{{0, 2}})
		if took[0] != 4*time.Second {
			t.Fatalf("slower link on a host link: %v", took)
		}
		// Removing the host link leaves the per-link model.
		net.SetHostLink(0, 1, 0)
		took = sendAll(t, eps, [][2]int{{0, 2}, {1, 3}})
		if took[0] != 4*time.Second || took[1] != 0 {
			t.Fatalf("after removing the host link: %v", took)
		}
	})
}

// TestNoHost: an endpoint on no host is off every host: messages with it
// take the NIC of the other side, unless it is exempt.
func TestNoHost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		net, eps := network(t, DefaultConfig(), 2)
		place(t, net, 0, -1)
		net.SetNIC(0, 1e6, 5e5)
		took := sendAll(t, eps, [][2]int{{0, 1}})
		if took[0] != time.Second {
			t.Fatalf("egress to no host: %v", took)
		}
		took = sendAll(t, eps, [][2]int{{1, 0}})
		if took[0] != 2*time.Second {
			t.Fatalf("ingress from no host: %v", took)
		}
		net.SetHostExempt(1, true)
		if took := sendAll(t, eps, [][2]int{{0, 1}, {1, 0}}); maxOf(took) != 0 {
			t.Fatalf("exempt endpoint: %v", took)
		}
		net.SetHostExempt(1, false)
		if took := sendAll(t, eps, [][2]int{{0, 1}}); took[0] != time.Second {
			t.Fatalf("no longer exempt: %v", took)
		}
	})
}

// TestHostWaitCancelled: a Send waiting for its NIC ends with the
// context, and with the sender's Close.
func TestHostWaitCancelled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		net, eps := network(t, DefaultConfig(), 2)
		place(t, net, 0, 1)
		net.SetNIC(0, 1e6, 0)
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		defer cancel()
		start := time.Now()
		err := eps[0].Send(ctx, 1, megabyte(t))
		if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) != 500*time.Millisecond {
			t.Fatalf("Send = %v after %v", err, time.Since(start))
		}
		go func() {
			time.Sleep(100 * time.Millisecond)
			eps[0].Close()
		}()
		if err := eps[0].Send(context.Background(), 1, megabyte(t)); !errors.Is(err, transport.ErrClosed) {
			t.Fatalf("Send on a closing endpoint = %v", err)
		}
	})
}

func TestHostValidate(t *testing.T) {
	net, _ := New(DefaultConfig())
	for want, err := range map[string]error{
		"host -1 is negative":    net.SetHost(1, -1),
		"egress -1 out of range": net.SetNIC(0, -1, 0),
		"ingress NaN":            net.SetNIC(0, 0, math.NaN()),
		"host -2: host is":       net.SetNIC(-2, 0, 0),
		"must be distinct":       net.SetHostLink(1, 1, 5),
		"rate +Inf":              net.SetHostLink(0, 1, math.Inf(1)),
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v", want, err)
		}
	}
}

// TestIngressDoesNotHoldSender: a message into a slow ingress arrives
// late, but its Send returns as soon as the sender's own NIC has carried
// it, so the sender's next message, to another host, is not delayed.
func TestIngressDoesNotHoldSender(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		net, eps := network(t, DefaultConfig(), 3)
		place(t, net, 0, 1, 2)
		net.SetNIC(0, 1e6, 0)
		net.SetNIC(1, 0, 2.5e5)
		m := megabyte(t)
		start := time.Now()
		if err := eps[0].Send(context.Background(), 1, m); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d != time.Second {
			t.Fatalf("first Send returned after %v, want the egress time 1s", d)
		}
		if err := eps[0].Send(context.Background(), 2, m); err != nil {
			t.Fatal(err)
		}
		(<-eps[2].Recv()).Release()
		if d := time.Since(start); d != 2*time.Second {
			t.Fatalf("second message arrived after %v, want 2s", d)
		}
		(<-eps[1].Recv()).Release()
		if d := time.Since(start); d != 4*time.Second {
			t.Fatalf("first message arrived after %v, want the ingress time 4s", d)
		}
	})
}
