package server

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"colo/kv"
	"colo/ps/clock"
	"colo/ps/proto"
	"colo/ps/route"
	"colo/ps/update"
)

// randomBatch returns sorted distinct keys from [0, space) with width
// values each (or 1 + key mod 3 when width is 0).
func randomBatch(rng *rand.Rand, n int, space uint64, width int) kv.Batch {
	seen := map[uint64]bool{}
	var b kv.Batch
	for len(b.Keys) < n {
		k := rng.Uint64N(space)
		if !seen[k] {
			seen[k] = true
			b.Keys = append(b.Keys, k)
		}
	}
	slices.Sort(b.Keys)
	for _, k := range b.Keys {
		w := width
		if width == 0 {
			w = 1 + int(k%3)
			b.Lens = append(b.Lens, int32(w))
		}
		for range w {
			b.Vals = append(b.Vals, float32(rng.IntN(9)-4))
		}
	}
	return b
}

// TestStoreAgainstMap pushes random batches into stores of every index
// form and width and compares pulls with a map of exact sums.
func TestStoreAgainstMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	const numKeys = 200
	param := make([]int32, numKeys)
	for i := range param {
		param[i] = int32(rng.IntN(2))
	}
	ranges, _ := route.Uniform(2, numKeys)
	dense, _ := route.FromPlacement(param, 2)
	unbounded, _ := route.Uniform(2, 0)
	for _, tb := range []*route.Table{ranges, dense, unbounded} {
		for _, width := range []int{1, 3, 0} {
			for _, acc := range []bool{false, true} {
				s := NewStore(tb.Index(0), width, update.Sum{})
				ref := map[uint64][]float32{}
				for range 30 {
					// Keys beyond NumKeys exercise the extra slots.
					b := randomBatch(rng, 20, numKeys+50, width)
					var err error
					if acc {
						err = s.Accumulate(b)
					} else {
						err = s.Push(b)
					}
					if err != nil {
						t.Fatal(err)
					}
					v := 0
					for i, k := range b.Keys {
						n := width
						if width == 0 {
							n = int(b.Lens[i])
						}
						if ref[k] == nil {
							ref[k] = make([]float32, n)
						}
						for j := range n {
							ref[k][j] += b.Vals[v+j]
						}
						v += n
					}
					if acc && rng.IntN(3) == 0 {
						s.Flush()
					}
				}
				s.Flush()
				keys := make([]uint64, 0, numKeys+50)
				for k := range uint64(numKeys + 50) {
					keys = append(keys, k)
				}
				got := s.Pull(kv.Batch{}, keys)
				v := 0
				for i, k := range keys {
					n := width
					if width == 0 {
						n = int(got.Lens[i])
						if want := len(ref[k]); n != want {
							t.Fatalf("%v width 0: key %d has %d values, want %d", tb, k, n, want)
						}
					}
					for j := range n {
						want := float32(0)
						if ref[k] != nil {
							want = ref[k][j]
						}
						if got.Vals[v+j] != want {
							t.Fatalf("%v width %d acc %v: key %d value %d = %v, want %v", tb, width, acc, k, j, got.Vals[v+j], want)
						}
					}
					v += n
				}
			}
		}
	}
}

// TestFlushAppliesOnce checks that an aggregated round applies a
// non-linear rule once to the sum: SGD with L1 differs from two steps.
func TestFlushAppliesOnce(t *testing.T) {
	tb, _ := route.Uniform(1, 10)
	rule := update.SGD{LR: 1, L1: 0.5}
	s := NewStore(tb.Index(0), 1, rule)
	s.Accumulate(kv.Batch{Keys: []uint64{3}, Vals: []float32{-1}})
	s.Accumulate(kv.Batch{Keys: []uint64{3}, Vals: []float32{-2}})
	s.PushRange(0, make([]float32, 10), true)
	s.Flush()
	// One step with g = −3: w = 3, shrink by 0.5 → 2.5. Two steps would
	// give 0.5 then 2.
	if got := s.Pull(kv.Batch{}, []uint64{3}).Vals[0]; got != 2.5 {
		t.Fatalf("w = %v, want 2.5", got)
	}
}

func TestRangeViews(t *testing.T) {
	tb, _ := route.FromRanges([]uint64{0, 100}, 300)
	s := NewStore(tb.Index(1), 2, update.Sum{})
	g := make([]float32, 2*50)
	for i := range g {
		g[i] = float32(i)
	}
	if err := s.PushRange(120, g, false); err != nil {
		t.Fatal(err)
	}
	v, view, err := s.PullRange(120, 170, nil)
	if err != nil || !view || !slices.Equal(v, g) {
		t.Fatalf("range pull: view %v err %v", view, err)
	}
	// A range that leaves the index: copied, zeros beyond.
	v, view, _ = s.PullRange(290, 310, nil)
	if view || len(v) != 40 {
		t.Fatalf("range beyond the index: view %v len %d", view, len(v))
	}
	if _, _, err := s.PullRange(5, 4, nil); err == nil {
		t.Fatal("reversed range accepted")
	}
}

func newCore(t *testing.T, workers int, ck clock.Config) *Core {
	tb, _ := route.Uniform(1, 100)
	c, err := New(Config{Rank: 0, Workers: workers, Table: tb, Width: 1, Clock: ck})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func push(worker int, id uint64, round int64, keys []uint64, vals []float32) Request {
	return Request{Worker: worker, ID: id, Round: round, Push: true, KV: kv.Batch{Keys: keys, Vals: vals}}
}

func TestCoreBSP(t *testing.T) {
	c := newCore(t, 2, clock.DefaultConfig())
	if out := handle(c, push(0, 7, 0, []uint64{1}, []float32{2})); len(out) != 0 {
		t.Fatalf("first push of the round answered: %+v", out)
	}
	// Not applied before the round completes.
	pull := Request{Worker: 1, ID: 8, Round: 0, KV: kv.Batch{Keys: []uint64{1}}}
	if out := handle(c, pull); len(out) != 1 || out[0].Vals[0] != 0 {
		t.Fatalf("pull during the round: %+v", out)
	}
	out := handle(c, push(1, 9, 0, []uint64{1, 2}, []float32{3, 4}))
	if len(out) != 2 || out[0].ID != 7 || out[0].Worker != 0 || out[1].ID != 9 || out[1].Worker != 1 {
		t.Fatalf("round end: %+v", out)
	}
	out = handle(c, Request{Worker: 0, ID: 10, Round: 1, KV: kv.Batch{Keys: []uint64{1, 2}}})
	if !slices.Equal(out[0].Vals, []float32{5, 4}) {
		t.Fatalf("after the round: %v", out[0].Vals)
	}
	// A repeated round is an error, answered to its sender.
	out = handle(c, push(0, 11, 0, nil, nil))
	if len(out) != 1 || out[0].Err == nil || out[0].ID != 11 {
		t.Fatalf("repeated round: %+v", out)
	}
	// Bad input is answered with an error, never a panic.
	for _, r := range []Request{
		push(0, 12, 1, []uint64{2, 1}, []float32{1, 1}),
		push(0, 13, 1, []uint64{1}, []float32{1, 1}),
		{Worker: 0, ID: 14, Range: true, KV: kv.Batch{Keys: []uint64{1}}},
		{Worker: 5, ID: 15},
	} {
		if out := handle(c, r); len(out) == 0 || out[0].Err == nil {
			t.Fatalf("%+v accepted: %+v", r, out)
		}
	}
	if st := c.Stats(); st.MaxLead != 0 || st.Errors == 0 {
		t.Fatalf("stats %+v", st)
	}
}

func TestCoreBoundedAppliesAtOnce(t *testing.T) {
	c := newCore(t, 2, clock.Config{Mode: clock.Bounded, Tau: 1})
	// Worker 0 may finish round 0 at once (1 ahead is allowed) ...
	if out := handle(c, push(0, 1, 0, []uint64{5}, []float32{1})); len(out) != 1 {
		t.Fatalf("round 0: %+v", out)
	}
	// ... but its push of round 1 waits for worker 1's round 0.
	if out := handle(c, push(0, 2, 1, []uint64{5}, []float32{1})); len(out) != 0 {
		t.Fatalf("round 1 answered early: %+v", out)
	}
	if got := handle(c, Request{Worker: 1, ID: 3, KV: kv.Batch{Keys: []uint64{5}}}); got[0].Vals[0] != 2 {
		t.Fatalf("pushes not applied at once: %v", got[0].Vals)
	}
	out := handle(c, push(1, 4, 0, nil, nil))
	if len(out) != 2 || out[0].ID != 4 || out[1].ID != 2 {
		t.Fatalf("release: %+v", out)
	}
}

func handle(c *Core, r Request) []Reply { return c.Handle(r, false) }

// TestChanges checks Changes against the store on random BSP runs: a
// worker's push that Changes says leaves the store alone does (the
// whole store read before and after it), and it says so of every push
// but the one that completes its round. Pushes that may change the
// store whatever the round (another mode's, a push out of order, a
// DataPut), and pulls, are checked by hand.
func TestChanges(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	store := func(c *Core) []float32 {
		out := handle(c, Request{Worker: 0, Range: true, Cmd: proto.DataRange, KV: kv.Batch{Keys: []uint64{0, 100}}})
		return slices.Clone(out[0].Vals)
	}
	for run := range 20 {
		workers := 1 + rng.IntN(4)
		c := newCore(t, workers, clock.DefaultConfig())
		for range 100 {
			w := rng.IntN(workers)
			round := c.clock.Done(w)
			complete := true
			for o := range workers {
				complete = complete && (o == w || c.clock.Done(o) > round)
			}
			var r Request
			if rng.IntN(2) == 0 {
				r = push(w, 1, round, []uint64{uint64(rng.IntN(100))}, []float32{1})
			} else {
				r = Request{Worker: w, ID: 1, Round: round, Push: true, Range: true, Cmd: proto.DataRange, KV: kv.Batch{Keys: []uint64{10, 20}, Vals: slices.Repeat([]float32{1}, 10)}}
			}
			changes := c.Changes(r)
			if changes != complete {
				t.Fatalf("run %d: worker %d's push of round %d: Changes %v, completes the round %v", run, w, round, changes, complete)
			}
			before := store(c)
			handle(c, r)
			if after := store(c); !changes && !slices.Equal(before, after) {
				t.Fatalf("run %d: worker %d's push of round %d changed the store, Changes said it would not", run, w, round)
			}
		}
	}
	c := newCore(t, 2, clock.DefaultConfig())
	for _, tc := range []struct {
		name string
		r    Request
		want bool
	}{
		{"first push of the round", push(0, 1, 0, []uint64{1}, []float32{1}), false},
		{"push out of order", push(0, 1, 1, []uint64{1}, []float32{1}), true},
		{"push from no worker", push(2, 1, 0, []uint64{1}, []float32{1}), true},
		{"put", Request{Worker: 0, Cmd: proto.DataPut, Push: true, KV: kv.Batch{Keys: []uint64{0, 1}}}, true},
		{"pull", Request{Worker: 0, KV: kv.Batch{Keys: []uint64{1}}}, false},
	} {
		if got := c.Changes(tc.r); got != tc.want {
			t.Errorf("BSP, %s: Changes %v, want %v", tc.name, got, tc.want)
		}
	}
	for _, ck := range []clock.Config{{Mode: clock.Async}, {Mode: clock.Bounded, Tau: 1}} {
		if !newCore(t, 2, ck).Changes(push(0, 1, 0, []uint64{1}, []float32{1})) {
			t.Errorf("%v: a push that may change the store at once, Changes false", ck)
		}
	}
}

func TestEarlyAck(t *testing.T) {
	c := newCore(t, 1, clock.Config{Mode: clock.Async})
	r := push(0, 1, 0, []uint64{5}, []float32{2})
	ack, ok := c.Ack(r)
	if !ok || ack.ID != 1 {
		t.Fatalf("async push not acknowledged early: %+v %v", ack, ok)
	}
	if out := c.Handle(r, true); len(out) != 0 {
		t.Fatalf("acknowledged twice: %+v", out)
	}
	if got := handle(c, Request{Worker: 0, ID: 2, KV: kv.Batch{Keys: []uint64{5}}}); got[0].Vals[0] != 2 {
		t.Fatalf("push not applied: %v", got[0].Vals)
	}
	// Malformed pushes and other modes are answered after applying.
	if _, ok := c.Ack(push(0, 3, 1, []uint64{2, 1}, []float32{1, 1})); ok {
		t.Fatal("unsorted push acknowledged early")
	}
	if _, ok := newCore(t, 1, clock.DefaultConfig()).Ack(r); ok {
		t.Fatal("BSP push acknowledged early")
	}
}

// pull is a pull request of keys.
func pull(worker int, id uint64, round int64, keys []uint64) Request {
	return Request{Worker: worker, ID: id, Round: round, KV: kv.Batch{Keys: keys}}
}

// TestStalenessByHand walks two asynchronous workers: worker 0 races
// three rounds ahead while worker 1 has not pushed, so its pull of round 3
// lacks three rounds of worker 1's updates; a push without a pull of its
// round is not measured.
func TestStalenessByHand(t *testing.T) {
	c := newCore(t, 2, clock.Config{Mode: clock.Async})
	keys, vals := []uint64{1, 2}, []float32{1, 1}
	id := uint64(0)
	step := func(w int, round int64, withPull bool) {
		if withPull {
			id++
			c.Handle(pull(w, id, round, keys), false)
		}
		id++
		c.Handle(push(w, id, round, keys, vals), false)
	}
	step(0, 0, true) // min 0 at the pull: staleness 0
	step(0, 1, true) // min 0: 1
	step(0, 2, true) // 2
	step(0, 3, true) // 3
	step(1, 0, true) // 0
	step(1, 1, false)
	step(0, 4, true) // both pushed rounds 0 and 1, min 2: 2
	st := c.Stats().Staleness
	want := [StalenessBuckets]uint64{2, 1, 2, 1}
	if st.Pushes != 6 || st.Sum != 8 || st.Max != 3 || st.Hist != want {
		t.Fatalf("staleness %+v, want 6 pushes summing 8, max 3, histogram %v", st, want)
	}
	if st.Mean() != 8.0/6 {
		t.Errorf("mean %v", st.Mean())
	}
	var sum Staleness
	sum.Add(st)
	sum.Add(st)
	if sum.Pushes != 12 || sum.Max != 3 || sum.Hist[2] != 4 {
		t.Errorf("sum %+v", sum)
	}
}

// TestStalenessBSP: synchronous rounds have staleness 0.
func TestStalenessBSP(t *testing.T) {
	c := newCore(t, 2, clock.Config{Mode: clock.BSP})
	keys, vals := []uint64{3}, []float32{2}
	id := uint64(0)
	for round := range int64(4) {
		for w := range 2 {
			id++
			c.Handle(pull(w, id, round, keys), false)
		}
		for w := range 2 {
			id++
			c.Handle(push(w, id, round, keys, vals), false)
		}
	}
	if st := c.Stats().Staleness; st.Pushes != 8 || st.Max != 0 {
		t.Fatalf("BSP staleness %+v", st)
	}
}

// TestEvaluatorPulls: an evaluator reads the store as it is, outside the
// clock: under BSP the values of the completed rounds with their step
// count; its pulls change no staleness mark and count apart; its pushes
// are refused; its replies go to its own id.
func TestEvaluatorPulls(t *testing.T) {
	for _, mode := range []clock.Mode{clock.BSP, clock.Async} {
		c := newCore(t, 2, clock.Config{Mode: mode})
		ev := Request{Worker: 0, Evaluator: true, ID: 1, KV: kv.Batch{Keys: []uint64{1}}}
		out := handle(c, ev)
		if len(out) != 1 || out[0].Err != nil || out[0].Vals[0] != 0 || out[0].Steps != 0 || out[0].To() != proto.EvaluatorID(0) {
			t.Fatalf("%v: first evaluator pull %+v", mode, out)
		}
		handle(c, pull(0, 2, 0, []uint64{1}))
		handle(c, push(0, 3, 0, []uint64{1}, []float32{2}))
		// Worker 0 has pushed round 0, worker 1 not yet: BSP holds the
		// push, asynchronous training applied it.
		want, steps := float32(2), int64(1)
		if mode == clock.BSP {
			want, steps = 0, 0
		}
		if out = handle(c, ev); out[0].Vals[0] != want || out[0].Steps != steps {
			t.Fatalf("%v: mid-round evaluator pull %v at step %d, want %v at %d", mode, out[0].Vals, out[0].Steps, want, steps)
		}
		handle(c, push(1, 4, 0, []uint64{1}, []float32{3}))
		if out = handle(c, ev); out[0].Vals[0] != 5 || out[0].Steps != 2 {
			t.Fatalf("%v: evaluator pull after the round: %v at step %d", mode, out[0].Vals, out[0].Steps)
		}
		m := out[0].Message()
		if r, err := proto.ParseMeta(m); err != nil || r != 2 {
			t.Fatalf("%v: the answer's step count %d, %v", mode, r, err)
		}
		if out = handle(c, Request{Worker: 0, Evaluator: true, ID: 5, Push: true, KV: kv.Batch{Keys: []uint64{1}, Vals: []float32{1}}}); len(out) != 1 || out[0].Err == nil {
			t.Fatalf("%v: evaluator push accepted: %+v", mode, out)
		}
		st := c.Stats()
		if st.EvaluatorPulls != 3 || st.EvaluatorKeys != 3 || st.Pulls != 1 || st.Staleness.Pushes != 1 {
			t.Fatalf("%v: stats %+v", mode, st)
		}
	}
}

// TestRetable walks a server through a move: it keeps the values and
// states of the keys it still owns, hands out those it lost (Take),
// installs those it gained (Put), and refuses requests routed by the old
// table, naming the new table's version.
func TestRetable(t *testing.T) {
	tb, _ := route.FromRanges([]uint64{0, 10}, 20) // server 0: [0, 10)
	rule, _ := update.New(update.Config{Name: "momentum", LR: 1, Momentum: 0.5})
	c, err := New(Config{Rank: 0, Workers: 1, Table: tb, Width: 1, Rule: rule, Clock: clock.Config{Mode: clock.Async}})
	if err != nil {
		t.Fatal(err)
	}
	grad := make([]float32, 10)
	for i := range grad {
		grad[i] = float32(i + 1)
	}
	push := Request{Worker: 0, ID: 1, Push: true, Range: true, Cmd: proto.DataRange, KV: kv.Batch{Keys: []uint64{0, 10}, Vals: grad}}
	if out := handle(c, push); len(out) != 1 || out[0].Err != nil {
		t.Fatalf("push: %+v", out)
	}
	before, _ := c.Store().Export(0, 10)
	if got := c.Stats().KeyShare; got != 0.5 {
		t.Errorf("key share %v before the move, want 0.5 (10 of 20 keys)", got)
	}
	table := func(id, version uint64, starts ...uint64) Request {
		return Request{Worker: 0, ID: id, Push: true, Cmd: proto.DataTable, KV: kv.Batch{Keys: append([]uint64{version, 20}, starts...)}}
	}
	// Server 0 keeps [0, 10) and gains [10, 15).
	if out := handle(c, table(2, 1, 0)); len(out) != 1 || out[0].Err == nil || !strings.Contains(out[0].Err.Error(), "want the version, the number of keys and 2 starts") {
		t.Fatalf("a table of one server: %+v", out)
	}
	if out := handle(c, table(3, 1, 0, 15)); len(out) != 1 || out[0].Err != nil {
		t.Fatalf("retable: %+v", out)
	}
	if out := handle(c, table(4, 1, 0, 15)); out[0].Err == nil || !strings.Contains(out[0].Err.Error(), "version 1, the server has 1") {
		t.Fatalf("the same version again: %+v", out)
	}
	if got := c.Stats().KeyShare; got != 0.75 {
		t.Errorf("key share %v after the move, want 0.75 (15 of 20 keys)", got)
	}
	kept, _ := c.Store().Export(0, 10)
	if !slices.Equal(kept, before) {
		t.Fatalf("kept keys: %v, before the move %v", kept, before)
	}
	gained := make([]float32, 2*5)
	for i := range gained {
		gained[i] = float32(100 + i)
	}
	put := Request{Worker: 0, ID: 5, Push: true, Cmd: proto.DataPut, KV: kv.Batch{Keys: []uint64{10, 15}, Vals: gained}}
	if out := handle(c, put); out[0].Err != nil {
		t.Fatalf("put: %+v", out)
	}
	if got, _ := c.Store().Export(10, 15); !slices.Equal(got, gained) {
		t.Fatalf("put keys: %v, want %v", got, gained)
	}
	put.KV.Vals = gained[:7]
	if out := handle(c, put); out[0].Err == nil || !strings.Contains(out[0].Err.Error(), "want 10 (values and 1 states") {
		t.Fatalf("short put: %+v", out)
	}
	stale := Request{Worker: 0, ID: 6, Range: true, Cmd: proto.DataRange, KV: kv.Batch{Keys: []uint64{12, 18}}}
	if out := handle(c, stale); out[0].Err == nil || !strings.Contains(out[0].Err.Error(), "server 0 does not own keys [12, 18) in routing table version 1 (server 0 owns key 12)") {
		t.Fatalf("a pull beyond the new range: %+v", out)
	}
	// A second move: server 0 loses [6, 15); Take hands them out with
	// their states from the store of the table before.
	if out := handle(c, table(8, 2, 0, 6)); out[0].Err != nil {
		t.Fatalf("second retable: %+v", out)
	}
	if got := c.Stats().KeyShare; got != 0.3 {
		t.Errorf("key share %v after the second move, want 0.3 (6 of 20 keys)", got)
	}
	take := Request{Worker: 0, ID: 9, Cmd: proto.DataTake, KV: kv.Batch{Keys: []uint64{6, 15}}}
	out := handle(c, take)
	var want []float32
	for _, part := range [][]float32{before[6:10], gained[0:5], before[16:20], gained[5:10]} {
		want = append(want, part...)
	}
	if out[0].Err != nil || !slices.Equal(out[0].Vals, want) {
		t.Fatalf("take: %+v, want %v", out, want)
	}
	if out := handle(c, Request{Worker: 0, ID: 10, Cmd: proto.DataTake, KV: kv.Batch{Keys: []uint64{14, 16}}}); out[0].Err == nil {
		t.Fatalf("take of keys never held: %+v", out)
	}
	if st := c.Stats(); st.Moves != 2 || st.KeysMoved != 9 {
		t.Fatalf("stats %+v", st)
	}
}

// TestAsyncStepByHand walks two workers through pulls and pushes of one
// key with SGD at rate 1 and gradients of 1, so that the value is minus
// the sum of the pushes' step factors: 1 each without scaling, 1/W with
// AsyncWorkers, 1/max(1, τ) with AsyncStaleness, τ counted by hand
// below. BSP applies the round's sum unscaled whatever the rule says.
func TestAsyncStepByHand(t *testing.T) {
	tb, _ := route.Uniform(1, 4)
	// Each step: worker, round, push (or pull); the staleness of a push
	// is the pushes handled since its round's pull.
	steps := []struct {
		w    int
		r    int64
		push bool
	}{
		{0, 0, false}, {1, 0, false},
		{0, 0, true},                // τ 0
		{1, 0, true},                // τ 1 (worker 0's)
		{0, 1, false}, {0, 1, true}, // τ 0
		{0, 2, false}, {1, 1, false}, {0, 2, true}, // τ 0
		{0, 3, false}, {0, 3, true}, // τ 0
		{1, 1, true}, // τ 2: worker 0's rounds 2 and 3
		{1, 2, true}, // no pull: τ = W = 2
	}
	for _, tc := range []struct {
		ck    clock.Config
		async update.Async
		want  float32
	}{
		{clock.Config{Mode: clock.Async}, update.AsyncNone, -7},
		{clock.Config{Mode: clock.Async}, update.AsyncWorkers, -3.5},
		{clock.Config{Mode: clock.Async}, update.AsyncStaleness, -(1 + 1 + 1 + 1 + 1 + 0.5 + 0.5)},
		{clock.Config{Mode: clock.Bounded, Tau: 5}, update.AsyncStaleness, -6},
		{clock.Config{Mode: clock.Bounded, Tau: 5}, update.AsyncWorkers, -3.5},
	} {
		c, err := New(Config{Rank: 0, Workers: 2, Table: tb, Width: 1, Rule: update.SGD{LR: 1, Async: tc.async}, Clock: tc.ck})
		if err != nil {
			t.Fatal(err)
		}
		for i, s := range steps {
			r := Request{Worker: s.w, ID: uint64(i), Round: s.r, Push: s.push, KV: kv.Batch{Keys: []uint64{2}}}
			if s.push {
				r.KV.Vals = []float32{1}
			}
			for _, rep := range c.Handle(r, false) {
				if rep.Err != nil {
					t.Fatalf("%v %v step %d: %v", tc.ck, tc.async, i, rep.Err)
				}
			}
		}
		if got := c.Store().Pull(kv.Batch{}, []uint64{2}).Vals[0]; got != tc.want {
			t.Errorf("%v %v: value %v, want %v", tc.ck, tc.async, got, tc.want)
		}
	}
	// BSP: the two pushes of round 0 summed, one step of the sum.
	c, _ := New(Config{Rank: 0, Workers: 2, Table: tb, Width: 1, Rule: update.SGD{LR: 1, Async: update.AsyncWorkers}, Clock: clock.DefaultConfig()})
	for w := range 2 {
		c.Handle(Request{Worker: w, ID: uint64(w), Push: true, KV: kv.Batch{Keys: []uint64{2}, Vals: []float32{1}}}, false)
	}
	if got := c.Store().Pull(kv.Batch{}, []uint64{2}).Vals[0]; got != -2 {
		t.Errorf("bsp: value %v, want -2", got)
	}
}

// TestAsyncWorkersBoundsTheRound checks a property that holds under any
// interleaving: with AdaGrad and update.AsyncWorkers a push moves no
// value by more than η/W (its step is (η/W)·g/√n with n ≥ g²), so the W
// pushes of a round move a value at most η, the bound of BSP's one step
// of their sum. Workers pull and push their rounds in a random order,
// with gradients of random signs and sizes over six orders of
// magnitude. Without the scaling, W pushes of the same gradient at the
// fresh model move a value by η·(1 + 1/√2 + … + 1/√W), more than η.
func TestAsyncWorkersBoundsTheRound(t *testing.T) {
	const workers, width, keys, rounds = 4, 3, 5, 40
	const lr = 0.1
	tb, _ := route.Uniform(1, keys)
	for seed := range uint64(5) {
		rng := rand.New(rand.NewPCG(seed, 11))
		ck := clock.Config{Mode: clock.Async}
		if seed%2 == 1 {
			ck = clock.Config{Mode: clock.Bounded, Tau: 2}
		}
		c, err := New(Config{Rank: 0, Workers: workers, Table: tb, Width: width, Rule: update.AdaGrad{LR: lr, Eps: 1e-8, Async: update.AsyncWorkers}, Clock: ck})
		if err != nil {
			t.Fatal(err)
		}
		all := []uint64{0, 1, 2, 3, 4}
		next := make([]int, workers) // 2r: pull round r next; 2r+1: push it
		for id := uint64(0); ; id++ {
			var live []int
			for w, n := range next {
				if n < 2*rounds {
					live = append(live, w)
				}
			}
			if len(live) == 0 {
				break
			}
			w := live[rng.IntN(len(live))]
			r := Request{Worker: w, ID: id, Round: int64(next[w] / 2), Push: next[w]%2 == 1, KV: kv.Batch{Keys: all}}
			next[w]++
			before := slices.Clone(c.Store().Pull(kv.Batch{}, all).Vals)
			if r.Push {
				r.KV.Vals = make([]float32, keys*width)
				for i := range r.KV.Vals {
					r.KV.Vals[i] = float32(rng.NormFloat64() * math.Pow(10, float64(rng.IntN(7)-4)))
				}
			}
			for _, rep := range c.Handle(r, false) {
				if rep.Err != nil {
					t.Fatal(rep.Err)
				}
			}
			after := c.Store().Pull(kv.Batch{}, all).Vals
			for i := range after {
				if d := math.Abs(float64(after[i] - before[i])); d > lr/workers*(1+1e-5) {
					t.Fatalf("seed %d %v: worker %d round %d moved value %d by %v, more than η/W = %v", seed, ck, w, r.Round, i, d, lr/workers)
				}
			}
		}
		for i, v := range c.Store().Pull(kv.Batch{}, all).Vals {
			if math.Abs(float64(v)) > rounds*lr*(1+1e-5) {
				t.Fatalf("seed %d: value %d is %v after %d rounds, beyond %d·η", seed, i, v, rounds, rounds)
			}
		}
	}
	// The same gradient from every worker at the fresh model.
	for _, tc := range []struct {
		async update.Async
		want  float64
	}{
		{update.AsyncNone, lr * (1 + 1/math.Sqrt(2) + 1/math.Sqrt(3) + 1/math.Sqrt(4))},
		{update.AsyncWorkers, lr / workers * (1 + 1/math.Sqrt(2) + 1/math.Sqrt(3) + 1/math.Sqrt(4))},
	} {
		c, _ := New(Config{Rank: 0, Workers: workers, Table: tb, Width: 1, Rule: update.AdaGrad{LR: lr, Async: tc.async}, Clock: clock.Config{Mode: clock.Async}})
		for w := range workers {
			c.Handle(Request{Worker: w, ID: uint64(w), Push: true, KV: kv.Batch{Keys: []uint64{0}, Vals: []float32{-0.5}}}, false)
		}
		if got := float64(c.Store().Pull(kv.Batch{}, []uint64{0}).Vals[0]); math.Abs(got-tc.want) > 1e-6 {
			t.Errorf("%v: the round moved the value by %v, want %v", tc.async, got, tc.want)
		}
	}
}
