package server

import (
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"colo/kv"
	"colo/ps/clock"
	"colo/ps/proto"
	"colo/ps/route"
	"colo/ps/update"
)

// TestFamilyIndex checks the family's arithmetic against division on
// random families, at their keys, beside them and at random keys.
func TestFamilyIndex(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for range 2000 {
		stride := rng.Uint64N(1<<uint(1+rng.IntN(40))) + 1
		if rng.IntN(4) == 0 {
			stride <<= uint(rng.IntN(20))
		}
		n := rng.Uint64N(1000) + 1
		limit := (math.MaxUint64 - (n-1)*stride)
		if (n-1) > 0 && (n-1) > math.MaxUint64/stride {
			continue
		}
		base := rng.Uint64N(limit)
		f := newFamily(base, stride, n, 10)
		want := func(k uint64) (uint64, bool) {
			if k < base || (k-base)%stride != 0 || (k-base)/stride >= n {
				return 0, false
			}
			return (k - base) / stride, true
		}
		for range 20 {
			i := rng.Uint64N(n + 2)
			for _, k := range []uint64{base + i*stride, base + i*stride + 1, base + i*stride - 1, rng.Uint64(), base - stride} {
				gi, gok := f.index(k)
				wi, wok := want(k)
				if gok != wok || gok && gi != wi {
					t.Fatalf("family base %d stride %d n %d: key %d gives (%d, %v), want (%d, %v)", base, stride, n, k, gi, gok, wi, wok)
				}
			}
		}
	}
}

// TestFamilyStoreAgainstPlain runs the same pushes (applied and
// accumulated) on stores with and without key families, at width 0 and
// 3 (at width 0 with random lengths, and with one length, as clib's
// tables have), and compares the values of every key, and a store
// restored from the snapshot of the one with families.
func TestFamilyStoreAgainstPlain(t *testing.T) {
	tb, _ := route.Uniform(1, 64)
	const rows = 300
	strides := []uint64{(math.MaxUint64 - 64) / rows &^ 255, (math.MaxUint64 - 64) / 77 &^ 255}
	fams := []famDecl{{64, strides[0], rows}, {65, strides[1], 77}}
	for _, mode := range []struct{ width, length int }{{0, 0}, {0, 4}, {3, 0}} {
		width := mode.width
		rule := func() update.Rule {
			r, err := update.New(update.Config{Name: "adagrad", LR: 0.1, Eps: 1e-8})
			if err != nil {
				t.Fatal(err)
			}
			return r
		}
		plain := NewStore(tb.Index(0), width, rule())
		fam := NewStore(tb.Index(0), width, rule())
		for _, d := range fams {
			ok, err := fam.Family(d.base, d.stride, d.n)
			if err != nil || !ok {
				t.Fatalf("family %+v: installed %v, %v", d, ok, err)
			}
		}
		// Keys: the index's, both families' and some others.
		var space []uint64
		for k := range uint64(64) {
			space = append(space, k)
		}
		for _, d := range fams {
			for i := range d.n {
				space = append(space, d.base+i*d.stride)
			}
		}
		space = append(space, 66, 1<<40+3, math.MaxUint64-5)
		rng := rand.New(rand.NewPCG(1, uint64(width)))
		lens := map[uint64]int32{}
		for round := range 40 {
			var b kv.Batch
			for _, k := range space {
				if rng.IntN(4) != 0 {
					continue
				}
				b.Keys = append(b.Keys, k)
				n := width
				if width == 0 {
					if _, ok := lens[k]; !ok {
						lens[k] = int32(1 + rng.IntN(4))
						if mode.length > 0 {
							lens[k] = int32(mode.length)
						}
					}
					n = int(lens[k])
					b.Lens = append(b.Lens, lens[k])
				}
				for range n {
					b.Vals = append(b.Vals, float32(rng.NormFloat64()))
				}
			}
			sortBatch(&b, width)
			for _, s := range []*Store{plain, fam} {
				var err error
				if round%3 == 0 {
					err = s.Accumulate(b)
				} else {
					err = s.Push(b)
				}
				if err != nil {
					t.Fatal(err)
				}
				if round%3 == 0 {
					s.Flush()
				}
			}
		}
		keys := sortedKeys(space)
		want := plain.Pull(kv.Batch{}, keys)
		if got := fam.Pull(kv.Batch{}, keys); !reflect.DeepEqual(got, want) {
			t.Fatalf("width %d: the store with families pulls other values", width)
		}
		for _, sub := range [][]uint64{keys[64:70], keys[70:71], {keys[3], keys[100], keys[len(keys)-1]}} {
			if got, want := fam.Pull(kv.Batch{}, sub), plain.Pull(kv.Batch{}, sub); !reflect.DeepEqual(got, want) {
				t.Fatalf("width %d: pull of %v differs", width, sub)
			}
		}
		back := NewStore(tb.Index(0), width, rule())
		if err := back.Restore(fam.Snapshot(0, fam.Keys())); err != nil {
			t.Fatal(err)
		}
		if got := back.Pull(kv.Batch{}, keys); !reflect.DeepEqual(got, want) {
			t.Fatalf("width %d: a store restored from the snapshot of one with families pulls other values", width)
		}
	}
}

func sortedKeys(ks []uint64) []uint64 {
	if len(ks) > 5000 {
		out := append([]uint64(nil), ks...)
		slices.Sort(out)
		return out
	}
	out := append([]uint64(nil), ks...)
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j] < out[j-1]; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// sortBatch sorts b by key, keeping each key's values.
func sortBatch(b *kv.Batch, width int) {
	type kvs struct {
		k uint64
		l int32
		v []float32
	}
	var all []kvs
	o := 0
	for i, k := range b.Keys {
		n := width
		if width == 0 {
			n = int(b.Lens[i])
		}
		all = append(all, kvs{k, int32(n), b.Vals[o : o+n]})
		o += n
	}
	for i := 1; i < len(all); i++ {
		for j := i; j > 0 && all[j].k < all[j-1].k; j-- {
			all[j], all[j-1] = all[j-1], all[j]
		}
	}
	var out kv.Batch
	for _, e := range all {
		out.Keys = append(out.Keys, e.k)
		if width == 0 {
			out.Lens = append(out.Lens, e.l)
		}
		out.Vals = append(out.Vals, e.v...)
	}
	*b = out
}

// TestFamilyRefusals checks what Family refuses and what it leaves to
// the map.
func TestFamilyRefusals(t *testing.T) {
	tb, _ := route.Uniform(1, 10)
	s := NewStore(tb.Index(0), 0, update.Sum{})
	if _, err := s.Family(5, 256, 4); err == nil {
		t.Fatal("a family meeting the index was installed")
	}
	if _, err := s.Family(100, 256, math.MaxUint64/128); err == nil {
		t.Fatal("a family beyond the key space was installed")
	}
	if ok, err := s.Family(100, 256, 1000); !ok || err != nil {
		t.Fatalf("family: %v, %v", ok, err)
	}
	if ok, err := s.Family(100, 256, 1000); ok || err != nil {
		t.Fatalf("the same family again: installed %v, %v; want neither", ok, err)
	}
	if _, err := s.Family(100+512, 512, 10); err == nil {
		t.Fatal("a family sharing keys with another was installed")
	}
	if ok, err := s.Family(101, 256, 10); !ok || err != nil {
		t.Fatalf("a disjoint family: %v, %v", ok, err)
	}
	// A family whose keys were pushed before stays in the map.
	if err := s.Push(kv.Batch{Keys: []uint64{1 << 50}, Vals: []float32{2}, Lens: []int32{1}}); err != nil {
		t.Fatal(err)
	}
	if ok, err := s.Family(1<<49, 1<<49, 3); ok || err != nil {
		t.Fatalf("a family with a pushed key: installed %v, %v", ok, err)
	}
	if got := s.Pull(kv.Batch{}, []uint64{1 << 50}); got.Vals[0] != 2 {
		t.Fatalf("pushed key reads %v", got.Vals)
	}
	if ok, _ := s.Family(103, 256, MaxFamilyKeys+1); ok {
		t.Fatal("a family of more than MaxFamilyKeys keys was installed")
	}
}

// TestCoreFamily checks that each server of a uniform table installs
// the keys of a family it owns, that a push and pull through them work,
// and that a rewound core keeps the family.
func TestCoreFamily(t *testing.T) {
	tb, _ := route.Uniform(2, 0)
	const n = 1000
	stride := uint64(math.MaxUint64/n) &^ 255
	for rank := range 2 {
		c, err := New(Config{Rank: rank, Workers: 1, Table: tb, Rule: update.Sum{}, Clock: clock.Config{Mode: clock.Async}})
		if err != nil {
			t.Fatal(err)
		}
		decl := Request{Worker: 0, ID: 1, Cmd: proto.DataFamily, Push: true, KV: kv.Batch{Keys: []uint64{3, stride, n}}}
		if out := c.Handle(decl, false); len(out) != 1 || out[0].Err != nil {
			t.Fatalf("server %d: family: %+v", rank, out)
		}
		owned := 0
		for i := range uint64(n) {
			k := 3 + i*stride
			j := c.store.famSlot(k)
			if mine := tb.Owner(k) == rank; mine != (j >= 0) {
				t.Fatalf("server %d: key %d (row %d) owned %v, family slot %d", rank, k, i, mine, j)
			}
			if j >= 0 {
				owned++
			}
		}
		if owned == 0 || owned == n {
			t.Fatalf("server %d owns %d of the %d keys", rank, owned, n)
		}
		c.Rewind()
		if len(c.store.fams) != 1 || c.store.fams[0].n != uint64(owned) {
			t.Fatalf("server %d: the rewound store has families %+v", rank, c.store.fams)
		}
		bad := Request{Worker: 0, ID: 2, Cmd: proto.DataFamily, Push: true, KV: kv.Batch{Keys: []uint64{3, stride}}}
		if out := c.Handle(bad, false); len(out) != 1 || out[0].Err == nil {
			t.Fatalf("server %d: a malformed family was answered %+v", rank, out)
		}
	}
}

// BenchmarkStorePullFamily pulls 4,096 random rows of 16 values of a
// table of 100,000 rows laid out as clib lays a table (a key family).
func BenchmarkStorePullFamily(b *testing.B) {
	tb, _ := route.Uniform(1, 0)
	const rows, dim, n = 100000, 16, 4096
	stride := uint64(math.MaxUint64/rows) &^ 255
	s := NewStore(tb.Index(0), 0, update.Sum{})
	if ok, err := s.Family(0, stride, rows); !ok || err != nil {
		b.Fatal(ok, err)
	}
	all := kv.Batch{Keys: make([]uint64, rows), Vals: make([]float32, rows*dim)}
	for i := range all.Keys {
		all.Keys[i] = uint64(i) * stride
	}
	if err := s.Push(all); err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	keys := make([]uint64, 0, n)
	for _, r := range rng.Perm(rows)[:n] {
		keys = append(keys, uint64(r)*stride)
	}
	keys = sortedKeys(keys)
	dst := kv.Batch{Vals: make([]float32, n*dim), Lens: make([]int32, n)}
	b.SetBytes(n * dim * 4)
	for b.Loop() {
		s.Pull(dst, keys)
	}
}
