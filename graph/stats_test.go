package graph

import (
	"strings"
	"testing"
)

// TestStatsWriteTable: the degrees of both sides, then the histogram by
// powers of two, bucket 0 for degree 0, counts with thousands separators.
func TestStatsWriteTable(t *testing.T) {
	st := Stats{
		SampleDeg: DegreeStats{Min: 1, Mean: 2.5, Max: 4, Histogram: []int64{0, 1200, 3}},
		ParamDeg:  DegreeStats{Min: 0, Mean: 1, Max: 2, Histogram: []int64{2, 5}},
	}
	var b strings.Builder
	if err := st.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range strings.Split(strings.TrimSpace(b.String()), "\n") {
		got = append(got, strings.Join(strings.Fields(l), " "))
	}
	want := []string{"degree min mean max", "samples 1 2.50 4", "parameters 0 1.00 2", "", "degree histogram",
		"degree samples parameters", "0 0 2", "1 1,200 5", "2-3 3 0"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("table\n%s\nwant lines %q", b.String(), want)
	}
}
