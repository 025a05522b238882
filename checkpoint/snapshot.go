package checkpoint

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
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
//
// A delta (an incremental checkpoint's server file: the slots written
// since the checkpoint of round base, see Snapshot.Delta) is the same
// with "COLODELT" and the base round (uint64) after the width:
//
//	"COLODELT" (8 bytes), format (uint32), server rank (uint32),
//	width (uint32), base (uint64), keys n, lengths l and values v
//	(uint64 each), then the arrays.

// snapMagic opens a server snapshot file, deltaMagic a delta.
const (
	snapMagic  = "COLOSNAP"
	deltaMagic = "COLODELT"
)

// snapHeader is the size of a snapshot file's header, deltaHeader a
// delta's.
const (
	snapHeader  = 8 + 3*4 + 3*8
	deltaHeader = snapHeader + 8
)

// Snapshot is a server's file of a checkpoint.
type Snapshot struct {
	// Server is the server's rank, Width its store's values per key (0:
	// per-key lengths).
	Server, Width int
	// Batch is the snapshot of the whole store (worker.Worker.Save), or
	// with Delta of the slots written since the checkpoint of round Base
	// (worker.Worker.SaveSince): restored after the snapshot of that
	// checkpoint, it gives this one's (ApplyDelta).
	Batch kv.Batch
	Delta bool
	Base  int
}

// SnapshotName returns the file name of server rank s's snapshot.
func SnapshotName(s int) string { return fmt.Sprintf("server-%03d.snap", s) }

// DeltaName returns the file name of server rank s's delta.
func DeltaName(s int) string { return fmt.Sprintf("server-%03d.delta", s) }

// Name returns the file name of s: SnapshotName or DeltaName.
func (s Snapshot) Name() string {
	if s.Delta {
		return DeltaName(s.Server)
	}
	return SnapshotName(s.Server)
}

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
	if s.Delta && (s.Base < 0 || s.Base >= round) {
		return File{}, fmt.Errorf("checkpoint: the delta of server %d of round %d builds on round %d: want an earlier round", s.Server, round, s.Base)
	}
	f, err := o.WriteFileFunc(dir, round, s.Name(), func(w io.Writer) error { return writeSnapshot(w, s) })
	if s.Delta {
		f.Base = s.Base
	}
	return f, err
}

// snapshotSize is the size of s's file.
func snapshotSize(s Snapshot) int {
	h := snapHeader
	if s.Delta {
		h = deltaHeader
	}
	return h + 8*len(s.Batch.Keys) + 4*len(s.Batch.Lens) + 4*len(s.Batch.Vals)
}

// writeSnapshot writes the file of s to w: the header, then the arrays,
// each as one write of its own memory on a little-endian machine, in
// chunks of a buffer on a big-endian one.
func writeSnapshot(w io.Writer, s Snapshot) error {
	b := s.Batch
	h := make([]byte, 0, deltaHeader)
	if s.Delta {
		h = append(h, deltaMagic...)
	} else {
		h = append(h, snapMagic...)
	}
	h = binary.LittleEndian.AppendUint32(h, Format)
	h = binary.LittleEndian.AppendUint32(h, uint32(s.Server))
	h = binary.LittleEndian.AppendUint32(h, uint32(s.Width))
	if s.Delta {
		h = binary.LittleEndian.AppendUint64(h, uint64(s.Base))
	}
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

// DecodeSnapshot reads a server's file: a snapshot or a delta (Delta
// set). It checks the header's counts against the file's size before it
// allocates anything, and the lengths against the values, so any input
// gives a snapshot or an error; errors say what is wrong, the caller
// names the file.
func DecodeSnapshot(data []byte) (Snapshot, error) {
	var s Snapshot
	if len(data) < snapHeader {
		return s, fmt.Errorf("%d bytes, shorter than the %d-byte header: the file is truncated", len(data), snapHeader)
	}
	head := snapHeader
	switch string(data[:8]) {
	case snapMagic:
	case deltaMagic:
		if len(data) < deltaHeader {
			return s, fmt.Errorf("%d bytes, shorter than the %d-byte header of a delta: the file is truncated", len(data), deltaHeader)
		}
		head, s.Delta = deltaHeader, true
	default:
		return s, errors.New("not a server snapshot: it does not start with " + snapMagic + " or " + deltaMagic)
	}
	le := binary.LittleEndian
	if f := le.Uint32(data[8:]); f != Format {
		return s, fmt.Errorf("format %d, this program reads format %d", f, Format)
	}
	if s.Delta {
		base := le.Uint64(data[20:])
		if base > math.MaxInt32 {
			return s, fmt.Errorf("a delta on round %d: out of range", base)
		}
		s.Base = int(base)
	}
	server, width := le.Uint32(data[12:]), le.Uint32(data[16:])
	n, l, v := le.Uint64(data[head-24:]), le.Uint64(data[head-16:]), le.Uint64(data[head-8:])
	if server > math.MaxInt32 || width > math.MaxInt32 {
		return s, fmt.Errorf("server %d of width %d: out of range", server, width)
	}
	rest := uint64(len(data) - head)
	if n > rest/8 || l > rest/4 || v > rest/4 || 8*n+4*l+4*v != rest {
		return s, fmt.Errorf("%d keys, %d lengths and %d values need %s bytes after the header, the file has %d: the file is truncated or altered", n, l, v, need(n, l, v), rest)
	}
	if width > 0 && l != 0 || width == 0 && l != n {
		return s, fmt.Errorf("%d lengths for %d keys of width %d", l, n, width)
	}
	s.Server, s.Width = int(server), int(width)
	b := kv.Batch{Keys: make([]uint64, n), Vals: make([]float32, v)}
	o := head
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

// ApplyDelta returns the snapshot of the store whose snapshot was base
// and which then changed by d, a delta of the same server and width: the
// keys of d that base has take d's lengths, values and states; the
// others are appended, in d's order. The store's keys keep their slots,
// and the slots created since base come after base's, in the order they
// were created, which is d's (worker.Worker.SaveSince), so that the
// result is, key for key and in the same order, the snapshot a full
// checkpoint of d's round would hold. O(size of base and d); base is
// not modified.
func ApplyDelta(base, d Snapshot) (Snapshot, error) {
	switch {
	case base.Delta:
		return Snapshot{}, errors.New("the base is a delta, not a snapshot")
	case !d.Delta:
		return Snapshot{}, errors.New("not a delta")
	case base.Server != d.Server || base.Width != d.Width:
		return Snapshot{}, fmt.Errorf("a delta of server %d of width %d on a snapshot of server %d of width %d", d.Server, d.Width, base.Server, base.Width)
	}
	bo, bper, ba, err := rows(base)
	if err != nil {
		return Snapshot{}, fmt.Errorf("the base: %w", err)
	}
	do, dper, da, err := rows(d)
	if err != nil {
		return Snapshot{}, fmt.Errorf("the delta: %w", err)
	}
	arrays := da
	if bper > 0 {
		arrays = ba
	}
	if bper > 0 && dper > 0 && ba != da {
		return Snapshot{}, fmt.Errorf("the delta has %d arrays of values and states, the base %d", da, ba)
	}
	at := make(map[uint64]int, len(base.Batch.Keys))
	for i, k := range base.Batch.Keys {
		at[k] = i
	}
	length := func(s Snapshot, i int) int {
		if s.Width > 0 {
			return s.Width
		}
		return int(s.Batch.Lens[i])
	}
	// The result, key by key: its length and where its rows are (in the
	// base or the delta).
	type src struct {
		delta bool
		i     int
	}
	keys := slices.Clone(base.Batch.Keys)
	srcs := make([]src, len(keys))
	for i := range srcs {
		srcs[i] = src{false, i}
	}
	for i, k := range d.Batch.Keys {
		j, ok := at[k]
		if !ok {
			at[k] = len(keys)
			keys = append(keys, k)
			srcs = append(srcs, src{true, i})
			continue
		}
		if srcs[j].delta {
			return Snapshot{}, fmt.Errorf("key %d is in the delta twice", k)
		}
		srcs[j] = src{true, i}
	}
	out := Snapshot{Server: base.Server, Width: base.Width, Batch: kv.Batch{Keys: keys}}
	per := 0
	if base.Width == 0 {
		out.Batch.Lens = make([]int32, len(keys))
		for i, s := range srcs {
			if s.delta {
				out.Batch.Lens[i] = d.Batch.Lens[s.i]
			} else {
				out.Batch.Lens[i] = base.Batch.Lens[s.i]
			}
			per += int(out.Batch.Lens[i])
		}
	} else {
		per = len(keys) * base.Width
	}
	out.Batch.Vals = make([]float32, 0, per*arrays)
	for a := range arrays {
		for _, s := range srcs {
			if s.delta {
				n := length(d, s.i)
				out.Batch.Vals = append(out.Batch.Vals, d.Batch.Vals[a*dper+do[s.i]:a*dper+do[s.i]+n]...)
			} else {
				n := length(base, s.i)
				out.Batch.Vals = append(out.Batch.Vals, base.Batch.Vals[a*bper+bo[s.i]:a*bper+bo[s.i]+n]...)
			}
		}
	}
	return out, nil
}

// rows returns where each key's values are in each array of snapshot s,
// the values of an array and the number of arrays (0 when the keys have
// no values).
func rows(s Snapshot) (off []int, per, arrays int, err error) {
	b := s.Batch
	off = make([]int, len(b.Keys))
	for i := range b.Keys {
		off[i] = per
		if s.Width > 0 {
			per += s.Width
		} else if i < len(b.Lens) {
			per += int(b.Lens[i])
		}
	}
	if s.Width == 0 && len(b.Lens) != len(b.Keys) {
		return nil, 0, 0, fmt.Errorf("%d lengths for %d keys", len(b.Lens), len(b.Keys))
	}
	if per == 0 {
		if len(b.Vals) != 0 {
			return nil, 0, 0, fmt.Errorf("%d values for keys without values", len(b.Vals))
		}
		return off, 0, 0, nil
	}
	if len(b.Vals)%per != 0 || len(b.Vals) == 0 {
		return nil, 0, 0, fmt.Errorf("%d values are not whole arrays of %d", len(b.Vals), per)
	}
	return off, per, len(b.Vals) / per, nil
}
