package graph

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
)

// equalGraphs reports how a and b differ, comparing every array and the
// metadata; floats are compared bit for bit.
func equalGraphs(a, b *Graph) error {
	switch {
	case !slices.Equal(a.sampleOff, b.sampleOff):
		return fmt.Errorf("sample offsets differ")
	case !slices.Equal(a.sampleAdj, b.sampleAdj):
		return fmt.Errorf("sample adjacency differs")
	case !slices.Equal(a.paramOff, b.paramOff):
		return fmt.Errorf("parameter offsets differ")
	case !slices.Equal(a.paramAdj, b.paramAdj):
		return fmt.Errorf("parameter adjacency differs")
	case !slices.Equal(a.paramIDs, b.paramIDs):
		return fmt.Errorf("parameter ids differ")
	case !slices.Equal(a.sampleIDs, b.sampleIDs) || (a.sampleIDs == nil) != (b.sampleIDs == nil):
		return fmt.Errorf("sample ids differ")
	case (a.values == nil) != (b.values == nil) || (a.labels == nil) != (b.labels == nil):
		return fmt.Errorf("values or labels present in one graph only")
	case a.meta != b.meta:
		return fmt.Errorf("meta %+v != %+v", a.meta, b.meta)
	}
	if len(a.values) != len(b.values) || len(a.labels) != len(b.labels) {
		return fmt.Errorf("%d/%d values, %d/%d labels", len(a.values), len(b.values), len(a.labels), len(b.labels))
	}
	for i := range a.values {
		if math.Float32bits(a.values[i]) != math.Float32bits(b.values[i]) {
			return fmt.Errorf("value %d: %v != %v", i, a.values[i], b.values[i])
		}
	}
	for i := range a.labels {
		if math.Float64bits(a.labels[i]) != math.Float64bits(b.labels[i]) {
			return fmt.Errorf("label %d: %v != %v", i, a.labels[i], b.labels[i])
		}
	}
	return nil
}

// validGraph is a small graph with values, labels and sample ids, built by
// hand: samples 0 {0, 2}, 1 {}, 2 {1, 2}.
func validGraph() *Graph {
	return &Graph{
		sampleOff: []int64{0, 2, 2, 4},
		sampleAdj: []uint32{0, 2, 1, 2},
		paramOff:  []int64{0, 1, 2, 4},
		paramAdj:  []uint32{0, 2, 0, 2},
		values:    []float32{1, 2, 3, 4},
		labels:    []float64{1, 0, -1},
		paramIDs:  []uint64{5, 7, 9},
		sampleIDs: []uint64{10, 11, 12},
	}
}

func TestValidate(t *testing.T) {
	if err := validGraph().Validate(); err != nil {
		t.Fatalf("valid graph: %v", err)
	}
	tests := []struct {
		name   string
		break_ func(g *Graph)
		want   string
	}{
		{"offset not from 0", func(g *Graph) { g.sampleOff[0] = 1 }, "start at 1"},
		{"offsets decrease", func(g *Graph) { g.sampleOff[1] = 3; g.sampleOff[2] = 2 }, "decrease"},
		{"offsets end early", func(g *Graph) { g.paramOff[3] = 3 }, "end at 3"},
		{"parameter out of range", func(g *Graph) { g.sampleAdj[1] = 3 }, "out of range"},
		{"sample out of range", func(g *Graph) { g.paramAdj[0] = 3 }, "out of range"},
		{"row not increasing", func(g *Graph) { g.sampleAdj[2] = 2 }, "not increasing"},
		{"column not increasing", func(g *Graph) { g.paramAdj[2], g.paramAdj[3] = 2, 0 }, "not increasing"},
		{"not the transpose", func(g *Graph) { g.paramAdj[1] = 1 }, "missing from the parameter side"},
		{"values length", func(g *Graph) { g.values = g.values[:3] }, "3 values for 4 edges"},
		{"value NaN", func(g *Graph) { g.values[2] = float32(math.NaN()) }, "not finite"},
		{"labels length", func(g *Graph) { g.labels = g.labels[:2] }, "2 labels for 3 samples"},
		{"label infinite", func(g *Graph) { g.labels[0] = math.Inf(1) }, "not finite"},
		{"parameter ids length", func(g *Graph) { g.paramIDs = g.paramIDs[:2] }, "2 parameter ids"},
		{"parameter ids order", func(g *Graph) { g.paramIDs[1] = 5 }, "not increasing"},
		{"sample ids length", func(g *Graph) { g.sampleIDs = g.sampleIDs[:1] }, "1 sample ids"},
		{"edge counts", func(g *Graph) { g.paramOff = []int64{0, 1, 2, 3}; g.paramAdj = g.paramAdj[:3] }, "edges"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := validGraph()
			tt.break_(g)
			err := g.Validate()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Validate() = %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

func TestValidateBuilt(t *testing.T) {
	g, err := FromAdjacency(5, [][]uint32{{3, 1}, {}, {0, 1, 4}})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Validate(); err != nil {
		t.Fatal(err)
	}
}
