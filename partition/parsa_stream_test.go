package partition

import (
	"slices"
	"testing"

	"colo/placement"
)

// TestParsaStreamIsRunParsa checks that the plan's blocks given one at a
// time to a ParsaStream, then the parameter step on its masks, are
// RunParsa with one thread and τ = 0, element by element, for each
// initialisation; that its counts and masks are those of the placement;
// and that the progress it reports ends at the total it was given.
func TestParsaStreamIsRunParsa(t *testing.T) {
	rng := placement.NewRand(12)
	for trial := 0; trial < 8; trial++ {
		n, m := 30+rng.IntN(300), 5+rng.IntN(200)
		g := randomGraph(t, rng.Uint64(), n, m, 0.02+rng.Float64()*0.1)
		for _, po := range []ParsaOptions{
			{Init: InitNone, Blocks: 5},
			{Init: InitIndividual, Blocks: 4},
			{Init: InitIndividual, Blocks: 5, InitBlocks: 7},
			{Init: InitGlobal, Blocks: 4, GlobalFraction: 0.3},
			{Init: InitGlobal, Blocks: 6, GrowBy: GrowParams, Epsilon: 0.1},
		} {
			k := 1 + rng.IntN(min(n, 12))
			po.Threads, po.Tau = 1, 0
			opt := Options{K: k, Seed: rng.Uint64(), Parsa: po}
			want, _, err := RunParsa(g, opt)
			if err != nil {
				t.Fatal(err)
			}
			// Individual initialisation draws nothing from the seed: its
			// blocks and parameters' seed are those of a run without.
			plan := opt
			if po.Init == InitIndividual {
				plan.Parsa.Init = InitNone
			}
			pl, err := PlanParsa(g, plan)
			if err != nil {
				t.Fatal(err)
			}
			inits := 0
			if po.Init == InitIndividual {
				inits = po.InitBlocks
				if inits == 0 {
					inits = len(pl.Blocks)
				}
			}
			total := int64(len(pl.Global) + n)
			for j := range inits {
				total += int64(len(pl.Blocks[j%len(pl.Blocks)]))
			}
			var done int64
			opt.Progress = func(d, tot int64) {
				if tot != total || d < done {
					t.Fatalf("progress %d of %d after %d, want a rising count of %d", d, tot, done, total)
				}
				done = d
			}
			s := NewParsaStream(opt, n, g.NumParams(), total)
			if pl.Global != nil {
				s.Global(GraphRows(g, pl.Global))
			}
			for j := range inits {
				s.Init(GraphRows(g, pl.Blocks[j%len(pl.Blocks)]))
			}
			data := make([]int32, n)
			for _, blk := range pl.Blocks {
				for x, i := range s.Block(GraphRows(g, blk)) {
					data[blk[x]] = i
				}
			}
			if err := s.Check(); err != nil {
				t.Fatalf("n=%d k=%d %+v: %v", n, k, po, err)
			}
			if !slices.Equal(data, want.Data) {
				t.Fatalf("n=%d k=%d %+v: the stream's placement differs from RunParsa's", n, k, po)
			}
			if done != total {
				t.Fatalf("n=%d k=%d %+v: progress ended at %d of %d", n, k, po, done, total)
			}
			w := MaskWords(k)
			counts := make([]int64, k)
			masks := make([]uint64, g.NumParams()*w)
			for u, i := range data {
				counts[i]++
				for _, v := range g.Params(u) {
					masks[int(v)*w+int(i)/64] |= 1 << (i % 64)
				}
			}
			if !slices.Equal(s.Counts(), counts) || !slices.Equal(s.Masks(), masks) {
				t.Fatalf("n=%d k=%d %+v: counts %v and masks are not the placement's (%v)", n, k, po, s.Counts(), counts)
			}
			param, _ := AssignParamsMasks(s.Masks(), g.NumParams(), k, pl.ParamSeed)
			if !slices.Equal(param, want.Param) {
				t.Fatalf("n=%d k=%d %+v: the parameters from the stream's masks differ from RunParsa's", n, k, po)
			}
		}
	}
}

// TestParsaStreamCheck checks that Check names a machine outside the
// run's bounds.
func TestParsaStreamCheck(t *testing.T) {
	g := randomGraph(t, 3, 40, 30, 0.1)
	s := NewParsaStream(Options{K: 4, Seed: 1}, g.NumSamples(), g.NumParams(), 0)
	all := make([]uint32, 20) // half the samples: every machine below its bound
	for u := range all {
		all[u] = uint32(u)
	}
	s.Block(GraphRows(g, all))
	if err := s.Check(); err == nil {
		t.Fatal("half the samples placed: no error")
	}
}
