package server

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"colo/kv"
	"colo/ps/clock"
	"colo/ps/route"
	"colo/ps/update"
)

// orderSensitive are gradients whose float32 sums depend on the order of
// addition: 1e8 + 1 − 1e8 is 0, 1e8 − 1e8 + 1 is 1.
var orderSensitive = []float32{1e8, -1e8, 1, -1, 0.5, 3, 1e-3, 7e7, -3e7}

// bspRound returns one push per worker of round: sparse pushes of half
// to five sixths of the keys in [0, space), so that most keys get three
// or four gradients (width values each, or 1 + key mod 3 at width 0),
// or, for the workers in ranges, range pushes of [lo, lo+n) with lo and
// n random within [0, space).
func bspRound(rng *rand.Rand, round int64, workers int, space uint64, width int, ranges []bool) []Request {
	out := make([]Request, workers)
	for w := range out {
		r := Request{Worker: w, ID: uint64(round)*100 + uint64(w), Round: round, Push: true}
		var n int
		if w < len(ranges) && ranges[w] {
			lo := rng.Uint64N(space / 2)
			hi := lo + 1 + rng.Uint64N(space-lo)
			r.Range = true
			r.KV.Keys = []uint64{lo, hi}
			n = int(hi-lo) * width
		} else {
			r.KV = randomBatch(rng, int(space)/2+rng.IntN(int(space)/3), space, width)
			n = len(r.KV.Vals)
		}
		r.KV.Vals = make([]float32, n)
		for i := range r.KV.Vals {
			r.KV.Vals[i] = orderSensitive[rng.IntN(len(orderSensitive))]
		}
		out[w] = r
	}
	return out
}

// clone copies r's arrays, as a transport decodes a request into its own
// buffers.
func clone(r Request) Request {
	r.KV.Keys = slices.Clone(r.KV.Keys)
	r.KV.Vals = slices.Clone(r.KV.Vals)
	r.KV.Lens = slices.Clone(r.KV.Lens)
	return r
}

// scribble overwrites r's arrays, as the driver's pool recycles them.
func scribble(r Request) {
	for i := range r.KV.Keys {
		r.KV.Keys[i] = math.MaxUint64 - uint64(i)
	}
	for i := range r.KV.Vals {
		r.KV.Vals[i] = float32(math.NaN())
	}
	for i := range r.KV.Lens {
		r.KV.Lens[i] = -1
	}
}

// runBSP feeds rounds to a new BSP core, the pushes of round i in the
// order orders[i] (worker ranks), and returns the store's values of keys
// [0, space). It checks every push is acknowledged without error once its
// round completes and not before.
func runBSP(t *testing.T, tb *route.Table, width int, rule update.Rule, rounds [][]Request, orders [][]int, space uint64) kv.Batch {
	t.Helper()
	c, err := New(Config{Rank: 0, Workers: len(rounds[0]), Table: tb, Width: width, Rule: rule, Clock: clock.DefaultConfig()})
	if err != nil {
		t.Fatal(err)
	}
	for i, reqs := range rounds {
		for j, w := range orders[i] {
			r := clone(reqs[w])
			out := c.Handle(r, false)
			scribble(r)
			if j < len(reqs)-1 {
				if len(out) != 0 {
					t.Fatalf("round %d: push of worker %d answered before the round completed: %+v", i, w, out)
				}
				continue
			}
			if len(out) != len(reqs) {
				t.Fatalf("round %d: %d replies at the round's end, want %d: %+v", i, len(out), len(reqs), out)
			}
			for k, a := range out {
				if a.Err != nil || a.Worker != k || a.ID != reqs[k].ID {
					t.Fatalf("round %d: reply %d is %+v, want the acknowledgement of worker %d", i, k, a, k)
				}
			}
		}
	}
	keys := make([]uint64, space)
	for k := range keys {
		keys[k] = uint64(k)
	}
	got := c.Store().Pull(kv.Batch{}, keys)
	got.Vals, got.Lens = slices.Clone(got.Vals), slices.Clone(got.Lens)
	return got
}

// rankOrder returns the values of keys [0, space) after the rounds are
// summed in rank order with Store.Accumulate and flushed, and for the
// Sum rule checks them against sums formed explicitly in rank order.
func rankOrder(t *testing.T, tb *route.Table, width int, rule update.Rule, rounds [][]Request, space uint64) kv.Batch {
	t.Helper()
	s := NewStore(tb.Index(0), width, rule)
	ref := map[uint64][]float32{} // explicit sums, for the Sum rule
	for _, reqs := range rounds {
		sums := map[uint64][]float32{}
		for _, r := range reqs {
			if r.Range {
				if err := s.PushRange(r.KV.Keys[0], r.KV.Vals, true); err != nil {
					t.Fatal(err)
				}
			} else if err := s.Accumulate(r.KV); err != nil {
				t.Fatal(err)
			}
			forEachKey(r, width, func(k uint64, g []float32) {
				if sums[k] == nil {
					sums[k] = make([]float32, len(g))
				}
				for i, v := range g {
					sums[k][i] += v
				}
			})
		}
		s.Flush()
		for k, g := range sums {
			if ref[k] == nil {
				ref[k] = make([]float32, len(g))
			}
			for i, v := range g {
				ref[k][i] += v
			}
		}
	}
	keys := make([]uint64, space)
	for k := range keys {
		keys[k] = uint64(k)
	}
	want := s.Pull(kv.Batch{}, keys)
	if _, ok := rule.(update.Sum); ok {
		v := 0
		for i, k := range keys {
			n := width
			if width == 0 {
				n = int(want.Lens[i])
			}
			for j := range n {
				r := float32(0)
				if ref[k] != nil {
					r = ref[k][j]
				}
				if math.Float32bits(want.Vals[v+j]) != math.Float32bits(r) {
					t.Fatalf("Store.Accumulate: key %d value %d = %v, rank-order sum %v", k, j, want.Vals[v+j], r)
				}
			}
			v += n
		}
	}
	return want
}

// forEachKey calls f with each key of r's push and its gradient.
func forEachKey(r Request, width int, f func(k uint64, g []float32)) {
	if r.Range {
		for k := r.KV.Keys[0]; k < r.KV.Keys[1]; k++ {
			i := int(k-r.KV.Keys[0]) * width
			f(k, r.KV.Vals[i:i+width])
		}
		return
	}
	v := 0
	for i, k := range r.KV.Keys {
		n := width
		if r.KV.Lens != nil {
			n = int(r.KV.Lens[i])
		}
		f(k, r.KV.Vals[v:v+n])
		v += n
	}
}

// permutations returns every order of 0 … n−1.
func permutations(n int) [][]int {
	if n == 0 {
		return [][]int{{}}
	}
	var out [][]int
	for _, p := range permutations(n - 1) {
		for i := range n {
			q := slices.Insert(slices.Clone(p), i, n-1)
			out = append(out, q)
		}
	}
	return out
}

func sameBits(a, b kv.Batch) bool {
	if !slices.Equal(a.Lens, b.Lens) || len(a.Vals) != len(b.Vals) {
		return false
	}
	for i := range a.Vals {
		if math.Float32bits(a.Vals[i]) != math.Float32bits(b.Vals[i]) {
			return false
		}
	}
	return true
}

// TestBSPArrivalOrder feeds the same pushes of 4 workers in every arrival
// order (the same order in every round, then random orders per round) and
// checks the stored values are bitwise those of the rank-order sum, with
// sparse pushes of every width, range pushes mixed in, and the Sum and
// SGD rules. It also checks that arrival-order sums of the same gradients
// differ, so the test can fail.
func TestBSPArrivalOrder(t *testing.T) {
	const workers, numRounds, space = 4, 3, 48
	// Keys [32, 48) lie beyond the index: extra slots.
	tb, _ := route.Uniform(1, 32)
	perms := permutations(workers)
	for _, tc := range []struct {
		name   string
		width  int
		ranges []bool
	}{
		{"width 1", 1, nil},
		{"width 3", 3, nil},
		{"width 0", 0, nil},
		{"ranges and sparse, width 2", 2, []bool{true, false, true, false}},
		{"ranges, width 1", 1, []bool{true, true, true, true}},
	} {
		for _, rule := range []update.Rule{update.Sum{}, update.SGD{LR: 0.5, L1: 1e-3, L2: 1e-2}} {
			name := tc.name + ", " + rule.Name()
			rng := rand.New(rand.NewPCG(uint64(tc.width), 7))
			rounds := make([][]Request, numRounds)
			for i := range rounds {
				rounds[i] = bspRound(rng, int64(i), workers, space, tc.width, tc.ranges)
			}
			want := rankOrder(t, tb, tc.width, rule, rounds, space)
			var orders [][][]int
			for _, p := range perms {
				orders = append(orders, [][]int{p, p, p})
			}
			for range 20 {
				var o [][]int
				for range numRounds {
					o = append(o, perms[rng.IntN(len(perms))])
				}
				orders = append(orders, o)
			}
			differs := false
			for _, o := range orders {
				if got := runBSP(t, tb, tc.width, rule, rounds, o, space); !sameBits(got, want) {
					i := 0
					for i < min(len(got.Vals), len(want.Vals)) && math.Float32bits(got.Vals[i]) == math.Float32bits(want.Vals[i]) {
						i++
					}
					t.Fatalf("%s: arrival orders %v: value %d differs from the rank-order sum's (lengths %v, want %v)", name, o, i, got.Lens, want.Lens)
				}
				// The same rounds summed in arrival order.
				arrived := make([][]Request, numRounds)
				for i := range arrived {
					for _, w := range o[i] {
						arrived[i] = append(arrived[i], rounds[i][w])
					}
				}
				if !sameBits(rankOrder(t, tb, tc.width, rule, arrived, space), want) {
					differs = true
				}
			}
			if !differs {
				t.Fatalf("%s: every arrival order gives the same sum: the gradients do not test the order", name)
			}
		}
	}
}

// TestBSPLengthConflict has two workers push a new key with different
// lengths in the same round at width 0: the lower rank's length wins in
// either arrival order, and the other worker's push is refused whole, its
// acknowledgement replaced by the error. A length that contradicts a
// stored key is refused at once.
func TestBSPLengthConflict(t *testing.T) {
	tb, _ := route.Uniform(1, 10)
	pushes := []Request{
		{Worker: 0, ID: 1, Push: true, KV: kv.Batch{Keys: []uint64{1}, Vals: []float32{1}, Lens: []int32{1}}},
		{Worker: 1, ID: 2, Push: true, KV: kv.Batch{Keys: []uint64{2, 5}, Vals: []float32{1, 2, 3}, Lens: []int32{1, 2}}},
		{Worker: 2, ID: 3, Push: true, KV: kv.Batch{Keys: []uint64{3, 5}, Vals: []float32{4, 5, 6, 7}, Lens: []int32{1, 3}}},
	}
	for _, order := range permutations(3) {
		c, _ := New(Config{Rank: 0, Workers: 3, Table: tb, Width: 0, Clock: clock.DefaultConfig()})
		var out []Reply
		for _, w := range order {
			out = c.Handle(clone(pushes[w]), false)
		}
		if len(out) != 3 || out[0].Err != nil || out[1].Err != nil || out[2].Err == nil || out[2].ID != 3 {
			t.Fatalf("order %v: replies %+v", order, out)
		}
		got := c.Store().Pull(kv.Batch{}, []uint64{1, 2, 3, 5})
		if !slices.Equal(got.Lens, []int32{1, 1, 0, 2}) || !slices.Equal(got.Vals, []float32{1, 1, 2, 3}) {
			t.Fatalf("order %v: stored %v %v", order, got.Lens, got.Vals)
		}
		if st := c.Stats(); st.Errors != 1 {
			t.Fatalf("order %v: %d errors counted", order, st.Errors)
		}
		// Round 1: key 5 with 3 values is refused before the round ends.
		bad := Request{Worker: 1, ID: 4, Round: 1, Push: true, KV: kv.Batch{Keys: []uint64{5}, Vals: []float32{1, 1, 1}, Lens: []int32{3}}}
		if out := c.Handle(bad, false); len(out) != 1 || out[0].Err == nil || out[0].ID != 4 {
			t.Fatalf("order %v: conflicting length: %+v", order, out)
		}
	}
}

// TestBSPAheadPush has a worker push round 1 before round 0 completes
// (which a worker never does): its push waits for round 1 and is not
// summed into round 0.
func TestBSPAheadPush(t *testing.T) {
	c := newCore(t, 2, clock.DefaultConfig())
	for _, r := range []Request{push(0, 1, 0, []uint64{3}, []float32{1}), push(0, 2, 1, []uint64{3}, []float32{10})} {
		if out := handle(c, r); len(out) != 0 {
			t.Fatalf("answered early: %+v", out)
		}
	}
	out := handle(c, push(1, 3, 0, []uint64{3}, []float32{2}))
	if len(out) != 2 || out[0].ID != 1 || out[1].ID != 3 {
		t.Fatalf("round 0: %+v", out)
	}
	if got := c.Store().Pull(kv.Batch{}, []uint64{3}).Vals[0]; got != 3 {
		t.Fatalf("after round 0: %v, want 3", got)
	}
	out = handle(c, push(1, 4, 1, []uint64{3}, []float32{20}))
	if len(out) != 2 || out[0].ID != 2 || out[1].ID != 4 {
		t.Fatalf("round 1: %+v", out)
	}
	if got := c.Store().Pull(kv.Batch{}, []uint64{3}).Vals[0]; got != 33 {
		t.Fatalf("after round 1: %v, want 33", got)
	}
}

// TestBSPNoAllocs checks that BSP rounds in the steady state, sparse and
// range pushes, do not allocate.
func TestBSPNoAllocs(t *testing.T) {
	const workers = 4
	tb, _ := route.Uniform(1, 64)
	c, _ := New(Config{Rank: 0, Workers: workers, Table: tb, Width: 2, Rule: update.SGD{LR: 0.1}, Clock: clock.DefaultConfig()})
	rng := rand.New(rand.NewPCG(1, 2))
	reqs := bspRound(rng, 0, workers, 64, 2, []bool{false, true, false, true})
	round := int64(0)
	run := func() {
		for _, w := range []int{3, 1, 0, 2} {
			r := reqs[w]
			r.Round = round
			c.Handle(r, false)
		}
		round++
	}
	run()
	if a := testing.AllocsPerRun(20, run); a != 0 {
		t.Fatalf("%v allocations per round", a)
	}
}

// TestApplySumCopies checks replication after aggregation: a backup's
// copy fed only each round's sum (TakeSum, ApplySum) holds the same
// keys in the same slots, values and rule states bit for bit, as the
// core fed the pushes in random arrival orders, for every rule with
// state, sparse and range pushes, keys beyond the index (extra slots)
// and a placement's table that is not one range of keys.
func TestApplySumCopies(t *testing.T) {
	const workers, numRounds, space = 3, 6, 48
	uniform, _ := route.Uniform(1, 32) // keys [32, 48) beyond the index
	param := make([]int32, 40)
	for k := range param {
		param[k] = int32(k % 2) // server 0 holds the even keys below 40
	}
	scattered, _ := route.FromPlacement(param, 2)
	rules := []update.Rule{update.Sum{}, update.SGD{LR: 0.5, L1: 1e-3, L2: 1e-2}, update.AdaGrad{LR: 0.1, Eps: 1e-6},
		update.Adam{LR: 0.01, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8}, update.FTRL{Alpha: 0.1, Beta: 1, L1: 0.01, L2: 0.01}}
	for _, tc := range []struct {
		name   string
		tb     *route.Table
		width  int
		ranges []bool
	}{
		{"width 1", uniform, 1, nil},
		{"width 3, ranges and sparse", uniform, 3, []bool{true, false, true}},
		{"width 2, placed", scattered, 2, nil},
	} {
		for _, rule := range rules {
			rng := rand.New(rand.NewPCG(uint64(tc.width), 11))
			cfg := Config{Rank: 0, Workers: workers, Table: tc.tb, Width: tc.width, Rule: rule, Clock: clock.DefaultConfig()}
			primary, _ := New(cfg)
			copyOf, _ := New(cfg)
			if !primary.CaptureSums() {
				t.Fatalf("%s: a BSP core of width %d does not capture sums", tc.name, tc.width)
			}
			for i := range numRounds {
				reqs := bspRound(rng, int64(i), workers, space, tc.width, tc.ranges)
				for j, w := range rng.Perm(workers) {
					r := clone(reqs[w])
					primary.Handle(r, false)
					scribble(r)
					round, sum, ok := primary.TakeSum()
					if ok != (j == workers-1) {
						t.Fatalf("%s, %s: round %d, push %d of %d: a sum taken: %v", tc.name, rule.Name(), i, j+1, workers, ok)
					}
					if !ok {
						continue
					}
					if round != int64(i) {
						t.Fatalf("%s, %s: the sum of round %d, want %d", tc.name, rule.Name(), round, i)
					}
					sum = kv.Batch{Keys: slices.Clone(sum.Keys), Vals: slices.Clone(sum.Vals)}
					if err := copyOf.ApplySum(round, sum); err != nil {
						t.Fatal(err)
					}
					if err := copyOf.ApplySum(round, sum); err == nil {
						t.Fatalf("%s, %s: the sum of round %d applied twice", tc.name, rule.Name(), round)
					}
				}
				p, c := primary.Store(), copyOf.Store()
				got, want := c.Snapshot(0, c.Keys()), p.Snapshot(0, p.Keys())
				if !slices.Equal(got.Keys, want.Keys) || !sameBits(got, want) {
					t.Fatalf("%s, %s: round %d: the copy differs:\n%v\nwant\n%v", tc.name, rule.Name(), i, got, want)
				}
				if primary.Steps() != copyOf.Steps() {
					t.Fatalf("%s, %s: round %d: the copy counts %d steps, want %d", tc.name, rule.Name(), i, copyOf.Steps(), primary.Steps())
				}
			}
		}
	}
	// At width 0 the values of new keys are placed in the order of their
	// first pushes: no sums, each push is replicated.
	c, _ := New(Config{Rank: 0, Workers: 2, Table: uniform, Width: 0, Clock: clock.DefaultConfig()})
	if c.CaptureSums() {
		t.Fatal("a core of width 0 captures sums")
	}
	if err := c.ApplySum(0, kv.Batch{}); err == nil {
		t.Fatal("a core of width 0 applied a sum")
	}
}

// TestBSPAlonePush checks the rounds of one worker under BSP, which a
// core applies from the push's values (Store.PushAlone) without the
// round's accumulator: the values and the rules' states are bit for bit
// those of the same pushes summed alone in the accumulator and flushed,
// for every rule, widths 1, 3 and 0, sparse and range pushes, with
// gradients of both signs of zero, subnormals and infinities among
// them; and the accumulator is never allocated.
func TestBSPAlonePush(t *testing.T) {
	const numRounds, space = 6, 48
	tb, _ := route.Uniform(1, 32) // keys [32, 48): extra slots
	odd := []float32{0, float32(math.Copysign(0, -1)), 1e-45, -1e-45, float32(math.Inf(1)), 1e-3, -0.25, 2}
	rules := []update.Rule{update.Sum{}, update.SGD{LR: 0.5, L1: 1e-3, L2: 1e-2}, update.Momentum{LR: 0.1, Mu: 0.9},
		update.AdaGrad{LR: 0.5, Eps: 1e-10}, update.AdaGrad{LR: 0.1, Eps: 1e-8, L1: 1e-4, L2: 1e-3},
		update.Adam{LR: 0.01, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8}, update.FTRL{Alpha: 0.1, Beta: 1, L1: 0.01}}
	for _, tc := range []struct {
		name   string
		width  int
		ranges []bool
	}{{"width 1", 1, nil}, {"width 3", 3, nil}, {"width 0", 0, nil}, {"range, width 2", 2, []bool{true}}} {
		for _, rule := range rules {
			rng := rand.New(rand.NewPCG(uint64(tc.width), 11))
			rounds := make([][]Request, numRounds)
			for i := range rounds {
				rounds[i] = bspRound(rng, int64(i), 1, space, tc.width, tc.ranges)
				for j := range rounds[i][0].KV.Vals {
					if rng.IntN(3) == 0 {
						rounds[i][0].KV.Vals[j] = odd[rng.IntN(len(odd))]
					}
				}
			}
			c, err := New(Config{Rank: 0, Workers: 1, Table: tb, Width: tc.width, Rule: rule, Clock: clock.DefaultConfig()})
			if err != nil {
				t.Fatal(err)
			}
			ref := NewStore(tb.Index(0), tc.width, rule)
			for i, reqs := range rounds {
				r := clone(reqs[0])
				if out := c.Handle(r, false); len(out) != 1 || out[0].Err != nil || out[0].ID != r.ID {
					t.Fatalf("%s, %s: round %d answered %+v", tc.name, rule.Name(), i, out)
				}
				scribble(r)
				if r := reqs[0]; r.Range {
					err = ref.PushRange(r.KV.Keys[0], r.KV.Vals, true)
				} else {
					err = ref.Accumulate(r.KV)
				}
				if err != nil {
					t.Fatal(err)
				}
				ref.Flush()
			}
			got := c.Store()
			if len(got.acc) != 0 {
				t.Errorf("%s, %s: the accumulator of %d values was allocated", tc.name, rule.Name(), len(got.acc))
			}
			arrays := [][2][]float32{{got.vals, ref.vals}}
			for a := range got.state {
				arrays = append(arrays, [2][]float32{got.state[a], ref.state[a]})
			}
			if !slices.Equal(got.off, ref.off) || !slices.Equal(got.ln, ref.ln) {
				t.Fatalf("%s, %s: the values' places differ", tc.name, rule.Name())
			}
			for a, p := range arrays {
				if len(p[0]) != len(p[1]) {
					t.Fatalf("%s, %s: array %d has %d values, want %d", tc.name, rule.Name(), a, len(p[0]), len(p[1]))
				}
				for i := range p[0] {
					if math.Float32bits(p[0][i]) != math.Float32bits(p[1][i]) && !(p[0][i] != p[0][i] && p[1][i] != p[1][i]) {
						t.Fatalf("%s, %s: array %d (0: values, then the rule's states) value %d is %v, want %v", tc.name, rule.Name(), a, i, p[0][i], p[1][i])
					}
				}
			}
		}
	}
}

// TestPushAloneNegativeZero walks the case by hand where a round's sum
// differs from its one push: a momentum of 0.1 turns a velocity of
// −1e−45 into −0.1e−45, rounded to −0; a gradient of −0 then keeps the
// velocity at −0 (−0 + −0) where the accumulator's sum, +0 + −0 = +0,
// makes it +0. PushAlone gives the accumulator's bits. So with the sum
// rule on a value of −0 (as a snapshot may restore it).
func TestPushAloneNegativeZero(t *testing.T) {
	tb, _ := route.Uniform(1, 8)
	rule := update.Momentum{LR: 0.1, Mu: 0.1}
	alone, acc := NewStore(tb.Index(0), 1, rule), NewStore(tb.Index(0), 1, rule)
	for i, g := range []float32{-1e-45, float32(math.Copysign(0, -1))} {
		b := kv.Batch{Keys: []uint64{3}, Vals: []float32{g}}
		if err := alone.PushAlone(b); err != nil {
			t.Fatal(err)
		}
		if err := acc.Accumulate(b); err != nil {
			t.Fatal(err)
		}
		acc.Flush()
		want := []uint32{0x80000001, 0}[i] // −1e−45, then +0
		for _, s := range []*Store{alone, acc} {
			if v := math.Float32bits(s.state[0][3]); v != want {
				t.Fatalf("push %d of %v: velocity %#x, want %#x", i, g, v, want)
			}
		}
	}
	negZero := float32(math.Copysign(0, -1))
	alone, acc = NewStore(tb.Index(0), 1, update.Sum{}), NewStore(tb.Index(0), 1, update.Sum{})
	alone.vals[3], acc.vals[3] = negZero, negZero
	b := kv.Batch{Keys: []uint64{3}, Vals: []float32{negZero}}
	if err := alone.PushAlone(b); err != nil {
		t.Fatal(err)
	}
	if err := acc.Accumulate(b); err != nil {
		t.Fatal(err)
	}
	acc.Flush()
	for _, s := range []*Store{alone, acc} {
		if v := math.Float32bits(s.vals[3]); v != 0 {
			t.Fatalf("sum rule: −0 + (+0 + −0) is %#x, want +0", v)
		}
	}
}
