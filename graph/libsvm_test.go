package graph

import (
	"bytes"
	"cmp"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// sampleView is a graph's samples as written in the input: parameter ids
// and values per row, and labels.
type sampleView struct {
	rows   [][]uint64
	vals   [][]float32 // nil when the graph has no values
	labels []float64
}

// viewOf returns the samples of g with their input ids.
func viewOf(g *Graph) sampleView {
	var s sampleView
	for u := range g.NumSamples() {
		row := []uint64{}
		for _, v := range g.Params(u) {
			row = append(row, g.ParamID(int(v)))
		}
		s.rows = append(s.rows, row)
		if g.HasValues() {
			s.vals = append(s.vals, append([]float32{}, g.Values(u)...))
		}
	}
	s.labels = g.Labels()
	return s
}

// equalView compares two views, floats bit for bit.
func equalView(a, b sampleView) bool {
	if len(a.rows) != len(b.rows) || len(a.vals) != len(b.vals) || len(a.labels) != len(b.labels) {
		return false
	}
	for i := range a.rows {
		if !slicesEqual(a.rows[i], b.rows[i]) {
			return false
		}
	}
	for i := range a.vals {
		if len(a.vals[i]) != len(b.vals[i]) {
			return false
		}
		for j := range a.vals[i] {
			if math.Float32bits(a.vals[i][j]) != math.Float32bits(b.vals[i][j]) {
				return false
			}
		}
	}
	for i := range a.labels {
		if math.Float64bits(a.labels[i]) != math.Float64bits(b.labels[i]) {
			return false
		}
	}
	return true
}

func slicesEqual(a, b []uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// libsvmOptions returns the default options with the given index base.
func libsvmOptions(base int) LoadOptions {
	opt := DefaultLoadOptions()
	opt.IndexBase = base
	return opt
}

func TestReadLibSVM(t *testing.T) {
	tests := []struct {
		name     string
		in       string
		base     int
		want     sampleView
		wantBase int
	}{
		{
			name: "basic",
			in:   "1 1:1 3:1\n-1 2:1\n",
			base: -1,
			want: sampleView{rows: [][]uint64{{1, 3}, {2}}, labels: []float64{1, -1}},
			// No index 0: 1-based.
			wantBase: 1,
		},
		{
			name:     "values",
			in:       "+1 1:0.5 2:-2.25 3:1e-3\n",
			base:     -1,
			want:     sampleView{rows: [][]uint64{{1, 2, 3}}, vals: [][]float32{{0.5, -2.25, 1e-3}}, labels: []float64{1}},
			wantBase: 1,
		},
		{
			name:     "comments, qid, trailing comment",
			in:       "# header comment\n\n2 qid:3 4:1 # trailing\n   \n\t# indented comment\n3 qid:3 5:1#tight\n",
			base:     -1,
			want:     sampleView{rows: [][]uint64{{4}, {5}}, labels: []float64{2, 3}},
			wantBase: 1,
		},
		{
			name:     "empty rows",
			in:       "1\n0 # only a label\n-1 2:1\n",
			base:     -1,
			want:     sampleView{rows: [][]uint64{{}, {}, {2}}, labels: []float64{1, 0, -1}},
			wantBase: 1,
		},
		{
			name:     "0-based detection",
			in:       "1 3:1\n0 0:1 2:1\n",
			base:     -1,
			want:     sampleView{rows: [][]uint64{{3}, {0, 2}}, labels: []float64{1, 0}},
			wantBase: 0,
		},
		{
			name:     "explicit base 0 without index 0",
			in:       "1 3:1\n",
			base:     0,
			want:     sampleView{rows: [][]uint64{{3}}, labels: []float64{1}},
			wantBase: 0,
		},
		{
			name:     "unsorted row",
			in:       "1 9:3 2:1 5:0.5\n",
			base:     1,
			want:     sampleView{rows: [][]uint64{{2, 5, 9}}, vals: [][]float32{{1, 0.5, 3}}, labels: []float64{1}},
			wantBase: 1,
		},
		{
			name:     "CRLF and trailing whitespace",
			in:       "1 1:1 2:1 \r\n-1\t3:1\t\r\n\r\n",
			base:     -1,
			want:     sampleView{rows: [][]uint64{{1, 2}, {3}}, labels: []float64{1, -1}},
			wantBase: 1,
		},
		{
			name:     "no final newline",
			in:       "1 1:1\n2 2:1",
			base:     -1,
			want:     sampleView{rows: [][]uint64{{1}, {2}}, labels: []float64{1, 2}},
			wantBase: 1,
		},
		{
			name:     "labels of all kinds",
			in:       "0.75 1:1\n-3 1:1\n1e3 1:1\n17 1:1\n",
			base:     -1,
			want:     sampleView{rows: [][]uint64{{1}, {1}, {1}, {1}}, labels: []float64{0.75, -3, 1000, 17}},
			wantBase: 1,
		},
		{
			name:     "huge index",
			in:       "1 18446744073709551615:1\n",
			base:     -1,
			want:     sampleView{rows: [][]uint64{{math.MaxUint64}}, labels: []float64{1}},
			wantBase: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, err := ReadLibSVM(strings.NewReader(tt.in), "t.svm", libsvmOptions(tt.base))
			if err != nil {
				t.Fatal(err)
			}
			if err := g.Validate(); err != nil {
				t.Fatal(err)
			}
			if got := viewOf(g); !equalView(got, tt.want) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
			want := Meta{Format: "libsvm", Source: "t.svm", IndexBase: tt.wantBase}
			if g.Meta() != want {
				t.Errorf("meta %+v, want %+v", g.Meta(), want)
			}
		})
	}
}

func TestReadLibSVMTestdata(t *testing.T) {
	g, err := Load("testdata/small.svm", DefaultLoadOptions())
	if err != nil {
		t.Fatal(err)
	}
	want := sampleView{
		rows:   [][]uint64{{1, 3, 7}, {2, 3}, {}, {1, 7}},
		vals:   [][]float32{{0.5, 1, -2.25}, {1, 3}, {}, {4, 1e-3}},
		labels: []float64{1, -1, 0, 2.5},
	}
	if got := viewOf(g); !equalView(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
	// The bzip2 copy reads the same.
	gz, err := Load("testdata/small.svm.bz2", DefaultLoadOptions())
	if err != nil {
		t.Fatal(err)
	}
	gz.meta.Source = g.meta.Source
	if err := equalGraphs(g, gz); err != nil {
		t.Error(err)
	}
}

func TestReadLibSVMErrors(t *testing.T) {
	tests := []struct {
		name  string
		in    string
		base  int
		line  int
		field int
		want  string
	}{
		{"pair without colon", "1 3:1\n1 3\n", -1, 2, 2, `"3": want idx:value`},
		{"pair without value", "1 3:\n", -1, 1, 2, `"3:": want idx:value with a finite number value`},
		{"pair without index", "1 :1\n", -1, 1, 2, `":1": want idx:value with a non-negative integer index`},
		{"letter index", "1 2:1 a:1\n", -1, 1, 3, `"a:1": want idx:value with a non-negative integer index`},
		{"two colons", "1 3:1:2\n", -1, 1, 2, `"3:1:2": want idx:value with a finite number value`},
		{"negative index", "1 -3:1\n", -1, 1, 2, `"-3:1": negative index`},
		{"index overflow", "1 18446744073709551616:1\n", -1, 1, 2, "does not fit in 64 bits"},
		{"index 0 with base 1", "1 1:1\n\n1 0:1\n", 1, 3, 2, `"0:1": index 0 but the index base is 1`},
		{"bad value", "1 2:1 4:x\n", -1, 1, 3, `"4:x": want idx:value with a finite number value`},
		{"NaN value", "1 4:NaN\n", -1, 1, 2, `"4:NaN": want idx:value with a finite number value`},
		{"Inf value", "1 4:inf\n", -1, 1, 2, `"4:inf": want idx:value with a finite number value`},
		{"float64 overflow value", "1 4:1e400\n", -1, 1, 2, `want idx:value with a finite number value`},
		{"float32 overflow value", "1 4:1e39\n", -1, 1, 2, `"4:1e39": value out of the float32 range`},
		{"bad label", "# c\nx 1:1\n", -1, 2, 1, `"x": want a finite number label`},
		{"NaN label", "nan 1:1\n", -1, 1, 1, `"nan": want a finite number label`},
		{"Inf label", "-Inf 1:1\n", -1, 1, 1, `"-Inf": want a finite number label`},
		{"label with colon", "1:1 2:1\n", -1, 1, 1, `"1:1": want a finite number label`},
		{"duplicate index", "1 3:1 5:1 3:2\n", -1, 1, 4, "index 3 occurs twice in the sample"},
		{"duplicate index in sorted part", "1 3:1 3:2 5:1\n", -1, 1, 3, "index 3 occurs twice in the sample"},
		{"duplicate index after qid", "1 qid:1 3:1 3:2\n", -1, 1, 4, "index 3 occurs twice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ReadLibSVM(strings.NewReader(tt.in), "a.svm", libsvmOptions(tt.base))
			checkParseError(t, err, "a.svm", tt.line, tt.field, tt.want)
		})
	}
}

// checkParseError checks that err is a *ParseError at file:line and field
// whose text contains want.
func checkParseError(t *testing.T, err error, file string, line, field int, want string) {
	t.Helper()
	var pe *ParseError
	if !errors.As(err, &pe) {
		t.Fatalf("err = %v, want a *ParseError", err)
	}
	if pe.File != file || pe.Line != line || pe.Field != field {
		t.Errorf("error at %s:%d field %d, want %s:%d field %d", pe.File, pe.Line, pe.Field, file, line, field)
	}
	prefix := file + ":" + strconv.Itoa(line) + ": "
	if field > 0 {
		prefix += "field " + strconv.Itoa(field) + ": "
	}
	if msg := err.Error(); !strings.HasPrefix(msg, prefix) || !strings.Contains(msg, want) {
		t.Errorf("error %q, want %q...%q", msg, prefix, want)
	}
}

func TestReadLibSVMEmpty(t *testing.T) {
	for _, in := range []string{"", "\n\n", "# only a comment\n", "  \t \r\n"} {
		_, err := ReadLibSVM(strings.NewReader(in), "e.svm", DefaultLoadOptions())
		if err == nil || err.Error() != "e.svm: empty: no samples" {
			t.Errorf("%q: err = %v", in, err)
		}
	}
}

func TestReadLibSVMBadOptions(t *testing.T) {
	_, err := ReadLibSVM(strings.NewReader("1 1:1\n"), "o.svm", libsvmOptions(2))
	if err == nil || !strings.Contains(err.Error(), "index base 2") {
		t.Errorf("err = %v", err)
	}
}

func TestReadLibSVMLongLine(t *testing.T) {
	var b strings.Builder
	b.WriteString("1")
	n := 300000 // about 3 MB: longer than the read buffer
	for i := range n {
		b.WriteString(" " + strconv.Itoa(i+1) + ":1")
	}
	b.WriteString("\n-1 5:1\n")
	g, err := ReadLibSVM(strings.NewReader(b.String()), "long.svm", DefaultLoadOptions())
	if err != nil {
		t.Fatal(err)
	}
	if g.NumSamples() != 2 || g.SampleDegree(0) != n || g.SampleDegree(1) != 1 {
		t.Errorf("got %v, degrees %d %d", g, g.SampleDegree(0), g.SampleDegree(1))
	}
}

// TestParseFloat checks the fast path against strconv on hand-picked and
// random decimal strings: the result must have the bits of
// strconv.ParseFloat(s, 64), and so the float32 value of the readers is
// float32 of that.
func TestParseFloat(t *testing.T) {
	cases := []string{"0", "-0", "+0", "1", "+1", "-1", "3", "0.5", "-2.25", ".5", "5.", "0.1", "0.3",
		"123456789012345678", "9007199254740993", "9007199254740992", "1234567890123456789",
		"12345678901234567890", "0.0000000000000000000001", "0.00000000000000000000001",
		"1e5", "1E-5", "0x1p-2", "1_0", "4.9e-324", "1e-400", "3.4028235e38", "3.4028236e38"}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200000 {
		cases = append(cases, randomDecimal(rng))
	}
	for _, s := range cases {
		want, werr := strconv.ParseFloat(s, 64)
		got, ok := parseFloat([]byte(s))
		if werr != nil {
			if ok {
				t.Errorf("%q: got %v, strconv fails: %v", s, got, werr)
			}
			continue
		}
		if !ok || math.Float64bits(got) != math.Float64bits(want) {
			t.Errorf("%q: got %v (%v), want %v", s, got, ok, want)
		}
		if float32(got) != float32(want) {
			t.Errorf("%q: float32 %v, want %v", s, float32(got), float32(want))
		}
	}
	for _, s := range []string{"", "-", "+", ".", "-.", "1.2.3", "1-", "nan", "Inf", "-infinity", "1e400", "0x", "--1"} {
		if got, ok := parseFloat([]byte(s)); ok {
			t.Errorf("%q: got %v, want rejection", s, got)
		}
	}
}

// randomDecimal returns a random decimal of up to 24 digits with an
// optional sign and point, the shapes that take the fast path and those
// just beyond it.
func randomDecimal(rng *rand.Rand) string {
	var b []byte
	switch rng.IntN(4) {
	case 0:
		b = append(b, '-')
	case 1:
		b = append(b, '+')
	}
	n := 1 + rng.IntN(24)
	dot := -1
	if rng.IntN(3) > 0 {
		dot = rng.IntN(n + 1)
	}
	for i := range n {
		if i == dot {
			b = append(b, '.')
		}
		b = append(b, byte('0'+rng.IntN(10)))
	}
	if dot == n {
		b = append(b, '.')
	}
	return string(b)
}

// TestReadLibSVMWriteRoundTrip reads files with values and labels of all
// kinds, writes them and reads them back.
func TestReadLibSVMWriteRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var in bytes.Buffer
	for i := range 2000 {
		in.WriteString(randomDecimal(rng))
		id := uint64(0)
		for j := range rng.IntN(20) {
			id += 1 + uint64(rng.IntN(100))
			if j%3 == 0 {
				id += uint64(rng.Int64N(1 << 40))
			}
			v := randomDecimal(rng)
			if i%5 == 0 {
				v = strconv.FormatFloat(rng.NormFloat64()*1e30, 'g', -1, 64)
			}
			in.WriteString(" " + strconv.FormatUint(id, 10) + ":" + v)
		}
		in.WriteString("\n")
	}
	for _, base := range []int{-1, 0} {
		g, err := ReadLibSVM(bytes.NewReader(in.Bytes()), "r.svm", libsvmOptions(base))
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		if err := WriteLibSVM(&out, g); err != nil {
			t.Fatal(err)
		}
		h, err := ReadLibSVM(&out, "r.svm", libsvmOptions(base))
		if err != nil {
			t.Fatal(err)
		}
		if err := equalGraphs(g, h); err != nil {
			t.Errorf("base %d: %v", base, err)
		}
	}
}

// dataFile returns the path of a file in the shared data folder beside the
// repository, skipping the test when it is absent.
func dataFile(t testing.TB, rel string) string {
	t.Helper()
	p := filepath.Join("..", "..", "shared", "data", rel)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("../shared/data not found: %v", err)
	}
	return p
}

func TestLoad20Newsgroups(t *testing.T) {
	p := dataFile(t, "20news-bydate/20news-bydate.train.libsvm.xz")
	g, err := Load(p, DefaultLoadOptions())
	if err != nil {
		t.Fatal(err)
	}
	if g.NumSamples() != 11269 || g.NumParams() != 53975 || g.NumEdges() != 1467345 {
		t.Errorf("got %v, want 11269 samples, 53975 parameters, 1467345 edges", g)
	}
	if g.Meta().Format != "libsvm" || g.Meta().IndexBase != 1 {
		t.Errorf("meta %+v", g.Meta())
	}
	for u := range g.NumSamples() {
		if l := g.Label(u); l < 1 || l > 20 || l != math.Trunc(l) {
			t.Fatalf("sample %d: label %v, want a class 1..20", u, l)
		}
	}
	if err := g.Validate(); err != nil {
		t.Fatal(err)
	}
}

// TestHugeIndexNotSized: the sparse readers size nothing by the largest
// index: a file with the index 2^62 is read in a few megabytes at most (buffers), its ids
// remapped through a map instead of a table.
func TestHugeIndexNotSized(t *testing.T) {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	g, err := ReadLibSVM(strings.NewReader("1 4611686018427387904:1\n-1 268435455:1 3:2\n"), "huge.svm", DefaultLoadOptions())
	runtime.ReadMemStats(&after)
	if err != nil || g.NumParams() != 3 || g.ParamID(2) != 1<<62 {
		t.Fatalf("%v, %v", g, err)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 8<<20 {
		t.Fatalf("allocated %d bytes for 3 parameters", grew)
	}
}

// TestReadLibSVMAgainstStrconv reads random lines whose tokens sit on the
// edges of the reader's fast paths (indices of up to 22 digits, leading
// zeros included; integer values of up to 20 digits, decimals, exponents,
// signs, hex and special values; tabs and CRs) and checks each line
// against a reference built from strings.Fields and strconv: the same
// parameters and value bits when the reference accepts the line, an error
// when it does not.
func TestReadLibSVMAgainstStrconv(t *testing.T) {
	rng := rand.New(rand.NewPCG(35, 4))
	digits := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte('0' + rng.IntN(10))
		}
		return string(b)
	}
	index := func() string {
		switch rng.IntN(4) {
		case 0:
			return digits(1 + rng.IntN(22))
		case 1:
			return strings.Repeat("0", rng.IntN(20)) + digits(1+rng.IntN(3))
		default:
			return digits(1 + rng.IntN(6))
		}
	}
	value := func() string {
		forms := []func() string{
			func() string { return digits(1 + rng.IntN(20)) },
			func() string { return digits(1+rng.IntN(3)) + "." + digits(1+rng.IntN(4)) },
			func() string { return "-" + digits(1+rng.IntN(4)) },
			func() string { return "+" + digits(1+rng.IntN(2)) },
			func() string { return digits(1+rng.IntN(2)) + "e" + digits(1+rng.IntN(2)) },
			func() string { return "." + digits(1+rng.IntN(3)) },
			func() string { return digits(1+rng.IntN(3)) + "." },
			func() string { return []string{"0x1p3", "inf", "nan", "1e39", "-0", "", "1x", "1:2"}[rng.IntN(8)] },
			func() string { return digits(1 + rng.IntN(3)) },
		}
		return forms[rng.IntN(len(forms))]()
	}
	for trial := range 3000 {
		var line strings.Builder
		line.WriteString([]string{"1", "-1", "0", "2.5"}[rng.IntN(4)])
		for range rng.IntN(6) {
			line.WriteString([]string{" ", "\t", "  "}[rng.IntN(3)])
			line.WriteString(index() + ":" + value())
		}
		if rng.IntN(4) == 0 {
			line.WriteString(" ")
		}
		if rng.IntN(8) == 0 {
			line.WriteString("\r")
		}
		text := line.String()

		// The reference.
		ok := true
		var wantIDs []uint64
		var wantVals []float32
		fields := strings.Fields(strings.TrimSuffix(text, "\r"))
		for _, tok := range fields[1:] {
			idx, val, found := strings.Cut(tok, ":")
			id, err1 := strconv.ParseUint(idx, 10, 64)
			f, err2 := strconv.ParseFloat(val, 64)
			if !found || err1 != nil || err2 != nil || math.IsNaN(f) || math.IsInf(float64(float32(f)), 0) ||
				slices.Contains(wantIDs, id) || idx[0] == '+' {
				ok = false
				break
			}
			wantIDs = append(wantIDs, id)
			wantVals = append(wantVals, float32(f))
		}

		g, err := ReadLibSVM(strings.NewReader(text+"\n"), "t.svm", libsvmOptions(0))
		if !ok {
			if err == nil {
				t.Fatalf("trial %d: %q read without an error", trial, text)
			}
			continue
		}
		if err != nil {
			t.Fatalf("trial %d: %q: %v", trial, text, err)
		}
		idx := make([]int, len(wantIDs))
		for i := range idx {
			idx[i] = i
		}
		slices.SortFunc(idx, func(a, b int) int { return cmp.Compare(wantIDs[a], wantIDs[b]) })
		vals := g.Values(0)
		for x, i := range idx {
			if got := g.ParamID(int(g.Params(0)[x])); got != wantIDs[i] {
				t.Fatalf("trial %d: %q: parameter %d is %d, want %d", trial, text, x, got, wantIDs[i])
			}
			v := float32(1)
			if vals != nil {
				v = vals[x]
			}
			if math.Float32bits(v) != math.Float32bits(wantVals[i]) {
				t.Fatalf("trial %d: %q: value %d is %v, want %v", trial, text, x, v, wantVals[i])
			}
		}
		if len(g.Params(0)) != len(wantIDs) {
			t.Fatalf("trial %d: %q: %d parameters, want %d", trial, text, len(g.Params(0)), len(wantIDs))
		}
	}
}
