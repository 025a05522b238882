package dataset

import (
	"fmt"
	"strconv"

	"colo/graph"
	"colo/internal/membudget"
)

// FromGraph returns the samples of g as a dense dataset: feature j of a
// sample is the value of its edge to the parameter whose id is j (1 for
// an edge without a value, 0 for none), Dim is the largest id plus one,
// and the classes are g's distinct labels in increasing order. It is how
// a table read through feature columns (package features) is sharded: a
// one-hot row of its fields. More than DefaultMaxValues values, or more
// bytes than the memory budget (package membudget) allows, is an error
// that names g's source and the figures.
func FromGraph(g *graph.Graph, memory int64) (*Dataset, error) {
	name, n := g.Meta().Source, g.NumSamples()
	if g.NumParams() == 0 {
		return nil, fmt.Errorf("%s: no features in %d samples", name, n)
	}
	if g.Labels() == nil {
		return nil, fmt.Errorf("%s: no labels: a dense dataset needs a class per sample", name)
	}
	dim := g.ParamID(g.NumParams()-1) + 1
	if dim > DefaultMaxValues || int64(n)*int64(dim) > DefaultMaxValues {
		return nil, fmt.Errorf("%s: %d samples × %d features, more than the dense limit of %d values", name, n, dim, int64(DefaultMaxValues))
	}
	limit := membudget.Resolve(memory)
	if err := membudget.Check(limit, name, 0, fmt.Sprintf("%d samples × %d features as float32", n, dim), 4*int64(n)*int64(dim)); err != nil {
		return nil, err
	}
	d, base := int(dim), uint64(0)
	features, labels := make([]float32, n*d), make([]int, n)
	classes := newClassMap()
	for u := range n {
		denseRow(g, u, base, features[u*d:(u+1)*d])
		labels[u] = classes.add(strconv.FormatFloat(g.Label(u), 'g', -1, 64))
	}
	k, names := classes.finish(labels)
	return &Dataset{Features: features, Labels: labels, Dim: d, Classes: k, ClassNames: names, Source: name}, nil
}

// denseRow writes sample u of g into row, feature j for parameter id
// j+base.
func denseRow(g *graph.Graph, u int, base uint64, row []float32) {
	vals := g.Values(u)
	for k, v := range g.Params(u) {
		x := float32(1)
		if vals != nil {
			x = vals[k]
		}
		row[g.ParamID(int(v))-base] = x
	}
}
