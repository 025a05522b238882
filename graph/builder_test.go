package graph

import (
	"errors"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
)

// adjacencyOf returns the sample lists of g as plain slices, by parameter
// id in the input.
func adjacencyOf(g *Graph) [][]uint64 {
	rows := make([][]uint64, g.NumSamples())
	for u := range rows {
		rows[u] = []uint64{}
		for _, v := range g.Params(u) {
			rows[u] = append(rows[u], g.ParamID(int(v)))
		}
	}
	return rows
}

func TestBuilderBasics(t *testing.T) {
	b := NewBuilder(Meta{Format: "test"})
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(b.AddSample(1, []uint64{10, 3, 7}, []float32{1, 2, 3}))
	must(b.AddSample(-1, nil, nil))
	must(b.AddSample(2, []uint64{3, 1 << 40}, nil))
	err := b.AddSample(0, []uint64{5, 5}, nil)
	var dup *DuplicateError
	if !errors.As(err, &dup) || dup.ID != 5 {
		t.Fatalf("duplicate: err = %v", err)
	}
	g, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Validate(); err != nil {
		t.Fatal(err)
	}
	if g.NumSamples() != 3 || g.NumParams() != 4 || g.NumEdges() != 5 {
		t.Fatalf("%v", g)
	}
	if want := [][]uint64{{3, 7, 10}, {}, {3, 1 << 40}}; !reflect.DeepEqual(adjacencyOf(g), want) {
		t.Fatalf("rows %v, want %v", adjacencyOf(g), want)
	}
	if !reflect.DeepEqual(g.Values(0), []float32{2, 3, 1}) || !reflect.DeepEqual(g.Values(2), []float32{1, 1}) {
		t.Fatalf("values %v %v", g.Values(0), g.Values(2))
	}
	if !reflect.DeepEqual(g.Labels(), []float64{1, -1, 2}) {
		t.Fatalf("labels %v", g.Labels())
	}
	if v, ok := g.ParamIndex(1 << 40); !ok || v != 3 {
		t.Fatalf("ParamIndex(2^40) = %d, %v", v, ok)
	}
	if _, ok := g.ParamIndex(4); ok {
		t.Fatal("ParamIndex(4) found a parameter that does not occur")
	}
	if got := slices.Collect(slices.Values(g.Samples(0))); !reflect.DeepEqual(got, []uint32{0, 2}) {
		t.Fatalf("samples of parameter 3: %v", got)
	}
}

func TestBuilderDupPolicies(t *testing.T) {
	for _, tc := range []struct {
		policy DupPolicy
		vals   []float32
		want   []float32
	}{
		{DupSum, nil, []float32{2, 1}},
		{DupSum, []float32{0.5, 1, 2}, []float32{2.5, 1}},
		{DupKeep, []float32{0.5, 1, 2}, []float32{0.5, 1}},
	} {
		b := NewBuilder(Meta{})
		b.SetDupPolicy(tc.policy)
		if err := b.AddSample(0, []uint64{4, 9, 4}, tc.vals); err != nil {
			t.Fatal(err)
		}
		g, err := b.Build()
		if err != nil {
			t.Fatal(err)
		}
		if got := g.Values(0); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("policy %d, vals %v: got %v, want %v", tc.policy, tc.vals, got, tc.want)
		}
	}
}

// TestBuilderLargeRandom builds a graph across several storage chunks with
// both id-range strategies and checks it against the input rows.
func TestBuilderLargeRandom(t *testing.T) {
	for _, spread := range []uint64{1000, 1 << 50} {
		rng := rand.New(rand.NewPCG(4, spread))
		b := NewBuilder(Meta{})
		var want [][]uint64
		for len(want) < 30000 {
			row := []uint64{}
			for range rng.IntN(80) {
				id := rng.Uint64N(spread)
				if !slices.Contains(row, id) {
					row = append(row, id)
				}
			}
			if err := b.AddSample(0, row, nil); err != nil {
				t.Fatal(err)
			}
			slices.Sort(row)
			want = append(want, row)
		}
		g, err := b.Build()
		if err != nil {
			t.Fatal(err)
		}
		if err := g.Validate(); err != nil {
			t.Fatal(err)
		}
		if g.NumEdges() <= chunkLen {
			t.Fatalf("only %d edges: the test should span chunks", g.NumEdges())
		}
		if !reflect.DeepEqual(adjacencyOf(g), want) {
			t.Fatalf("spread %d: rows differ", spread)
		}
		if g.HasValues() || g.Labels() != nil {
			t.Fatal("all-one values or zero labels were stored")
		}
	}
}

func TestFromAdjacency(t *testing.T) {
	g, err := FromAdjacency(5, [][]uint32{{3, 0}, {}, {4}})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Validate(); err != nil {
		t.Fatal(err)
	}
	if g.NumParams() != 5 || g.ParamDegree(1) != 0 || !reflect.DeepEqual(g.Params(0), []uint32{0, 3}) {
		t.Fatalf("%v: params of 0 = %v", g, g.Params(0))
	}
	if _, err := FromAdjacency(2, [][]uint32{{2}}); err == nil {
		t.Fatal("out-of-range parameter accepted")
	}
	if _, err := FromAdjacency(3, [][]uint32{{1, 1}}); err == nil {
		t.Fatal("duplicate parameter accepted")
	}
}

// TestTransposeOnWorkers: the transpose on any number of goroutines is the
// one on a single goroutine, lists in sample order, with empty samples,
// unused parameters and more goroutines than samples.
func TestTransposeOnWorkers(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 3))
	for trial := range 40 {
		n, m := 1+rng.IntN(60), 1+rng.IntN(40)
		off := []int64{0}
		var adj []uint32
		for range n {
			if rng.IntN(4) > 0 {
				for v := range m {
					if rng.IntN(3) == 0 {
						adj = append(adj, uint32(v))
					}
				}
			}
			off = append(off, int64(len(adj)))
		}
		wantOff, wantAdj := transposeOn(off, adj, m, 1)
		for v := range m {
			if !slices.IsSorted(wantAdj[wantOff[v]:wantOff[v+1]]) {
				t.Fatalf("trial %d: parameter %d's list is not in sample order", trial, v)
			}
		}
		for _, w := range []int{2, 3, 7, 100} {
			gotOff, gotAdj := transposeOn(off, adj, m, w)
			if !slices.Equal(gotOff, wantOff) || !slices.Equal(gotAdj, wantAdj) {
				t.Fatalf("trial %d, %d goroutines: the transpose differs", trial, w)
			}
		}
	}
}

// TestBuilderValuesAcrossChunks adds rows without values, with all-one
// values and with other values, sorted or not, across several storage
// chunks, and checks every row's parameters and values against what was
// added (1 where none was given), and that a graph whose values are all 1
// keeps none.
func TestBuilderValuesAcrossChunks(t *testing.T) {
	for trial := range 20 {
		rng := rand.New(rand.NewPCG(9, uint64(trial)))
		b := NewBuilder(Meta{})
		if trial%2 == 1 {
			b.first = 1 + rng.IntN(50)
		}
		onlyOnes := trial%5 == 4
		var wantIDs [][]uint64
		var wantVals [][]float32
		for len(wantIDs) < 400 {
			perm := rng.Perm(200)[:rng.IntN(60)]
			row := make([]uint64, len(perm))
			for i, x := range perm {
				row[i] = uint64(x)
			}
			if rng.IntN(2) == 0 {
				slices.Sort(row)
			}
			var vals []float32
			switch kind := rng.IntN(3); {
			case kind == 1 || (kind == 2 && onlyOnes):
				vals = make([]float32, len(row))
				for i := range vals {
					vals[i] = 1
				}
			case kind == 2:
				vals = make([]float32, len(row))
				for i := range vals {
					vals[i] = float32(rng.IntN(3))
				}
			}
			if err := b.AddSample(0, row, vals); err != nil {
				t.Fatal(err)
			}
			idx := make([]int, len(row))
			for i := range idx {
				idx[i] = i
			}
			slices.SortFunc(idx, func(x, y int) int { return int(row[x]) - int(row[y]) })
			ids, vs := make([]uint64, len(row)), make([]float32, len(row))
			for i, j := range idx {
				ids[i], vs[i] = row[j], 1
				if vals != nil {
					vs[i] = vals[j]
				}
			}
			wantIDs, wantVals = append(wantIDs, ids), append(wantVals, vs)
		}
		if len(b.ids) < 3 {
			t.Fatalf("trial %d: %d storage chunks: the test should span several", trial, len(b.ids))
		}
		g, err := b.Build()
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(adjacencyOf(g), wantIDs) {
			t.Fatalf("trial %d: rows differ", trial)
		}
		if g.HasValues() == onlyOnes {
			t.Fatalf("trial %d: HasValues %v with only ones %v", trial, g.HasValues(), onlyOnes)
		}
		for u, want := range wantVals {
			got := g.Values(u)
			if got == nil {
				got = make([]float32, len(want))
				for i := range got {
					got[i] = 1
				}
			}
			if !slices.Equal(got, want) {
				t.Fatalf("trial %d, sample %d: values %v, want %v", trial, u, got, want)
			}
		}
	}
}
