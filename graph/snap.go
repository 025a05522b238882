package graph

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"math/bits"
	"runtime"
	"slices"

	"colo/internal/membudget"
)

// ReadSNAP reads a SNAP edge list from r, which must be decompressed
// already; name is used in errors and as Meta.Source.
//
// Each data line is `u v`: two non-negative integer node ids (any uint64)
// separated by tabs or spaces; lines starting with '#' or '%' are comments
// and blank lines are skipped. Every node that occurs, as source or target,
// becomes a sample whose id (SampleID) is the node id, and samples are in
// increasing order of node id; a node without out-edges is a sample without
// parameters. Edge (u, v) joins sample u to parameter v; when undirected is
// true the reverse edge (v, u) is added as well. Self-loops are kept unless
// opt.DropSelfLoops, which drops the edge but keeps the node. An edge listed
// twice (for instance both directions of a pair read as undirected) is kept
// once. The graph has no labels and no values; Meta.Format is "snap" or
// "snap-undirected".
//
// Lines with other than two fields, or ids that are not non-negative
// integers, are a *ParseError naming the file, line and field. Input without
// edges or nodes is an error too.
//
// The edges are collected as pairs and sorted by (source, target), with a
// radix sort when all ids fit in 32 bits: O(|E|) time and 16 bytes per edge
// besides the graph.
func ReadSNAP(r io.Reader, name string, undirected bool, opt LoadOptions) (*Graph, error) {
	return readSNAP(r, name, undirected, opt, runtime.GOMAXPROCS(0), chunkBytes, false)
}

// snapEdges are the edges of an edge list as read, in any order.
type snapEdges struct {
	keys  chunked[uint64] // u<<32 | v while every id fits in 32 bits
	pairs chunked[edge]   // every edge once some id does not
	wide  bool
	maxID uint64
	lone  []uint64 // nodes of dropped self-loops
}

// add adds edge (u, v).
func (s *snapEdges) add(u, v uint64) {
	s.maxID = max(s.maxID, u, v)
	if !s.wide && s.maxID > 1<<32-1 {
		s.widen()
	}
	if s.wide {
		s.pairs.add(edge{u, v})
	} else {
		s.keys.add(u<<32 | v)
	}
}

// widen moves the packed edges to pairs.
func (s *snapEdges) widen() {
	s.wide = true
	s.keys.each(func(k uint64) { s.pairs.add(edge{k >> 32, k & (1<<32 - 1)}) })
	s.keys = chunked[uint64]{}
}

// overBudget returns a *membudget.Error (without a line) when loading the
// edges of s would need more than the budget limit (resolved):
// snapBytesPerEdge for each edge and bytesPerSample for each node, of
// which there are at most twice the edges.
func (s *snapEdges) overBudget(name string, limit int64) error {
	edges := int64(s.keys.n + s.pairs.n)
	nodes := min(2*edges+int64(len(s.lone)), int64(s.maxID)+1)
	if s.maxID > 1<<62 {
		nodes = 2*edges + int64(len(s.lone))
	}
	perEdge := int64(snapBytesPerEdge)
	if s.wide {
		perEdge *= 2
	}
	return overBudget(name, 0, limit, edges, nodes, edges*perEdge+nodes*bytesPerSample)
}

// join adds the edges of o, which must not be used after.
func (s *snapEdges) join(o *snapEdges) {
	if o.wide && !s.wide {
		s.widen()
	}
	if s.wide && !o.wide {
		o.widen()
	}
	s.keys.join(&o.keys)
	s.pairs.join(&o.pairs)
	s.maxID = max(s.maxID, o.maxID)
	s.lone = append(s.lone, o.lone...)
}

// readSNAP is ReadSNAP parsing on workers goroutines, with chunks of about
// chunk bytes (parseChunks); sorted makes it sort the edges even when
// their ids are dense enough to be grouped by counting.
func readSNAP(r io.Reader, name string, undirected bool, opt LoadOptions, workers, chunk int, sorted bool) (*Graph, error) {
	opt = opt.resolved()
	all, err := parseChunks(r, name, opt.maxLine(), workers, chunk, nil, func(lr *lineReader, c textChunk) (*snapEdges, error) {
		e := &snapEdges{}
		if c.text != nil {
			// An edge a line at most, two read undirected: storage
			// for them all at once.
			e.keys.first = c.newlines + 1
			if undirected {
				e.keys.first *= 2
			}
		}
		err := scanSNAP(lr, name, undirected, opt, func(u, v uint64) error {
			e.add(u, v)
			if (e.keys.n+e.pairs.n)&1023 != 0 {
				return nil
			}
			err := e.overBudget(name, opt.Memory)
			if err != nil {
				err.(*membudget.Error).Line = lr.line
			}
			return err
		}, func(u uint64) { e.lone = append(e.lone, u) })
		e.keys.trim()
		e.pairs.trim()
		return e, err
	}, func(all, e *snapEdges) error {
		all.join(e)
		return all.overBudget(name, opt.Memory)
	})
	if err != nil {
		return nil, err
	}
	wide, maxID, lone := all.wide, all.maxID, all.lone
	for _, u := range lone {
		maxID = max(maxID, u)
	}
	if maxID > 1<<32-1 && !wide {
		// A dropped self-loop's node beyond 32 bits: the edges' packed
		// ids would not leave room for it.
		all.widen()
		wide = true
	}

	meta := Meta{Format: string(FormatSNAP), Source: name}
	if undirected {
		meta.Format = string(FormatSNAPUndirected)
	}
	if !wide && !sorted && denseIDs(maxID, all.keys.n) {
		g, err := rowsByCounts(meta, &all.keys, lone, maxID)
		switch {
		case err != nil:
			return nil, fmt.Errorf("%s: %w", name, err)
		case g == nil:
			return nil, emptyError(name)
		}
		return g, nil
	}
	b := NewBuilder(meta)
	b.SetDupPolicy(DupKeep)
	keys, pairs := all.keys.flat(), all.pairs.flat()
	if wide {
		slices.SortFunc(pairs, func(a, b edge) int {
			return cmp.Or(cmp.Compare(a.u, b.u), cmp.Compare(a.v, b.v))
		})
		nodes := make([]uint64, 0, 2*len(pairs)+len(lone))
		for _, e := range pairs {
			nodes = append(nodes, e.u, e.v)
		}
		nodes = sortedUnique(append(nodes, lone...))
		err = feedEdges(b, len(pairs), func(i int) edge { return pairs[i] }, nodes)
	} else {
		// Pack (u, v) into as few bits as the ids need, so that the
		// radix sort makes fewer passes.
		shift := uint(bits.Len64(maxID))
		mask := uint64(1)<<shift - 1
		for i, k := range keys {
			keys[i] = k>>32<<shift | k&(1<<32-1)
		}
		radixSort(keys, make([]uint64, len(keys)))
		nodes := nodeList(keys, shift, lone, maxID)
		err = feedEdges(b, len(keys), func(i int) edge { return edge{keys[i] >> shift, keys[i] & mask} }, nodes)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return buildSamples(b, name)
}

// scanSNAP reads the data lines of a SNAP edge list from lr and calls add
// for each edge to keep, in file order ((v, u) too when undirected), and
// lone for the node of a self-loop dropped by opt.DropSelfLoops. A
// malformed line is a *ParseError. ReadSNAP documents the format; the
// out-of-core partitioner reads the file through it too.
func scanSNAP(lr *lineReader, name string, undirected bool, opt LoadOptions, add func(u, v uint64) error, lone func(u uint64)) error {
	for {
		line, err := lr.next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		t := trimSpace(line)
		if skipLine(t) {
			continue
		}
		u, v, ok := snapPair(t)
		if !ok {
			var tok [3][]byte
			if n := splitSpace(t, tok[:]); n != 2 {
				return &ParseError{File: name, Line: lr.line, Msg: fmt.Sprintf(
					"%s: want two node ids \"u v\", got %d fields", quote(t), n)}
			}
			var id [2]uint64
			for f := range id {
				x, ok := parseUint(tok[f])
				if !ok {
					return &ParseError{File: name, Line: lr.line, Field: f + 1, Msg: fmt.Sprintf(
						"%s: want a non-negative integer node id", quote(tok[f]))}
				}
				id[f] = x
			}
			u, v = id[0], id[1]
		}
		switch {
		case u == v && opt.DropSelfLoops:
			lone(u)
		case u == v || !undirected:
			err = add(u, v)
		default:
			if err = add(u, v); err == nil {
				err = add(v, u)
			}
		}
		if err != nil {
			return err
		}
	}
}

// snapPair reads the common line of an edge list in one pass: t, trimmed,
// is two ids of at most 19 digits each (which cannot overflow) separated
// by spaces or tabs. Otherwise ok is false and the line is read token by
// token (splitSpace, parseUint), which says what is wrong with it; any
// line snapPair reads, that way gives the same two ids.
func snapPair(t []byte) (u, v uint64, ok bool) {
	i := 0
	for end := min(len(t), 19); i < end && t[i]-'0' <= 9; i++ {
		u = u*10 + uint64(t[i]-'0')
	}
	if i == 0 || i == len(t) || !isSpace(t[i]) {
		return 0, 0, false
	}
	for i < len(t) && isSpace(t[i]) {
		i++
	}
	j := i
	for end := min(len(t), i+19); i < end && t[i]-'0' <= 9; i++ {
		v = v*10 + uint64(t[i]-'0')
	}
	return u, v, i > j && i == len(t)
}

// edge is a directed edge of an edge list.
type edge struct{ u, v uint64 }

// feedEdges adds to b one sample per node of nodes, the sorted distinct ids
// of all nodes. The out-edges of a node are among the n edges, which at(i)
// returns sorted by (u, v); a repeated edge is added once.
func feedEdges(b *Builder, n int, at func(int) edge, nodes []uint64) error {
	var row []uint64
	i := 0
	for _, node := range nodes {
		row = row[:0]
		for ; i < n; i++ {
			e := at(i)
			if e.u != node {
				break
			}
			if k := len(row); k == 0 || row[k-1] != e.v {
				row = append(row, e.v)
			}
		}
		if err := b.AddSampleWithID(node, 0, row, nil); err != nil {
			return err
		}
	}
	if i != n {
		return fmt.Errorf("edge source %d is not a node", at(i).u)
	}
	return nil
}

// denseIDs reports whether edges whose ids are at most maxID are grouped
// by counting (feedByCounts): when a count per id, 4 bytes, takes no more
// than 4 bytes per edge, give or take 4 MB (so that the counting needs no
// more memory than sorting), and the edges fit 32-bit offsets.
func denseIDs(maxID uint64, edges int) bool {
	return maxID < uint64(edges)+1<<20 && uint64(edges) <= math.MaxUint32
}

// rowsByCounts returns the graph of edges u<<32 | v whose ids are all at
// most maxID, plus the nodes lone: one sample per node, in id order, as
// feedEdges gives a Builder, or nil when there is no node. It counts the
// edges of each source, places the targets of each in one array of
// 32-bit ids (a counting sort, no sort of the edges), sorts each node's
// targets and drops repeats in place, and builds the graph on that array
// (buildRows). It uses 4 bytes per id up to maxID and 4 per edge, where
// sorting the edges takes 16 per edge, and a Builder 8 more.
func rowsByCounts(meta Meta, keys *chunked[uint64], lone []uint64, maxID uint64) (*Graph, error) {
	off := make([]uint32, maxID+2)
	seen := make([]uint64, maxID/64+1)
	keys.each(func(k uint64) {
		u, v := k>>32, k&(1<<32-1)
		off[u+1]++
		seen[u/64] |= 1 << (u % 64)
		seen[v/64] |= 1 << (v % 64)
	})
	for _, u := range lone {
		seen[u/64] |= 1 << (u % 64)
	}
	nodes := 0
	for _, w := range seen {
		nodes += bits.OnesCount64(w)
	}
	if nodes == 0 {
		return nil, nil
	}
	for u := 1; u < len(off); u++ {
		off[u] += off[u-1]
	}
	adj := make([]uint32, keys.n)
	keys.each(func(k uint64) {
		u := k >> 32
		adj[off[u]] = uint32(k)
		off[u]++
	})
	*keys = chunked[uint64]{}
	// off[u] is now where u's targets end, and u+1's start. The rows,
	// without repeats, are moved down in place: no row ends after its
	// targets start.
	rowOff := make([]int64, 1, nodes+1)
	ids := make([]uint64, 0, nodes)
	end := 0
	for i, w := range seen {
		for w != 0 {
			u := uint64(i)*64 + uint64(bits.TrailingZeros64(w))
			w &= w - 1
			lo := uint32(0)
			if u > 0 {
				lo = off[u-1]
			}
			targets := adj[lo:off[u]]
			slices.Sort(targets)
			for j, v := range targets {
				if j == 0 || v != targets[j-1] {
					adj[end] = v
					end++
				}
			}
			rowOff = append(rowOff, int64(end))
			ids = append(ids, u)
		}
	}
	return buildRows(meta, rowOff, adj[:end], nil, nil, ids)
}

// nodeList returns the sorted distinct node ids of packed edges (u<<shift |
// v) and of lone, all at most maxID. A bitmap over 0..maxID marks them when
// it takes no more than 8 bytes per edge, otherwise they are sorted.
func nodeList(keys []uint64, shift uint, lone []uint64, maxID uint64) []uint64 {
	mask := uint64(1)<<shift - 1
	if maxID/8 > 8*uint64(len(keys))+1<<20 {
		nodes := make([]uint64, 0, 2*len(keys)+len(lone))
		for _, k := range keys {
			nodes = append(nodes, k>>shift, k&mask)
		}
		return sortedUnique(append(nodes, lone...))
	}
	seen := make([]uint64, maxID/64+1)
	mark := func(id uint64) { seen[id/64] |= 1 << (id % 64) }
	for _, k := range keys {
		mark(k >> shift)
		mark(k & mask)
	}
	for _, id := range lone {
		mark(id)
	}
	count := 0
	for _, w := range seen {
		count += bits.OnesCount64(w)
	}
	nodes := make([]uint64, 0, count)
	for i, w := range seen {
		for w != 0 {
			nodes = append(nodes, uint64(i)*64+uint64(bits.TrailingZeros64(w)))
			w &= w - 1
		}
	}
	return nodes
}

// sortedUnique sorts a and removes repeated values, in place.
func sortedUnique(a []uint64) []uint64 {
	slices.Sort(a)
	return slices.Compact(a)
}

// radixSort sorts a in increasing order with a least-significant-digit
// radix sort, using buf (len(buf) >= len(a)) as scratch. Digits are 8 bits
// wide, or 12 (4096 buckets, still cache-friendly) from 65,536 keys on; a
// digit that is the same in every key costs no pass, so keys of k
// significant bits take about k/8 or k/12 passes.
func radixSort(a, buf []uint64) {
	if len(a) < 2 {
		return
	}
	or, and := uint64(0), ^uint64(0)
	for _, x := range a {
		or |= x
		and &= x
	}
	varying := or ^ and
	width := uint(8)
	if len(a) >= 1<<16 {
		width = 12
	}
	mask := uint64(1)<<width - 1
	count := make([]int, 1<<width)
	src, dst := a, buf[:len(a)]
	for shift := uint(0); shift < 64; shift += width {
		if varying>>shift&mask == 0 {
			continue
		}
		clear(count)
		for _, x := range src {
			count[x>>shift&mask]++
		}
		sum := 0
		for k, c := range count {
			count[k] = sum
			sum += c
		}
		for _, x := range src {
			d := x >> shift & mask
			dst[count[d]] = x
			count[d]++
		}
		src, dst = dst, src
	}
	if &src[0] != &a[0] {
		copy(a, src)
	}
}
