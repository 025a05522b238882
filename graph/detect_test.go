package graph

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"colo/internal/decompress/ztest"
	"colo/internal/textio"
)

func TestDetectFormat(t *testing.T) {
	criteo := "0\t1\t1\t5\t0\t1382\t4\t15\t2\t181\t1\t2\t\t2\t68fd1e64\t80e26c9b\n"
	tests := []struct {
		name string
		head string
		want Format
	}{
		{"libsvm", "1 3:1 5:0.5\n", FormatLibSVM},
		{"libsvm with comments", "# svmlight\n\n% x\n-1 qid:2 3:1 # c\n", FormatLibSVM},
		{"libsvm label only", "+1\n-1 3:1\n", FormatLibSVM},
		{"libsvm CRLF", "1 3:1\r\n", FormatLibSVM},
		{"libsvm cut line", "1 3:1 5:0.", FormatLibSVM},
		{"libsvm cut at colon", "1 3:1 15:", FormatLibSVM},
		{"snap with header", "# Directed graph\n# Nodes: 3 Edges: 2\n# FromNodeId\tToNodeId\n0\t1\n1\t2\n", FormatSNAP},
		{"snap spaces", "0 1\n", FormatSNAP},
		{"snap no newline", "10 20", FormatSNAP},
		{"criteo", criteo, FormatCriteo},
		{"criteo missing trailing fields", "1\t\t\t\t\t\t\t\t\t\t\t\t\t\n", FormatCriteo},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DetectFormat([]byte(tt.head))
			if err != nil || got != tt.want {
				t.Errorf("DetectFormat = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestDetectFormatErrors(t *testing.T) {
	tests := []struct {
		name string
		head string
		want string
	}{
		{"text", "# c\nhello world\n", `first data line 2: "hello world" is not libsvm`},
		{"three integers", "1 2 3\n", `first data line 1: "1 2 3"`},
		{"negative edge", "-1 2\n", `"-1 2"`},
		{"bad pair", "1 3:x\n", `"1 3:x"`},
		{"criteo label 2", "2\t1\t1\t1\t1\t1\t1\t1\t1\t1\t1\t1\t1\t1\n", "pass --format"},
		{"csv", "a,b,c\n1,2,3\n", "pass --format"},
		{"only comments", "# nothing\n\n", "no data line"},
		{"empty", "", "no data line"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DetectFormat([]byte(tt.head))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("DetectFormat = %q, %v; want an error containing %q", got, err, tt.want)
			}
		})
	}
}

// TestLoadDirectory: a directory given for the data file is refused by
// every reader of a path, naming it as a directory, before any read.
func TestLoadDirectory(t *testing.T) {
	dir := t.TempDir()
	want := "open " + dir + ": is a directory, want a file"
	_, err := Load(dir, DefaultLoadOptions())
	check := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, textio.ErrIsDir) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error containing %q", what, err, want)
		}
	}
	check("Load", err)
	_, err = Stream(dir, DefaultLoadOptions(), Visitor{})
	check("Stream", err)
	_, err = SplitLines(dir, 0, 2)
	check("SplitLines", err)
	_, err = Compressed(dir)
	check("Compressed", err)
	_, err = ReadBinaryFile(dir)
	check("ReadBinaryFile", err)
}

// TestLoadDetects loads each testdata file, plain and compressed, with the
// format detected.
func TestLoadDetects(t *testing.T) {
	tests := []struct {
		file   string
		format string
		n      int
		edges  int64
	}{
		{"small.svm", "libsvm", 4, 7},
		{"small.svm.bz2", "libsvm", 4, 7},
		{"edges.txt", "snap", 4, 5},
		{"small.tsv", "criteo", 2, 9},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			path := filepath.Join("testdata", tt.file)
			g, err := Load(path, DefaultLoadOptions())
			if err != nil {
				t.Fatal(err)
			}
			if g.NumSamples() != tt.n || g.NumEdges() != tt.edges || g.Meta().Format != tt.format || g.Meta().Source != path {
				t.Errorf("got %v, meta %+v; want %d samples, %d edges, format %s", g, g.Meta(), tt.n, tt.edges, tt.format)
			}
			if err := g.Validate(); err != nil {
				t.Fatal(err)
			}
			plain, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if strings.HasSuffix(path, ".bz2") {
				return
			}
			for kind, compress := range ztest.Compressors() {
				z, err := compress(plain)
				if err != nil {
					t.Fatal(err)
				}
				h, err := Read(bytes.NewReader(z), path, DefaultLoadOptions())
				if err != nil {
					t.Fatalf("%s: %v", kind, err)
				}
				if err := equalGraphs(g, h); err != nil {
					t.Errorf("%s: %v", kind, err)
				}
			}
		})
	}
}

func TestReadExplicitFormat(t *testing.T) {
	opt := DefaultLoadOptions()
	opt.Format = FormatSNAPUndirected
	g, err := Read(strings.NewReader("1 2\n"), "u.txt", opt)
	if err != nil {
		t.Fatal(err)
	}
	if g.NumEdges() != 2 || g.Meta().Format != "snap-undirected" {
		t.Errorf("got %v, meta %+v", g, g.Meta())
	}
	// A libsvm file read as SNAP fails at its first line.
	opt.Format = FormatSNAP
	_, err = Read(strings.NewReader("1 3:1\n"), "x.svm", opt)
	checkParseError(t, err, "x.svm", 1, 2, `"3:1": want a non-negative integer node id`)
}

// TestReadEmpty checks that input without samples is the same error for
// every format, detected or not, plain or compressed.
func TestReadEmpty(t *testing.T) {
	inputs := map[string]string{"empty": "", "blank": "\n\n", "comments": "# Nodes: 0 Edges: 0\n"}
	for _, format := range []Format{FormatAuto, FormatLibSVM, FormatSNAP, FormatSNAPUndirected, FormatCriteo} {
		for kind, in := range inputs {
			if format == FormatCriteo && kind == "comments" {
				continue // Criteo has no comment lines
			}
			opt := DefaultLoadOptions()
			opt.Format = format
			_, err := Read(strings.NewReader(in), "e.dat", opt)
			if err == nil || err.Error() != "e.dat: empty: no samples" {
				t.Errorf("format %q, %s input: err = %v", format, kind, err)
			}
			z, err := ztest.Compressors()["gzip"]([]byte(in))
			if err != nil {
				t.Fatal(err)
			}
			_, err = Read(bytes.NewReader(z), "e.dat.gz", opt)
			if err == nil || err.Error() != "e.dat.gz: empty: no samples" {
				t.Errorf("format %q, gzip %s input: err = %v", format, kind, err)
			}
		}
	}
}

func TestReadUnknownFormat(t *testing.T) {
	_, err := Read(strings.NewReader("a,b,c\n"), "x.csv", DefaultLoadOptions())
	want := `cannot detect the format of x.csv: first data line 1: "a,b,c" is not libsvm`
	if err == nil || !strings.HasPrefix(err.Error(), want) || !strings.HasSuffix(err.Error(), "pass --format") {
		t.Errorf("err = %v, want %q...pass --format", err, want)
	}
	big := strings.Repeat("# comment\n", 10000)
	_, err = Read(strings.NewReader(big+"1 1:1\n"), "c.svm", DefaultLoadOptions())
	if err == nil || !strings.Contains(err.Error(), "c.svm: no data line in the first 64 KB") {
		t.Errorf("err = %v", err)
	}
}

func TestReadBadOptions(t *testing.T) {
	opt := DefaultLoadOptions()
	opt.Format = "csv"
	if _, err := Read(strings.NewReader("1 1:1\n"), "o.svm", opt); err == nil || !strings.HasPrefix(err.Error(), `o.svm: unknown format "csv"`) {
		t.Errorf("err = %v", err)
	}
	if _, err := Load(filepath.Join("testdata", "missing.svm"), DefaultLoadOptions()); !errors.Is(err, os.ErrNotExist) ||
		!strings.Contains(err.Error(), "missing.svm") {
		t.Errorf("err = %v", err)
	}
}

// TestReadTruncated cuts compressed libsvm files and checks that reading
// fails with the file name and the line being read, for every compression
// and both small files (cut before the format is detected) and large ones.
func TestReadTruncated(t *testing.T) {
	lineErr := regexp.MustCompile(`^cut\.svm\.z:[0-9]+: read: `)
	for _, lines := range []int{20, 20000} {
		text := testText(lines)
		for kind, compress := range ztest.Compressors() {
			z, err := compress(text)
			if err != nil {
				t.Fatal(err)
			}
			for _, cut := range []int{len(z) / 3, len(z) / 2, len(z) - 20, len(z) - 1} {
				for _, format := range []Format{FormatAuto, FormatLibSVM} {
					opt := DefaultLoadOptions()
					opt.Format = format
					g, err := Read(bytes.NewReader(z[:cut]), "cut.svm.z", opt)
					if err == nil {
						t.Errorf("%s, %d lines, cut at %d/%d: read %v without error", kind, lines, cut, len(z), g)
						continue
					}
					if !lineErr.MatchString(err.Error()) {
						t.Errorf("%s, %d lines, cut at %d/%d: error %q lacks file:line", kind, lines, cut, len(z), err)
					}
					if !errors.Is(err, io.ErrUnexpectedEOF) && !strings.Contains(err.Error(), kind) {
						t.Errorf("%s: error %q", kind, err)
					}
				}
			}
		}
	}
}

// testText returns a libsvm text of n lines.
func testText(n int) []byte {
	var b bytes.Buffer
	for i := range n {
		fmt.Fprintf(&b, "%d %d:1 %d:0.5 %d:2\n", i%2, i%7+1, i%11+8, i%13+20)
	}
	return b.Bytes()
}

// TestIDXHint: an idx file (MNIST's images or labels, raw or gzip'd)
// given where sparse text is read is named as one, with what to use
// instead; bytes that only look alike are not taken for one.
func TestIDXHint(t *testing.T) {
	images := []byte{0, 0, 0x08, 3, 0, 0, 0x27, 0x10, 0, 0, 0, 28, 0, 0, 0, 28}
	images = append(images, make([]byte, 100)...)
	labels := append([]byte{0, 0, 0x08, 1, 0, 0, 0xea, 0x60}, 5, 0, 4, 1, 9, 2)
	var gz bytes.Buffer
	w := gzip.NewWriter(&gz)
	w.Write(images)
	w.Close()
	for _, c := range []struct {
		name string
		data []byte
		want string
	}{
		{"images", images, "images is an idx image file (10000 images of 28×28, MNIST's binary format), not sparse text: train it with --app mlp (or cnn) --labels LABELS-idx1-ubyte"},
		{"images.gz", gz.Bytes(), "images.gz is an idx image file (10000 images of 28×28"},
		{"labels", labels, "labels is an idx label file (60000 labels, MNIST's binary format), not sparse text: give it to --labels beside its images: colo train IMAGES-idx3-ubyte --app mlp --labels labels"},
		{"type 0x0A", []byte{0, 0, 0x0A, 1, 0, 0, 0, 1, 7}, ""},
		{"5 dimensions", []byte{0, 0, 0x08, 5, 0, 0, 0, 1, 7}, ""},
	} {
		_, err := Read(bytes.NewReader(c.data), c.name, DefaultLoadOptions())
		switch {
		case c.want == "" && (err == nil || strings.Contains(err.Error(), "is an idx")):
			t.Errorf("%s: %v, want an error that is no idx hint", c.name, err)
		case c.want != "" && (err == nil || !strings.HasPrefix(err.Error(), c.want)):
			t.Errorf("%s: %v\nwant %s", c.name, err, c.want)
		}
	}
}
