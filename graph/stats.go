package graph

import (
	"fmt"
	"io"
	"math/bits"
	"text/tabwriter"

	"colo/internal/textio"
)

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

// WriteTable writes the degrees of both sides (min, mean, max) and their
// histograms as tables, as colo stats prints them.
func (st Stats) WriteTable(out io.Writer) error {
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(w, "degree\tmin\tmean\tmax\t\n")
	fmt.Fprintf(w, "samples\t%d\t%.2f\t%d\t\n", st.SampleDeg.Min, st.SampleDeg.Mean, st.SampleDeg.Max)
	fmt.Fprintf(w, "parameters\t%d\t%.2f\t%d\t\n", st.ParamDeg.Min, st.ParamDeg.Mean, st.ParamDeg.Max)
	w.Flush()
	fmt.Fprintf(out, "\ndegree histogram\n")
	fmt.Fprintf(w, "degree\tsamples\tparameters\t\n")
	for b := 0; b < max(len(st.SampleDeg.Histogram), len(st.ParamDeg.Histogram)); b++ {
		fmt.Fprintf(w, "%s\t%s\t%s\t\n", bucketLabel(b), textio.Commas(histAt(st.SampleDeg.Histogram, b)), textio.Commas(histAt(st.ParamDeg.Histogram, b)))
	}
	return w.Flush()
}

// histAt is bucket i of the histogram h, 0 past its end.
func histAt(h []int64, i int) int64 {
	if i < len(h) {
		return h[i]
	}
	return 0
}

// bucketLabel names histogram bucket b (see DegreeStats).
func bucketLabel(b int) string {
	switch b {
	case 0:
		return "0"
	case 1:
		return "1"
	}
	return fmt.Sprintf("%d-%d", 1<<(b-1), 1<<b-1)
}
