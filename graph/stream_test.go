package graph

import (
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func writeTemp(t *testing.T, name string, data []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestStreamLibSVM: Stream passes the samples of a (gzip) libsvm file in
// order with the ids Load keeps, sorted.
func TestStreamLibSVM(t *testing.T) {
	text := "1 5:1 2:0.5 9:1\n# comment\n-1 qid:3 2:1\n\n1\n0 7:2 1:1\n"
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	zw.Write([]byte(text))
	zw.Close()
	for name, data := range map[string][]byte{"plain": []byte(text), "gzip": z.Bytes()} {
		t.Run(name, func(t *testing.T) {
			path := writeTemp(t, "d.libsvm", data)
			g, err := Load(path, DefaultLoadOptions())
			if err != nil {
				t.Fatal(err)
			}
			var rows [][]uint64
			format, err := Stream(path, DefaultLoadOptions(), Visitor{Sample: func(ids []uint64) error {
				rows = append(rows, slices.Clone(ids))
				return nil
			}})
			if err != nil || format != FormatLibSVM {
				t.Fatalf("Stream: %v, %v", format, err)
			}
			if len(rows) != g.NumSamples() {
				t.Fatalf("%d samples, Load has %d", len(rows), g.NumSamples())
			}
			for u, row := range rows {
				var want []uint64
				for _, v := range g.Params(u) {
					want = append(want, g.ParamID(int(v)))
				}
				if !slices.Equal(row, want) {
					t.Fatalf("sample %d: %v, Load has %v", u, row, want)
				}
			}
		})
	}
}

// TestStreamSNAP: edges in file order, both ways when undirected, the
// nodes of dropped self-loops apart.
func TestStreamSNAP(t *testing.T) {
	path := writeTemp(t, "e.txt", []byte("# edges\n1 2\n3 3\n2\t1\n"))
	var got []string
	vis := Visitor{
		Edge: func(u, v uint64) error { got = append(got, string(rune('0'+u))+">"+string(rune('0'+v))); return nil },
		Node: func(u uint64) error { got = append(got, "node "+string(rune('0'+u))); return nil },
	}
	opt := DefaultLoadOptions()
	opt.Format, opt.DropSelfLoops = FormatSNAPUndirected, true
	if _, err := Stream(path, opt, vis); err != nil {
		t.Fatal(err)
	}
	if want := "1>2 2>1 node 3 2>1 1>2"; strings.Join(got, " ") != want {
		t.Fatalf("got %q, want %q", strings.Join(got, " "), want)
	}
}

// TestStreamErrors: the loaders' errors, and formats that cannot be
// streamed.
func TestStreamErrors(t *testing.T) {
	for name, text := range map[string]string{
		"bad.libsvm": "1 1:1\n1 2:1 2:3\n",
		"bad.snap":   "1 2\n1 2 3\n",
		"empty.txt":  "# nothing\n",
	} {
		path := writeTemp(t, name, []byte(text))
		_, serr := Stream(path, DefaultLoadOptions(), Visitor{})
		_, lerr := Load(path, DefaultLoadOptions())
		if serr == nil || lerr == nil || serr.Error() != lerr.Error() {
			t.Errorf("%s: Stream %v, Load %v", name, serr, lerr)
		}
	}
	path := writeTemp(t, "r.txt", []byte("1 2 5\n"))
	opt := DefaultLoadOptions()
	opt.Format = FormatRatings
	if _, err := Stream(path, opt, Visitor{}); err == nil || !strings.Contains(err.Error(), "cannot be streamed") {
		t.Fatalf("ratings: %v, want an error", err)
	}
}
