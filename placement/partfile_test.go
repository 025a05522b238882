package placement

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"colo/graph"
	"colo/internal/colotest"
	"colo/internal/memcap"
)

func TestPartFilesRoundTrip(t *testing.T) {
	g, err := graph.Sparse(graph.SparseConfig{Samples: 50, Params: 40, Gamma: 0.8, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	p := Uniform(g, 3, NewRand(1))
	var d, q bytes.Buffer
	if err := WriteDataPart(&d, p); err != nil {
		t.Fatal(err)
	}
	if err := WriteParamPart(&q, g, p); err != nil {
		t.Fatal(err)
	}
	data, k, err := ReadDataPart(&d, "data.part", g.NumSamples(), 0)
	if err != nil {
		t.Fatal(err)
	}
	param, err := ReadParamPart(&q, "param.part", g, p.K)
	if err != nil {
		t.Fatal(err)
	}
	if k != 3 || !reflect.DeepEqual(data, p.Data) || !reflect.DeepEqual(param, p.Param) {
		t.Fatalf("round trip changed the placement (k=%d)", k)
	}
}

func TestReadPartErrors(t *testing.T) {
	g, _ := graph.FromAdjacency(3, [][]uint32{{0, 1}, {2}, {1}})
	cases := []struct {
		name, data, param, want string
	}{
		{name: "too few lines", data: "0\n1\n", want: "d.part: 2 lines for 3 samples"},
		{name: "too many lines", data: "0\n1\n0\n1\n", want: "d.part:4: more lines than the 3 samples"},
		{name: "not a number", data: "0\nx\n1\n", want: `d.part:2: "x": want a machine number in 0..1`},
		{name: "out of range", data: "0\n2\n1\n", want: `d.part:2: "2": want a machine number in 0..1`},
		{name: "negative", data: "0\n-1\n1\n", want: `d.part:2: "-1"`},
		{name: "two fields", data: "0 1\n0\n1\n", want: "d.part:1: \"0 1\": want one machine number per line"},
		{name: "param unknown id", param: "0 0\n7 1\n", want: "p.part:2: parameter 7 does not occur"},
		{name: "param twice", param: "0 0\n0 1\n", want: "p.part:2: parameter 0 assigned twice"},
		{name: "param missing", param: "0 0\n1 1\n", want: "p.part: 1 of 3 parameters have no machine, first 2"},
		{name: "param bad machine", param: "0 0\n1 5\n2 1\n", want: `p.part:2: "5": want a machine number in 0..1`},
		{name: "param mixed columns", param: "0 0\n1\n", want: "p.part:2"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			if tc.data != "" {
				_, _, err = ReadDataPart(strings.NewReader(tc.data), "d.part", 3, 2)
			} else {
				_, err = ReadParamPart(strings.NewReader(tc.param), "p.part", g, 2)
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestReadParamPartOneColumn(t *testing.T) {
	g, _ := graph.FromAdjacency(3, [][]uint32{{0, 1}, {2}})
	param, err := ReadParamPart(strings.NewReader("1\n0\n\n1\n"), "p", g, 2)
	if err != nil || !reflect.DeepEqual(param, []int32{1, 0, 1}) {
		t.Fatalf("got %v, %v", param, err)
	}
}

func TestWriteDirAtomic(t *testing.T) {
	g, _ := graph.FromAdjacency(2, [][]uint32{{0}, {1}})
	p := &Placement{K: 2, Data: []int32{0, 1}, Param: []int32{1, 0}}
	dir := filepath.Join(t.TempDir(), "out")
	if err := WriteDir(dir, g, p, map[string]int{"k": 2}); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if !reflect.DeepEqual(names, []string{DataPartFile, ParamPartFile, SummaryFile}) {
		t.Fatalf("files %v", names)
	}
	b, _ := os.ReadFile(filepath.Join(dir, ParamPartFile))
	if string(b) != "0 1\n1 0\n" {
		t.Fatalf("param.part = %q", b)
	}
	// A summary that cannot be encoded fails before anything is written.
	dir2 := filepath.Join(t.TempDir(), "bad")
	if err := WriteDir(dir2, g, p, map[string]any{"x": func() {}}); err == nil {
		t.Fatal("want an error for an unencodable summary")
	}
	if _, err := os.Stat(filepath.Join(dir2, SummaryFile)); err == nil {
		t.Fatal("summary written despite the error")
	}
}

func TestReadDirRoundTrip(t *testing.T) {
	g, err := graph.Sparse(graph.SparseConfig{Samples: 60, Params: 45, Gamma: 0.8, Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []int{1, 3, 7} {
		p := Uniform(g, k, NewRand(uint64(k)))
		dir := filepath.Join(t.TempDir(), "p")
		if err := WriteDir(dir, g, p, map[string]int{"k": k}); err != nil {
			t.Fatal(err)
		}
		for _, arg := range []int{k, 0} {
			q, err := ReadDir(dir, g, arg)
			if err != nil {
				t.Fatalf("k=%d, ReadDir k=%d: %v", k, arg, err)
			}
			if !reflect.DeepEqual(q, p) {
				t.Fatalf("k=%d, ReadDir k=%d: placement changed in the round trip", k, arg)
			}
		}
	}
}

func TestReadDirErrors(t *testing.T) {
	g, _ := graph.FromAdjacency(3, [][]uint32{{0, 1}, {2}, {1}})
	const k2 = `{"algorithm": "x", "k": 2}`
	cases := []struct {
		name                 string
		summary, data, param string // file contents; "" for a missing file
		k                    int
		want                 string // the whole error, with "DIR" for the directory
	}{
		{"no summary.json", "", "0\n1\n0\n", "0 0\n1 0\n2 1\n", 0, "DIR/summary.json: missing: DIR is incomplete (the run that wrote it failed or has not finished)"},
		{"summary without k", `{"algorithm": "x"}`, "0\n1\n0\n", "0 0\n1 0\n2 1\n", 0, `DIR/summary.json: no "k": want the number of machines`},
		{"a shard directory", `{"workers": 2, "samples": 3}`, "0\n1\n0\n", "0 0\n1 0\n2 1\n", 0, `DIR/summary.json: no "k" but "workers": DIR is a shard directory (colo shard, for the dense applications), not a placement (colo partition)`},
		{"summary k above the samples", `{"k": 99999999999}`, "0\n1\n0\n", "0 0\n1 0\n2 1\n", 0, "DIR/summary.json: k = 99999999999: want 1..3, at most the 3 samples"},
		{"summary k zero", `{"k": 0}`, "0\n1\n0\n", "0 0\n1 0\n2 1\n", 0, "DIR/summary.json: k = 0: want 1..3, at most the 3 samples"},
		{"summary not an object", `[2]`, "0\n1\n0\n", "0 0\n1 0\n2 1\n", 0, `DIR/summary.json: json: cannot unmarshal array into Go value of type placement.dirSummary: want a JSON object with "k", the number of machines`},
		{"k asked differs", k2, "0\n1\n0\n", "0 0\n1 0\n2 1\n", 3, "DIR/summary.json: k = 2, not the 3 machines asked for"},
		{"no data.part", k2, "", "0 0\n1 0\n2 1\n", 2, "open DIR/data.part: no such file or directory"},
		{"no param.part", k2, "0\n1\n0\n", "", 2, "open DIR/param.part: no such file or directory"},
		{"data.part bad line", k2, "0\nx\n1\n", "0 0\n1 0\n2 1\n", 0, `DIR/data.part:2: "x": want a machine number in 0..1`},
		{"data.part machine beyond k", k2, "0\n3\n1\n", "0 0\n1 0\n2 1\n", 2, `DIR/data.part:2: "3": want a machine number in 0..1`},
		{"data.part huge machine", k2, "0\n99999999999\n1\n", "0 0\n1 0\n2 1\n", 0, `DIR/data.part:2: "99999999999": want a machine number in 0..1`},
		{"param.part beyond k", k2, "0\n1\n0\n", "0 0\n1 2\n2 1\n", 0, `DIR/param.part:2: "2": want a machine number in 0..1`},
		{"param.part missing a parameter", k2, "0\n1\n0\n", "0 0\n2 1\n", 2, "DIR/param.part: 1 of 3 parameters have no machine, first 1"},
		{"negative k", k2, "0\n1\n0\n", "0 0\n1 0\n2 1\n", -1, "placement: read DIR: k = -1: want the number of machines, or 0 to take it from summary.json"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, text := range map[string]string{SummaryFile: tc.summary, DataPartFile: tc.data, ParamPartFile: tc.param} {
				if text != "" {
					if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
						t.Fatal(err)
					}
				}
			}
			want := strings.ReplaceAll(tc.want, "DIR", dir)
			p, err := ReadDir(dir, g, tc.k)
			if err == nil || err.Error() != want {
				t.Fatalf("got %v, %v\nwant %s", p, err, want)
			}
		})
	}
}

// TestReadDirMixedRuns: part files of two runs in one directory, one on
// k = 2 machines and one on k = 1, are refused, whichever part file was
// replaced; so is a part file changed after the summary was written.
func TestReadDirMixedRuns(t *testing.T) {
	g, _ := graph.FromAdjacency(3, [][]uint32{{0, 1}, {2}, {1}})
	p2 := &Placement{K: 2, Data: []int32{0, 1, 0}, Param: []int32{0, 1, 1}}
	p1 := &Placement{K: 1, Data: []int32{0, 0, 0}, Param: []int32{0, 0, 0}}
	for _, c := range []struct {
		file  string
		write func(io.Writer) error
	}{
		{DataPartFile, func(w io.Writer) error { return WriteDataPart(w, p1) }},
		{ParamPartFile, func(w io.Writer) error { return WriteParamPart(w, g, p1) }},
		{ParamPartFile, func(w io.Writer) error { _, err := io.WriteString(w, "0 1\n1 1\n2 1\n"); return err }},
	} {
		dir := t.TempDir()
		if err := WriteDir(dir, g, p2, map[string]any{"algorithm": "test"}); err != nil {
			t.Fatal(err)
		}
		if q, err := ReadDir(dir, g, 0); err != nil || !reflect.DeepEqual(q, p2) {
			t.Fatalf("before the mix: %v, %v", q, err)
		}
		f, err := os.Create(filepath.Join(dir, c.file))
		if err != nil {
			t.Fatal(err)
		}
		c.write(f)
		f.Close()
		_, err = ReadDir(dir, g, 0)
		path := filepath.Join(dir, c.file)
		if err == nil || !strings.HasPrefix(err.Error(), path+": CRC-32C ") ||
			!strings.HasSuffix(err.Error(), "for 3 lines: the part files are not the ones the summary vouches for (a mix of two runs, or changed since)") {
			t.Fatalf("%s replaced: %v", c.file, err)
		}
	}
	// A summary whose k is not the placement's is not written.
	if err := WriteDir(t.TempDir(), g, p2, map[string]int{"k": 3}); err == nil || !strings.Contains(err.Error(), "the summary has k = 3, the placement 2") {
		t.Fatalf("WriteDir with a wrong k: %v", err)
	}
}

// TestLoadDataPartPrefix: a placement of the first samples of a dataset
// that grew is read; one of more samples than the dataset is refused.
func TestLoadDataPartPrefix(t *testing.T) {
	dir := t.TempDir()
	if _, err := LoadDataPartPrefix(dir, 5, 2); err == nil || err.Error() != filepath.Join(dir, SummaryFile)+": missing: "+dir+" is incomplete (the run that wrote it failed or has not finished)" {
		t.Errorf("without a summary: %v", err)
	}
	for name, text := range map[string]string{DataPartFile: "0\n1\n\n1\n", SummaryFile: `{"k": 2}`} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	data, err := LoadDataPartPrefix(dir, 5, 2)
	if err != nil || len(data) != 3 || data[0] != 0 || data[2] != 1 {
		t.Fatalf("prefix of 5: %v %v", data, err)
	}
	if _, err := LoadDataPartPrefix(dir, 2, 2); err == nil || !strings.Contains(err.Error(), "3 samples, more than the 2") {
		t.Errorf("3 samples for a dataset of 2: %v", err)
	}
	if _, err := LoadDataPartPrefix(dir, 5, 1); err == nil || err.Error() != filepath.Join(dir, SummaryFile)+": k = 2, not the 1 machines asked for" {
		t.Errorf("a placement on 2 machines for 1: %v", err)
	}
}

// TestReadDataPartBounds: without k, a machine number is bounded by the
// number of samples (k is at most that), so a huge one is refused on its
// line before anything is sized by it; so is a k above the samples.
func TestReadDataPartBounds(t *testing.T) {
	for _, c := range []struct {
		data string
		k    int
		want string
	}{
		{"0\n10000000\n1\n", 0, "d.part:2: machine 10000000: want a machine number below the 3 samples (k, the number of machines, is at most the number of samples)"},
		{"0\n99999999999\n1\n", 0, "d.part:2: machine 99999999999: want a machine number below the 3 samples (k, the number of machines, is at most the number of samples)"},
		{"0\n3\n1\n", 0, "d.part:2: machine 3: want a machine number below the 3 samples (k, the number of machines, is at most the number of samples)"},
		{"0\n99999999999999999999\n1\n", 0, `d.part:2: "99999999999999999999": want a non-negative machine number`},
		{"0\n1\n2\n", 10000000, "d.part: k = 10000000: more machines than the 3 samples"},
	} {
		if _, _, err := ReadDataPart(strings.NewReader(c.data), "d.part", 3, c.k); err == nil || err.Error() != c.want {
			t.Errorf("%q with k = %d: %v\nwant %s", c.data, c.k, err, c.want)
		}
	}
	if data, k, err := ReadDataPart(strings.NewReader("0\n2\n1\n"), "d.part", 3, 0); err != nil || k != 3 || !reflect.DeepEqual(data, []int32{0, 2, 1}) {
		t.Errorf("k = n: %v %d %v", data, k, err)
	}
}

// FuzzReadPartFiles: the part-file readers never panic, and what they
// accept is a placement of the 3 samples and 3 parameters on k machines,
// 1 ≤ k ≤ 3.
func FuzzReadPartFiles(f *testing.F) {
	// A reader that allocated what its input claims would die of out
	// of memory under the cap: a failing input.
	memcap.Cap(f, 1<<30)
	g, _ := graph.FromAdjacency(3, [][]uint32{{0, 1}, {2}, {1}})
	f.Add([]byte("0\n1\n0\n"), []byte("0 0\n1 1\n2 0\n"), uint8(0))
	f.Add([]byte("0\n99999999999\n1\n"), []byte("1\n0\n1\n"), uint8(2))
	f.Add([]byte(" 2 \n\n+1\n0\n"), []byte("2 1\n0 0\n1 -1\n"), uint8(3))
	f.Fuzz(func(t *testing.T, data, param []byte, kk uint8) {
		k := int(kk % 5)
		d, kd, err := ReadDataPart(bytes.NewReader(data), "d", 3, k)
		if err != nil {
			return
		}
		if len(d) != 3 || kd < 1 || kd > 3 || (k > 0 && kd != k) {
			t.Fatalf("%q, k = %d: %v on %d machines", data, k, d, kd)
		}
		for _, i := range d {
			if i < 0 || int(i) >= kd {
				t.Fatalf("%q: machine %d of %d", data, i, kd)
			}
		}
		q, err := ReadParamPart(bytes.NewReader(param), "p", g, kd)
		if err != nil {
			return
		}
		if err := (&Placement{K: kd, Data: d, Param: q}).Validate(g); err != nil {
			t.Fatalf("%q %q: accepted %v", data, param, err)
		}
	})
}

// TestReadDirRefusesNonRegular: a placement directory whose summary or
// part file is a FIFO, a link to /dev/zero or a directory is refused,
// naming the file and what it is; before, a FIFO made ReadDir wait for
// ever for a writer, and a summary.json linked to /dev/zero was read
// until memory ran out.
func TestReadDirRefusesNonRegular(t *testing.T) {
	g, _ := graph.FromAdjacency(3, [][]uint32{{0, 1}, {2}, {1}})
	cases := []struct {
		file, kind string // kind: fifo, zero (a link to /dev/zero), dir or long (a line without an end)
		want       string
	}{
		{SummaryFile, "fifo", "open DIR/summary.json: a named pipe (FIFO): want a regular file"},
		{SummaryFile, "zero", "open DIR/summary.json: a character device: want a regular file"},
		{SummaryFile, "dir", "open DIR/summary.json: is a directory, want a file"},
		{DataPartFile, "fifo", "open DIR/data.part: a named pipe (FIFO): want a regular file"},
		{DataPartFile, "zero", "open DIR/data.part: a character device: want a regular file"},
		{ParamPartFile, "fifo", "open DIR/param.part: a named pipe (FIFO): want a regular file"},
		{ParamPartFile, "zero", "open DIR/param.part: a character device: want a regular file"},
		{DataPartFile, "long", "DIR/data.part:1: a line of more than 1048576 bytes: want one machine number, or a parameter id and a machine, a line"},
	}
	for _, tc := range cases {
		t.Run(tc.file+" "+tc.kind, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "p")
			p := &Placement{K: 2, Data: []int32{0, 1, 0}, Param: []int32{0, 0, 1}}
			if err := WriteDir(dir, g, p, nil); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, tc.file)
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
			var err error
			switch tc.kind {
			case "fifo":
				err = syscall.Mkfifo(path, 0o644)
			case "zero":
				err = os.Symlink("/dev/zero", path)
			case "dir":
				err = os.Mkdir(path, 0o755)
			case "long":
				err = os.WriteFile(path, bytes.Repeat([]byte("0"), 2<<20), 0o644)
			}
			if err != nil {
				t.Skip(err)
			}
			done := make(chan error, 1)
			go func() {
				_, err := ReadDir(dir, g, 0)
				done <- err
			}()
			select {
			case err = <-done:
			case <-time.After(colotest.HangTimeout(t)):
				t.Fatalf("ReadDir has not returned in %v", colotest.HangTimeout(t))
			}
			if want := strings.ReplaceAll(tc.want, "DIR", dir); err == nil || err.Error() != want {
				t.Fatalf("ReadDir: %v\nwant %s", err, want)
			}
		})
	}
}

// TestWriteDirReplacesOnlyRegular: WriteDir refuses, before it writes or
// removes anything, a directory where one of its files goes, and leaves
// a summary.json that is a link in place, writing through it. Before, a
// stale summary.json was removed whatever it was, an empty directory
// among them, and replaced by a file; a directory named param.part was
// found after data.part had been written.
func TestWriteDirReplacesOnlyRegular(t *testing.T) {
	g, _ := graph.FromAdjacency(2, [][]uint32{{0}, {1}})
	p := &Placement{K: 2, Data: []int32{0, 1}, Param: []int32{1, 0}}
	for _, name := range []string{SummaryFile, ParamPartFile, DataPartFile} {
		t.Run(name+" a directory", func(t *testing.T) {
			dir := t.TempDir()
			if err := os.Mkdir(filepath.Join(dir, name), 0o755); err != nil {
				t.Fatal(err)
			}
			err := WriteDir(dir, g, p, nil)
			if want := "cannot write " + filepath.Join(dir, name) + ": it is a directory"; err == nil || err.Error() != want {
				t.Fatalf("WriteDir: %v, want %s", err, want)
			}
			if err := CheckDir(dir); err == nil {
				t.Fatal("CheckDir passed")
			}
			entries, _ := os.ReadDir(dir)
			if len(entries) != 1 || !entries[0].IsDir() {
				t.Fatalf("the directory holds %v after the refusal, want only the directory %s", entries, name)
			}
		})
	}
	t.Run("summary.json a link", func(t *testing.T) {
		dir, elsewhere := t.TempDir(), t.TempDir()
		target := filepath.Join(elsewhere, "summary.json")
		if err := os.WriteFile(target, []byte(`{"k": 9}`), 0o644); err != nil {
			t.Fatal(err)
		}
		link := filepath.Join(dir, SummaryFile)
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
		if err := WriteDir(dir, g, p, nil); err != nil {
			t.Fatal(err)
		}
		if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
			t.Fatalf("summary.json is no longer a link: %v", err)
		}
		if q, err := ReadDir(dir, g, 0); err != nil || !reflect.DeepEqual(q, p) {
			t.Fatalf("ReadDir through the link: %v, %v", q, err)
		}
	})
}
