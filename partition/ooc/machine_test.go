package ooc

import (
	"errors"
	"strings"
	"sync"
	"testing"

	"colo/graph"
	"colo/partition"
)

// TestMachinePlan checks the plan of the machines of a distributed run
// under a memory cap (FilePlanOptions.Machine): without a cap every
// machine plans the same blocks and reports what it needs; a cap just
// below that makes every machine plan the same, larger number of blocks,
// whose need is under the cap; a cap below what any number of blocks
// needs fails every machine with a *MemoryError that says how much it
// needs. The machines' processes differ in size: they plan for the
// largest.
func TestMachinePlan(t *testing.T) {
	pg, err := graph.PowerLaw(graph.DefaultPowerLaw(3000, 6))
	if err != nil {
		t.Fatal(err)
	}
	path := writeLibSVMFile(t, pg, false)
	opt := partition.Options{K: 8, Seed: 3, Parsa: partition.ParsaOptions{Init: partition.InitGlobal, GlobalFraction: 0.02}}
	server := func(n, m int) (int64, int64) { return int64(64 * (m + n/8)), int64(64 * m) }
	const W = 3
	plan := func(capBytes int64) ([]*FilePlan, []error) {
		sums, _, _ := memSums(t, W)
		dir, tmp := t.TempDir(), t.TempDir()
		plans, errs := make([]*FilePlan, W), make([]error, W)
		var wg sync.WaitGroup
		for r := range W {
			wg.Go(func() {
				plans[r], errs[r] = PlanParsaFile(path, opt, FilePlanOptions{Load: graph.DefaultLoadOptions(), TempDir: tmp, MinBlocks: 2,
					Keep: func(j, _ int) bool { return j%W == r }, Global: r == 0, Whole: r == 0,
					Ranges:  &FileRanges{Rank: r, Count: W, Dir: dir, Sum: sums[r]},
					Machine: &Machine{Memory: capBytes, Workers: W, Rank: r, Sum: sums[r], Server: server, Process: int64(20+r) << 20}})
			})
		}
		wg.Wait()
		for _, fp := range plans {
			if fp != nil {
				t.Cleanup(func() { fp.Close() })
			}
		}
		return plans, errs
	}
	same := func(plans []*FilePlan) (blocks int, need int64) {
		t.Helper()
		for r, fp := range plans {
			st := fp.FileStats()
			if r == 0 {
				blocks, need = st.Blocks, st.Needed
			}
			if st.Blocks != blocks || len(fp.Blocks) != blocks || st.Needed != need || fp.Stats != plans[0].Stats {
				t.Fatalf("machine %d plans %d blocks needing %d, machine 0 %d needing %d", r, st.Blocks, st.Needed, blocks, need)
			}
			if _, ok := st.NeededParts["server"]; !ok || need <= 0 {
				t.Fatalf("machine %d: need %d of %v: want a machine's parts", r, need, st.NeededParts)
			}
		}
		return blocks, need
	}
	plans, errs := plan(0)
	for r, err := range errs {
		if err != nil {
			t.Fatalf("machine %d: %v", r, err)
		}
	}
	b0, need0 := same(plans)

	plans, errs = plan(need0 - 1)
	for r, err := range errs {
		if err != nil {
			t.Fatalf("cap %d: machine %d: %v", need0-1, r, err)
		}
	}
	b1, need1 := same(plans)
	if b1 <= b0 || need1 > need0-1 {
		t.Fatalf("cap %d: %d blocks needing %d; want more than %d blocks, within the cap", need0-1, b1, need1, b0)
	}

	_, errs = plan(1 << 20)
	for r, err := range errs {
		var me *MemoryError
		if !errors.As(err, &me) || me.Cap != 1<<20 || me.Need <= me.Cap || me.Blocks < b0 ||
			!strings.Contains(err.Error(), "a machine of this run needs") || !strings.Contains(err.Error(), "server's share of the keys") ||
			!strings.Contains(err.Error(), "more blocks make it smaller") || !strings.Contains(err.Error(), "--init-fraction") {
			t.Fatalf("cap 1 MiB: machine %d: %v; want a *MemoryError saying what a machine needs", r, err)
		}
	}

	// With the blocks given and no global initialisation, the error
	// does not suggest either.
	opt.Parsa = partition.ParsaOptions{Init: partition.InitNone, Blocks: 4}
	_, errs = plan(1 << 20)
	for r, err := range errs {
		var me *MemoryError
		if !errors.As(err, &me) || me.Blocks != 4 || strings.Contains(err.Error(), "more blocks") || strings.Contains(err.Error(), "--init-fraction") {
			t.Fatalf("cap 1 MiB, 4 blocks given, no global initialisation: machine %d: %v", r, err)
		}
	}
}
