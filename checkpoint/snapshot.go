package checkpoint

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"unsafe"

	"colo/kv"
)

// A server's file of a checkpoint holds its store's snapshot (package
// server, snapshot.go) in little-endian binary:
//
//	"COLOSNAP" (8 bytes), format (uint32), server rank (uint32),
//	width (uint32), keys n, lengths l and values v (uint64 each),
//	then n keys (uint64), l lengths (int32) and v values (float32).
//
// l is 0 at a uniform width and n at width 0.

// snapMagic opens a server snapshot file.
const snapMagic = "COLOSNAP"

// snapHeader is the size of a snapshot file's header.
const snapHeader = 8 + 3*4 + 3*8

// Snapshot is a server's file of a checkpoint.
type Snapshot struct {
	// Server is the server's rank, Width its store's values per key (0:
	// per-key lengths).
	Server, Width int
	// Batch is the snapshot of the whole store (worker.Worker.Save).
	Batch kv.Batch
}

// SnapshotName returns the file name of server rank s's snapshot.
func SnapshotName(s int) string { return fmt.Sprintf("server-%03d.snap", s) }

// EncodeSnapshot returns the file of s.
func EncodeSnapshot(s Snapshot) []byte {
	var buf bytes.Buffer
	buf.Grow(snapshotSize(s))
	writeSnapshot(&buf, s) // a bytes.Buffer does not fail
	return buf.Bytes()
}

// WriteSnapshot writes s as server s.Server's file of the checkpoint of
// round in dir (the bytes of EncodeSnapshot), atomically, as WriteFile
// does, without making the file in memory first: on a little-endian
// machine the keys, lengths and values go to the file straight from the
// batch's arrays, so that a checkpoint costs one copy of the snapshot
// (into the kernel) and no allocation of its size.
func WriteSnapshot(dir string, round int, s Snapshot) (File, error) {
	return Options{}.WriteSnapshot(dir, round, s)
}

// WriteSnapshot is WriteSnapshot with options o.
func (o Options) WriteSnapshot(dir string, round int, s Snapshot) (File, error) {
	return o.WriteFileFunc(dir, round, SnapshotName(s.Server), func(w io.Writer) error { return writeSnapshot(w, s) })
}

// snapshotSize is the size of s's file.
func snapshotSize(s Snapshot) int {
	return snapHeader + 8*len(s.Batch.Keys) + 4*len(s.Batch.Lens) + 4*len(s.Batch.Vals)
}

// writeSnapshot writes the file of s to w: the header, then the arrays,
// each as one write of its own memory on a little-endian machine, in
// chunks of a buffer on a big-endian one.
func writeSnapshot(w io.Writer, s Snapshot) error {
	b := s.Batch
	h := make([]byte, 0, snapHeader)
	h = append(h, snapMagic...)
	h = binary.LittleEndian.AppendUint32(h, Format)
	h = binary.LittleEndian.AppendUint32(h, uint32(s.Server))
	h = binary.LittleEndian.AppendUint32(h, uint32(s.Width))
	h = binary.LittleEndian.AppendUint64(h, uint64(len(b.Keys)))
	h = binary.LittleEndian.AppendUint64(h, uint64(len(b.Lens)))
	h = binary.LittleEndian.AppendUint64(h, uint64(len(b.Vals)))
	if _, err := w.Write(h); err != nil {
		return err
	}
	if !littleEndian() {
		return writeArraysPortable(w, b)
	}
	for _, a := range [][]byte{asBytes(b.Keys), asBytes(b.Lens), asBytes(b.Vals)} {
		if len(a) == 0 {
			continue
		}
		if _, err := w.Write(a); err != nil {
			return err
		}
	}
	return nil
}

// littleEndian reports whether the machine stores numbers little-endian,
// as the file does, so that the arrays' memory is the file's bytes.
func littleEndian() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 1
}

// asBytes returns the memory of a, without a copy.
func asBytes[T uint64 | int32 | float32](a []T) []byte {
	if len(a) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(a))), len(a)*int(unsafe.Sizeof(a[0])))
}

// writeArraysPortable writes b's keys, lengths and values in little-endian
// order through a 64 KiB buffer, on any machine.
func writeArraysPortable(w io.Writer, b kv.Batch) error {
	const size = 64 << 10
	buf := make([]byte, 0, size)
	flush := func(room int) error {
		if len(buf)+room <= size {
			return nil
		}
		_, err := w.Write(buf)
		buf = buf[:0]
		return err
	}
	for _, k := range b.Keys {
		if err := flush(8); err != nil {
			return err
		}
		buf = binary.LittleEndian.AppendUint64(buf, k)
	}
	for _, l := range b.Lens {
		if err := flush(4); err != nil {
			return err
		}
		buf = binary.LittleEndian.AppendUint32(buf, uint32(l))
	}
	for _, v := range b.Vals {
		if err := flush(4); err != nil {
			return err
		}
		buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(v))
	}
	if len(buf) == 0 {
		return nil
	}
	_, err := w.Write(buf)
	return err
}

// DecodeSnapshot reads a server's file. It checks the header's counts
// against the file's size before it allocates anything, and the
// lengths against the values, so any input gives a snapshot or an
// error; errors say what is wrong, the caller names the file.
func DecodeSnapshot(data []byte) (Snapshot, error) {
	var s Snapshot
	if len(data) < snapHeader {
		return s, fmt.Errorf("%d bytes, shorter than the %d-byte header: the file is truncated", len(data), snapHeader)
	}
	if string(data[:8]) != snapMagic {
		return s, errors.New("not a server snapshot: it does not start with " + snapMagic)
	}
	le := binary.LittleEndian
	if f := le.Uint32(data[8:]); f != Format {
		return s, fmt.Errorf("format %d, this program reads format %d", f, Format)
	}
	server, width := le.Uint32(data[12:]), le.Uint32(data[16:])
	n, l, v := le.Uint64(data[20:]), le.Uint64(data[28:]), le.Uint64(data[36:])
	if server > math.MaxInt32 || width > math.MaxInt32 {
		return s, fmt.Errorf("server %d of width %d: out of range", server, width)
	}
	rest := uint64(len(data) - snapHeader)
	if n > rest/8 || l > rest/4 || v > rest/4 || 8*n+4*l+4*v != rest {
		return s, fmt.Errorf("%d keys, %d lengths and %d values need %s bytes after the header, the file has %d: the file is truncated or altered", n, l, v, need(n, l, v), rest)
	}
	if width > 0 && l != 0 || width == 0 && l != n {
		return s, fmt.Errorf("%d lengths for %d keys of width %d", l, n, width)
	}
	s.Server, s.Width = int(server), int(width)
	b := kv.Batch{Keys: make([]uint64, n), Vals: make([]float32, v)}
	o := snapHeader
	for i := range b.Keys {
		b.Keys[i] = le.Uint64(data[o:])
		o += 8
	}
	per := n * uint64(width)
	if width == 0 {
		b.Lens = make([]int32, l)
		per = 0
		for i := range b.Lens {
			x := int32(le.Uint32(data[o:]))
			o += 4
			if x < 0 {
				return Snapshot{}, fmt.Errorf("key %d has length %d", b.Keys[i], x)
			}
			b.Lens[i] = x
			per += uint64(x)
		}
	}
	if per == 0 && v != 0 || per > 0 && v%per != 0 {
		return Snapshot{}, fmt.Errorf("%d values are not whole arrays of %d values of the keys", v, per)
	}
	for i := range b.Vals {
		b.Vals[i] = math.Float32frombits(le.Uint32(data[o:]))
		o += 4
	}
	s.Batch = b
	return s, nil
}

// need writes the bytes n keys, l lengths and v values take, without
// overflow.
func need(n, l, v uint64) string {
	const max = math.MaxUint64 / 16
	if n > max || l > max || v > max {
		return "more than 2^60"
	}
	return fmt.Sprint(8*n + 4*l + 4*v)
}
