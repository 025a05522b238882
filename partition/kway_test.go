package partition

import (
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"

	"colo/graph"
	"colo/placement"
)

// TestKWayGains checks the incremental gains of the k-way engine against
// a full recomputation of the volume after every move, on random graphs,
// with floating and with served nets: gain(u, b) is the volume change of
// the move, bestMove's gain is the best over every block with room (and
// within θ, when set), and the counts, sizes and memories stay those of a
// fresh state.
func TestKWayGains(t *testing.T) {
	rng := placement.NewRand(31)
	for trial := 0; trial < 40; trial++ {
		n, m, k := 5+rng.IntN(60), 3+rng.IntN(40), 2+rng.IntN(5)
		if trial%8 == 0 {
			k = 66 + rng.IntN(4) // two mask words
		}
		g := randomGraph(t, rng.Uint64(), n, m, 0.03+0.3*rng.Float64())
		lv := finest(g)
		part := make([]int32, n)
		for u := range part {
			part[u] = int32(rng.IntN(k))
		}
		owner := make([]int32, m)
		for e := range owner {
			owner[e] = -1
			if trial%2 == 1 {
				owner[e] = int32(rng.IntN(k))
			}
		}
		hi := make([]int64, k)
		for i := range hi {
			hi[i] = int64(n)
		}
		s := newKState(lv, k, part, owner, hi, 0)
		if trial%4 >= 2 {
			s.theta = slices.Min(s.mem) + (slices.Max(s.mem)-slices.Min(s.mem))/2
		}
		for step := 0; step < 60; step++ {
			u := rng.IntN(n)
			vol := s.volume()
			bestG := int64(-1 << 62)
			for b := 0; b < k; b++ {
				if b == int(part[u]) {
					continue
				}
				g := s.gain(u, b)
				a := int(part[u])
				s.move(u, b, nil)
				if got := vol - s.volume(); got != g {
					t.Fatalf("trial %d: gain(%d→%d) = %d, recomputed %d", trial, u, b, g, got)
				}
				s.move(u, a, nil)
				// bestMove looks at blocks the nets touch (and servers),
				// at every block when a net is in more than half of them.
				touches := false
				for _, e := range lv.nets(u) {
					touches = touches || s.has(int(e), b) || int(owner[e]) == b || 2*s.lambda(int(e)) > k
				}
				if touches && (s.theta == 0 || s.mem[b]+s.absent(u, b) <= s.theta) {
					bestG = max(bestG, g)
				}
			}
			b, g := s.bestMove(u)
			if b >= 0 && g != bestG {
				t.Fatalf("trial %d: bestMove(%d) gains %d, best %d", trial, u, g, bestG)
			}
			if b >= 0 && s.theta > 0 && s.mem[b]+s.absent(u, b) > s.theta {
				t.Fatalf("trial %d: bestMove(%d) takes block %d to memory %d, above θ %d", trial, u, b, s.mem[b]+s.absent(u, b), s.theta)
			}
			if b < 0 && bestG > -1<<62 {
				t.Fatalf("trial %d: bestMove(%d) finds no block, block of gain %d fits", trial, u, bestG)
			}
			s.move(u, rng.IntN(k), nil)
		}
		fresh := newKState(lv, k, slices.Clone(part), owner, hi, 0)
		if !slices.Equal(fresh.cnt, s.cnt) || !slices.Equal(fresh.nd, s.nd) || !slices.Equal(fresh.size, s.size) || !slices.Equal(fresh.mem, s.mem) {
			t.Fatalf("trial %d: incremental counts differ from a fresh state", trial)
		}
	}
}

// TestKWayTraffic checks the per-block traffic of the engine against the
// cost model, and that FM never loses volume and keeps the bounds.
func TestKWayTraffic(t *testing.T) {
	rng := placement.NewRand(7)
	for trial := 0; trial < 30; trial++ {
		n, m, k := 10+rng.IntN(100), 5+rng.IntN(60), 2+rng.IntN(6)
		g := randomGraph(t, rng.Uint64(), n, m, 0.02+0.2*rng.Float64())
		p := placement.New(k, n, m)
		for u := range p.Data {
			p.Data[u] = int32(u % k)
		}
		AssignParams(g, p, 1)
		s := newKState(finest(g), k, p.Data, p.Param, nil, 0)
		c, _ := placement.Evaluate(g, p, 0)
		if got := s.traffic(); !slices.Equal(got, c.Traffic) {
			t.Fatalf("trial %d: traffic %v, cost model %v", trial, got, c.Traffic)
		}
		hi := make([]int64, k)
		for i := range hi {
			hi[i] = int64((n+k-1)/k) + 1
		}
		floating := make([]int32, m)
		for e := range floating {
			floating[e] = -1
		}
		theta := c.MMax
		fs := newKState(finest(g), k, p.Data, floating, hi, theta)
		before := fs.volume()
		gained := fs.fm(rng, 3)
		if after := fs.volume(); after != before-gained || gained < 0 {
			t.Fatalf("trial %d: volume %d → %d, reported gain %d", trial, before, after, gained)
		}
		for i := 0; i < k; i++ {
			if fs.size[i] > hi[i] || fs.mem[i] > theta {
				t.Fatalf("trial %d: block %d has %d samples (bound %d), memory %d (θ %d)", trial, i, fs.size[i], hi[i], fs.mem[i], theta)
			}
		}
	}
}

// TestRefineNeverWorse refines random placements and Parsa's on random
// graphs for every target and checks that the target never gets worse,
// that the balance bound and θ hold, and that a seed gives one result.
func TestRefineNeverWorse(t *testing.T) {
	rng := placement.NewRand(11)
	for trial := 0; trial < 16; trial++ {
		n, m, k := 30+rng.IntN(300), 10+rng.IntN(150), 2+rng.IntN(7)
		g := randomGraph(t, rng.Uint64(), n, m, 0.01+0.08*rng.Float64())
		start, _ := Random(g, Options{K: k, Seed: uint64(trial), Balanced: true})
		if trial%2 == 1 {
			start, _ = Parsa(g, Options{K: k, Seed: uint64(trial)})
		}
		c0, _ := placement.Evaluate(g, start, 0)
		for _, target := range RefineTargets() {
			opt := Options{K: k, Seed: 3, Refine: RefineOptions{Target: target, VCycles: 1 + trial%2}}
			if trial%3 == 0 {
				opt.Theta = c0.MMax
			}
			q, st, err := Refine(g, start, opt)
			if err != nil {
				t.Fatal(err)
			}
			c, _ := placement.Evaluate(g, q, opt.Theta)
			if targetValue(target, c) > targetValue(target, c0) || st.After != targetValue(target, c) {
				t.Fatalf("trial %d %s: %d → %d (stats %+v)", trial, target, targetValue(target, c0), targetValue(target, c), st)
			}
			bound := max(c0.MaxSamples, int64((float64(n)*(1+DefaultRefineEpsilon))/float64(k))+1)
			if target == TargetObjective {
				bound = c0.MaxSamples
			}
			if c.MaxSamples > bound || c.OverTheta > 0 {
				t.Fatalf("trial %d %s: max|U_i| %d (bound %d), %d machines over θ", trial, target, c.MaxSamples, bound, c.OverTheta)
			}
			q2, _, _ := Refine(g, start, opt)
			if !slices.Equal(q.Data, q2.Data) || !slices.Equal(q.Param, q2.Param) {
				t.Fatalf("trial %d %s: two runs with one seed differ", trial, target)
			}
		}
	}
}

// TestMBP checks MBP on random graphs, with both initial partitions: a
// valid placement within the balance bound, determinism for a seed, and
// (on a graph with planted clusters) a T_sum well below random's.
func TestMBP(t *testing.T) {
	rng := placement.NewRand(19)
	for trial := 0; trial < 12; trial++ {
		n, m, k := 20+rng.IntN(600), 10+rng.IntN(200), 2+rng.IntN(8)
		g := randomGraph(t, rng.Uint64(), n, m, 0.01+0.05*rng.Float64())
		for _, init := range []MBPInitial{InitialRandom, InitialGreedy} {
			opt := Options{K: k, Seed: uint64(trial), MBP: MBPOptions{Initial: init}}
			p, err := MBP(g, opt)
			if err != nil {
				t.Fatal(err)
			}
			if err := p.Validate(g); err != nil {
				t.Fatal(err)
			}
			c, _ := placement.Evaluate(g, p, 0)
			if bound := int64(float64(n)*(1+DefaultRefineEpsilon)/float64(k)) + 1; c.MaxSamples > bound {
				t.Fatalf("%s: max|U_i| %d above %d", init, c.MaxSamples, bound)
			}
			q, _ := MBP(g, opt)
			if !slices.Equal(p.Data, q.Data) || !slices.Equal(p.Param, q.Param) {
				t.Fatalf("%s: two runs with one seed differ", init)
			}
		}
	}
	g := plantedGraph(t, 4, 800, 400)
	base := placement.RandomBaseline(g, 4)
	for _, tc := range []struct {
		init  MBPInitial
		ratio float64
	}{{InitialRandom, 0.8}, {InitialGreedy, 0.5}} {
		p, err := MBP(g, Options{K: 4, Seed: 1, MBP: MBPOptions{Initial: tc.init}})
		if err != nil {
			t.Fatal(err)
		}
		c, _ := placement.Evaluate(g, p, 0)
		t.Logf("planted clusters, %s: T_sum %d, random %.0f", tc.init, c.TSum, base.TSum)
		if float64(c.TSum) > tc.ratio*base.TSum {
			t.Errorf("planted clusters, %s: T_sum %d above %.1f × random's %.0f", tc.init, c.TSum, tc.ratio, base.TSum)
		}
	}
}

// plantedGraph has k clusters of samples that mostly use their own
// cluster's parameters.
func plantedGraph(t *testing.T, k, n, m int) *graph.Graph {
	t.Helper()
	rng := placement.NewRand(3)
	rows := make([][]uint32, n)
	for u := range rows {
		c := u % k
		for len(rows[u]) < 6 {
			v := uint32(c*m/k + rng.IntN(m/k))
			if rng.IntN(10) == 0 {
				v = uint32(rng.IntN(m))
			}
			if !slices.Contains(rows[u], v) {
				rows[u] = append(rows[u], v)
			}
		}
	}
	g, err := graph.FromAdjacency(m, rows)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestLookupRefine checks the registry: the new names, the +refine
// suffix, and that refining never loses on T_max.
func TestLookupRefine(t *testing.T) {
	for _, name := range []string{"tsh", "tsh1", "tsh2", "mbp"} {
		if !slices.Contains(Names(), name) {
			t.Errorf("%s not registered", name)
		}
	}
	if _, err := Lookup("parsa+refine+refine"); err == nil {
		t.Error("parsa+refine+refine: no error")
	}
	g := plantedGraph(t, 4, 400, 200)
	for _, name := range []string{"random", "parsa", "tsh2", "mbp"} {
		f, err := Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		fr, err := Lookup(name + RefineSuffix)
		if err != nil {
			t.Fatal(err)
		}
		opt := Options{K: 4, Seed: 1, Balanced: true}
		p, _ := f(g, opt)
		q, err := fr(g, opt)
		if err != nil {
			t.Fatal(err)
		}
		cp, _ := placement.Evaluate(g, p, 0)
		cq, _ := placement.Evaluate(g, q, 0)
		if cq.TMax > cp.TMax {
			t.Errorf("%s: T_max %d, refined %d", name, cp.TMax, cq.TMax)
		}
		opt.Refine.Enabled = true
		r, _ := f(g, opt)
		if _, err := Lookup(name); err != nil || r == nil {
			t.Fatal(err)
		}
		fe, _ := Lookup(name)
		r, _ = fe(g, opt)
		if !slices.Equal(r.Data, q.Data) {
			t.Errorf("%s: Refine.Enabled differs from the +refine suffix", name)
		}
	}
}

func TestRefineOptionsValidate(t *testing.T) {
	for _, o := range []RefineOptions{{Target: "x"}, {Epsilon: -1}, {Passes: -1}, {Patience: -0.1}, {Patience: 2}} {
		if o.Validate() == nil {
			t.Errorf("%+v: no error", o)
		}
	}
	for _, o := range []MBPOptions{{Initial: "x"}, {Passes: -1}, {Epsilon: -0.5}} {
		if o.Validate() == nil {
			t.Errorf("%+v: no error", o)
		}
	}
}

// TestCluster checks the clusters of coarsening on random graphs: dense
// ids, weight bound, one block per cluster when restricted, pairs only
// when matching; and that contraction keeps the weights and drops nets of
// one cluster.
func TestCluster(t *testing.T) {
	rng := placement.NewRand(23)
	for trial := 0; trial < 40; trial++ {
		n, m, k := 2+rng.IntN(200), 1+rng.IntN(80), 1+rng.IntN(5)
		g := randomGraph(t, rng.Uint64(), n, m, 0.02+0.2*rng.Float64())
		lv := finest(g)
		part := make([]int32, n)
		for u := range part {
			part[u] = int32(rng.IntN(k))
		}
		matching := trial%2 == 0
		maxW := int64(2 + rng.IntN(6))
		cid, nc := cluster(lv, part, maxW, matching, true, rng)
		w := make([]int64, nc)
		blk := make([]int32, nc)
		for c := range blk {
			blk[c] = -1
		}
		for u, c := range cid {
			if c < 0 || int(c) >= nc {
				t.Fatalf("trial %d: cluster id %d of %d", trial, c, nc)
			}
			w[c]++
			if blk[c] >= 0 && blk[c] != part[u] {
				t.Fatalf("trial %d: cluster %d spans blocks", trial, c)
			}
			blk[c] = part[u]
		}
		for c, x := range w {
			if x == 0 || (x > 1 && x > maxW) || (matching && x > 2) {
				t.Fatalf("trial %d: cluster %d weighs %d (bound %d, matching %v)", trial, c, x, maxW, matching)
			}
		}
		cl := contract(lv, cid, nc, nil, 0)
		var total int64
		for _, x := range cl.vw {
			total += x
		}
		if total != int64(n) {
			t.Fatalf("trial %d: coarse weight %d, want %d", trial, total, n)
		}
		for e := 0; e < cl.m; e++ {
			if len(cl.pins(e)) < 2 {
				t.Fatalf("trial %d: coarse net %d has %d pins", trial, e, len(cl.pins(e)))
			}
		}
	}
}

// TestKStateCounts: the counts, masks and memory newKState builds net by
// net (on several goroutines for large levels) equal those of adding
// every vertex's pins one by one, on the finest and a coarser level, for
// one and two mask words.
func TestKStateCounts(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for trial := 0; trial < 4; trial++ {
		g := randomGraph(t, rng.Uint64(), 4000, 900, 0.05)
		if g.NumEdges() < 2*minCountPins {
			t.Fatalf("trial %d: %d edges, too few for two goroutines", trial, g.NumEdges())
		}
		k := []int{7, 16, 64, 100}[trial]
		lv := finest(g)
		part := make([]int32, lv.n)
		for u := range part {
			part[u] = int32(rng.IntN(k))
		}
		cid, nc := cluster(lv, part, 4, false, true, rng)
		c := contract(lv, cid, nc, nil, 0)
		pc := make([]int32, nc)
		for u, x := range cid {
			pc[x] = part[u]
		}
		for _, x := range []struct {
			lv   *level
			part []int32
		}{{lv, part}, {c, pc}} {
			owner := make([]int32, x.lv.m)
			for e := range owner {
				owner[e] = -1
			}
			s := newKState(x.lv, k, x.part, owner, nil, 0)
			ref := &kstate{lv: x.lv, k: k, w: MaskWords(k), part: x.part, owner: owner,
				cnt: make([]int32, x.lv.m*k), size: make([]int64, k), mem: make([]int64, k)}
			ref.unit = !slices.ContainsFunc(x.lv.nw, func(w int64) bool { return w != 1 })
			ref.sd = 2 * ref.w
			if !ref.unit {
				ref.sd++
			}
			ref.nd = make([]uint64, x.lv.m*ref.sd)
			for e, w := range x.lv.nw {
				if !ref.unit {
					ref.nd[e*ref.sd+2*ref.w] = uint64(w)
				}
			}
			for u := 0; u < x.lv.n; u++ {
				ref.size[x.part[u]] += x.lv.vw[u]
				for _, e := range x.lv.nets(u) {
					ref.add(int(e), int(x.part[u]))
				}
			}
			if !slices.Equal(s.cnt, ref.cnt) || !slices.Equal(s.nd, ref.nd) || !slices.Equal(s.size, ref.size) || !slices.Equal(s.mem, ref.mem) {
				t.Fatalf("trial %d (k = %d, %d vertices): counts differ from adding the pins one by one", trial, k, x.lv.n)
			}
		}
	}
}

// TestRefineThreads: Refine and MBP give the same placement on one
// goroutine as on several, on graphs large enough for the concurrent
// counting, rating and clustering.
func TestRefineThreads(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for seed := uint64(1); seed <= 2; seed++ {
		g := randomGraph(t, seed, 5000, 1200, 0.04)
		start, err := Parsa(g, Options{K: 16, Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		var want [2]*placement.Placement
		for _, procs := range []int{1, 2, 4} {
			runtime.GOMAXPROCS(procs)
			opt := Options{K: 16, Seed: seed, Refine: RefineOptions{VCycles: 2, Matching: seed == 2}}
			q, _, err := Refine(g, start, opt)
			if err != nil {
				t.Fatal(err)
			}
			m, err := MBP(g, Options{K: 16, Seed: seed})
			if err != nil {
				t.Fatal(err)
			}
			for x, p := range []*placement.Placement{q, m} {
				if want[x] == nil {
					want[x] = p
				} else if !slices.Equal(p.Data, want[x].Data) || !slices.Equal(p.Param, want[x].Param) {
					t.Fatalf("seed %d: %s on %d goroutines differs from one", seed, []string{"Refine", "MBP"}[x], procs)
				}
			}
		}
	}
}

// TestClusterGrouped checks the grouped scan of coarsening against the
// plain one: on random graphs, blocks, orders and bounds, at the finest
// level and at a contracted one (weighted vertices and nets), with and
// without matching, a vertex scanning only its block's pins of each net
// (pinsByBlock, read through scanNet records up to scanBlocks blocks and
// through the offsets above) forms the same clusters as one skipping the
// others'.
func TestClusterGrouped(t *testing.T) {
	rng := placement.NewRand(29)
	for trial := 0; trial < 60; trial++ {
		n, m, k := 2+rng.IntN(300), 1+rng.IntN(60), 1+rng.IntN(9)
		if trial%4 == 1 {
			// Around scanBlocks: from the records or from the offsets.
			k = scanBlocks - 2 + rng.IntN(6)
		}
		g := randomGraph(t, rng.Uint64(), n, m, 0.02+0.3*rng.Float64())
		lv := finest(g)
		part := make([]int32, n)
		for u := range part {
			part[u] = int32(rng.IntN(k))
		}
		if trial%3 == 0 {
			// A contracted level, its clusters within blocks.
			cid, nc := clusterScan(lv, part, 3, false, true, rng.Perm(n), false)
			pc := make([]int32, nc)
			for u, c := range cid {
				pc[c] = part[u]
			}
			lv, part, n = contract(lv, cid, nc, nil, 0), pc, nc
		}
		matching := trial%2 == 0
		maxW := int64(2 + rng.IntN(6))
		order := rng.Perm(n)
		want, wn := clusterScan(lv, part, maxW, matching, true, order, false)
		got, gn := clusterScan(lv, part, maxW, matching, true, order, true)
		if gn != wn || !slices.Equal(got, want) {
			t.Fatalf("trial %d (n %d, k %d, matching %v): grouped scan gives %d clusters %v, plain %d %v", trial, n, k, matching, gn, got, wn, want)
		}
	}
}

// TestVCycleKeepsState checks the V-cycles that keep the finest level's
// counts and gain cache (moving the samples the coarse levels moved)
// against the ones that count that level anew: on random graphs, with
// and without matching, at several k, seeds, θ and numbers of V-cycles,
// the same data partition, the same levels, and a kept state equal to
// one built afresh from it.
func TestVCycleKeepsState(t *testing.T) {
	for seed := uint64(1); seed <= 6; seed++ {
		for _, k := range []int{2, 3, 8, 16, 70} {
			g := randomGraph(t, seed, 1200+int(seed)*300, 400, 0.02+0.01*float64(seed%3))
			start, err := Random(g, Options{K: k, Seed: seed, Balanced: true})
			if err != nil {
				t.Fatal(err)
			}
			ro := RefineOptions{VCycles: 1 + int(seed%3), Matching: seed%2 == 0, Patience: 1.0 / float64(20+20*(seed%2))}.withDefaults()
			lv := finest(g)
			n := g.NumSamples()
			hi := make([]int64, k)
			for i := range hi {
				hi[i] = int64(math.Ceil(1.03 * float64(n) / float64(k)))
			}
			theta := int64(0)
			if seed%3 == 0 {
				theta = int64(g.NumParams()) * 3 / int64(k)
			}
			var parts [2][]int32
			var levels [2]int
			var kept *kstate
			for x, rebuild := range []bool{true, false} {
				part := slices.Clone(start.Data)
				s := newKState(lv, k, part, floatingNets(lv.m), hi, theta)
				s.patience = ro.Patience
				s.keepCache = !rebuild
				_, levels[x] = refineSamples(s, ro, placement.NewRand(seed), rebuild, nil)
				parts[x] = part
				kept = s
			}
			if !slices.Equal(parts[0], parts[1]) || levels[0] != levels[1] {
				t.Fatalf("seed %d, k = %d: the V-cycles keeping the state give another partition (levels %d, counted anew %d)",
					seed, k, levels[1], levels[0])
			}
			fresh := newKState(lv, k, slices.Clone(parts[1]), floatingNets(lv.m), hi, theta)
			if !slices.Equal(fresh.cnt, kept.cnt) || !slices.Equal(fresh.nd, kept.nd) || !slices.Equal(fresh.size, kept.size) || !slices.Equal(fresh.mem, kept.mem) {
				t.Fatalf("seed %d, k = %d: the kept counts differ from those counted afresh", seed, k)
			}
			if kept.gc != nil {
				fresh.buildCache()
				if !slices.Equal(fresh.gc.rows, kept.gc.rows) {
					t.Fatalf("seed %d, k = %d: the kept gain cache differs from one built afresh", seed, k)
				}
			}
		}
	}
}

// TestPinsByBlock checks pinsByBlock against a stable sort of each rated
// net's pins by block: on random graphs and blocks (1 to 12), the same
// pins in the same order, the blocks' offsets where each block starts,
// and the other nets' pins left as they are.
func TestPinsByBlock(t *testing.T) {
	rng := placement.NewRand(43)
	for trial := 0; trial < 80; trial++ {
		n, m, k := 2+rng.IntN(400), 1+rng.IntN(80), 1+rng.IntN(12)
		g := randomGraph(t, rng.Uint64(), n, m, 0.02+0.4*rng.Float64())
		lv := finest(g)
		part := make([]int32, n)
		for u := range part {
			part[u] = int32(rng.IntN(k))
		}
		rate := make([]float64, lv.m)
		for e := range rate {
			if d := lv.noff[e+1] - lv.noff[e]; d >= 2 && d <= maxRateNet && rng.IntN(4) > 0 {
				rate[e] = 1
			}
		}
		pins, at, nb1 := pinsByBlock(lv, part, rate)
		nb := 1
		for _, b := range part {
			nb = max(nb, int(b)+1)
		}
		if nb1 != nb+1 {
			t.Fatalf("trial %d: nb1 %d, want %d", trial, nb1, nb+1)
		}
		for e := range lv.m {
			want := slices.Clone(lv.pins(e))
			got := pins[lv.noff[e]:lv.noff[e+1]]
			if rate[e] == 0 {
				if !slices.Equal(got, want) {
					t.Fatalf("trial %d net %d (not rated): pins %v, want %v", trial, e, got, want)
				}
				continue
			}
			slices.SortStableFunc(want, func(x, y uint32) int { return int(part[x]) - int(part[y]) })
			if !slices.Equal(got, want) {
				t.Fatalf("trial %d net %d (k %d): pins %v, want %v", trial, e, nb, got, want)
			}
			for b := 0; b <= nb; b++ {
				start := 0
				for _, x := range want {
					if int(part[x]) < b {
						start++
					}
				}
				if int(at[e*nb1+b]) != start {
					t.Fatalf("trial %d net %d: block %d starts at %d, want %d", trial, e, b, at[e*nb1+b], start)
				}
			}
		}
	}
}

// TestScanRecords checks scanRecords against pinsByBlock and the records
// built from its offsets: on random graphs and blocks (1 to scanBlocks,
// some graphs with every net in one block), the same pins of the rated
// nets in the same order, one net after the other, and, for every net,
// its rating, the start of its pins, and each block's start and count of
// pins (none for a net not rated).
func TestScanRecords(t *testing.T) {
	rng := placement.NewRand(47)
	for trial := 0; trial < 120; trial++ {
		n, m, k := 2+rng.IntN(400), 1+rng.IntN(80), 1+rng.IntN(scanBlocks)
		g := randomGraph(t, rng.Uint64(), n, m, 0.02+0.4*rng.Float64())
		lv := finest(g)
		part := make([]int32, n)
		for u := range part {
			part[u] = int32(rng.IntN(k))
		}
		if trial%5 == 0 {
			// Blocks by net: most nets then sit in one block.
			for e := range lv.m {
				b := int32(rng.IntN(k))
				for _, x := range lv.pins(e) {
					if rng.IntN(8) > 0 {
						part[x] = b
					}
				}
			}
		}
		rate := make([]float64, lv.m)
		for e := range rate {
			if d := lv.noff[e+1] - lv.noff[e]; d >= 2 && d <= maxRateNet && rng.IntN(4) > 0 {
				rate[e] = 1 + rng.Float64()
			}
		}
		want, at, nb1 := pinsByBlock(lv, part, rate)
		nb := nb1 - 1
		if got := numBlocks(part); got != nb {
			t.Fatalf("trial %d: numBlocks %d, pinsByBlock's %d", trial, got, nb)
		}
		pins, nets := scanRecords(lv, part, nb, rate)
		// The rated nets' pins, one net after the other.
		var rated []uint32
		for e := range lv.m {
			if rate[e] != 0 {
				rated = append(rated, want[lv.noff[e]:lv.noff[e+1]]...)
			}
		}
		if !slices.Equal(pins, rated) {
			t.Fatalf("trial %d (k %d): pins %v, pinsByBlock's %v", trial, nb, pins, rated)
		}
		start := 0
		for e := range lv.m {
			var rec scanNet
			rec.rate = rate[e]
			if rate[e] != 0 {
				rec.start = uint32(start)
				start += int(lv.noff[e+1] - lv.noff[e])
				o := at[e*nb1 : e*nb1+nb1]
				for b := range nb {
					rec.at[b], rec.n[b] = o[b], o[b+1]-o[b]
				}
			}
			if nets[e] != rec {
				t.Fatalf("trial %d net %d (k %d): record %+v, want %+v", trial, e, nb, nets[e], rec)
			}
		}
	}
}

// TestShiftAsRemoveAdd checks kstate.shift against remove and then add:
// on random graphs and placements (k up to 130, several mask words;
// weighted nets at a contracted level), shifting a pin of random nets
// between random blocks, the same block included, gives the same counts,
// records and memory, and returns the counts after.
func TestShiftAsRemoveAdd(t *testing.T) {
	rng := placement.NewRand(53)
	for trial := 0; trial < 40; trial++ {
		n, m, k := 20+rng.IntN(200), 5+rng.IntN(60), 2+rng.IntN(130)
		g := randomGraph(t, rng.Uint64(), n, m, 0.05+0.3*rng.Float64())
		lv := finest(g)
		if trial%2 == 1 {
			cid, nc := clusterScan(lv, nil, 3, false, true, rng.Perm(n), false)
			lv = contract(lv, cid, nc, nil, 0)
		}
		part := make([]int32, lv.n)
		for u := range part {
			part[u] = int32(rng.IntN(k))
		}
		hi := make([]int64, k)
		s := newKState(lv, k, slices.Clone(part), floatingNets(lv.m), hi, 0)
		r := newKState(lv, k, slices.Clone(part), floatingNets(lv.m), hi, 0)
		for step := 0; step < 200 && lv.m > 0; step++ {
			e := rng.IntN(lv.m)
			var a int
			for a = rng.IntN(k); s.cnt[e*k+a] == 0; a = (a + 1) % k {
			}
			b := a
			if rng.IntN(5) > 0 {
				b = rng.IntN(k)
			}
			ca, cb := s.shift(e, a, b)
			r.remove(e, a)
			r.add(e, b)
			if ca != r.cnt[e*k+a] || cb != r.cnt[e*k+b] {
				t.Fatalf("trial %d step %d: shift(%d, %d, %d) returned %d, %d; counts %d, %d", trial, step, e, a, b, ca, cb, r.cnt[e*k+a], r.cnt[e*k+b])
			}
			if !slices.Equal(s.cnt, r.cnt) || !slices.Equal(s.nd, r.nd) || !slices.Equal(s.mem, r.mem) {
				t.Fatalf("trial %d step %d (k %d): shift(%d, %d, %d) left other counts, records or memory than remove and add", trial, step, k, e, a, b)
			}
		}
	}
}
