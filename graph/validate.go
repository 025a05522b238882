package graph

import (
	"fmt"
	"math"
)

// Validate checks that g is internally consistent: both offset arrays start
// at 0, never decrease and end at the length of their adjacency; every
// adjacency id is in range and ids increase strictly within each row and
// column; the parameter side is exactly the transpose of the sample side;
// values, labels, parameter ids and sample ids have the right lengths;
// parameter ids increase strictly (ParamIndex searches them); values and
// labels are finite. It takes O(|U| + |V| + |E|) time and O(|V|) memory and
// reports the first fault found.
func (g *Graph) Validate() error {
	if len(g.sampleOff) == 0 || len(g.paramOff) == 0 {
		return fmt.Errorf("graph: missing offsets")
	}
	n, m := len(g.sampleOff)-1, len(g.paramOff)-1
	if int64(n) > math.MaxUint32 || int64(m) > math.MaxUint32 {
		return fmt.Errorf("graph: %d samples, %d parameters exceed 32-bit ids", n, m)
	}
	if err := checkCSR("sample", g.sampleOff, g.sampleAdj, m); err != nil {
		return err
	}
	if err := checkCSR("parameter", g.paramOff, g.paramAdj, n); err != nil {
		return err
	}
	if len(g.sampleAdj) != len(g.paramAdj) {
		return fmt.Errorf("graph: %d edges on the sample side, %d on the parameter side", len(g.sampleAdj), len(g.paramAdj))
	}
	// Rows are visited in increasing u and columns list samples in
	// increasing order, so column v must list exactly the u that have v,
	// in the order they are visited.
	next := make([]int64, m)
	copy(next, g.paramOff[:m])
	for u := range n {
		for _, v := range g.Params(u) {
			if next[v] == g.paramOff[v+1] || g.paramAdj[next[v]] != uint32(u) {
				return fmt.Errorf("graph: edge (sample %d, parameter %d) missing from the parameter side", u, v)
			}
			next[v]++
		}
	}
	for v := range m {
		if next[v] != g.paramOff[v+1] {
			return fmt.Errorf("graph: parameter %d lists sample %d, which does not list it", v, g.paramAdj[next[v]])
		}
	}
	if g.values != nil && len(g.values) != len(g.sampleAdj) {
		return fmt.Errorf("graph: %d values for %d edges", len(g.values), len(g.sampleAdj))
	}
	for i, x := range g.values {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return fmt.Errorf("graph: edge %d: value %v is not finite", i, x)
		}
	}
	if g.labels != nil && len(g.labels) != n {
		return fmt.Errorf("graph: %d labels for %d samples", len(g.labels), n)
	}
	for u, x := range g.labels {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return fmt.Errorf("graph: sample %d: label %v is not finite", u, x)
		}
	}
	if len(g.paramIDs) != m {
		return fmt.Errorf("graph: %d parameter ids for %d parameters", len(g.paramIDs), m)
	}
	for v := 1; v < m; v++ {
		if g.paramIDs[v] <= g.paramIDs[v-1] {
			return fmt.Errorf("graph: parameter ids not increasing at %d: %d after %d", v, g.paramIDs[v], g.paramIDs[v-1])
		}
	}
	if g.sampleIDs != nil && len(g.sampleIDs) != n {
		return fmt.Errorf("graph: %d sample ids for %d samples", len(g.sampleIDs), n)
	}
	return nil
}

// checkCSR checks one side of the graph: offsets from 0, non-decreasing, up
// to len(adj); ids below limit and strictly increasing within each list.
func checkCSR(side string, off []int64, adj []uint32, limit int) error {
	if off[0] != 0 {
		return fmt.Errorf("graph: %s offsets start at %d, not 0", side, off[0])
	}
	for i := 1; i < len(off); i++ {
		if off[i] < off[i-1] {
			return fmt.Errorf("graph: %s offsets decrease at %d: %d after %d", side, i, off[i], off[i-1])
		}
	}
	if last := off[len(off)-1]; last != int64(len(adj)) {
		return fmt.Errorf("graph: %s offsets end at %d, adjacency has %d entries", side, last, len(adj))
	}
	for i := 0; i+1 < len(off); i++ {
		list := adj[off[i]:off[i+1]]
		for j, x := range list {
			if int64(x) >= int64(limit) {
				return fmt.Errorf("graph: %s %d: id %d out of range [0,%d)", side, i, x, limit)
			}
			if j > 0 && x <= list[j-1] {
				return fmt.Errorf("graph: %s %d: ids not increasing: %d after %d", side, i, x, list[j-1])
			}
		}
	}
	return nil
}
