package graph

import "math/bits"

// DegreeStats summarises the degrees of one side of the graph.
type DegreeStats struct {
	Min  int     `json:"min"`
	Mean float64 `json:"mean"`
	Max  int     `json:"max"`
	// Histogram counts vertices by degree in powers of two: bucket 0 holds
	// degree 0, bucket b ≥ 1 degrees in [2^(b-1), 2^b).
	Histogram []int64 `json:"histogram"`
}

// Stats summarises a graph: its size and the degree distribution of both
// sides.
type Stats struct {
	Samples     int         `json:"samples"`
	Parameters  int         `json:"parameters"`
	Edges       int64       `json:"edges"`
	SampleDeg   DegreeStats `json:"sample_degree"`
	ParamDeg    DegreeStats `json:"parameter_degree"`
	HasValues   bool        `json:"has_values"`
	MemoryBytes int64       `json:"memory_bytes"`
}

// ComputeStats returns the statistics of g in O(|U| + |V|) time.
func ComputeStats(g *Graph) Stats {
	return Stats{
		Samples:     g.NumSamples(),
		Parameters:  g.NumParams(),
		Edges:       g.NumEdges(),
		SampleDeg:   degreeStats(g.sampleOff),
		ParamDeg:    degreeStats(g.paramOff),
		HasValues:   g.HasValues(),
		MemoryBytes: g.Bytes(),
	}
}

// HistogramBucket returns the histogram bucket of degree d.
func HistogramBucket(d int) int { return bits.Len(uint(d)) }

func degreeStats(off []int64) DegreeStats {
	n := len(off) - 1
	s := DegreeStats{}
	if n == 0 {
		return s
	}
	s.Min = int(off[1] - off[0])
	for i := 0; i < n; i++ {
		d := int(off[i+1] - off[i])
		s.Min = min(s.Min, d)
		s.Max = max(s.Max, d)
		b := HistogramBucket(d)
		for len(s.Histogram) <= b {
			s.Histogram = append(s.Histogram, 0)
		}
		s.Histogram[b]++
	}
	s.Mean = float64(off[n]) / float64(n)
	return s
}
