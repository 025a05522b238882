package server

import (
	"bytes"
	"math/rand/v2"
	"reflect"
	"testing"

	"colo/checkpoint"
	"colo/kv"
	"colo/ps/clock"
	"colo/ps/proto"
	"colo/ps/worker"
)

// writeRandom changes s by one of the ways a server writes a store,
// drawn by rng: a push applied at once, a round's sums (Accumulate and
// Flush), a push alone (PushAlone) or, at a uniform width, a range push
// applied or summed.
func writeRandom(t *testing.T, s *Store, rng *rand.Rand, lens map[uint64]int32) {
	t.Helper()
	b := randomGrads(s, rng, lens, 9)
	var err error
	switch op := rng.IntN(5); {
	case op == 0:
		err = s.Push(b)
	case op == 1:
		if err = s.Accumulate(b); err == nil {
			s.Flush()
		}
	case op == 2:
		err = s.PushAlone(b)
	case s.width > 0:
		lo, n := uint64(rng.IntN(100)), 1+rng.IntN(20)
		g := make([]float32, n*s.width)
		for i := range g {
			g[i] = float32(rng.NormFloat64())
		}
		err = s.PushRange(lo, g, op == 4)
		s.Flush()
	}
	if err != nil {
		t.Fatal(err)
	}
}

// TestChangedChainRestores is the property incremental checkpoints rest
// on: for random writes by every path and random capture points, a new
// store restored from the first capture's whole snapshot and then from
// each later capture's changed slots (taken in chunks and joined, as a
// worker does) holds, after each, exactly the snapshot of the store at
// that capture: the same keys in the same slots, values and rule
// states. And a capture holds no slot that was not written since the
// one before.
func TestChangedChainRestores(t *testing.T) {
	for name, mk := range snapshotStores(t) {
		t.Run(name, func(t *testing.T) {
			for seed := range uint64(8) {
				rng := rand.New(rand.NewPCG(seed, 77))
				a, b := mk(), mk()
				lens := map[uint64]int32{}
				pushRandom(t, a, rng, 1+rng.IntN(2)) // before any tracking
				if a.Changed() != 0 || a.Tracking() {
					t.Fatal("a store that never tracked marks slots")
				}
				if err := b.Restore(a.Snapshot(0, a.Keys())); err != nil {
					t.Fatal(err)
				}
				a.Track()
				for c := range 12 {
					before := a.Snapshot(0, a.Keys())
					for range rng.IntN(4) {
						writeRandom(t, a, rng, lens)
					}
					var parts []kv.Batch
					for lo := 0; lo < a.Keys(); lo += 13 {
						parts = append(parts, a.SnapshotChanged(lo, lo+13))
					}
					delta, err := worker.JoinSnapshots(parts, a.width)
					if err != nil {
						t.Fatal(err)
					}
					if len(delta.Keys) != a.Changed() {
						t.Fatalf("seed %d capture %d: %d changed slots, %d marked", seed, c, len(delta.Keys), a.Changed())
					}
					a.Track()
					if a.Changed() != 0 {
						t.Fatal("Track left marks")
					}
					if err := b.Restore(delta); err != nil {
						t.Fatal(err)
					}
					want := a.Snapshot(0, a.Keys())
					if got := b.Snapshot(0, b.Keys()); !reflect.DeepEqual(got, want) {
						t.Fatalf("seed %d capture %d: the chain restores\n%v\nwant\n%v", seed, c, got, want)
					}
					assertUnchangedOutside(t, before, want, delta, 1+a.rule.States())
				}
			}
		})
	}
}

// assertUnchangedOutside checks that every key of snapshot after that
// is not in delta has the same values and states in before (snapshots
// of arrays arrays: the values and the rule's states).
func assertUnchangedOutside(t *testing.T, before, after, delta kv.Batch, arrays int) {
	t.Helper()
	rows := func(s kv.Batch) map[uint64][]float32 {
		per := len(s.Vals) / arrays
		off, m := 0, map[uint64][]float32{}
		for i, k := range s.Keys {
			n := per / max(len(s.Keys), 1)
			if s.Lens != nil {
				n = int(s.Lens[i])
			}
			var row []float32
			for a := range arrays {
				row = append(row, s.Vals[a*per+off:a*per+off+n]...)
			}
			m[k], off = row, off+n
		}
		return m
	}
	b, d := rows(before), rows(delta)
	for k, row := range rows(after) {
		if _, ok := d[k]; !ok && !reflect.DeepEqual(b[k], row) {
			t.Fatalf("key %d changed (%v to %v) and is not in the capture", k, b[k], row)
		}
	}
}

// TestCaptureProtocol walks a server core through incremental captures
// by hand: the first is whole; the next, from its round, is of the
// changed slots; one that names another base, exceeds its budget, or
// follows a load or a capture cut short is whole again.
func TestCaptureProtocol(t *testing.T) {
	c := newCore(t, 1, clock.DefaultConfig())
	save := func(keys ...uint64) Reply {
		t.Helper()
		out := handle(c, Request{Worker: 0, ID: 1, Cmd: proto.DataSave, KV: kv.Batch{Keys: keys}})
		if len(out) != 1 {
			t.Fatalf("save %v: %d answers", keys, len(out))
		}
		return out[0]
	}
	begin := func(base int, budget uint64) (changed bool, slots, marked uint64) {
		t.Helper()
		r := save(proto.SaveBegin, uint64(base+1), budget, 0)
		if r.Err != nil || len(r.Keys) != 3 {
			t.Fatalf("begin from %d: %v %v", base, r.Err, r.Keys)
		}
		return r.Keys[0] == 1, r.Keys[1], r.Keys[2]
	}
	end := func(round int) {
		t.Helper()
		if r := save(proto.SaveEnd, uint64(round+1), 0, 0); r.Err != nil {
			t.Fatal(r.Err)
		}
	}
	round := int64(0)
	pushKeys := func(keys ...uint64) {
		t.Helper()
		vals := make([]float32, len(keys))
		for i := range vals {
			vals[i] = 1
		}
		if out := handle(c, push(0, 2, round, keys, vals)); len(out) != 1 || out[0].Err != nil {
			t.Fatalf("push: %+v", out)
		}
		round++
	}
	if changed, slots, _ := begin(-1, 100); changed || slots != 100 {
		t.Fatalf("first capture: changed %v of %d slots", changed, slots)
	}
	if r := save(proto.SaveChanged, 0, 100, 0); r.Err == nil {
		t.Fatal("changed slots given during a whole capture")
	}
	end(10)
	pushKeys(3, 50)
	pushKeys(50, 99)
	// Width 1: a mark per block of 16 slots, the blocks of 3, 50 and 99
	// (of which 96 to 99 are slots).
	var want []uint64
	for _, b := range [][2]uint64{{0, 16}, {48, 64}, {96, 100}} {
		for k := b[0]; k < b[1]; k++ {
			want = append(want, k)
		}
	}
	changed, _, marked := begin(10, 100)
	if !changed || marked != uint64(len(want)) {
		t.Fatalf("second capture: changed %v, %d marked, want %d", changed, marked, len(want))
	}
	if r := save(proto.SaveChanged, 0, 100, 0); r.Err != nil || !reflect.DeepEqual(r.Keys, want) {
		t.Fatalf("changed slots %v (%v), want %v", r.Keys, r.Err, want)
	}
	end(20)
	pushKeys(7)
	if changed, _, _ := begin(10, 100); changed {
		t.Fatal("a capture from another base was of the changed slots")
	}
	end(30)
	pushKeys(7, 8)
	if changed, _, marked := begin(30, 1); changed || marked != 16 {
		t.Fatalf("a capture over its budget: changed %v, %d marked", changed, marked)
	}
	// Cut short: no end; the next is whole.
	if changed, _, _ := begin(30, 100); changed {
		t.Fatal("a capture after one cut short was of the changed slots")
	}
	end(40)
	snap := c.store.Snapshot(0, 100)
	if out := handle(c, Request{Worker: 0, ID: 3, Push: true, Cmd: proto.DataLoad, KV: snap}); out[0].Err != nil {
		t.Fatal(out[0].Err)
	}
	if changed, _, _ := begin(40, 100); changed {
		t.Fatal("a capture after a load was of the changed slots")
	}
	end(40)
	if changed, _, marked := begin(40, 100); !changed || marked != 0 {
		t.Fatalf("a capture with nothing written: changed %v, %d marked", changed, marked)
	}
	if r := save(proto.SaveEnd, 0, 0, 0); r.Err == nil {
		t.Fatal("the end of round -1 accepted")
	}
	if r := save(9, 0, 0, 0); r.Err == nil {
		t.Fatal("an unknown capture request accepted")
	}
}

// TestIncrementalCheckpointsRestore is the property of incremental
// checkpoints end to end on the files: random writes, checkpoints at
// random points, each either whole or the changed slots of the
// checkpoint before (written as a delta on it, with a whole snapshot
// every few), committed and pruned to the newest 2 as the training loop
// does; after each, the newest checkpoint that Latest picks restores into
// a new store exactly the snapshot of the store at that point, byte for
// byte as a whole checkpoint's file, and so does every checkpoint kept.
func TestIncrementalCheckpointsRestore(t *testing.T) {
	for name, mk := range snapshotStores(t) {
		t.Run(name, func(t *testing.T) {
			for seed := range uint64(4) {
				rng := rand.New(rand.NewPCG(seed, 99))
				dir := t.TempDir()
				a := mk()
				lens := map[uint64]int32{}
				want := map[int][]byte{} // round: the whole snapshot's file
				base, deltas := -1, 0
				for round := 1; round <= 30; round++ {
					for range rng.IntN(3) {
						writeRandom(t, a, rng, lens)
					}
					if rng.IntN(3) != 0 {
						continue
					}
					s := checkpoint.Snapshot{Server: 0, Width: a.width}
					if base >= 0 && deltas < 3 && rng.IntN(4) != 0 {
						s.Delta, s.Base, deltas = true, base, deltas+1
						s.Batch = a.SnapshotChanged(0, a.Keys())
					} else {
						s.Batch, deltas = a.Snapshot(0, a.Keys()), 0
					}
					a.Track()
					want[round] = checkpoint.EncodeSnapshot(checkpoint.Snapshot{Server: 0, Width: a.width, Batch: a.Snapshot(0, a.Keys())})
					f, err := checkpoint.Options{Volatile: true}.WriteSnapshot(dir, round, s)
					if err != nil {
						t.Fatal(err)
					}
					if err := (checkpoint.Options{Volatile: true}).Commit(dir, checkpoint.Manifest{Round: round, Job: "j", Files: []checkpoint.File{f}}); err != nil {
						t.Fatal(err)
					}
					if err := checkpoint.Prune(dir, 2); err != nil {
						t.Fatal(err)
					}
					base = round
					m, refused, err := checkpoint.Latest(dir)
					if err != nil || len(refused) > 0 || m.Round != round {
						t.Fatalf("seed %d round %d: latest %v, refused %v, %v", seed, round, m, refused, err)
					}
					rounds, err := checkpoint.Rounds(dir)
					if err != nil {
						t.Fatal(err)
					}
					for _, r := range rounds {
						m, err := checkpoint.Open(dir, r)
						if err != nil {
							t.Fatal(err)
						}
						got, err := m.ReadSnapshot(0)
						if err != nil {
							t.Fatalf("seed %d round %d: checkpoint %d: %v", seed, round, r, err)
						}
						b := mk()
						if err := b.Restore(got.Batch); err != nil {
							t.Fatal(err)
						}
						restored := checkpoint.EncodeSnapshot(checkpoint.Snapshot{Server: 0, Width: b.width, Batch: b.Snapshot(0, b.Keys())})
						if !bytes.Equal(restored, want[r]) || !bytes.Equal(checkpoint.EncodeSnapshot(got), want[r]) {
							t.Fatalf("seed %d round %d: checkpoint %d does not restore its store", seed, round, r)
						}
					}
				}
			}
		})
	}
}

// TestTouchRange checks that marking a run of slots at once marks the
// blocks that marking each slot of it does, and nothing when the store
// does not track, for random runs and block sizes.
func TestTouchRange(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	for range 200 {
		block := uint(rng.IntN(6))
		n := 1 + rng.IntN(5000)
		got := &Store{nslots: n, tracking: true, block: block}
		want := &Store{nslots: n, tracking: true, block: block}
		got.trackSlots()
		want.trackSlots()
		for range 1 + rng.IntN(4) {
			j := rng.IntN(n + 1)
			k := j + rng.IntN(n-j+1)
			got.touchRange(j, k)
			for q := j; q < k; q++ {
				want.touch(q)
			}
		}
		if !reflect.DeepEqual(got.changed, want.changed) {
			t.Fatalf("block %d, %d slots: marks %x, want %x", block, n, got.changed, want.changed)
		}
	}
	off := &Store{nslots: 100}
	off.touchRange(0, 100)
	if off.changed != nil {
		t.Fatalf("a store that does not track marked %x", off.changed)
	}
}
