package server

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"colo/kv"
	"colo/ps/clock"
	"colo/ps/proto"
	"colo/ps/route"
	"colo/ps/update"
	"colo/transport"
)

// TestPullLocal serves a co-located worker's pulls on the caller's
// goroutine: the values of the pushes handled before, written in place,
// the counters as for messages, the error a message gets for keys out
// of order, and nothing for a request of another epoch.
func TestPullLocal(t *testing.T) {
	tb, _ := route.Uniform(1, 100)
	s, err := NewServer(Config{Workers: 1, Table: tb, Clock: clock.Config{Mode: clock.BSP}})
	if err != nil {
		t.Fatal(err)
	}
	keys := []uint64{3, 50, 70}
	if rs := s.core.Handle(Request{Worker: 0, ID: 1, Push: true, KV: kv.Batch{Keys: keys[:2], Vals: []float32{1, 2, 2}, Lens: []int32{1, 2}}}, false); len(rs) != 1 || rs[0].Err != nil {
		t.Fatalf("push: %+v", rs)
	}
	if _, _, _, ok := s.PullLocal(0, 2, 1, 7, keys, make([]float32, 5), nil); ok {
		t.Error("a pull of epoch 7 served directly by a server in epoch 0")
	}
	room := make([]float32, 5)
	vals, lens, err, ok := s.PullLocal(0, 2, 1, 0, keys, room, make([]int32, 0, 3))
	if !ok || err != nil {
		t.Fatalf("pull served %v, %v", ok, err)
	}
	if !slices.Equal(vals, []float32{1, 2, 2}) || !slices.Equal(lens, []int32{1, 2, 0}) || &vals[0] != &room[0] {
		t.Errorf("pulled %v %v, want [1 2 2] [1 2 0] in place", vals, lens)
	}
	// Too little room: the values in an array of their own.
	if vals, _, err, ok := s.PullLocal(0, 3, 1, 0, keys, make([]float32, 1), nil); !ok || err != nil || !slices.Equal(vals, []float32{1, 2, 2}) {
		t.Errorf("pull into a short room: %v, %v, %v", vals, err, ok)
	}
	if _, _, err, ok := s.PullLocal(0, 4, 1, 0, []uint64{50, 3}, room, nil); !ok || err == nil {
		t.Errorf("a pull of unsorted keys: %v, %v", ok, err)
	}
	if st := s.Stats(); st.Pulls != 2 || st.KeysPulled != 6 || st.Errors != 1 {
		t.Errorf("counters %+v, want 2 pulls of 6 keys (the refused one is not counted), 1 error", st)
	}
}

// recConn passes on the replies a server sends, as text.
type recConn struct{ got chan string }

func (c *recConn) Reply(_ context.Context, to transport.NodeID, m *transport.Message) error {
	kind := "ack"
	if m.Cmd == proto.DataError {
		kind = "error"
	}
	c.got <- fmt.Sprintf("%s %d to %s", kind, m.ID, proto.Name(to))
	return nil
}

// next waits for n replies.
func (c *recConn) next(n int) []string {
	var r []string
	for range n {
		r = append(r, <-c.got)
	}
	return r
}

// TestPushLocal serves a co-located worker's pushes on the caller's
// goroutine under BSP with two workers: a push the round still waits
// for is held (not answered, its acknowledgement later a message of
// the loop), one that completes the round is answered at once and
// releases the other worker's acknowledgement through the loop's conn;
// the round's sum is applied whichever path each push took; a bad push
// gets the error a message gets; nothing is served before the loop runs
// or for another epoch.
func TestPushLocal(t *testing.T) {
	tb, _ := route.Uniform(1, 100)
	s, err := NewServer(Config{Workers: 2, Table: tb, Width: 1, Clock: clock.Config{Mode: clock.BSP}})
	if err != nil {
		t.Fatal(err)
	}
	keys := []uint64{3, 50}
	if _, _, ok := s.PushLocal(0, 1, 0, 0, keys, []float32{1, 2}, nil); ok {
		t.Fatal("a push served before the loop runs")
	}
	conn := &recConn{got: make(chan string, 16)}
	in := make(chan *transport.Message)
	done := make(chan error, 1)
	go func() { done <- s.Run(context.Background(), in, conn) }()
	push := func(w int, id uint64, round int64, vals []float32) *transport.Message {
		return &transport.Message{
			Header: transport.Header{Type: transport.TypeData, Flags: transport.FlagRequest | transport.FlagPush | transport.FlagBorrowed, Cmd: proto.DataSparse, ID: id,
				Sender: proto.WorkerID(w), Receiver: proto.ServerID(0)},
			Body: proto.AppendMetaEpoch(nil, round, 0),
			KV:   kv.Batch{Keys: keys, Vals: vals},
		}
	}
	pull := func(w int, id uint64, round int64) *transport.Message {
		return &transport.Message{Header: transport.Header{Type: transport.TypeData, Flags: transport.FlagRequest | transport.FlagPull, Cmd: proto.DataSparse, ID: id,
			Sender: proto.WorkerID(w), Receiver: proto.ServerID(0)}, Body: proto.AppendMetaEpoch(nil, round, 0), KV: kv.Batch{Keys: keys}}
	}
	in <- pull(1, 10, 0) // taken: the loop runs
	// Round 0: worker 0's push first, directly: held.
	if answered, err, ok := s.PushLocal(0, 1, 0, 0, keys, []float32{1e8, 1}, nil); !ok || answered || err != nil {
		t.Fatalf("the round's first push: %v, %v, %v; want it held", answered, err, ok)
	}
	if _, _, ok := s.PushLocal(0, 2, 1, 7, keys, []float32{1, 1}, nil); ok {
		t.Error("a push of epoch 7 served directly by a server in epoch 0")
	}
	in <- push(1, 11, 0, []float32{-1e8, 1})
	in <- pull(1, 12, 1) // a turn of the loop after the push's
	if got := conn.next(4); !slices.Equal(got[1:3], []string{"ack 1 to worker 0", "ack 11 to worker 1"}) && !slices.Equal(got[1:3], []string{"ack 11 to worker 1", "ack 1 to worker 0"}) {
		t.Fatalf("replies %v, want a pull's answer, both round 0 acknowledgements, then the pull's answer", got)
	}
	// Round 1: worker 1's push first, as a message; worker 0's direct
	// push completes the round, answered at once, and releases worker
	// 1's acknowledgement.
	in <- push(1, 13, 1, []float32{1, 1})
	in <- pull(1, 14, 1) // taken once the push was handled
	answered, err, ok := s.PushLocal(0, 2, 1, 0, keys, []float32{-1, 1e8}, nil)
	if !answered || err != nil || !ok {
		t.Fatalf("the push that completes the round: %v, %v, %v", answered, err, ok)
	}
	if got := conn.next(2); !slices.Equal(slices.Sorted(slices.Values(got)), []string{"ack 13 to worker 1", "ack 14 to worker 1"}) {
		t.Fatalf("replies %v, want the pull's answer and worker 1's acknowledgement", got)
	}
	// Each round's sum applied: (1e8 − 1e8) + (−1 + 1) = 0 for key 3,
	// (1 + 1) + (1e8 + 1) = 1e8 in float32 for key 50.
	got := s.core.Store().Pull(kv.Batch{}, keys).Vals
	if want := []float32{0, float32(2) + float32(1e8)}; !slices.Equal(got, want) {
		t.Errorf("values %v, want %v", got, want)
	}
	// A bad push: the error of a message.
	answered, err, ok = s.PushLocal(0, 3, 2, 0, []uint64{50, 3}, []float32{1, 1}, nil)
	if !ok || !answered || err == nil {
		t.Errorf("a push of unsorted keys: %v, %v, %v", answered, err, ok)
	}
	if st := s.Stats(); st.Pushes != 4 || st.Pulls != 3 || st.Errors != 1 {
		t.Errorf("counters %+v, want 4 pushes (the refused one is not counted), 3 pulls, 1 error", st)
	}
	close(in)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestApplyAllStopsAtBadKey pushes, with a rule (whose keys are placed
// one ahead of the rule's work, applyAll), a batch whose middle key
// contradicts its stored length: the error names the key, the keys
// before it are applied and the ones after are not, as a key-by-key
// push does.
func TestApplyAllStopsAtBadKey(t *testing.T) {
	tb, _ := route.Uniform(1, 10)
	s := NewStore(tb.Index(0), 0, update.SGD{LR: 1})
	if err := s.Push(kv.Batch{Keys: []uint64{1, 2, 3}, Vals: []float32{1, 1, 2, 2, 3, 3}, Lens: []int32{2, 2, 2}}); err != nil {
		t.Fatal(err)
	}
	err := s.Push(kv.Batch{Keys: []uint64{1, 2, 3}, Vals: []float32{1, 1, 1, 1, 1, 1, 1}, Lens: []int32{2, 3, 2}})
	if err == nil || !strings.Contains(err.Error(), "key 2 has 2 values, pushed with 3") {
		t.Fatalf("push with a bad length: %v", err)
	}
	got := s.Pull(kv.Batch{}, []uint64{1, 2, 3})
	if want := []float32{-2, -2, -2, -2, -3, -3}; !slices.Equal(got.Vals, want) {
		t.Errorf("values %v, want %v: key 1 applied twice, keys 2 and 3 once", got.Vals, want)
	}
}
