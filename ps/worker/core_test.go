package worker

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"colo/kv"
	"colo/ps/clock"
	"colo/ps/proto"
	"colo/ps/route"
	"colo/ps/server"
	"colo/transport"
)

// link is a message in flight on the simulated network.
type link struct {
	from, to transport.NodeID
}

// sim connects worker cores to server cores through per-link FIFO queues
// delivered in a random order: the whole data path without goroutines,
// sockets or time.
type sim struct {
	t       *testing.T
	rng     *rand.Rand
	workers []*Core
	servers []*server.Core
	queues  map[link][]*transport.Message
	links   []link
}

func newSim(t *testing.T, seed uint64, tb *route.Table, workers, width int, ck clock.Config) *sim {
	s := &sim{t: t, rng: rand.New(rand.NewPCG(seed, 9)), queues: map[link][]*transport.Message{}}
	for w := range workers {
		c, err := NewCore(Config{Rank: w, Table: tb, Width: width, Clock: ck})
		if err != nil {
			t.Fatal(err)
		}
		s.workers = append(s.workers, c)
	}
	for r := range tb.Servers() {
		c, err := server.New(server.Config{Rank: r, Workers: workers, Table: tb, Width: width, Clock: ck})
		if err != nil {
			t.Fatal(err)
		}
		s.servers = append(s.servers, c)
	}
	return s
}

// send queues a copy of m, as a network would deliver it.
func (s *sim) send(from, to transport.NodeID, m *transport.Message) {
	c := m.Clone()
	c.Sender, c.Receiver = from, to
	l := link{from, to}
	if len(s.queues[l]) == 0 {
		s.links = append(s.links, l)
	}
	s.queues[l] = append(s.queues[l], c)
}

func (s *sim) post(w int, outs []Out) {
	for _, o := range outs {
		s.send(proto.WorkerID(w), proto.ServerID(o.Server), o.M)
	}
}

// run delivers messages until none is left.
func (s *sim) run() {
	for len(s.links) > 0 {
		i := s.rng.IntN(len(s.links))
		l := s.links[i]
		q := s.queues[l]
		m := q[0]
		s.queues[l] = q[1:]
		if len(q) == 1 {
			s.links = slices.Delete(s.links, i, i+1)
		}
		role, rank := proto.Identify(l.to)
		if role == proto.RoleServer {
			req, err := server.Decode(m)
			if err != nil {
				s.t.Fatal(err)
			}
			ack, acked := s.servers[rank].Ack(req)
			if acked {
				s.send(l.to, proto.WorkerID(ack.Worker), ack.Message())
			}
			for _, r := range s.servers[rank].Handle(req, acked) {
				s.send(l.to, proto.WorkerID(r.Worker), r.Message())
			}
			continue
		}
		_, from := proto.Identify(l.from)
		s.post(rank, s.workers[rank].Receive(from, m))
	}
}

// TestExactSumsSimulated has every worker submit all its rounds at once
// (the core gates them) with known integer increments on random,
// overlapping keys, in every consistency model and table form, and
// checks that the final values are the exact sums and that no request
// ran more than τ rounds ahead of the slowest worker.
func TestExactSumsSimulated(t *testing.T) {
	const numKeys, rounds = 64, 12
	param := make([]int32, numKeys)
	rng := rand.New(rand.NewPCG(1, 1))
	for i := range param {
		param[i] = int32(rng.IntN(3))
	}
	dense, _ := route.FromPlacement(param, 3)
	ranges, _ := route.Uniform(3, numKeys)
	for _, tb := range []*route.Table{ranges, dense} {
		for _, ck := range []clock.Config{{Mode: clock.BSP}, {Mode: clock.Bounded, Tau: 2}, {Mode: clock.Async}} {
			for seed := range uint64(5) {
				name := fmt.Sprintf("%v/%v/seed%d", tb.Kind(), ck, seed)
				const workers = 3
				s := newSim(t, seed, tb, workers, 1, ck)
				want := make([]float32, numKeys)
				var futs []*Future
				for w := range workers {
					r := rand.New(rand.NewPCG(seed, uint64(w)))
					for round := range rounds {
						// A pull, then a sparse or range push.
						dst := make([]float32, 4)
						futs = append(futs, s.submit(w, &Op{kind: opPull, keys: []uint64{1, 5, 9, 60}, dst: dst}))
						if round%4 == 3 {
							b := uint64(r.IntN(numKeys - 20))
							vals := make([]float32, 20)
							for i := range vals {
								vals[i] = float32(r.IntN(5))
								want[b+uint64(i)] += vals[i]
							}
							futs = append(futs, s.submit(w, &Op{kind: opPushRange, begin: b, end: b + 20, vals: vals}))
							continue
						}
						var keys []uint64
						for k := range uint64(numKeys) {
							if r.IntN(4) == 0 {
								keys = append(keys, k)
							}
						}
						vals := make([]float32, len(keys))
						for i, k := range keys {
							vals[i] = float32(1 + r.IntN(7))
							want[k] += vals[i]
						}
						futs = append(futs, s.submit(w, &Op{kind: opPush, keys: keys, vals: vals}))
					}
				}
				s.run()
				for i, f := range futs {
					select {
					case <-f.Done():
						if f.Err() != nil {
							t.Fatalf("%s: op %d: %v", name, i, f.Err())
						}
					default:
						t.Fatalf("%s: op %d never completed", name, i)
					}
				}
				// Read everything back with a range pull and a sparse one.
				all := make([]float32, numKeys)
				f := s.submit(0, &Op{kind: opPullRange, begin: 0, end: numKeys, dst: all})
				keys := []uint64{0, 7, 33, 63}
				some := make([]float32, len(keys))
				g := s.submit(1, &Op{kind: opPull, keys: keys, dst: some})
				s.run()
				if f.Wait() != nil || g.Wait() != nil {
					t.Fatalf("%s: final pulls: %v %v", name, f.Err(), g.Err())
				}
				if !slices.Equal(all, want) {
					t.Fatalf("%s: values %v, want %v", name, all, want)
				}
				for i, k := range keys {
					if some[i] != want[k] {
						t.Fatalf("%s: key %d = %v, want %v", name, k, some[i], want[k])
					}
				}
				for r, sc := range s.servers {
					st := sc.Stats()
					if d := ck.Delay(); d >= 0 && st.MaxLead > int64(d) {
						t.Fatalf("%s: server %d saw a worker %d rounds ahead, τ = %d", name, r, st.MaxLead, d)
					}
					if ck.Mode != clock.Async && st.Rounds != rounds {
						t.Fatalf("%s: server %d counted %d rounds, want %d", name, r, st.Rounds, rounds)
					}
				}
			}
		}
	}
}

func (s *sim) submit(w int, op *Op) *Future {
	op.fut = newFuture()
	s.post(w, s.workers[w].Submit(op))
	return op.fut
}

func TestPerKeyLengths(t *testing.T) {
	for _, tb := range []*route.Table{mustUniform(2, 10), mustPlacement([]int32{1, 0, 1, 0, 1, 0, 1, 0, 1, 0}, 2)} {
		s := newSim(t, 1, tb, 1, 0, clock.Config{Mode: clock.Async})
		keys := []uint64{1, 4, 8}
		f := s.submit(0, &Op{kind: opPush, keys: keys, vals: []float32{1, 2, 2, 3, 3, 3}, lens: []int32{1, 2, 3}})
		s.run()
		if err := f.Wait(); err != nil {
			t.Fatal(err)
		}
		var dst kv.Batch
		op := &Op{kind: opPull, keys: []uint64{0, 1, 4, 8}, dstBatch: &dst}
		f = s.submit(0, op)
		s.run()
		if err := f.Wait(); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(dst.Lens, []int32{0, 1, 2, 3}) || !slices.Equal(dst.Vals, []float32{1, 2, 2, 3, 3, 3}) {
			t.Fatalf("%v: pulled %+v", tb, dst)
		}
		// A key pushed again with another length is refused by its server.
		f = s.submit(0, &Op{kind: opPush, keys: []uint64{4}, vals: []float32{1}, lens: []int32{1}})
		s.run()
		if err := f.Wait(); err == nil {
			t.Fatalf("%v: length change accepted", tb)
		}
	}
}

func TestBadCalls(t *testing.T) {
	s := newSim(t, 1, mustUniform(2, 10), 1, 1, clock.DefaultConfig())
	for _, op := range []*Op{
		{kind: opPush, keys: []uint64{3, 2}, vals: []float32{1, 1}},
		{kind: opPush, keys: []uint64{3}, vals: []float32{1, 1}},
		{kind: opPull, keys: []uint64{3, 4}, dst: make([]float32, 1)},
		{kind: opPullRange, begin: 5, end: 3},
		{kind: opPushRange, begin: 0, end: 2, vals: []float32{1}},
	} {
		if err := s.submit(0, op).Wait(); err == nil {
			t.Errorf("%+v accepted", op)
		}
	}
	// An unsorted pull names the first key out of order.
	err := s.submit(0, &Op{kind: opPull, keys: []uint64{1, 5, 3, 2}, dst: make([]float32, 4)}).Wait()
	if want := "worker 0: pull key 2 (3) is not greater than the previous (5)"; err == nil || err.Error() != want {
		t.Errorf("unsorted pull: %v, want %q", err, want)
	}
	// After Fail, everything fails at once.
	s.workers[0].Fail(fmt.Errorf("boom"))
	if err := s.submit(0, &Op{kind: opPull}).Wait(); err == nil || err.Error() != "boom" {
		t.Fatalf("after Fail: %v", err)
	}
}

func mustUniform(s int, n uint64) *route.Table {
	t, err := route.Uniform(s, n)
	if err != nil {
		panic(err)
	}
	return t
}

func mustPlacement(p []int32, s int) *route.Table {
	t, err := route.FromPlacement(p, s)
	if err != nil {
		panic(err)
	}
	return t
}

// TestPullAhead: a pull ahead carries the next round in its metadata
// under async and is refused under BSP and bounded delay.
func TestPullAhead(t *testing.T) {
	tb, err := route.Uniform(2, 8)
	if err != nil {
		t.Fatal(err)
	}
	for _, ck := range []clock.Config{{Mode: clock.Async}, {Mode: clock.BSP}, {Mode: clock.Bounded, Tau: 2}} {
		c, err := NewCore(Config{Rank: 0, Table: tb, Width: 1, Clock: ck})
		if err != nil {
			t.Fatal(err)
		}
		op := &Op{kind: opPull, keys: []uint64{1, 6}, dst: make([]float32, 2), ahead: true, fut: newFuture()}
		outs := c.Submit(op)
		if ck.Mode != clock.Async {
			if err := op.fut.Err(); err == nil || len(outs) != 0 {
				t.Errorf("%s: a pull ahead sent %d messages, error %v", ck.Name(), len(outs), err)
			}
			continue
		}
		if len(outs) != 2 {
			t.Fatalf("async: %d messages, want 2", len(outs))
		}
		for _, o := range outs {
			if r, err := proto.ParseMeta(o.M); err != nil || r != 1 {
				t.Errorf("async: round %d (%v), want 1", r, err)
			}
		}
	}
}

// TestPullBehindGate: under BSP a pull submitted while the round's push
// is unanswered goes to each server as soon as that server answered the
// push (it has applied the round), not when all of them have; the pull's
// values are then the round's, as after the gate.
func TestPullBehindGate(t *testing.T) {
	tb := mustUniform(3, 9) // servers own [0,3), [3,6), [6,9)
	c, err := NewCore(Config{Rank: 0, Table: tb, Width: 1, Clock: clock.DefaultConfig()})
	if err != nil {
		t.Fatal(err)
	}
	push := &Op{kind: opPushRange, begin: 0, end: 9, vals: make([]float32, 9), fut: newFuture()}
	pushes := slices.Clone(c.Submit(push))
	if len(pushes) != 3 {
		t.Fatalf("push: %d messages", len(pushes))
	}
	dst := make([]float32, 9)
	pull := &Op{kind: opPullRange, begin: 0, end: 9, dst: dst, fut: newFuture()}
	if outs := c.Submit(pull); len(outs) != 0 {
		t.Fatalf("a pull behind the gate sent %d messages before any server answered", len(outs))
	}
	ack := func(s int, m *transport.Message) []Out {
		return c.Receive(s, &transport.Message{Header: transport.Header{Type: transport.TypeData, Flags: transport.FlagPush, ID: m.ID}})
	}
	// Server 1 answers first: the pull's part for server 1 leaves.
	outs := ack(1, pushes[1].M)
	if len(outs) != 1 || outs[0].Server != 1 || outs[0].M.Flags&transport.FlagPull == 0 {
		t.Fatalf("after server 1's answer: %+v", outs)
	}
	if r, err := proto.ParseMeta(outs[0].M); err != nil || r != 1 {
		t.Errorf("the pull's round %d (%v), want 1", r, err)
	}
	pullID := outs[0].M.ID
	if outs := ack(0, pushes[0].M); len(outs) != 1 || outs[0].Server != 0 || outs[0].M.ID != pullID {
		t.Fatalf("after server 0's answer: %+v", outs)
	}
	if push.fut.Err() != nil || isDone(push.fut) {
		t.Fatal("the push completed before every server answered")
	}
	if outs := ack(2, pushes[2].M); len(outs) != 1 || outs[0].Server != 2 {
		t.Fatalf("after server 2's answer: %+v", outs)
	}
	if !isDone(push.fut) || push.fut.Err() != nil {
		t.Fatal("the push did not complete")
	}
	// The answers fill the pull.
	for s := range 3 {
		vals := []float32{float32(10 * s), float32(10*s + 1), float32(10*s + 2)}
		c.Receive(s, &transport.Message{Header: transport.Header{Type: transport.TypeData, Flags: transport.FlagPull, ID: pullID}, KV: kv.Batch{Vals: vals}})
	}
	if !isDone(pull.fut) || pull.fut.Err() != nil || dst[4] != 11 || dst[8] != 22 {
		t.Fatalf("pull: done %v, %v, values %v", isDone(pull.fut), pull.fut.Err(), dst)
	}
	// A push behind the gate still waits for the whole gate.
	push2 := &Op{kind: opPushRange, begin: 0, end: 9, vals: make([]float32, 9), fut: newFuture()}
	pushes = slices.Clone(c.Submit(push2))
	push3 := &Op{kind: opPushRange, begin: 0, end: 9, vals: make([]float32, 9), fut: newFuture()}
	if outs := c.Submit(push3); len(outs) != 0 {
		t.Fatalf("a push behind the gate sent %d messages", len(outs))
	}
	if outs := ack(0, pushes[0].M); len(outs) != 0 {
		t.Fatalf("a push left after one server's answer: %+v", outs)
	}
}

// isDone reports whether f completed.
func isDone(f *Future) bool {
	select {
	case <-f.Done():
		return true
	default:
		return false
	}
}

// TestKeptPushes walks a worker whose server 0 replicates its rounds'
// sums: an acknowledgement that says the backups lack the push's round
// keeps a copy of the push, in arrays of its own; a later one that says
// they have it drops it; Resend sends the kept pushes with the
// unanswered requests in the order they were first sent; an
// acknowledgement without a count (every update replicated) drops
// them all.
func TestKeptPushes(t *testing.T) {
	tb := mustUniform(2, 4) // servers own [0,2), [2,4)
	c, err := NewCore(Config{Rank: 0, Table: tb, Width: 1, Clock: clock.DefaultConfig(), Resend: true})
	if err != nil {
		t.Fatal(err)
	}
	ack := func(s int, id uint64, replicated int64) []Out {
		m := &transport.Message{Header: transport.Header{Type: transport.TypeData, Flags: transport.FlagPush, ID: id}}
		if replicated >= 0 {
			m.Body = proto.AppendMeta(nil, replicated)
		}
		return c.Receive(s, m)
	}
	push := func(v float32) (*Op, []Out) {
		op := &Op{kind: opPushRange, begin: 0, end: 4, vals: []float32{v, v, v, v}, fut: newFuture()}
		return op, slices.Clone(c.Submit(op))
	}
	kept := func() []int64 {
		var out []int64
		if len(c.kept) > 0 {
			for _, k := range c.kept[0] {
				out = append(out, k.round)
			}
		}
		return out
	}
	// Round 0: server 0's backups have no round yet.
	p0, outs := push(1)
	ack(0, outs[0].M.ID, 0)
	ack(1, outs[1].M.ID, -1)
	if !isDone(p0.fut) || !slices.Equal(kept(), []int64{0}) {
		t.Fatalf("round 0: done %v, kept rounds %v, want [0]", isDone(p0.fut), kept())
	}
	p0.vals[0] = -1 // the caller's arrays are its own again
	// Round 1: the backups have round 0.
	p1, outs := push(2)
	ack(1, outs[1].M.ID, -1)
	ack(0, outs[0].M.ID, 1)
	if !isDone(p1.fut) || !slices.Equal(kept(), []int64{1}) {
		t.Fatalf("round 1: done %v, kept rounds %v, want [1]", isDone(p1.fut), kept())
	}
	keptID := outs[0].M.ID
	clear(p1.vals)
	// Round 2's push unanswered by server 0; then server 0 fails.
	_, outs = push(3)
	ack(1, outs[1].M.ID, -1)
	c.Submit(&Op{kind: opSuspend, server: 0, fut: newFuture()})
	resent := c.Submit(&Op{kind: opResend, server: 0, fut: newFuture()})
	if len(resent) != 2 || resent[0].M.ID != keptID || resent[1].M.ID != outs[0].M.ID {
		t.Fatalf("resent %d messages (%+v), want the kept push %d and then push %d", len(resent), resent, keptID, outs[0].M.ID)
	}
	if r, _ := proto.ParseMeta(resent[0].M); r != 1 || !slices.Equal(resent[0].M.KV.Vals, []float32{2, 2}) || !slices.Equal(resent[0].M.KV.Keys, []uint64{0, 2}) {
		t.Fatalf("the kept push: round %d, keys %v, values %v; want round 1, [0 2], [2 2]", r, resent[0].M.KV.Keys, resent[0].M.KV.Vals)
	}
	// The backup that took over answers both (no count): nothing kept.
	ack(0, keptID, -1)
	ack(0, outs[0].M.ID, -1)
	if len(kept()) != 0 {
		t.Fatalf("kept rounds %v after the new owner's answers", kept())
	}
	if again := c.Submit(&Op{kind: opResend, server: 0, fut: newFuture()}); len(again) != 0 {
		t.Fatalf("a second Resend sent %+v", again)
	}
}
