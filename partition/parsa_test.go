package partition

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"colo/graph"
	"colo/placement"
)

// parsaConfigs are option sets that exercise every path of Parsa.
func parsaConfigs() []ParsaOptions {
	return []ParsaOptions{
		{Init: InitNone, Blocks: 1},
		{Init: InitNone, Blocks: 5},
		{Init: InitIndividual, Blocks: 4},
		{Init: InitIndividual, Blocks: 3, InitBlocks: 7},
		{Init: InitGlobal, Blocks: 3, GlobalFraction: 0.3},
		{Init: InitIndividual, Blocks: 6, Threads: 3, Tau: TauAuto},
		{Init: InitIndividual, Blocks: 6, Threads: 2, Tau: 3},
		{Init: InitNone, Blocks: 6, Threads: 2, Tau: TauInfinite},
		{Init: InitNone, Blocks: 4, GrowBy: GrowParams, Epsilon: 0.1},
		{Init: InitIndividual, Blocks: 8, GrowBy: GrowParams, Threads: 2, Tau: 2},
		{Init: InitIndividual, Blocks: 4, Refine: 3},
		{Init: InitIndividual, Blocks: 4, GrowBy: GrowParams, Epsilon: 0.2, Refine: 2, Threads: 2, Tau: 1},
	}
}

func (o ParsaOptions) String() string {
	return fmt.Sprintf("init=%s b=%d a=%d threads=%d tau=%d grow=%s eps=%g refine=%d",
		o.Init, o.Blocks, o.InitBlocks, o.Threads, o.Tau, o.GrowBy, o.Epsilon, o.Refine)
}

// TestParsaPlacesEverySampleOnce checks on random graphs, for every option
// set, that every sample and parameter is placed exactly once on a valid
// machine and that the balance bound holds: ⌊n/k⌋ ≤ |U_i| ≤ ⌈n/k⌉ when
// growing by samples, |U_i| ≤ ⌈(1+ε)n/k⌉ when growing by parameters.
func TestParsaPlacesEverySampleOnce(t *testing.T) {
	rng := placement.NewRand(5)
	for trial := 0; trial < 12; trial++ {
		n, m := 20+rng.IntN(300), 5+rng.IntN(200)
		g := randomGraph(t, rng.Uint64(), n, m, 0.02+rng.Float64()*0.1)
		for _, po := range parsaConfigs() {
			k := 1 + rng.IntN(min(n, 20))
			p, err := Parsa(g, Options{K: k, Seed: rng.Uint64(), Parsa: po})
			if err != nil {
				t.Fatalf("%v: %v", po, err)
			}
			if err := p.Validate(g); err != nil {
				t.Fatalf("%v: %v", po, err)
			}
			size := make([]int, k)
			for _, i := range p.Data {
				size[i]++
			}
			lo, hi := n/k, (n+k-1)/k
			if po.GrowBy == GrowParams {
				lo, hi = 0, int(ceilDiv((1+po.Epsilon)*float64(n), float64(k)))
			}
			if slices.Min(size) < lo || slices.Max(size) > hi {
				t.Errorf("n=%d k=%d %v: sizes %v, want %d..%d", n, k, po, size, lo, hi)
			}
		}
	}
}

func ceilDiv(a, b float64) float64 {
	q := a / b
	if float64(int64(q)) == q {
		return q
	}
	return float64(int64(q) + 1)
}

// TestParsaDeterministic checks that the same input, seed and thread
// count give the same placement, and that with a fixed τ ≥ 0 the thread
// count does not matter either: τ = 0 on several threads is the
// sequential algorithm.
func TestParsaDeterministic(t *testing.T) {
	g := randomGraph(t, 11, 600, 300, 0.03)
	run := func(po ParsaOptions) *placement.Placement {
		p, err := Parsa(g, Options{K: 7, Seed: 42, Parsa: po})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, po := range parsaConfigs() {
		if po.Tau == TauInfinite {
			continue
		}
		a, b := run(po), run(po)
		if !slices.Equal(a.Data, b.Data) || !slices.Equal(a.Param, b.Param) {
			t.Errorf("%v: two runs differ", po)
		}
	}
	for _, tau := range []int{0, 1, 3} {
		base := ParsaOptions{Init: InitIndividual, Blocks: 9, Threads: 1, Tau: tau}
		want := run(base)
		for _, threads := range []int{2, 3, 5} {
			po := base
			po.Threads = threads
			if got := run(po); !slices.Equal(got.Data, want.Data) {
				t.Errorf("tau %d: %d threads differ from 1", tau, threads)
			}
		}
	}
	// τ = 1 is not τ = 0: the staleness is real.
	a := run(ParsaOptions{Init: InitNone, Blocks: 9, Tau: 0})
	b := run(ParsaOptions{Init: InitNone, Blocks: 9, Tau: 1})
	if slices.Equal(a.Data, b.Data) {
		t.Errorf("tau 0 and tau 1 gave the same placement")
	}
}

// TestParsaIncremental partitions a prefix of the samples, then the whole
// graph from that placement, and checks that only the new samples were
// placed, the old ones kept their machines, and the new samples went
// where they share parameters.
func TestParsaIncremental(t *testing.T) {
	full := randomGraph(t, 21, 500, 200, 0.03)
	n0 := 350
	rows := make([][]uint32, n0)
	for u := range rows {
		rows[u] = full.Params(u)
	}
	old, err := graph.FromAdjacency(full.NumParams(), rows)
	if err != nil {
		t.Fatal(err)
	}
	k := 5
	p0, err := Parsa(old, Options{K: k, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	var calls int
	var done, total int64
	opt := Options{K: k, Seed: 2,
		Progress: func(d, tot int64) { done, total = d, tot },
		Parsa: ParsaOptions{InitFrom: func(n, kk int) ([]int32, error) {
			calls++
			if n != full.NumSamples() || kk != k {
				t.Errorf("InitFrom(%d, %d), want (%d, %d)", n, kk, full.NumSamples(), k)
			}
			return p0.Data, nil
		}}}
	p, st, err := RunParsa(full, opt)
	if err != nil {
		t.Fatal(err)
	}
	if calls != 1 || st.Kept != n0 || st.Placed != full.NumSamples()-n0 {
		t.Errorf("calls %d, kept %d, placed %d; want 1, %d, %d", calls, st.Kept, st.Placed, n0, full.NumSamples()-n0)
	}
	if total != int64(full.NumSamples()-n0) || done != total {
		t.Errorf("progress %d/%d, want %d/%d: only new samples are partitioned", done, total, full.NumSamples()-n0, full.NumSamples()-n0)
	}
	if !slices.Equal(p.Data[:n0], p0.Data) {
		t.Errorf("old samples moved")
	}
	if err := p.Validate(full); err != nil {
		t.Fatal(err)
	}
	// Balance over all samples.
	size := make([]int, k)
	for _, i := range p.Data {
		size[i]++
	}
	if slices.Max(size)-slices.Min(size) > 1 {
		t.Errorf("sizes %v: want balanced", size)
	}
	// Errors of the previous placement are reported.
	bad := []func(int, int) ([]int32, error){
		func(n, k int) ([]int32, error) { return make([]int32, n+1), nil },
		func(n, k int) ([]int32, error) { return []int32{int32(k)}, nil },
		func(n, k int) ([]int32, error) { return nil, fmt.Errorf("no such file") },
	}
	for x, f := range bad {
		if _, err := Parsa(full, Options{K: k, Parsa: ParsaOptions{InitFrom: f}}); err == nil {
			t.Errorf("bad previous placement %d accepted", x)
		}
	}
	// A complete previous placement leaves nothing to do.
	p2, st2, err := RunParsa(full, Options{K: k, Parsa: ParsaOptions{InitFrom: func(int, int) ([]int32, error) { return p.Data, nil }}})
	if err != nil || st2.Placed != 0 || !slices.Equal(p2.Data, p.Data) {
		t.Errorf("complete previous placement: placed %d, err %v", st2.Placed, err)
	}
}

// TestParsaProgress checks that progress is monotone and ends at the total,
// which counts the initialisation passes.
func TestParsaProgress(t *testing.T) {
	g := randomGraph(t, 31, 3000, 400, 0.01)
	for _, po := range []ParsaOptions{
		{Init: InitIndividual, Blocks: 4},
		{Init: InitGlobal, Blocks: 4, GlobalFraction: 0.5},
		{Init: InitIndividual, Blocks: 8, Threads: 3, Tau: TauAuto},
	} {
		var mu sync.Mutex
		var seen []int64
		var tot int64
		opt := Options{K: 4, Seed: 1, Parsa: po, Progress: func(done, total int64) {
			mu.Lock()
			defer mu.Unlock()
			seen = append(seen, done)
			tot = total
		}}
		if _, err := Parsa(g, opt); err != nil {
			t.Fatal(err)
		}
		want := int64(2 * g.NumSamples())
		if po.Init == InitGlobal {
			want = int64(g.NumSamples() * 3 / 2)
		}
		if tot != want || len(seen) == 0 || seen[len(seen)-1] != tot || !slices.IsSorted(seen) {
			t.Errorf("%v: progress ends %v of %d, want %d, monotone", po, seen[len(seen)-1:], tot, want)
		}
	}
}

// TestParsaReport checks that the statistics reach Options.Report.
func TestParsaReport(t *testing.T) {
	g := randomGraph(t, 41, 200, 100, 0.05)
	var got *ParsaStats
	opt := Options{K: 3, Report: func(name string, v any) {
		if name == "parsa" {
			got = v.(*ParsaStats)
		}
	}}
	p, err := Parsa(g, opt)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := placement.Evaluate(g, p, 0)
	if got == nil || got.Placed != 200 || got.Params.TMax != c.TMax || got.Init != DefaultInit || got.Blocks < 1 {
		t.Errorf("report %+v, T_max %d", got, c.TMax)
	}
}

func TestParsaOptionsValidate(t *testing.T) {
	g := randomGraph(t, 1, 10, 5, 0.5)
	for _, tc := range []struct {
		po   ParsaOptions
		want string
	}{
		{ParsaOptions{Blocks: -1}, "blocks"},
		{ParsaOptions{InitBlocks: -2}, "init blocks"},
		{ParsaOptions{Threads: -1}, "threads"},
		{ParsaOptions{Tau: -3}, "tau"},
		{ParsaOptions{Epsilon: -0.1}, "epsilon"},
		{ParsaOptions{GlobalFraction: 1.5}, "global fraction"},
		{ParsaOptions{Init: "magic"}, "init"},
		{ParsaOptions{GrowBy: "edges"}, "grow-by"},
		{ParsaOptions{Refine: -1}, "refine"},
	} {
		_, err := Parsa(g, Options{K: 2, Parsa: tc.po})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want one naming %q", tc.po, err, tc.want)
		}
	}
	if _, err := Parsa(g, Options{K: 11}); err == nil {
		t.Errorf("k > n accepted")
	}
	if err := DefaultParsaOptions().Validate(); err != nil {
		t.Errorf("defaults: %v", err)
	}
}

// TestParsaEdgeCases covers empty samples, k = 1 and k = n.
func TestParsaEdgeCases(t *testing.T) {
	g, err := graph.FromAdjacency(4, [][]uint32{{}, {0}, {}, {1, 2}, {}, {3}})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []int{1, 2, 6} {
		for _, po := range parsaConfigs() {
			p, err := Parsa(g, Options{K: k, Parsa: po})
			if err != nil {
				t.Fatalf("k=%d %v: %v", k, po, err)
			}
			if err := p.Validate(g); err != nil {
				t.Fatalf("k=%d %v: %v", k, po, err)
			}
		}
	}
}

// TestParsaRegistered checks that the command line finds Parsa by name.
func TestParsaRegistered(t *testing.T) {
	if _, err := Lookup("parsa"); err != nil {
		t.Fatal(err)
	}
}

// TestGlobalSize checks the size of the global initialisation's sample:
// the fraction asked for, and by default 10% of the samples but no more
// than hold about a block's edges.
func TestGlobalSize(t *testing.T) {
	for _, c := range []struct {
		f     float64
		n     int
		edges int64
		want  int
	}{
		{0, 1000, 5_000_000, 100}, // 10% hold 500k edges: under a block
		{0, 1000, 10 * DefaultBlockEdges, 100},
		{0, 1000, 50_000_000, 21}, // ⌈1000·2^20/5·10^7⌉
		{0, 1000, 0, 100},
		{0, 3, 1 << 40, 1},           // at least one sample
		{0.3, 1000, 50_000_000, 300}, // asked for: kept
		{1, 7, 50_000_000, 7},
	} {
		if got := GlobalSize(ParsaOptions{GlobalFraction: c.f}, c.n, c.edges); got != c.want {
			t.Errorf("fraction %g of %d samples over %d edges: %d, want %d", c.f, c.n, c.edges, got, c.want)
		}
	}
}
