package server

import (
	"math/rand/v2"
	"reflect"
	"testing"

	"colo/kv"
	"colo/ps/clock"
	"colo/ps/proto"
	"colo/ps/route"
	"colo/ps/update"
	"colo/ps/worker"
)

// snapshotStores returns stores of every index form and width, each with
// an AdaGrad rule (one state array) and its table's key count.
func snapshotStores(t *testing.T) map[string]func() *Store {
	t.Helper()
	rule := func() update.Rule {
		c := update.DefaultConfig()
		c.Name, c.LR = "adagrad", 0.3
		r, err := update.New(c)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	ranges, err := route.FromRanges([]uint64{0, 40}, 100)
	if err != nil {
		t.Fatal(err)
	}
	param := make([]int32, 100)
	for k := range param {
		param[k] = int32(k * 7 % 3 % 2)
	}
	dense, err := route.FromPlacement(param, 2)
	if err != nil {
		t.Fatal(err)
	}
	return map[string]func() *Store{
		"ranges width 3": func() *Store { return NewStore(ranges.Index(1), 3, rule()) },
		"dense width 2":  func() *Store { return NewStore(dense.Index(0), 2, rule()) },
		"dense width 0":  func() *Store { return NewStore(dense.Index(1), 0, rule()) },
	}
}

// pushRandom pushes rounds of random gradients of keys in [0, 120) (some
// beyond the table: extra slots) to s.
func pushRandom(t *testing.T, s *Store, rng *rand.Rand, rounds int) {
	t.Helper()
	lens := map[uint64]int32{}
	for range rounds {
		if err := s.Push(randomGrads(s, rng, lens, 3)); err != nil {
			t.Fatal(err)
		}
	}
}

// randomGrads returns random gradients of s's width for each key of
// [0, 120) with probability 1/every; at width 0, a key's length is
// lens[k], set to 1 + k mod 4 on its first draw.
func randomGrads(s *Store, rng *rand.Rand, lens map[uint64]int32, every int) kv.Batch {
	var b kv.Batch
	for k := uint64(0); k < 120; k++ {
		if rng.IntN(every) != 0 {
			continue
		}
		n := s.width
		if n == 0 {
			if _, ok := lens[k]; !ok {
				lens[k] = int32(1 + k%4)
			}
			n = int(lens[k])
			b.Lens = append(b.Lens, lens[k])
		}
		b.Keys = append(b.Keys, k)
		for range n {
			b.Vals = append(b.Vals, float32(rng.NormFloat64()))
		}
	}
	return b
}

// TestSnapshotRestore checks that a store restored from the snapshots of
// all its slots, taken in chunks and joined, holds the same keys, values
// and rule states: the same snapshot, and the same values after the same
// further pushes.
func TestSnapshotRestore(t *testing.T) {
	for name, mk := range snapshotStores(t) {
		t.Run(name, func(t *testing.T) {
			a, b := mk(), mk()
			pushRandom(t, a, rand.New(rand.NewPCG(1, 2)), 5)
			var parts []kv.Batch
			for lo := 0; lo < a.Keys(); lo += 7 {
				parts = append(parts, a.Snapshot(lo, lo+7))
			}
			whole, err := worker.JoinSnapshots(parts, a.width)
			if err != nil {
				t.Fatal(err)
			}
			if want := a.Snapshot(0, a.Keys()); !reflect.DeepEqual(whole, want) {
				t.Fatalf("joined chunks differ from the whole snapshot")
			}
			chunks, err := worker.SplitSnapshot(whole, a.width, 5)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range chunks {
				if err := b.Restore(c); err != nil {
					t.Fatal(err)
				}
			}
			if got, want := b.Snapshot(0, b.Keys()), a.Snapshot(0, a.Keys()); !equalSnapshots(got, want) {
				t.Fatalf("restored store differs:\n got %v\nwant %v", got, want)
			}
			pushRandom(t, a, rand.New(rand.NewPCG(3, 4)), 3)
			pushRandom(t, b, rand.New(rand.NewPCG(3, 4)), 3)
			if got, want := b.Snapshot(0, b.Keys()), a.Snapshot(0, a.Keys()); !equalSnapshots(got, want) {
				t.Fatalf("after the same pushes the restored store differs")
			}
		})
	}
}

// equalSnapshots compares snapshots by key: the slots of keys outside
// the index depend on the order the keys came in.
func equalSnapshots(a, b kv.Batch) bool {
	type kvs struct {
		n    int32
		vals []float32
	}
	by := func(s kv.Batch) map[uint64]kvs {
		per, arrays := len(s.Vals), 1
		if len(s.Keys) > 0 {
			w := len(s.Vals) / len(s.Keys)
			if s.Lens != nil {
				w = 0
			}
			sum := 0
			for i := range s.Keys {
				if s.Lens != nil {
					sum += int(s.Lens[i])
				} else {
					sum += w
				}
			}
			if sum > 0 {
				arrays, per = len(s.Vals)/sum, sum
			}
		}
		m := map[uint64]kvs{}
		o := 0
		for i, k := range s.Keys {
			n := int32(0)
			if s.Lens != nil {
				n = s.Lens[i]
			} else {
				n = int32(per / len(s.Keys))
			}
			var v []float32
			for a := range arrays {
				v = append(v, s.Vals[a*per+o:a*per+o+int(n)]...)
			}
			o += int(n)
			m[k] = kvs{n, v}
		}
		return m
	}
	return reflect.DeepEqual(by(a), by(b))
}

// TestRestoreRefusesMalformed checks that a malformed snapshot is
// refused with the store unchanged.
func TestRestoreRefusesMalformed(t *testing.T) {
	for name, mk := range snapshotStores(t) {
		t.Run(name, func(t *testing.T) {
			s := mk()
			pushRandom(t, s, rand.New(rand.NewPCG(5, 6)), 2)
			before := s.Snapshot(0, s.Keys())
			good := s.Snapshot(0, s.Keys())
			bad := []kv.Batch{
				{Keys: good.Keys, Lens: good.Lens, Vals: good.Vals[:len(good.Vals)-1]},
				{Keys: good.Keys, Lens: good.Lens, Vals: append(append([]float32(nil), good.Vals...), 1)},
			}
			if s.width > 0 {
				bad = append(bad, kv.Batch{Keys: good.Keys, Lens: make([]int32, len(good.Keys)), Vals: good.Vals})
			} else {
				lens := append([]int32(nil), good.Lens...)
				for i := range lens {
					if lens[i] > 0 {
						lens[i]++
						break
					}
				}
				bad = append(bad, kv.Batch{Keys: good.Keys, Lens: lens, Vals: good.Vals}, kv.Batch{Keys: good.Keys, Lens: good.Lens[1:], Vals: good.Vals})
			}
			for i, b := range bad {
				if err := s.Restore(b); err == nil {
					t.Errorf("malformed snapshot %d accepted", i)
				}
			}
			if !reflect.DeepEqual(s.Snapshot(0, s.Keys()), before) {
				t.Fatal("a refused snapshot changed the store")
			}
		})
	}
}

// TestRefusedMidRound: under BSP with three workers, while workers 0 and
// 2 have pushed round 0 and worker 1 has not, a snapshot and a new
// routing table are refused, the error naming the first worker whose
// push is held, its round and how many workers pushed it; once worker
// 1's push completes the round both are served.
func TestRefusedMidRound(t *testing.T) {
	tb, _ := route.Uniform(1, 8)
	c, err := New(Config{Rank: 0, Workers: 3, Table: tb, Width: 1, Clock: clock.Config{Mode: clock.BSP}})
	if err != nil {
		t.Fatal(err)
	}
	push := func(w int) {
		t.Helper()
		for _, r := range handle(c, Request{Worker: w, ID: uint64(w + 1), Cmd: proto.DataSparse, Push: true, KV: kv.Batch{Keys: []uint64{1}, Vals: []float32{1}}}) {
			if r.Err != nil {
				t.Fatal(r.Err)
			}
		}
	}
	save := Request{Worker: 0, ID: 9, Cmd: proto.DataSave, Round: 1, KV: kv.Batch{Keys: []uint64{0, 8}}}
	table := Request{Worker: 0, ID: 10, Cmd: proto.DataTable, Push: true, Round: 1, KV: kv.Batch{Keys: []uint64{1, 8, 0}}}
	push(2)
	push(0)
	held := "worker 0's pushes of an incomplete round are held: 1 from round 0, which 2 of 3 workers pushed; every worker pushed 0 rounds"
	for _, tc := range []struct {
		req  Request
		want string
	}{
		{save, "server 0: snapshot: " + held + ": snapshots are taken between rounds"},
		{table, "server 0: new routing table: " + held},
	} {
		out := handle(c, tc.req)
		if len(out) != 1 || out[0].Err == nil || out[0].Err.Error() != tc.want {
			t.Fatalf("request %d mid-round answered %+v, want the error %q", tc.req.ID, out, tc.want)
		}
	}
	push(1)
	for _, req := range []Request{save, table} {
		if out := handle(c, req); len(out) != 1 || out[0].Err != nil {
			t.Fatalf("request %d between rounds answered %+v", req.ID, out)
		}
	}
}
