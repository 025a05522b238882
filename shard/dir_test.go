package shard

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"colo/internal/memcap"
)

// dirReport is a summary as colo shard writes it: settings beside an
// embedded Summary.
type dirReport struct {
	Seed uint64 `json:"seed"`
	*Summary
}

func TestWriteDirReadDirRoundTrip(t *testing.T) {
	cases := []struct {
		name    string
		assign  []int
		workers int
	}{
		{"one worker", []int{0, 0, 0}, 1},
		{"round robin", []int{0, 1, 2, 0, 1, 2, 0}, 3},
		{"broadcast", []int{Broadcast, 1, 0, Broadcast, 11, 10, Broadcast}, 12},
		{"all broadcast", []int{Broadcast, Broadcast}, 4},
		{"no samples", nil, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "out")
			rep := dirReport{Seed: 7, Summary: &Summary{Workers: tc.workers, Samples: len(tc.assign)}}
			if err := WriteDir(dir, tc.assign, rep); err != nil {
				t.Fatal(err)
			}
			assign, workers, err := ReadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			if workers != tc.workers || len(assign) != len(tc.assign) || (len(assign) > 0 && !reflect.DeepEqual(assign, tc.assign)) {
				t.Fatalf("read back %v on %d workers, wrote %v on %d", assign, workers, tc.assign, tc.workers)
			}
			// Writing again over a complete directory replaces it.
			if err := WriteDir(dir, tc.assign, rep); err != nil {
				t.Fatal(err)
			}
			es, _ := os.ReadDir(dir)
			if len(es) != 2 {
				t.Fatalf("%d entries after two writes, want shards.txt and summary.json", len(es))
			}
		})
	}
}

func TestWriteShardsFormat(t *testing.T) {
	var b bytes.Buffer
	if err := WriteShards(&b, []int{3, Broadcast, 0, 10}); err != nil {
		t.Fatal(err)
	}
	if got, want := b.String(), "3\n*\n0\n10\n"; got != want {
		t.Fatalf("WriteShards = %q, want %q", got, want)
	}
}

func TestReadDirErrors(t *testing.T) {
	const sum3 = `{"workers": 3, "samples": 3}`
	cases := []struct {
		name        string
		shards, sum string // contents; "" for a missing file
		want        string // with DIR for the directory
	}{
		{"no summary", "0\n1\n2\n", "", "DIR/summary.json: missing: DIR is incomplete"},
		{"no shards", "", sum3, "DIR/shards.txt: no such file"},
		{"summary not JSON", "0\n", "{", "DIR/summary.json: unexpected end of JSON input"},
		{"summary without workers", "0\n", `{"samples": 1}`, `DIR/summary.json: want a "workers" field of at least 1`},
		{"summary with zero workers", "0\n", `{"workers": 0}`, `DIR/summary.json: want a "workers" field of at least 1`},
		{"bad token", "0\nx\n2\n", sum3, `DIR/shards.txt:2: "x": want a worker number in 0..2 or * (every worker)`},
		{"worker out of range", "0\n1\n3\n", sum3, `DIR/shards.txt:3: "3": want a worker number in 0..2`},
		{"negative worker", "-1\n1\n2\n", sum3, `DIR/shards.txt:1: "-1": want a worker number in 0..2`},
		{"plus sign", "0\n+1\n2\n", sum3, `DIR/shards.txt:2: "+1": want a worker number in 0..2 or * (every worker)`},
		{"leading zero", "0\n1\n02\n", sum3, `DIR/shards.txt:3: "02": want a worker number in 0..2 or * (every worker)`},
		{"two tokens", "0 1\n1\n2\n", sum3, `DIR/shards.txt:1: "0 1"`},
		{"blank line", "0\n\n2\n", sum3, `DIR/shards.txt:2: "": want a worker number`},
		{"two stars", "0\n**\n2\n", sum3, `DIR/shards.txt:2: "**"`},
		{"too few lines", "0\n1\n", sum3, "DIR/shards.txt: 2 lines, summary.json has 3 samples: want one line per sample"},
		{"too many lines", "0\n1\n2\n*\n", sum3, "DIR/shards.txt: 4 lines, summary.json has 3 samples"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, text := range map[string]string{ShardsFile: tc.shards, SummaryFile: tc.sum} {
				if text != "" {
					if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
						t.Fatal(err)
					}
				}
			}
			want := strings.ReplaceAll(tc.want, "DIR", dir)
			assign, workers, err := ReadDir(dir)
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("got %v on %d workers, error %v; want an error containing %q", assign, workers, err, want)
			}
		})
	}
}

func TestWriteDirRefuses(t *testing.T) {
	cases := []struct {
		name    string
		assign  []int
		summary any
		want    string
	}{
		{"worker beyond the summary's", []int{0, 2}, &Summary{Workers: 2, Samples: 2}, "sample 1 on worker 2: want 0..1 or Broadcast"},
		{"negative worker", []int{-2}, &Summary{Workers: 2, Samples: 1}, "sample 0 on worker -2"},
		{"samples differ", []int{0, 1}, &Summary{Workers: 2, Samples: 3}, "the summary has 3 samples, the assignment 2"},
		{"no workers in the summary", []int{0}, map[string]int{"samples": 1}, `want a "workers" field`},
		{"summary not an object", []int{0}, []int{1}, "want a JSON object"},
		{"summary not encodable", []int{0}, map[string]any{"f": func() {}}, "encode the summary"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "out")
			err := WriteDir(dir, tc.assign, tc.summary)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
			if _, err := os.Stat(dir); err == nil {
				t.Fatal("the directory was created despite the error")
			}
		})
	}
}

func TestWriteDirRemovesStaleSummaryFirst(t *testing.T) {
	dir := t.TempDir()
	if err := WriteDir(dir, []int{0, 1}, &Summary{Workers: 2, Samples: 2}); err != nil {
		t.Fatal(err)
	}
	// shards.txt cannot be replaced: a directory stands in its way.
	if err := os.Remove(filepath.Join(dir, ShardsFile)); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, ShardsFile), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ShardsFile, "x"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WriteDir(dir, []int{1, 0}, &Summary{Workers: 2, Samples: 2}); err == nil {
		t.Fatal("WriteDir over a directory named shards.txt succeeded")
	}
	if _, _, err := ReadDir(dir); err == nil || !strings.Contains(err.Error(), "incomplete") {
		t.Fatalf("ReadDir after a failed write: %v, want the directory reported incomplete", err)
	}
}

// FuzzReadShards checks that the shards.txt parser never panics, and that
// whatever it accepts is written back as a file it reads the same.
func FuzzReadShards(f *testing.F) {
	// A reader that allocated what its input claims would die of out
	// of memory under the cap: a failing input.
	memcap.Cap(f, 1<<30)
	for _, s := range []string{"0\n1\n*\n", "", "2\n", "*", " 1 \n*\r\n", "x\n", "0\n\n1\n", "99999999999999999999\n", "-1\n", "+1\n", "01\n"} {
		f.Add([]byte(s), 3)
	}
	f.Fuzz(func(t *testing.T, data []byte, workers int) {
		assign, err := ReadShards(bytes.NewReader(data), "f", workers)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "f") {
				t.Fatalf("error %q does not name the file", err)
			}
			return
		}
		for i, a := range assign {
			if a != Broadcast && (a < 0 || a >= workers) {
				t.Fatalf("accepted sample %d on worker %d of %d", i, a, workers)
			}
		}
		var b bytes.Buffer
		if err := WriteShards(&b, assign); err != nil {
			t.Fatal(err)
		}
		// Each token accepted is written as it was: one spelling per
		// worker number ("+3" and "03" are refused).
		if tokens := strings.Fields(string(data)); len(assign) > 0 && strings.Join(tokens, "\n")+"\n" != b.String() {
			t.Fatalf("accepted %q, which is written back as %q", data, b.String())
		}
		again, err := ReadShards(&b, "f", workers)
		if err != nil || len(again) != len(assign) || (len(assign) > 0 && !reflect.DeepEqual(again, assign)) {
			t.Fatalf("written back and read again: %v, %v; want %v", again, err, assign)
		}
	})
}
