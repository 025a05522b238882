package graph

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"colo/internal/memcap"
)

// binaryCases are graphs of every kind the binary form must keep: values
// and labels (libsvm), sample ids and no labels (SNAP), neither
// (generated power law), and an empty graph.
func binaryCases(t testing.TB) map[string]*Graph {
	t.Helper()
	out := map[string]*Graph{}
	for _, f := range []string{"small.svm", "edges.txt", "small.tsv"} {
		g, err := Load(filepath.Join("testdata", f), DefaultLoadOptions())
		if err != nil {
			t.Fatal(err)
		}
		out[f] = g
	}
	pl, err := PowerLaw(DefaultPowerLaw(500, 3))
	if err != nil {
		t.Fatal(err)
	}
	out["power law"] = pl
	empty, err := FromAdjacency(0, nil)
	if err != nil {
		t.Fatal(err)
	}
	out["empty"] = empty
	return out
}

// TestBinaryRoundTrip: a graph written in its binary form reads back
// equal in every array and its meta, through a file as through memory.
func TestBinaryRoundTrip(t *testing.T) {
	dir := t.TempDir()
	for name, g := range binaryCases(t) {
		var buf bytes.Buffer
		if err := g.WriteBinary(&buf); err != nil {
			t.Fatal(err)
		}
		h, err := ReadBinary(bytes.NewReader(buf.Bytes()), int64(buf.Len()), name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !reflect.DeepEqual(g, h) {
			t.Errorf("%s: read back %v (meta %+v), wrote %v (meta %+v)", name, h, h.meta, g, g.meta)
		}
		path := filepath.Join(dir, strings.ReplaceAll(name, " ", "-")+BinaryExt)
		if err := g.WriteBinaryFile(path); err != nil {
			t.Fatal(err)
		}
		if err := g.WriteBinaryFile(path); err == nil {
			t.Errorf("%s: written over an existing file", name)
		}
		if h, err = ReadBinaryFile(path); err != nil || !reflect.DeepEqual(g, h) {
			t.Errorf("%s: file read back %v, %v", name, h, err)
		}
	}
}

// TestBinaryDamaged: every truncation, a changed count, flag or array
// word of a graph's binary form is an error naming the file, never a
// panic or a graph that differs.
func TestBinaryDamaged(t *testing.T) {
	g := binaryCases(t)["small.svm"]
	var buf bytes.Buffer
	if err := g.WriteBinary(&buf); err != nil {
		t.Fatal(err)
	}
	good := buf.Bytes()
	read := func(b []byte) (*Graph, error) { return ReadBinary(bytes.NewReader(b), int64(len(b)), "g.graph") }
	for k := range len(good) {
		if _, err := read(good[:k]); err == nil || !strings.Contains(err.Error(), "g.graph") {
			t.Fatalf("truncated to %d of %d bytes: %v", k, len(good), err)
		}
	}
	for _, tc := range []struct {
		name string
		at   int
		word uint64
	}{
		{"samples", 8, 1 << 40}, {"parameters", 16, 3}, {"edges", 24, 1 << 47}, {"flags", 32, 64},
		{"index base", 40, 7}, {"format length", 48, 1 << 62},
	} {
		b := bytes.Clone(good)
		binary.LittleEndian.PutUint64(b[tc.at:], tc.word)
		if _, err := read(b); err == nil {
			t.Errorf("%s set to %d: read", tc.name, tc.word)
		}
	}
	// Any byte of the arrays changed: refused, or read as a consistent
	// graph (a value or a label may take another finite value).
	for at := 64; at < len(good); at++ {
		b := bytes.Clone(good)
		b[at] ^= 0x81
		if h, err := read(b); err == nil {
			if verr := h.Validate(); verr != nil {
				t.Fatalf("byte %d changed: read an inconsistent graph: %v", at, verr)
			}
		}
	}
	if _, err := read(append([]byte("COLOGRB2"), good[8:]...)); err == nil || !strings.Contains(err.Error(), "not a graph") {
		t.Errorf("foreign magic: %v", err)
	}
}

func FuzzReadBinary(f *testing.F) {
	memcap.Cap(f, fuzzCap)
	for _, g := range binaryCases(f) {
		var buf bytes.Buffer
		if err := g.WriteBinary(&buf); err != nil {
			f.Fatal(err)
		}
		f.Add(buf.Bytes())
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		g, err := ReadBinary(bytes.NewReader(data), int64(len(data)), "f.graph")
		if err != nil {
			return
		}
		var out bytes.Buffer
		if err := g.WriteBinary(&out); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(out.Bytes(), data) {
			t.Fatal("a graph read does not write back the same bytes")
		}
	})
}

// BenchmarkReadBinary reads 20 Newsgroups' training graph from its
// binary form, beside BenchmarkLoad20News's parse of the text.
func BenchmarkReadBinary20News(b *testing.B) {
	src := filepath.Join("..", "..", "shared", "data", "20news-bydate", "20news-bydate.train.libsvm.xz")
	if _, err := os.Stat(src); err != nil {
		b.Skipf("20 Newsgroups is not in ../shared/data: %v", err)
	}
	g, err := Load(src, DefaultLoadOptions())
	if err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(b.TempDir(), "news"+BinaryExt)
	if err := g.WriteBinaryFile(path); err != nil {
		b.Fatal(err)
	}
	b.Run("text", func(b *testing.B) {
		for b.Loop() {
			if _, err := Load(src, DefaultLoadOptions()); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("binary", func(b *testing.B) {
		for b.Loop() {
			if _, err := ReadBinaryFile(path); err != nil {
				b.Fatal(err)
			}
		}
	})
}
