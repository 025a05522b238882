package ooc

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"colo/graph"
	"colo/partition"
	"colo/placement"
)

// writeLibSVMFile writes g as libsvm text, gzip-compressed when gz.
func writeLibSVMFile(t *testing.T, g *graph.Graph, gz bool) string {
	t.Helper()
	var buf bytes.Buffer
	if err := graph.WriteLibSVM(&buf, g); err != nil {
		t.Fatal(err)
	}
	return writeFile(t, "data.libsvm", buf.Bytes(), gz)
}

func writeFile(t *testing.T, name string, data []byte, gz bool) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if gz {
		var z bytes.Buffer
		zw := gzip.NewWriter(&z)
		zw.Write(data)
		zw.Close()
		data, path = z.Bytes(), path+".gz"
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// inMemoryDir partitions the file in memory as colo partition does and
// writes the placement; it returns the directory and the cost.
func inMemoryDir(t *testing.T, path string, load graph.LoadOptions, opt partition.Options) (string, *graph.Graph, *placement.Summary) {
	t.Helper()
	g, err := graph.Load(path, load)
	if err != nil {
		t.Fatal(err)
	}
	p, err := partition.Parsa(g, opt)
	if err != nil {
		t.Fatal(err)
	}
	s, err := placement.NewSummary(g, p, opt.Theta)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := placement.WriteDir(dir, g, p, s); err != nil {
		t.Fatal(err)
	}
	return dir, g, s
}

// outOfCoreDir partitions the file out of core and writes the placement.
func outOfCoreDir(t *testing.T, path string, load graph.LoadOptions, opt partition.Options, memory int64) (string, *FileResult) {
	t.Helper()
	res, err := ParsaFile(path, opt, OutOfCore{Memory: memory, TempDir: t.TempDir(), Load: load})
	if err != nil {
		t.Fatal(err)
	}
	defer res.Close()
	dir := t.TempDir()
	if err := res.WriteDir(dir, res.Summary); err != nil {
		t.Fatal(err)
	}
	return dir, res
}

// samePlacement checks that two placement directories hold the same
// placement, element by element, and the same part files byte for byte.
func samePlacement(t *testing.T, g *graph.Graph, mem, ooc string, k int) {
	t.Helper()
	a, err := placement.ReadDir(mem, g, k)
	if err != nil {
		t.Fatal(err)
	}
	b, err := placement.ReadDir(ooc, g, k)
	if err != nil {
		t.Fatalf("out-of-core output: %v", err)
	}
	if len(a.Data) != len(b.Data) || len(a.Param) != len(b.Param) {
		t.Fatalf("sizes differ: %d/%d samples, %d/%d params", len(a.Data), len(b.Data), len(a.Param), len(b.Param))
	}
	for u := range a.Data {
		if a.Data[u] != b.Data[u] {
			t.Fatalf("sample %d: in memory on machine %d, out of core on %d", u, a.Data[u], b.Data[u])
		}
	}
	for v := range a.Param {
		if a.Param[v] != b.Param[v] {
			t.Fatalf("parameter %d: in memory on machine %d, out of core on %d", v, a.Param[v], b.Param[v])
		}
	}
	for _, f := range []string{placement.DataPartFile, placement.ParamPartFile} {
		x, _ := os.ReadFile(filepath.Join(mem, f))
		y, _ := os.ReadFile(filepath.Join(ooc, f))
		if !bytes.Equal(x, y) {
			t.Fatalf("%s differs", f)
		}
	}
}

// sameCost checks that the out-of-core summary reports what
// placement.NewSummary reports in memory.
func sameCost(t *testing.T, want, got *placement.Summary) {
	t.Helper()
	w, g := *want.Cost, *got.Cost
	if fmt.Sprint(w) != fmt.Sprint(g) {
		t.Fatalf("cost:\n in memory   %+v\n out of core %+v", w, g)
	}
	if want.Random != got.Random {
		t.Fatalf("random baseline: in memory %+v, out of core %+v", want.Random, got.Random)
	}
	if want.NumSamp != got.NumSamp || want.NumParams != got.NumParams || want.NumEdges != got.NumEdges {
		t.Fatalf("sizes: in memory %d/%d/%d, out of core %d/%d/%d", want.NumSamp, want.NumParams, want.NumEdges,
			got.NumSamp, got.NumParams, got.NumEdges)
	}
}

// TestParsaFileEqualsInMemory: out-of-core Parsa gives exactly the
// placement of Parsa in memory, for the same seed and blocks, over the
// initialisations, growth rules, block counts and k beyond one mask word.
func TestParsaFileEqualsInMemory(t *testing.T) {
	g, err := graph.PowerLaw(graph.DefaultPowerLaw(3000, 7))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		k    int
		gz   bool
		set  func(*partition.ParsaOptions)
	}{
		{"default", 8, false, func(*partition.ParsaOptions) {}},
		{"gzip", 8, true, func(*partition.ParsaOptions) {}},
		{"none", 4, false, func(o *partition.ParsaOptions) { o.Init = partition.InitNone }},
		{"global", 8, false, func(o *partition.ParsaOptions) { o.Init = partition.InitGlobal; o.GlobalFraction = 0.2 }},
		{"individual-3", 8, false, func(o *partition.ParsaOptions) { o.InitBlocks = 3; o.Blocks = 5 }},
		{"grow-params", 16, false, func(o *partition.ParsaOptions) { o.GrowBy = partition.GrowParams; o.Epsilon = 0.1 }},
		{"blocks-1", 3, false, func(o *partition.ParsaOptions) { o.Blocks = 1 }},
		{"k-70", 70, false, func(o *partition.ParsaOptions) { o.Blocks = 13 }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := writeLibSVMFile(t, g, c.gz)
			opt := partition.Options{K: c.k, Seed: 3, Parsa: partition.DefaultParsaOptions()}
			c.set(&opt.Parsa)
			load := graph.DefaultLoadOptions()
			mem, lg, s := inMemoryDir(t, path, load, opt)
			ooc, res := outOfCoreDir(t, path, load, opt, 0)
			samePlacement(t, lg, mem, ooc, c.k)
			sameCost(t, s, res.Summary)
			// Every sample placed once, balanced as in memory.
			var total int64
			for _, c := range res.Summary.Samples {
				total += c
			}
			if total != int64(lg.NumSamples()) {
				t.Fatalf("%d samples placed, want %d", total, lg.NumSamples())
			}
			if opt.Parsa.GrowBy != partition.GrowParams {
				lo, hi := int64(lg.NumSamples()/c.k), int64((lg.NumSamples()+c.k-1)/c.k)
				for i, n := range res.Summary.Samples {
					if n < lo || n > hi {
						t.Fatalf("machine %d has %d samples, want %d..%d", i, n, lo, hi)
					}
				}
			}
		})
	}
}

// TestParsaFileSNAP: SNAP edge lists, directed and undirected, with
// repeated edges, self-loops (kept and dropped), isolated targets and
// unsorted, sparse node ids.
func TestParsaFileSNAP(t *testing.T) {
	var b strings.Builder
	b.WriteString("# a test graph\n")
	rng := placement.NewRand(5)
	for i := 0; i < 4000; i++ {
		u := rng.IntN(600) * 7
		v := rng.IntN(600) * 7
		if rng.IntN(10) == 0 {
			v = u // self-loops
		}
		fmt.Fprintf(&b, "%d\t%d\n", u, v)
		if rng.IntN(20) == 0 {
			fmt.Fprintf(&b, "%d %d\n", u, v) // repeated edge
		}
	}
	fmt.Fprintf(&b, "%d %d\n", uint64(1)<<40, 7) // a wide id
	for _, c := range []struct {
		name string
		load graph.LoadOptions
	}{
		{"directed", graph.LoadOptions{Format: graph.FormatSNAP, IndexBase: -1, HashBits: 20}},
		{"undirected", graph.LoadOptions{Format: graph.FormatSNAPUndirected, IndexBase: -1, HashBits: 20}},
		{"drop-self-loops", graph.LoadOptions{Format: graph.FormatSNAP, IndexBase: -1, HashBits: 20, DropSelfLoops: true}},
		{"detected-gzip", graph.DefaultLoadOptions()},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := writeFile(t, "edges.txt", []byte(b.String()), c.name == "detected-gzip")
			opt := partition.Options{K: 8, Seed: 2, Parsa: partition.DefaultParsaOptions()}
			opt.Parsa.Blocks = 4
			mem, lg, s := inMemoryDir(t, path, c.load, opt)
			ooc, res := outOfCoreDir(t, path, c.load, opt, 0)
			samePlacement(t, lg, mem, ooc, 8)
			sameCost(t, s, res.Summary)
		})
	}
}

// TestParsaFileMemoryCap: a cap below the need is an error that says how
// much is needed; a cap at the need runs and forces smaller blocks only
// when the default ones do not fit.
func TestParsaFileMemoryCap(t *testing.T) {
	g, err := graph.PowerLaw(graph.DefaultPowerLaw(2000, 1))
	if err != nil {
		t.Fatal(err)
	}
	path := writeLibSVMFile(t, g, false)
	opt := partition.Options{K: 8, Seed: 1, Parsa: partition.DefaultParsaOptions()}
	_, err = ParsaFile(path, opt, OutOfCore{Memory: 1 << 20, TempDir: t.TempDir(), Load: graph.DefaultLoadOptions()})
	var me *MemoryError
	if !errors.As(err, &me) {
		t.Fatalf("1 MiB cap: got %v, want a *MemoryError", err)
	}
	if me.Need <= me.Cap || !strings.Contains(err.Error(), FormatBytes(me.Need)) {
		t.Fatalf("error %q: want the amount needed (%d) above the cap", err, me.Need)
	}
	// At exactly the need the run goes through.
	_, res := outOfCoreDir(t, path, graph.DefaultLoadOptions(), opt, me.Need)
	if res.Stats.Needed > me.Need {
		t.Fatalf("needed %d under a cap of %d", res.Stats.Needed, me.Need)
	}
}

// TestParsaFileBadInput: malformed lines give the readers' file:line
// errors; formats that cannot be streamed and options that need the graph
// are refused.
func TestParsaFileBadInput(t *testing.T) {
	opt := partition.Options{K: 2, Seed: 1, Parsa: partition.DefaultParsaOptions()}
	load := graph.DefaultLoadOptions()
	for _, c := range []struct{ name, text, want string }{
		{"label", "1 1:1 2:1\nx 3:1\n", ":2: field 1:"},
		{"pair", "1 1:1 2:1\n1 3:1 4\n", ":2: field 3:"},
		{"duplicate", "1 1:1 2:1\n1 3:1 3:2\n", ":2: field 3:"},
		{"empty", "# nothing\n", "empty"},
		{"snap", "1 2\n3 x\n", ":2: field 2:"},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := writeFile(t, c.name+".txt", []byte(c.text), false)
			_, err := ParsaFile(path, opt, OutOfCore{TempDir: t.TempDir(), Load: load})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want an error containing %q", err, c.want)
			}
			_, lerr := graph.Load(path, load)
			if lerr == nil || lerr.Error() != err.Error() {
				t.Fatalf("got %v, want the loader's %v", err, lerr)
			}
		})
	}
	path := writeFile(t, "ok.libsvm", []byte("1 1:1\n-1 2:1\n1 1:1 2:1\n"), false)
	bad := opt
	bad.Parsa.Refine = 1
	if _, err := ParsaFile(path, bad, OutOfCore{TempDir: t.TempDir(), Load: load}); err == nil {
		t.Fatal("refinement out of core: want an error")
	}
	bad = opt
	bad.Parsa.Threads = 2
	if _, err := ParsaFile(path, bad, OutOfCore{TempDir: t.TempDir(), Load: load}); err == nil {
		t.Fatal("two threads out of core: want an error")
	}
	if _, err := ParsaFile(path, partition.Options{K: 4, Parsa: partition.DefaultParsaOptions()}, OutOfCore{TempDir: t.TempDir(), Load: load}); err == nil {
		t.Fatal("k = 4 > 3 samples: want an error")
	}
}

// TestParseBytes checks sizes with units.
func TestParseBytes(t *testing.T) {
	for s, want := range map[string]int64{"64MiB": 64 << 20, "64M": 64 << 20, "1.5GB": 1500000000, "512k": 512 << 10,
		"100": 100, "2 GiB": 2 << 30, "1KB": 1000} {
		got, err := ParseBytes(s)
		if err != nil || got != want {
			t.Errorf("ParseBytes(%q) = %d, %v; want %d", s, got, err, want)
		}
	}
	for _, s := range []string{"", "MiB", "12 parsecs", "-5M", "1e400"} {
		if _, err := ParseBytes(s); err == nil {
			t.Errorf("ParseBytes(%q): want an error", s)
		}
	}
}

// BenchmarkParsaFile compares Parsa out of core with loading the file and
// running Parsa in memory, whole runs with the cost and the random
// baseline, on a generated power-law graph (k = 16):
//
//	go test ./partition -run '^$' -bench ParsaFile -benchtime 3x
func BenchmarkParsaFile(b *testing.B) {
	g, err := graph.PowerLaw(graph.DefaultPowerLaw(200000, 7))
	if err != nil {
		b.Fatal(err)
	}
	var buf bytes.Buffer
	if err := graph.WriteLibSVM(&buf, g); err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(b.TempDir(), "powerlaw.libsvm")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		b.Fatal(err)
	}
	edges := float64(g.NumEdges())
	opt := partition.Options{K: 16, Seed: 1, Parsa: partition.DefaultParsaOptions()}
	load := graph.DefaultLoadOptions()
	b.Run("in-memory", func(b *testing.B) {
		for b.Loop() {
			g, err := graph.Load(path, load)
			if err != nil {
				b.Fatal(err)
			}
			p, err := partition.Parsa(g, opt)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := placement.NewSummary(g, p, 0); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(edges*float64(b.N)/b.Elapsed().Seconds(), "edges/s")
	})
	b.Run("out-of-core", func(b *testing.B) {
		for b.Loop() {
			res, err := ParsaFile(path, opt, OutOfCore{TempDir: b.TempDir(), Load: load})
			if err != nil {
				b.Fatal(err)
			}
			res.Close()
		}
		b.ReportMetric(edges*float64(b.N)/b.Elapsed().Seconds(), "edges/s")
	})
}

// TestParsaFileHostileIDs: ids spread over 64 bits grow the id index as a
// sorted list; a cap it outgrows stops the read with a MemoryError
// instead of running out of memory. The process is given a fixed size
// before the run, so that what is checked is the arithmetic of the cap
// against the index, not this process's resident memory (which the
// garbage collector and the return of freed pages to the system move by
// megabytes, more so on a loaded machine).
func TestParsaFileHostileIDs(t *testing.T) {
	const samples, perSample = 6000, 100
	rng := placement.NewRand(8)
	var b strings.Builder
	for i := 0; i < samples; i++ {
		b.WriteString("1")
		for j := 0; j < perSample; j++ {
			fmt.Fprintf(&b, " %d:1", rng.Uint64()>>1)
		}
		b.WriteString("\n")
	}
	path := writeFile(t, "hostile.libsvm", []byte(b.String()), false)
	opt := partition.Options{K: 4, Seed: 1, Parsa: partition.DefaultParsaOptions()}
	// 1 MiB for the index: a tenth of the file's distinct ids (8 bytes
	// each). The base is above what this test holds, so that the run's
	// soft memory limit (the cap) does not make the collector run hot.
	const base, room = 256 << 20, 1 << 20
	memCap := int64(base + oocBuffers + room)
	_, err := parsaFile(path, opt, OutOfCore{Memory: memCap, TempDir: t.TempDir(), Load: graph.DefaultLoadOptions()}, base)
	var me *MemoryError
	if !errors.As(err, &me) || !strings.Contains(err.Error(), "already while reading") {
		t.Fatalf("got %v, want a MemoryError while reading", err)
	}
	// The read stopped once the index outgrew its room, long before the
	// end of the file: within the 2^16 ids read between two checks and
	// a merge of the sorted list (which at most doubles it).
	idx := me.Parts["index"]
	if me.Parts["process"] != base || me.Need != base+oocBuffers+int64((1+oocSlack)*float64(idx)) || me.Need <= memCap {
		t.Fatalf("need %d of cap %d with parts %v: want the process %d, buffers %d and the index with %.0f%% slack, over the cap",
			me.Need, memCap, me.Parts, int64(base), oocBuffers, 100*oocSlack)
	}
	if me.Samples >= samples || idx > 2*room+8<<16 {
		t.Fatalf("stopped after %d of %d samples with an index of %d bytes: want a stop once it outgrew %d bytes", me.Samples, samples, idx, room)
	}
	t.Logf("stopped after %d samples, %d ids: index %d bytes", me.Samples, me.Params, idx)
}
