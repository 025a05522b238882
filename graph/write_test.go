package graph

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

func TestWriteHMetis(t *testing.T) {
	// Samples 0 {0, 2}, 1 {}, 2 {1, 2, 4}; parameter 3 unused.
	g, err := FromAdjacency(5, [][]uint32{{2, 0}, {}, {4, 1, 2}})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := WriteHMetis(&out, g); err != nil {
		t.Fatal(err)
	}
	// Nets are parameters 0, 1, 2, 4 (3 has no sample); vertices from 1.
	want := "4 3\n1\n3\n1 3\n3\n"
	if out.String() != want {
		t.Errorf("got %q, want %q", out.String(), want)
	}
}

func TestWriteHMetisFile(t *testing.T) {
	g, err := Load("testdata/edges.txt", DefaultLoadOptions())
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := WriteHMetis(&out, g); err != nil {
		t.Fatal(err)
	}
	// Edges 0→1, 0→2, 1→2, 2→0, 3→3: net v lists the sources of edges into v.
	want := "4 4\n3\n1\n1 2\n4\n"
	if out.String() != want {
		t.Errorf("got %q, want %q", out.String(), want)
	}
}

func TestWriteLibSVM(t *testing.T) {
	in := "1 3:1 7:0.5\n-1\n2.5 1:-2 3:1e-07\n"
	g, err := ReadLibSVM(strings.NewReader(in), "w.svm", DefaultLoadOptions())
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := WriteLibSVM(&out, g); err != nil {
		t.Fatal(err)
	}
	if out.String() != in {
		t.Errorf("got %q, want %q", out.String(), in)
	}
	// A graph without labels or values.
	h, err := FromAdjacency(3, [][]uint32{{0, 2}, {1}})
	if err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := WriteLibSVM(&out, h); err != nil {
		t.Fatal(err)
	}
	if want := "0 0:1 2:1\n0 1:1\n"; out.String() != want {
		t.Errorf("got %q, want %q", out.String(), want)
	}
}

func TestAppendFloat32(t *testing.T) {
	for _, v := range []float32{0, 1, -1, 0.1, 1e-45, 3.4028235e38, 16777217, 0.3333333, 1.0000001} {
		s := string(appendFloat32(nil, v))
		f, ok := parseFloat([]byte(s))
		if !ok || float32(f) != v {
			t.Errorf("%v written as %q reads as %v", v, s, float32(f))
		}
	}
}

// failWriter fails every write.
type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestWriteErrors(t *testing.T) {
	// Large enough to overflow the write buffer before the final flush.
	rows := make([][]uint32, 20000)
	for i := range rows {
		rows[i] = []uint32{uint32(i % 100), 100 + uint32(i%7)}
	}
	g, err := FromAdjacency(200, rows)
	if err != nil {
		t.Fatal(err)
	}
	small, err := FromAdjacency(1, [][]uint32{{0}})
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range []*Graph{g, small} {
		if err := WriteHMetis(failWriter{}, g); err == nil || !strings.Contains(err.Error(), "disk full") {
			t.Errorf("WriteHMetis: err = %v", err)
		}
		if err := WriteLibSVM(failWriter{}, g); err == nil || !strings.Contains(err.Error(), "disk full") {
			t.Errorf("WriteLibSVM: err = %v", err)
		}
	}
}
