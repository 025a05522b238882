package ooc

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"time"

	"colo/graph"
	"colo/partition"
	"colo/placement"
)

// The plan of a distributed Parsa run over a file that no process loads
// (package distparsa): each worker runs the first three passes
// of ParsaFile (read, rows, blocks; see ooc.go) on its own copy of the
// file, which gives it the counts, the numbering of graph.Load and the
// blocks that partition.PlanParsa draws from the seed, and writes to block files
// only the blocks it partitions (and, on the worker that initialises, the
// global sample). What a worker then holds in memory is the id index
// (as ParsaFile), one block at a time and, during the blocks pass only,
// 4 bytes per sample (the shuffle). Worker 0 also keeps the rows spill
// and each sample's block, from which it repairs the balance (Repair),
// computes the cost and the random baseline (Summary) and writes the
// placement with the file's ids (WriteDir).

// FilePlanOptions say which part of a file's plan a process keeps.
type FilePlanOptions struct {
	// Load says how to read the file; TempDir holds the spill files, in a
	// directory of their own that Close removes ("" is os.TempDir()).
	Load    graph.LoadOptions
	TempDir string
	// MinBlocks is the least number of automatic blocks
	// (partition.Options.Parsa.Blocks 0): b = max(MinBlocks,
	// ⌈|E| / partition.DefaultBlockEdges⌉) within 1..n; 0 is
	// partition.MinBlocks, as partition.PlanParsa has it.
	MinBlocks int
	// Keep reports whether the process partitions block j of b: only
	// those blocks are written to files. nil keeps every block.
	Keep func(j, b int) bool
	// Global keeps the global initialisation's sample.
	Global bool
	// Whole keeps the rows of every sample and each sample's block, for
	// Repair, Summary and WriteDir.
	Whole bool
	// Ranges, when set, reads the file by ranges of lines: this process
	// parses only its own range and gets the rest from the other
	// processes of the run (FileRanges, ranges.go). A compressed
	// file, whose byte offsets are not its lines', is read whole all the
	// same (OutOfCoreStats.Read and Compressed say how it was read).
	Ranges *FileRanges
	// Machine, when set, is the machine this process is: the plan keeps
	// to its memory cap (see Machine).
	Machine *Machine
}

// FilePlan is a partition.ParsaPlan drawn from a file without loading it: its
// Blocks are nil (the kept blocks' samples are in their files: Rows) and
// so is Global (GlobalRows); the bounds, the parameters' seed and the
// statistics are partition.PlanParsa's for the graph graph.Load would build from
// the file with the same options. Close removes its files.
type FilePlan struct {
	*partition.ParsaPlan
	r      *oocRun
	blocks []*oocBlock
	global *oocBlock
	whole  bool
	lb     loadedBlock
}

// PlanParsaFile plans a distributed Parsa run of the file at path with
// opt, as partition.PlanParsa does from the loaded graph, and keeps the parts of it
// that fo asks for. It parses the whole file once and writes it to a
// binary spill once (ParsaFile's first two passes), then writes the kept
// blocks' rows in a third pass; with fo.Ranges it parses only its range
// of the file's lines and gets the numbering and the other rows from the
// run's other processes (ranges.go), for the same plan. opt is as for
// partition.PlanParsa, with the limits of ParsaFile besides: refinement and the
// minmax parameter assignment need the graph and are refused.
func PlanParsaFile(path string, opt partition.Options, fo FilePlanOptions) (fp *FilePlan, err error) {
	po, err := fileParsaOptions(opt, "parsa of a file")
	if err != nil {
		return nil, err
	}
	switch {
	case po.Init == partition.InitIndividual:
		return nil, fmt.Errorf("parsa init = %q: a distributed run initialises globally or not at all (global or none)", string(po.Init))
	case fo.MinBlocks < 0:
		return nil, fmt.Errorf("min blocks = %d: want 0 (MinBlocks) or a positive count", fo.MinBlocks)
	case fo.Ranges != nil && fo.Ranges.SumChunk < 0:
		return nil, fmt.Errorf("sum chunk = %d: want 0 (DefaultSumChunk) or a positive count", fo.Ranges.SumChunk)
	}
	if fo.Machine != nil {
		if err := validMachine(fo.Machine); err != nil {
			return nil, err
		}
	}
	tmp, err := os.MkdirTemp(fo.TempDir, "colo-plan-")
	if err != nil {
		return nil, fmt.Errorf("parsa of a file: %w", err)
	}
	defer func() {
		if err != nil {
			os.RemoveAll(tmp)
		}
	}()
	r := &oocRun{path: path, opt: opt, po: po, oc: OutOfCore{TempDir: fo.TempDir, Load: fo.Load}, tmp: tmp,
		k: opt.K, w: partition.MaskWords(opt.K), st: &OutOfCoreStats{Seconds: map[string]float64{}}}
	r.baseRSS = rssField("VmRSS")
	if fo.Machine != nil {
		r.oc.Memory = fo.Machine.Memory
		r.st.MemoryCap = fo.Machine.Memory
	}
	r.phase = time.Now()
	ranged := false
	if fo.Ranges != nil {
		if ranged, err = r.readRange(fo.Ranges); err != nil {
			return nil, err
		}
		r.st.Compressed = !ranged
	}
	if !ranged {
		r.st.Read = "whole"
		if err := r.read(); err != nil {
			return nil, err
		}
		r.done("read")
		if err := r.canonical(); err != nil {
			return nil, err
		}
	}
	r.done("rows")
	n := r.n
	if err := opt.Validate(n); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	b := po.Blocks
	if b == 0 {
		minb := fo.MinBlocks
		if minb == 0 {
			minb = partition.MinBlocks
		}
		b = max(minb, int((r.st.Edges+partition.DefaultBlockEdges-1)/partition.DefaultBlockEdges))
	}
	b = max(1, min(b, n))
	if mc := fo.Machine; mc != nil {
		var need memNeed
		if b, need, err = r.machinePlan(b, po.Blocks, mc); err != nil {
			return nil, err
		}
		r.st.Needed, r.st.NeededParts = machineTotal(need), need.parts
		r.evalBudget = r.machineEvalBudget(need, mc.Memory)
		if mc.Memory > 0 && r.st.Needed > mc.Memory {
			return nil, r.machineError(mc.Memory, need, b)
		}
	}
	r.st.Blocks = b
	if fo.Keep != nil {
		r.keep = func(j int) bool { return fo.Keep(j, b) }
	}
	r.skipGlobal = !fo.Global
	rng := placement.NewRand(opt.Seed)
	var blocks []*oocBlock
	var global *oocBlock
	if ranged {
		blocks, global, err = r.scatterRanges(b, rng)
	} else {
		blocks, global, err = r.scatter(b, rng)
	}
	if err != nil {
		return nil, err
	}
	r.done("blocks")
	if !fo.Whole {
		for _, path := range r.rows {
			if !r.shared(path) {
				os.Remove(path)
			}
		}
		os.Remove(r.file("blockof"))
	}
	initSample := 0
	if global != nil {
		initSample = global.samples
	}
	pl := partition.PlanParsaCounts(opt, n, r.m, b, initSample, rng)
	r.st.PeakRSS = peakRSS()
	return &FilePlan{ParsaPlan: pl, r: r, blocks: blocks, global: global, whole: fo.Whole}, nil
}

// CountFile returns the numbers of samples and parameters of the graph
// that graph.Load would build from the file at path (with load), by one
// pass of graph.Stream that holds only the id index, as ParsaFile's first
// pass does, and writes nothing: what the key space of a distributed run
// needs before a machine has read the file. An uncompressed file is read
// by ranges of lines (graph.SplitLines), one per thread, in parallel, and
// their id sets merged.
func CountFile(path string, load graph.LoadOptions) (samples, params int, err error) {
	threads := runtime.GOMAXPROCS(0)
	if info, err := os.Stat(path); err == nil {
		threads = max(1, min(threads, int(info.Size()>>22)))
	}
	return countFile(path, load, threads)
}

// countFile is CountFile on threads ranges of the file (one for a
// compressed file).
func countFile(path string, load graph.LoadOptions, threads int) (samples, params int, err error) {
	if threads > 1 {
		if _, err := graph.SplitLines(path, 0, threads); errors.Is(err, graph.ErrCompressed) {
			threads = 1
		}
	}
	type count struct {
		pi, ni  *idIndex
		n       int
		records int
		format  graph.Format
		err     error
	}
	counts := make([]count, threads)
	var wg sync.WaitGroup
	for t := range threads {
		wg.Go(func() {
			c := &counts[t]
			c.pi, c.ni = &idIndex{}, &idIndex{}
			vis := graph.Visitor{
				Sample: func(ids []uint64) error {
					c.n++
					for _, id := range ids {
						c.pi.add(id)
					}
					return nil
				},
				Edge: func(u, v uint64) error {
					c.ni.add(u)
					c.ni.add(v)
					c.pi.add(v)
					return nil
				},
				Node: func(u uint64) error {
					c.ni.add(u)
					return nil
				},
			}
			if threads == 1 {
				c.format, c.err = graph.Stream(path, load, vis)
				c.records = 1 // Stream reports input without records
				return
			}
			lr, err := graph.SplitLines(path, t, threads)
			if err != nil {
				c.err = err
				return
			}
			c.format, c.records, c.err = graph.StreamRange(path, load, lr, vis)
		})
	}
	wg.Wait()
	pi, ni := &idIndex{}, &idIndex{}
	n, records := 0, 0
	for _, c := range counts {
		// The first range's error is the first in the file.
		if c.err != nil {
			return 0, 0, c.err
		}
		n += c.n
		records += c.records
		if threads == 1 {
			pi, ni = c.pi, c.ni
			break
		}
		c.pi.finish()
		c.pi.each(pi.add)
		c.ni.finish()
		c.ni.each(ni.add)
	}
	if records == 0 {
		return 0, 0, graph.EmptyError(path)
	}
	pi.finish()
	if counts[0].format != graph.FormatLibSVM {
		ni.finish()
		n = ni.len()
	}
	return n, pi.len(), nil
}

// Edges returns the number of edges |E| of the file's graph.
func (fp *FilePlan) Edges() int64 { return fp.r.st.Edges }

// FileStats returns what the passes cost: the format, the counts, the
// spill bytes, each pass's seconds and the peak resident memory at the
// end of the plan.
func (fp *FilePlan) FileStats() *OutOfCoreStats { return fp.r.st }

// Rows returns the rows of block j, one of the kept blocks, read from its
// file; they are valid until the next call of Rows or GlobalRows.
func (fp *FilePlan) Rows(j int) (partition.BlockRows, error) {
	if j < 0 || j >= len(fp.blocks) || (fp.r.keep != nil && !fp.r.keep(j)) {
		return partition.BlockRows{}, fmt.Errorf("parsa of a file: block %d of %d is not kept by this process", j, len(fp.blocks))
	}
	return fp.load(fp.blocks[j])
}

// GlobalRows returns the rows of the global initialisation's sample.
func (fp *FilePlan) GlobalRows() (partition.BlockRows, error) {
	if fp.global == nil || fp.r.skipGlobal {
		return partition.BlockRows{}, errors.New("parsa of a file: the global sample is not kept by this process")
	}
	return fp.load(fp.global)
}

func (fp *FilePlan) load(blk *oocBlock) (partition.BlockRows, error) {
	if err := fp.lb.load(blk); err != nil {
		return partition.BlockRows{}, err
	}
	return partition.BlockRows{Samples: fp.lb.samples, Off: fp.lb.off, Adj: fp.lb.adj, Local: true}, nil
}

// checkWhole checks the placement's sizes and that the whole file was
// kept.
func (fp *FilePlan) checkWhole(p *placement.Placement, what string) error {
	if !fp.whole {
		return fmt.Errorf("parsa of a file: %s needs the plan of the whole file (FilePlanOptions.Whole)", what)
	}
	if p.K != fp.K() || len(p.Data) != fp.Samples() || len(p.Param) != fp.Params() {
		return fmt.Errorf("parsa of a file: %s: placement of %d samples and %d parameters on %d machines, want %d, %d and %d",
			what, len(p.Data), len(p.Param), p.K, fp.Samples(), fp.Params(), fp.K())
	}
	return nil
}

// Repair is partition.ParsaPlan.Repair from the spills: when p.Data misses the
// bounds, it reads each sample's block and, in one pass over the rows,
// the neighbour sets of p.Data and the rows of the latest samples, and
// moves samples as the in-memory repair does (a further pass over the
// rows when a round of candidates reaches beyond the rows read); the
// result is the same. It needs the whole plan.
func (fp *FilePlan) Repair(p *placement.Placement) (*partition.ParsaStats, error) {
	if err := fp.checkWhole(p, "repair"); err != nil {
		return nil, err
	}
	st := fp.Stats
	for u, i := range p.Data {
		if i < 0 || int(i) >= fp.K() {
			return nil, fmt.Errorf("parsa: repair: sample %d is on machine %d: want 0..%d", u, i, fp.K()-1)
		}
	}
	if partition.Balanced(p.Data, fp.Lo, fp.Hi) {
		return &st, nil
	}
	blocks, err := fp.blockLists()
	if err != nil {
		return nil, err
	}
	// The candidates come from the latest blocks, a few per sample to
	// move: the pass that reads the masks keeps the rows of the latest
	// samples, 16 per sample off the bounds and per machine, so that a
	// further pass is seldom needed.
	counts := make([]int64, fp.K())
	for _, i := range p.Data {
		counts[i]++
	}
	var off int64
	for i, c := range counts {
		off += max(0, c-fp.Hi[i]) + max(0, fp.Lo[i]-c)
	}
	early := make(map[int]bool)
	for b := len(blocks) - 1; b >= 0 && int64(len(early)) < 16*(off+int64(fp.K())); b-- {
		for _, u := range blocks[b] {
			early[int(u)] = true
		}
	}
	rows := map[int][]uint32{}
	w := fp.r.w
	masks := make([]uint64, fp.Params()*w)
	err = fp.r.eachRow(func(u int, row []uint32) {
		i := p.Data[u]
		for _, v := range row {
			masks[int(v)*w+int(i)>>6] |= 1 << (i & 63)
		}
		if early[u] {
			rows[u] = slices.Clone(row)
		}
	})
	if err != nil {
		return nil, err
	}
	prefetch := func(us []int) error {
		want := map[int]bool{}
		for _, u := range us {
			if _, ok := rows[u]; !ok {
				want[u] = true
			}
		}
		if len(want) == 0 {
			return nil
		}
		return fp.r.eachRow(func(u int, row []uint32) {
			if want[u] {
				rows[u] = slices.Clone(row)
			}
		})
	}
	st.Repaired, err = partition.Rebalance(p.Data, fp.K(), fp.Lo, fp.Hi, masks, blocks, func(u int) []uint32 { return rows[u] }, prefetch)
	if err != nil {
		return nil, err
	}
	return &st, nil
}

// blockLists reads each block's samples, in sample order, from the spill
// of each sample's block.
func (fp *FilePlan) blockLists() ([][]uint32, error) {
	in, err := openSpill(fp.r.file("blockof"), 0, -1, spillBuf)
	if err != nil {
		return nil, err
	}
	defer in.close()
	blocks := make([][]uint32, len(fp.blocks))
	for j, blk := range fp.blocks {
		blocks[j] = make([]uint32, 0, blk.samples)
	}
	for u := range fp.Samples() {
		j, err := in.uvarint()
		if err != nil {
			return nil, err
		}
		if j >= uint64(len(blocks)) {
			return nil, fmt.Errorf("out-of-core spill %s: block %d of %d", in.path, j, len(blocks))
		}
		blocks[j] = append(blocks[j], uint32(u))
	}
	return blocks, nil
}

// Summary returns the cost of p against the random baseline, as
// placement.NewSummary does for the loaded graph: both from the masks
// C_v of p and of the baseline's placements, built in the same passes
// over the rows (oocRun.evaluate). The caller fills in the algorithm,
// seed, time and details. It needs the whole plan.
func (fp *FilePlan) Summary(p *placement.Placement, theta int64) (*placement.Summary, error) {
	if err := fp.checkWhole(p, "summary"); err != nil {
		return nil, err
	}
	for what, part := range map[string][]int32{"sample": p.Data, "parameter": p.Param} {
		for x, i := range part {
			if i < 0 || int(i) >= fp.K() {
				return nil, fmt.Errorf("parsa of a file: summary: %s %d is on machine %d: want 0..%d", what, x, i, fp.K()-1)
			}
		}
	}
	// The placement's cost and the random baseline from the same passes
	// over the rows: within what a machine planned for its end, or
	// otherwise as the out-of-core run does.
	budget := fp.r.evalBudget
	if budget == 0 {
		need := fp.r.need(len(fp.blocks))
		budget = need.parts["partition"]
	}
	base, cost, err := fp.r.evaluate(budget, p, theta)
	if err != nil {
		return nil, err
	}
	return &placement.Summary{Dataset: fp.r.path, NumSamp: fp.Samples(), NumParams: fp.Params(), NumEdges: fp.r.st.Edges,
		Cost: cost, Random: base, Improvement: placement.ImprovementOver(base, cost)}, nil
}

// WriteDir writes p to dir as placement.WriteDir does for the loaded
// graph: data.part, param.part with the file's parameter ids, and
// summary.json last, each atomically.
func (fp *FilePlan) WriteDir(dir string, p *placement.Placement, summary any) error {
	if err := fp.checkWhole(p, "write"); err != nil {
		return err
	}
	lines := func(n int, line func(buf []byte, x int) []byte) func(io.Writer) error {
		return func(w io.Writer) error {
			bw := bufio.NewWriterSize(w, 1<<16)
			var buf []byte
			for x := range n {
				buf = append(line(buf[:0], x), '\n')
				if _, err := bw.Write(buf); err != nil {
					return err
				}
			}
			return bw.Flush()
		}
	}
	ids := make([]uint64, 0, fp.Params())
	fp.r.params.each(func(id uint64) { ids = append(ids, id) })
	data := lines(fp.Samples(), func(buf []byte, u int) []byte { return strconv.AppendInt(buf, int64(p.Data[u]), 10) })
	param := lines(fp.Params(), func(buf []byte, v int) []byte {
		buf = strconv.AppendUint(buf, ids[v], 10)
		return strconv.AppendInt(append(buf, ' '), int64(p.Param[v]), 10)
	})
	return placement.WriteDirFrom(dir, fp.K(), placement.PartSource{Lines: fp.Samples(), Write: data},
		placement.PartSource{Lines: fp.Params(), Write: param}, summary)
}

// Close removes the plan's files.
func (fp *FilePlan) Close() error {
	if fp == nil || fp.r.tmp == "" {
		return nil
	}
	if fp.whole {
		// The process of the whole plan is the last to read the ranges'
		// rows of a read by ranges.
		for _, path := range append(slices.Clone(fp.r.rows), fp.r.edges...) {
			if fp.r.shared(path) {
				os.Remove(path)
			}
		}
	}
	// The pieces of the blocks this process kept, which no other reads.
	for _, blk := range append(slices.Clone(fp.blocks), fp.global) {
		if blk != nil {
			for _, pc := range blk.pieces {
				os.Remove(pc.path)
			}
		}
	}
	err := os.RemoveAll(fp.r.tmp)
	fp.r.tmp = ""
	return err
}
