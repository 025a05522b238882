package partition

import (
	"colo/graph"
)

// The multilevel hierarchy that Refine, MBP and Bisect coarsen and
// uncoarsen: a level is a weighted bipartite graph of sample clusters and
// parameter groups, the finest being the graph itself. cluster and
// contract (coarsen.go) build the coarser levels; kstate (gain.go) is a
// placement of one level.

// level is one level of the multilevel hierarchy: a weighted bipartite
// graph of sample clusters (vertices) and parameter groups (nets). The
// finest level is the graph itself, all weights 1; a coarser one has a
// vertex per cluster of samples weighing its samples, and a net per group
// of parameters weighing its parameters, whose pins are the clusters that
// hold a sample using one of them.
type level struct {
	n, m int
	vw   []int64 // vertex weight: samples
	nw   []int64 // net weight: parameters
	voff []int64
	vadj []uint32 // vertex → nets
	noff []int64
	nadj []uint32 // net → vertices
	// vmap[u] is the vertex of the next coarser level that u belongs to;
	// nmap likewise for nets (nil: nets are those of the finer level,
	// less the dropped ones, see contract).
	vmap []int32
	nmap []int32
}

// finest returns the level of g itself.
func finest(g *graph.Graph) *level {
	lv := &level{n: g.NumSamples(), m: g.NumParams(),
		voff: g.SampleOffsets(), vadj: g.SampleAdjacency(), noff: g.ParamOffsets(), nadj: g.ParamAdjacency()}
	lv.vw = make([]int64, lv.n)
	for i := range lv.vw {
		lv.vw[i] = 1
	}
	lv.nw = make([]int64, lv.m)
	for i := range lv.nw {
		lv.nw[i] = 1
	}
	return lv
}

func (lv *level) nets(u int) []uint32 { return lv.vadj[lv.voff[u]:lv.voff[u+1]] }
func (lv *level) pins(e int) []uint32 { return lv.nadj[lv.noff[e]:lv.noff[e+1]] }
