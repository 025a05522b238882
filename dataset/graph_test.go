package dataset

import (
	"reflect"
	"testing"

	"colo/graph"
	"colo/internal/membudget"
)

func TestFromGraph(t *testing.T) {
	b := graph.NewBuilder(graph.Meta{Format: "table", Source: "t.parquet"})
	b.SetHasLabels()
	for _, s := range []struct {
		label float64
		ids   []uint64
		vals  []float32
	}{
		{1, []uint64{0, 3}, nil},
		{0, []uint64{1, 2}, []float32{0.5, -2}},
		{1, []uint64{3}, nil},
	} {
		if err := b.AddSample(s.label, s.ids, s.vals); err != nil {
			t.Fatal(err)
		}
	}
	g, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	d, err := FromGraph(g, membudget.Off)
	if err != nil {
		t.Fatal(err)
	}
	want := []float32{1, 0, 0, 1, 0, 0.5, -2, 0, 0, 0, 0, 1}
	if d.Dim != 4 || !reflect.DeepEqual(d.Features, want) || !reflect.DeepEqual(d.Labels, []int{1, 0, 1}) || d.Classes != 2 {
		t.Fatalf("dim %d features %v labels %v classes %d", d.Dim, d.Features, d.Labels, d.Classes)
	}
	if _, err := FromGraph(g, 16); !membudget.Is(err) {
		t.Fatalf("48 bytes within a 16-byte budget: %v", err)
	}
}
