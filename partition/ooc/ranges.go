package ooc

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"colo/graph"
)

// Reading a file by ranges (FilePlanOptions.Ranges): the processes of a
// distributed run each parse one range of the file's lines
// (graph.SplitLines) instead of the whole file, and exchange summaries of
// what they read by sums (an all-reduce):
//
//  1. each parses its range into a raw spill and the id indexes of its
//     range, as pass 1 (read) does for the whole file;
//  2. one sum of 5 numbers per process: its samples (libsvm lines), its
//     edges, its largest row and the sizes of its id sets; the libsvm
//     samples of range r are numbered from the samples of the ranges
//     before it;
//  3. sums of the id sets (each process fills its own part of the
//     vector, the others leave it 0): a bitmap of the ids, or the sorted
//     ids where those are sparse, two numbers of 32 bits a word or id;
//     every process merges them into the index of the whole file, whose
//     numbering (the ids in increasing order) is graph.Load's;
//  4. each writes its range's rows (libsvm) or edges (SNAP) in dense ids
//     to a file of the shared directory, and a sum of the counts written
//     is the barrier after which the others read them: the rows of the
//     ranges in order are the rows of the whole file in sample order. A
//     SNAP process q reads every range's edges and sorts those of nodes
//     q·n/W..(q+1)·n/W−1 into their rows as pass 2 does, the rows of its
//     range from then on, and a sum gives the whole file's edges;
//  5. each draws the shuffled order of all samples and cuts its range's
//     rows into pieces of the blocks, and reads the pieces of the blocks
//     it keeps (scatterRanges).
//
// The plan is the same as for the whole file, byte for byte.

// FileRanges says how the processes of a distributed run read a file by
// ranges of lines.
type FileRanges struct {
	// Rank is this process's range among Count.
	Rank, Count int
	// Dir is a directory that every process of the run reads and writes
	// (one file system): each writes its range's rows there, and reads
	// everyone's. It is the caller's to remove, with the files, once
	// every process is done with its plan (Close); a run needs a
	// directory of its own.
	Dir string
	// Sum returns the element-wise sum of vals over the processes (an
	// all-reduce). Every process calls it as often, with as many values,
	// as the others.
	Sum func(vals []float64) ([]float64, error)
	// SumChunk is the most values one call of Sum carries while the id
	// sets are summed (0: DefaultSumChunk); the id sets are summed a
	// chunk at a time, so that no message is larger. Every process of a
	// run must use the same.
	SumChunk int
}

// DefaultSumChunk is the most values one call of FileRanges.Sum carries
// by default.
const DefaultSumChunk = 1 << 20

// readRange is passes 1 and 2 for the range of the file fr gives this
// process: it reads the range (graph.StreamRange), exchanges the
// summaries and writes and gathers the rows. It reports false, having
// read nothing, when the file is compressed and cannot be read by ranges.
func (r *oocRun) readRange(fr *FileRanges) (bool, error) {
	lr, err := graph.SplitLines(r.path, fr.Rank, fr.Count)
	if errors.Is(err, graph.ErrCompressed) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	r.st.Read, r.st.Range = "range", []int64{lr.Begin, lr.End}
	r.lines = lr
	err = r.readWith(func(vis graph.Visitor) (graph.Format, error) {
		format, _, err := graph.StreamRange(r.path, r.oc.Load, lr, vis)
		return format, err
	})
	if err != nil {
		return true, err
	}
	r.done("read")
	if err := r.exchange(fr); err != nil {
		return true, err
	}
	now := time.Now()
	r.st.Seconds["exchange"] = now.Sub(r.phase).Seconds()
	r.phase = now
	return true, r.gather(fr)
}

// exchange replaces the counts and id indexes of this process's range by
// the whole file's, from the sums of every range's.
func (r *oocRun) exchange(fr *FileRanges) error {
	const fields = 8
	W, me := fr.Count, fr.Rank
	snap := r.format != graph.FormatLibSVM
	var pe, ne []float64
	pe = r.params.encode(nil)
	if snap {
		ne = r.nodes.encode(nil)
	}
	head := make([]float64, fields*W)
	samples := r.n
	if snap {
		samples = 0
	}
	copy(head[fields*me:], []float64{float64(samples), float64(r.e), float64(r.maxDeg), float64(len(pe)), float64(len(ne)),
		float64(r.lines.Begin), float64(r.lines.End), float64(r.lines.Size)})
	head, err := fr.Sum(head)
	if err != nil {
		return fmt.Errorf("%s: the sum of the ranges' counts: %w", r.path, err)
	}
	if len(head) != fields*W {
		return fmt.Errorf("%s: the sum of the ranges' counts has %d values, want %d", r.path, len(head), fields*W)
	}
	// The ranges, each cut by its own process, must tile one file.
	for q := range W {
		h := head[fields*q : fields*(q+1)]
		begin, end, size := int64(h[5]), int64(h[6]), int64(h[7])
		switch {
		case size != r.lines.Size:
			return fmt.Errorf("%s: range %d was cut from a file of %d bytes, range %d from one of %d: the file changed while the processes read it", r.path, q, size, me, r.lines.Size)
		case q == 0 && begin != 0, q > 0 && begin != int64(head[fields*(q-1)+6]), q == W-1 && end != size:
			return fmt.Errorf("%s: range %d is bytes [%d, %d) of %d: the ranges do not tile the file", r.path, q, begin, end, size)
		}
	}
	var n, first, total int
	var e int64
	maxDeg := 0
	off := 0 // of this process's id sets in the sums
	for q := range W {
		h := head[fields*q : fields*(q+1)]
		if q == me {
			first, off = n, total
		}
		n += int(h[0])
		e += int64(h[1])
		maxDeg = max(maxDeg, int(h[2]))
		total += int(h[3]) + int(h[4])
	}
	if int(head[fields*me+3]) != len(pe) || int(head[fields*me+4]) != len(ne) {
		return fmt.Errorf("%s: the sums hold id sets of %d and %d values for range %d, which has %d and %d: the processes do not sum alike",
			r.path, int(head[fields*me+3]), int(head[fields*me+4]), me, len(pe), len(ne))
	}
	// The id sets arrive a chunk at a time and are merged as they come,
	// so that no process holds every range's sets at once.
	in := &sumStream{fr: fr, mine: append(pe, ne...), off: off, total: total}
	params, nodes := &idIndex{}, &idIndex{}
	for q := range W {
		if err = decodeIDs(in, params); err != nil {
			return fmt.Errorf("%s: the parameter ids of range %d: %w", r.path, q, err)
		}
		if snap {
			if err = decodeIDs(in, nodes); err != nil {
				return fmt.Errorf("%s: the node ids of range %d: %w", r.path, q, err)
			}
		}
	}
	if left := in.left(); left != 0 {
		return fmt.Errorf("%s: %d values left over after the ranges' id sets", r.path, left)
	}
	params.finish()
	r.local = &rangeCounts{samples: r.n, edges: r.e}
	r.ranges = &rangeRead{FileRanges: fr, first: first, samples: r.n}
	r.params, r.m, r.e, r.maxDeg = params, params.len(), e, maxDeg
	if snap {
		nodes.finish()
		r.nodes, r.n = nodes, nodes.len()
	} else {
		r.nodes, r.n = nil, n
	}
	r.st.Samples, r.st.Params = r.n, r.m
	if r.n == 0 {
		return graph.EmptyError(r.path)
	}
	if r.n > math.MaxInt32 || r.m > math.MaxInt32 {
		return fmt.Errorf("%s: %d samples and %d parameters: out of core handles at most %d of each", r.path, r.n, r.m, math.MaxInt32)
	}
	return nil
}

// rangeRead is a plan's read by ranges: this process's range, and the
// number of its range's first sample and its samples (SNAP: of its range
// of nodes).
type rangeRead struct {
	*FileRanges
	first, samples int
}

// rangeCounts is what a process read of its own range: libsvm samples
// and edges (SNAP: those in its raw spill).
type rangeCounts struct {
	samples int
	edges   int64
}

// gather writes this range's rows (libsvm) or edges (SNAP) in the whole
// file's dense ids to the shared directory and waits for every process's
// (a sum of the counts written); for SNAP it then sorts the edges of its
// range of nodes into their rows.
func (r *oocRun) gather(fr *FileRanges) error {
	name := func(q int) string {
		if r.format == graph.FormatLibSVM {
			return filepath.Join(fr.Dir, "range-"+strconv.Itoa(q)+"-rows")
		}
		return filepath.Join(fr.Dir, "range-"+strconv.Itoa(q)+"-edges")
	}
	in, err := openSpill(r.file("raw"), 0, -1, spillBuf)
	if err != nil {
		return err
	}
	out, err := createSpill(name(fr.Rank), spillBuf)
	if err != nil {
		in.close()
		return err
	}
	var written int64
	if r.format == graph.FormatLibSVM {
		var raw []uint64
		var row []uint32
		for range r.local.samples {
			if raw, err = in.rawRow(raw[:0]); err != nil {
				break
			}
			row = row[:0]
			for _, id := range raw {
				row = append(row, r.params.dense(id))
			}
			out.row(row)
			written++
		}
	} else {
		for range r.local.edges {
			var u, v uint64
			if u, err = in.uvarint(); err != nil {
				break
			}
			if v, err = in.uvarint(); err != nil {
				break
			}
			out.uvarint(uint64(r.nodes.dense(u)))
			out.uvarint(uint64(r.params.dense(v)))
			written++
		}
	}
	in.close()
	os.Remove(r.file("raw"))
	if cerr := out.close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	r.st.SpillBytes += out.bytes
	r.local = nil
	got, err := fr.Sum([]float64{float64(written)})
	if err != nil {
		return fmt.Errorf("%s: the sum of the rows written by the ranges: %w", r.path, err)
	}
	if r.format == graph.FormatLibSVM {
		if len(got) != 1 || int(got[0]) != r.n {
			return fmt.Errorf("%s: the ranges wrote %v rows, want %d", r.path, got, r.n)
		}
		r.rows = make([]string, fr.Count)
		for q := range fr.Count {
			r.rows[q] = name(q)
		}
		r.st.Edges = r.e
		return nil
	}
	if len(got) != 1 || int64(got[0]) != r.e {
		return fmt.Errorf("%s: the ranges wrote %v edges, want %d", r.path, got, r.e)
	}
	// The rows of nodes q·n/W..(q+1)·n/W−1 are range q's, made from the
	// edges of every range, and numbered as libsvm ranges are.
	r.edges = make([]string, fr.Count)
	r.rows = make([]string, fr.Count)
	for q := range fr.Count {
		r.edges[q] = name(q)
		r.rows[q] = filepath.Join(fr.Dir, "range-"+strconv.Itoa(q)+"-rows")
	}
	lo := uint32(int64(fr.Rank) * int64(r.n) / int64(fr.Count))
	hi := uint32(int64(fr.Rank+1) * int64(r.n) / int64(fr.Count))
	edges, err := r.snapRowsOf(lo, hi, r.rows[fr.Rank])
	if err != nil {
		return err
	}
	r.ranges.first, r.ranges.samples = int(lo), int(hi-lo)
	// The whole file's edges (repeats counted once) and longest row.
	vals := make([]float64, 2*fr.Count)
	vals[2*fr.Rank], vals[2*fr.Rank+1] = float64(edges), float64(r.maxDeg)
	if vals, err = fr.Sum(vals); err != nil {
		return fmt.Errorf("%s: the sum of the ranges' rows: %w", r.path, err)
	}
	if len(vals) != 2*fr.Count {
		return fmt.Errorf("%s: the sum of the ranges' rows has %d values, want %d", r.path, len(vals), 2*fr.Count)
	}
	r.st.Edges = 0
	for q := range fr.Count {
		r.st.Edges += int64(vals[2*q])
		r.maxDeg = max(r.maxDeg, int(vals[2*q+1]))
	}
	return nil
}

// shared reports whether a spill is another process's too (a range's
// rows in the shared directory), which this process must not remove.
func (r *oocRun) shared(path string) bool { return filepath.Dir(path) != filepath.Clean(r.tmp) }

// encode appends the ids of x, after finish, to dst as numbers of at most
// 32 bits: 0, the number of words and each word's low and high halves for
// a bitmap; 1, the number of ids and each id's halves for a sorted list.
func (x *idIndex) encode(dst []float64) []float64 {
	half := func(v uint64) { dst = append(dst, float64(uint32(v)), float64(v>>32)) }
	if x.sparse {
		dst = append(dst, 1, float64(len(x.sorted)))
		for _, id := range x.sorted {
			half(id)
		}
		return dst
	}
	words := len(x.bitmap)
	for words > 0 && x.bitmap[words-1] == 0 {
		words--
	}
	dst = append(dst, 0, float64(words))
	for _, w := range x.bitmap[:words] {
		half(w)
	}
	return dst
}

// sumStream is the sum of every range's id sets (FileRanges.Sum), read
// in order a chunk of FileRanges.SumChunk values at a time: each process puts its
// own values (mine, at off of total) in its part of each chunk and zeros
// elsewhere, and every process sums the same chunks in the same order.
// The chunk's sums are read before the next chunk is summed.
type sumStream struct {
	fr         *FileRanges
	mine       []float64
	off, total int
	next       int       // the first value of the chunk after buf
	buf, part  []float64 // the current chunk's sums; the part sent
	at         int       // the next value of buf
}

// take returns the next two values.
func (s *sumStream) take() (a, b float64, err error) {
	if a, err = s.one(); err == nil {
		b, err = s.one()
	}
	return a, b, err
}

// one returns the next value.
func (s *sumStream) one() (float64, error) {
	if s.at == len(s.buf) {
		if err := s.fill(); err != nil {
			return 0, err
		}
	}
	v := s.buf[s.at]
	s.at++
	return v, nil
}

// left returns the number of values not taken yet.
func (s *sumStream) left() int { return s.total - s.next + len(s.buf) - s.at }

// fill sums the next chunk.
func (s *sumStream) fill() error {
	if s.next >= s.total {
		return fmt.Errorf("the sum of the ranges' id sets ends after %d values", s.total)
	}
	chunk := s.fr.SumChunk
	if chunk == 0 {
		chunk = DefaultSumChunk
	}
	c, n := s.next, min(chunk, s.total-s.next)
	if cap(s.part) < n {
		s.part = make([]float64, n)
	}
	part := s.part[:n]
	clear(part)
	// This process's values that fall in [c, c+n).
	if lo, hi := max(c, s.off), min(c+n, s.off+len(s.mine)); lo < hi {
		copy(part[lo-c:], s.mine[lo-s.off:hi-s.off])
	}
	got, err := s.fr.Sum(part)
	if err != nil {
		return fmt.Errorf("the sum of the ranges' id sets: %w", err)
	}
	if len(got) != n {
		return fmt.Errorf("the sum of the ranges' id sets has %d values, want %d", len(got), n)
	}
	s.next += n
	s.buf, s.at = got, 0
	return nil
}

// decodeIDs adds the ids of the next set that encode wrote in src to x.
func decodeIDs(src *sumStream, x *idIndex) error {
	if src.left() < 2 {
		return fmt.Errorf("an id set of %d values: want at least 2", src.left())
	}
	kind, count, err := src.take()
	if err != nil {
		return err
	}
	if count < 0 || count != math.Trunc(count) || 2*count > float64(src.left()) {
		return fmt.Errorf("an id set of %g entries in %d values", count, src.left())
	}
	if kind != 0 && kind != 1 {
		return fmt.Errorf("an id set of kind %g: want 0 (bitmap) or 1 (sorted ids)", kind)
	}
	for i := range int(count) {
		lo, hi, err := src.take()
		if err != nil {
			return err
		}
		if lo < 0 || hi < 0 || lo > math.MaxUint32 || hi > math.MaxUint32 || lo != math.Trunc(lo) || hi != math.Trunc(hi) {
			return fmt.Errorf("entry %d: halves %g and %g are not 32-bit numbers", i, lo, hi)
		}
		v := uint64(hi)<<32 | uint64(lo)
		if kind == 1 {
			x.add(v)
			continue
		}
		for w := v; w != 0; w &= w - 1 {
			x.add(uint64(i)*64 + uint64(bits.TrailingZeros64(w)))
		}
	}
	return nil
}

// scatterRanges is pass 3 (scatter) for a file read by ranges,
// with the work over the rows divided among the processes: each draws
// the same shuffled order, cuts its own range's rows into pieces of the
// blocks (and of the global sample) in the shared directory, and reads
// back, for each block it keeps, the pieces of every range in range order,
// which are the block's samples in sample order: the blocks scatter
// writes. The sample's place in its block, which decides the global
// sample, counts the samples of the block in the ranges before, from the
// order alone. A sum of every range's pieces' sizes is the barrier after
// which the pieces are read, and tells their sizes.
func (r *oocRun) scatterRanges(b int, rng shuffler) (blocks []*oocBlock, global *oocBlock, err error) {
	fr := r.ranges
	n, W := r.n, fr.Count
	pos, inGlobal, blockAt := r.order(b, rng)
	piece := func(q, j int) string {
		if j == b {
			return filepath.Join(fr.Dir, "range-"+strconv.Itoa(q)+"-global")
		}
		return filepath.Join(fr.Dir, "range-"+strconv.Itoa(q)+"-block-"+strconv.Itoa(j))
	}
	// The samples of each block before this range's first.
	seen := make([]int, b)
	for u := range fr.first {
		seen[blockAt(pos[u])]++
	}
	// This range's pieces: b blocks and the global sample, made when
	// their first sample comes.
	writers := make([]*spillWriter, b+1)
	last := make([]uint32, b+1)
	written := make([]float64, (b+1)*W)
	mine := written[(b+1)*fr.Rank : (b+1)*(fr.Rank+1)]
	defer func() {
		for _, w := range writers {
			if w != nil {
				w.close()
			}
		}
	}()
	put := func(x, u int, row []uint32) error {
		if writers[x] == nil {
			if writers[x], err = createSpill(piece(fr.Rank, x), blockBuf); err != nil {
				return err
			}
		}
		writers[x].uvarint(uint64(uint32(u) - last[x]))
		last[x] = uint32(u)
		writers[x].row(row)
		mine[x]++
		return writers[x].err
	}
	in, err := openSpill(r.rows[fr.Rank], 0, -1, spillBuf)
	if err != nil {
		return nil, nil, err
	}
	var row []uint32
	for u := fr.first; u < fr.first+fr.samples; u++ {
		if row, err = in.row(row[:0]); err != nil {
			break
		}
		j := blockAt(pos[u])
		// runParsa sorts each block's part of the shuffled order in
		// place before planJobs clones it for the global sample: u sits
		// at the block's start plus its rank in the block.
		p := uint32(int64(j)*int64(n)/int64(b)) + uint32(seen[j])
		seen[j]++
		if inGlobal != nil && inGlobal[p/64]&(1<<(p%64)) != 0 {
			if err = put(b, u, row); err != nil {
				break
			}
		}
		if err = put(j, u, row); err != nil {
			break
		}
	}
	in.close()
	if err != nil {
		return nil, nil, err
	}
	for x, w := range writers {
		if w == nil {
			continue
		}
		if err := w.close(); err != nil {
			return nil, nil, err
		}
		r.st.SpillBytes += w.bytes
		writers[x] = nil
	}
	// Each sample's block, in sample order, from the order alone.
	bo, err := createSpill(r.file("blockof"), spillBuf)
	if err != nil {
		return nil, nil, err
	}
	for u := range n {
		bo.uvarint(uint64(blockAt(pos[u])))
	}
	if err := bo.close(); err != nil {
		return nil, nil, err
	}
	r.st.SpillBytes += bo.bytes
	pos = nil
	sizes, err := fr.Sum(written)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: the sum of the ranges' pieces of the blocks: %w", r.path, err)
	}
	if len(sizes) != len(written) {
		return nil, nil, fmt.Errorf("%s: the sum of the ranges' pieces has %d values, want %d", r.path, len(sizes), len(written))
	}
	gather := func(blk *oocBlock, x int, keep bool) {
		for q := range W {
			c := int(sizes[(b+1)*q+x])
			blk.samples += c
			if keep && c > 0 {
				blk.pieces = append(blk.pieces, blockPiece{path: piece(q, x), samples: c})
			}
		}
	}
	blocks = make([]*oocBlock, b)
	for j := range blocks {
		blocks[j] = &oocBlock{}
		gather(blocks[j], j, r.keep == nil || r.keep(j))
		if want := int(int64(j+1)*int64(n)/int64(b) - int64(j)*int64(n)/int64(b)); blocks[j].samples != want {
			return nil, nil, fmt.Errorf("%s: the ranges wrote %d samples of block %d, want %d", r.path, blocks[j].samples, j, want)
		}
	}
	if inGlobal != nil {
		global = &oocBlock{}
		gather(global, b, !r.skipGlobal)
	}
	return blocks, global, nil
}
