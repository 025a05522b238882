package checkpoint

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"colo/internal/memcap"
	"colo/kv"
)

// writeCheckpoint writes a complete checkpoint of round with a server
// snapshot and a worker file, and returns the snapshot file's content.
func writeCheckpoint(t *testing.T, dir string, round int) []byte {
	t.Helper()
	snap := EncodeSnapshot(Snapshot{Server: 0, Width: 2, Batch: kv.Batch{Keys: []uint64{3, 4}, Vals: []float32{1, 2, 3, float32(round), 5, 6, 7, 8}}})
	var files []File
	for name, data := range map[string][]byte{SnapshotName(0): snap, "worker-000.json": []byte(fmt.Sprintf(`{"round":%d}`, round))} {
		f, err := WriteFile(dir, round, name, data)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	if err := Commit(dir, Manifest{Round: round, Job: "test", Files: files}); err != nil {
		t.Fatal(err)
	}
	return snap
}

// latestRound returns the round Latest picks and the refusals.
func latestRound(t *testing.T, dir string) (int, []error) {
	t.Helper()
	m, refused, err := Latest(dir)
	if err != nil {
		t.Fatal(err)
	}
	return m.Round, refused
}

// TestLatestRefusesDamage damages the newest checkpoint's last file (the
// server snapshot, "server-000.snap" sorts last) and its manifest in
// every way a crash or a bad disk can: truncated at every byte, every
// bit flipped, removed. Each time the newest is refused with an error
// naming the damaged file, and the one before is used.
func TestLatestRefusesDamage(t *testing.T) {
	dir := t.TempDir()
	writeCheckpoint(t, dir, 10)
	snap := writeCheckpoint(t, dir, 20)
	if r, refused := latestRound(t, dir); r != 20 || len(refused) > 0 {
		t.Fatalf("latest %d, refused %v; want 20", r, refused)
	}
	files := map[string][]byte{SnapshotName(0): snap}
	manifest, err := os.ReadFile(filepath.Join(RoundDir(dir, 20), ManifestName))
	if err != nil {
		t.Fatal(err)
	}
	files[ManifestName] = manifest
	for name, good := range files {
		path := filepath.Join(RoundDir(dir, 20), name)
		check := func(how string) {
			t.Helper()
			r, refused := latestRound(t, dir)
			if r != 10 || len(refused) != 1 || !strings.Contains(refused[0].Error(), path) {
				t.Fatalf("%s %s: latest round %d, refused %v; want 10 and an error naming the file", how, name, r, refused)
			}
		}
		for n := range len(good) {
			if err := os.WriteFile(path, good[:n], 0o644); err != nil {
				t.Fatal(err)
			}
			check("truncated at byte " + strconv.Itoa(n) + " of")
		}
		for bit := range 8 * len(good) {
			bad := bytes.Clone(good)
			bad[bit/8] ^= 1 << (bit % 8)
			if err := os.WriteFile(path, bad, 0o644); err != nil {
				t.Fatal(err)
			}
			check("bit flipped in")
		}
		if err := os.Remove(path); err != nil {
			t.Fatal(err)
		}
		check("removed")
		if err := os.WriteFile(path, good, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if r, _ := latestRound(t, dir); r != 20 {
		t.Fatalf("repaired: latest %d, want 20", r)
	}
}

// TestLatestNone checks the errors without any complete checkpoint.
func TestLatestNone(t *testing.T) {
	dir := t.TempDir()
	if _, _, err := Latest(dir); err == nil || !strings.Contains(err.Error(), "no checkpoint in "+dir) {
		t.Fatalf("empty directory: %v", err)
	}
	writeCheckpoint(t, dir, 5)
	os.Remove(filepath.Join(RoundDir(dir, 5), ManifestName))
	_, refused, err := Latest(dir)
	if err == nil || len(refused) != 1 || !strings.Contains(err.Error(), ManifestName+" is missing") {
		t.Fatalf("no manifest: %v, %v", refused, err)
	}
}

// TestPrune keeps the newest two complete checkpoints and removes the
// older ones and an incomplete one between them.
func TestPrune(t *testing.T) {
	dir := t.TempDir()
	for _, r := range []int{10, 20, 30, 40} {
		writeCheckpoint(t, dir, r)
	}
	os.Remove(filepath.Join(RoundDir(dir, 30), ManifestName)) // incomplete
	if err := Prune(dir, 2); err != nil {
		t.Fatal(err)
	}
	rounds, err := Rounds(dir)
	if err != nil {
		t.Fatal(err)
	}
	if want := []int{40, 20}; !reflect.DeepEqual(rounds, want) {
		t.Fatalf("after pruning: %v, want %v", rounds, want)
	}
}

// TestSnapshotFile round-trips snapshots of both layouts and refuses
// inconsistent headers.
func TestSnapshotFile(t *testing.T) {
	for _, s := range []Snapshot{
		{Server: 3, Width: 2, Batch: kv.Batch{Keys: []uint64{1, 9}, Vals: []float32{1, 2, 3, 4, 5, 6, 7, 8}}},
		{Server: 0, Width: 0, Batch: kv.Batch{Keys: []uint64{1, 2, 7}, Lens: []int32{1, 0, 2}, Vals: []float32{1, 2, 3, 4, 5, 6}}},
		{Server: 1, Width: 4, Batch: kv.Batch{Keys: []uint64{}, Vals: []float32{}}},
	} {
		got, err := DecodeSnapshot(EncodeSnapshot(s))
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, s) {
			t.Fatalf("round trip: got %+v, want %+v", got, s)
		}
	}
	bad := EncodeSnapshot(Snapshot{Width: 0, Batch: kv.Batch{Keys: []uint64{1}, Lens: []int32{2}, Vals: []float32{1, 2, 3}}})
	if _, err := DecodeSnapshot(bad); err == nil || !strings.Contains(err.Error(), "not whole arrays") {
		t.Fatalf("3 values for a key of length 2: %v", err)
	}
}

// FuzzDecodeSnapshot checks that any file decodes to a snapshot or a
// delta that encodes back to it, or to an error, never a panic.
func FuzzDecodeSnapshot(f *testing.F) {
	// A reader that allocated what its input claims would die of out
	// of memory under the cap: a failing input.
	memcap.Cap(f, 1<<30)
	f.Add(EncodeSnapshot(Snapshot{Server: 3, Width: 2, Batch: kv.Batch{Keys: []uint64{1, 9}, Vals: []float32{1, 2, 3, 4}}}))
	f.Add(EncodeSnapshot(Snapshot{Width: 0, Batch: kv.Batch{Keys: []uint64{1, 2}, Lens: []int32{1, 0}, Vals: []float32{1, 2}}}))
	f.Add([]byte(snapMagic))
	f.Add(EncodeSnapshot(Snapshot{Server: 1, Width: 2, Delta: true, Base: 30, Batch: kv.Batch{Keys: []uint64{4}, Vals: []float32{1, 2, 3, 4}}}))
	f.Add(EncodeSnapshot(Snapshot{Width: 0, Delta: true, Base: 7, Batch: kv.Batch{Keys: []uint64{1, 2}, Lens: []int32{0, 1}, Vals: []float32{1}}}))
	f.Add([]byte(deltaMagic))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := DecodeSnapshot(data)
		if err != nil {
			return
		}
		if again := EncodeSnapshot(s); !bytes.Equal(again, data) {
			t.Fatalf("decoded snapshot encodes to other bytes")
		}
	})
}

// FuzzParseManifest checks that any MANIFEST parses or is refused,
// never a panic, and that what parses lists valid, ordered names.
func FuzzParseManifest(f *testing.F) {
	// A reader that allocated what its input claims would die of out
	// of memory under the cap: a failing input.
	memcap.Cap(f, 1<<30)
	dir := f.TempDir()
	if err := Commit(dir, Manifest{Round: 7, Job: "j", Files: []File{{Name: "a", Size: 3, CRC32C: 9}, {Name: "b"}}}); err != nil {
		f.Fatal(err)
	}
	good, err := os.ReadFile(filepath.Join(RoundDir(dir, 7), ManifestName))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add([]byte("{}\ncrc32c 00000000\n"))
	chain := `{"format":1,"round":9,"job":"j","files":[{"name":"server-000.delta","size":3,"crc32c":1,"base":7}],"needs":[7,2]}`
	f.Add([]byte(fmt.Sprintf("%s\ncrc32c %08x\n", chain, Checksum([]byte(chain)))))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := ParseManifest(data)
		if err != nil {
			return
		}
		for i, file := range m.Files {
			if checkName(file.Name) != nil || file.Size < 0 || i > 0 && file.Name <= m.Files[i-1].Name {
				t.Fatalf("accepted file %+v", file)
			}
			if isDelta(file.Name) && (file.Base >= m.Round || !slices.Contains(m.Needs, file.Base)) {
				t.Fatalf("accepted delta %+v of round %d needing %v", file, m.Round, m.Needs)
			}
		}
	})
}

// TestSpareFilesOverwritten writes checkpoints of random sizes, larger
// and smaller than the files they overwrite, pruning after each as the
// training loop does: every file of the spare directory is reused (the
// same inode) and cut to its new size, every kept checkpoint reads back
// exactly what was written, and no temporary file is left.
func TestSpareFilesOverwritten(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(7, 8))
	written := map[int]map[string][]byte{}
	for round := 1; round <= 12; round++ {
		spare, _ := os.Stat(filepath.Join(dir, SpareDir, SnapshotName(0)))
		files, m := []File{}, map[string][]byte{}
		for _, name := range []string{SnapshotName(0), "worker-000.json"} {
			data := make([]byte, rng.IntN(50000))
			for i := range data {
				data[i] = byte(rng.Uint32())
			}
			f, err := WriteFile(dir, round, name, data)
			if err != nil {
				t.Fatal(err)
			}
			files, m[name] = append(files, f), data
		}
		written[round] = m
		if round > 3 && spare == nil {
			t.Fatalf("round %d: no spare file after pruning", round)
		}
		if spare != nil {
			now, err := os.Stat(filepath.Join(RoundDir(dir, round), SnapshotName(0)))
			if err != nil || !os.SameFile(spare, now) {
				t.Fatalf("round %d: the spare file was not reused (%v)", round, err)
			}
		}
		if err := Commit(dir, Manifest{Round: round, Job: "test", Files: files}); err != nil {
			t.Fatal(err)
		}
		if err := Prune(dir, 2); err != nil {
			t.Fatal(err)
		}
		rounds, err := Rounds(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rounds {
			m, err := Open(dir, r)
			if err != nil {
				t.Fatal(err)
			}
			for name, want := range written[r] {
				got, err := m.Read(name)
				if err != nil || !bytes.Equal(got, want) {
					t.Fatalf("round %d: %s reads back %d bytes (%v), want the %d written", r, name, len(got), err, len(want))
				}
			}
			ents, _ := os.ReadDir(m.Dir)
			for _, e := range ents {
				if strings.HasPrefix(e.Name(), ".") {
					t.Fatalf("round %d: temporary file %s left", r, e.Name())
				}
			}
		}
	}
	// A write that fails on a spare file leaves neither it nor a
	// temporary file in the round's directory.
	if _, err := os.Stat(filepath.Join(dir, SpareDir, SnapshotName(0))); err != nil {
		t.Fatal(err)
	}
	_, err := WriteFileFunc(dir, 13, SnapshotName(0), func(w io.Writer) error {
		w.Write([]byte("partial"))
		return errors.New("disk full")
	})
	if err == nil {
		t.Fatal("a failed write returned no error")
	}
	ents, _ := os.ReadDir(RoundDir(dir, 13))
	if len(ents) > 0 {
		t.Fatalf("a failed write left %v", ents[0].Name())
	}
}

// TestPruneKeepsDurable checks that pruning keeps the newest durable
// checkpoint beside the newest two, and that a volatile checkpoint made
// durable (Sync, then a durable MANIFEST) counts as one.
func TestPruneKeepsDurable(t *testing.T) {
	for _, c := range []struct {
		volatile []bool // rounds 10, 20, 30, 40
		want     []int
	}{
		{[]bool{false, true, true, true}, []int{40, 30, 10}},
		{[]bool{false, false, true, true}, []int{40, 30, 20}},
		{[]bool{false, false, false, true}, []int{40, 30}},
		{[]bool{true, true, true, true}, []int{40, 30}},
	} {
		dir := t.TempDir()
		for i, r := range []int{10, 20, 30, 40} {
			o := Options{Volatile: c.volatile[i]}
			f, err := o.WriteFile(dir, r, "worker-000.json", []byte("{}"))
			if err != nil {
				t.Fatal(err)
			}
			if err := o.Commit(dir, Manifest{Round: r, Job: "test", Files: []File{f}}); err != nil {
				t.Fatal(err)
			}
			if m, err := Open(dir, r); err != nil || m.Volatile != c.volatile[i] {
				t.Fatalf("round %d written volatile %v: %+v, %v", r, c.volatile[i], m, err)
			}
		}
		if err := Prune(dir, 2); err != nil {
			t.Fatal(err)
		}
		if rounds, err := Rounds(dir); err != nil || !reflect.DeepEqual(rounds, c.want) {
			t.Errorf("volatile %v: kept %v (%v), want %v", c.volatile, rounds, err, c.want)
		}
	}
	dir := t.TempDir()
	o := Options{Volatile: true}
	f, err := o.WriteFile(dir, 5, "worker-000.json", []byte("{}"))
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Commit(dir, Manifest{Round: 5, Job: "test", Files: []File{f}}); err != nil {
		t.Fatal(err)
	}
	if err := Sync(dir, 5, []string{"worker-000.json"}); err != nil {
		t.Fatal(err)
	}
	m, err := Open(dir, 5)
	if err != nil {
		t.Fatal(err)
	}
	if err := Commit(dir, *m); err != nil {
		t.Fatal(err)
	}
	if m, err := Open(dir, 5); err != nil || m.Volatile || m.Verify() != nil {
		t.Fatalf("made durable: %+v, %v", m, err)
	}
	if err := Sync(dir, 5, []string{"worker-001.json"}); err == nil || !strings.Contains(err.Error(), "worker-001.json") {
		t.Errorf("syncing a missing file: %v", err)
	}
}

// TestSpareNotRegular: a symbolic link or a FIFO found in the spare
// directory in place of a file is never written through or opened (the
// link's target keeps its bytes, the write does not wait for a reader
// of the FIFO), for a file and for a delta written by WriteSnapshot;
// the checkpoint's file is a new regular file with the bytes written.
func TestSpareNotRegular(t *testing.T) {
	delta := Snapshot{Width: 1, Delta: true, Base: 0, Batch: kv.Batch{Keys: []uint64{5}, Vals: []float32{2}}}
	for _, kind := range []string{"symlink", "fifo"} {
		for _, name := range []string{SnapshotName(0), DeltaName(0)} {
			t.Run(kind+" "+name, func(t *testing.T) {
				dir := t.TempDir()
				if err := os.MkdirAll(filepath.Join(dir, SpareDir), 0o755); err != nil {
					t.Fatal(err)
				}
				spare := filepath.Join(dir, SpareDir, name)
				target := filepath.Join(t.TempDir(), "precious")
				if err := os.WriteFile(target, []byte("keep me"), 0o644); err != nil {
					t.Fatal(err)
				}
				var err error
				if kind == "symlink" {
					err = os.Symlink(target, spare)
				} else {
					err = syscall.Mkfifo(spare, 0o644)
				}
				if err != nil {
					t.Fatal(err)
				}
				want := []byte("the round's snapshot")
				if name == DeltaName(0) {
					// A delta, as a checkpoint of deltas writes it.
					want = EncodeSnapshot(delta)
					_, err = WriteSnapshot(dir, 1, delta)
				} else {
					_, err = WriteFile(dir, 1, name, want)
				}
				if err != nil {
					t.Fatal(err)
				}
				if b, err := os.ReadFile(target); err != nil || string(b) != "keep me" {
					t.Errorf("the link's target reads %q (%v), want it untouched", b, err)
				}
				path := filepath.Join(RoundDir(dir, 1), name)
				fi, err := os.Lstat(path)
				if err != nil || !fi.Mode().IsRegular() {
					t.Fatalf("%s: %v (%v), want a regular file", path, fi, err)
				}
				if b, _ := os.ReadFile(path); !bytes.Equal(b, want) {
					t.Errorf("%s reads %q, want %q", path, b, want)
				}
			})
		}
	}
}

// TestReadRefusesNonRegular puts a FIFO where a checkpoint's MANIFEST or
// one of its files (listed with 0 bytes) should be, and a link to
// /dev/zero in place of the file: Latest refuses each, naming the file,
// instead of waiting for ever for a writer of the FIFO or reading the
// device's endless zeros until memory runs out.
func TestReadRefusesNonRegular(t *testing.T) {
	memcap.Cap(t, 1<<30)
	for _, c := range []struct{ kind, name string }{
		{"fifo", ManifestName}, {"fifo", "worker-000.json"}, {"link to /dev/zero", "worker-000.json"}, {"link to /dev/zero", ManifestName},
	} {
		t.Run(c.kind+" "+c.name, func(t *testing.T) {
			dir := t.TempDir()
			f, err := WriteFile(dir, 5, "worker-000.json", nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := Commit(dir, Manifest{Round: 5, Job: "j", Files: []File{f}}); err != nil {
				t.Fatal(err)
			}
			p := filepath.Join(RoundDir(dir, 5), c.name)
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
			if c.kind == "fifo" {
				err = syscall.Mkfifo(p, 0o644)
			} else {
				err = os.Symlink("/dev/zero", p)
			}
			if err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() {
				_, _, err := Latest(dir)
				done <- err
			}()
			select {
			case err := <-done:
				if err == nil || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), "not a regular file") {
					t.Fatalf("Latest: %v, want a refusal naming %s", err, p)
				}
			case <-time.After(time.Minute):
				// Only a reader that blocks gets here: no timing is measured.
				t.Fatalf("Latest still reading %s after a minute", p)
			}
		})
	}
}
