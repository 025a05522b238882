package checkpoint

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"colo/kv"
)

// writeChain writes, in dir, a whole snapshot of server 0 at round 10
// and deltas on it at rounds 20 (on 10) and 30 (on 20), each checkpoint
// with a worker file, and returns the snapshot each round restores.
func writeChain(t *testing.T, dir string) map[int]Snapshot {
	t.Helper()
	full := Snapshot{Width: 2, Batch: kv.Batch{Keys: []uint64{3, 4}, Vals: []float32{1, 2, 3, 4, 5, 6, 7, 8}}}
	d20 := Snapshot{Width: 2, Delta: true, Base: 10, Batch: kv.Batch{Keys: []uint64{4, 9}, Vals: []float32{30, 40, 90, 91, 70, 80, 92, 93}}}
	d30 := Snapshot{Width: 2, Delta: true, Base: 20, Batch: kv.Batch{Keys: []uint64{3}, Vals: []float32{-1, -2, -5, -6}}}
	for _, c := range []struct {
		round int
		s     Snapshot
	}{{10, full}, {20, d20}, {30, d30}} {
		f, err := WriteSnapshot(dir, c.round, c.s)
		if err != nil {
			t.Fatal(err)
		}
		w, err := WriteFile(dir, c.round, "worker-000.json", []byte("{}"))
		if err != nil {
			t.Fatal(err)
		}
		if err := Commit(dir, Manifest{Round: c.round, Job: "j", Files: []File{f, w}}); err != nil {
			t.Fatal(err)
		}
	}
	return map[int]Snapshot{
		10: full,
		20: {Width: 2, Batch: kv.Batch{Keys: []uint64{3, 4, 9}, Vals: []float32{1, 2, 30, 40, 90, 91, 5, 6, 70, 80, 92, 93}}},
		30: {Width: 2, Batch: kv.Batch{Keys: []uint64{3, 4, 9}, Vals: []float32{-1, -2, 30, 40, 90, 91, -5, -6, 70, 80, 92, 93}}},
	}
}

// TestChainByHand checks a chain whose restored snapshots were worked
// out by hand: the manifests list what each needs, each round restores
// its snapshot, and pruning to the newest checkpoint keeps its chain.
func TestChainByHand(t *testing.T) {
	dir := t.TempDir()
	want := writeChain(t, dir)
	for r, needs := range map[int][]int{10: nil, 20: {10}, 30: {20, 10}} {
		m, err := Open(dir, r)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(m.Needs, needs) {
			t.Fatalf("round %d needs %v, want %v", r, m.Needs, needs)
		}
		got, err := m.ReadSnapshot(0)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want[r]) {
			t.Fatalf("round %d restores %+v, want %+v", r, got, want[r])
		}
	}
	if err := Prune(dir, 1); err != nil {
		t.Fatal(err)
	}
	if rounds, _ := Rounds(dir); !reflect.DeepEqual(rounds, []int{30, 20, 10}) {
		t.Fatalf("pruning to 1 left %v, want the chain 30 20 10", rounds)
	}
	// A whole snapshot at 40 frees the chain.
	f, err := WriteSnapshot(dir, 40, want[30])
	if err != nil {
		t.Fatal(err)
	}
	if err := Commit(dir, Manifest{Round: 40, Job: "j", Files: []File{f}}); err != nil {
		t.Fatal(err)
	}
	if err := Prune(dir, 1); err != nil {
		t.Fatal(err)
	}
	if rounds, _ := Rounds(dir); !reflect.DeepEqual(rounds, []int{40}) {
		t.Fatalf("pruning to 1 after a whole snapshot left %v, want 40", rounds)
	}
}

// TestChainRefusesDamage damages each link of a chain: a delta
// truncated or with a bit flipped, its base's file damaged, the base's
// manifest removed or its directory gone. Latest refuses every
// checkpoint whose chain holds the damage, naming the file at fault,
// and picks the newest one whose chain verifies; reading the refused
// one's snapshot fails naming the file too.
func TestChainRefusesDamage(t *testing.T) {
	type damage struct {
		name   string
		do     func(dir string)
		file   string // named in the refusal
		latest int    // picked then (0: none)
	}
	path := func(dir string, r int, name string) string { return filepath.Join(RoundDir(dir, r), name) }
	flip := func(p string) {
		data, _ := os.ReadFile(p)
		data[len(data)-1] ^= 1
		os.WriteFile(p, data, 0o644)
	}
	for _, d := range []damage{
		{"delta 30 truncated", func(dir string) { os.Truncate(path(dir, 30, DeltaName(0)), 20) }, "round-000000030/server-000.delta", 20},
		{"delta 30 flipped", func(dir string) { flip(path(dir, 30, DeltaName(0))) }, "round-000000030/server-000.delta", 20},
		{"delta 20 flipped", func(dir string) { flip(path(dir, 20, DeltaName(0))) }, "round-000000020/server-000.delta", 10},
		{"base 10 flipped", func(dir string) { flip(path(dir, 10, SnapshotName(0))) }, "round-000000010/server-000.snap", 0},
		{"base 10 without manifest", func(dir string) { os.Remove(path(dir, 10, ManifestName)) }, "round-000000010/MANIFEST", 0},
		{"base 10 gone", func(dir string) { os.RemoveAll(RoundDir(dir, 10)) }, "round-000000010/MANIFEST", 0},
		{"base 20 gone", func(dir string) { os.RemoveAll(RoundDir(dir, 20)) }, "round-000000020/MANIFEST", 10},
	} {
		t.Run(d.name, func(t *testing.T) {
			dir := t.TempDir()
			writeChain(t, dir)
			d.do(dir)
			m, refused, err := Latest(dir)
			if len(refused) == 0 || !strings.Contains(refused[0].Error(), d.file) {
				t.Fatalf("refused %v, want the first refusal naming %s", refused, d.file)
			}
			switch {
			case d.latest == 0 && err == nil:
				t.Fatalf("latest %d, want none", m.Round)
			case d.latest > 0 && (err != nil || m.Round != d.latest):
				t.Fatalf("latest %v (%v), want round %d", m, err, d.latest)
			}
			if m30, err := Open(dir, 30); err == nil {
				if _, err := m30.ReadSnapshot(0); err == nil || !strings.Contains(err.Error(), filepath.Base(filepath.Dir(d.file))) {
					t.Fatalf("reading round 30: %v, want an error naming %s", err, d.file)
				}
			}
		})
	}
}

// TestManifestChainChecked checks that a manifest whose deltas or needs
// are inconsistent is refused, and that Commit refuses a delta on a
// round that is not there.
func TestManifestChainChecked(t *testing.T) {
	dir := t.TempDir()
	if err := Commit(dir, Manifest{Round: 5, Job: "j", Files: []File{{Name: DeltaName(0), Base: 3}}}); err == nil || !strings.Contains(err.Error(), "round-000000003") {
		t.Fatalf("a delta on a missing round committed: %v", err)
	}
	for _, body := range []string{
		`{"format":1,"round":5,"job":"j","files":[{"name":"server-000.delta","size":0,"crc32c":0,"base":3}]}`,
		`{"format":1,"round":5,"job":"j","files":[{"name":"server-000.delta","size":0,"crc32c":0,"base":5}],"needs":[5]}`,
		`{"format":1,"round":5,"job":"j","files":[{"name":"server-000.snap","size":0,"crc32c":0,"base":3}],"needs":[3]}`,
		`{"format":1,"round":5,"job":"j","files":[],"needs":[2,3]}`,
		`{"format":1,"round":5,"job":"j","files":[],"needs":[-1]}`,
	} {
		data := []byte(body + "\ncrc32c " + hex8(Checksum([]byte(body))) + "\n")
		if _, err := ParseManifest(data); err == nil {
			t.Errorf("accepted %s", body)
		}
	}
}

func hex8(x uint32) string {
	const digits = "0123456789abcdef"
	b := make([]byte, 8)
	for i := 7; i >= 0; i-- {
		b[i] = digits[x&15]
		x >>= 4
	}
	return string(b)
}

// TestApplyDeltaAgainstMap checks ApplyDelta on random snapshots of
// both layouts against a reference built key by key in a map (and the
// order: the base's keys, then the delta's new ones in its order).
func TestApplyDeltaAgainstMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := range 300 {
		width, arrays := rng.IntN(3), 1+rng.IntN(3)
		lenOf := map[uint64]int32{}
		mk := func(keys []uint64, delta bool) Snapshot {
			s := Snapshot{Width: width, Delta: delta, Base: 1}
			rows := make([][][]float32, arrays)
			for _, k := range keys {
				n := width
				if width == 0 {
					if _, ok := lenOf[k]; !ok || delta && lenOf[k] == 0 {
						lenOf[k] = int32(rng.IntN(3))
					}
					n = int(lenOf[k])
					s.Batch.Lens = append(s.Batch.Lens, lenOf[k])
				}
				for a := range arrays {
					row := make([]float32, n)
					for i := range row {
						row[i] = rng.Float32()
					}
					rows[a] = append(rows[a], row)
				}
			}
			s.Batch.Keys = keys
			s.Batch.Vals = []float32{}
			for a := range arrays {
				for _, r := range rows[a] {
					s.Batch.Vals = append(s.Batch.Vals, r...)
				}
			}
			return s
		}
		perm := rng.Perm(20)
		var bk, dk []uint64
		for i, p := range perm {
			switch {
			case i < 10:
				bk = append(bk, uint64(p))
				if rng.IntN(2) == 0 {
					dk = append(dk, uint64(p))
				}
			case rng.IntN(2) == 0:
				dk = append(dk, uint64(p))
			}
		}
		base, d := mk(bk, false), mk(dk, true)
		got, err := ApplyDelta(base, d)
		if err != nil {
			t.Fatalf("trial %d: %v", trial, err)
		}
		// The reference: rows by key, the base's then the delta's.
		type row [][]float32
		rowsOf := func(s Snapshot) map[uint64]row {
			off, per, n, err := rows(s)
			if err != nil {
				t.Fatal(err)
			}
			m := map[uint64]row{}
			for i, k := range s.Batch.Keys {
				l := s.Width
				if s.Width == 0 {
					l = int(s.Batch.Lens[i])
				}
				r := make(row, n)
				for a := range n {
					r[a] = s.Batch.Vals[a*per+off[i] : a*per+off[i]+l]
				}
				m[k] = r
			}
			return m
		}
		ref := rowsOf(base)
		order := append([]uint64(nil), bk...)
		for k, r := range rowsOf(d) {
			ref[k] = r
		}
		for _, k := range dk {
			if !contains(bk, k) {
				order = append(order, k)
			}
		}
		if !reflect.DeepEqual(got.Batch.Keys, order) {
			t.Fatalf("trial %d: keys %v, want %v", trial, got.Batch.Keys, order)
		}
		g := rowsOf(got)
		for k, r := range ref {
			if !reflect.DeepEqual(g[k], r) && !(emptyRows(g[k]) && emptyRows(r)) {
				t.Fatalf("trial %d: key %d: %v, want %v", trial, k, g[k], r)
			}
		}
		if again := EncodeSnapshot(got); !bytes.Equal(again, EncodeSnapshot(mustDecode(t, again))) {
			t.Fatal("the result does not round-trip")
		}
	}
}

func contains(a []uint64, k uint64) bool {
	for _, x := range a {
		if x == k {
			return true
		}
	}
	return false
}

func emptyRows(r [][]float32) bool {
	for _, x := range r {
		if len(x) > 0 {
			return false
		}
	}
	return true
}

func mustDecode(t *testing.T, data []byte) Snapshot {
	t.Helper()
	s, err := DecodeSnapshot(data)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestDeltaFile round-trips deltas and refuses a snapshot read as one.
func TestDeltaFile(t *testing.T) {
	for _, s := range []Snapshot{
		{Server: 2, Width: 2, Delta: true, Base: 40, Batch: kv.Batch{Keys: []uint64{1, 9}, Vals: []float32{1, 2, 3, 4, 5, 6, 7, 8}}},
		{Server: 0, Width: 0, Delta: true, Base: 0, Batch: kv.Batch{Keys: []uint64{7}, Lens: []int32{2}, Vals: []float32{1, 2}}},
		{Server: 1, Width: 4, Delta: true, Base: 3, Batch: kv.Batch{Keys: []uint64{}, Vals: []float32{}}},
	} {
		data := EncodeSnapshot(s)
		if string(data[:8]) != deltaMagic || len(data) != snapshotSize(s) {
			t.Fatalf("delta encoded as %q, %d bytes, want %d", data[:8], len(data), snapshotSize(s))
		}
		got, err := DecodeSnapshot(data)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, s) {
			t.Fatalf("round trip: got %+v, want %+v", got, s)
		}
		if _, err := DecodeSnapshot(data[:len(data)-1]); err == nil {
			t.Fatal("a truncated delta decoded")
		}
	}
	if _, err := WriteSnapshot(t.TempDir(), 5, Snapshot{Delta: true, Base: 5, Width: 1, Batch: kv.Batch{Keys: []uint64{}, Vals: []float32{}}}); err == nil {
		t.Fatal("a delta on its own round written")
	}
}

// TestChainRefusesReplacedBase rewrites the base of a delta: after a
// resume from round 10 (the checkpoint of round 20 refused, say, when a
// machine's crash lost a volatile file of it), the job writes round 20
// again, whole and with other values (asynchronous training does not
// repeat itself), and the old round 30, a delta on the old round 20, is
// still there. Its chain is complete, but its delta holds only the slots
// the old run wrote since the old round 20: applied to the new one it
// would give a store neither run had. Latest refuses it, naming its
// delta, and picks the new round 20; reading its snapshot fails too.
func TestChainRefusesReplacedBase(t *testing.T) {
	dir := t.TempDir()
	writeChain(t, dir)
	other := Snapshot{Width: 2, Batch: kv.Batch{Keys: []uint64{3, 4, 9}, Vals: []float32{11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22}}}
	f, err := WriteSnapshot(dir, 20, other)
	if err != nil {
		t.Fatal(err)
	}
	w, err := WriteFile(dir, 20, "worker-000.json", []byte(`{"rerun":1}`))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(RoundDir(dir, 20), DeltaName(0))); err != nil {
		t.Fatal(err)
	}
	if err := Commit(dir, Manifest{Round: 20, Job: "j", Files: []File{f, w}}); err != nil {
		t.Fatal(err)
	}
	m, refused, err := Latest(dir)
	if err != nil {
		t.Fatal(err)
	}
	if m.Round != 20 {
		got, _ := m.ReadSnapshot(0)
		t.Fatalf("Latest picked round %d (restoring %v), want 20: round 30's delta builds on the old round 20", m.Round, got.Batch.Vals)
	}
	if len(refused) != 1 || !strings.Contains(refused[0].Error(), "round-000000030/server-000.delta") {
		t.Fatalf("refused %v, want round 30's delta named", refused)
	}
	m30, err := Open(dir, 30)
	if err != nil {
		t.Fatal(err)
	}
	if s, err := m30.ReadSnapshot(0); err == nil || !strings.Contains(err.Error(), "server-000.delta") {
		t.Fatalf("round 30 restored %v (error %v), want a refusal naming its delta", s.Batch.Vals, err)
	}
}

// TestChainPerServer checks that a checkpoint needs only its servers'
// own links: server 0 whole at 10, a delta at 20, whole at 30; server 1
// whole at 10 and 20, a delta on 20 at 30. Round 30 needs round 20
// alone (not 20's own need of 10, which is server 0's, whole again at
// 30), pruning to the newest keeps 30 and 20, and 30 still verifies and
// restores with round 10 gone.
func TestChainPerServer(t *testing.T) {
	dir := t.TempDir()
	whole := func(s int) Snapshot {
		return Snapshot{Server: s, Width: 1, Batch: kv.Batch{Keys: []uint64{1}, Vals: []float32{float32(s)}}}
	}
	delta := func(s, base int) Snapshot {
		return Snapshot{Server: s, Width: 1, Delta: true, Base: base, Batch: kv.Batch{Keys: []uint64{2}, Vals: []float32{7}}}
	}
	volatile := Options{Volatile: true}
	for _, c := range []struct {
		round int
		files []Snapshot
	}{
		{10, []Snapshot{whole(0), whole(1)}},
		{20, []Snapshot{delta(0, 10), whole(1)}},
		{30, []Snapshot{whole(0), delta(1, 20)}},
	} {
		var files []File
		for _, s := range c.files {
			f, err := volatile.WriteSnapshot(dir, c.round, s)
			if err != nil {
				t.Fatal(err)
			}
			files = append(files, f)
		}
		if err := volatile.Commit(dir, Manifest{Round: c.round, Job: "j", Files: files}); err != nil {
			t.Fatal(err)
		}
	}
	m, err := Open(dir, 30)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(m.Needs, []int{20}) {
		t.Fatalf("round 30 needs %v, want [20]", m.Needs)
	}
	if err := Prune(dir, 1); err != nil {
		t.Fatal(err)
	}
	if rounds, _ := Rounds(dir); !reflect.DeepEqual(rounds, []int{30, 20}) {
		t.Fatalf("pruning to 1 left %v, want 30 20", rounds)
	}
	if got, err := m.ReadSnapshot(1); err != nil || !reflect.DeepEqual(got.Batch.Keys, []uint64{1, 2}) {
		t.Fatalf("server 1 at round 30: %+v, %v", got, err)
	}
	// Round 20 holds server 0's delta on the pruned round 10: round 30,
	// which needs only server 1's file of round 20, still verifies, and
	// round 20's manifest can be made durable as it is.
	if m, refused, err := Latest(dir); err != nil || m.Round != 30 || len(refused) > 0 {
		t.Fatalf("latest %v, refused %v, %v; want round 30", m, refused, err)
	}
	if err := Durable(dir, 20); err != nil {
		t.Fatal(err)
	}
	if b, err := Open(dir, 20); err != nil || b.Volatile {
		t.Fatalf("round 20 after Durable: %+v, %v", b, err)
	}
}
