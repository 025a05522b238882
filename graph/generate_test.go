package graph

import (
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestSparseDensity(t *testing.T) {
	for _, name := range SparsePresetNames() {
		c, ok := SparsePreset(name, 1)
		if !ok {
			t.Fatalf("preset %s missing", name)
		}
		g, err := Sparse(c)
		if err != nil {
			t.Fatal(err)
		}
		if err := g.Validate(); err != nil {
			t.Fatal(err)
		}
		want := float64(c.Samples) * float64(c.Params) * (1 - c.Gamma)
		sd := math.Sqrt(want * c.Gamma)
		if got := float64(g.NumEdges()); math.Abs(got-want) > 5*sd {
			t.Errorf("%s: %v edges, want %v ± %v", name, got, want, 5*sd)
		}
		// Nonzeros must be spread over all columns, not bunched at the start.
		var firstHalf int64
		for v := 0; v < c.Params/2; v++ {
			firstHalf += int64(g.ParamDegree(v))
		}
		if frac := float64(firstHalf) / float64(g.NumEdges()); math.Abs(frac-0.5) > 0.02 {
			t.Errorf("%s: %.3f of the edges in the first half of the columns", name, frac)
		}
	}
	if _, ok := SparsePreset("nope", 1); ok {
		t.Fatal("unknown preset found")
	}
}

func TestGeneratorsDeterministic(t *testing.T) {
	a, _ := PowerLaw(DefaultPowerLaw(2000, 9))
	b, _ := PowerLaw(DefaultPowerLaw(2000, 9))
	c, _ := PowerLaw(DefaultPowerLaw(2000, 10))
	if !reflect.DeepEqual(a, b) {
		t.Fatal("same seed, different graphs")
	}
	if reflect.DeepEqual(a.SampleAdjacency(), c.SampleAdjacency()) {
		t.Fatal("different seeds, same graph")
	}
}

func TestPowerLawShape(t *testing.T) {
	g, err := PowerLaw(DefaultPowerLaw(50000, 1))
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Validate(); err != nil {
		t.Fatal(err)
	}
	st := ComputeStats(g)
	if st.SampleDeg.Min < 1 || math.Abs(st.SampleDeg.Mean-30) > 3 {
		t.Errorf("sample degrees %+v: want mean ≈ 30, min ≥ 1", st.SampleDeg)
	}
	// Heavy tail: the most popular parameter is in a large share of the
	// samples while the median parameter is rare.
	if st.ParamDeg.Max < g.NumSamples()/20 {
		t.Errorf("max parameter degree %d: no heavy head", st.ParamDeg.Max)
	}
	degs := make([]int, g.NumParams())
	for v := range degs {
		degs[v] = g.ParamDegree(v)
	}
	slices.Sort(degs)
	if median := float64(degs[len(degs)/2]); median > st.ParamDeg.Mean/5 {
		t.Errorf("median parameter degree %v, mean %.1f: no long tail", median, st.ParamDeg.Mean)
	}
	var pos int
	for _, l := range g.Labels() {
		if l == 1 {
			pos++
		} else if l != -1 {
			t.Fatalf("label %v", l)
		}
	}
	if pos == 0 || pos == g.NumSamples() {
		t.Fatal("labels all of one class")
	}
}

func TestGeneratorConfigErrors(t *testing.T) {
	for _, c := range []SparseConfig{{0, 5, 0.5, 1}, {5, 0, 0.5, 1}, {5, 5, 1, 1}, {5, 5, -0.1, 1}, {5, 5, math.NaN(), 1}} {
		if _, err := Sparse(c); err == nil {
			t.Errorf("%+v accepted", c)
		}
	}
	for _, c := range []PowerLawConfig{{0, 5, 2, 1.5, 1}, {5, 5, 0.5, 1.5, 1}, {5, 5, 6, 1.5, 1}, {5, 5, 2, 1, 1}} {
		if _, err := PowerLaw(c); err == nil {
			t.Errorf("%+v accepted", c)
		}
	}
}

func TestComputeStats(t *testing.T) {
	g, _ := FromAdjacency(4, [][]uint32{{0, 1, 2}, {}, {0}})
	st := ComputeStats(g)
	want := Stats{
		Samples: 3, Parameters: 4, Edges: 4,
		SampleDeg:   DegreeStats{Min: 0, Mean: 4.0 / 3, Max: 3, Histogram: []int64{1, 1, 1}},
		ParamDeg:    DegreeStats{Min: 0, Mean: 1, Max: 2, Histogram: []int64{1, 2, 1}},
		MemoryBytes: g.Bytes(),
	}
	if !reflect.DeepEqual(st, want) {
		t.Fatalf("got %+v\nwant %+v", st, want)
	}
}

// TestGenerateBeyondMemory: a generated graph whose edges would not fit
// in memory is refused before anything is allocated, saying what asked
// for it; before, n = m = 100000 at gamma 0 asked for a 42 GB array and
// the process died of out of memory.
func TestGenerateBeyondMemory(t *testing.T) {
	if _, err := Sparse(SparseConfig{Samples: 1 << 31, Params: 1 << 31, Gamma: 0, Seed: 1}); err == nil ||
		!strings.HasPrefix(err.Error(), "samples = 2147483648, params = 2147483648, gamma = 0: about 4.612e+18 edges need ") {
		t.Errorf("Sparse: %v", err)
	}
	if _, err := PowerLaw(PowerLawConfig{Samples: 1 << 40, Params: 1 << 20, AvgDegree: 1 << 20, Alpha: 1.2, Seed: 1}); err == nil ||
		!strings.HasPrefix(err.Error(), "samples = 1099511627776, avg degree = 1.048576e+06: about 1.153e+18 edges need ") {
		t.Errorf("PowerLaw: %v", err)
	}
	for _, c := range []struct {
		edges  float64
		budget int64
		ok     bool
	}{
		{1000, 1 << 20, true},
		{1e6, 1 << 20, false},
		{1e6, 1 << 30, true},
	} {
		if err := genFits(c.edges, 10, 10, "c", c.budget); (err == nil) != c.ok {
			t.Errorf("genFits(%g edges, budget %d): %v", c.edges, c.budget, err)
		}
	}
	if err := genFits(1e6, 10, 10, "c", 1<<20); err == nil || err.Error() != "c: about 1e+06 edges need 15.3 MiB of memory, more than the 1.0 MiB this machine has to give (three quarters of the memory available): want fewer samples or edges" {
		t.Errorf("genFits: %v", err)
	}
}
