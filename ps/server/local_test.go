package server

import (
	"slices"
	"testing"

	"colo/kv"
	"colo/ps/clock"
	"colo/ps/route"
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
