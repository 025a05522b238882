package graph

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// ratingsView is a graph read from a ratings file: the row ids of the
// samples, the column ids of each and their values (nil when the graph
// keeps none).
type ratingsView struct {
	rows []uint64
	cols [][]uint64
	vals [][]float32
}

func ratingsViewOf(g *Graph) ratingsView {
	v := viewOf(g)
	var s ratingsView
	for u := range g.NumSamples() {
		s.rows = append(s.rows, g.SampleID(u))
	}
	s.cols, s.vals = v.rows, v.vals
	return s
}

func TestReadRatings(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want ratingsView
	}{
		{
			name: "movielens",
			in:   "196\t242\t3\t881250949\n186\t302\t3\t891717742\n22\t377\t1\t878887116\n196\t51\t2\t880606923\n",
			want: ratingsView{
				rows: []uint64{22, 186, 196},
				cols: [][]uint64{{377}, {302}, {51, 242}},
				vals: [][]float32{{1}, {3}, {2, 3}},
			},
		},
		{
			name: "comments, spaces, CRLF, blank lines, three fields",
			in:   "# user item rating\r\n\r\n  5  7 -0.5  \r\n% c\n5 2 1e1\n0 7 0.25 x y\n",
			want: ratingsView{
				rows: []uint64{0, 5},
				cols: [][]uint64{{7}, {2, 7}},
				vals: [][]float32{{0.25}, {10, -0.5}},
			},
		},
		{
			name: "all ones keep no values",
			in:   "2 1 1\n1 2 1.0\n",
			want: ratingsView{rows: []uint64{1, 2}, cols: [][]uint64{{2}, {1}}},
		},
		{
			name: "zero values are entries",
			in:   "1 1 0\n",
			want: ratingsView{rows: []uint64{1}, cols: [][]uint64{{1}}, vals: [][]float32{{0}}},
		},
		{
			name: "ids beyond 32 bits",
			in:   "18446744073709551615 4294967296 4\n3 18446744073709551615 5\n",
			want: ratingsView{
				rows: []uint64{3, 1<<64 - 1},
				cols: [][]uint64{{1<<64 - 1}, {1 << 32}},
				vals: [][]float32{{5}, {4}},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, err := ReadRatings(strings.NewReader(tt.in), "r.data")
			if err != nil {
				t.Fatal(err)
			}
			if err := g.Validate(); err != nil {
				t.Fatal(err)
			}
			if got := ratingsViewOf(g); fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
			if m := g.Meta(); m.Format != "ratings" || m.Source != "r.data" || g.Labels() != nil {
				t.Errorf("meta %+v, labels %v", m, g.Labels())
			}
		})
	}
}

func TestReadRatingsErrors(t *testing.T) {
	tests := []struct {
		name  string
		in    string
		line  int
		field int
		want  string
	}{
		{"two fields", "# c\n1 2 3\n1 2\n", 3, 0, `"1 2": want "row col value", got 2 fields`},
		{"negative row", "-1 2 3\n", 1, 1, `"-1": want a non-negative integer row id`},
		{"word column", "1 b 3\n", 1, 2, `"b": want a non-negative integer column id`},
		{"row too large", "18446744073709551616 1 1\n", 1, 1, "want a non-negative integer row id"},
		{"word value", "1 2 x\n", 1, 3, `"x": want a finite number value`},
		{"nan value", "1 2 NaN\n", 1, 3, `"NaN": want a finite number value`},
		{"value beyond float32", "1 2 1e39\n", 1, 3, `"1e39": want a finite number value that fits a float32`},
		{"duplicate", "1 2 3\n4 5 1\n1 2 4\n", 3, 0, "entry (1, 2) repeats line 1"},
		{"earliest duplicate", "9 9 1\n1 1 1\n1 1 2\n9 9 2\n1 1 3\n", 3, 0, "entry (1, 1) repeats line 2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ReadRatings(strings.NewReader(tt.in), "r.data")
			checkParseError(t, err, "r.data", tt.line, tt.field, tt.want)
		})
	}
}

func TestReadRatingsEmpty(t *testing.T) {
	for _, in := range []string{"", "# user item rating\n", "\n\n"} {
		_, err := ReadRatings(strings.NewReader(in), "e.data")
		if err == nil || err.Error() != "e.data: empty: no samples" {
			t.Errorf("%q: err = %v", in, err)
		}
	}
}

// TestReadRatingsReference compares random ratings files against a
// map-based reading.
func TestReadRatingsReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for trial := range 30 {
		span := uint64(1 + rng.IntN(300))
		if trial%5 == 4 {
			span = 1 << 40
		}
		var b strings.Builder
		want := map[uint64]map[uint64]float32{}
		for range 1 + rng.IntN(2000) {
			u, v := rng.Uint64N(span), rng.Uint64N(span)
			if want[u][v] != 0 {
				continue
			}
			x := float32(1 + rng.IntN(5))
			fmt.Fprintf(&b, "%d\t%d\t%v\t%d\n", u, v, x, rng.IntN(1e9))
			if want[u] == nil {
				want[u] = map[uint64]float32{}
			}
			want[u][v] = x
		}
		g, err := Read(strings.NewReader(b.String()), "r.data", LoadOptions{Format: FormatRatings, HashBits: DefaultHashBits})
		if err != nil {
			t.Fatal(err)
		}
		if err := g.Validate(); err != nil {
			t.Fatal(err)
		}
		var w ratingsView
		for u := range want {
			w.rows = append(w.rows, u)
		}
		slices.Sort(w.rows)
		for _, u := range w.rows {
			var cols []uint64
			for v := range want[u] {
				cols = append(cols, v)
			}
			slices.Sort(cols)
			vals := []float32{}
			for _, v := range cols {
				vals = append(vals, want[u][v])
			}
			w.cols, w.vals = append(w.cols, cols), append(w.vals, vals)
		}
		got := ratingsViewOf(g)
		if !g.HasValues() {
			got.vals = w.vals // every value 1
		}
		if fmt.Sprint(got) != fmt.Sprint(w) {
			t.Fatalf("trial %d: graphs differ", trial)
		}
	}
}

// TestRatingsNotDetected checks that a ratings file is read as ratings
// only when asked: detection takes its lines for libsvm or nothing.
func TestRatingsNotDetected(t *testing.T) {
	if f, err := DetectFormat([]byte("196\t242\t3\t881250949\n")); err == nil && f == FormatRatings {
		t.Errorf("detected %q", f)
	}
	if err := (LoadOptions{Format: FormatRatings, HashBits: 1}).Validate(); err != nil {
		t.Error(err)
	}
}

func TestLoadMovieLens(t *testing.T) {
	p := dataFile(t, "movielens-100k/u.data.xz")
	opt := DefaultLoadOptions()
	opt.Format = FormatRatings
	g, err := Load(p, opt)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Validate(); err != nil {
		t.Fatal(err)
	}
	// The counts of the dataset's README.
	if g.NumSamples() != 943 || g.NumParams() != 1682 || g.NumEdges() != 100000 {
		t.Errorf("got %v, want 943 samples, 1682 parameters, 100000 edges", g)
	}
	if g.SampleID(0) != 1 || g.SampleID(942) != 943 || g.ParamID(0) != 1 || g.ParamID(1681) != 1682 {
		t.Errorf("ids: samples %d..%d, parameters %d..%d", g.SampleID(0), g.SampleID(942), g.ParamID(0), g.ParamID(1681))
	}
	count := [6]int{}
	minDeg := g.NumEdges()
	for u := range g.NumSamples() {
		for _, x := range g.Values(u) {
			count[int(x)]++
		}
		minDeg = min(minDeg, int64(g.SampleDegree(u)))
	}
	if count != [6]int{0, 6110, 11370, 27145, 34174, 21201} || minDeg != 20 {
		t.Errorf("ratings 0..5: %v, fewest ratings of a user %d", count, minDeg)
	}
}
