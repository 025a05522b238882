package graph

import (
	"bytes"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"testing"

	"colo/internal/memcap"
)

// The fuzz targets check that the loaders never panic or hang on any input,
// and that whatever they accept is a consistent graph. Seed inputs are
// added here and kept in testdata/fuzz/<target>/, with any input that once
// failed.
//
// Each runs within a memory budget of fuzzBudget (opt.Memory) in a
// process whose address space is capped at fuzzCap beyond what it maps at
// the start (memcap.Cap): a reader that allocated what its input claims,
// beyond its budget, would die of out of memory, which fails the target.
const (
	fuzzBudget = 64 << 20
	fuzzCap    = 1 << 30
)

func FuzzReadLibSVM(f *testing.F) {
	memcap.Cap(f, fuzzCap)
	for _, s := range []string{
		"1 1:1 3:0.5\n-1 2:1\n",
		"# c\n+1 qid:3 0:1e-3 7:-2 # x\n\n0\n",
		"1 3:1 3:2\n",
		"1 9:1 2:1\r\n2.5e3 18446744073709551615:1",
		"1 4:x\n",
		"nan 1:1\n",
	} {
		f.Add([]byte(s), int8(-1))
	}
	f.Add([]byte("1 0:1\n"), int8(1))
	f.Fuzz(func(t *testing.T, data []byte, base int8) {
		opt := libsvmOptions(int((int(base)%3+3)%3) - 1)
		opt.Memory = fuzzBudget
		g, err := ReadLibSVM(bytes.NewReader(data), "f.svm", opt)
		if err != nil {
			return
		}
		if err := g.Validate(); err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		if err := WriteLibSVM(&out, g); err != nil {
			t.Fatal(err)
		}
		h, err := ReadLibSVM(&out, "f.svm", opt)
		if err != nil {
			t.Fatalf("written output does not read back: %v", err)
		}
		if err := equalGraphs(g, h); err != nil {
			t.Fatalf("round trip: %v", err)
		}
	})
}

func FuzzReadSNAP(f *testing.F) {
	memcap.Cap(f, fuzzCap)
	for _, s := range []string{
		"# Directed graph\n0\t1\n0\t2\n2\t1\n",
		"5 3\r\n\r\n  1   5  \r\n5 1\n",
		"1 2\n2 1\n1 1\n",
		"4294967296 1\n1 18446744073709551615\n",
		"1 2 3\n",
		"-1 2\n",
	} {
		f.Add([]byte(s), false, false)
		f.Add([]byte(s), true, true)
	}
	f.Fuzz(func(t *testing.T, data []byte, undirected, drop bool) {
		opt := DefaultLoadOptions()
		opt.Memory = fuzzBudget
		opt.DropSelfLoops = drop
		g, err := ReadSNAP(bytes.NewReader(data), "f.txt", undirected, opt)
		if err != nil {
			return
		}
		if err := g.Validate(); err != nil {
			t.Fatal(err)
		}
		if g.sampleIDs == nil {
			t.Fatal("no sample ids")
		}
		for u := 1; u < g.NumSamples(); u++ {
			if g.SampleID(u) <= g.SampleID(u-1) {
				t.Fatalf("sample ids not increasing at %d", u)
			}
		}
		if drop {
			return
		}
		// Written as a directed edge list, the graph reads back the same.
		var out bytes.Buffer
		for u := range g.NumSamples() {
			for _, v := range g.Params(u) {
				fmt.Fprintf(&out, "%d %d\n", g.SampleID(u), g.ParamID(int(v)))
			}
		}
		h, err := ReadSNAP(&out, "f.txt", false, opt)
		if err != nil {
			t.Fatalf("edge list does not read back: %v", err)
		}
		h.meta = g.meta
		if err := equalGraphs(g, h); err != nil {
			t.Fatalf("round trip: %v", err)
		}
	})
}

func FuzzReadRatings(f *testing.F) {
	memcap.Cap(f, fuzzCap)
	for _, s := range []string{
		"196\t242\t3\t881250949\n186\t302\t3\t891717742\n196\t51\t2\t880606923\n",
		"# c\r\n\r\n  5  7 -0.5  \r\n5 2 1e1\n0 7 1 x\n",
		"1 2 3\n1 2 4\n",
		"4294967296 1 1\n1 18446744073709551615 2.5\n",
		"1 2\n",
		"1 2 1e39\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		g, err := readRatings(bytes.NewReader(data), "f.data", LoadOptions{Memory: fuzzBudget})
		if err != nil {
			return
		}
		if err := g.Validate(); err != nil {
			t.Fatal(err)
		}
		for u := 1; u < g.NumSamples(); u++ {
			if g.SampleID(u) <= g.SampleID(u-1) {
				t.Fatalf("sample ids not increasing at %d", u)
			}
		}
		// Written back as ratings, the graph reads back the same.
		var out bytes.Buffer
		for u := range g.NumSamples() {
			vals := g.Values(u)
			for i, v := range g.Params(u) {
				x := float32(1)
				if vals != nil {
					x = vals[i]
				}
				fmt.Fprintf(&out, "%d %d %s\n", g.SampleID(u), g.ParamID(int(v)), strconv.FormatFloat(float64(x), 'g', -1, 64))
			}
		}
		h, err := ReadRatings(&out, "f.data")
		if err != nil {
			t.Fatalf("ratings do not read back: %v", err)
		}
		if err := equalGraphs(g, h); err != nil {
			t.Fatalf("round trip: %v", err)
		}
	})
}

func FuzzReadCriteo(f *testing.F) {
	memcap.Cap(f, fuzzCap)
	for _, s := range []string{
		"1\t1\t5\t\t-2\t100\t\t\t\t\t\t\t\t\t68fd1e64\t\t80e26c9b\n0\t\t\t3\n",
		"0\r\n\n1\t-9223372036854775808\n",
		"2\t1\n",
		"1\t4.5\n",
		"1\t1\t1\t1\t1\t1\t1\t1\t1\t1\t1\t1\t1\t1\t1\t1\t1\t1\t1\t1\t1\t1\t1\t1\t1\t1\t1\t1\t1\t1\t1\t1\t1\t1\t1\t1\t1\t1\t1\t1\t1\n",
	} {
		f.Add([]byte(s), uint8(20))
		f.Add([]byte(s), uint8(0))
	}
	f.Fuzz(func(t *testing.T, data []byte, bits uint8) {
		opt := DefaultLoadOptions()
		opt.Memory = fuzzBudget
		opt.HashBits = 1 + int(bits%32)
		g, err := ReadCriteo(bytes.NewReader(data), "f.tsv", opt)
		if err != nil {
			return
		}
		if err := g.Validate(); err != nil {
			t.Fatal(err)
		}
		for u := range g.NumSamples() {
			if l := g.Label(u); l != 0 && l != 1 {
				t.Fatalf("sample %d: label %v", u, l)
			}
			total := float32(0)
			for i := range g.SampleDegree(u) {
				if vals := g.Values(u); vals != nil {
					total += vals[i]
				} else {
					total++
				}
			}
			if total > 39 {
				t.Fatalf("sample %d: %v features", u, total)
			}
		}
		for v := range g.NumParams() {
			if g.ParamID(v) >= 1<<opt.HashBits {
				t.Fatalf("parameter id %d beyond %d bits", g.ParamID(v), opt.HashBits)
			}
		}
	})
}

func FuzzDetectFormat(f *testing.F) {
	memcap.Cap(f, fuzzCap)
	for _, s := range []string{
		"1 3:1 5:0.5\n",
		"# Directed graph\n0\t1\n",
		"0\t1\t1\t5\t0\t1382\t4\t15\t2\t181\t1\t2\t\t2\t68fd1e64\n",
		"1 3:1 15:",
		"hello\n",
		"",
	} {
		f.Add([]byte(s))
	}
	formats := []Format{FormatLibSVM, FormatSNAP, FormatCriteo}
	f.Fuzz(func(t *testing.T, head []byte) {
		format, err := DetectFormat(head)
		if err != nil {
			return
		}
		if !slices.Contains(formats, format) {
			t.Fatalf("format %q", format)
		}
		// A detected head followed by a newline is detected the same way
		// unless its last line was cut.
		if bytes.HasSuffix(head, []byte("\n")) {
			again, err := DetectFormat(append(bytes.Clone(head), "\n"...))
			if err != nil || again != format {
				t.Fatalf("with a newline: %q, %v; before %q", again, err, format)
			}
		}
	})
}

// FuzzReadLibSVMChunks: libsvm text read in chunks on several goroutines
// gives what one goroutine gives, graph or error, for any content, chunk
// size and number of goroutines.
func FuzzReadLibSVMChunks(f *testing.F) {
	memcap.Cap(f, fuzzCap)
	for _, s := range []string{
		"1 1:1 3:0.5\n-1 2:1\n1 4:2\n0 5:1\n",
		"# c\n+1 qid:3 0:1e-3 7:-2 # x\n\n0\n1 2:1\n",
		"1 3:1\n1 3:1 3:2\n1 5:1\n",
		"1 9:1 2:1\r\n2.5e3 18446744073709551615:1\n1 1:1\n",
		"1 1:1\n1 4:x\n1 2:2\n",
	} {
		f.Add([]byte(s), uint8(3), uint8(5), int8(-1))
	}
	f.Fuzz(func(t *testing.T, data []byte, workers, chunk uint8, base int8) {
		opt := libsvmOptions(int((int(base)%3+3)%3) - 1)
		opt.Memory = fuzzBudget
		seq, seqErr, par, parErr := readBoth(t, string(data), opt, 2+int(workers%8), 1+int(chunk))
		if fmt.Sprint(parErr) != fmt.Sprint(seqErr) {
			t.Fatalf("errors differ:\nstream %v\nchunks %v", seqErr, parErr)
		}
		if seqErr == nil && !reflect.DeepEqual(seq, par) {
			t.Fatal("the graphs differ")
		}
	})
}

// FuzzReadSNAPChunks: an edge list read in chunks on several goroutines,
// its edges grouped by counting, gives what one goroutine sorting them
// gives, graph or error.
func FuzzReadSNAPChunks(f *testing.F) {
	memcap.Cap(f, fuzzCap)
	for _, s := range []string{
		"# c\n1 2\n2 3\n3 3\n",
		"4294967296 1\n1 18446744073709551615\n3 2\n",
		"1 2\n1 x\n3 4\n",
		"5 3\r\n\r\n  1   5  \r\n5 1\r\n% comment\n",
	} {
		f.Add([]byte(s), uint8(2), uint8(4), false, false)
	}
	f.Fuzz(func(t *testing.T, data []byte, workers, chunk uint8, undirected, drop bool) {
		opt := DefaultLoadOptions()
		opt.Memory = fuzzBudget
		opt.DropSelfLoops = drop
		// One goroutine, the edges sorted; against chunks, grouped by
		// counting where the ids are dense.
		want, wantErr := readSNAP(bytes.NewReader(data), "g.txt", undirected, opt, 1, chunkBytes, true)
		got, gotErr := readSNAP(bytes.NewReader(data), "g.txt", undirected, opt, 2+int(workers%6), 1+int(chunk), false)
		if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
			t.Fatalf("errors differ:\nstream %v\nchunks %v", wantErr, gotErr)
		}
		if wantErr == nil && !reflect.DeepEqual(got, want) {
			t.Fatal("the graphs differ")
		}
	})
}
