package worker

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"colo/kv"
	"colo/ps/clock"
	"colo/ps/proto"
	"colo/ps/server"
)

// coreLocal serves a worker's direct pulls and pushes from a server
// core of the simulation, as server.Server.PullLocal and PushLocal do
// from their own: the replies for other workers go through the
// simulation's links.
type coreLocal struct {
	rank  int
	core  *server.Core
	calls int
	sim   *sim
}

func (l *coreLocal) PushLocal(w int, id uint64, round int64, epoch uint64, keys []uint64, vals []float32, lens []int32) (answered bool, err error, ok bool) {
	l.calls++
	for _, r := range l.core.Handle(server.Request{Worker: w, ID: id, Cmd: proto.DataSparse, Round: round, Push: true, KV: kv.Batch{Keys: keys, Vals: vals, Lens: lens}}, false) {
		if r.Worker == w && r.ID == id {
			answered, err = true, r.Err
			continue
		}
		l.sim.send(proto.ServerID(l.rank), proto.WorkerID(r.Worker), r.Message())
	}
	return answered, err, true
}

func (l *coreLocal) Rank() int { return l.rank }

func (l *coreLocal) PullLocal(w int, id uint64, round int64, epoch uint64, keys []uint64, room []float32, lens []int32) ([]float32, []int32, error, bool) {
	l.calls++
	rs := l.core.Handle(server.Request{Worker: w, ID: id, Cmd: proto.DataSparse, Round: round, KV: kv.Batch{Keys: keys}, Dst: room}, false)
	if rs[0].Err != nil {
		return nil, nil, rs[0].Err, true
	}
	vals := rs[0].Vals
	if len(vals) > 0 && (cap(room) < len(vals) || &room[:1][0] != &vals[0]) {
		vals = slices.Clone(vals) // the core's buffer: an array of their own
	}
	return vals, append(lens[:0], rs[0].Lens...), nil, true
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
	locals := []*coreLocal{{rank: 0, core: s.servers[0], sim: s}, {rank: 1, core: s.servers[1], sim: s}}
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
			if _, ok := s.workers[w].Direct(op, locals[w]); ok || locals[w].calls != calls || isDone(op.fut) {
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
			if outs, ok := s.workers[w].Direct(op, locals[w]); !ok || len(outs) != 0 || !op.fut.Direct() {
				t.Fatalf("round %d: worker %d's pull was not served directly with nothing in flight (%v, %d messages)", round, w, ok, len(outs))
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
	// A pull of both servers' keys: the local part served at once, the
	// other as a message; the values those of a pull through messages.
	keys := []uint64{2, 3, 4, 6}
	var mixed, sent kv.Batch
	op := &Op{kind: opPull, keys: keys, dstBatch: &mixed, fut: newFuture()}
	calls := locals[0].calls
	outs, ok := s.workers[0].Direct(op, locals[0])
	if !ok || len(outs) != 1 || outs[0].Server != 1 || !slices.Equal(outs[0].M.KV.Keys, keys[2:]) || locals[0].calls != calls+1 || isDone(op.fut) {
		t.Fatalf("a pull of two servers' keys: %v, %d messages, %d local calls", ok, len(outs), locals[0].calls-calls)
	}
	s.post(0, outs)
	f := s.submit(1, &Op{kind: opPull, keys: keys, dstBatch: &sent})
	s.run()
	if err := op.fut.Wait(); err != nil || f.Wait() != nil || op.fut.Direct() {
		t.Fatalf("a pull of two servers' keys: %v, %v, direct %v", err, f.Err(), op.fut.Direct())
	}
	if !slices.Equal(bitsOf(mixed.Vals), bitsOf(sent.Vals)) || !slices.Equal(mixed.Lens, sent.Lens) || !slices.Equal(mixed.Keys, keys) {
		t.Fatalf("read %v %v in part directly, %v %v through messages", mixed.Vals, mixed.Lens, sent.Vals, sent.Lens)
	}
	// Bad calls fail as they fail through messages; a paused worker's
	// calls go to the driver (which fails them).
	for _, bad := range []*Op{
		{kind: opPull, keys: []uint64{2, 1}, dstBatch: new(kv.Batch)},
		{kind: opPull, keys: []uint64{1}, dstBatch: new(kv.Batch), ahead: true},
		{kind: opPull, keys: []uint64{1}, dst: make([]float32, 1)},
		{kind: opPush, keys: []uint64{1, 1}, vals: []float32{1, 2}},
	} {
		viaMsg := *bad
		bad.fut, viaMsg.fut = newFuture(), newFuture()
		if _, ok := s.workers[0].Direct(bad, locals[0]); !ok || !isDone(bad.fut) {
			t.Fatalf("%+v: direct %v, done %v", bad, ok, isDone(bad.fut))
		}
		if outs := s.workers[0].Submit(&viaMsg); len(outs) != 0 || !isDone(viaMsg.fut) || bad.fut.Err() == nil || bad.fut.Err().Error() != viaMsg.fut.Err().Error() {
			t.Fatalf("%+v: failed with %v directly, with %v through the driver", bad, bad.fut.Err(), viaMsg.fut.Err())
		}
	}
	s.workers[0].pause(1, proto.ErrPaused)
	if _, ok := s.workers[0].Direct(&Op{kind: opPull, keys: []uint64{1}, dstBatch: new(kv.Batch), fut: newFuture()}, locals[0]); ok {
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

// orderSensitive are gradients whose float32 sums depend on the order of
// addition: 1e8 + 1 − 1e8 is 0, 1e8 − 1e8 + 1 is 1.
var orderSensitive = []float32{1e8, -1e8, 1, -1, 0.5, 3, 1e-3, 7e7, -3e7}

// TestDirectSameAsMessages runs the same calls of two workers, each
// beside one of two servers (or the first beside the one server),
// twice: through messages only, and started
// on the caller's goroutine whenever the core allows it (Core.Direct:
// the local part of a pull or push served at once, the rest as
// messages). Pulls ask for their own server's keys, both servers' or
// none; pushes likewise. Under BSP, with gradients whose sums round,
// every pull reads the same bits either way, and so do the final
// values; under bounded delay and asynchronous training, with integer
// gradients, the final values are the exact sums either way.
func TestDirectSameAsMessages(t *testing.T) {
	const rounds, numKeys = 10, 16
	for _, servers := range []int{2, 1} {
		tb := mustUniform(servers, numKeys) // two servers own [0,8), [8,16)
		for _, ck := range []clock.Config{{Mode: clock.BSP}, {Mode: clock.Bounded, Tau: 1}, {Mode: clock.Async}} {
			exact := ck.Mode != clock.BSP
			ck := ck
			run := func(direct bool) (reads [][]uint32, final []float32, st []Stats) {
				s := newSim(t, 5, tb, 2, 0, ck)
				var locals []*coreLocal
				for r := range servers {
					locals = append(locals, &coreLocal{rank: r, core: s.servers[r], sim: s})
				}
				rng := rand.New(rand.NewPCG(8, 1))
				keysOf := func(w int) []uint64 {
					var keys []uint64
					lo, hi := uint64(0), uint64(numKeys)
					switch rng.IntN(3) {
					case 0: // its own server's
						lo, hi = uint64(8*w), uint64(8*w+8)
					case 1: // none
						return nil
					}
					for k := lo; k < hi; k++ {
						if rng.IntN(2) == 0 {
							keys = append(keys, k)
						}
					}
					return keys
				}
				start := func(w int, op *Op) *Future {
					op.fut = newFuture()
					if direct && w < len(locals) {
						if outs, ok := s.workers[w].Direct(op, locals[w]); ok {
							s.post(w, outs)
							return op.fut
						}
					}
					s.post(w, s.workers[w].Submit(op))
					return op.fut
				}
				type read struct {
					f *Future
					b *kv.Batch
				}
				var all []read
				var pushes []*Future
				for range rounds {
					for w := range 2 {
						if keys := keysOf(w); len(keys) > 0 {
							b := new(kv.Batch)
							all = append(all, read{start(w, &Op{kind: opPull, keys: keys, dstBatch: b}), b})
						}
						keys := keysOf(w)
						vals := make([]float32, 2*len(keys))
						for i := range vals {
							if exact {
								vals[i] = float32(rng.IntN(9) - 4)
							} else {
								vals[i] = orderSensitive[rng.IntN(len(orderSensitive))]
							}
						}
						pushes = append(pushes, start(w, &Op{kind: opPush, keys: keys, vals: vals}))
					}
					s.run()

				}
				for i, f := range pushes {
					if err := f.Wait(); err != nil {
						t.Fatalf("%v, direct %v: push %d: %v", ck, direct, i, err)
					}
				}
				for i, r := range all {
					if err := r.f.Wait(); err != nil {
						t.Fatalf("%v, direct %v: pull %d: %v", ck, direct, i, err)
					}
					reads = append(reads, bitsOf(r.b.Vals))

				}
				keys := make([]uint64, numKeys)
				for k := range keys {
					keys[k] = uint64(k)
				}
				var b kv.Batch
				f := s.submit(0, &Op{kind: opPull, keys: keys, dstBatch: &b})
				s.run()
				if err := f.Wait(); err != nil {
					t.Fatal(err)
				}
				return reads, b.Vals, []Stats{s.workers[0].Stats(), s.workers[1].Stats()}
			}
			sentReads, sentFinal, sentStats := run(false)
			directReads, directFinal, directStats := run(true)
			if !slices.Equal(bitsOf(sentFinal), bitsOf(directFinal)) {
				t.Fatalf("%v: final values %v through messages, %v with direct calls", ck, sentFinal, directFinal)
			}
			if !exact {
				for i := range sentReads {
					if !slices.Equal(sentReads[i], directReads[i]) {
						t.Fatalf("%v: pull %d read %v with direct calls, %v through messages", ck, i, directReads[i], sentReads[i])
					}
				}
			}
			var d, dp uint64
			for w := range 2 {
				d, dp = d+directStats[w].Direct, dp+directStats[w].DirectPushes
				if sentStats[w].Direct != 0 || sentStats[w].DirectPushes != 0 {
					t.Fatalf("%v: worker %d counted direct calls through messages", ck, w)
				}
				if a, b := directStats[w], sentStats[w]; a.Pushes != b.Pushes || a.Pulls != b.Pulls || a.KeysPushed != b.KeysPushed || a.KeysPulled != b.KeysPulled || a.Errors != 0 {
					t.Fatalf("%v: worker %d counted %+v with direct calls, %+v through messages", ck, w, a, b)
				}
			}
			if d == 0 || dp == 0 {
				t.Fatalf("%v: %d pulls and %d pushes served directly: the test does not test them", ck, d, dp)
			}
		}
	}
}
