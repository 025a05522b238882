package ooc

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"colo/graph"
	"colo/partition"
	"colo/placement"
)

// memSums returns W sums that add what W goroutines pass, as the
// workers' all-reduce does, counts the calls, and an abort that fails the
// sums waiting and to come (a failed process ends the job).
func memSums(t *testing.T, W int) (sums []func([]float64) ([]float64, error), calls *int, abort func()) {
	type req struct {
		vals  []float64
		reply chan []float64
	}
	in := make(chan req)
	done := make(chan struct{})
	var once sync.Once
	abort = func() { once.Do(func() { close(done) }) }
	t.Cleanup(abort)
	calls = new(int)
	go func() {
		for {
			reqs := make([]req, 0, W)
			for len(reqs) < W {
				select {
				case r := <-in:
					reqs = append(reqs, r)
				case <-done:
					return
				}
			}
			*calls++
			sum := make([]float64, len(reqs[0].vals))
			ok := true
			for _, r := range reqs {
				if len(r.vals) != len(sum) {
					ok = false
					break
				}
				for i, v := range r.vals {
					sum[i] += v
				}
			}
			for _, r := range reqs {
				if ok {
					r.reply <- slices.Clone(sum)
				} else {
					r.reply <- nil
				}
			}
		}
	}()
	for range W {
		sums = append(sums, func(vals []float64) ([]float64, error) {
			r := req{vals, make(chan []float64, 1)}
			select {
			case in <- r:
			case <-done:
				return nil, errors.New("the job ended")
			}
			select {
			case got := <-r.reply:
				if got == nil {
					return nil, errors.New("the processes passed different numbers of values")
				}
				return got, nil
			case <-done:
				return nil, errors.New("the job ended")
			}
		})
	}
	return sums, calls, abort
}

// planByRanges plans the file on W processes reading it by ranges, in
// goroutines, and returns each process's plan (process 0's whole).
func planByRanges(t *testing.T, path string, opt partition.Options, load graph.LoadOptions, W, chunk int) ([]*FilePlan, int) {
	t.Helper()
	sums, calls, _ := memSums(t, W)
	dir, tmp := t.TempDir(), t.TempDir()
	plans := make([]*FilePlan, W)
	errs := make([]error, W)
	var wg sync.WaitGroup
	for r := range W {
		wg.Go(func() {
			plans[r], errs[r] = PlanParsaFile(path, opt, FilePlanOptions{Load: load, TempDir: tmp,
				Keep: func(j, _ int) bool { return j%W == r }, Global: r == 0, Whole: r == 0,
				Ranges: &FileRanges{Rank: r, Count: W, Dir: dir, Sum: sums[r], SumChunk: chunk}})
		})
	}
	wg.Wait()
	for r, err := range errs {
		if err != nil {
			t.Fatalf("W=%d: process %d: %v", W, r, err)
		}
	}
	return plans, *calls
}

// TestPlanByRangesIsPlanOfTheWholeFile checks that processes reading a
// file by ranges of lines (FileRanges) get the plan of the whole file:
// each the same blocks, rows, global sample, bounds, seed and statistics
// as a process that parses the whole file, and process 0 the same
// Repair, Summary and WriteDir output, byte for byte; over libsvm with
// blank and comment lines and a last line without a newline, SNAP, a file
// of fewer lines than processes, for W = 1..4 (and W = 3 with the id
// sets summed in chunks of 5 values), and that a compressed file is read
// whole.
func TestPlanByRangesIsPlanOfTheWholeFile(t *testing.T) {
	pg, err := graph.PowerLaw(graph.DefaultPowerLaw(1500, 4))
	if err != nil {
		t.Fatal(err)
	}
	var svm bytes.Buffer
	if err := graph.WriteLibSVM(&svm, pg); err != nil {
		t.Fatal(err)
	}
	// Blank and comment lines here and there, and no newline at the end.
	lines := strings.Split(strings.TrimRight(svm.String(), "\n"), "\n")
	var odd strings.Builder
	odd.WriteString("# a libsvm file\n\n")
	for i, l := range lines {
		odd.WriteString(l)
		switch {
		case i == len(lines)-1:
		case i%97 == 3:
			odd.WriteString(" # a comment\n\n   \n# a comment line\n")
		default:
			odd.WriteString("\n")
		}
	}
	var snap strings.Builder
	snap.WriteString("# FromNodeId\tToNodeId\n")
	rng := placement.NewRand(3)
	for i := range 2500 {
		fmt.Fprintf(&snap, "%d\t%d\n", rng.IntN(400)*5, rng.IntN(400)*5)
		if i%301 == 0 {
			snap.WriteString("\n# comment\n")
		}
	}
	snap.WriteString("7\t11") // no newline
	snapLoad := graph.LoadOptions{Format: graph.FormatSNAP, IndexBase: -1, HashBits: 20, DropSelfLoops: true}
	snapUndirected := graph.LoadOptions{Format: graph.FormatSNAPUndirected, IndexBase: -1, HashBits: 20}
	for _, c := range []struct {
		name string
		path string
		load graph.LoadOptions
		k    int
		po   partition.ParsaOptions
	}{
		{"libsvm", writeFile(t, "plain.svm", svm.Bytes(), false), graph.DefaultLoadOptions(), 6, partition.ParsaOptions{Init: partition.InitGlobal, Blocks: 11}},
		{"libsvm-odd-lines", writeFile(t, "odd.svm", []byte(odd.String()), false), graph.DefaultLoadOptions(), 70, partition.ParsaOptions{Init: partition.InitGlobal, GlobalFraction: 0.2}},
		{"libsvm-two-lines", writeFile(t, "two.svm", []byte("1 3:1 9:1\n-1 2:1 3:1 400:1"), false), graph.DefaultLoadOptions(), 2, partition.ParsaOptions{Init: partition.InitNone}},
		{"libsvm-huge-ids", writeFile(t, "huge.svm", []byte("1 3:1 18446744073709551615:1\n\n-1 2:1 9007199254740993:1\n1 5:1\n"), false),
			graph.DefaultLoadOptions(), 2, partition.ParsaOptions{Init: partition.InitNone}},
		{"snap", writeFile(t, "edges.txt", []byte(snap.String()), false), snapLoad, 5, partition.ParsaOptions{Init: partition.InitGlobal, Blocks: 7}},
		{"snap-undirected", writeFile(t, "edges.txt", []byte(snap.String()), false), snapUndirected, 4, partition.ParsaOptions{Init: partition.InitGlobal}},
		{"snap-gz", writeFile(t, "edges.txt", []byte(snap.String()), true), snapLoad, 5, partition.ParsaOptions{Init: partition.InitGlobal, Blocks: 7}},
	} {
		t.Run(c.name, func(t *testing.T) {
			opt := partition.Options{K: c.k, Seed: 5, Parsa: c.po}
			whole, err := PlanParsaFile(c.path, opt, FilePlanOptions{Load: c.load, TempDir: t.TempDir(), Global: true, Whole: true})
			if err != nil {
				t.Fatal(err)
			}
			defer whole.Close()
			n, m, k := whole.Samples(), whole.Params(), c.k
			// A placement far off the bounds, for Repair, and one to write.
			unbalanced := placement.New(k, n, m)
			for u := range n {
				unbalanced.Data[u] = int32(u % 2)
			}
			p := placement.New(k, n, m)
			for u := range n {
				p.Data[u] = int32(u * 7 % k)
			}
			for v := range m {
				p.Param[v] = int32(v * 3 % k)
			}
			wantRepair := unbalanced.Clone()
			wantStats, err := whole.Repair(wantRepair)
			if err != nil {
				t.Fatal(err)
			}
			wantSum, err := whole.Summary(p, 0)
			if err != nil {
				t.Fatal(err)
			}
			wantDir := filepath.Join(t.TempDir(), "want")
			if err := whole.WriteDir(wantDir, p, wantSum); err != nil {
				t.Fatal(err)
			}
			// The last run sums the id sets in chunks of 5 values, which
			// cut the sets and their entries anywhere.
			for _, run := range []struct{ W, chunk int }{{1, 0}, {2, 0}, {3, 0}, {4, 0}, {3, 5}} {
				W := run.W
				plans, calls := planByRanges(t, c.path, opt, c.load, W, run.chunk)
				for _, fp := range plans {
					defer fp.Close()
				}
				st := plans[0].FileStats()
				if strings.HasSuffix(c.path, ".gz") {
					if st.Read != "whole" || !st.Compressed || calls != 0 {
						t.Fatalf("W=%d: a compressed file read %q (compressed %v) with %d sums: want whole, none", W, st.Read, st.Compressed, calls)
					}
				} else if st.Read != "range" || len(st.Range) != 2 || calls == 0 {
					t.Fatalf("W=%d: read %q %v with %d sums: want by ranges", W, st.Read, st.Range, calls)
				}
				var covered int64
				for r, fp := range plans {
					if fp.Samples() != n || fp.Params() != m || fp.Edges() != whole.Edges() || len(fp.Blocks) != len(whole.Blocks) ||
						!slices.Equal(fp.Lo, whole.Lo) || !slices.Equal(fp.Hi, whole.Hi) || fp.ParamSeed != whole.ParamSeed || fp.Stats != whole.Stats {
						t.Fatalf("W=%d: process %d: plan of %d/%d/%d, %d blocks, %+v; want %d/%d/%d, %d blocks, %+v", W, r,
							fp.Samples(), fp.Params(), fp.Edges(), len(fp.Blocks), fp.Stats, n, m, whole.Edges(), len(whole.Blocks), whole.Stats)
					}
					if rg := fp.FileStats().Range; len(rg) == 2 {
						covered += rg[1] - rg[0]
					}
					for j := r; j < len(whole.Blocks); j += W {
						got, err := fp.Rows(j)
						if err != nil {
							t.Fatal(err)
						}
						got = cloneRows(got)
						want, err := whole.Rows(j)
						if err != nil {
							t.Fatal(err)
						}
						if !sameBlockRows(got, want) {
							t.Fatalf("W=%d: process %d: block %d differs", W, r, j)
						}
					}
				}
				if info, err := os.Stat(c.path); err == nil && st.Read == "range" && covered != info.Size() {
					t.Fatalf("W=%d: the ranges cover %d bytes of %d", W, covered, info.Size())
				}
				fp := plans[0]
				if whole.Global != nil || whole.Stats.InitSample > 0 {
					got, err := fp.GlobalRows()
					if err != nil {
						t.Fatal(err)
					}
					got = cloneRows(got)
					want, err := whole.GlobalRows()
					if err != nil {
						t.Fatal(err)
					}
					if !sameBlockRows(got, want) {
						t.Fatalf("W=%d: the global sample differs", W)
					}
				}
				gotRepair := unbalanced.Clone()
				gotStats, err := fp.Repair(gotRepair)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(gotRepair.Data, wantRepair.Data) || *gotStats != *wantStats {
					t.Fatalf("W=%d: the repair differs", W)
				}
				sum, err := fp.Summary(p, 0)
				if err != nil {
					t.Fatal(err)
				}
				dir := filepath.Join(t.TempDir(), fmt.Sprint("w", W))
				if err := fp.WriteDir(dir, p, sum); err != nil {
					t.Fatal(err)
				}
				for _, name := range []string{placement.DataPartFile, placement.ParamPartFile, placement.SummaryFile} {
					got, err1 := os.ReadFile(filepath.Join(dir, name))
					want, err2 := os.ReadFile(filepath.Join(wantDir, name))
					if err1 != nil || err2 != nil {
						t.Fatal(err1, err2)
					}
					if !bytes.Equal(got, want) {
						t.Fatalf("W=%d: %s differs from the one of the whole file", W, name)
					}
				}
			}
		})
	}
}

func cloneRows(b partition.BlockRows) partition.BlockRows {
	return partition.BlockRows{Samples: slices.Clone(b.Samples), Off: slices.Clone(b.Off), Adj: slices.Clone(b.Adj), Local: b.Local}
}

func sameBlockRows(a, b partition.BlockRows) bool {
	return slices.Equal(a.Samples, b.Samples) && slices.Equal(a.Off, b.Off) && slices.Equal(a.Adj, b.Adj) && a.Local == b.Local
}

// TestPlanByRangesErrors checks that a malformed line read by a range is
// reported with its line number in the whole file, by the process whose
// range holds it, and that a file without samples in any range is
// graph.Stream's error for it.
func TestPlanByRangesErrors(t *testing.T) {
	var b strings.Builder
	for i := range 400 {
		fmt.Fprintf(&b, "1 %d:1 %d:1\n", i+1, i+2)
	}
	b.WriteString("1 5:x\n")
	for i := range 40 {
		fmt.Fprintf(&b, "1 %d:1\n", i+1)
	}
	bad := writeFile(t, "bad.svm", []byte(b.String()), false)
	empty := writeFile(t, "empty.svm", []byte("# nothing\n\n# at all\n"), false)
	_, streamErr := graph.Stream(empty, graph.DefaultLoadOptions(), graph.Visitor{})
	if streamErr == nil {
		t.Fatal("graph.Stream read samples from a file without any")
	}
	_, err := PlanParsaFile(bad, partition.Options{K: 2, Seed: 1, Parsa: partition.ParsaOptions{Init: partition.InitGlobal}}, FilePlanOptions{Load: graph.DefaultLoadOptions(), TempDir: t.TempDir(),
		Ranges: &FileRanges{Count: 1, Dir: t.TempDir(), Sum: func(v []float64) ([]float64, error) { return v, nil }, SumChunk: -1}})
	if err == nil || !strings.Contains(err.Error(), "sum chunk = -1") {
		t.Errorf("a negative sum chunk: %v, want an error naming it", err)
	}
	for W := 1; W <= 4; W++ {
		for _, path := range []string{bad, empty} {
			sums, _, abort := memSums(t, W)
			errs := make([]error, W)
			var wg sync.WaitGroup
			for r := range W {
				wg.Go(func() {
					fp, err := PlanParsaFile(path, partition.Options{K: 2, Seed: 1, Parsa: partition.ParsaOptions{Init: partition.InitGlobal}}, FilePlanOptions{Load: graph.DefaultLoadOptions(), TempDir: t.TempDir(),
						Global: r == 0, Whole: r == 0, Ranges: &FileRanges{Rank: r, Count: W, Dir: t.TempDir(), Sum: sums[r]}})
					if err != nil {
						errs[r] = err
						abort()
						return
					}
					fp.Close()
				})
			}
			wg.Wait()
			if path == empty {
				for r, err := range errs {
					if err == nil || err.Error() != streamErr.Error() {
						t.Errorf("W=%d: process %d: %v, want %v", W, r, err, streamErr)
					}
				}
				continue
			}
			parsed := 0
			for _, err := range errs {
				if pe, ok := errors.AsType[*graph.ParseError](err); ok {
					parsed++
					if pe.File != bad || pe.Line != 401 || pe.Field != 2 {
						t.Errorf("W=%d: %v: want %s line 401, field 2", W, err, bad)
					}
				} else if err == nil {
					t.Errorf("W=%d: a process ended without an error", W)
				}
			}
			if parsed != 1 {
				t.Errorf("W=%d: %d processes report the malformed line, want 1: %v", W, parsed, errs)
			}
		}
	}
}

// TestCountFileByRanges checks that counting a file on several threads,
// each a range of its lines, gives the counts and the errors of one pass
// over the whole file.
func TestCountFileByRanges(t *testing.T) {
	pg, err := graph.PowerLaw(graph.DefaultPowerLaw(800, 4))
	if err != nil {
		t.Fatal(err)
	}
	var svm bytes.Buffer
	if err := graph.WriteLibSVM(&svm, pg); err != nil {
		t.Fatal(err)
	}
	text := strings.ReplaceAll(svm.String(), "\n1 ", "\n\n# c\n1 ")
	var snap strings.Builder
	rng := placement.NewRand(4)
	for range 900 {
		fmt.Fprintf(&snap, "%d %d\n", rng.IntN(300)*7, rng.IntN(300)*7)
	}
	snapLoad := graph.LoadOptions{Format: graph.FormatSNAP, IndexBase: -1, HashBits: 20}
	for _, c := range []struct {
		path string
		load graph.LoadOptions
	}{
		{writeFile(t, "a.svm", []byte(text), false), graph.DefaultLoadOptions()},
		{writeFile(t, "a.svm", []byte(text), true), graph.DefaultLoadOptions()},
		{writeFile(t, "two.svm", []byte("1 3:1\n-1 2:1 3:1 7:1"), false), graph.DefaultLoadOptions()},
		{writeFile(t, "e.txt", []byte(snap.String()), false), snapLoad},
		{writeFile(t, "e.txt", []byte(snap.String()+"1 2 3\n5 6\n"), false), snapLoad},
		{writeFile(t, "empty.svm", []byte("# no samples\n\n"), false), graph.DefaultLoadOptions()},
	} {
		n0, m0, err0 := countFile(c.path, c.load, 1)
		if g, err := graph.Load(c.path, c.load); err == nil && (err0 != nil || n0 != g.NumSamples() || m0 != g.NumParams()) {
			t.Fatalf("%s: %d samples, %d parameters, %v; want %d, %d", c.path, n0, m0, err0, g.NumSamples(), g.NumParams())
		}
		for threads := 2; threads <= 5; threads++ {
			n, m, err := countFile(c.path, c.load, threads)
			if n != n0 || m != m0 || fmt.Sprint(err) != fmt.Sprint(err0) {
				t.Errorf("%s on %d threads: %d, %d, %v; want %d, %d, %v", c.path, threads, n, m, err, n0, m0, err0)
			}
		}
	}
}

// TestPlanByRangesFileChanged: when the file grows between the moments
// two processes cut their ranges, the ranges do not tile one file, and
// both processes refuse to plan, naming the file, instead of planning a
// file with lines missing.
func TestPlanByRangesFileChanged(t *testing.T) {
	var b strings.Builder
	for i := range 16 {
		fmt.Fprintf(&b, "%d %d\n", i, (i*7+3)%16)
	}
	path := filepath.Join(t.TempDir(), "edges.txt")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	load := graph.LoadOptions{Format: graph.FormatSNAP, IndexBase: -1, HashBits: 20}
	sums, _, _ := memSums(t, 2)
	first := make(chan struct{})
	var once sync.Once
	sum0 := func(vals []float64) ([]float64, error) {
		once.Do(func() { close(first) }) // process 0 has cut and read its range
		return sums[0](vals)
	}
	sumOf := []func([]float64) ([]float64, error){sum0, sums[1]}
	dir, tmp := t.TempDir(), t.TempDir()
	errs := make([]error, 2)
	var wg sync.WaitGroup
	plan := func(r int) {
		_, errs[r] = PlanParsaFile(path, partition.Options{K: 2, Seed: 1, Parsa: partition.ParsaOptions{Init: partition.InitGlobal}}, FilePlanOptions{Load: load, TempDir: tmp,
			Keep: func(j, _ int) bool { return j%2 == r }, Global: r == 0, Whole: r == 0,
			Ranges: &FileRanges{Rank: r, Count: 2, Dir: dir, Sum: sumOf[r]}})
	}
	wg.Go(func() { plan(0) })
	<-first
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 8 {
		fmt.Fprintf(f, "%d %d\n", 16+i, i)
	}
	f.Close()
	wg.Go(func() { plan(1) })
	wg.Wait()
	for r, err := range errs {
		if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "changed") {
			t.Errorf("process %d: error %v, want one naming %s and saying it changed", r, err, path)
		}
	}
}
