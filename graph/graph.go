// Package graph holds the bipartite sample–parameter graph that every part
// of colo works on, with its loaders and generators.
//
// A training set is a bipartite graph G(U, V, E) (seed 000 §3.4, seed 001
// §2.2): U are the samples (rows of the data), V the parameters (features,
// or the nodes of a general graph), and there is an edge (u, v) for every
// nonzero x_uv. A worker that trains on u must pull and push exactly the
// parameters N(u).
//
// The graph is stored as compressed sparse rows in both directions with
// dense 32-bit ids: sample → parameters and parameter → samples. That is
// 8 bytes per edge plus offsets; edge values (4 bytes per edge) are kept
// only when some value differs from 1. Samples are numbered 0..n-1 in the
// order of the input and parameters 0..m-1 in increasing order of their id
// in the file; ParamID and SampleID map back.
//
// Loaders (Load, ReadLibSVM, ReadSNAP, ReadCriteo, ReadRatings) detect
// gzip, xz, zstd and bzip2 compression from the content and report every
// error with the file, line and field. Generators (Sparse, PowerLaw) make synthetic graphs
// from a seed.
package graph

import (
	"fmt"
	"slices"
)

// Graph is an immutable bipartite sample–parameter graph in CSR form in
// both directions. Build one with a Builder, a loader or a generator.
type Graph struct {
	sampleOff []int64  // len n+1; N(u) = sampleAdj[sampleOff[u]:sampleOff[u+1]]
	sampleAdj []uint32 // parameter ids, increasing within a row
	paramOff  []int64  // len m+1; N(v) = paramAdj[paramOff[v]:paramOff[v+1]]
	paramAdj  []uint32 // sample ids, increasing within a column
	values    []float32
	labels    []float64
	paramIDs  []uint64 // dense parameter id → id in the file
	sampleIDs []uint64 // dense sample id → id in the file; nil: row number
	meta      Meta
}

// Meta describes where a graph came from.
type Meta struct {
	// Format is the input format ("libsvm", "snap", "criteo", "generated").
	Format string
	// Source names the file or generator.
	Source string
	// IndexBase is 0 or 1 for libsvm input: the smallest feature index the
	// file may use. Parameter ids are kept as in the file either way.
	IndexBase int
}

// NumSamples returns |U|.
func (g *Graph) NumSamples() int { return len(g.sampleOff) - 1 }

// NumParams returns |V|.
func (g *Graph) NumParams() int { return len(g.paramOff) - 1 }

// NumEdges returns |E|.
func (g *Graph) NumEdges() int64 { return int64(len(g.sampleAdj)) }

// Params returns N(u), the parameters of sample u in increasing order. The
// slice aliases the graph and must not be modified.
func (g *Graph) Params(u int) []uint32 { return g.sampleAdj[g.sampleOff[u]:g.sampleOff[u+1]] }

// Samples returns the samples that use parameter v, in increasing order.
// The slice aliases the graph and must not be modified.
func (g *Graph) Samples(v int) []uint32 { return g.paramAdj[g.paramOff[v]:g.paramOff[v+1]] }

// SampleDegree returns |N(u)|.
func (g *Graph) SampleDegree(u int) int { return int(g.sampleOff[u+1] - g.sampleOff[u]) }

// ParamDegree returns the number of samples that use parameter v.
func (g *Graph) ParamDegree(v int) int { return int(g.paramOff[v+1] - g.paramOff[v]) }

// Values returns the values x_uv of sample u, aligned with Params(u), or nil
// when every value of the graph is 1 (binary data, graphs).
func (g *Graph) Values(u int) []float32 {
	if g.values == nil {
		return nil
	}
	return g.values[g.sampleOff[u]:g.sampleOff[u+1]]
}

// HasValues reports whether the graph keeps edge values, that is whether
// some value differs from 1.
func (g *Graph) HasValues() bool { return g.values != nil }

// Label returns the label of sample u (0 when the input has none).
func (g *Graph) Label(u int) float64 {
	if g.labels == nil {
		return 0
	}
	return g.labels[u]
}

// Labels returns all labels, indexed by sample, or nil when the input has
// none. The slice aliases the graph.
func (g *Graph) Labels() []float64 { return g.labels }

// ParamID returns the id of parameter v as written in the input.
func (g *Graph) ParamID(v int) uint64 { return g.paramIDs[v] }

// SampleID returns the id of sample u in the input: the node id for graph
// formats, the row number (from 0) otherwise.
func (g *Graph) SampleID(u int) uint64 {
	if g.sampleIDs == nil {
		return uint64(u)
	}
	return g.sampleIDs[u]
}

// ParamIndex returns the dense id of the parameter written as id in the
// input, and whether it occurs in the graph. It takes O(log m).
func (g *Graph) ParamIndex(id uint64) (int, bool) {
	return slices.BinarySearch(g.paramIDs, id)
}

// Meta returns where the graph came from.
func (g *Graph) Meta() Meta { return g.meta }

// SampleOffsets and SampleAdjacency expose the sample-side CSR arrays for
// hot loops; they alias the graph and must not be modified.
func (g *Graph) SampleOffsets() []int64 { return g.sampleOff }

// SampleAdjacency returns the concatenation of all N(u); see SampleOffsets.
func (g *Graph) SampleAdjacency() []uint32 { return g.sampleAdj }

// ParamOffsets returns the parameter-side CSR offsets; they alias the graph.
func (g *Graph) ParamOffsets() []int64 { return g.paramOff }

// ParamAdjacency returns the concatenation of the sample lists of all
// parameters; see ParamOffsets.
func (g *Graph) ParamAdjacency() []uint32 { return g.paramAdj }

// Bytes returns the memory held by the graph's arrays.
func (g *Graph) Bytes() int64 {
	return int64(8*len(g.sampleOff) + 4*len(g.sampleAdj) + 8*len(g.paramOff) + 4*len(g.paramAdj) +
		4*len(g.values) + 8*len(g.labels) + 8*len(g.paramIDs) + 8*len(g.sampleIDs))
}

// String summarises the graph.
func (g *Graph) String() string {
	return fmt.Sprintf("graph(%d samples, %d parameters, %d edges)", g.NumSamples(), g.NumParams(), g.NumEdges())
}
