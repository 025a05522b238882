package ooc

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"time"

	"colo/graph"
	"colo/partition"
	"colo/placement"
)

// OutOfCore are the settings of ParsaFile.
type OutOfCore struct {
	// Memory caps the memory of the run in bytes (0: no cap). The run
	// estimates what it needs from the counts of the first pass; a cap
	// below that is an error that says how much is needed. With
	// partition.ParsaOptions.Blocks 0 the blocks are made smaller than Parsa's
	// default when that fits a cap the default does not. The cap is also
	// the Go runtime's soft memory limit during the run.
	Memory int64
	// TempDir holds the spill files, in a directory of its own that the
	// run removes; "" means os.TempDir().
	TempDir string
	// Load says how to read the file.
	Load graph.LoadOptions
	// Samples, when set, reads the input instead of graph.Stream: it
	// passes each sample's parameter ids, sorted and distinct, in sample
	// order (a table read through feature columns, package features).
	Samples func(sample func(ids []uint64) error) error
}

// OutOfCoreStats reports a run of ParsaFile.
type OutOfCoreStats struct {
	Format  string `json:"format"`
	Samples int    `json:"samples"`
	Params  int    `json:"params"`
	Edges   int64  `json:"edges"`
	Blocks  int    `json:"blocks"`
	// MemoryCap is the cap (0: none), Needed the run's estimate of the
	// process's peak resident memory, NeededParts what makes it up:
	// the process before the run, the id index and the arrays of each
	// phase (of which the largest counts), besides buffers and the
	// garbage collector's slack.
	MemoryCap   int64            `json:"memory_cap"`
	Needed      int64            `json:"memory_needed"`
	NeededParts map[string]int64 `json:"memory_needed_parts"`
	// PeakRSS is the peak resident memory of the process (VmHWM, 0 where
	// the system does not tell), PeakHeap the most heap memory the Go
	// runtime held for objects when sampled at the end of each phase.
	PeakRSS  int64 `json:"peak_rss"`
	PeakHeap int64 `json:"peak_heap"`
	// Read is how the file was read: "whole" (parsed whole by this
	// process) or "range" (only the range of lines Range, in bytes
	// [Range[0], Range[1]), the rest of the rows written by the other
	// processes of a distributed run: FileRanges). Compressed is set when
	// the file is compressed, which a run by ranges then reads whole.
	Read       string  `json:"read"`
	Range      []int64 `json:"range,omitempty"`
	Compressed bool    `json:"compressed,omitempty"`
	// SpillBytes is the size of the spill files written.
	SpillBytes int64 `json:"spill_bytes"`
	// Seconds is the time of each phase: read, rows, blocks, parsa,
	// params, baseline.
	Seconds map[string]float64 `json:"phase_seconds"`
}

// FileResult is a placement made by ParsaFile and kept on disk until
// WriteDir writes it; Close removes the spill files.
type FileResult struct {
	// Summary is the cost of the placement against the random baseline,
	// as placement.NewSummary reports it; the caller fills in the
	// algorithm, seed, time and details.
	Summary *placement.Summary
	Parsa   *partition.ParsaStats
	Stats   *OutOfCoreStats

	k        int
	n        int
	tmp      string
	blockOf  string  // spill: each sample's block, in sample order
	results  string  // spill: each real block's machines, block by block
	resStart []int64 // offset of block j's machines in results
	params   *idIndex
	param    []int32
}

// fileParsaOptions checks opt for a Parsa run that reads its file
// rather than a loaded graph (ParsaFile, PlanParsaFile), the errors
// starting with who, and returns its Parsa options with the defaults:
// an incremental run, Parsa's refinement and a parameter assignment other
// than Parsa's need the graph in memory.
func fileParsaOptions(opt partition.Options, who string) (partition.ParsaOptions, error) {
	if err := opt.Parsa.Validate(); err != nil {
		return partition.ParsaOptions{}, err
	}
	po := opt.Parsa.WithDefaults()
	switch {
	case opt.K < 1:
		return po, fmt.Errorf("machines = %d: want at least 1", opt.K)
	case po.InitFrom != nil:
		return po, fmt.Errorf("%s: an incremental run (init-from) needs the graph in memory", who)
	case po.Refine > 0:
		return po, fmt.Errorf("%s: parsa refinement needs the graph in memory", who)
	case opt.ParamAlgo != "" && opt.ParamAlgo != partition.ParamParsa:
		return po, fmt.Errorf("%s: parameter assignment %q needs the graph in memory: want %s", who, opt.ParamAlgo, partition.ParamParsa)
	}
	return po, nil
}

// ParsaFile runs Parsa on the dataset in the file at path without loading
// it: see the comment at the top of ooc.go for the passes. opt is as for
// Parsa, with one thread; incremental runs (InitFrom), Parsa's refinement
// and the minmax parameter assignment need the graph and are refused.
// Progress is reported in samples partitioned, as Parsa does, the end of
// each pass to opt.Phase, and the partition.ParsaStats and OutOfCoreStats under
// "parsa" and "out_of_core" to opt.Report.
func ParsaFile(path string, opt partition.Options, oc OutOfCore) (res *FileResult, err error) {
	return parsaFile(path, opt, oc, rssField("VmRSS"))
}

// parsaFile is ParsaFile for a process that holds base bytes before the
// run (its resident memory, which the cap's arithmetic starts from).
func parsaFile(path string, opt partition.Options, oc OutOfCore, base int64) (res *FileResult, err error) {
	po, err := fileParsaOptions(opt, "out-of-core parsa")
	if err != nil {
		return nil, err
	}
	switch {
	case po.Threads > 1 || po.Tau != 0:
		return nil, fmt.Errorf("out-of-core parsa: threads = %d, tau = %d: want one thread, τ = 0", po.Threads, po.Tau)
	case oc.Memory < 0:
		return nil, fmt.Errorf("memory cap = %d: want 0 (none) or a number of bytes", oc.Memory)
	}
	tmp, err := os.MkdirTemp(oc.TempDir, "colo-ooc-")
	if err != nil {
		return nil, fmt.Errorf("out-of-core parsa: %w", err)
	}
	r := &oocRun{path: path, opt: opt, po: po, oc: oc, tmp: tmp, k: opt.K, w: partition.MaskWords(opt.K),
		st: &OutOfCoreStats{MemoryCap: oc.Memory, Seconds: map[string]float64{}}}
	r.baseRSS = base
	if oc.Memory > 0 {
		defer limitMemory(oc.Memory, oocMargin)()
	}
	defer func() {
		if err != nil {
			os.RemoveAll(tmp)
		}
	}()
	if err := r.run(); err != nil {
		return nil, err
	}
	res = r.res
	res.tmp = tmp
	if opt.Report != nil {
		opt.Report("parsa", res.Parsa)
		opt.Report("out_of_core", res.Stats)
	}
	return res, nil
}

// oocRun is the state of one ParsaFile run.
type oocRun struct {
	path string
	opt  partition.Options
	po   partition.ParsaOptions
	oc   OutOfCore
	tmp  string
	k, w int
	st   *OutOfCoreStats
	res  *FileResult

	format graph.Format
	params *idIndex
	nodes  *idIndex // SNAP: the samples
	n, m   int
	e      int64 // edges read (SNAP: before removing repeats)
	maxDeg int
	rows   []string // spills of rows in sample order, read one after the other
	// edges, when set, are the spills of a SNAP file's edges in dense
	// ids that the read by ranges wrote (ranges.go), which
	// eachRawEdge reads instead of the raw spill.
	edges []string
	// lines is this process's range of the file when it reads by ranges.
	lines   graph.LineRange
	phase   time.Time
	baseRSS int64 // resident memory when the run started
	// rowsBytes is the memory of the rows pass: a SNAP range sorted at
	// once.
	rowsBytes int64
	// keep, when set, says which blocks scatter writes to files (the
	// others are only counted), and skipGlobal skips the global sample's
	// file: a distributed worker's share (PlanParsaFile).
	keep       func(j int) bool
	skipGlobal bool
	// ranges is the read by ranges, when the plan reads one.
	ranges *rangeRead
	// local counts what a read by ranges read of its own range, until
	// the range's rows are written (ranges.go).
	local *rangeCounts
	// evalBudget, when set, is the bytes of arrays that evaluating a
	// placement and the random baseline may take (a machine's plan).
	evalBudget int64
}

// spillBuf is the buffer of a spill read or written in sequence; blockBuf
// that of each of the many block files written at once.
const (
	spillBuf = 1 << 16
	blockBuf = 1 << 13
)

// file returns the path of a spill file.
func (r *oocRun) file(name string) string { return filepath.Join(r.tmp, name) }

// oocPhaseNames are the phases of a run, reported to partition.Options.Phase as
// they end.
var oocPhaseNames = []string{"read", "rows", "blocks", "parsa", "params", "baseline"}

// done ends a phase: its time and the heap sampled at its end.
func (r *oocRun) done(name string) {
	now := time.Now()
	r.st.Seconds[name] = now.Sub(r.phase).Seconds()
	r.phase = now
	r.st.PeakHeap = max(r.st.PeakHeap, heapBytes())
	if r.opt.Phase != nil {
		r.opt.Phase(name, slices.Index(oocPhaseNames, name)+1, len(oocPhaseNames))
	}
}

func (r *oocRun) run() error {
	r.phase = time.Now()
	r.st.Read = "whole"
	if err := r.read(); err != nil {
		return err
	}
	r.done("read")
	if err := r.canonical(); err != nil {
		return err
	}
	r.done("rows")
	if err := r.opt.Validate(r.n); err != nil {
		return fmt.Errorf("%s: %w", r.path, err)
	}
	b, need := r.plan()
	r.st.Blocks, r.st.Needed, r.st.NeededParts = b, need.total(), need.parts
	if r.oc.Memory > 0 && need.total() > r.oc.Memory {
		return &MemoryError{Cap: r.oc.Memory, Need: need.total(), Parts: need.parts, Samples: r.n, Params: r.m, Edges: r.st.Edges}
	}
	rng := placement.NewRand(r.opt.Seed)
	blocks, global, err := r.scatter(b, rng)
	if err != nil {
		return err
	}
	r.done("blocks")
	res := &FileResult{k: r.k, n: r.n, blockOf: r.file("blockof"), results: r.file("results"), params: r.params}
	counts, used, pst, err := r.partition(blocks, global, res)
	if err != nil {
		return err
	}
	r.done("parsa")
	var ps partition.ParamStats
	res.param, ps = partition.AssignParamsMasks(used, r.m, r.k, rng.Uint64())
	pst.Params = ps
	cost := partition.CostFromMasks(used, res.param, counts, r.k, r.opt.Theta)
	r.done("params")
	used = nil // the baseline takes its memory
	base, err := r.baseline(need, len(res.param))
	if err != nil {
		return err
	}
	r.done("baseline")
	r.st.PeakRSS = peakRSS()
	res.Summary = &placement.Summary{Dataset: r.path, NumSamp: r.n, NumParams: r.m, NumEdges: r.st.Edges,
		Cost: cost, Random: base, Improvement: placement.ImprovementOver(base, cost)}
	res.Parsa, res.Stats = pst, r.st
	r.res = res
	return nil
}

// read is pass 1: the file to the raw spill and the id indexes.
func (r *oocRun) read() error {
	if r.oc.Samples != nil {
		err := r.readWith(func(vis graph.Visitor) (graph.Format, error) {
			// Samples with ids as they are, in order: libsvm's numbering.
			return graph.FormatLibSVM, r.oc.Samples(vis.Sample)
		})
		r.st.Format = "table"
		return err
	}
	return r.readWith(func(vis graph.Visitor) (graph.Format, error) { return graph.Stream(r.path, r.oc.Load, vis) })
}

// readWith is read with the records that stream passes to its visitor:
// the whole file's (read) or a range's (readRange).
func (r *oocRun) readWith(stream func(graph.Visitor) (graph.Format, error)) error {
	r.params = &idIndex{}
	raw, err := createSpill(r.file("raw"), spillBuf)
	if err != nil {
		return err
	}
	defer raw.close()
	// The id index is the only thing that grows while the file is read:
	// check it against the cap now and then.
	var sinceCheck int
	check := func(added int) error {
		if sinceCheck += added; r.oc.Memory <= 0 || sinceCheck < 1<<16 {
			return raw.err
		}
		sinceCheck = 0
		idx := r.params.heldBytes() + r.nodes.heldBytes()
		if need := r.baseRSS + oocBuffers + int64((1+oocSlack)*float64(idx)); need > r.oc.Memory {
			return &MemoryError{Cap: r.oc.Memory, Need: need, Samples: r.n, Params: r.params.len(), Edges: r.e,
				Parts: map[string]int64{"index": idx, "process": r.baseRSS}}
		}
		return raw.err
	}
	vis := graph.Visitor{
		Sample: func(ids []uint64) error {
			raw.rawRow(ids)
			for _, id := range ids {
				r.params.add(id)
			}
			r.n++
			r.e += int64(len(ids))
			r.maxDeg = max(r.maxDeg, len(ids))
			return check(len(ids) + 1)
		},
		Edge: func(u, v uint64) error {
			raw.uvarint(u)
			raw.uvarint(v)
			r.nodes.add(u)
			r.nodes.add(v)
			r.params.add(v)
			r.e++
			return check(1)
		},
		Node: func(u uint64) error {
			r.nodes.add(u)
			return nil
		},
	}
	r.nodes = &idIndex{}
	r.format, err = stream(vis)
	if err != nil {
		return err
	}
	r.st.Format = string(r.format)
	defer func() { r.st.Samples, r.st.Params = r.n, r.m }()
	if err := raw.close(); err != nil {
		return err
	}
	r.st.SpillBytes += raw.bytes
	r.params.finish()
	r.m = r.params.len()
	if r.format == graph.FormatLibSVM {
		r.nodes = nil
	} else {
		r.nodes.finish()
		r.n = r.nodes.len()
	}
	if r.n > math.MaxInt32 || r.m > math.MaxInt32 {
		return fmt.Errorf("%s: %d samples and %d parameters: out of core handles at most %d of each", r.path, r.n, r.m, math.MaxInt32)
	}
	return nil
}

// canonical is pass 2: the raw spill to rows of dense ids in sample order.
func (r *oocRun) canonical() error {
	r.rows = []string{r.file("rows")}
	defer os.Remove(r.file("raw"))
	if r.format == graph.FormatLibSVM {
		return r.libsvmRows()
	}
	return r.snapRows()
}

func (r *oocRun) libsvmRows() error {
	in, err := openSpill(r.file("raw"), 0, -1, spillBuf)
	if err != nil {
		return err
	}
	defer in.close()
	out, err := createSpill(r.rows[0], spillBuf)
	if err != nil {
		return err
	}
	defer out.close()
	var raw []uint64
	var row []uint32
	for u := 0; u < r.n; u++ {
		if raw, err = in.rawRow(raw[:0]); err != nil {
			return err
		}
		row = row[:0]
		for _, id := range raw {
			row = append(row, r.params.dense(id))
		}
		out.row(row)
	}
	r.st.Edges = r.e
	if err := out.close(); err != nil {
		return err
	}
	r.st.SpillBytes += out.bytes
	return nil
}

// snapRows sorts the edges by source in ranges of source nodes small
// enough to sort in memory, dropping repeated edges, and writes a row per
// node, edgeless ones included.
func (r *oocRun) snapRows() error {
	edges, err := r.snapRowsOf(0, uint32(r.n), r.rows[0])
	r.st.Edges = edges
	return err
}

// snapRowsOf is snapRows for the source nodes lo..hi−1: it writes their
// rows to the spill at path and returns their edges.
func (r *oocRun) snapRowsOf(lo, hi uint32, path string) (int64, error) {
	// Ranges of about rangeEdges edges, from a histogram of the sources.
	const buckets = 1 << 16
	rangeEdges := int64(partition.DefaultBlockEdges) * 4
	if r.oc.Memory > 0 {
		rangeEdges = max(1<<16, min(rangeEdges, r.oc.Memory/64))
	}
	count := int64(hi - lo)
	if count == 0 {
		out, err := createSpill(path, spillBuf)
		if err != nil {
			return 0, err
		}
		return 0, out.close()
	}
	nb := int(min(buckets, count))
	bucketOf := func(u uint32) int { return int(int64(u-lo) * int64(nb) / count) }
	mine := func(u uint32) bool { return u >= lo && u < hi }
	hist := make([]int64, nb)
	err := r.eachRawEdge(func(u, _ uint32) error {
		if mine(u) {
			hist[bucketOf(u)]++
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	// rangeOf[bucket] and the first node of each range.
	rangeOf := make([]int32, nb)
	var first []uint32
	var acc int64
	for bkt := 0; bkt < nb; bkt++ {
		if bkt == 0 || (acc > 0 && acc+hist[bkt] > rangeEdges) {
			// The first node of bucket bkt: the least u with
			// bucketOf(u) = bkt.
			first = append(first, lo+uint32((int64(bkt)*count+int64(nb)-1)/int64(nb)))
			acc = 0
		}
		acc += hist[bkt]
		rangeOf[bkt] = int32(len(first) - 1)
	}
	first = append(first, hi)
	// A range is sorted in memory: a hub whose edges alone exceed the
	// cap cannot be.
	var widest int64
	for i := 0; i+1 < len(first); i++ {
		var e int64
		for bkt := 0; bkt < nb; bkt++ {
			if rangeOf[bkt] == int32(i) {
				e += hist[bkt]
			}
		}
		widest = max(widest, e)
	}
	if need := r.baseRSS + r.params.bytes() + r.nodes.bytes() + oocBuffers + int64((1+oocSlack)*float64(8*widest)); r.oc.Memory > 0 && need > r.oc.Memory {
		return 0, &MemoryError{Cap: r.oc.Memory, Need: need, Samples: r.n, Params: r.m, Edges: r.e,
			Parts: map[string]int64{"rows": 8 * widest, "index": r.params.bytes() + r.nodes.bytes(), "process": r.baseRSS}}
	}
	files := make([]*spillWriter, len(first)-1)
	defer func() {
		for _, f := range files {
			if f != nil {
				f.close()
			}
		}
	}()
	for i := range files {
		if files[i], err = createSpill(r.file("range"+strconv.Itoa(i)), blockBuf); err != nil {
			return 0, err
		}
	}
	err = r.eachRawEdge(func(u, v uint32) error {
		if !mine(u) {
			return nil
		}
		f := files[rangeOf[bucketOf(u)]]
		f.uvarint(uint64(u - first[rangeOf[bucketOf(u)]]))
		f.uvarint(uint64(v))
		return f.err
	})
	if err != nil {
		return 0, err
	}
	for _, f := range files {
		if err := f.close(); err != nil {
			return 0, err
		}
	}
	out, err := createSpill(path, spillBuf)
	if err != nil {
		return 0, err
	}
	defer out.close()
	r.rowsBytes = 8 * widest
	keys := make([]uint64, 0, widest)
	var row []uint32
	var edges int64
	for i := range files {
		in, err := openSpill(files[i].path, 0, -1, spillBuf)
		if err != nil {
			return 0, err
		}
		keys = keys[:0]
		for {
			du, err := binaryUvarintOrEOF(in)
			if err == io.EOF {
				break
			}
			if err != nil {
				in.close()
				return 0, err
			}
			v, err := in.uvarint()
			if err != nil {
				in.close()
				return 0, err
			}
			keys = append(keys, du<<32|v)
		}
		in.close()
		os.Remove(files[i].path)
		slices.Sort(keys)
		keys = slices.Compact(keys)
		j := 0
		for u := first[i]; u < first[i+1]; u++ {
			row = row[:0]
			for ; j < len(keys) && uint32(keys[j]>>32) == u-first[i]; j++ {
				row = append(row, uint32(keys[j]))
			}
			r.maxDeg = max(r.maxDeg, len(row))
			edges += int64(len(row))
			out.row(row)
		}
	}
	if err := out.close(); err != nil {
		return 0, err
	}
	r.st.SpillBytes += out.bytes
	return edges, nil
}

// binaryUvarintOrEOF reads a number, or io.EOF at a clean end.
func binaryUvarintOrEOF(s *spillReader) (uint64, error) {
	if s.atEnd() {
		return 0, io.EOF
	}
	return s.uvarint()
}

// eachRawEdge calls f with each SNAP edge of the raw spill in dense ids
// (or of the dense spills of a read by ranges: edges).
func (r *oocRun) eachRawEdge(f func(u, v uint32) error) error {
	if r.edges != nil {
		var seen int64
		for _, path := range r.edges {
			in, err := openSpill(path, 0, -1, spillBuf)
			if err != nil {
				return err
			}
			for !in.atEnd() {
				u, err := in.uvarint()
				if err != nil {
					in.close()
					return err
				}
				v, err := in.uvarint()
				if err != nil {
					in.close()
					return err
				}
				if err := f(uint32(u), uint32(v)); err != nil {
					in.close()
					return err
				}
				seen++
			}
			in.close()
		}
		if seen != r.e {
			return fmt.Errorf("out-of-core spills %v: %d edges, want %d", r.edges, seen, r.e)
		}
		return nil
	}
	in, err := openSpill(r.file("raw"), 0, -1, spillBuf)
	if err != nil {
		return err
	}
	defer in.close()
	for i := int64(0); i < r.e; i++ {
		u, err := in.uvarint()
		if err != nil {
			return err
		}
		v, err := in.uvarint()
		if err != nil {
			return err
		}
		if err := f(r.nodes.dense(u), r.params.dense(v)); err != nil {
			return err
		}
	}
	return nil
}

// eachRow calls f with each sample's row, in sample order: the rows of
// each spill of r.rows in turn.
func (r *oocRun) eachRow(f func(u int, row []uint32)) error {
	return r.eachRowOrLen(nil, func(u int, row []uint32, _ int) { f(u, row) })
}

// eachRowOrLen is eachRow that reads only the length of the rows that
// skip (when not nil) reports it does not need: f gets a nil row and the
// length then, and the row and its length otherwise. skip(u) is called
// just before f(u).
func (r *oocRun) eachRowOrLen(skip func(u int) bool, f func(u int, row []uint32, length int)) error {
	var row []uint32
	u := 0
	for x, path := range r.rows {
		in, err := openSpill(path, 0, -1, spillBuf)
		if err != nil {
			return err
		}
		for u < r.n && (x == len(r.rows)-1 || !in.atEnd()) {
			if skip != nil && skip(u) {
				n, err := in.skipRow()
				if err != nil {
					in.close()
					return err
				}
				f(u, nil, n)
			} else {
				if row, err = in.row(row[:0]); err != nil {
					in.close()
					return err
				}
				f(u, row, len(row))
			}
			u++
		}
		in.close()
	}
	if u != r.n {
		return fmt.Errorf("out-of-core spills %v: %d rows, want %d", r.rows, u, r.n)
	}
	return nil
}

// oocBlock is a block written to its file by scatter.
type oocBlock struct {
	path     string
	samples  int
	edges    int64
	start    int64 // offset in the file
	size     int64
	writer   *spillWriter
	lastUsed uint32
	// pieces, when set, hold the block instead of path: the parts of it
	// that each range of a read by ranges wrote, in sample order, each
	// encoded on its own (scatterRanges).
	pieces []blockPiece
}

// blockPiece is the part of a block that one range wrote.
type blockPiece struct {
	path    string
	samples int
}

// scatter is pass 3: it shuffles the samples as runParsa does (drawing
// from rng in the same order), cuts them into b blocks and writes each
// block's rows to a file, the global initialisation's sample to another,
// and each sample's block, in sample order, to the blockOf spill.
func (r *oocRun) scatter(b int, rng shuffler) (blocks []*oocBlock, global *oocBlock, err error) {
	n := r.n
	pos, inGlobal, blockAt := r.order(b, rng)
	if inGlobal != nil {
		global = &oocBlock{path: r.file("global")}
		if !r.skipGlobal {
			if global.writer, err = createSpill(global.path, spillBuf); err != nil {
				return nil, nil, err
			}
		}
	}
	blocks = make([]*oocBlock, b)
	for j := range blocks {
		blocks[j] = &oocBlock{path: r.file("block" + strconv.Itoa(j))}
	}
	defer func() {
		for _, blk := range append(blocks, global) {
			if blk != nil && blk.writer != nil {
				blk.writer.close()
			}
		}
	}()
	for j, blk := range blocks {
		if r.keep != nil && !r.keep(j) {
			continue
		}
		if blk.writer, err = createSpill(blk.path, blockBuf); err != nil {
			return nil, nil, err
		}
	}
	bo, err := createSpill(r.file("blockof"), spillBuf)
	if err != nil {
		return nil, nil, err
	}
	defer bo.close()
	put := func(blk *oocBlock, u int, row []uint32, length int) {
		if blk.writer != nil {
			blk.writer.uvarint(uint64(uint32(u) - blk.lastUsed))
			blk.lastUsed = uint32(u)
			blk.writer.row(row)
		}
		blk.samples++
		blk.edges += int64(length)
	}
	// Sample u's block j and whether it is in the global sample, found
	// before its row is read so that the rows no file takes are only
	// measured.
	var j int
	var inG bool
	skip := func(u int) bool {
		j = blockAt(pos[u])
		// runParsa sorts each block's part of the shuffled order in
		// place before planJobs clones it for the global sample: u sits
		// at the block's start plus its rank in the block.
		p := uint32(int64(j)*int64(n)/int64(b)) + uint32(blocks[j].samples)
		inG = inGlobal != nil && inGlobal[p/64]&(1<<(p%64)) != 0
		return blocks[j].writer == nil && (!inG || global.writer == nil)
	}
	err = r.eachRowOrLen(skip, func(u int, row []uint32, length int) {
		bo.uvarint(uint64(j))
		if inG {
			put(global, u, row, length)
		}
		put(blocks[j], u, row, length)
	})
	if err != nil {
		return nil, nil, err
	}
	for _, blk := range append(blocks, global) {
		if blk == nil || blk.writer == nil {
			continue
		}
		if err := blk.writer.close(); err != nil {
			return nil, nil, err
		}
		r.st.SpillBytes += blk.writer.bytes
		blk.size = blk.writer.bytes
		blk.writer = nil
	}
	if err := bo.close(); err != nil {
		return nil, nil, err
	}
	r.st.SpillBytes += bo.bytes
	return blocks, global, nil
}

// shuffler draws the random permutations of a plan.
type shuffler interface {
	Shuffle(int, func(int, int))
}

// order draws the shuffled order as runParsa does (drawing from rng in
// the same order) for b blocks: pos[u] is sample u's position in it,
// inGlobal marks the positions of the global initialisation's sample (nil
// without one), and blockAt gives a position's block.
func (r *oocRun) order(b int, rng shuffler) (pos []uint32, inGlobal []uint64, blockAt func(p uint32) int) {
	n := r.n
	// pos[u]: u's position in the shuffled order; the in-place inverse
	// of the shuffled permutation, marking visited entries by the top bit.
	pos = make([]uint32, n)
	for i := range pos {
		pos[i] = uint32(i)
	}
	rng.Shuffle(n, func(a, b int) { pos[a], pos[b] = pos[b], pos[a] })
	const mark = 1 << 31
	for i := range pos {
		if pos[i]&mark != 0 {
			continue
		}
		prev, cur := uint32(i), pos[i]
		for {
			next := pos[cur] &^ mark
			pos[cur] = prev | mark
			if cur == uint32(i) {
				break
			}
			prev, cur = cur, next
		}
	}
	for i := range pos {
		pos[i] &^= mark
	}
	// The global sample: positions σ(0..size−1) of the second shuffle of
	// the shuffled order with each block sorted (planJobs), marked in a
	// bitmap over positions.
	if r.po.Init == partition.InitGlobal && n > 0 {
		size := partition.GlobalSize(r.po, n, r.st.Edges)
		sigma := make([]uint32, n)
		for i := range sigma {
			sigma[i] = uint32(i)
		}
		rng.Shuffle(n, func(a, b int) { sigma[a], sigma[b] = sigma[b], sigma[a] })
		inGlobal = make([]uint64, (n+63)/64)
		for _, p := range sigma[:size] {
			inGlobal[p/64] |= 1 << (p % 64)
		}
	}
	// Block j holds positions [j·n/b, (j+1)·n/b).
	blockAt = func(p uint32) int {
		j := int(int64(p) * int64(b) / int64(n))
		for j+1 < b && int64(j+1)*int64(n)/int64(b) <= int64(p) {
			j++
		}
		for j > 0 && int64(j)*int64(n)/int64(b) > int64(p) {
			j--
		}
		return j
	}
	return pos, inGlobal, blockAt
}

// loadedBlock is a block file read back: its samples and their rows in
// CSR form, reused from block to block.
type loadedBlock struct {
	samples []uint32
	off     []int64
	adj     []uint32
}

// load reads a block file.
func (lb *loadedBlock) load(blk *oocBlock) error {
	lb.samples = lb.samples[:0]
	lb.off = append(lb.off[:0], 0)
	lb.adj = lb.adj[:0]
	if blk.pieces == nil {
		return lb.read(blk.path, blk.samples)
	}
	for _, pc := range blk.pieces {
		if err := lb.read(pc.path, pc.samples); err != nil {
			return err
		}
	}
	if len(lb.samples) != blk.samples {
		return fmt.Errorf("out-of-core block of %d samples read as %d", blk.samples, len(lb.samples))
	}
	return nil
}

// read appends the samples of a block file and their rows.
func (lb *loadedBlock) read(path string, samples int) error {
	in, err := openSpill(path, 0, -1, spillBuf)
	if err != nil {
		return err
	}
	defer in.close()
	u := uint64(0)
	for s := 0; s < samples; s++ {
		d, err := in.uvarint()
		if err != nil {
			return err
		}
		u += d
		lb.samples = append(lb.samples, uint32(u))
		if lb.adj, err = in.row(lb.adj); err != nil {
			return err
		}
		lb.off = append(lb.off, int64(len(lb.adj)))
	}
	return nil
}

// partition is pass 4: the jobs of the run in sequence, as partition.RunParsa runs
// them with one thread and τ = 0 (ParsaStream), each block read from its
// file. It returns |U_i|, the masks C_v and the statistics.
func (r *oocRun) partition(blocks []*oocBlock, global *oocBlock, res *FileResult) ([]int64, []uint64, *partition.ParsaStats, error) {
	n := r.n
	po := r.po
	st := &partition.ParsaStats{Init: po.Init, Threads: po.Threads, Tau: po.Tau, GrowBy: po.GrowBy, Placed: n, Blocks: len(blocks)}
	jobBlocks := make([]*oocBlock, 0, 2*len(blocks))
	inits := 0 // the first jobs initialise
	if n > 0 {
		switch po.Init {
		case partition.InitIndividual:
			a := po.InitBlocks
			if a == 0 {
				a = len(blocks)
			}
			st.InitBlocks = a
			for j := 0; j < a; j++ {
				jobBlocks = append(jobBlocks, blocks[j%len(blocks)])
			}
			inits = a
		case partition.InitGlobal:
			st.InitSample = global.samples
		}
	}
	jobBlocks = append(jobBlocks, blocks...)
	total := int64(0)
	if global != nil {
		total += int64(global.samples)
	}
	for _, blk := range jobBlocks {
		total += int64(blk.samples)
	}
	run := partition.NewParsaStream(r.opt, n, r.m, total)
	var lb loadedBlock
	rows := func(blk *oocBlock) (partition.BlockRows, error) {
		if err := lb.load(blk); err != nil {
			return partition.BlockRows{}, err
		}
		return partition.BlockRows{Samples: lb.samples, Off: lb.off, Adj: lb.adj, Local: true}, nil
	}

	if global != nil {
		rw, err := rows(global)
		if err != nil {
			return nil, nil, nil, err
		}
		run.Global(rw)
	}
	out, err := createSpill(res.results, spillBuf)
	if err != nil {
		return nil, nil, nil, err
	}
	defer out.close()
	res.resStart = make([]int64, len(blocks)+1)
	nreal := 0
	for t, blk := range jobBlocks {
		rw, err := rows(blk)
		if err != nil {
			return nil, nil, nil, err
		}
		if t < inits {
			run.Init(rw)
			continue
		}
		res.resStart[nreal] = out.bytes
		for _, i := range run.Block(rw) {
			out.uvarint(uint64(i))
		}
		nreal++
	}
	res.resStart[nreal] = out.bytes
	if err := out.close(); err != nil {
		return nil, nil, nil, err
	}
	r.st.SpillBytes += out.bytes
	if err := run.Check(); err != nil {
		return nil, nil, nil, fmt.Errorf("out-of-core parsa: %w", err)
	}
	for _, b := range blocks {
		os.Remove(b.path)
	}
	if global != nil {
		os.Remove(global.path)
	}
	return run.Counts(), run.Masks(), st, nil
}

// baseline is placement.RandomBaseline from the rows: per seed, the same
// draws (a machine per sample in order, then per parameter) and the cost
// from the masks, in as many bytes of arrays as the cap leaves (without
// a cap, those of the partition phase); see evaluate.
func (r *oocRun) baseline(need memNeed, keep int) (placement.Baseline, error) {
	budget := need.parts["partition"]
	if r.oc.Memory > 0 {
		free := int64(float64(r.oc.Memory-r.baseRSS-oocBuffers)/(1+oocSlack)) - need.parts["index"] - 4*int64(keep)
		budget = max(budget, free)
	}
	base, _, err := r.evaluate(budget, nil, 0)
	return base, err
}

// evaluate scores placements from the rows: the random baseline
// (placement.RandomBaseline's, per seed the same draws: a machine per
// sample in order, then per parameter) and, when p is set, p with the
// memory bound theta, as placement.Evaluate does. A pass over the rows
// serves several placements at once, their masks of a parameter side by
// side (one cache line for all of them when k ≤ 64), as many as fit in
// budget bytes of arrays, on up to GOMAXPROCS goroutines: the fewest
// passes, then the most goroutines.
func (r *oocRun) evaluate(budget int64, p *placement.Placement, theta int64) (placement.Baseline, *placement.Cost, error) {
	k, w, m := r.k, r.w, r.m
	seeds := placement.BaselineSeeds
	// Job 0 is p, jobs 1..seeds the seeds.
	first := 1
	if p != nil {
		first = 0
	}
	jobs := seeds + 1 - first
	perJob := 8 * int64(w) * int64(m)
	workers, fused, rounds := 1, 1, jobs+1
	for g := 1; g <= min(runtime.GOMAXPROCS(0), jobs); g++ {
		arrays := int(min(int64(jobs), max(0, (budget-4*int64(m)*int64(g))/max(1, perJob))))
		f := min(arrays/g, (jobs+g-1)/g)
		if f == 0 {
			break
		}
		groups := (jobs + f - 1) / f
		if rd := (groups + g - 1) / g; rd <= rounds {
			workers, fused, rounds = g, f, rd
		}
	}
	var groups [][]int
	for s := first; s <= seeds; s += fused {
		var g []int
		for x := s; x < s+fused && x <= seeds; x++ {
			g = append(g, x)
		}
		groups = append(groups, g)
	}
	costs := make([]*placement.Cost, seeds+1)
	errs := make([]error, workers)
	work := make(chan []int)
	var wg sync.WaitGroup
	for t := 0; t < workers; t++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			masks := make([]uint64, fused*w*m)
			param := make([]int32, m)
			samples := make([][]int64, fused)
			for i := range samples {
				samples[i] = make([]int64, k)
			}
			for g := range work {
				if errs[t] != nil {
					continue
				}
				f := len(g)
				stride := f * w
				rngs := make([]*rand.Rand, f)
				for i, s := range g {
					if s > 0 {
						rngs[i] = placement.NewRand(uint64(s))
					}
					clear(samples[i])
				}
				clear(masks[:stride*m])
				at := make([]int, f)
				bit := make([]uint64, f)
				errs[t] = r.eachRow(func(u int, row []uint32) {
					for i, rng := range rngs {
						var c int
						if rng == nil {
							c = int(p.Data[u])
						} else {
							c = rng.IntN(k)
						}
						samples[i][c]++
						at[i], bit[i] = i*w+c>>6, uint64(1)<<(c&63)
					}
					for _, v := range row {
						base := int(v) * stride
						for i := range at {
							masks[base+at[i]] |= bit[i]
						}
					}
				})
				for i, rng := range rngs {
					if rng == nil {
						costs[0] = partition.CostFromStrided(masks[:stride*m], stride, i*w, p.Param, samples[i], k, theta)
						continue
					}
					for v := range param {
						param[v] = int32(rng.IntN(k))
					}
					costs[g[i]] = partition.CostFromStrided(masks[:stride*m], stride, i*w, param, samples[i], k, 0)
				}
			}
		}()
	}
	for _, g := range groups {
		work <- g
	}
	close(work)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return placement.Baseline{}, nil, err
	}
	// Summed in seed order, as RandomBaseline does, for the same bits.
	return placement.MeanOf(costs[1:]), costs[0], nil
}

// WriteDir writes the placement to dir as placement.WriteDir does:
// data.part (streamed from the spill files, in sample order), param.part
// and summary.json last, each atomically.
func (res *FileResult) WriteDir(dir string, summary any) error {
	data := func(w io.Writer) error {
		bo, err := openSpill(res.blockOf, 0, -1, spillBuf)
		if err != nil {
			return err
		}
		defer bo.close()
		readers := make([]*spillReader, len(res.resStart)-1)
		defer func() {
			for _, rd := range readers {
				if rd != nil {
					rd.close()
				}
			}
		}()
		bw := bufio.NewWriterSize(w, 1<<16)
		var buf []byte
		for u := 0; u < res.n; u++ {
			j, err := bo.uvarint()
			if err != nil {
				return err
			}
			if j >= uint64(len(readers)) {
				return fmt.Errorf("out-of-core spill %s: block %d of %d", res.blockOf, j, len(readers))
			}
			if readers[j] == nil {
				if readers[j], err = openSpill(res.results, res.resStart[j], res.resStart[j+1]-res.resStart[j], 4096); err != nil {
					return err
				}
			}
			i, err := readers[j].uvarint()
			if err != nil {
				return err
			}
			buf = strconv.AppendUint(buf[:0], i, 10)
			buf = append(buf, '\n')
			if _, err := bw.Write(buf); err != nil {
				return err
			}
		}
		return bw.Flush()
	}
	param := func(w io.Writer) error {
		bw := bufio.NewWriterSize(w, 1<<16)
		var buf []byte
		v := 0
		var err error
		res.params.each(func(id uint64) {
			buf = strconv.AppendUint(buf[:0], id, 10)
			buf = append(buf, ' ')
			buf = strconv.AppendInt(buf, int64(res.param[v]), 10)
			buf = append(buf, '\n')
			v++
			if err == nil {
				_, err = bw.Write(buf)
			}
		})
		if err != nil {
			return err
		}
		return bw.Flush()
	}
	return placement.WriteDirFrom(dir, res.k,
		placement.PartSource{Lines: res.n, Write: data},
		placement.PartSource{Lines: len(res.param), Write: param}, summary)
}

// Close removes the spill files.
func (res *FileResult) Close() error {
	if res == nil || res.tmp == "" {
		return nil
	}
	err := os.RemoveAll(res.tmp)
	res.tmp = ""
	return err
}
