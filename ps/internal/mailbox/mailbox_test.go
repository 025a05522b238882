package mailbox

import (
	"testing"
	"testing/synctest"
	"time"

	"colo/transport"
	"colo/transport/mem"
)

func TestBoxOrderAndClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := New[int]()
		for i := range 1000 {
			b.Push(i) // never blocks, nobody reads yet
		}
		for i := range 1000 {
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
