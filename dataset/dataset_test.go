package dataset

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// idxBytes builds an idx file of the given type and dimensions from raw
// big-endian element bytes.
func idxBytes(typ byte, dims []int, data []byte) []byte {
	b := []byte{0, 0, typ, byte(len(dims))}
	for _, k := range dims {
		b = binary.BigEndian.AppendUint32(b, uint32(k))
	}
	return append(b, data...)
}

func gzipBytes(t testing.TB, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestReadIDX(t *testing.T) {
	f32 := binary.BigEndian.AppendUint32(nil, math.Float32bits(1.5))
	f32 = binary.BigEndian.AppendUint32(f32, math.Float32bits(-2))
	i16 := []byte{0xff, 0xfe, 0x01, 0x00} // -2, 256
	tests := []struct {
		name    string
		in      []byte
		dims    []int
		values  []float64
		wantErr string
	}{
		{"ubyte idx1", idxBytes(IDXUint8, []int{3}, []byte{0, 7, 255}), []int{3}, []float64{0, 7, 255}, ""},
		{"ubyte idx3", idxBytes(IDXUint8, []int{1, 2, 2}, []byte{1, 2, 3, 4}), []int{1, 2, 2}, []float64{1, 2, 3, 4}, ""},
		{"int8", idxBytes(IDXInt8, []int{2}, []byte{0xff, 5}), []int{2}, []float64{-1, 5}, ""},
		{"int16", idxBytes(IDXInt16, []int{2}, i16), []int{2}, []float64{-2, 256}, ""},
		{"float32", idxBytes(IDXFloat32, []int{2}, f32), []int{2}, []float64{1.5, -2}, ""},
		{"empty", idxBytes(IDXUint8, []int{0}, nil), []int{0}, nil, ""},
		{"bad magic", []byte{1, 2, 3, 4, 0, 0, 0, 0}, nil, nil, "bad magic 0x01020304"},
		{"unknown type", []byte{0, 0, 0x0a, 1, 0, 0, 0, 0}, nil, nil, "bad magic 0x00000a01"},
		{"no dims", []byte{0, 0, 8, 0}, nil, nil, "bad magic"},
		{"short magic", []byte{0, 0}, nil, nil, "truncated header: 2 of 4 magic bytes"},
		{"short dims", []byte{0, 0, 8, 3, 0, 0, 0, 1, 0}, nil, nil, "truncated header: 3 dimensions declared, file ends after 5 of their 12 bytes"},
		{"short data", idxBytes(IDXUint8, []int{2, 3}, []byte{1, 2, 3}), nil, nil, "truncated: dimensions 2×3 of unsigned byte declare 6 bytes of data, the file has 3"},
		{"trailing", idxBytes(IDXUint8, []int{2}, []byte{1, 2, 3}), nil, nil, "unexpected data after the 2 bytes"},
		{"huge", idxBytes(IDXUint8, []int{1 << 20, 1 << 20}, nil), nil, nil, "more than 2^36 elements"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ReadIDX(bytes.NewReader(tt.in), "f.idx")
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.HasPrefix(err.Error(), "f.idx: ") {
					t.Fatalf("err = %v, want f.idx: …%s…", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got.Dims, tt.dims) {
				t.Errorf("dims = %v, want %v", got.Dims, tt.dims)
			}
			var values []float64
			for i := range got.Len() {
				values = append(values, got.At(i))
			}
			if !slices.Equal(values, tt.values) {
				t.Errorf("values = %v, want %v", values, tt.values)
			}
		})
	}
}

func TestFromIDX(t *testing.T) {
	images := &IDX{Type: IDXUint8, Dims: []int{3, 1, 2}, Data: []byte{0, 255, 51, 102, 255, 0}, Source: "img"}
	labels := &IDX{Type: IDXUint8, Dims: []int{3}, Data: []byte{7, 3, 7}, Source: "lab"}
	d, err := FromIDX(images, labels)
	if err != nil {
		t.Fatal(err)
	}
	if d.Dim != 2 || d.Len() != 3 || d.Classes != 2 {
		t.Fatalf("got %d × %d with %d classes, want 3 × 2 with 2", d.Len(), d.Dim, d.Classes)
	}
	if want := []float32{0, 1, 0.2, 0.4, 1, 0}; !slices.Equal(d.Features, want) {
		t.Errorf("features = %v, want %v", d.Features, want)
	}
	if want := []int{1, 0, 1}; !slices.Equal(d.Labels, want) {
		t.Errorf("labels = %v, want %v", d.Labels, want)
	}
	if want := []string{"3", "7"}; !slices.Equal(d.ClassNames, want) {
		t.Errorf("class names = %v, want %v", d.ClassNames, want)
	}
	if err := d.Validate(); err != nil {
		t.Error(err)
	}

	errs := []struct {
		name           string
		images, labels *IDX
		want           string
	}{
		{"count mismatch", images, &IDX{Type: IDXUint8, Dims: []int{2}, Data: []byte{1, 2}, Source: "lab"},
			"img has 3 samples (dimensions 3×1×2) but lab has 2 labels"},
		{"labels not idx1", images, &IDX{Type: IDXUint8, Dims: []int{3, 2}, Data: make([]byte, 6), Source: "lab"},
			"lab: labels have dimensions 3×2"},
		{"float labels", images, &IDX{Type: IDXFloat64, Dims: []int{3}, Data: make([]byte, 24), Source: "lab"},
			"lab: labels are float64: want integer labels"},
		{"no features", &IDX{Type: IDXUint8, Dims: []int{3, 0}, Source: "img"}, labels,
			"img: dimensions 3×0 give samples of no features"},
	}
	for _, tt := range errs {
		t.Run(tt.name, func(t *testing.T) {
			_, err := FromIDX(tt.images, tt.labels)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want …%s…", err, tt.want)
			}
		})
	}
}

func TestLoadIDXFiles(t *testing.T) {
	dir := t.TempDir()
	img := filepath.Join(dir, "img.gz")
	lab := filepath.Join(dir, "lab")
	cut := filepath.Join(dir, "cut.gz")
	imgBytes := idxBytes(IDXUint8, []int{2, 2, 2}, []byte{0, 255, 0, 255, 255, 0, 255, 0})
	z := gzipBytes(t, imgBytes)
	for path, b := range map[string][]byte{
		img: z,
		lab: idxBytes(IDXUint8, []int{2}, []byte{1, 0}),
		cut: z[:len(z)-12],
	} {
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	d, err := Load(img, LoadOptions{Labels: lab})
	if err != nil {
		t.Fatal(err)
	}
	if d.Len() != 2 || d.Dim != 4 || !slices.Equal(d.Labels, []int{1, 0}) || d.Features[1] != 1 {
		t.Errorf("got %d × %d labels %v features %v", d.Len(), d.Dim, d.Labels, d.Features)
	}
	if _, err := Load(img, LoadOptions{}); err == nil || !strings.Contains(err.Error(), "needs a label file") {
		t.Errorf("no labels: err = %v", err)
	}
	if _, err := Load(cut, LoadOptions{Labels: lab}); err == nil || !strings.Contains(err.Error(), "cut.gz: gzip: corrupt or truncated compressed data") {
		t.Errorf("cut gzip: err = %v", err)
	}
	if _, err := Load(filepath.Join(dir, "absent"), LoadOptions{}); err == nil || !strings.Contains(err.Error(), "absent") {
		t.Errorf("absent: err = %v", err)
	}
}

func TestReadLibSVM(t *testing.T) {
	tests := []struct {
		name     string
		in       string
		opt      LibSVMOptions
		dim      int
		features []float32
		labels   []int
		names    []string
		wantErr  string
	}{
		{"one-based", "1 1:0.5 3:2\n-1 2:1\n+1 # only a label\n", DefaultLibSVMOptions(), 3,
			[]float32{0.5, 0, 2, 0, 1, 0, 0, 0, 0}, []int{1, 0, 1}, []string{"-1", "1"}, ""},
		{"zero-based detected", "2 0:1 1:2\n5 qid:3 2:3\n", DefaultLibSVMOptions(), 3,
			[]float32{1, 2, 0, 0, 0, 3}, []int{0, 1}, []string{"2", "5"}, ""},
		{"fixed dim", "0 1:1\n", LibSVMOptions{IndexBase: 1, Dim: 4}, 4,
			[]float32{1, 0, 0, 0}, []int{0}, []string{"0"}, ""},
		{"blank and comment lines", "# header\n\n3 2:1\n", DefaultLibSVMOptions(), 2,
			[]float32{0, 1}, []int{0}, []string{"3"}, ""},
		{"bad index", "1 1:1\n1 x:2\n", DefaultLibSVMOptions(), 0, nil, nil, nil, `f:2: field 2: "x:2": want idx:value with a non-negative integer index`},
		{"unsorted row", "1 3:1 2:5\n", DefaultLibSVMOptions(), 3, []float32{0, 5, 1}, []int{0}, []string{"1"}, ""},
		{"repeated index", "1 3:1 3:5\n", DefaultLibSVMOptions(), 0, nil, nil, nil, "f:1"},
		{"bad value", "1 1:1\n\n1 1:abc\n", DefaultLibSVMOptions(), 0, nil, nil, nil, `f:3: field 2: "1:abc": want idx:value with a finite number value`},
		{"no colon", "1 1:1 7\n", DefaultLibSVMOptions(), 0, nil, nil, nil, `f:1: field 3: "7": want idx:value`},
		{"multi-label", "1,2 1:1\n", DefaultLibSVMOptions(), 0, nil, nil, nil, `f:1: field 1: "1,2": want a finite number label`},
		{"text label", "cat 1:1\n", DefaultLibSVMOptions(), 0, nil, nil, nil, `f:1: field 1: "cat": want a finite number label`},
		{"zero in one-based", "1 0:1\n", LibSVMOptions{IndexBase: 1}, 0, nil, nil, nil, "f:1: field 2: \"0:1\": index 0 but the index base is 1"},
		{"beyond dim", "1 5:1\n", LibSVMOptions{IndexBase: 1, Dim: 4}, 0, nil, nil, nil, "f: index 5 beyond the 4 features"},
		{"no features", "1\n2\n", DefaultLibSVMOptions(), 0, nil, nil, nil, "f: no features in 2 samples"},
		{"too large", "1 1000:1\n1 1:1\n", LibSVMOptions{IndexBase: -1, MaxValues: 1000}, 0, nil, nil, nil, "f:1: feature index 1000: 1 samples × 1001 features = 1001 dense values, more than the dense limit of 1000"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := ReadLibSVM(strings.NewReader(tt.in), "f", tt.opt)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want …%s…", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d.Dim != tt.dim || !slices.Equal(d.Features, tt.features) || !slices.Equal(d.Labels, tt.labels) || !slices.Equal(d.ClassNames, tt.names) {
				t.Errorf("got dim %d features %v labels %v names %v, want %d %v %v %v",
					d.Dim, d.Features, d.Labels, d.ClassNames, tt.dim, tt.features, tt.labels, tt.names)
			}
			if err := d.Validate(); err != nil {
				t.Error(err)
			}
		})
	}
}

func TestReadCSV(t *testing.T) {
	tests := []struct {
		name     string
		in       string
		opt      CSVOptions
		dim      int
		features []float32
		labels   []int
		names    []string
		wantErr  string
	}{
		{"no header", "1,0.5,2\n0,1,3\n", CSVOptions{}, 2,
			[]float32{0.5, 2, 1, 3}, []int{1, 0}, []string{"0", "1"}, ""},
		{"header detected", "y,a,b\n1,0.5,2\n", CSVOptions{}, 2,
			[]float32{0.5, 2}, []int{0}, []string{"1"}, ""},
		{"numeric header forced", "9,8,7\n1,0.5,2\n", CSVOptions{Header: HeaderYes}, 2,
			[]float32{0.5, 2}, []int{0}, []string{"1"}, ""},
		{"last column names", "0.5, 2 ,cat\n1,3,dog\n4,5,cat\n", CSVOptions{LabelCol: -1}, 2,
			[]float32{0.5, 2, 1, 3, 4, 5}, []int{0, 1, 0}, []string{"cat", "dog"}, ""},
		{"label by name", "a;class;b\n1;x;2\n", CSVOptions{LabelName: "class", Comma: ';'}, 2,
			[]float32{1, 2}, []int{0}, []string{"x"}, ""},
		{"non-numeric cell", "1,2,3\n0,1,3\n0,abc,3\n", CSVOptions{}, 0, nil, nil, nil, `f:3: field 2: record 3: "abc" is not a number`},
		{"empty cell", "1,2,3\n0,,3\n", CSVOptions{}, 0, nil, nil, nil, "f:2: field 2: record 2: empty cell"},
		{"ragged", "1,2,3\n0,1\n", CSVOptions{}, 0, nil, nil, nil, "f:2: record 2: 2 fields, want 3 like the first record"},
		{"one column", "1\n2\n", CSVOptions{}, 0, nil, nil, nil, "f:1: 1 column(s)"},
		{"label col out of range", "1,2\n", CSVOptions{LabelCol: 5}, 0, nil, nil, nil, "label column 5: the file has 2 columns"},
		{"missing label name", "a,b\n1,2\n", CSVOptions{LabelName: "y"}, 0, nil, nil, nil, `no column named "y"`},
		{"empty", "", CSVOptions{}, 0, nil, nil, nil, "f: empty file"},
		{"infinite", "1,inf\n", CSVOptions{Header: HeaderNo}, 0, nil, nil, nil, "want a finite number"},
		{"beyond float32", "1,2\n0,-1e39\n", CSVOptions{}, 0, nil, nil, nil, `f:2: field 2: record 2: "-1e39": out of the float32 range (±3.4e38)`},
		// A byte order mark (a spreadsheet's "CSV UTF-8") is not part
		// of the first cell: the header still names the label, and a
		// first record of numbers is still one.
		{"byte order mark, header", "\ufefflabel,a,b\n1,0.5,2\n", CSVOptions{LabelAuto: true}, 2,
			[]float32{0.5, 2}, []int{0}, []string{"1"}, ""},
		{"byte order mark, no header", "\ufeff1,0.5,2\n0,1,3\n", CSVOptions{}, 2,
			[]float32{0.5, 2, 1, 3}, []int{1, 0}, []string{"0", "1"}, ""},
		// LabelAuto: a header's label column is found by its name; a
		// header without one is refused, listing its columns.
		{"auto: named label", "a,b,Class\n1,2,x\n3,4,y\n", CSVOptions{LabelAuto: true}, 2,
			[]float32{1, 2, 3, 4}, []int{0, 1}, []string{"x", "y"}, ""},
		{"auto: target", "p0,p1,target\n0,16,3\n", CSVOptions{LabelAuto: true}, 2,
			[]float32{0, 16}, []int{0}, []string{"3"}, ""},
		{"auto: no header", "1,0.5,2\n0,1,3\n", CSVOptions{LabelAuto: true}, 2,
			[]float32{0.5, 2, 1, 3}, []int{1, 0}, []string{"0", "1"}, ""},
		{"auto: class names, no header", "cat,0.5,2\ndog,1,3\n", CSVOptions{LabelAuto: true}, 2,
			[]float32{0.5, 2, 1, 3}, []int{0, 1}, []string{"cat", "dog"}, ""},
		{"auto: by name wins", "y,label,b\n1,0,2\n", CSVOptions{LabelAuto: true, LabelName: "label"}, 2,
			[]float32{1, 2}, []int{0}, []string{"0"}, ""},
		{"auto: header without a label", "pixel0,pixel1,pixel2\n0,0,7\n", CSVOptions{LabelAuto: true}, 0, nil, nil, nil,
			`f:1: the header names no label column (label, class, target, y): name it with --label-col, by name or number; the columns are 0 "pixel0", 1 "pixel1", 2 "pixel2"`},
		{"auto: header forced", "1,2\n3,4\n", CSVOptions{LabelAuto: true, Header: HeaderYes}, 0, nil, nil, nil, "the header names no label column"},
		{"auto: two labels", "label,y,b\n1,0,2\n", CSVOptions{LabelAuto: true}, 0, nil, nil, nil,
			`the header names several label columns (0 "label", 1 "y"): choose one with --label-col`},
		{"auto: a word at the end", "0.5,2,cat\n1,3,dog\n", CSVOptions{LabelAuto: true}, 0, nil, nil, nil,
			`f:1: field 3: record 1: "cat" is not a number (the label was taken from column 0, as in a file without a header: name the label column with --label-col)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := ReadCSV(strings.NewReader(tt.in), "f", tt.opt)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want …%s…", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d.Dim != tt.dim || !slices.Equal(d.Features, tt.features) || !slices.Equal(d.Labels, tt.labels) || !slices.Equal(d.ClassNames, tt.names) {
				t.Errorf("got dim %d features %v labels %v names %v, want %d %v %v %v",
					d.Dim, d.Features, d.Labels, d.ClassNames, tt.dim, tt.features, tt.labels, tt.names)
			}
			if err := d.Validate(); err != nil {
				t.Error(err)
			}
		})
	}
}

func TestDetectFormat(t *testing.T) {
	tests := []struct {
		head string
		want Format
	}{
		{"\x00\x00\x08\x03rest", FormatIDX},
		{"# comment\n1 3:1 4:2\n", FormatLibSVM},
		{"-1\n", FormatLibSVM},
		{"label,a,b\n1,2,3\n", FormatCSV},
		{"1\t2\t3\n", FormatCSV},
		{"", FormatCSV},
	}
	for _, tt := range tests {
		if got := DetectFormat([]byte(tt.head)); got != tt.want {
			t.Errorf("DetectFormat(%q) = %q, want %q", tt.head, got, tt.want)
		}
	}
}

func TestClassNumbering(t *testing.T) {
	m := newClassMap()
	raw := []string{"10", "+1", "2", "1.0", "1"}
	labels := make([]int, len(raw))
	for i, s := range raw {
		labels[i] = m.add(s)
	}
	k, names := m.finish(labels)
	if k != 3 || !slices.Equal(names, []string{"+1", "2", "10"}) || !slices.Equal(labels, []int{2, 0, 1, 0, 0}) {
		t.Errorf("got %d classes %v labels %v", k, names, labels)
	}
}

func TestDatasetHelpers(t *testing.T) {
	d, err := New([]float32{1, 2, 3, 4, 5, 6}, []int{1, 0, 1}, 2, 2)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(d.ClassCounts(), []int{1, 2}) {
		t.Errorf("counts = %v", d.ClassCounts())
	}
	if got := d.ByClass(); !slices.Equal(got[0], []int{1}) || !slices.Equal(got[1], []int{0, 2}) {
		t.Errorf("by class = %v", got)
	}
	s := d.Subset([]int{2, 1})
	if !slices.Equal(s.Features, []float32{5, 6, 3, 4}) || !slices.Equal(s.Labels, []int{1, 0}) {
		t.Errorf("subset = %v %v", s.Features, s.Labels)
	}
	if d.ClassName(1) != "1" {
		t.Errorf("class name = %q", d.ClassName(1))
	}
	bad := []struct {
		f    []float32
		y    []int
		dim  int
		k    int
		want string
	}{
		{[]float32{1}, []int{0, 0}, 1, 1, "features: 1 values for 2 samples"},
		{[]float32{1}, []int{3}, 1, 2, "label of sample 0 is 3: want 0..1"},
		{nil, nil, 0, 1, "dim 0"},
	}
	for _, b := range bad {
		if _, err := New(b.f, b.y, b.dim, b.k); err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("New: err = %v, want …%s…", err, b.want)
		}
	}
}

// dataDir returns the shared data directory, or skips the test.
func dataDir(t testing.TB) string {
	t.Helper()
	dir := filepath.Join("..", "..", "shared", "data")
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("real data not present at %s: %v", dir, err)
	}
	return dir
}

func TestFashionMNISTTest(t *testing.T) {
	dir := filepath.Join(dataDir(t), "fashion-mnist")
	d, err := Load(filepath.Join(dir, "t10k-images-idx3-ubyte.gz"), LoadOptions{Labels: filepath.Join(dir, "t10k-labels-idx1-ubyte.gz")})
	if err != nil {
		t.Fatal(err)
	}
	if d.Len() != 10000 || d.Dim != 784 || d.Classes != 10 {
		t.Fatalf("got %d × %d, %d classes; want 10000 × 784, 10", d.Len(), d.Dim, d.Classes)
	}
	for c, k := range d.ClassCounts() {
		if k != 1000 {
			t.Errorf("class %d has %d samples, want 1000", c, k)
		}
	}
	lo, hi := slices.Min(d.Features), slices.Max(d.Features)
	if lo != 0 || hi != 1 {
		t.Errorf("features span [%g, %g], want [0, 1]", lo, hi)
	}
}

func TestA9A(t *testing.T) {
	d, err := Load(filepath.Join(dataDir(t), "a9a", "a9a.xz"), DefaultLoadOptions())
	if err != nil {
		t.Fatal(err)
	}
	if d.Len() != 32561 || d.Dim != 123 || !slices.Equal(d.ClassNames, []string{"-1", "1"}) {
		t.Errorf("got %d × %d classes %v; want 32561 × 123, [-1 +1]", d.Len(), d.Dim, d.ClassNames)
	}
}

func TestSetCSV(t *testing.T) {
	o := DefaultLoadOptions()
	if err := o.SetCSV("-1", "yes", "tab"); err != nil || o.CSV.LabelCol != -1 || o.CSV.Comma != '\t' || o.CSV.LabelName != "" {
		t.Fatalf("-1, yes, tab: %+v %v", o.CSV, err)
	}
	if err := o.SetCSV("label", "auto", ";"); err != nil || o.CSV.LabelName != "label" || o.CSV.Comma != ';' {
		t.Fatalf("label, auto, ;: %+v %v", o.CSV, err)
	}
	if err := o.SetCSV("0", "maybe", ","); err == nil || !strings.Contains(err.Error(), "header") {
		t.Errorf("header maybe: %v", err)
	}
	if err := o.SetCSV("0", "no", ",,"); err == nil || !strings.Contains(err.Error(), "sep") {
		t.Errorf("sep ,,: %v", err)
	}
}

// TestLibSVMDenseBound: a libsvm file whose largest index would need a
// dense matrix out of proportion to it is refused on the line of that
// index, before anything is sized by it; a width set in the options, or
// a matrix within MinDense, is read.
func TestLibSVMDenseBound(t *testing.T) {
	for _, c := range []struct {
		text string
		o    LibSVMOptions
		want string
	}{
		{"1 1:1\n\n2 268435455:1\n1 2:1\n", DefaultLibSVMOptions(),
			"t.svm:3: feature index 268435455: 2 samples × 268435456 features = 536870912 dense values for 2 index:value pairs, more than 16777216, the larger of 16777216 and 64× the pairs: is this sparse data?"},
		{"1 1:1\n1 99999999999:1\n", DefaultLibSVMOptions(),
			"t.svm:2: feature index 99999999999: more features than the dense limit of 536870912 values"},
		{"1 1:1\n1 1000:1\n", LibSVMOptions{IndexBase: -1, MaxValues: 1500},
			"t.svm:2: feature index 1000: 2 samples × 1001 features = 2002 dense values, more than the dense limit of 1500"},
	} {
		_, err := ReadLibSVM(strings.NewReader(c.text), "t.svm", c.o)
		if err == nil || err.Error() != c.want {
			t.Errorf("%q: %v\nwant %s", c.text, err, c.want)
		}
	}
	// Within MinDense, or with the width given, a sparse file is read.
	if d, err := ReadLibSVM(strings.NewReader("1 1:1\n2 100000:1\n"), "t.svm", DefaultLibSVMOptions()); err != nil || d.Dim != 100000 {
		t.Errorf("within MinDense: %v", err)
	}
	if d, err := ReadLibSVM(strings.NewReader("1 1:1\n2 20000000:1\n"), "t.svm", LibSVMOptions{IndexBase: 1, Dim: 20000000}); err != nil || d.Dim != 20000000 {
		t.Errorf("with Dim: %v", err)
	}
}

// TestCSVLabelReported: the dataset says which column its labels came
// from, by number and by header name, and a wide header's columns are
// listed in part.
func TestCSVLabelReported(t *testing.T) {
	for _, tc := range []struct {
		in   string
		opt  CSVOptions
		col  int
		name string
	}{
		{"a,b,Class\n1,2,x\n", CSVOptions{LabelAuto: true}, 2, "Class"},
		{"1,2,x\n", CSVOptions{LabelCol: -1}, 2, ""},
		{"a,b,c\n1,2,3\n", CSVOptions{LabelCol: 1, Header: HeaderYes}, 1, "b"},
		{"1,2\n", CSVOptions{LabelAuto: true}, 0, ""},
	} {
		d, err := ReadCSV(strings.NewReader(tc.in), "f", tc.opt)
		if err != nil || d.LabelCol != tc.col || d.LabelName != tc.name || d.Format != FormatCSV {
			t.Errorf("%q: %v; label column %d %q (%s), want %d %q", tc.in, err, d.LabelCol, d.LabelName, d.Format, tc.col, tc.name)
		}
	}
	var head, row []string
	for c := range 20 {
		head, row = append(head, fmt.Sprintf("p%d", c)), append(row, "1")
	}
	_, err := ReadCSV(strings.NewReader(strings.Join(head, ",")+"\n"+strings.Join(row, ",")+"\n"), "f", DefaultCSVOptions())
	if err == nil || !strings.Contains(err.Error(), `10 "p10", 11 "p11", … (20 columns)`) || strings.Contains(err.Error(), "p12") {
		t.Errorf("a wide header: %v", err)
	}
}

// TestScaler: the training set's features come out with mean 0 and
// standard deviation 1 (a constant feature centred), and a test set is
// scaled by the training set's statistics, checked by hand.
func TestScaler(t *testing.T) {
	train, err := New([]float32{0, 5, 16, 2, 5, 4, 8, 5, 0}, []int{0, 1, 0}, 3, 2)
	if err != nil {
		t.Fatal(err)
	}
	s := FitScaler(train)
	// Feature 0: 0, 2, 8: mean 10/3, variance (100/9 + 16/9 + 196/9)/3 = 104/9.
	if math.Abs(s.Mean[0]-10.0/3) > 1e-12 || math.Abs(s.Std[0]-math.Sqrt(104.0/9)) > 1e-12 || s.Mean[1] != 5 || s.Std[1] != 1 {
		t.Fatalf("mean %v std %v", s.Mean, s.Std)
	}
	got, err := s.Apply(train)
	if err != nil {
		t.Fatal(err)
	}
	for j := range 3 {
		var m, v float64
		for i := range 3 {
			m += float64(got.Row(i)[j]) / 3
		}
		for i := range 3 {
			x := float64(got.Row(i)[j]) - m
			v += x * x / 3
		}
		if math.Abs(m) > 1e-6 || j != 1 && math.Abs(v-1) > 1e-6 || j == 1 && v != 0 {
			t.Errorf("feature %d: mean %v variance %v after scaling", j, m, v)
		}
	}
	if train.Features[0] != 0 || &got.Features[0] == &train.Features[0] {
		t.Fatal("Apply changed its input")
	}
	test, _ := New([]float32{10.0 / 3, 7, 8}, []int{1}, 3, 2)
	ts, err := s.Apply(test)
	if err != nil || math.Abs(float64(ts.Features[0])) > 1e-6 || ts.Features[1] != 2 || ts.Features[2] != float32((8-20.0/3)/s.Std[2]) {
		t.Fatalf("test set scaled to %v (%v)", ts.Features, err)
	}
	if _, err := s.Apply(&Dataset{Dim: 2, Source: "t"}); err == nil || !strings.Contains(err.Error(), "t: 2 features per sample, the standardisation has 3") {
		t.Fatalf("another dimension: %v", err)
	}
}

// TestLoadByteOrderMark: a UTF-8 byte order mark at the start of a
// libsvm or CSV file is not data: the file loads as it does without
// one, its format detected behind the mark. Before, a libsvm file's
// first label "\ufeff1" was no number, one that starts with a comment
// was taken for CSV, and a quoted CSV header had a bare quote.
func TestLoadByteOrderMark(t *testing.T) {
	dir := t.TempDir()
	for name, data := range map[string]string{
		"d.svm": "1 1:0.5 2:2\n0 1:1 2:3\n",
		"d.csv": "label,a,b\n1,0.5,2\n0,1,3\n",
		// Detected after the mark: a comment first, a quoted header.
		"c.svm": "# two samples\n1 1:0.5 2:2\n0 1:1 2:3\n",
		"q.csv": "\"label\",\"a\",\"b\"\n1,0.5,2\n0,1,3\n",
	} {
		plain, marked := filepath.Join(dir, name), filepath.Join(dir, "bom-"+name)
		if err := os.WriteFile(plain, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(marked, []byte("\ufeff"+data), 0o644); err != nil {
			t.Fatal(err)
		}
		opt := LoadOptions{CSV: CSVOptions{LabelAuto: true}}
		want, err := Load(plain, opt)
		if err != nil {
			t.Fatal(err)
		}
		got, err := Load(marked, opt)
		if err != nil {
			t.Fatalf("%s with a byte order mark: %v", name, err)
		}
		if !reflect.DeepEqual(got.Features, want.Features) || !reflect.DeepEqual(got.Labels, want.Labels) || !reflect.DeepEqual(got.ClassNames, want.ClassNames) {
			t.Errorf("%s with a byte order mark: %+v, want %+v", name, got, want)
		}
	}
}
