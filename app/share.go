package app

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"colo/graph"
	"colo/placement"
)

// The shares of a data cache (Opened.WriteCache): machine r's share of
// the training graph is shareFile(r), and sharesFile, written last,
// vouches for each by its size and CRC-32C.
//
// A share is the training graph with the samples of the other machines
// left without parameters: every sample keeps its id and label, every
// parameter its id, so that the sample ids of the placement, the
// parameters' keys, the classes and a test graph's keys are those of
// the whole graph, and the application builds on it the very part it
// builds on the whole graph (bit for bit the same batches). It is
// written in graph's binary form (graph.ReadBinary reads and validates
// it): about the share's edges plus 16 bytes a sample and 16 a
// parameter, so a replacement of one of K machines reads about 1/K of
// the training graph.
const sharesFile = "shares.json"

func shareFile(rank int) string { return fmt.Sprintf("share-%d%s", rank, graph.BinaryExt) }

// shareSums is the content of sharesFile.
type shareSums struct {
	K     int                `json:"k"`
	Files map[string]fileSum `json:"files"`
	// Stats are the whole training graph's statistics the application
	// records with its shares (Shares.Stats), each float64 as the 16 hex
	// digits of its bits (math.Float64bits), so that it comes back bit
	// for bit.
	Stats map[string]string `json:"stats,omitempty"`
}

// Stats are the statistics of the whole training graph that an
// application opened on a share uses instead of computing them on the
// share (mf's mean rating), as recorded in File (sharesFile).
type Stats struct {
	File   string
	Values map[string]float64
}

// Get returns the statistic called name; one that File does not record
// (a cache written by an older colo) is an error naming File and name.
func (s *Stats) Get(name string) (float64, error) {
	x, ok := s.Values[name]
	if !ok {
		return 0, fmt.Errorf("data cache (data.cache of the job): %s: no statistic %q of the whole training graph, which a share needs: written without it", s.File, name)
	}
	return x, nil
}

// encodeStats returns stats as sharesFile records them.
func encodeStats(stats map[string]float64) map[string]string {
	if len(stats) == 0 {
		return nil
	}
	out := make(map[string]string, len(stats))
	for k, x := range stats {
		out[k] = fmt.Sprintf("%016x", math.Float64bits(x))
	}
	return out
}

// decodeStats returns the statistics sharesFile path records; a value
// that is not 16 hex digits is an error naming path and the statistic.
func decodeStats(path string, raw map[string]string) (*Stats, error) {
	s := &Stats{File: path, Values: make(map[string]float64, len(raw))}
	for k, v := range raw {
		bits, err := strconv.ParseUint(v, 16, 64)
		if err != nil || len(v) != 16 {
			return nil, fmt.Errorf("%s: stats %q: %q, want the 16 hex digits of a float64's bits", path, k, v)
		}
		s.Values[k] = math.Float64frombits(bits)
	}
	return s, nil
}

// fileSum is one share file's size and CRC-32C (Castagnoli, 8 hex
// digits).
type fileSum struct {
	Size   int64  `json:"size"`
	CRC32C string `json:"crc32c"`
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// WriteCache writes the opened data to the new directory dir
// (Data.WriteCache) and, for an application that trains a machine on
// its share of the training graph alone (Spec.Shares: lr, mf), each
// machine's share under placement p, with the statistics of the whole
// graph the application needs (Shares.Stats), for a replacement to read
// instead of the whole graph (ReadShare). It returns false, writing
// nothing, for data that are not graphs.
func (o *Opened) WriteCache(dir string, p *placement.Placement) (bool, error) {
	ok, err := o.Data.WriteCache(dir)
	if !ok || err != nil || o.spec.Shares == nil || p == nil {
		return ok, err
	}
	var stats map[string]float64
	if f := o.spec.Shares.Stats; f != nil {
		stats = f(o.App)
	}
	if err := WriteShares(dir, o.Data.Graph, p, stats); err != nil {
		return false, err
	}
	return true, nil
}

// WriteShares writes each machine's share of g under placement p into
// the existing directory dir, then sharesFile vouching for them and
// recording stats, the statistics of the whole graph that a part built
// on a share needs (nil for none), bit for bit. The files are written
// one after another, in the time of g's edges once plus O(K(n+m)), with
// memory for one share's edges and m offsets.
func WriteShares(dir string, g *graph.Graph, p *placement.Placement, stats map[string]float64) error {
	if len(p.Data) != g.NumSamples() {
		return fmt.Errorf("data cache: the placement places %d samples, the graph has %d", len(p.Data), g.NumSamples())
	}
	sums := shareSums{K: p.K, Files: map[string]fileSum{}, Stats: encodeStats(stats)}
	for r := range p.K {
		name := shareFile(r)
		sum, err := writeShare(filepath.Join(dir, name), g, p.Data, int32(r))
		if err != nil {
			return fmt.Errorf("data cache: %w", err)
		}
		sums.Files[name] = sum
	}
	b, err := json.MarshalIndent(sums, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, sharesFile), append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("data cache: %w", err)
	}
	return nil
}

// writeShare writes machine r's share of g (the samples u with
// data[u] == r) to the new file path in graph's binary form and returns
// its size and checksum.
func writeShare(path string, g *graph.Graph, data []int32, r int32) (sum fileSum, err error) {
	n, m := g.NumSamples(), g.NumParams()
	mine := func(u uint32) bool { return data[u] == r }
	var e uint64
	for u := range n {
		if mine(uint32(u)) {
			e += uint64(g.SampleDegree(u))
		}
	}
	var flags uint64
	if g.HasValues() {
		flags |= 1
	}
	if g.Labels() != nil {
		flags |= 2
	}
	ids := false
	for u := range n {
		if g.SampleID(u) != uint64(u) {
			ids = true
			break
		}
	}
	if ids {
		flags |= 4
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return sum, err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			os.Remove(path)
		}
	}()
	h := crc32.New(castagnoli)
	cw := &countWriter{w: io.MultiWriter(f, h)}
	w := bufio.NewWriterSize(cw, 1<<16)
	var word [8]byte
	u64 := func(x uint64) { binary.LittleEndian.PutUint64(word[:], x); w.Write(word[:]) }
	u32 := func(x uint32) { binary.LittleEndian.PutUint32(word[:4], x); w.Write(word[:4]) }
	meta := g.Meta()
	w.WriteString("COLOGRB1")
	for _, x := range []uint64{uint64(n), uint64(m), e, flags, uint64(int64(meta.IndexBase))} {
		u64(x)
	}
	for _, s := range []string{meta.Format, meta.Source} {
		if len(s) > 1<<16 {
			s = s[:1<<16]
		}
		u64(uint64(len(s)))
		w.WriteString(s)
	}
	var off uint64
	u64(0)
	for u := range n {
		if mine(uint32(u)) {
			off += uint64(g.SampleDegree(u))
		}
		u64(off)
	}
	for u := range n {
		if mine(uint32(u)) {
			for _, v := range g.Params(u) {
				u32(v)
			}
		}
	}
	// The parameter side: the share's edges transposed, in O(e + m)
	// (sample ids come in increasing order, as the form wants).
	poff := make([]int64, m+1)
	for u := range n {
		if mine(uint32(u)) {
			for _, v := range g.Params(u) {
				poff[v+1]++
			}
		}
	}
	for v := range m {
		poff[v+1] += poff[v]
	}
	padj, next := make([]uint32, e), slices.Clone(poff[:m])
	for u := range n {
		if mine(uint32(u)) {
			for _, v := range g.Params(u) {
				padj[next[v]] = uint32(u)
				next[v]++
			}
		}
	}
	for _, x := range poff {
		u64(uint64(x))
	}
	for _, u := range padj {
		u32(u)
	}
	if g.HasValues() {
		for u := range n {
			if mine(uint32(u)) {
				for _, x := range g.Values(u) {
					u32(math.Float32bits(x))
				}
			}
		}
	}
	for _, l := range g.Labels() {
		u64(math.Float64bits(l))
	}
	for v := range m {
		u64(g.ParamID(v))
	}
	if ids {
		for u := range n {
			u64(g.SampleID(u))
		}
	}
	if err := w.Flush(); err != nil {
		return sum, fmt.Errorf("%s: %w", path, err)
	}
	return fileSum{Size: cw.n, CRC32C: fmt.Sprintf("%08x", h.Sum32())}, nil
}

// countWriter counts the bytes written through it.
type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(b []byte) (int, error) {
	k, err := c.w.Write(b)
	c.n += int64(k)
	return k, err
}

// ErrNoShares is ReadShare's error for a cache without shares (written
// for an application that trains on the whole graph, or by an older
// colo).
var ErrNoShares = errors.New("the data cache holds no shares")

// maxSharesFile bounds the size of sharesFile: about 80 bytes a machine
// and 40 a statistic, so far more than any cache's.
const maxSharesFile = 16 << 20

// readSums returns the bytes of sharesFile at path, a regular file of at
// most maxSharesFile bytes (nothing larger is allocated, and a FIFO is
// not opened).
func readSums(path string) ([]byte, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file (%v)", path, st.Mode().Type())
	}
	if st.Size() > maxSharesFile {
		return nil, fmt.Errorf("%s: %d bytes, more than the %d of any shares file", path, st.Size(), maxSharesFile)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxSharesFile+1))
	if err == nil && len(b) > maxSharesFile {
		err = fmt.Errorf("%s: more than the %d bytes of any shares file", path, maxSharesFile)
	}
	return b, err
}

// ReadShare reads machine rank's share of the training graph from the
// data cache dir (Opened.WriteCache), never the whole training graph,
// with the whole graph's statistics recorded with the shares (in
// Data.Stats, set even when none is recorded), and with test the test
// graph when the cache has one. A share file missing, of another size
// or checksum than sharesFile records, or not a graph is an error
// naming it, and so is a statistic that is not a float64's bits; a
// cache without sharesFile is ErrNoShares.
func ReadShare(dir string, rank int, test bool) (*Data, error) {
	fail := func(err error) (*Data, error) {
		return nil, fmt.Errorf("data cache (data.cache of the job): %w", err)
	}
	sumPath := filepath.Join(dir, sharesFile)
	b, err := readSums(sumPath)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("data cache %s: %w", dir, ErrNoShares)
	}
	if err != nil {
		return fail(err)
	}
	var sums shareSums
	if err := json.Unmarshal(b, &sums); err != nil {
		return fail(fmt.Errorf("%s: %w", sumPath, err))
	}
	if rank < 0 || rank >= sums.K {
		return fail(fmt.Errorf("%s: shares of %d machines, none for machine %d", sumPath, sums.K, rank))
	}
	name := shareFile(rank)
	want, ok := sums.Files[name]
	if !ok {
		return fail(fmt.Errorf("%s: no %s", sumPath, name))
	}
	path := filepath.Join(dir, name)
	f, err := os.Open(path)
	if err != nil {
		return fail(fmt.Errorf("machine %d's share: %w", rank, err))
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fail(err)
	}
	if st.Size() != want.Size {
		return fail(fmt.Errorf("%s: %d bytes, but %s records %d", path, st.Size(), sumPath, want.Size))
	}
	h := crc32.New(castagnoli)
	g, err := graph.ReadBinary(io.TeeReader(f, h), st.Size(), path)
	if err != nil {
		return fail(err)
	}
	if got := fmt.Sprintf("%08x", h.Sum32()); got != want.CRC32C {
		return fail(fmt.Errorf("%s: CRC-32C %s, but %s records %s: changed since it was written", path, got, sumPath, want.CRC32C))
	}
	stats, err := decodeStats(sumPath, sums.Stats)
	if err != nil {
		return fail(err)
	}
	d := &Data{Graph: g, Stats: stats}
	if !test {
		return d, nil
	}
	d.TestGraph, err = graph.ReadBinaryFile(filepath.Join(dir, cacheTest))
	if errors.Is(err, fs.ErrNotExist) {
		d.TestGraph, err = nil, nil
	}
	if err != nil {
		return fail(err)
	}
	return d, nil
}

// hasTest says whether the data cache dir holds a test graph.
func hasTest(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, cacheTest))
	return err == nil
}
