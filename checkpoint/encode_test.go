package checkpoint

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"colo/kv"
)

// encodeReference is the obviously correct encoder: one append per
// number, in little-endian order, whatever the machine.
func encodeReference(s Snapshot) []byte {
	b := s.Batch
	out := make([]byte, 0, snapHeader+8*len(b.Keys)+4*len(b.Lens)+4*len(b.Vals))
	out = append(out, snapMagic...)
	out = binary.LittleEndian.AppendUint32(out, Format)
	out = binary.LittleEndian.AppendUint32(out, uint32(s.Server))
	out = binary.LittleEndian.AppendUint32(out, uint32(s.Width))
	out = binary.LittleEndian.AppendUint64(out, uint64(len(b.Keys)))
	out = binary.LittleEndian.AppendUint64(out, uint64(len(b.Lens)))
	out = binary.LittleEndian.AppendUint64(out, uint64(len(b.Vals)))
	for _, k := range b.Keys {
		out = binary.LittleEndian.AppendUint64(out, k)
	}
	for _, l := range b.Lens {
		out = binary.LittleEndian.AppendUint32(out, uint32(l))
	}
	for _, v := range b.Vals {
		out = binary.LittleEndian.AppendUint32(out, math.Float32bits(v))
	}
	return out
}

// randomSnapshot returns a snapshot of n keys, of a uniform width or of
// per-key lengths (width 0), with arrays arrays of values of random bits
// (NaNs and negative zeros included).
func randomSnapshot(r *rand.Rand, n int) Snapshot {
	s := Snapshot{Server: r.IntN(1000), Width: r.IntN(4)}
	b := kv.Batch{Keys: make([]uint64, n)}
	for i := range b.Keys {
		b.Keys[i] = r.Uint64()
	}
	per := n * s.Width
	if s.Width == 0 {
		b.Lens = make([]int32, n)
		per = 0
		for i := range b.Lens {
			b.Lens[i] = int32(r.IntN(5))
			per += int(b.Lens[i])
		}
	}
	b.Vals = make([]float32, per*(1+r.IntN(3)))
	for i := range b.Vals {
		b.Vals[i] = math.Float32frombits(r.Uint32())
	}
	s.Batch = b
	return s
}

// TestEncodeSnapshotMatchesReference checks, on random snapshots (empty
// ones, and ones past the portable writer's 64 KiB buffer), that
// EncodeSnapshot, the portable writer of big-endian machines and
// WriteSnapshot's file all give the reference encoder's bytes, and that
// WriteSnapshot's size and CRC-32C are the file's.
func TestEncodeSnapshotMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 34))
	dir := t.TempDir()
	for i, n := range []int{0, 1, 2, 3, 17, 1000, 9000, 20000} {
		s := randomSnapshot(r, n)
		want := encodeReference(s)
		if got := EncodeSnapshot(s); !bytes.Equal(got, want) {
			t.Fatalf("snapshot %d (%d keys, width %d): EncodeSnapshot differs from the reference", i, n, s.Width)
		}
		var portable bytes.Buffer
		if err := writeArraysPortable(&portable, s.Batch); err != nil {
			t.Fatal(err)
		}
		if got := portable.Bytes(); !bytes.Equal(got, want[snapHeader:]) {
			t.Fatalf("snapshot %d (%d keys, width %d): the portable writer differs from the reference", i, n, s.Width)
		}
		f, err := WriteSnapshot(dir, i, s)
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(RoundDir(dir, i), SnapshotName(s.Server)))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("snapshot %d (%d keys, width %d): WriteSnapshot's file differs from the reference", i, n, s.Width)
		}
		if f.Name != SnapshotName(s.Server) || f.Size != int64(len(want)) || f.CRC32C != Checksum(want) {
			t.Fatalf("snapshot %d: WriteSnapshot returned %+v, want %s of %d bytes, CRC-32C %#x", i, f, SnapshotName(s.Server), len(want), Checksum(want))
		}
		if back, err := DecodeSnapshot(got); err != nil || !bytes.Equal(EncodeSnapshot(back), want) {
			t.Fatalf("snapshot %d: decoding the file: %v", i, err)
		}
	}
}

// failAfter accepts n bytes, then fails.
type failAfter struct{ n int }

func (f *failAfter) Write(p []byte) (int, error) {
	if len(p) > f.n {
		w := f.n
		f.n = 0
		return w, errors.New("disk full")
	}
	f.n -= len(p)
	return len(p), nil
}

// TestWriteFileFuncFailureLeavesNoFile checks that a writer that fails
// leaves no file behind and that the portable writer passes the failure
// on.
func TestWriteFileFuncFailureLeavesNoFile(t *testing.T) {
	dir := t.TempDir()
	_, err := WriteFileFunc(dir, 5, "server-000.snap", func(w io.Writer) error {
		if _, err := w.Write([]byte("partial")); err != nil {
			return err
		}
		return errors.New("disk full")
	})
	if err == nil {
		t.Fatal("a failed write returned no error")
	}
	if _, err := os.Stat(filepath.Join(RoundDir(dir, 5), "server-000.snap")); !os.IsNotExist(err) {
		t.Fatalf("a failed write left a file: %v", err)
	}
	s := randomSnapshot(rand.New(rand.NewPCG(1, 2)), 30000)
	if err := writeArraysPortable(&failAfter{n: 100000}, s.Batch); err == nil {
		t.Fatal("the portable writer ignored a failed write")
	}
}

// BenchmarkWriteSnapshot measures writing a 2 MiB server snapshot (one
// server's share of the 20 Newsgroups lr checkpoint) to a file, against
// encoding it in memory first.
func BenchmarkWriteSnapshot(b *testing.B) {
	s := Snapshot{Width: 20, Batch: kv.Batch{Keys: make([]uint64, 12000), Vals: make([]float32, 2*20*12000)}}
	dir := b.TempDir()
	b.Run("stream", func(b *testing.B) {
		b.SetBytes(int64(snapshotSize(s)))
		for i := 0; b.Loop(); i++ {
			if _, err := WriteSnapshot(dir, i%2, s); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encode", func(b *testing.B) {
		b.SetBytes(int64(snapshotSize(s)))
		for i := 0; b.Loop(); i++ {
			if _, err := WriteFile(dir, i%2, SnapshotName(0), encodeReference(s)); err != nil {
				b.Fatal(err)
			}
		}
	})
}
