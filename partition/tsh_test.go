package partition

import (
	"slices"
	"testing"

	"colo/placement"
)

// TestTSHSeed000 runs Alg. 1 at sample rate 1 on the graph of seed 000
// Figs. 4–5: TSH-2 adds {d1, d2} then {d3, d4} (Table 2) and reaches
// max_i |N(D_i)| = 4 with only p3 crossing; TSH-1 adds d1, d2, d3, d4 in
// turn (Table 3) and reaches 6 with every parameter crossing.
func TestTSHSeed000(t *testing.T) {
	g := seed000Graph(t)
	for _, tc := range []struct {
		alpha      int
		data       []int32
		mmax, tmax int64
	}{
		{1, []int32{0, 1, 0, 1}, 6, 6},
		{2, []int32{0, 0, 1, 1}, 4, 1},
	} {
		for _, pa := range ParamAlgos() {
			p, st, err := RunTSH(g, Options{K: 2, Seed: 1, ParamAlgo: pa, TSH: TSHOptions{Alpha: tc.alpha, SampleRate: 1}})
			if err != nil {
				t.Fatal(err)
			}
			c, _ := placement.Evaluate(g, p, 0)
			if !slices.Equal(p.Data, tc.data) || c.MMax != tc.mmax || c.TMax != tc.tmax {
				t.Errorf("α=%d %s: data %v, M_max %d, T_max %d; want %v, %d, %d (%+v)",
					tc.alpha, pa, p.Data, c.MMax, c.TMax, tc.data, tc.mmax, tc.tmax, st)
			}
		}
	}
}

// TestTSHStepNaive drives Alg. 1 at sample rate 1 step by step on random
// graphs with random starting neighbour sets and checks every step against
// a from-scratch evaluation: the partition grown is the smallest (lowest
// index), and the set taken costs the least f(D_i ∪ S) − f(D_i) over all
// pairs of unassigned samples when a pair fits under ⌈n/k⌉ (a large β takes
// any pair), over all single samples otherwise.
func TestTSHStepNaive(t *testing.T) {
	rng := placement.NewRand(21)
	for trial := 0; trial < 60; trial++ {
		n, m, k := 2+rng.IntN(40), 1+rng.IntN(30), 1+rng.IntN(5)
		g := randomGraph(t, rng.Uint64(), n, m, 0.05+0.3*rng.Float64())
		w := MaskWords(k)
		S := make([][]bool, k)
		for i := range S {
			S[i] = make([]bool, m)
			for v := range S[i] {
				S[i][v] = rng.IntN(5) == 0
			}
		}
		samples := make([]uint32, n)
		for u := range samples {
			samples[u] = uint32(u)
		}
		b := newBlock(k, m)
		b.tieByIndex = true
		b.build(g, samples)
		for l, v := range b.params {
			for i := 0; i < k; i++ {
				if S[i][v] {
					b.mask[l*w+i/64] |= 1 << (i % 64)
				}
			}
		}
		b.prepare()
		capN := int64((n + k - 1) / k)
		b.tsh = newTSHState(&tshConfig{alpha: 2, beta: 1e9, candidates: n, cap: capN, seed: 1}, 0, n, len(b.params))
		assigned := make([]bool, n)
		cost := func(i int, us ...int) int {
			seen := map[uint32]bool{}
			for _, u := range us {
				for _, v := range g.Params(u) {
					if !S[i][v] {
						seen[v] = true
					}
				}
			}
			return len(seen)
		}
		counts := make([]int64, k)
		for left := n; left > 0; {
			want := 0
			for i := range counts {
				if counts[i] < counts[want] {
					want = i
				}
			}
			i := b.choose()
			if i != want {
				t.Fatalf("trial %d: grows partition %d, want %d (sizes %v)", trial, i, want, counts)
			}
			pairOK := left >= 2 && counts[i]+2 <= capN
			best := 1 << 30
			for a := 0; a < n; a++ {
				if assigned[a] {
					continue
				}
				if !pairOK {
					best = min(best, cost(i, a))
					continue
				}
				for c := a + 1; c < n; c++ {
					if !assigned[c] {
						best = min(best, cost(i, a, c))
					}
				}
			}
			s1, s2 := b.tshSelect(i, pairOK, 1)
			got := []int{int(s1)}
			if s2 >= 0 {
				got = append(got, int(s2))
			}
			if (len(got) == 2) != pairOK || cost(i, got...) != best {
				t.Fatalf("trial %d: partition %d takes %v at cost %d; want %d (pair %v)", trial, i, got, cost(i, got...), best, pairOK)
			}
			for _, s := range got {
				b.unlink(i, int32(s))
				b.assign(int32(s), i)
				assigned[s] = true
				counts[i]++
				left--
				for _, v := range g.Params(s) {
					S[i][v] = true
				}
			}
		}
	}
}

// TestTSHProperties runs TSH with sampling, blocks and threads on random
// graphs: every sample placed, balance bound, determinism for a seed.
func TestTSHProperties(t *testing.T) {
	rng := placement.NewRand(8)
	for trial := 0; trial < 20; trial++ {
		n, m := 20+rng.IntN(300), 5+rng.IntN(200)
		g := randomGraph(t, rng.Uint64(), n, m, 0.02+rng.Float64()*0.1)
		k := 1 + rng.IntN(min(n, 12))
		for _, to := range []TSHOptions{
			{Alpha: 1}, {Alpha: 2}, {Alpha: 2, Blocks: 4, Threads: 2}, {Alpha: 2, SampleRate: 0.3, Beta: 2},
		} {
			opt := Options{K: k, Seed: uint64(trial), TSH: to}
			p, err := TSH(g, opt)
			if err != nil {
				t.Fatal(err)
			}
			if err := p.Validate(g); err != nil {
				t.Fatal(err)
			}
			c, _ := placement.Evaluate(g, p, 0)
			if c.MaxSamples > int64((n+k-1)/k) {
				t.Fatalf("%+v: max|D_i| %d above ⌈%d/%d⌉", to, c.MaxSamples, n, k)
			}
			q, _ := TSH(g, opt)
			if !slices.Equal(p.Data, q.Data) || !slices.Equal(p.Param, q.Param) {
				t.Fatalf("%+v: two runs with one seed differ", to)
			}
		}
	}
}

func TestTSHOptionsValidate(t *testing.T) {
	for _, o := range []TSHOptions{{Alpha: 3}, {Alpha: -1}, {Beta: -1}, {SampleRate: 1.5}, {PairCandidates: -1}, {Blocks: -2}, {Threads: -1}} {
		if o.Validate() == nil {
			t.Errorf("%+v: no error", o)
		}
	}
	g := seed000Graph(t)
	if _, err := TSH(g, Options{K: 2, TSH: TSHOptions{Alpha: 3}}); err == nil {
		t.Error("TSH with α = 3: no error")
	}
}
