package route

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// check verifies t against the placement it came from: owners, the
// encoding round trip, the per-server indexes and SplitSorted.
func check(t *testing.T, tb *Table, param []int32, servers int) {
	t.Helper()
	for v, s := range param {
		if got := tb.Owner(uint64(v)); got != int(s) {
			t.Fatalf("%v: key %d owned by %d, placement says %d", tb, v, got, s)
		}
	}
	// Share against a count of the placement.
	counts := make([]int, servers)
	for _, s := range param {
		counts[s]++
	}
	for s, n := range counts {
		if got, want := tb.Share(s), float64(n)/float64(len(param)); got != want {
			t.Fatalf("%v: server %d's share %v, the placement gives it %d of %d keys", tb, s, got, n, len(param))
		}
	}
	b, err := tb.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	back, err := Unmarshal(b)
	if err != nil {
		t.Fatalf("%v: %v", tb, err)
	}
	for k := range uint64(len(param)) + 10 {
		if back.Owner(k) != tb.Owner(k) {
			t.Fatalf("%v: key %d owner %d after the round trip, %d before", tb, k, back.Owner(k), tb.Owner(k))
		}
	}
	total := 0
	for s := range servers {
		x := tb.Index(s)
		seen := make([]bool, x.Size())
		for v, o := range param {
			slot := x.Slot(uint64(v))
			if int(o) != s {
				if slot != -1 {
					t.Fatalf("%v: server %d indexes key %d of server %d", tb, s, v, o)
				}
				continue
			}
			if slot < 0 || slot >= x.Size() || seen[slot] {
				t.Fatalf("%v: server %d key %d slot %d of %d (or repeated)", tb, s, v, slot, x.Size())
			}
			seen[slot] = true
		}
		if x.Slot(uint64(len(param))) != -1 {
			t.Fatalf("%v: key beyond NumKeys indexed", tb)
		}
		total += x.Size()
	}
	if total != len(param) {
		t.Fatalf("%v: indexes hold %d keys of %d", tb, total, len(param))
	}
}

func TestFromPlacementForms(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	// Blocks in server order, with server 1 empty: ranges.
	blocks := []int32{0, 0, 0, 2, 2, 3}
	tb, err := FromPlacement(blocks, 4)
	if err != nil || tb.Kind() != Ranges {
		t.Fatalf("blocks: %v %v", tb, err)
	}
	if lo, hi, _ := tb.Range(1); lo != hi {
		t.Fatalf("server 1 owns [%d, %d), want empty", lo, hi)
	}
	check(t, tb, blocks, 4)
	// Long runs out of order: runs.
	runs := make([]int32, 10000)
	for i := range runs {
		runs[i] = int32(i/1000) % 3
	}
	tb, _ = FromPlacement(runs, 3)
	if tb.Kind() != Runs {
		t.Fatalf("runs: %v", tb)
	}
	check(t, tb, runs, 3)
	// Random: dense, for few and many servers.
	for _, s := range []int{2, 7, 300} {
		p := make([]int32, 5000)
		for i := range p {
			p[i] = int32(rng.IntN(s))
		}
		tb, _ = FromPlacement(p, s)
		if tb.Kind() != Dense {
			t.Fatalf("random on %d: %v", s, tb)
		}
		check(t, tb, p, s)
	}
	if _, err := FromPlacement([]int32{0, 3}, 2); err == nil {
		t.Fatal("server 3 of 2 accepted")
	}
	if _, err := FromPlacement([]int32{0, -1}, 2); err == nil {
		t.Fatal("unassigned parameter accepted")
	}
}

func TestUniform(t *testing.T) {
	tb, err := Uniform(3, 10)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(tb.Starts(), []uint64{0, 3, 6}) {
		t.Fatalf("starts %v", tb.Starts())
	}
	p := []int32{0, 0, 0, 1, 1, 1, 2, 2, 2, 2}
	check(t, tb, p, 3)
	if tb.Owner(1<<40) != 2 {
		t.Fatal("key beyond NumKeys not on the last server")
	}
	full, _ := Uniform(4, 0)
	for _, tc := range []struct {
		k    uint64
		want int
	}{{0, 0}, {1<<62 - 1, 0}, {1 << 62, 1}, {1 << 63, 2}, {math.MaxUint64, 3}} {
		if got := full.Owner(tc.k); got != tc.want {
			t.Errorf("full space: key %#x on %d, want %d", tc.k, got, tc.want)
		}
	}
	if full.Index(0).Size() != 0 {
		t.Error("unbounded table has an index")
	}
	one, _ := Uniform(1, 0)
	half, _ := FromRanges([]uint64{0, 1 << 63}, 0)
	for _, c := range []struct {
		tb   *Table
		s    int
		want float64
	}{{full, 0, 0.25}, {full, 3, 0.25}, {one, 0, 1}, {half, 0, 0.5}, {half, 1, 0.5}} {
		if got := c.tb.Share(c.s); got != c.want {
			t.Errorf("%v: server %d's share %v, want %v", c.tb, c.s, got, c.want)
		}
	}
	if _, err := Uniform(0, 10); err == nil {
		t.Error("Uniform with 0 servers")
	}
}

func TestSplitSorted(t *testing.T) {
	tb, _ := FromRanges([]uint64{0, 100, 100, 250}, 1000)
	rng := rand.New(rand.NewPCG(3, 3))
	var keys []uint64
	for k := range uint64(1000) {
		if rng.IntN(3) == 0 {
			keys = append(keys, k)
		}
	}
	cut := tb.SplitSorted(nil, keys)
	for s := range 4 {
		for _, k := range keys[cut[s]:cut[s+1]] {
			if tb.Owner(k) != s {
				t.Fatalf("key %d in server %d's part, owned by %d", k, s, tb.Owner(k))
			}
		}
	}
	if cut[4] != len(keys) {
		t.Fatalf("cut %v", cut)
	}
	if _, err := FromRanges([]uint64{0, 5, 4}, 0); err == nil {
		t.Fatal("decreasing starts accepted")
	}
}

func FuzzUnmarshal(f *testing.F) {
	for _, p := range [][]int32{{0, 0, 1}, {0, 1, 0, 1}, {1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}} {
		tb, _ := FromPlacement(p, 2)
		b, _ := tb.MarshalBinary()
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		tb, err := Unmarshal(b)
		if err != nil {
			return
		}
		for _, k := range []uint64{0, 1, 7, 1 << 40} {
			if o := tb.Owner(k); o < 0 || o >= tb.Servers() {
				t.Fatalf("owner %d of %d", o, tb.Servers())
			}
		}
		again, _ := tb.MarshalBinary()
		back, err := Unmarshal(again)
		if err != nil {
			t.Fatalf("re-encoding does not decode: %v", err)
		}
		for _, k := range []uint64{0, 1, 7, 1 << 40} {
			if back.Owner(k) != tb.Owner(k) {
				t.Fatalf("key %d: owner %d after re-encoding, %d before", k, back.Owner(k), tb.Owner(k))
			}
		}
	})
}
