package partition

import (
	"testing"

	"colo/placement"
)

// TestBlockTable3 drives Alg. 3 on the graph of seed 000 Fig. 5 through the
// assignments of its Table 3 and checks the queue costs against the table:
// the cost of adding d to D_i there is f(D_i ∪ {d}) = |N(D_i)| + A_i(d).
func TestBlockTable3(t *testing.T) {
	g := seed000Graph(t)
	b := newBlock(2, g.NumParams())
	b.build(g, []uint32{0, 1, 2, 3})
	clear(b.mask)
	b.prepare()
	cost := func(i int, s int32) int64 { return b.size[i] + int64(b.nodes[i*b.qs+int(s)].cost) }
	type row struct {
		part   int     // the machine growing, from 0
		costs  []int64 // f(D_i ∪ {d}) of the unassigned d, in order
		assign int32   // the sample the table assigns
	}
	for it, r := range []row{
		{0, []int64{2, 3, 4, 4}, 0}, // iteration 1, D1 = ∅: d1
		{1, []int64{3, 4, 4}, 1},    // iteration 2, D2 = ∅: d2
		{0, []int64{6, 6}, 2},       // iteration 3, D1 = {d1}: d3 (tie by index)
		{1, []int64{6}, 3},          // iteration 4, D2 = {d2}: d4
	} {
		var got []int64
		for s := int32(0); s < 4; s++ {
			if !b.assigned[s] {
				got = append(got, cost(r.part, s))
			}
		}
		if len(got) != len(r.costs) {
			t.Fatalf("iteration %d: %d unassigned, want %d", it+1, len(got), len(r.costs))
		}
		for x := range got {
			if got[x] != r.costs[x] {
				t.Errorf("iteration %d: costs %v, want %v", it+1, got, r.costs)
				break
			}
		}
		b.unlink(r.part, r.assign)
		b.assign(r.assign, r.part)
	}
	// max_i |N(D_i)| = 6: both machines need all six parameters.
	if b.size[0] != 6 || b.size[1] != 6 {
		t.Errorf("|N(D_i)| = %v, want [6 6]", b.size)
	}
}

// TestParsaSeed000Fig5 runs Parsa on the graph of seed 000 Fig. 5: adding
// one sample at a time, the best it can do is max_i |N(D_i)| = 6 with all
// six parameters crossing (Fig. 5(b)), where pairs would reach 4 (Fig. 4).
func TestParsaSeed000Fig5(t *testing.T) {
	g := seed000Graph(t)
	for _, init := range []InitMode{InitNone} {
		opt := Options{K: 2, Seed: 1, Parsa: ParsaOptions{Blocks: 1, Init: init}}
		p, err := Parsa(g, opt)
		if err != nil {
			t.Fatal(err)
		}
		c, err := placement.Evaluate(g, p, 0)
		if err != nil {
			t.Fatal(err)
		}
		if c.MMax != 6 || c.TMax != 6 || c.MaxSamples != 2 {
			t.Errorf("init %s: M_max %d, T_max %d, max|U_i| %d; want 6, 6, 2", init, c.MMax, c.TMax, c.MaxSamples)
		}
	}
}

// TestBlockEq9 checks the bucket queues against a naive evaluation of
// Eq. (9) of seed 001 on random graphs and random initial neighbour sets:
// at every step the sample taken has the least |N(u) \ S_i| over the
// unassigned samples, recomputed from scratch, and the partition grown is
// a smallest one whose least cost is least among the smallest.
func TestBlockEq9(t *testing.T) {
	rng := placement.NewRand(9)
	for trial := 0; trial < 80; trial++ {
		n, m := 1+rng.IntN(50), 1+rng.IntN(30)
		k := 1 + rng.IntN(5)
		if trial%10 == 0 {
			k = 65 + rng.IntN(10) // two mask words
		}
		g := randomGraph(t, rng.Uint64(), n, m, rng.Float64()*0.5)
		w := MaskWords(k)
		// Naive state: S[i][v].
		S := make([][]bool, k)
		for i := range S {
			S[i] = make([]bool, m)
			for v := range S[i] {
				S[i][v] = rng.IntN(4) == 0
			}
		}
		samples := make([]uint32, n)
		for u := range samples {
			samples[u] = uint32(u)
		}
		rng.Shuffle(n, func(a, b int) { samples[a], samples[b] = samples[b], samples[a] })
		b := newBlock(k, m)
		b.build(g, samples)
		for l, v := range b.params {
			for i := 0; i < k; i++ {
				if S[i][v] {
					b.mask[l*w+i/64] |= 1 << (i % 64)
				}
			}
		}
		counts := make([]int64, k)
		for i := range counts {
			counts[i] = int64(rng.IntN(3))
		}
		copy(b.count, counts)
		b.prepare()
		assigned := make([]bool, n)
		naive := func(i, u int) int32 {
			c := int32(0)
			for _, v := range g.Params(u) {
				if !S[i][v] {
					c++
				}
			}
			return c
		}
		for step := 0; step < n; step++ {
			// The partition rule, naively.
			lo := counts[0]
			for _, c := range counts {
				lo = min(lo, c)
			}
			wantPart, wantCost := -1, int32(0)
			for i := 0; i < k; i++ {
				if counts[i] != lo {
					continue
				}
				best := int32(-1)
				for u := 0; u < n; u++ {
					if !assigned[u] && (best < 0 || naive(i, u) < best) {
						best = naive(i, u)
					}
				}
				if wantPart < 0 || best < wantCost {
					wantPart, wantCost = i, best
				}
			}
			i, s, c := b.step()
			u := int(samples[s])
			if i != wantPart || c != wantCost || naive(i, u) != c || assigned[u] {
				t.Fatalf("trial %d step %d: took sample %d (cost %d, naive %d) for partition %d; want partition %d at cost %d",
					trial, step, u, c, naive(i, u), i, wantPart, wantCost)
			}
			assigned[u] = true
			counts[i]++
			for _, v := range g.Params(u) {
				S[i][v] = true
			}
		}
		// The grown sets and the block's own sets match the naive ones.
		for l, v := range b.params {
			for i := 0; i < k; i++ {
				got := b.mask[l*w+i/64]>>(i%64)&1 == 1
				if got != S[i][v] {
					t.Fatalf("trial %d: S_%d ∋ %d is %v, naive %v", trial, i, v, got, S[i][v])
				}
			}
		}
	}
}

// TestCountBits checks countBits against a count bit by bit: for k from
// 1 to 130 (one lane word up to k = 8, several beyond, several mask words
// beyond 64), rows of up to 700 parameters (more than 255, where the
// lanes are flushed) with random masks, the bits above k set in some, as
// the hubs' masks are, each have[i] is the number of the row's
// parameters whose mask holds i.
func TestCountBits(t *testing.T) {
	rng := placement.NewRand(59)
	for trial := 0; trial < 200; trial++ {
		k := 1 + rng.IntN(130)
		if trial%3 == 0 {
			k = 1 + rng.IntN(8)
		}
		b := newBlock(k, 1)
		m := 1 + rng.IntN(800)
		b.mask = make([]uint64, m*b.w)
		for i := range b.mask {
			b.mask[i] = rng.Uint64() & rng.Uint64()
			if rng.IntN(20) == 0 {
				b.mask[i] = ^uint64(0)
			}
		}
		row := make([]uint32, rng.IntN(700))
		for x := range row {
			row[x] = uint32(rng.IntN(m))
		}
		have := make([]int32, k)
		b.countBits(row, have, make([]uint64, (k+7)/8), (k+7)/8)
		for i := range k {
			var want int32
			for _, l := range row {
				want += int32(b.mask[int(l)*b.w+i>>6] >> (i & 63) & 1)
			}
			if have[i] != want {
				t.Fatalf("trial %d (k %d, %d parameters): have[%d] = %d, want %d", trial, k, len(row), i, have[i], want)
			}
		}
	}
}
