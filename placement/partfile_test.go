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
