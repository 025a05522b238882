package graph

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"unsafe"

	"colo/internal/textio"
)

// The binary form of a graph (WriteBinary, ReadBinary) holds its arrays
// as they are in memory, so that a process reads a graph another one
// loaded without parsing its text again: the members of a cluster of
// processes, and a replacement started while the others train, read the
// graph their parent wrote once.
//
// Layout, little-endian:
//
//	magic      8 bytes "COLOGRB1"
//	n, m, e    uint64: samples, parameters, edges
//	flags      uint64: 1 values, 2 labels, 4 sample ids
//	indexBase  int64
//	format     uint64 length, then the bytes (Meta.Format)
//	source     uint64 length, then the bytes (Meta.Source)
//	sampleOff  (n+1) int64,  sampleAdj e uint32
//	paramOff   (m+1) int64,  paramAdj  e uint32
//	values     e float32     (flag 1)
//	labels     n float64     (flag 2)
//	paramIDs   m uint64
//	sampleIDs  n uint64      (flag 4)
//
// The size the counts imply must be the file's size exactly, checked
// before anything is allocated, and the graph read is validated
// (Graph.Validate), so that a damaged or foreign file is an error naming
// it, never a crash or an allocation of what it claims.
const binaryMagic = "COLOGRB1"

const (
	binValues    = 1
	binLabels    = 2
	binSampleIDs = 4
	binFlags     = binValues | binLabels | binSampleIDs
	// maxMetaString bounds the format and source names.
	maxMetaString = 1 << 16
)

// BinaryExt is the extension of a graph's binary form.
const BinaryExt = ".graph"

// WriteBinary writes g in its binary form (see ReadBinary).
func (g *Graph) WriteBinary(w io.Writer) error {
	var flags uint64
	if g.values != nil {
		flags |= binValues
	}
	if g.labels != nil {
		flags |= binLabels
	}
	if g.sampleIDs != nil {
		flags |= binSampleIDs
	}
	head := binary.LittleEndian.AppendUint64([]byte(binaryMagic), uint64(g.NumSamples()))
	head = binary.LittleEndian.AppendUint64(head, uint64(g.NumParams()))
	head = binary.LittleEndian.AppendUint64(head, uint64(g.NumEdges()))
	head = binary.LittleEndian.AppendUint64(head, flags)
	head = binary.LittleEndian.AppendUint64(head, uint64(int64(g.meta.IndexBase)))
	for _, s := range []string{g.meta.Format, g.meta.Source} {
		if len(s) > maxMetaString {
			s = s[:maxMetaString]
		}
		head = binary.LittleEndian.AppendUint64(head, uint64(len(s)))
		head = append(head, s...)
	}
	if _, err := w.Write(head); err != nil {
		return fmt.Errorf("write graph: %w", err)
	}
	for _, a := range []struct {
		b    []byte
		size int
	}{{raw(g.sampleOff), 8}, {raw(g.sampleAdj), 4}, {raw(g.paramOff), 8}, {raw(g.paramAdj), 4},
		{raw(g.values), 4}, {raw(g.labels), 8}, {raw(g.paramIDs), 8}, {raw(g.sampleIDs), 8}} {
		if err := writeLE(w, a.b, a.size); err != nil {
			return fmt.Errorf("write graph: %w", err)
		}
	}
	return nil
}

// WriteBinaryFile writes g's binary form to a new file at path (see
// WriteBinary), removing it on failure.
func (g *Graph) WriteBinaryFile(path string) (err error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			os.Remove(path)
		}
	}()
	if err := g.WriteBinary(f); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// ReadBinaryFile reads the graph at path in its binary form (ReadBinary).
func ReadBinaryFile(path string) (*Graph, error) {
	f, err := textio.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	return ReadBinary(f, st.Size(), path)
}

// ReadBinary reads a graph in its binary form (WriteBinary) from r, which
// holds size bytes; errors name the file as name. The counts of the
// header must account for the size exactly before anything is
// allocated, and the graph read must be consistent (Graph.Validate).
func ReadBinary(r io.Reader, size int64, name string) (*Graph, error) {
	fail := func(format string, args ...any) error {
		return fmt.Errorf("%s: not a graph in colo's binary form: %s", name, fmt.Sprintf(format, args...))
	}
	var head [len(binaryMagic) + 5*8]byte
	if _, err := io.ReadFull(r, head[:]); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, fail("%d bytes, shorter than the header", size)
		}
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if string(head[:len(binaryMagic)]) != binaryMagic {
		return nil, fail("it starts %q, not %q", head[:len(binaryMagic)], binaryMagic)
	}
	word := func(i int) uint64 { return binary.LittleEndian.Uint64(head[len(binaryMagic)+8*i:]) }
	n, m, e, flags, base := word(0), word(1), word(2), word(3), int64(word(4))
	switch {
	case n > math.MaxUint32 || m > math.MaxUint32:
		return nil, fail("%d samples and %d parameters: more than 32-bit ids", n, m)
	case e > 1<<48:
		return nil, fail("%d edges", e)
	case flags&^binFlags != 0:
		return nil, fail("unknown flags %#x", flags)
	case base != 0 && base != 1:
		return nil, fail("index base %d, want 0 or 1", base)
	}
	rest := size - int64(len(head))
	meta := Meta{IndexBase: int(base)}
	for _, s := range []*string{&meta.Format, &meta.Source} {
		var l [8]byte
		if _, err := io.ReadFull(r, l[:]); err != nil {
			return nil, fail("the header ends early: %v", err)
		}
		k := binary.LittleEndian.Uint64(l[:])
		if k > maxMetaString || int64(8+k) > rest {
			return nil, fail("a name of %d bytes", k)
		}
		b := make([]byte, k)
		if _, err := io.ReadFull(r, b); err != nil {
			return nil, fail("the header ends early: %v", err)
		}
		*s, rest = string(b), rest-int64(8+k)
	}
	// The arrays' size, every term below 2^52 so that the sum cannot
	// overflow.
	need := 8*(n+1) + 4*e + 8*(m+1) + 4*e + 8*m
	if flags&binValues != 0 {
		need += 4 * e
	}
	if flags&binLabels != 0 {
		need += 8 * n
	}
	if flags&binSampleIDs != 0 {
		need += 8 * n
	}
	if rest < 0 || need != uint64(rest) {
		return nil, fail("%d samples, %d parameters and %d edges need %d bytes after the header, the file has %d", n, m, e, need, rest)
	}
	g := &Graph{meta: meta,
		sampleOff: make([]int64, n+1), sampleAdj: make([]uint32, e),
		paramOff: make([]int64, m+1), paramAdj: make([]uint32, e), paramIDs: make([]uint64, m)}
	if flags&binValues != 0 {
		g.values = make([]float32, e)
	}
	if flags&binLabels != 0 {
		g.labels = make([]float64, n)
	}
	if flags&binSampleIDs != 0 {
		g.sampleIDs = make([]uint64, n)
	}
	for _, b := range []struct {
		b    []byte
		size int
	}{{raw(g.sampleOff), 8}, {raw(g.sampleAdj), 4}, {raw(g.paramOff), 8}, {raw(g.paramAdj), 4},
		{raw(g.values), 4}, {raw(g.labels), 8}, {raw(g.paramIDs), 8}, {raw(g.sampleIDs), 8}} {
		if _, err := io.ReadFull(r, b.b); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		fromLE(b.b, b.size)
	}
	if err := g.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return g, nil
}

// raw returns the bytes of s in memory.
func raw[T int64 | uint32 | uint64 | float32 | float64](s []T) []byte {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), len(s)*int(unsafe.Sizeof(s[0])))
}

// bigEndian is set on machines whose memory is big-endian.
var bigEndian = binary.NativeEndian.Uint16([]byte{0, 1}) == 1

// writeLE writes the bytes of a slice (raw) of words of size bytes
// little-endian.
func writeLE(w io.Writer, b []byte, size int) error {
	if !bigEndian {
		_, err := w.Write(b)
		return err
	}
	buf := make([]byte, 0, 1<<16)
	for len(b) > 0 {
		k := min(len(b), cap(buf))
		buf = append(buf[:0], b[:k]...)
		fromLE(buf, size) // the swap is its own inverse
		if _, err := w.Write(buf); err != nil {
			return err
		}
		b = b[k:]
	}
	return nil
}

// fromLE puts the little-endian words of b, of size bytes each, in the
// machine's order.
func fromLE(b []byte, size int) {
	if !bigEndian {
		return
	}
	for i := 0; i+size <= len(b); i += size {
		switch size {
		case 4:
			binary.BigEndian.PutUint32(b[i:], binary.LittleEndian.Uint32(b[i:]))
		case 8:
			binary.BigEndian.PutUint64(b[i:], binary.LittleEndian.Uint64(b[i:]))
		}
	}
}
