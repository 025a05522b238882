package graph

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
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
	for name, data := range map[string][]byte{"plain": []byte(text), "gzip": gzipBytes(t, []byte(text))} {
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

// TestSplitLines checks where the ranges of lines start: after the first
// newline at or after each share's offset, every line in one range, a
// range empty when a line covers its share, and compressed input refused.
func TestSplitLines(t *testing.T) {
	path := writeTemp(t, "lines.txt", []byte("ab\ncd\nef"))
	for _, c := range []struct {
		count int
		want  []LineRange
	}{
		{1, []LineRange{{0, 8, 8}}},
		{2, []LineRange{{0, 6, 8}, {6, 8, 8}}},
		{3, []LineRange{{0, 3, 8}, {3, 6, 8}, {6, 8, 8}}},
		{8, []LineRange{{0, 3, 8}, {3, 3, 8}, {3, 6, 8}, {6, 6, 8}, {6, 6, 8}, {6, 8, 8}, {8, 8, 8}, {8, 8, 8}}},
	} {
		for r, want := range c.want {
			got, err := SplitLines(path, r, c.count)
			if err != nil || got != want {
				t.Errorf("range %d of %d: %v, %v; want %v", r, c.count, got, err, want)
			}
		}
	}
	gz := writeTemp(t, "lines.txt.gz", gzipBytes(t, []byte("1 2\n3 4\n")))
	if _, err := SplitLines(gz, 0, 2); !errors.Is(err, ErrCompressed) {
		t.Errorf("a compressed file: %v, want ErrCompressed", err)
	}
	if _, _, err := StreamRange(gz, DefaultLoadOptions(), LineRange{Begin: 0, End: 4}, Visitor{}); !errors.Is(err, ErrCompressed) {
		t.Errorf("a compressed file streamed by range: %v, want ErrCompressed", err)
	}
}

// TestStreamRangeIsStream checks that the records of the ranges, one
// after the other, are Stream's, and that a malformed line in a range is
// reported with its line number in the file.
func TestStreamRangeIsStream(t *testing.T) {
	data := "# head\n1 1:1 3:1\n\n-1 2:1\n1 7:1 2:1 # c\n1 4:1\n1 5:1"
	path := writeTemp(t, "s.svm", []byte(data))
	var want [][]uint64
	if _, err := Stream(path, DefaultLoadOptions(), Visitor{Sample: func(ids []uint64) error {
		want = append(want, slices.Clone(ids))
		return nil
	}}); err != nil {
		t.Fatal(err)
	}
	for count := 1; count <= 6; count++ {
		var got [][]uint64
		records := 0
		for r := range count {
			lr, err := SplitLines(path, r, count)
			if err != nil {
				t.Fatal(err)
			}
			f, n, err := StreamRange(path, DefaultLoadOptions(), lr, Visitor{Sample: func(ids []uint64) error {
				got = append(got, slices.Clone(ids))
				return nil
			}})
			if err != nil || f != FormatLibSVM {
				t.Fatalf("%d ranges: range %d: %v, %v", count, r, f, err)
			}
			records += n
		}
		if !slices.EqualFunc(got, want, slices.Equal) || records != len(want) {
			t.Errorf("%d ranges: %v (%d records), want %v", count, got, records, want)
		}
	}
	bad := writeTemp(t, "bad.svm", []byte("1 1:1\n1 2:1\n\n1 3:1\n1 x:1\n1 4:1\n"))
	for count := 1; count <= 4; count++ {
		found := false
		for r := range count {
			lr, _ := SplitLines(bad, r, count)
			_, _, err := StreamRange(bad, DefaultLoadOptions(), lr, Visitor{})
			if pe, ok := errors.AsType[*ParseError](err); ok {
				found = true
				if pe.Line != 5 || pe.File != bad {
					t.Errorf("%d ranges: %v, want line 5 of %s", count, err, bad)
				}
			} else if err != nil {
				t.Errorf("%d ranges: %v", count, err)
			}
		}
		if !found {
			t.Errorf("%d ranges: the malformed line was not reported", count)
		}
	}
}

func gzipBytes(t *testing.T, data []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	if _, err := zw.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestStreamRangeTruncated: a file cut shorter after its ranges were cut
// is an error naming the file, not a range read short in silence.
func TestStreamRangeTruncated(t *testing.T) {
	path := writeTemp(t, "edges.txt", []byte("1 2\n3 4\n5 6\n7 8\n"))
	lr, err := SplitLines(path, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, 8); err != nil {
		t.Fatal(err)
	}
	opt := DefaultLoadOptions()
	opt.Format = FormatSNAP
	_, _, err = StreamRange(path, opt, lr, Visitor{})
	if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "changed") {
		t.Errorf("error %v, want one naming %s and saying it changed", err, path)
	}
}

// TestDecompressed checks the copy of a compressed file that processes
// read by ranges: its content is the file's, a plain file gives none, a
// truncated stream is an error that leaves no copy behind, and errors
// read from the copy name the compressed file (LoadOptions.Name) with
// the line numbers of both.
func TestDecompressed(t *testing.T) {
	text := "1 3:1 5:1\n-1 2:1 4:1\n1 1:1 9:x\n"
	z := gzipBytes(t, []byte(text))
	gz := writeTemp(t, "d.svm.gz", z)
	dir := t.TempDir()
	for path, want := range map[string]bool{gz: true, writeTemp(t, "d.svm", []byte(text)): false} {
		if c, err := Compressed(path); err != nil || c != want {
			t.Errorf("Compressed(%s) = %v, %v; want %v", path, c, err, want)
		}
	}
	plain, err := Decompressed(gz, dir)
	if err != nil || plain == "" || filepath.Dir(plain) != dir {
		t.Fatalf("Decompressed = %q, %v", plain, err)
	}
	if got, err := os.ReadFile(plain); err != nil || string(got) != text {
		t.Fatalf("the copy holds %q (%v), want %q", got, err, text)
	}
	if p, err := Decompressed(writeTemp(t, "p.svm", []byte(text)), dir); p != "" || err != nil {
		t.Errorf("a plain file: %q, %v; want nothing", p, err)
	}
	cut := writeTemp(t, "cut.svm.gz", z[:len(z)-6])
	empty := t.TempDir()
	if _, err := Decompressed(cut, empty); err == nil {
		t.Error("a truncated gzip decompressed without an error")
	}
	if left, _ := os.ReadDir(empty); len(left) != 0 {
		t.Errorf("a failed copy left %d files", len(left))
	}
	opt := DefaultLoadOptions()
	opt.Name = gz
	_, err = Stream(plain, opt, Visitor{Sample: func([]uint64) error { return nil }})
	if pe, ok := errors.AsType[*ParseError](err); !ok || pe.Line != 3 || !strings.HasPrefix(err.Error(), gz+":3:") {
		t.Errorf("Stream of the copy: %v; want an error at %s:3", err, gz)
	}
	lr, err := SplitLines(plain, 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = StreamRange(plain, opt, lr, Visitor{Sample: func([]uint64) error { return nil }})
	if !strings.HasPrefix(fmt.Sprint(err), gz+":3:") {
		t.Errorf("StreamRange of the copy: %v; want an error at %s:3", err, gz)
	}
}

// TestByteOrderMark: a UTF-8 byte order mark at the start of a text file
// is not data: the file reads as it does without one, by Load (with the
// format detected or given, compressed or not), Stream and StreamRange.
// Before, its format could not be detected and, given, its first label
// "\ufeff-1" was no number.
func TestByteOrderMark(t *testing.T) {
	for _, c := range []struct {
		name, data string
		format     Format
	}{
		{"s.svm", "-1 3:1 11:1\n1 2:1\n1 5:1 3:1\n", FormatLibSVM},
		{"e.txt", "0 1\n1 2\n2 0\n", FormatSNAP},
	} {
		marked := writeTemp(t, c.name, []byte("\ufeff"+c.data))
		want, err := Read(strings.NewReader(c.data), marked, DefaultLoadOptions())
		if err != nil {
			t.Fatal(err)
		}
		for _, format := range []Format{FormatAuto, c.format} {
			opt := DefaultLoadOptions()
			opt.Format = format
			g, err := Load(marked, opt)
			if err != nil {
				t.Fatalf("%s, format %q: %v", c.name, format, err)
			}
			if err := equalGraphs(want, g); err != nil {
				t.Errorf("%s, format %q: %v", c.name, format, err)
			}
			h, err := Read(bytes.NewReader(gzipBytes(t, []byte("\ufeff"+c.data))), marked, opt)
			if err != nil {
				t.Fatalf("%s gzipped, format %q: %v", c.name, format, err)
			}
			if err := equalGraphs(want, h); err != nil {
				t.Errorf("%s gzipped, format %q: %v", c.name, format, err)
			}
		}
		if c.format != FormatLibSVM {
			continue
		}
		var streamed [][]uint64
		if _, err := Stream(marked, DefaultLoadOptions(), Visitor{Sample: func(ids []uint64) error {
			streamed = append(streamed, slices.Clone(ids))
			return nil
		}}); err != nil {
			t.Fatal(err)
		}
		for count := 1; count <= 3; count++ {
			var got [][]uint64
			for r := range count {
				lr, err := SplitLines(marked, r, count)
				if err != nil {
					t.Fatal(err)
				}
				if _, _, err := StreamRange(marked, DefaultLoadOptions(), lr, Visitor{Sample: func(ids []uint64) error {
					got = append(got, slices.Clone(ids))
					return nil
				}}); err != nil {
					t.Fatalf("%d ranges: range %d: %v", count, r, err)
				}
			}
			if len(streamed) != 3 || !slices.EqualFunc(got, streamed, slices.Equal) {
				t.Errorf("%d ranges: %v, Stream %v", count, got, streamed)
			}
		}
	}
}
