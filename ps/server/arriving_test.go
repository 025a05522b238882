package server

import (
	"context"
	"errors"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"colo/kv"
	"colo/ps/clock"
	"colo/ps/proto"
	"colo/ps/route"
	"colo/ps/update"
	"colo/transport"
)

// revealing is an Arriving whose values arrive in random parts, of any
// size including ones that split a key's values, at each look; after
// stop of them, the rest never arrives.
type revealing struct {
	rng   *rand.Rand
	n     int // values there
	total int
	stop  int // values after which the stream breaks, total for none
	step  int
	looks int
}

func (r *revealing) more() {
	r.looks++
	r.n = min(r.stop, r.n+r.rng.IntN(r.step+1))
}

func (r *revealing) Arrived() (int, error) {
	r.more()
	if r.n == r.stop && r.stop < r.total {
		return r.n, io.ErrUnexpectedEOF
	}
	return r.n, nil
}

func (r *revealing) Await(have int) (int, error) {
	for r.n <= have && r.n < r.total {
		if r.n == r.stop {
			return r.n, io.ErrUnexpectedEOF
		}
		r.more()
	}
	return r.n, nil
}

// TestHandleArriving checks that dense pushes applied as their values
// arrive, in parts of every size including ones that split a key's values
// and lengths that are no multiple of ApplyStep, leave the store, the
// replies and the counters bit for bit as Handle does, for every update
// rule, in asynchronous and bounded-delay training; that the early
// acknowledgement goes exactly when Ack would answer, once, after all the
// values arrived; and that pushes it cannot take are left alone.
func TestHandleArriving(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	const numKeys, width = 3 * ApplyStep, 3
	rules := []update.Rule{update.Sum{}, update.SGD{LR: 0.1, L1: 0.01, L2: 0.01}, update.AdaGrad{LR: 0.1, Eps: 1e-6, L1: 0.01, L2: 0.01}, update.FTRL{Alpha: 0.1, Beta: 1, L1: 0.01, L2: 0.01}}
	for _, ck := range []clock.Config{{Mode: clock.Async}, {Mode: clock.Bounded, Tau: 1}} {
		for _, rule := range rules {
			tb, _ := route.Uniform(2, numKeys)
			mk := func() *Core {
				c, err := New(Config{Rank: 1, Workers: 2, Table: tb, Width: width, Rule: rule, Clock: ck})
				if err != nil {
					t.Fatal(err)
				}
				return c
			}
			whole, arriving := mk(), mk()
			// Both mark the slots they write for an incremental capture.
			whole.Store().Track()
			arriving.Store().Track()
			lo0 := uint64(numKeys / 2)
			for i := range 30 {
				lo := lo0 + uint64(rng.IntN(100))
				hi := lo + uint64(rng.IntN(int(numKeys-lo)+1))
				vals := make([]float32, (hi-lo)*width)
				for j := range vals {
					vals[j] = float32(rng.NormFloat64())
				}
				r := Request{Worker: i % 2, ID: uint64(i), Round: int64(i / 2), Push: true, Range: true, KV: kv.Batch{Keys: []uint64{lo, hi}, Vals: vals}}
				ack, early := whole.Ack(r)
				want := slices.Clone(whole.Handle(r, early))
				src := &revealing{rng: rng, total: len(vals), stop: len(vals), step: 1 + rng.IntN(2*ApplyStep)}
				var acks []Reply
				got, ok, err := arriving.HandleArriving(r, src, func(a Reply) {
					if src.n != src.total {
						t.Errorf("push %d acknowledged after %d of %d values", i, src.n, src.total)
					}
					acks = append(acks, a)
				})
				if !ok || err != nil || !slices.EqualFunc(got, want, func(a, b Reply) bool { return a.ID == b.ID && a.Worker == b.Worker && a.Err == nil && b.Err == nil }) {
					t.Fatalf("%v %s push %d: %+v %v %v, want %+v", ck.Mode, rule.Name(), i, got, ok, err, want)
				}
				if early != (len(acks) == 1) || len(acks) > 1 || early && (acks[0].ID != ack.ID || acks[0].Worker != ack.Worker || acks[0].Err != nil) {
					t.Fatalf("%v %s push %d: acknowledged early %+v, Ack says %v %+v", ck.Mode, rule.Name(), i, acks, early, ack)
				}
			}
			a, _, _ := whole.Store().PullRange(lo0, numKeys, nil)
			b, _, _ := arriving.Store().PullRange(lo0, numKeys, nil)
			for i := range a {
				if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
					t.Fatalf("%v %s: value %d is %v applied as it arrived, %v whole", ck.Mode, rule.Name(), i, b[i], a[i])
				}
			}
			if whole.Stats() != arriving.Stats() {
				t.Fatalf("%v %s: stats %+v applied as it arrived, %+v whole", ck.Mode, rule.Name(), arriving.Stats(), whole.Stats())
			}
			if whole.Store().Changed() == 0 {
				t.Fatalf("%v %s: no slot marked after 30 pushes", ck.Mode, rule.Name())
			}
			for j := range whole.Store().Keys() {
				if whole.Store().marked(j) != arriving.Store().marked(j) {
					t.Fatalf("%v %s: slot %d marked %v applied as it arrived, %v whole", ck.Mode, rule.Name(), j, arriving.Store().marked(j), whole.Store().marked(j))
				}
			}
		}
	}
	// Not taken: BSP, sparse pushes, pulls, ranges outside the server's
	// run of keys, wrong lengths, unknown workers.
	tb, _ := route.Uniform(2, 300)
	bsp, _ := New(Config{Rank: 0, Workers: 1, Table: tb, Width: 1, Clock: clock.DefaultConfig()})
	async, _ := New(Config{Rank: 0, Workers: 1, Table: tb, Width: 1, Clock: clock.Config{Mode: clock.Async}})
	free, _ := New(Config{Rank: 0, Workers: 1, Table: tb, Clock: clock.Config{Mode: clock.Async}})
	rng4 := Request{Push: true, Range: true, KV: kv.Batch{Keys: []uint64{0, 4}, Vals: make([]float32, 4)}}
	for _, k := range []struct {
		c *Core
		r Request
	}{
		{bsp, rng4},
		{free, rng4},
		{async, Request{Push: true, KV: kv.Batch{Keys: []uint64{0, 4}, Vals: make([]float32, 2)}}},
		{async, Request{Range: true, KV: kv.Batch{Keys: []uint64{0, 4}}}},
		{async, Request{Push: true, Range: true, KV: kv.Batch{Keys: []uint64{148, 152}, Vals: make([]float32, 4)}}},
		{async, Request{Push: true, Range: true, KV: kv.Batch{Keys: []uint64{0, 4}, Vals: make([]float32, 3)}}},
		{async, Request{Worker: 1, Push: true, Range: true, KV: kv.Batch{Keys: []uint64{0, 4}, Vals: make([]float32, 4)}}},
	} {
		src := &revealing{rng: rng, total: len(k.r.KV.Vals), stop: len(k.r.KV.Vals), step: 2}
		if _, ok, _ := k.c.HandleArriving(k.r, src, func(Reply) { t.Errorf("%+v acknowledged", k.r) }); ok || src.looks != 0 {
			t.Fatalf("%+v taken", k.r)
		}
	}
	// Values broken off: no acknowledgement, no reply, the push not
	// counted, the values that arrived applied.
	big := Request{Push: true, Range: true, KV: kv.Batch{Keys: []uint64{0, 150}, Vals: slices.Repeat([]float32{1}, 150)}}
	src := &revealing{rng: rng, total: 150, stop: 100, step: 7}
	out, ok, err := async.HandleArriving(big, src, func(Reply) { t.Error("broken push acknowledged") })
	if !ok || !errors.Is(err, io.ErrUnexpectedEOF) || out != nil || async.Stats().Pushes != 0 {
		t.Fatalf("broken push: %+v %v %v, stats %+v", out, ok, err, async.Stats())
	}
	v, _, _ := async.Store().PullRange(0, 150, nil)
	ones := 0
	for ones < len(v) && v[ones] == 1 {
		ones++
	}
	if ones == 0 || ones > 100 || slices.ContainsFunc(v[ones:], func(x float32) bool { return x != 0 }) {
		t.Fatalf("after the broken push the keys hold %v", v)
	}
}

// connFunc is a Conn that records replies.
type connFunc func(to transport.NodeID, m *transport.Message)

func (f connFunc) Reply(_ context.Context, to transport.NodeID, m *transport.Message) error {
	f(to, m)
	return nil
}

// TestServerEarlyPushCut feeds a server a dense push delivered before
// its values were read, from a stream that breaks off in the middle of
// the values: the server neither answers nor hangs, and its next
// messages are served.
func TestServerEarlyPushCut(t *testing.T) {
	const n = 4 * ApplyStep
	tb, _ := route.Uniform(1, n)
	for _, ck := range []clock.Config{{Mode: clock.Async}, clock.DefaultConfig()} {
		s, err := NewServer(Config{Rank: 0, Workers: 1, Table: tb, Width: 1, Clock: ck})
		if err != nil {
			t.Fatal(err)
		}
		push := &transport.Message{Header: transport.Header{Type: transport.TypeData, Flags: transport.FlagRequest | transport.FlagPush, Cmd: proto.DataRange, ID: 5},
			Body: make([]byte, 8), KV: kv.Batch{Keys: []uint64{0, n}, Vals: slices.Repeat([]float32{1}, n)}}
		frame, err := transport.AppendFrame(nil, push, proto.WorkerID(0), proto.ServerID(0), transport.FrameOptions{RawKeys: true})
		if err != nil {
			t.Fatal(err)
		}
		pr, pw := io.Pipe()
		dec := transport.NewDecoder(pr, 0)
		dec.SetEarly(func(*transport.Header, int) bool { return true })
		go func() {
			pw.Write(frame[:len(frame)-4*n/2-1])
			pw.CloseWithError(errors.New("link cut"))
		}()
		m := new(transport.Message)
		if _, err := dec.Decode(m); err != nil || !m.Early() {
			t.Fatalf("Decode: %v, early %v", err, m.Early())
		}
		go dec.Decode(new(transport.Message)) // the reader reads on, and fails
		in := make(chan *transport.Message, 1)
		in <- m
		close(in)
		var replies []*transport.Message
		done := make(chan error, 1)
		go func() {
			done <- s.Run(context.Background(), in, connFunc(func(_ transport.NodeID, m *transport.Message) { replies = append(replies, m) }))
		}()
		select {
		case err := <-done:
			if err != nil || len(replies) != 0 || s.Stats().Pushes != 0 {
				t.Fatalf("%v: Run: %v, replies %v, stats %+v", ck.Mode, err, replies, s.Stats())
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%v: server hangs on a cut push", ck.Mode)
		}
	}
}
