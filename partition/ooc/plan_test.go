package ooc

import (
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"colo/graph"
	"colo/partition"
	"colo/placement"
)

// TestPlanParsaFileIsPlanParsa checks that the plan of a file is
// PlanParsa's for the loaded graph: the same blocks (samples and rows),
// global sample, bounds, parameters' seed and statistics, over libsvm and
// SNAP input, automatic and given blocks, k beyond one mask word; and
// that a process keeping some blocks gets those and only those.
func TestPlanParsaFileIsPlanParsa(t *testing.T) {
	pg, err := graph.PowerLaw(graph.DefaultPowerLaw(2500, 4))
	if err != nil {
		t.Fatal(err)
	}
	svm := writeLibSVMFile(t, pg, true)
	var b strings.Builder
	rng := placement.NewRand(8)
	for range 3000 {
		fmt.Fprintf(&b, "%d %d\n", rng.IntN(500)*3, rng.IntN(500)*3)
	}
	snap := writeFile(t, "edges.txt", []byte(b.String()), false)
	snapLoad := graph.LoadOptions{Format: graph.FormatSNAPUndirected, IndexBase: -1, HashBits: 20}
	for _, c := range []struct {
		name      string
		path      string
		load      graph.LoadOptions
		k         int
		po        partition.ParsaOptions
		minBlocks int
	}{
		{"libsvm-global", svm, graph.DefaultLoadOptions(), 8, partition.ParsaOptions{Init: partition.InitGlobal, GlobalFraction: 0.2}, 0},
		{"libsvm-none-k70", svm, graph.DefaultLoadOptions(), 70, partition.ParsaOptions{Init: partition.InitNone, Blocks: 9}, 0},
		{"libsvm-min-blocks", svm, graph.DefaultLoadOptions(), 4, partition.ParsaOptions{Init: partition.InitGlobal, GrowBy: partition.GrowParams, Epsilon: 0.1}, 24},
		{"snap", snap, snapLoad, 5, partition.ParsaOptions{Init: partition.InitGlobal}, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			g, err := graph.Load(c.path, c.load)
			if err != nil {
				t.Fatal(err)
			}
			opt := partition.Options{K: c.k, Seed: 7, Parsa: c.po}
			mopt := opt
			if c.minBlocks > 0 {
				mopt.Parsa.Blocks = max(c.minBlocks, int((g.NumEdges()+partition.DefaultBlockEdges-1)/partition.DefaultBlockEdges))
			}
			want, err := partition.PlanParsa(g, mopt)
			if err != nil {
				t.Fatal(err)
			}
			fp, err := PlanParsaFile(c.path, opt, FilePlanOptions{Load: c.load, TempDir: t.TempDir(), MinBlocks: c.minBlocks, Global: true})
			if err != nil {
				t.Fatal(err)
			}
			defer fp.Close()
			if fp.Samples() != g.NumSamples() || fp.Params() != g.NumParams() || fp.Edges() != g.NumEdges() {
				t.Fatalf("counts %d/%d/%d, want %d/%d/%d", fp.Samples(), fp.Params(), fp.Edges(), g.NumSamples(), g.NumParams(), g.NumEdges())
			}
			if n, m, err := CountFile(c.path, c.load); err != nil || n != g.NumSamples() || m != g.NumParams() {
				t.Fatalf("CountFile: %d samples, %d parameters, %v; want %d and %d", n, m, err, g.NumSamples(), g.NumParams())
			}
			if len(fp.Blocks) != len(want.Blocks) || !slices.Equal(fp.Lo, want.Lo) || !slices.Equal(fp.Hi, want.Hi) ||
				fp.ParamSeed != want.ParamSeed || fp.Stats != want.Stats {
				t.Fatalf("plan %d blocks %v %v %d %+v, want %d blocks %v %v %d %+v", len(fp.Blocks), fp.Lo, fp.Hi, fp.ParamSeed, fp.Stats,
					len(want.Blocks), want.Lo, want.Hi, want.ParamSeed, want.Stats)
			}
			sameRows := func(what string, got partition.BlockRows, samples []uint32) {
				t.Helper()
				if !slices.Equal(got.Samples, samples) {
					t.Fatalf("%s: samples differ", what)
				}
				for s, u := range samples {
					if !slices.Equal(got.Row(s), g.Params(int(u))) {
						t.Fatalf("%s: row of sample %d differs", what, u)
					}
				}
			}
			for j, blk := range want.Blocks {
				rows, err := fp.Rows(j)
				if err != nil {
					t.Fatal(err)
				}
				sameRows(fmt.Sprint("block ", j), rows, blk)
			}
			if want.Global != nil {
				rows, err := fp.GlobalRows()
				if err != nil {
					t.Fatal(err)
				}
				sameRows("global sample", rows, want.Global)
			}

			// Worker 1 of 3 keeps blocks 1, 4, 7, … and no global sample.
			part, err := PlanParsaFile(c.path, opt, FilePlanOptions{Load: c.load, TempDir: t.TempDir(), MinBlocks: c.minBlocks,
				Keep: func(j, b int) bool { return j%3 == 1 }})
			if err != nil {
				t.Fatal(err)
			}
			defer part.Close()
			for j, blk := range want.Blocks {
				rows, err := part.Rows(j)
				if j%3 != 1 {
					if err == nil {
						t.Fatalf("block %d: read by a process that does not keep it", j)
					}
					continue
				}
				if err != nil {
					t.Fatal(err)
				}
				sameRows(fmt.Sprint("kept block ", j), rows, blk)
			}
			if _, err := part.GlobalRows(); err == nil {
				t.Fatal("the global sample read by a process that does not keep it")
			}
			if part.ParamSeed != want.ParamSeed || part.Stats != want.Stats {
				t.Fatalf("a partial plan differs: seed %d stats %+v", part.ParamSeed, part.Stats)
			}
		})
	}
}

// TestFilePlanFinish checks what worker 0 does with the whole plan of a
// file against the same in memory: Repair moves the same samples as
// ParsaPlan.Repair from an unbalanced placement, Summary reports
// placement.NewSummary's cost and baseline (with or without a memory
// bound θ, whatever memory its passes over the rows may take), and
// WriteDir writes the files of placement.WriteDir byte for byte.
func TestFilePlanFinish(t *testing.T) {
	g, err := graph.PowerLaw(graph.DefaultPowerLaw(1500, 9))
	if err != nil {
		t.Fatal(err)
	}
	path := writeLibSVMFile(t, g, false)
	load := graph.DefaultLoadOptions()
	lg, err := graph.Load(path, load)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		po  partition.ParsaOptions
		k   int
		far bool
	}{
		{partition.ParsaOptions{Init: partition.InitGlobal, Blocks: 6}, 6, true},
		{partition.ParsaOptions{Init: partition.InitNone, Blocks: 5, GrowBy: partition.GrowParams, Epsilon: 0.02}, 6, true},
		{partition.ParsaOptions{Init: partition.InitGlobal, Blocks: 8}, 12, false},
	} {
		po, k := c.po, c.k
		opt := partition.Options{K: k, Seed: 4, Parsa: po}
		pl, err := partition.PlanParsa(lg, opt)
		if err != nil {
			t.Fatal(err)
		}
		fp, err := PlanParsaFile(path, opt, FilePlanOptions{Load: load, TempDir: t.TempDir(), Whole: true})
		if err != nil {
			t.Fatal(err)
		}
		defer fp.Close()
		want := placement.New(k, lg.NumSamples(), lg.NumParams())
		if c.far {
			// A placement far off the bounds: machine u mod 3 for the
			// first half of each block, round-robin for the rest.
			for _, blk := range pl.Blocks {
				for x, u := range blk {
					want.Data[u] = int32(u % 3)
					if x >= len(blk)/2 {
						want.Data[u] = int32(x % k)
					}
				}
			}
		} else {
			// Near the bounds: the first block's samples of machines
			// 1..3 on machine 0, so that the candidates reach beyond
			// the latest samples the first pass keeps.
			seq, _, err := partition.RunParsa(lg, opt)
			if err != nil {
				t.Fatal(err)
			}
			copy(want.Data, seq.Data)
			for _, u := range pl.Blocks[0][:40] {
				if want.Data[u] <= 3 {
					want.Data[u] = 0
				}
			}
		}
		got := placement.New(k, lg.NumSamples(), lg.NumParams())
		copy(got.Data, want.Data)
		wst, err := pl.Repair(want)
		if err != nil {
			t.Fatal(err)
		}
		gst, err := fp.Repair(got)
		if err != nil {
			t.Fatal(err)
		}
		if wst.Repaired == 0 || gst.Repaired != wst.Repaired || !slices.Equal(got.Data, want.Data) {
			t.Fatalf("%+v: the file's repair moved %d samples, in memory %d; same placement: %v", po, gst.Repaired, wst.Repaired, slices.Equal(got.Data, want.Data))
		}
		partition.AssignParams(lg, want, pl.ParamSeed)
		copy(got.Param, want.Param)
		ws, err := placement.NewSummary(lg, want, 0)
		if err != nil {
			t.Fatal(err)
		}
		gs, err := fp.Summary(got, 0)
		if err != nil {
			t.Fatal(err)
		}
		sameCost(t, ws, gs)
		// Evaluated a placement a pass, three at once on one goroutine,
		// or all at once on two, and with a memory bound: the same
		// summary.
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
		least := leastEval(int64(fp.Params()), int64(partition.MaskWords(k)))
		for _, budget := range []int64{least, least + 2*8*int64(partition.MaskWords(k)*fp.Params()), 1 << 30} {
			fp.r.evalBudget = budget
			for _, theta := range []int64{0, 40} {
				ws, err := placement.NewSummary(lg, want, theta)
				if err != nil {
					t.Fatal(err)
				}
				gs, err := fp.Summary(got, theta)
				if err != nil {
					t.Fatal(err)
				}
				sameCost(t, ws, gs)
			}
		}
		fp.r.evalBudget = 0
		mem, file := filepath.Join(t.TempDir(), "mem"), filepath.Join(t.TempDir(), "file")
		if err := placement.WriteDir(mem, lg, want, ws); err != nil {
			t.Fatal(err)
		}
		if err := fp.WriteDir(file, got, gs); err != nil {
			t.Fatal(err)
		}
		samePlacement(t, lg, mem, file, k)
	}
}
