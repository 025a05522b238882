package graph

import (
	"cmp"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
)

// DupPolicy says what a Builder does with a parameter that occurs twice in
// one sample.
type DupPolicy int

const (
	// DupError rejects the sample (libsvm: indices must be unique).
	DupError DupPolicy = iota
	// DupSum keeps one edge whose value is the sum (hashed features).
	DupSum
	// DupKeep keeps one edge with the first value (edge lists read both ways).
	DupKeep
)

// chunkLen is the most edges per storage chunk of a Builder. Chunks avoid
// the copy-on-grow of one large slice, which would double the peak memory
// of loading: the first chunk holds firstChunkLen edges, each next one
// twice its predecessor up to chunkLen, and a full chunk is never grown.
const (
	chunkLen      = 1 << 20
	firstChunkLen = 1 << 10
)

// Builder accumulates samples row by row and builds a Graph. The zero value
// is not usable; call NewBuilder.
type Builder struct {
	meta      Meta
	dup       DupPolicy
	off       []int64
	ids       [][]uint64  // raw parameter ids, in chunks of at most chunkLen
	vals      [][]float32 // per chunk; a nil chunk means all ones
	n         int64       // edges so far
	labels    []float64
	hasLabels bool
	sampleIDs []uint64
	withIDs   bool
	scratch   []int
	first     int // edges of the first storage chunk (0: firstChunkLen)
	// narrow, when not nil, holds the rows instead of ids and vals: in
	// 32-bit ids, in slots of one arena (useSlot), the last of which takes
	// new rows while their ids fit and it has room.
	narrow []slot
	arena  *arena
}

// arena is storage for the ids and values of all the rows of an input,
// handed out in slots to the Builders of its chunks, in input order
// (Builder.useSlot), so that the joined Builder builds its graph on it
// without a copy (buildRows): the ids are remapped in place and the
// values kept. Its capacity costs nothing until it is written: a large
// allocation is fresh memory, zero without being touched.
type arena struct {
	ids  []uint32
	vals []float32
}

// newArena returns an arena of n edges.
func newArena(n int) *arena {
	return &arena{ids: make([]uint32, n), vals: make([]float32, n)}
}

// slot is the part of an arena that holds a Builder's rows: ids, from
// position lo of the arena, with room up to cap(ids), and vals beside
// them once some value differs from 1 (hasVals; all ones until then).
type slot struct {
	lo      int
	ids     []uint32
	vals    []float32
	hasVals bool
}

// useSlot makes an empty Builder keep its rows in the edges [lo, hi) of
// ar for as long as their ids fit 32 bits and the slot has room, and in
// storage chunks of its own after.
func (b *Builder) useSlot(ar *arena, lo, hi int) {
	b.arena = ar
	b.narrow = []slot{{lo: lo, ids: ar.ids[lo:lo:hi], vals: ar.vals[lo:lo:hi]}}
}

// addNarrow stores a normalised row in the last slot and reports whether
// it could: every id fits 32 bits and the slot has room.
func (b *Builder) addNarrow(params []uint64, vals []float32) bool {
	s := &b.narrow[len(b.narrow)-1]
	if len(s.ids)+len(params) > cap(s.ids) {
		return false
	}
	for _, id := range params {
		if id > math.MaxUint32 {
			return false
		}
	}
	if vals != nil && !s.hasVals && !allOnes(vals) {
		s.vals = s.vals[:len(s.ids)]
		for k := range s.vals {
			s.vals[k] = 1
		}
		s.hasVals = true
	}
	for _, id := range params {
		s.ids = append(s.ids, uint32(id))
	}
	switch {
	case !s.hasVals:
	case vals != nil:
		s.vals = append(s.vals, vals...)
	default:
		for range params {
			s.vals = append(s.vals, 1)
		}
	}
	b.n += int64(len(params))
	return true
}

// widen moves the rows of the slots to storage chunks of b's own.
func (b *Builder) widen() {
	for _, s := range b.narrow {
		if len(s.ids) == 0 {
			continue // a chunk of no room would take no edge
		}
		ids := make([]uint64, len(s.ids))
		for k, id := range s.ids {
			ids[k] = uint64(id)
		}
		b.ids = append(b.ids, ids)
		if s.hasVals {
			b.vals = append(b.vals, append([]float32(nil), s.vals...))
		} else {
			b.vals = append(b.vals, nil)
		}
	}
	b.narrow, b.arena = nil, nil
}

// NewBuilder returns an empty Builder for a graph described by meta that
// rejects duplicate parameters within a sample.
func NewBuilder(meta Meta) *Builder {
	return &Builder{meta: meta, off: []int64{0}}
}

// SetDupPolicy sets what AddSample does with a repeated parameter.
func (b *Builder) SetDupPolicy(p DupPolicy) { b.dup = p }

// DuplicateError reports a parameter that occurs twice in one sample.
type DuplicateError struct{ ID uint64 }

func (e *DuplicateError) Error() string {
	return fmt.Sprintf("parameter %d occurs twice in the sample", e.ID)
}

// NumSamples returns the number of samples added so far.
func (b *Builder) NumSamples() int { return len(b.off) - 1 }

// AddSample appends a sample with the given label, parameter ids (as in the
// input, in any order) and values (nil means all 1). Values must be finite.
// A repeated parameter is handled by the duplicate policy; with DupError it
// returns a *DuplicateError and adds nothing.
func (b *Builder) AddSample(label float64, params []uint64, vals []float32) error {
	if b.withIDs {
		return fmt.Errorf("graph: AddSample after AddSampleWithID")
	}
	return b.add(label, params, vals)
}

// AddSampleWithID is AddSample for inputs whose samples carry their own ids
// (the nodes of an edge list). Either every sample has an id or none has.
func (b *Builder) AddSampleWithID(id uint64, label float64, params []uint64, vals []float32) error {
	if !b.withIDs && b.NumSamples() > 0 {
		return fmt.Errorf("graph: AddSampleWithID after AddSample")
	}
	b.withIDs = true
	if err := b.add(label, params, vals); err != nil {
		return err
	}
	b.sampleIDs = append(b.sampleIDs, id)
	return nil
}

// SetHasLabels records that the input carries labels even if all are 0.
func (b *Builder) SetHasLabels() { b.hasLabels = true }

func (b *Builder) add(label float64, params []uint64, vals []float32) error {
	if vals != nil && len(vals) != len(params) {
		return fmt.Errorf("graph: %d parameters but %d values", len(params), len(vals))
	}
	sorted := true
	for i := 1; i < len(params); i++ {
		if params[i] <= params[i-1] {
			sorted = false
			break
		}
	}
	if !sorted {
		var err error
		params, vals, err = b.normalise(params, vals)
		if err != nil {
			return err
		}
	}
	if b.narrow != nil && len(params) > 0 && !b.addNarrow(params, vals) {
		b.widen()
	}
	// The row goes in whole runs: as much as the last chunk holds, then
	// a new chunk for the rest.
	for b.narrow == nil && len(params) > 0 {
		c := len(b.ids) - 1
		if c < 0 || len(b.ids[c]) == cap(b.ids[c]) {
			// Chunks start small, so that small inputs stay small, and
			// double up to chunkLen.
			size := firstChunkLen
			if c >= 0 {
				size = min(2*cap(b.ids[c]), chunkLen)
			} else if b.first > 0 {
				size = b.first
			}
			b.ids = append(b.ids, make([]uint64, 0, size))
			b.vals = append(b.vals, nil)
			c++
		}
		run := min(len(params), cap(b.ids[c])-len(b.ids[c]))
		if vals != nil && b.vals[c] == nil && !allOnes(vals[:run]) {
			ones := make([]float32, len(b.ids[c]), cap(b.ids[c]))
			for k := range ones {
				ones[k] = 1
			}
			b.vals[c] = ones
		}
		b.ids[c] = append(b.ids[c], params[:run]...)
		switch {
		case b.vals[c] == nil:
		case vals != nil:
			b.vals[c] = append(b.vals[c], vals[:run]...)
		default:
			for range run {
				b.vals[c] = append(b.vals[c], 1)
			}
		}
		params = params[run:]
		if vals != nil {
			vals = vals[run:]
		}
		b.n += int64(run)
	}
	b.off = append(b.off, b.n)
	b.labels = append(b.labels, label)
	if label != 0 {
		b.hasLabels = true
	}
	return nil
}

// allOnes reports whether every value of vs is 1.
func allOnes(vs []float32) bool {
	for _, v := range vs {
		if v != 1 {
			return false
		}
	}
	return true
}

// normalise sorts a row by parameter id and applies the duplicate policy.
// It copies, leaving the caller's slices alone.
func (b *Builder) normalise(params []uint64, vals []float32) ([]uint64, []float32, error) {
	idx := b.scratch[:0]
	for i := range params {
		idx = append(idx, i)
	}
	b.scratch = idx
	slices.SortStableFunc(idx, func(x, y int) int { return cmp.Compare(params[x], params[y]) })
	ps := make([]uint64, 0, len(params))
	var vs []float32
	if vals != nil {
		vs = make([]float32, 0, len(params))
	}
	for _, i := range idx {
		if n := len(ps); n > 0 && ps[n-1] == params[i] {
			switch b.dup {
			case DupError:
				return nil, nil, &DuplicateError{ID: params[i]}
			case DupSum:
				if vs == nil {
					vs = make([]float32, n, len(params))
					for k := range vs {
						vs[k] = 1
					}
				}
				v := float32(1)
				if vals != nil {
					v = vals[i]
				}
				vs[n-1] += v
			}
			continue
		}
		ps = append(ps, params[i])
		if vs != nil {
			v := float32(1)
			if vals != nil {
				v = vals[i]
			}
			vs = append(vs, v)
		}
	}
	return ps, vs, nil
}

// Build finishes the graph. The Builder must not be used afterwards.
func (b *Builder) Build() (*Graph, error) {
	if b.n > math.MaxUint32 {
		return nil, fmt.Errorf("graph: %d edges exceed the 32-bit edge ids of one sample list", b.n)
	}
	n := b.NumSamples()
	if int64(n) > math.MaxUint32 {
		return nil, fmt.Errorf("graph: %d samples exceed 32-bit ids", n)
	}
	if b.narrow != nil {
		return b.buildNarrow()
	}
	paramIDs, remap := b.paramIndex()
	if int64(len(paramIDs)) > math.MaxUint32 {
		return nil, fmt.Errorf("graph: %d parameters exceed 32-bit ids", len(paramIDs))
	}
	m := len(paramIDs)

	// Remap raw ids chunk by chunk, freeing each chunk once copied.
	adj := make([]uint32, b.n)
	hasVals := false
	for _, c := range b.vals {
		if c != nil {
			hasVals = true
		}
	}
	var values []float32
	if hasVals {
		values = make([]float32, b.n)
	}
	// Chunks are independent: up to GOMAXPROCS goroutines take them in
	// turn (remap only reads).
	starts := make([]int64, len(b.ids)+1)
	for c := range b.ids {
		starts[c+1] = starts[c] + int64(len(b.ids[c]))
	}
	var (
		wg   sync.WaitGroup
		turn atomic.Int64
	)
	for range max(1, min(runtime.GOMAXPROCS(0), int(b.n/minTransposeEdges))) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c := int(turn.Add(1) - 1); c < len(b.ids); c = int(turn.Add(1) - 1) {
				lo, hi := starts[c], starts[c+1]
				dst := adj[lo:hi]
				for j, id := range b.ids[c] {
					dst[j] = remap(id)
				}
				if hasVals {
					if b.vals[c] != nil {
						copy(values[lo:hi], b.vals[c])
					} else {
						for j := lo; j < hi; j++ {
							values[j] = 1
						}
					}
				}
				b.ids[c], b.vals[c] = nil, nil
			}
		}()
	}
	wg.Wait()

	poff, padj := transpose(b.off, adj, m)
	g := &Graph{
		sampleOff: b.off,
		sampleAdj: adj,
		paramOff:  poff,
		paramAdj:  padj,
		values:    values,
		paramIDs:  paramIDs,
		meta:      b.meta,
	}
	if b.hasLabels {
		g.labels = b.labels
	}
	if b.withIDs {
		g.sampleIDs = b.sampleIDs
	}
	*b = Builder{}
	return g, nil
}

// buildNarrow is Build for rows in the slots of an arena: it moves the
// rows of each slot down to the end of the previous one's, so that the
// arena's first edges hold them all, and builds the graph on them
// (buildRows), or on a copy of them where they fill less than half of the
// arena (keepArena).
func (b *Builder) buildNarrow() (*Graph, error) {
	ar := b.arena
	hasVals := false
	for _, s := range b.narrow {
		hasVals = hasVals || s.hasVals
	}
	n := 0
	for _, s := range b.narrow {
		// Slots are in arena order: s.lo >= n.
		if s.lo != n {
			copy(ar.ids[n:], s.ids)
		}
		if hasVals {
			switch v := ar.vals[n : n+len(s.ids)]; {
			case !s.hasVals:
				for k := range v {
					v[k] = 1
				}
			case s.lo != n:
				copy(v, s.vals)
			}
		}
		n += len(s.ids)
	}
	ids := ar.ids[:n:n]
	var values []float32
	if hasVals {
		values = ar.vals[:n:n]
	}
	if !keepArena(n, len(ar.ids)) {
		ids = slices.Clone(ids)
		values = slices.Clone(values)
	}
	var labels []float64
	if b.hasLabels {
		labels = b.labels
	}
	var sampleIDs []uint64
	if b.withIDs {
		sampleIDs = b.sampleIDs
	}
	g, err := buildRows(b.meta, b.off, ids, values, labels, sampleIDs)
	*b = Builder{}
	return g, err
}

// keepArena reports whether a graph of n edges keeps the arena of size
// edges they were read into as its own storage, or gets a copy of them.
// The arena is sized for the most edges its file can hold (a pair takes
// at least 4 bytes of text), and all of it stays alive, and counts in the
// collector's heap, as long as the graph does: kept while the edges fill
// at least half of it (20 Newsgroups fills 60%), so that a graph never
// holds more than twice its edges' storage, and copied out otherwise (a
// file of long values, as a dense table written with 17 digits).
func keepArena(n, size int) bool { return 2*n >= size }

// paramIndex returns the sorted distinct raw ids and a function mapping a
// raw id to its dense index (paramIndexOf).
func (b *Builder) paramIndex() ([]uint64, func(uint64) uint32) {
	return paramIndexOf(b.ids, b.n)
}

// paramIndexOf returns the sorted distinct ids of chunks, which hold n ids
// in all, and a function mapping an id to its dense index. Small id ranges
// use a lookup table, large ones a hash map.
func paramIndexOf[T uint32 | uint64](chunks [][]T, n int64) ([]uint64, func(T) uint32) {
	var maxID T
	for c := range chunks {
		for _, id := range chunks[c] {
			maxID = max(maxID, id)
		}
	}
	if n == 0 {
		return []uint64{}, func(T) uint32 { return 0 }
	}
	if uint64(maxID) < uint64(4*n)+1<<20 {
		table := make([]uint32, uint64(maxID)+1)
		for c := range chunks {
			for _, id := range chunks[c] {
				table[id] = 1
			}
		}
		distinct := 0
		for _, seen := range table {
			distinct += int(seen)
		}
		ids := make([]uint64, 0, distinct)
		for id, seen := range table {
			if seen != 0 {
				table[id] = uint32(len(ids))
				ids = append(ids, uint64(id))
			}
		}
		return ids, func(id T) uint32 { return table[id] }
	}
	index := make(map[uint64]uint32)
	for c := range chunks {
		for _, id := range chunks[c] {
			index[uint64(id)] = 0
		}
	}
	ids := make([]uint64, 0, len(index))
	for id := range index {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for i, id := range ids {
		index[id] = uint32(i)
	}
	return ids, func(id T) uint32 { return index[uint64(id)] }
}

// buildRows builds the graph of samples given as rows in CSR form over raw
// parameter ids of 32 bits: row u is raw[off[u]:off[u+1]], increasing and
// distinct; values, when not nil, are aligned with raw; labels and
// sampleIDs are nil or one per sample, as a Builder keeps them. It is the
// graph that Build returns for the same rows added to a Builder, built
// without the Builder's copies: raw is remapped in place to the dense
// parameter ids and becomes the graph's adjacency, and the graph keeps
// off, values, labels and sampleIDs as they are.
func buildRows(meta Meta, off []int64, raw []uint32, values []float32, labels []float64, sampleIDs []uint64) (*Graph, error) {
	if int64(len(raw)) > math.MaxUint32 {
		return nil, fmt.Errorf("graph: %d edges exceed the 32-bit edge ids of one sample list", len(raw))
	}
	if n := len(off) - 1; int64(n) > math.MaxUint32 {
		return nil, fmt.Errorf("graph: %d samples exceed 32-bit ids", n)
	}
	paramIDs, remap := paramIndexOf([][]uint32{raw}, int64(len(raw)))
	m := len(paramIDs)
	// Ranges of minTransposeEdges are independent: up to GOMAXPROCS
	// goroutines take them in turn, as Build's do its chunks.
	var (
		wg   sync.WaitGroup
		turn atomic.Int64
	)
	parts := (len(raw) + minTransposeEdges - 1) / minTransposeEdges
	for range max(1, min(runtime.GOMAXPROCS(0), len(raw)/minTransposeEdges)) {
		wg.Go(func() {
			for c := int(turn.Add(1) - 1); c < parts; c = int(turn.Add(1) - 1) {
				r := raw[c*minTransposeEdges : min(len(raw), (c+1)*minTransposeEdges)]
				for j, id := range r {
					r[j] = remap(id)
				}
			}
		})
	}
	wg.Wait()
	poff, padj := transpose(off, raw, m)
	return &Graph{
		sampleOff: off,
		sampleAdj: raw,
		paramOff:  poff,
		paramAdj:  padj,
		values:    values,
		labels:    labels,
		paramIDs:  paramIDs,
		sampleIDs: sampleIDs,
		meta:      meta,
	}, nil
}

// transpose builds the column-wise CSR of a row-wise CSR with m columns.
// Columns list rows in increasing order.
func transpose(off []int64, adj []uint32, m int) ([]int64, []uint32) {
	return transposeOn(off, adj, m, transposeWorkers(len(off)-1, len(adj), m))
}

// minTransposeEdges is the least number of edges per goroutine of a
// transpose, and of the remapping of raw ids before it: 256K, so that a
// graph of a million edges, such as 20 Newsgroups or Slashdot, is built
// on two cores.
const minTransposeEdges = 1 << 18

// transposeWorkers returns how many goroutines transpose n samples with
// e edges over m parameters: one per 256K edges, up to GOMAXPROCS, and one
// when the per-goroutine counts (4 bytes per parameter each) would be
// large next to the edges or the edges more than 32-bit positions reach.
func transposeWorkers(n, e, m int) int {
	w := min(runtime.GOMAXPROCS(0), e/minTransposeEdges, n)
	if w < 2 || m > e/4 || int64(e) > math.MaxUint32 {
		return 1 // the goroutines' positions are 32-bit
	}
	return w
}

// transposeOn is transpose on workers goroutines, each taking a range of
// the samples with about equal edges: each counts its range's edges per
// parameter, and then writes them at the offsets that the ranges before
// it leave, so the lists are in sample order as on one goroutine.
func transposeOn(off []int64, adj []uint32, m, workers int) ([]int64, []uint32) {
	n := len(off) - 1
	coff := make([]int64, m+1)
	cadj := make([]uint32, len(adj))
	if workers <= 1 || n < 2 || int64(len(adj)) > math.MaxUint32 {
		for _, v := range adj {
			coff[v+1]++
		}
		for v := 0; v < m; v++ {
			coff[v+1] += coff[v]
		}
		next := make([]int64, m)
		copy(next, coff[:m])
		for u := 0; u < n; u++ {
			for _, v := range adj[off[u]:off[u+1]] {
				cadj[next[v]] = uint32(u)
				next[v]++
			}
		}
		return coff, cadj
	}
	// Sample ranges [cut[w], cut[w+1]) of about equal edges.
	cut := make([]int, workers+1)
	cut[workers] = n
	for w := 1; w < workers; w++ {
		target := int64(w) * int64(len(adj)) / int64(workers)
		cut[w] = max(cut[w-1], sort.Search(n, func(u int) bool { return off[u] >= target }))
	}
	// Edge positions fit 32 bits: transposeWorkers keeps larger graphs
	// on one goroutine.
	next := make([][]uint32, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := make([]uint32, m)
			for _, v := range adj[off[cut[w]]:off[cut[w+1]]] {
				c[v]++
			}
			next[w] = c
		}()
	}
	wg.Wait()
	var pos int64
	for v := 0; v < m; v++ {
		coff[v] = pos
		for w := range workers {
			c := int64(next[w][v])
			next[w][v] = uint32(pos)
			pos += c
		}
	}
	coff[m] = pos
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			nx := next[w]
			for u := cut[w]; u < cut[w+1]; u++ {
				for _, v := range adj[off[u]:off[u+1]] {
					cadj[nx[v]] = uint32(u)
					nx[v]++
				}
			}
		}()
	}
	wg.Wait()
	return coff, cadj
}

// FromAdjacency builds a graph from sample adjacency lists over dense
// parameter ids 0..m-1, which are also the parameter ids of the graph; all
// m parameters exist even if unused. It is meant for tests, examples and
// small programs. Rows need not be sorted; a repeated parameter within a
// row is an error.
func FromAdjacency(m int, rows [][]uint32) (*Graph, error) {
	off := make([]int64, 1, len(rows)+1)
	var adj []uint32
	for u, row := range rows {
		start := len(adj)
		adj = append(adj, row...)
		r := adj[start:]
		slices.Sort(r)
		for i, v := range r {
			if int(v) >= m {
				return nil, fmt.Errorf("graph: sample %d: parameter %d out of range [0,%d)", u, v, m)
			}
			if i > 0 && r[i-1] == v {
				return nil, fmt.Errorf("graph: sample %d: %w", u, &DuplicateError{ID: uint64(v)})
			}
		}
		off = append(off, int64(len(adj)))
	}
	if adj == nil {
		adj = []uint32{}
	}
	return fromCSR(off, adj, m, nil, Meta{Format: "adjacency", Source: "adjacency lists"}), nil
}
