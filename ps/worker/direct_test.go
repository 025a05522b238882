package worker

import (
	"math"
	"slices"
	"testing"

	"colo/kv"
	"colo/ps/clock"
	"colo/ps/proto"
	"colo/ps/server"
)

// coreLocal serves a worker's direct pulls from a server core of the
// simulation, as server.Server.PullLocal does from its own.
type coreLocal struct {
	rank  int
	core  *server.Core
	calls int
}

func (l *coreLocal) Rank() int { return l.rank }

func (l *coreLocal) PullLocal(w int, id uint64, round int64, epoch uint64, keys []uint64, room []float32, lens []int32) ([]float32, []int32, error, bool) {
	l.calls++
	rs := l.core.Handle(server.Request{Worker: w, ID: id, Cmd: proto.DataSparse, Round: round, KV: kv.Batch{Keys: keys}, Dst: room}, false)
	if rs[0].Err != nil {
		return nil, nil, rs[0].Err, true
	}
	return rs[0].Vals, append(lens[:0], rs[0].Lens...), nil, true
}

// TestDirectBSP runs two workers and two servers under BSP, each worker
// beside one server, with values whose sums round: a pull of a worker's
// own server's keys is served directly only when nothing of the worker
// is in flight (never while its push waits for the round), and then
// reads, bit for bit, what the other worker's pull of the same keys
// reads through messages.
func TestDirectBSP(t *testing.T) {
	tb := mustUniform(2, 8) // servers own [0,4), [4,8)
	s := newSim(t, 3, tb, 2, 0, clock.Config{Mode: clock.BSP})
	locals := []*coreLocal{{rank: 0, core: s.servers[0]}, {rank: 1, core: s.servers[1]}}
	all := []uint64{0, 1, 2, 3, 4, 5, 6, 7}
	own := [][]uint64{{0, 2, 3}, {4, 5, 7}}
	for round := range 5 {
		pushes := make([]*Future, 2)
		for w := range 2 {
			vals := make([]float32, len(all))
			for i := range vals {
				vals[i] = float32(0.1*float64(round+1)+0.37*float64(w)) * float32(i+1)
			}
			pushes[w] = s.submit(w, &Op{kind: opPush, keys: all, vals: vals, lens: slices.Repeat([]int32{1}, len(all))})
			// The push is in flight: the pull goes as a message, behind
			// the round gate.
			var b kv.Batch
			op := &Op{kind: opPull, keys: own[w], dstBatch: &b, fut: newFuture()}
			calls := locals[w].calls
			if s.workers[w].Direct(op, locals[w]) || locals[w].calls != calls || isDone(op.fut) {
				t.Fatalf("round %d: worker %d's pull was served directly while its push was in flight", round, w)
			}
		}
		s.run()
		for w := range 2 {
			if err := pushes[w].Wait(); err != nil {
				t.Fatal(err)
			}
		}
		// Worker w pulls its own keys directly, the other's through
		// messages.
		for w := range 2 {
			var direct, sent kv.Batch
			op := &Op{kind: opPull, keys: own[w], dstBatch: &direct, fut: newFuture()}
			if !s.workers[w].Direct(op, locals[w]) {
				t.Fatalf("round %d: worker %d's pull was not served directly with nothing in flight", round, w)
			}
			if err := op.fut.Wait(); err != nil {
				t.Fatal(err)
			}
			f := s.submit(1-w, &Op{kind: opPull, keys: own[w], dstBatch: &sent})
			s.run()
			if err := f.Wait(); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(bitsOf(direct.Vals), bitsOf(sent.Vals)) || !slices.Equal(direct.Lens, sent.Lens) || !slices.Equal(direct.Keys, own[w]) {
				t.Fatalf("round %d: worker %d read %v %v directly, worker %d %v %v through messages", round, w, direct.Vals, direct.Lens, 1-w, sent.Vals, sent.Lens)
			}
			var want float32
			for r := range round + 1 {
				// The server sums a round in rank order, then adds it.
				g := float32(0.1*float64(r+1))*float32(own[w][0]+1) + float32(0.1*float64(r+1)+0.37)*float32(own[w][0]+1)
				want += g
			}
			if direct.Vals[0] != want {
				t.Fatalf("round %d: key %d = %v, want %v", round, own[w][0], direct.Vals[0], want)
			}
		}
	}
	for w := range 2 {
		st := s.workers[w].Stats()
		if st.Direct != 5 || st.Pulls != 10 || st.Errors != 0 {
			t.Errorf("worker %d: %d direct of %d pulls, %d errors; want 5 of 10, 0", w, st.Direct, st.Pulls, st.Errors)
		}
	}
	// Keys of the other server, a paused worker, and a pull ahead
	// under BSP go as messages (where they fail or wait as they do).
	for _, op := range []*Op{
		{kind: opPull, keys: []uint64{3, 4}, dstBatch: new(kv.Batch)},
		{kind: opPull, keys: []uint64{2, 1}, dstBatch: new(kv.Batch)},
		{kind: opPull, keys: []uint64{1}, dstBatch: new(kv.Batch), ahead: true},
		{kind: opPull, keys: []uint64{1}, dst: make([]float32, 1)},
	} {
		op.fut = newFuture()
		if s.workers[0].Direct(op, locals[0]) {
			t.Errorf("%+v served directly", op)
		}
	}
	s.workers[0].pause(1, proto.ErrPaused)
	if op := (&Op{kind: opPull, keys: []uint64{1}, dstBatch: new(kv.Batch), fut: newFuture()}); s.workers[0].Direct(op, locals[0]) {
		t.Error("a paused worker's pull served directly")
	}
}

func bitsOf(v []float32) []uint32 {
	b := make([]uint32, len(v))
	for i, x := range v {
		b[i] = math.Float32bits(x)
	}
	return b
}
