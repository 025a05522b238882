package shard

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"colo/internal/colotest"
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

// TestWriteDirRefusesBeforeTouching: a directory in the place of
// shards.txt is refused, naming it, before WriteDir removes or writes
// anything (the earlier summary stays as it was); a summary.json that is
// an empty directory is not removed and replaced by a file, and one
// that is a link is written through, the link kept. Before, the stale
// summary was removed whatever it was, an empty directory among them.
func TestWriteDirRefusesBeforeTouching(t *testing.T) {
	dir := t.TempDir()
	if err := WriteDir(dir, []int{0, 1}, &Summary{Workers: 2, Samples: 2}); err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(filepath.Join(dir, SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	// shards.txt cannot be replaced: a directory stands in its way.
	shards := filepath.Join(dir, ShardsFile)
	if err := os.Remove(shards); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(shards, "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	err = WriteDir(dir, []int{1, 0}, &Summary{Workers: 2, Samples: 2})
	if want := "cannot write " + shards + ": it is a directory"; err == nil || err.Error() != want {
		t.Fatalf("WriteDir over a directory named shards.txt: %v, want %s", err, want)
	}
	if after, err := os.ReadFile(filepath.Join(dir, SummaryFile)); err != nil || !bytes.Equal(after, before) {
		t.Fatalf("the summary changed on a refused write: %q, %v", after, err)
	}

	dir = t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, SummaryFile), 0o755); err != nil {
		t.Fatal(err)
	}
	err = WriteDir(dir, []int{1, 0}, &Summary{Workers: 2, Samples: 2})
	if want := "cannot write " + filepath.Join(dir, SummaryFile) + ": it is a directory"; err == nil || err.Error() != want {
		t.Fatalf("WriteDir over a directory named summary.json: %v, want %s", err, want)
	}
	if fi, err := os.Stat(filepath.Join(dir, SummaryFile)); err != nil || !fi.IsDir() {
		t.Fatalf("summary.json, a directory, was replaced: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, ShardsFile)); err == nil {
		t.Fatal("shards.txt written despite the refusal")
	}

	dir, elsewhere := t.TempDir(), t.TempDir()
	target := filepath.Join(elsewhere, "s.json")
	if err := os.WriteFile(target, []byte(`{"workers": 9}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, filepath.Join(dir, SummaryFile)); err != nil {
		t.Fatal(err)
	}
	if err := WriteDir(dir, []int{1, 0}, &Summary{Workers: 2, Samples: 2}); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(filepath.Join(dir, SummaryFile)); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("summary.json is no longer a link: %v", err)
	}
	if assign, workers, err := ReadDir(dir); err != nil || workers != 2 || !reflect.DeepEqual(assign, []int{1, 0}) {
		t.Fatalf("ReadDir through the link: %v on %d workers, %v", assign, workers, err)
	}
}

// TestReadDirRefusesNonRegular: a summary.json or shards.txt that is a
// FIFO or a link to /dev/zero is refused unread, naming it; before, a
// FIFO made ReadDir wait for ever for a writer and a summary linked to
// /dev/zero was read until memory ran out.
func TestReadDirRefusesNonRegular(t *testing.T) {
	for _, name := range []string{SummaryFile, ShardsFile} {
		for _, kind := range []string{"fifo", "zero"} {
			t.Run(name+" "+kind, func(t *testing.T) {
				dir := t.TempDir()
				if err := WriteDir(dir, []int{0, 1}, &Summary{Workers: 2, Samples: 2}); err != nil {
					t.Fatal(err)
				}
				path := filepath.Join(dir, name)
				if err := os.Remove(path); err != nil {
					t.Fatal(err)
				}
				want := "open " + path + ": a named pipe (FIFO): want a regular file"
				err := syscall.Mkfifo(path, 0o644)
				if kind == "zero" {
					want = "open " + path + ": a character device: want a regular file"
					err = os.Symlink("/dev/zero", path)
				}
				if err != nil {
					t.Skip(err)
				}
				done := make(chan error, 1)
				go func() {
					_, _, err := ReadDir(dir)
					done <- err
				}()
				select {
				case err = <-done:
				case <-time.After(colotest.HangTimeout(t)):
					t.Fatalf("ReadDir has not returned in %v", colotest.HangTimeout(t))
				}
				if err == nil || err.Error() != want {
					t.Fatalf("ReadDir: %v, want %s", err, want)
				}
			})
		}
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
