package graph

import (
	"fmt"
	"math/rand/v2"
	"os"
	"reflect"
	"strings"
	"testing"
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

// loadBoth reads path as a stream and by ranges on workers goroutines of at
// least share bytes each; ok reports whether the ranges were used.
func loadBoth(t *testing.T, path string, opt LoadOptions, workers int, share int64) (seq *Graph, seqErr error, par *Graph, parErr error, ok bool) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	seq, seqErr = Read(f, path, opt)
	par, ok, parErr = loadRanges(f, path, opt, workers, share)
	return
}

func TestLoadRangesEqualsStream(t *testing.T) {
	text := libsvmText(3, 3000)
	path := writeTemp(t, "a.svm", []byte(text))
	for _, workers := range []int{2, 3, 7, 64} {
		for _, base := range []int{-1, 0} {
			opt := DefaultLoadOptions()
			opt.IndexBase = base
			seq, seqErr, par, parErr, ok := loadBoth(t, path, opt, workers, 256)
			if !ok || seqErr != nil || parErr != nil {
				t.Fatalf("%d workers: ranges used %v, errors %v / %v", workers, ok, seqErr, parErr)
			}
			if !reflect.DeepEqual(seq, par) {
				t.Fatalf("%d workers, base %d: the graphs differ", workers, base)
			}
		}
	}
}

func TestLoadRangesErrorsAsStream(t *testing.T) {
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
			text := tc.text
			path := writeTemp(t, "b.svm", []byte(text))
			opt := DefaultLoadOptions()
			opt.IndexBase = tc.base
			seq, seqErr, par, parErr, ok := loadBoth(t, path, opt, 5, 128)
			// A file whose head is no libsvm is read as a stream, and
			// fails there.
			if headBad := tc.name == "bad token first line" || tc.name == "only comments"; ok == headBad {
				t.Fatalf("ranges used: %v", ok)
			} else if headBad {
				par, parErr = seq, seqErr
			}
			if fmt.Sprint(seqErr) != fmt.Sprint(parErr) {
				t.Fatalf("errors differ:\nstream %v\nranges %v", seqErr, parErr)
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

func TestLoadRangesDeclines(t *testing.T) {
	text := libsvmText(5, 500)
	svm := writeTemp(t, "c.svm", []byte(text))
	gz := writeTemp(t, "c.svm.gz", gzipBytes(t, []byte(text)))
	snap := writeTemp(t, "c.txt", []byte(strings.Repeat("1 2\n2 3\n", 5000)))
	checked := DefaultLoadOptions()
	checked.SampleCheck = func(int, int64, uint64) error { return nil }
	cases := []struct {
		name    string
		path    string
		opt     LoadOptions
		workers int
		share   int64
	}{
		{"one core", svm, DefaultLoadOptions(), 1, 64},
		{"small", svm, DefaultLoadOptions(), 4, int64(len(text))},
		{"compressed", gz, DefaultLoadOptions(), 4, 64},
		{"snap", snap, DefaultLoadOptions(), 4, 64},
		{"sample check", svm, checked, 4, 64},
	}
	for _, tc := range cases {
		f, err := os.Open(tc.path)
		if err != nil {
			t.Fatal(err)
		}
		_, ok, err := loadRanges(f, tc.path, tc.opt, tc.workers, tc.share)
		f.Close()
		if ok || err != nil {
			t.Errorf("%s: ranges used %v, error %v", tc.name, ok, err)
		}
	}
}
