package shard

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"colo/dataset"
)

// blobs returns a dataset of the given class sizes: each class is a few
// Gaussian blobs in dim dimensions.
func blobs(t testing.TB, sizes []int, dim int, seed uint64) *dataset.Dataset {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 77))
	var x []float32
	var y []int
	for c, m := range sizes {
		centres := make([][]float64, 3)
		for b := range centres {
			centres[b] = make([]float64, dim)
			for j := range dim {
				centres[b][j] = rng.NormFloat64() * 4
			}
		}
		for range m {
			ctr := centres[rng.IntN(len(centres))]
			for j := range dim {
				x = append(x, float32(ctr[j]+rng.NormFloat64()))
			}
			y = append(y, c)
		}
	}
	// Shuffle so that classes interleave.
	n := len(y)
	perm := rng.Perm(n)
	xs, ys := make([]float32, 0, len(x)), make([]int, n)
	for k, i := range perm {
		xs = append(xs, x[i*dim:(i+1)*dim]...)
		ys[k] = y[i]
	}
	d, err := dataset.New(xs, ys, dim, len(sizes))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestRoundRobinExact(t *testing.T) {
	if got, want := RoundRobin(7, 3), []int{0, 1, 2, 0, 1, 2, 0}; !slices.Equal(got, want) {
		t.Errorf("RoundRobin(7, 3) = %v, want %v", got, want)
	}
}

func TestStratifiedExact(t *testing.T) {
	tests := []struct {
		labels  []int
		classes int
		workers int
		want    []int
	}{
		// Class 0 = {1, 4, 6} → 0 1 0; class 1 = {0, 2, 3, 7} → 1 0 1 0;
		// class 2 = {5} → 1.
		{[]int{1, 0, 1, 1, 0, 2, 0, 1}, 3, 2, []int{1, 0, 0, 1, 1, 1, 0, 0}},
		// Seed 004 Fig. 3: two classes of four, two workers: half of each.
		{[]int{0, 0, 0, 0, 1, 1, 1, 1}, 2, 2, []int{0, 1, 0, 1, 0, 1, 0, 1}},
		// Class 0 = {0, 1, 2} → 0 1 2; class 1 = {3, 4} → 0 1; an empty
		// class in between changes nothing.
		{[]int{0, 0, 0, 2, 2}, 3, 3, []int{0, 1, 2, 0, 1}},
		{[]int{0, 1, 0}, 2, 1, []int{0, 0, 0}},
	}
	for _, tt := range tests {
		if got := Stratified(tt.labels, tt.classes, tt.workers); !slices.Equal(got, tt.want) {
			t.Errorf("Stratified(%v, %d, %d) = %v, want %v", tt.labels, tt.classes, tt.workers, got, tt.want)
		}
	}
}

func TestAssignClustersExact(t *testing.T) {
	// Cluster 0 = {0, 2, 5, 7} → 0 1 0 1; cluster 1 = {1, 4, 6} → 0 1 0;
	// cluster 2 = {3} is smaller than 2 workers and broadcast.
	got := AssignClusters([]int{0, 1, 0, 2, 1, 0, 1, 0}, 3, 2)
	want := []int{0, 0, 1, Broadcast, 1, 0, 0, 1}
	if !slices.Equal(got, want) {
		t.Errorf("AssignClusters = %v, want %v", got, want)
	}
	// A cluster exactly as large as the number of workers is dealt out.
	if got := AssignClusters([]int{0, 0}, 1, 2); !slices.Equal(got, []int{0, 1}) {
		t.Errorf("cluster of N samples: %v, want [0 1]", got)
	}
}

// spread returns the largest difference between two shards' sizes and
// between two shards' counts of one class.
func spread(assign, labels []int, classes, workers int) (size, class int) {
	counts := make([][]int, classes)
	for l := range counts {
		counts[l] = make([]int, workers)
	}
	sizes := make([]int, workers)
	for i, w := range assign {
		if w == Broadcast {
			continue
		}
		sizes[w]++
		counts[labels[i]][w]++
	}
	size = slices.Max(sizes) - slices.Min(sizes)
	for _, c := range counts {
		class = max(class, slices.Max(c)-slices.Min(c))
	}
	return size, class
}

func TestBalanceProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	for trial := range 50 {
		n, classes, workers := 1+rng.IntN(300), 1+rng.IntN(8), 1+rng.IntN(13)
		labels := make([]int, n)
		for i := range labels {
			labels[i] = rng.IntN(classes)
		}
		if s, c := spread(Stratified(labels, classes, workers), labels, classes, workers); s > 1 || c > 1 {
			t.Errorf("trial %d: stratified size spread %d, class spread %d; want ≤ 1", trial, s, c)
		}
		if s, _ := spread(Random(n, workers, rng), labels, classes, workers); s > 1 {
			t.Errorf("trial %d: random size spread %d; want ≤ 1", trial, s)
		}
		if s, _ := spread(RoundRobin(n, workers), labels, classes, workers); s > 1 {
			t.Errorf("trial %d: roundrobin size spread %d; want ≤ 1", trial, s)
		}
	}
}

// TestEverySampleOnce runs every scheme and checks that each sample has
// exactly one worker, and that only distaware broadcasts, exactly the
// samples of its small clusters.
func TestEverySampleOnce(t *testing.T) {
	d := blobs(t, []int{70, 45, 5, 30}, 6, 1)
	for _, scheme := range Schemes() {
		o := DefaultOptions()
		o.Workers, o.Scheme = 6, scheme
		if scheme == SchemeDistAware {
			o.Clusters = 12 // some smaller than 6 workers
		}
		res, err := Shard(d, o, rand.New(rand.NewPCG(1, 2)))
		if err != nil {
			t.Fatalf("%s: %v", scheme, err)
		}
		if len(res.Assign) != d.Len() {
			t.Fatalf("%s: %d assignments for %d samples", scheme, len(res.Assign), d.Len())
		}
		broadcast := 0
		for i, w := range res.Assign {
			switch {
			case w == Broadcast:
				broadcast++
			case w < 0 || w >= o.Workers:
				t.Fatalf("%s: sample %d on worker %d", scheme, i, w)
			}
		}
		if scheme != SchemeDistAware && broadcast > 0 {
			t.Errorf("%s: %d broadcast samples, want none", scheme, broadcast)
		}
		if scheme == SchemeDistAware {
			want := 0
			for _, c := range res.Clusters {
				if c.Broadcast {
					want += c.Size
				}
				if c.Broadcast != (c.Size < o.Workers) {
					t.Errorf("cluster of %d samples: broadcast %v with %d workers", c.Size, c.Broadcast, o.Workers)
				}
			}
			if broadcast != want || want == 0 {
				t.Errorf("distaware: %d broadcast samples, clusters say %d (want some)", broadcast, want)
			}
		}
	}
}

func TestIntegerTargetsWithinOne(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 9))
	for trial := range 300 {
		classes, workers := 1+rng.IntN(12), 1+rng.IntN(9)
		sizes := make([]int, classes)
		for l := range sizes {
			sizes[l] = rng.IntN(200)
		}
		ratios := make([]float64, workers)
		for j := range ratios {
			ratios[j] = 0.1 + rng.Float64()*5
			if trial%3 == 0 {
				ratios[j] = math.Pow(2, float64(j)) // 1:2:4:8…
			}
		}
		counts, err := IntegerTargets(sizes, ratios, workers)
		if err != nil {
			t.Fatalf("trial %d: %v", trial, err)
		}
		sizeT, countT := Targets(sizes, ratios, workers)
		got := make([]int, workers)
		for l := range classes {
			sum := 0
			for j, c := range counts[l] {
				if math.Abs(float64(c)-countT[l][j]) >= 1 {
					t.Fatalf("trial %d: class %d worker %d: %d for target %g", trial, l, j, c, countT[l][j])
				}
				sum += c
				got[j] += c
			}
			if sum != sizes[l] {
				t.Fatalf("trial %d: class %d split into %d of %d", trial, l, sum, sizes[l])
			}
		}
		for j := range workers {
			if math.Abs(float64(got[j])-sizeT[j]) >= 1 {
				t.Fatalf("trial %d: worker %d size %d for target %g", trial, j, got[j], sizeT[j])
			}
		}
	}
}

// TestSubmodularRatios checks that shard sizes and per-class counts of
// submodular sharding are within one of their targets, also when classes
// are split into blocks.
func TestSubmodularRatios(t *testing.T) {
	d := blobs(t, []int{61, 47, 3, 90}, 5, 2)
	for _, tt := range []struct {
		ratios   []float64
		maxBlock int
		function Function
		greedy   Greedy
		grow     Grow
	}{
		{[]float64{1, 2, 4, 8}, 8192, FacilityLocation, GreedyLazy, GrowMinF},
		{[]float64{3, 1, 1.5}, 8192, GraphCut, GreedyLazy, GrowMinF},
		{[]float64{1, 2, 4, 8}, 25, FacilityLocation, GreedyStochastic, GrowProportional},
		{nil, 8192, FacilityLocation, GreedyPlain, GrowMinF},
	} {
		o := DefaultOptions()
		o.Scheme = SchemeSubmodular
		o.Workers = 5
		if tt.ratios != nil {
			o.Workers = len(tt.ratios)
		}
		o.Ratios, o.MaxBlock, o.Function, o.Greedy, o.Grow = tt.ratios, tt.maxBlock, tt.function, tt.greedy, tt.grow
		res, err := Shard(d, o, rand.New(rand.NewPCG(4, 4)))
		if err != nil {
			t.Fatal(err)
		}
		s, err := Summarize(d, res, SummaryOptions{Ratios: tt.ratios, CoverageSample: -1}, rand.New(rand.NewPCG(1, 1)))
		if err != nil {
			t.Fatal(err)
		}
		if s.MaxSizeDeviation >= 1 || s.MaxClassCountDeviation >= 1 {
			t.Errorf("%+v: size deviation %g, class count deviation %g; want < 1", tt, s.MaxSizeDeviation, s.MaxClassCountDeviation)
		}
	}
}

// TestLazyEqualsPlain checks that lazy greedy picks exactly what plain
// greedy picks, for both functions and both growth rules.
func TestLazyEqualsPlain(t *testing.T) {
	for seed := range uint64(4) {
		d := blobs(t, []int{40, 55, 23}, 4, seed)
		for _, fn := range []Function{FacilityLocation, GraphCut} {
			for _, grow := range []Grow{GrowMinF, GrowProportional} {
				o := DefaultOptions()
				o.Scheme, o.Workers, o.Ratios, o.Function, o.Grow = SchemeSubmodular, 3, []float64{1, 2, 3}, fn, grow
				var got [2][]int
				for k, g := range []Greedy{GreedyPlain, GreedyLazy} {
					o.Greedy = g
					res, err := Shard(d, o, rand.New(rand.NewPCG(seed, 1)))
					if err != nil {
						t.Fatal(err)
					}
					got[k] = res.Assign
				}
				if !slices.Equal(got[0], got[1]) {
					t.Errorf("seed %d %s %s: lazy greedy differs from plain greedy", seed, fn, grow)
				}
			}
		}
	}
}

// TestPartitionAgainstDefinition replays partition's picks with f
// evaluated by its definition: every pick must go to the block with the
// smallest f and be an element of largest marginal gain.
func TestPartitionAgainstDefinition(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 8))
	const m = 14
	x := make([]float32, m*3)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	s := similarity(x, m, 3, 1.3, 1)
	facilityF := func(set []int) float64 {
		f := 0.0
		for u := range m {
			best := 0.0
			for _, a := range set {
				best = max(best, float64(s[u*m+a]))
			}
			f += best
		}
		return f
	}
	cutF := func(set []int) float64 {
		in := map[int]bool{}
		for _, a := range set {
			in[a] = true
		}
		f := 0.0
		for u := range m {
			if in[u] {
				continue
			}
			for _, a := range set {
				f += float64(s[u*m+a])
			}
		}
		return f
	}
	caps := []int{3, 5, 6}
	for name, def := range map[string]func([]int) float64{"facility": facilityF, "graphcut": cutF} {
		var obj objective = newFacility(s, m, len(caps))
		if name == "graphcut" {
			obj = newGraphCut(s, m, len(caps))
		}
		block, _ := partition(obj, m, caps, GrowMinF, GreedyPlain, 0.1, rng)
		// Rebuild the order of picks by replaying the rule from scratch.
		sets := make([][]int, len(caps))
		placed := make([]bool, m)
		for range m {
			j := -1
			for b := range caps {
				if len(sets[b]) < caps[b] && (j < 0 || def(sets[b]) < def(sets[j])-1e-9) {
					j = b
				}
			}
			best, bestGain := -1, math.Inf(-1)
			for v := range m {
				if placed[v] {
					continue
				}
				g := def(append(slices.Clone(sets[j]), v)) - def(sets[j])
				if g > bestGain+1e-6 {
					best, bestGain = v, g
				}
			}
			if block[best] != j {
				t.Fatalf("%s: definition puts %d in block %d, partition in %d", name, best, j, block[best])
			}
			sets[j] = append(sets[j], best)
			placed[best] = true
		}
	}
}

// TestGainsAgainstDefinition checks incremental gains against f
// recomputed from its definition after every add.
func TestGainsAgainstDefinition(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 3))
	const m = 37
	x := make([]float32, m*5)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	s := similarity(x, m, 5, 2, 2)
	fac, cut := newFacility(s, m, 1), newGraphCut(s, m, 1)
	var set []int
	in := make([]bool, m)
	fFac, fCut := 0.0, 0.0
	for _, v := range rng.Perm(m) {
		gf, gc := fac.gain(0, v), cut.gain(0, v)
		if af, ac := fac.add(0, v), cut.add(0, v); af != gf || ac != gc {
			t.Fatalf("add returned %g, %g; gain said %g, %g", af, ac, gf, gc)
		}
		fFac += gf
		fCut += gc
		set = append(set, v)
		in[v] = true
		wantFac, wantCut := 0.0, 0.0
		for u := range m {
			best := 0.0
			for _, a := range set {
				best = max(best, float64(s[u*m+a]))
				if !in[u] {
					wantCut += float64(s[u*m+a])
				}
			}
			wantFac += best
		}
		if math.Abs(fFac-wantFac) > 1e-4 || math.Abs(fCut-wantCut) > 1e-3 {
			t.Fatalf("after %d adds: facility %g (definition %g), cut %g (definition %g)", len(set), fFac, wantFac, fCut, wantCut)
		}
	}
}

func TestSimilarity(t *testing.T) {
	x := []float32{0, 0, 3, 4, 0, 1}
	s := similarity(x, 3, 2, 5, 1)
	want := []float64{1, math.Exp(-25.0 / 50), math.Exp(-1.0 / 50), math.Exp(-25.0 / 50), 1, math.Exp(-18.0 / 50), math.Exp(-1.0 / 50), math.Exp(-18.0 / 50), 1}
	for k, w := range want {
		if math.Abs(float64(s[k])-w) > 1e-6 {
			t.Errorf("S[%d][%d] = %g, want %g", k/3, k%3, s[k], w)
		}
	}
	// Large enough for several tiles and threads: symmetric, unit
	// diagonal, independent of the number of threads.
	rng := rand.New(rand.NewPCG(1, 1))
	const m = 1100
	big := make([]float32, m*3)
	for i := range big {
		big[i] = float32(rng.NormFloat64())
	}
	a, b := similarity(big, m, 3, 1, 1), similarity(big, m, 3, 1, 3)
	if !slices.Equal(a, b) {
		t.Error("similarity depends on the number of threads")
	}
	for u := 0; u < m; u += 37 {
		for v := 0; v < m; v += 41 {
			if a[u*m+v] != a[v*m+u] || u == v && a[u*m+v] != 1 {
				t.Fatalf("S[%d][%d] = %g, S[%d][%d] = %g", u, v, a[u*m+v], v, u, a[v*m+u])
			}
		}
	}
}

func TestStochasticGreedy(t *testing.T) {
	d := blobs(t, []int{80, 60}, 4, 9)
	o := DefaultOptions()
	o.Scheme, o.Workers, o.Greedy, o.Epsilon = SchemeSubmodular, 3, GreedyStochastic, 0.3
	a, err := Shard(d, o, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	b, err := Shard(d, o, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(a.Assign, b.Assign) {
		t.Error("stochastic greedy is not reproducible from the seed")
	}
	lazy := o
	lazy.Greedy = GreedyLazy
	c, err := Shard(d, lazy, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	if a.Evaluations >= c.Evaluations {
		t.Logf("stochastic %d evaluations, lazy %d", a.Evaluations, c.Evaluations)
	}
	if s, cl := spread(a.Assign, d.Labels, d.Classes, 3); s > 1 || cl > 1 {
		t.Errorf("stochastic: size spread %d, class spread %d", s, cl)
	}
}

func TestSubmodularThreadsIndependent(t *testing.T) {
	d := blobs(t, []int{90, 70, 40}, 5, 4)
	var first []int
	for _, threads := range []int{1, 2, 7} {
		o := DefaultOptions()
		o.Scheme, o.Workers, o.Threads, o.MaxBlock = SchemeSubmodular, 4, threads, 30
		o.Greedy = GreedyStochastic
		res, err := Shard(d, o, rand.New(rand.NewPCG(6, 6)))
		if err != nil {
			t.Fatal(err)
		}
		if first == nil {
			first = res.Assign
		} else if !slices.Equal(first, res.Assign) {
			t.Errorf("threads %d: assignment differs from threads 1", threads)
		}
	}
}

func TestOptionsValidate(t *testing.T) {
	sub := func(edit func(*Options)) func(*Options) {
		return func(o *Options) { o.Scheme = SchemeSubmodular; edit(o) }
	}
	da := func(edit func(*Options)) func(*Options) {
		return func(o *Options) { o.Scheme = SchemeDistAware; edit(o) }
	}
	tests := []struct {
		edit func(*Options)
		want string
	}{
		{func(o *Options) { o.Workers = 0 }, "workers 0: want at least 1"},
		{func(o *Options) { o.Scheme = "hash" }, `scheme "hash": want one of random, roundrobin, stratified, distaware, submodular`},
		{da(func(o *Options) { o.PCAVariance = 1.5 }), "pca variance 1.5: want a fraction in (0, 1]"},
		{da(func(o *Options) { o.Clusters = -3 }), "clusters -3"},
		{sub(func(o *Options) { o.Ratios = []float64{1} }), "ratios: 1 values for 2 workers"},
		{sub(func(o *Options) { o.Ratios = []float64{1, -2} }), "ratio 2 is -2: want a finite number > 0"},
		{func(o *Options) { o.Ratios = []float64{1, 2} }, "ratios apply to the submodular scheme only"},
		{sub(func(o *Options) { o.Function = "log" }), `function "log": want facility or graphcut`},
		{sub(func(o *Options) { o.Greedy = "eager" }), `greedy "eager": want lazy, stochastic or plain`},
		{sub(func(o *Options) { o.Grow = "max-f" }), `grow "max-f": want min-f or proportional`},
		{sub(func(o *Options) { o.Epsilon = 1 }), "epsilon 1: want a number in (0, 1)"},
		{sub(func(o *Options) { o.Sigma = -1 }), "sigma -1"},
		{sub(func(o *Options) { o.MaxBlock = 1 }), "max block 1: want at least 2"},
		{func(o *Options) { o.Threads = -1 }, "threads -1"},
	}
	for _, tt := range tests {
		o := DefaultOptions()
		tt.edit(&o)
		if err := o.Validate(); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("err = %v, want …%s…", err, tt.want)
		}
	}
	for _, scheme := range Schemes() {
		o := DefaultOptions()
		o.Scheme = scheme
		if err := o.Validate(); err != nil {
			t.Errorf("defaults with %s: %v", scheme, err)
		}
	}
	// The simple schemes need no more than workers and scheme.
	if err := (Options{Workers: 3, Scheme: SchemeRandom}).Validate(); err != nil {
		t.Errorf("minimal options: %v", err)
	}
}

func TestParseRatios(t *testing.T) {
	if got, err := ParseRatios("1:2:4:8"); err != nil || !slices.Equal(got, []float64{1, 2, 4, 8}) {
		t.Errorf("ParseRatios(1:2:4:8) = %v, %v", got, err)
	}
	if got, err := ParseRatios("0.5, 1.5"); err != nil || !slices.Equal(got, []float64{0.5, 1.5}) {
		t.Errorf("ParseRatios(0.5, 1.5) = %v, %v", got, err)
	}
	for _, bad := range []string{"", "1,x", "1,0", "1,-1", "inf"} {
		if _, err := ParseRatios(bad); err == nil {
			t.Errorf("ParseRatios(%q): no error", bad)
		}
	}
}

func TestRoundMatrixExact(t *testing.T) {
	// Two classes of 3 on two equal workers: 1.5 each way; the rounding
	// must give one class 2+1 and the other 1+2 to keep sizes at 3.
	c, err := roundMatrix([][]float64{{1.5, 1.5}, {1.5, 1.5}}, []int{3, 3}, []int{3, 3})
	if err != nil {
		t.Fatal(err)
	}
	if c[0][0]+c[1][0] != 3 || c[0][0]+c[0][1] != 3 || c[1][0]+c[1][1] != 3 {
		t.Errorf("rounding %v does not keep the sums", c)
	}
	if got := apportion(10, []float64{1, 1, 1}); !slices.Equal(got, []int{4, 3, 3}) {
		t.Errorf("apportion(10, 1:1:1) = %v, want [4 3 3]", got)
	}
	if got := apportion(15, []float64{1, 2, 4, 8}); !slices.Equal(got, []int{1, 2, 4, 8}) {
		t.Errorf("apportion(15, 1:2:4:8) = %v", got)
	}
}

func TestDescribe(t *testing.T) {
	o := DefaultOptions()
	o.Scheme = SchemeStratified
	if got := o.Describe(); got != "stratified" {
		t.Errorf("stratified: %q", got)
	}
	o.Scheme, o.Ratios = SchemeSubmodular, []float64{1, 2.5}
	if got := o.Describe(); !strings.Contains(got, "ratios 1:2.5") || !strings.HasPrefix(got, "submodular (") {
		t.Errorf("submodular: %q", got)
	}
}
