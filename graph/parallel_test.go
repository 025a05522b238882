package graph

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"
)

// libsvmText returns n random libsvm lines with labels, values (some 1),
// indices in any order, comments, blank lines, CRLF endings and a line
// longer than the loader's buffer.
func libsvmText(seed uint64, n int) string {
	rng := rand.New(rand.NewPCG(seed, 1))
	var sb strings.Builder
	for i := range n {
		switch {
		case i%97 == 5:
			sb.WriteString("# a comment\n")
		case i%89 == 7:
			sb.WriteString("\n")
		}
		fmt.Fprintf(&sb, "%d", rng.IntN(3)-1)
		width := 1 + rng.IntN(12)
		if i == n/2 {
			width = 200000 // longer than bufSize
		}
		seen := map[int]bool{}
		for range width {
			id := 1 + rng.IntN(5000+width)
			if seen[id] {
				continue
			}
			seen[id] = true
			if rng.IntN(3) == 0 {
				fmt.Fprintf(&sb, " %d:1", id)
			} else {
				fmt.Fprintf(&sb, " %d:%.3g", id, rng.Float64()*4-2)
			}
		}
		if i%5 == 0 {
			sb.WriteString("\r")
		}
		sb.WriteString("\n")
	}
	return sb.String()
}

// readBoth reads text as one goroutine does and in chunks of about chunk
// bytes on workers goroutines.
func readBoth(t *testing.T, text string, opt LoadOptions, workers, chunk int) (seq *Graph, seqErr error, par *Graph, parErr error) {
	t.Helper()
	read := func(workers int, r io.Reader) (*Graph, error) {
		return readLibSVM(r, "f.svm", opt, workers, chunk, int64(len(text)))
	}
	seq, seqErr = read(1, strings.NewReader(text))
	par, parErr = read(workers, strings.NewReader(text))
	return
}

func TestReadLibSVMChunksEqualsStream(t *testing.T) {
	text := libsvmText(3, 3000)
	for _, workers := range []int{2, 3, 7} {
		for _, chunk := range []int{1, 100, 4096, len(text) / 3, 2 * len(text)} {
			for _, base := range []int{-1, 0} {
				opt := DefaultLoadOptions()
				opt.IndexBase = base
				seq, seqErr, par, parErr := readBoth(t, text, opt, workers, chunk)
				if seqErr != nil || parErr != nil {
					t.Fatalf("%d workers, chunks of %d: errors %v / %v", workers, chunk, seqErr, parErr)
				}
				if !reflect.DeepEqual(seq, par) {
					t.Fatalf("%d workers, chunks of %d, base %d: the graphs differ", workers, chunk, base)
				}
			}
		}
	}
}

func TestReadLibSVMChunksErrorsAsStream(t *testing.T) {
	lines := strings.SplitAfter(libsvmText(4, 2000), "\n")
	late := len(lines) * 9 / 10
	with := func(edits map[int]string) string {
		c := append([]string(nil), lines...)
		for i, line := range edits {
			c[i] = line
		}
		return strings.Join(c, "")
	}
	cases := []struct {
		name string
		text string
		base int
	}{
		{"bad token late", with(map[int]string{late: "1 3:x\n"}), -1},
		{"bad token first line", with(map[int]string{0: "oops 1:1\n"}), -1},
		{"repeated index late", with(map[int]string{late: "1 7:1 9:2 7:3\n"}), -1},
		{"index 0 with base 1, late", with(map[int]string{late: "1 0:1\n"}), 1},
		{"index 0 detects base 0, late", with(map[int]string{late: "1 0:1\n"}), -1},
		{"two errors: the first counts", with(map[int]string{late / 2: "1 4:y\n", late: "1 3:x\n"}), -1},
		{"only comments", strings.Repeat("# nothing here\n", 400), -1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			opt := DefaultLoadOptions()
			opt.IndexBase = tc.base
			seq, seqErr, par, parErr := readBoth(t, tc.text, opt, 5, 512)
			if fmt.Sprint(seqErr) != fmt.Sprint(parErr) {
				t.Fatalf("errors differ:\nstream %v\nchunks %v", seqErr, parErr)
			}
			if seqErr == nil && !reflect.DeepEqual(seq, par) {
				t.Fatal("the graphs differ")
			}
			if tc.name == "index 0 detects base 0, late" && (parErr != nil || par.Meta().IndexBase != 0) {
				t.Fatalf("index base %d, error %v", par.Meta().IndexBase, parErr)
			}
			if strings.HasPrefix(tc.name, "bad token late") && !strings.Contains(fmt.Sprint(parErr), fmt.Sprintf(":%d:", late+1)) {
				t.Fatalf("error %v does not name line %d", parErr, late+1)
			}
		})
	}
}

// TestReadLibSVMChunksReadError: a stream that fails after some lines
// fails as it does on one goroutine, at the line being read, after the
// parse errors of the lines before it.
func TestReadLibSVMChunksReadError(t *testing.T) {
	text := libsvmText(6, 1500)
	broken := errors.New("disk on fire")
	for _, at := range []int{10, len(text) / 2, len(text) - 3} {
		for _, bad := range []bool{false, true} {
			prefix := text[:at]
			if bad {
				prefix = "1 1:q\n" + prefix
			}
			opt := DefaultLoadOptions()
			read := func(workers int) error {
				r := io.MultiReader(strings.NewReader(prefix), iotest.ErrReader(broken))
				_, _, err := scanLibSVMParallel(r, "f.svm", opt, workers, 700, int64(len(prefix)))
				return err
			}
			seqErr, parErr := read(1), read(4)
			if seqErr == nil || fmt.Sprint(seqErr) != fmt.Sprint(parErr) {
				t.Fatalf("cut at %d: errors differ:\nstream %v\nchunks %v", at, seqErr, parErr)
			}
			if !bad && !errors.Is(parErr, broken) {
				t.Fatalf("cut at %d: %v does not wrap the read error", at, parErr)
			}
		}
	}
}

// TestLineCutter: chunks are whole lines but for the last, lines longer
// than a chunk included, and their newlines are counted.
func TestLineCutter(t *testing.T) {
	text := "a\nbb\n" + strings.Repeat("x", 50) + "\nccc\nd"
	for _, size := range []int{1, 3, 8, 1000} {
		c := &lineCutter{r: iotest.OneByteReader(strings.NewReader(text)), size: size, max: 1 << 30}
		var got strings.Builder
		lines := 0
		for {
			chunk, n, err := c.next(nil)
			got.Write(chunk)
			lines += n
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(chunk) == 0 || chunk[len(chunk)-1] != '\n' || n != strings.Count(string(chunk), "\n") {
				t.Fatalf("size %d: chunk %q", size, chunk)
			}
		}
		if got.String() != text || lines != 4 {
			t.Fatalf("size %d: %q, %d lines", size, got.String(), lines)
		}
	}
}

// snapText returns n random edge lines with comments, blank lines, CRLF
// endings and self-loops, one edge beyond 32 bits at line wideAt (none when
// negative).
func snapText(seed uint64, n, wideAt int) string {
	rng := rand.New(rand.NewPCG(seed, 2))
	var sb strings.Builder
	sb.WriteString("# Directed graph\n# FromNodeId\tToNodeId\n")
	for i := range n {
		if i%53 == 3 {
			sb.WriteString("% comment\n\n")
		}
		u, v := uint64(rng.IntN(400)), uint64(rng.IntN(400))
		if i%41 == 0 {
			v = u
		}
		if i == wideAt {
			u = 1<<40 + u
		}
		fmt.Fprintf(&sb, "%d\t%d", u, v)
		if i%7 == 0 {
			sb.WriteString("\r")
		}
		sb.WriteString("\n")
	}
	return sb.String()
}

// TestReadSNAPChunksEqualsStream: chunks on several goroutines, the edges
// grouped by counting, give the graph of one goroutine sorting them.
func TestReadSNAPChunksEqualsStream(t *testing.T) {
	for _, wideAt := range []int{-1, 10, 2500} {
		text := snapText(7, 3000, wideAt)
		for _, undirected := range []bool{false, true} {
			for _, drop := range []bool{false, true} {
				opt := DefaultLoadOptions()
				opt.DropSelfLoops = drop
				want, err := readSNAP(strings.NewReader(text), "g.txt", undirected, opt, 1, chunkBytes, true)
				if err != nil {
					t.Fatal(err)
				}
				for _, workers := range []int{2, 5} {
					for _, chunk := range []int{1, 300, 5000} {
						got, err := readSNAP(strings.NewReader(text), "g.txt", undirected, opt, workers, chunk, false)
						if err != nil || !reflect.DeepEqual(got, want) {
							t.Fatalf("wide at %d, undirected %v, drop %v, %d workers, chunks of %d: the graphs differ (%v)",
								wideAt, undirected, drop, workers, chunk, err)
						}
					}
				}
			}
		}
	}
}

func TestReadSNAPChunksErrorsAsStream(t *testing.T) {
	lines := strings.SplitAfter(snapText(8, 2000, -1), "\n")
	late := len(lines) * 9 / 10
	for _, bad := range []string{"1 2 3\n", "1 x\n", "-1 2\n"} {
		c := append([]string(nil), lines...)
		c[late] = bad
		text := strings.Join(c, "")
		_, want := readSNAP(strings.NewReader(text), "g.txt", false, DefaultLoadOptions(), 1, chunkBytes, false)
		_, got := readSNAP(strings.NewReader(text), "g.txt", false, DefaultLoadOptions(), 3, 400, false)
		if want == nil || fmt.Sprint(got) != fmt.Sprint(want) || !strings.Contains(want.Error(), fmt.Sprintf(":%d:", late+1)) {
			t.Fatalf("%q: errors differ or miss line %d:\nstream %v\nchunks %v", bad, late+1, want, got)
		}
	}
}

// stallReader returns its text, then no data and no error for ever.
type stallReader struct{ r io.Reader }

func (s *stallReader) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if err == io.EOF {
		return 0, nil
	}
	return n, err
}

// TestReadLibSVMChunksNoProgress: a reader that stops making progress
// fails as on one goroutine (bufio's io.ErrNoProgress) instead of hanging.
func TestReadLibSVMChunksNoProgress(t *testing.T) {
	text := libsvmText(9, 400)
	read := func(workers int) error {
		_, _, err := scanLibSVMParallel(&stallReader{strings.NewReader(text)}, "f.svm", DefaultLoadOptions(), workers, 300, -1)
		return err
	}
	seq, par := read(1), read(3)
	if !errors.Is(par, io.ErrNoProgress) || fmt.Sprint(seq) != fmt.Sprint(par) {
		t.Fatalf("errors:\nstream %v\nchunks %v", seq, par)
	}
}

// TestReadLibSVMChunksStorage: the Builders of many chunks, joined, hold
// little more storage than their edges (each part's last, doubling chunk
// trimmed).
func TestReadLibSVMChunksStorage(t *testing.T) {
	text := libsvmText(10, 4000)
	b, _, err := scanLibSVMParallel(strings.NewReader(text), "f.svm", DefaultLoadOptions(), 3, 2000, -1)
	if err != nil {
		t.Fatal(err)
	}
	var held, vals int
	for c := range b.ids {
		held += cap(b.ids[c])
		if b.vals[c] != nil {
			vals += cap(b.vals[c])
		}
	}
	if limit := int(b.n + b.n/8); held > limit || vals > limit {
		t.Fatalf("%d edges held in %d ids and %d values, want at most %d", b.n, held, vals, limit)
	}
}

// criteoText returns n random Criteo lines, with empty fields, negative
// and large integers, and a bad integer at line bad (none when negative).
func criteoText(seed uint64, n, bad int) string {
	rng := rand.New(rand.NewPCG(seed, 3))
	var sb strings.Builder
	for i := range n {
		fmt.Fprintf(&sb, "%d", rng.IntN(2))
		for col := 1; col < criteoFields; col++ {
			sb.WriteByte('\t')
			switch {
			case rng.IntN(6) == 0:
			case i == bad && col == 5:
				sb.WriteString("x1")
			case col <= criteoInts:
				fmt.Fprintf(&sb, "%d", rng.IntN(2000)-3)
			default:
				fmt.Fprintf(&sb, "%08x", rng.IntN(300))
			}
		}
		sb.WriteByte('\n')
	}
	return sb.String()
}

func TestReadCriteoChunksEqualsStream(t *testing.T) {
	for _, bad := range []int{-1, 1700} {
		text := criteoText(11, 2000, bad)
		for _, bits := range []int{4, 20} {
			opt := DefaultLoadOptions()
			opt.HashBits = bits
			want, wantErr := readCriteo(strings.NewReader(text), "c.tsv", opt, 1, chunkBytes)
			for _, workers := range []int{2, 5} {
				got, gotErr := readCriteo(strings.NewReader(text), "c.tsv", opt, workers, 3000)
				if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) || !reflect.DeepEqual(got, want) {
					t.Fatalf("bad line %d, %d bits, %d workers: differ:\nstream %v\nchunks %v", bad, bits, workers, wantErr, gotErr)
				}
			}
			if (bad >= 0) != (wantErr != nil) || (bad >= 0 && !strings.Contains(wantErr.Error(), fmt.Sprintf(":%d:", bad+1))) {
				t.Fatalf("bad line %d: error %v", bad, wantErr)
			}
		}
	}
}

// TestReadLibSVMArena: rows kept in slots of an arena sized by the
// length of the text give the graph of one goroutine, whether the slots
// have room to spare (colons in comments and qid tokens), the text is
// longer than its stated size (slots run out, later chunks keep their
// own storage), an id needs 64 bits (the rows move out of the arena) or
// only some chunks carry values other than 1.
func TestReadLibSVMArena(t *testing.T) {
	var ones, colons strings.Builder
	for i := range 3000 {
		fmt.Fprintf(&ones, "1 %d:1 %d:1\n", 1+i%50, 100+i%70)
		fmt.Fprintf(&colons, "0 qid:%d %d:2 # a:b c:d\n", i, 1+i%40)
	}
	base := libsvmText(9, 2000)
	lines := strings.SplitAfter(base, "\n")
	wide := strings.Join(lines[:1500], "") + "1 4294967296:3\n" + strings.Join(lines[1500:], "")
	for _, c := range []struct {
		name string
		text string
		size int64
	}{
		{"values in some chunks", ones.String() + base + ones.String(), -2},
		{"colons that are no edges", colons.String() + base, -2},
		{"a size too small", base, 1000},
		{"no size", base, -1},
		{"an id of 33 bits", wide, -2},
	} {
		t.Run(c.name, func(t *testing.T) {
			size := c.size
			if size == -2 {
				size = int64(len(c.text))
			}
			opt := DefaultLoadOptions()
			want, err := readLibSVM(strings.NewReader(c.text), "f.svm", opt, 1, 4096, -1)
			if err != nil {
				t.Fatal(err)
			}
			b, _, err := scanLibSVMParallel(strings.NewReader(c.text), "f.svm", opt, 3, 4096, size)
			if inArena := c.size == -2 && c.text != wide; err != nil || (b.narrow != nil) != inArena {
				t.Fatalf("rows in the arena: %v, want %v (%v)", b.narrow != nil, inArena, err)
			}
			for _, chunk := range []int{100, 4096, 1 << 20} {
				got, err := readLibSVM(strings.NewReader(c.text), "f.svm", opt, 3, chunk, size)
				if err != nil {
					t.Fatalf("chunks of %d: %v", chunk, err)
				}
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("chunks of %d: the graphs differ", chunk)
				}
			}
		})
	}
}

// TestArenaKeptOnlyWhenFilled checks that a graph keeps the arena its
// rows were read into only while they fill at least half of it: a file of
// long values, whose size gives an arena six times its edges, gets a copy
// of them, and a file of short pairs keeps the arena. Both give the graph
// of one goroutine without an arena.
func TestArenaKeptOnlyWhenFilled(t *testing.T) {
	var long, short strings.Builder
	for i := range 3000 {
		fmt.Fprintf(&long, "1 %d:0.12345678901234567 %d:0.98765432109876543\n", 1+i%50, 100+i%70)
		fmt.Fprintf(&short, "1 %d:1 %d:2\n", 1+i%9, 10+i%9)
	}
	for _, c := range []struct {
		name, text string
		keep       bool
	}{{"long values", long.String(), false}, {"short pairs", short.String(), true}} {
		t.Run(c.name, func(t *testing.T) {
			opt := DefaultLoadOptions()
			want, err := readLibSVM(strings.NewReader(c.text), "f.svm", opt, 1, 4096, -1)
			if err != nil {
				t.Fatal(err)
			}
			b, sawZero, err := scanLibSVMParallel(strings.NewReader(c.text), "f.svm", opt, 3, 4096, int64(len(c.text)))
			if err != nil || b.narrow == nil {
				t.Fatalf("rows in an arena: %v (%v)", b.narrow != nil, err)
			}
			ar := b.arena
			g, err := buildSamples(b, "f.svm")
			if err != nil {
				t.Fatal(err)
			}
			setIndexBase(g, opt, sawZero)
			if !reflect.DeepEqual(g, want) {
				t.Fatal("the graphs differ")
			}
			if kept := &g.sampleAdj[0] == &ar.ids[0]; kept != c.keep {
				t.Errorf("%d edges in an arena of %d: ids kept in it %v, want %v", g.NumEdges(), len(ar.ids), kept, c.keep)
			}
			if kept := &g.values[0] == &ar.vals[0]; kept != c.keep {
				t.Errorf("%d edges in an arena of %d: values kept in it %v, want %v", g.NumEdges(), len(ar.ids), kept, c.keep)
			}
		})
	}
}
