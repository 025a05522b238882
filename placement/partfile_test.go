package placement

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"colo/graph"
)

func TestPartFilesRoundTrip(t *testing.T) {
	g, err := graph.Sparse(graph.SparseConfig{Samples: 50, Params: 40, Gamma: 0.8, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	p := Uniform(g, 3, NewRand(1))
	var d, q bytes.Buffer
	if err := WriteDataPart(&d, p); err != nil {
		t.Fatal(err)
	}
	if err := WriteParamPart(&q, g, p); err != nil {
		t.Fatal(err)
	}
	data, k, err := ReadDataPart(&d, "data.part", g.NumSamples(), 0)
	if err != nil {
		t.Fatal(err)
	}
	param, err := ReadParamPart(&q, "param.part", g, p.K)
	if err != nil {
		t.Fatal(err)
	}
	if k != 3 || !reflect.DeepEqual(data, p.Data) || !reflect.DeepEqual(param, p.Param) {
		t.Fatalf("round trip changed the placement (k=%d)", k)
	}
}

func TestReadPartErrors(t *testing.T) {
	g, _ := graph.FromAdjacency(3, [][]uint32{{0, 1}, {2}, {1}})
	cases := []struct {
		name, data, param, want string
	}{
		{name: "too few lines", data: "0\n1\n", want: "d.part: 2 lines for 3 samples"},
		{name: "too many lines", data: "0\n1\n0\n1\n", want: "d.part:4: more lines than the 3 samples"},
		{name: "not a number", data: "0\nx\n1\n", want: `d.part:2: "x": want a machine number in 0..1`},
		{name: "out of range", data: "0\n2\n1\n", want: `d.part:2: "2": want a machine number in 0..1`},
		{name: "negative", data: "0\n-1\n1\n", want: `d.part:2: "-1"`},
		{name: "two fields", data: "0 1\n0\n1\n", want: "d.part:1: \"0 1\": want one machine number per line"},
		{name: "param unknown id", param: "0 0\n7 1\n", want: "p.part:2: parameter 7 does not occur"},
		{name: "param twice", param: "0 0\n0 1\n", want: "p.part:2: parameter 0 assigned twice"},
		{name: "param missing", param: "0 0\n1 1\n", want: "p.part: 1 of 3 parameters have no machine, first 2"},
		{name: "param bad machine", param: "0 0\n1 5\n2 1\n", want: `p.part:2: "5": want a machine number in 0..1`},
		{name: "param mixed columns", param: "0 0\n1\n", want: "p.part:2"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			if tc.data != "" {
				_, _, err = ReadDataPart(strings.NewReader(tc.data), "d.part", 3, 2)
			} else {
				_, err = ReadParamPart(strings.NewReader(tc.param), "p.part", g, 2)
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestReadParamPartOneColumn(t *testing.T) {
	g, _ := graph.FromAdjacency(3, [][]uint32{{0, 1}, {2}})
	param, err := ReadParamPart(strings.NewReader("1\n0\n\n1\n"), "p", g, 2)
	if err != nil || !reflect.DeepEqual(param, []int32{1, 0, 1}) {
		t.Fatalf("got %v, %v", param, err)
	}
}

func TestWriteDirAtomic(t *testing.T) {
	g, _ := graph.FromAdjacency(2, [][]uint32{{0}, {1}})
	p := &Placement{K: 2, Data: []int32{0, 1}, Param: []int32{1, 0}}
	dir := filepath.Join(t.TempDir(), "out")
	if err := WriteDir(dir, g, p, map[string]int{"k": 2}); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if !reflect.DeepEqual(names, []string{DataPartFile, ParamPartFile, SummaryFile}) {
		t.Fatalf("files %v", names)
	}
	b, _ := os.ReadFile(filepath.Join(dir, ParamPartFile))
	if string(b) != "0 1\n1 0\n" {
		t.Fatalf("param.part = %q", b)
	}
	// A summary that cannot be encoded fails before anything is written.
	dir2 := filepath.Join(t.TempDir(), "bad")
	if err := WriteDir(dir2, g, p, map[string]any{"x": func() {}}); err == nil {
		t.Fatal("want an error for an unencodable summary")
	}
	if _, err := os.Stat(filepath.Join(dir2, SummaryFile)); err == nil {
		t.Fatal("summary written despite the error")
	}
}

func TestReadDirRoundTrip(t *testing.T) {
	g, err := graph.Sparse(graph.SparseConfig{Samples: 60, Params: 45, Gamma: 0.8, Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []int{1, 3, 7} {
		p := Uniform(g, k, NewRand(uint64(k)))
		dir := filepath.Join(t.TempDir(), "p")
		if err := WriteDir(dir, g, p, map[string]int{"k": k}); err != nil {
			t.Fatal(err)
		}
		for _, arg := range []int{k, 0} {
			q, err := ReadDir(dir, g, arg)
			if err != nil {
				t.Fatalf("k=%d, ReadDir k=%d: %v", k, arg, err)
			}
			if !reflect.DeepEqual(q, p) {
				t.Fatalf("k=%d, ReadDir k=%d: placement changed in the round trip", k, arg)
			}
		}
	}
}

func TestReadDirErrors(t *testing.T) {
	g, _ := graph.FromAdjacency(3, [][]uint32{{0, 1}, {2}, {1}})
	cases := []struct {
		name        string
		data, param string // file contents; "" for a missing file
		k           int
		want        string // with "DIR" for the directory
	}{
		{"no data.part", "", "0 0\n1 0\n2 1\n", 2, "DIR/data.part: no such file"},
		{"no param.part", "0\n1\n0\n", "", 2, "DIR/param.part: no such file"},
		{"data.part bad line", "0\nx\n1\n", "0 0\n1 0\n2 1\n", 0, `DIR/data.part:2: "x"`},
		{"data.part machine beyond k", "0\n3\n1\n", "0 0\n1 0\n2 1\n", 2, `DIR/data.part:2: "3": want a machine number in 0..1`},
		{"param.part beyond data's k", "0\n1\n0\n", "0 0\n1 2\n2 1\n", 0, `DIR/param.part:2: "2": want a machine number in 0..1`},
		{"param.part missing a parameter", "0\n1\n0\n", "0 0\n2 1\n", 2, "DIR/param.part: 1 of 3 parameters have no machine, first 1"},
		{"negative k", "0\n1\n0\n", "0 0\n1 0\n2 1\n", -1, "k = -1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, text := range map[string]string{DataPartFile: tc.data, ParamPartFile: tc.param} {
				if text != "" {
					if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
						t.Fatal(err)
					}
				}
			}
			want := strings.ReplaceAll(tc.want, "DIR", dir)
			p, err := ReadDir(dir, g, tc.k)
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("got %v, %v; want an error containing %q", p, err, want)
			}
		})
	}
}

// TestLoadDataPartPrefix: a placement of the first samples of a dataset
// that grew is read; one of more samples than the dataset is refused.
func TestLoadDataPartPrefix(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, DataPartFile), []byte("0\n1\n\n1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	data, err := LoadDataPartPrefix(dir, 5, 2)
	if err != nil || len(data) != 3 || data[0] != 0 || data[2] != 1 {
		t.Fatalf("prefix of 5: %v %v", data, err)
	}
	if _, err := LoadDataPartPrefix(dir, 2, 2); err == nil || !strings.Contains(err.Error(), "3 samples, more than the 2") {
		t.Errorf("3 samples for a dataset of 2: %v", err)
	}
	if _, err := LoadDataPartPrefix(dir, 5, 1); err == nil {
		t.Error("machine 1 of 1 accepted")
	}
}
