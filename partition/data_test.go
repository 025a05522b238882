package partition

import (
	"os"
	"path/filepath"
	"sync"
	"testing"

	"colo/graph"
	"colo/placement"
)

// dataDir holds the real datasets, beside the repository.
const dataDir = "../../shared/data"

// dataset is a real dataset and how to read it.
type dataset struct {
	name   string
	path   string
	format graph.Format
}

var (
	news20    = dataset{"20news-train", "20news-bydate/20news-bydate.train.libsvm.xz", graph.FormatLibSVM}
	w8a       = dataset{"w8a", "w8a/w8a.xz", graph.FormatLibSVM}
	a9a       = dataset{"a9a", "a9a/a9a.xz", graph.FormatLibSVM}
	facebook  = dataset{"ego-Facebook", "ego-Facebook/facebook_combined.txt.gz", graph.FormatSNAPUndirected}
	slashdot  = dataset{"soc-Slashdot0902", "soc-Slashdot0902/soc-Slashdot0902.txt.gz", graph.FormatSNAP}
	datasets  = []dataset{news20, w8a, a9a, facebook, slashdot}
	loadMu    sync.Mutex
	loadCache = map[string]*graph.Graph{}
)

// load reads a dataset once per test binary, skipping the test when the
// file is absent.
func (d dataset) load(tb testing.TB) *graph.Graph {
	tb.Helper()
	loadMu.Lock()
	defer loadMu.Unlock()
	if g, ok := loadCache[d.name]; ok {
		return g
	}
	path := filepath.Join(dataDir, d.path)
	if _, err := os.Stat(path); err != nil {
		tb.Skipf("dataset %s not found at %s (the shared data directory sits beside the repository)", d.name, path)
	}
	opt := graph.DefaultLoadOptions()
	opt.Format = d.format
	g, err := graph.Load(path, opt)
	if err != nil {
		tb.Fatalf("load %s: %v", d.name, err)
	}
	loadCache[d.name] = g
	return g
}

// referenceLines are the best T_max of the reference implementation (seed
// 001's authors' code, scored on colo's cost model with Alg. 2), which the
// defaults must reach.
var referenceLines = []struct {
	data dataset
	k    int
	tmax int64
}{
	{news20, 8, 25433},
	{news20, 16, 20040},
	{w8a, 16, 471},
	{a9a, 16, 138},
	{facebook, 16, 1861},
	{slashdot, 8, 37386},
	{slashdot, 16, 27944},
}

// TestParsaReference runs Parsa with its defaults on the real datasets and
// checks that T_max reaches the reference's best and that M_max is no
// worse than random placement's.
func TestParsaReference(t *testing.T) {
	if testing.Short() {
		t.Skip("real datasets: skipped in -short")
	}
	for _, line := range referenceLines {
		t.Run(line.data.name, func(t *testing.T) {
			g := line.data.load(t)
			p, st, err := RunParsa(g, Options{K: line.k, Seed: 1, Parsa: DefaultParsaOptions()})
			if err != nil {
				t.Fatal(err)
			}
			c, err := placement.Evaluate(g, p, 0)
			if err != nil {
				t.Fatal(err)
			}
			base := placement.RandomBaseline(g, line.k)
			t.Logf("k=%d: M_max %d (random %.0f), T_max %d (reference %d, random %.0f), T_sum %d; params %+v",
				line.k, c.MMax, base.MMax, c.TMax, line.tmax, base.TMax, c.TSum, st.Params)
			if c.TMax > line.tmax {
				t.Errorf("k=%d: T_max %d above the reference's %d", line.k, c.TMax, line.tmax)
			}
			if float64(c.MMax) > base.MMax {
				t.Errorf("k=%d: M_max %d worse than random's %.0f", line.k, c.MMax, base.MMax)
			}
			if c.MaxSamples > int64((g.NumSamples()+line.k-1)/line.k) {
				t.Errorf("k=%d: max|U_i| %d above ⌈n/k⌉", line.k, c.MaxSamples)
			}
		})
	}
}

// TestParsaIncrementalReal places the first 80% of a9a, then the rest
// incrementally, and checks the result is balanced and about as good as a
// run from scratch.
func TestParsaIncrementalReal(t *testing.T) {
	if testing.Short() {
		t.Skip("real datasets: skipped in -short")
	}
	g := a9a.load(t)
	k, n0 := 16, g.NumSamples()*4/5
	rows := make([][]uint32, n0)
	for u := range rows {
		rows[u] = g.Params(u)
	}
	old, err := graph.FromAdjacency(g.NumParams(), rows)
	if err != nil {
		t.Fatal(err)
	}
	p0, err := Parsa(old, Options{K: k, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	p, st, err := RunParsa(g, Options{K: k, Seed: 1, Parsa: ParsaOptions{InitFrom: func(int, int) ([]int32, error) { return p0.Data, nil }}})
	if err != nil {
		t.Fatal(err)
	}
	full, _ := Parsa(g, Options{K: k, Seed: 1})
	c, _ := placement.Evaluate(g, p, 0)
	cf, _ := placement.Evaluate(g, full, 0)
	t.Logf("incremental: placed %d, T_max %d, M_max %d; from scratch T_max %d, M_max %d", st.Placed, c.TMax, c.MMax, cf.TMax, cf.MMax)
	if c.MaxSamples > int64((g.NumSamples()+k-1)/k) || float64(c.TMax) > 1.1*float64(cf.TMax) {
		t.Errorf("incremental: max|U_i| %d, T_max %d against %d from scratch", c.MaxSamples, c.TMax, cf.TMax)
	}
}
