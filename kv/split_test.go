package kv

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
)

// referenceSplit splits b key by key with maps: the obviously correct
// version of Split.
func referenceSplit(b Batch, n int, route Router) []Batch {
	parts := make([]Batch, n)
	v := 0
	for i, k := range b.Keys {
		w := b.Width()
		if b.Lens != nil {
			w = int(b.Lens[i])
		}
		p := &parts[route(k)]
		p.Keys = append(p.Keys, k)
		p.Vals = append(p.Vals, b.Vals[v:v+w]...)
		if b.Lens != nil {
			p.Lens = append(p.Lens, b.Lens[i])
		}
		v += w
	}
	return parts
}

// normal maps empty slices to nil so batches compare by content.
func normal(parts []Batch) []Batch {
	out := make([]Batch, len(parts))
	for i, p := range parts {
		if len(p.Keys) > 0 {
			out[i].Keys = p.Keys
		}
		if len(p.Vals) > 0 {
			out[i].Vals = p.Vals
		}
		if len(p.Lens) > 0 {
			out[i].Lens = p.Lens
		}
	}
	return out
}

// randomBatch returns n random keys with widths values each (or random
// lengths up to 3 when lens).
func randomBatch(r *rand.Rand, n, width int, lens bool) Batch {
	b := Batch{Keys: randomKeys(r, n, 1<<16)}
	if lens {
		b.Lens = make([]int32, n)
		for i := range b.Lens {
			b.Lens[i] = int32(r.IntN(4))
		}
	}
	nv := n * width
	if lens {
		nv = 0
		for _, l := range b.Lens {
			nv += int(l)
		}
	}
	b.Vals = make([]float32, nv)
	for i := range b.Vals {
		b.Vals[i] = float32(i)
	}
	return b
}

func TestSplitAgainstReference(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, n := range []int{1, 2, 3, 7} {
		routers := map[string]Router{
			"ranges": Ranges([]uint64{0, 1 << 14, 1 << 15, 3 << 14, 60000, 61000, 62000}[:n]),
			"mod":    func(k uint64) int { return int(k % uint64(n)) },
			"table": func() Router {
				tab := make([]int32, 1<<16)
				for i := range tab {
					tab[i] = int32(r.IntN(n))
				}
				return func(k uint64) int { return int(tab[k]) }
			}(),
		}
		for name, route := range routers {
			sp := NewSplitter(n, route)
			var dst []Batch
			for _, shape := range []struct {
				width, keys int
				lens        bool
			}{{1, 500, false}, {3, 200, false}, {0, 50, false}, {0, 300, true}, {1, 0, false}, {1, 1, false}} {
				b := randomBatch(r, shape.keys, shape.width, shape.lens)
				orig := b.Clone()
				var err error
				dst, err = sp.Split(dst, b)
				if err != nil {
					t.Fatalf("n=%d %s %+v: %v", n, name, shape, err)
				}
				want := referenceSplit(b, n, route)
				if !reflect.DeepEqual(normal(dst), normal(want)) {
					t.Fatalf("n=%d %s %+v: split differs from reference", n, name, shape)
				}
				if !reflect.DeepEqual(b, orig) {
					t.Fatalf("n=%d %s: Split modified its input", n, name)
				}
				for _, p := range dst {
					if err := p.Validate(); err != nil {
						t.Fatalf("n=%d %s: invalid part: %v", n, name, err)
					}
				}
				// Merge the parts back, with and without keys.
				m, err := sp.Merge(Batch{}, b.Keys, dst)
				if err != nil {
					t.Fatalf("n=%d %s: merge: %v", n, name, err)
				}
				if !slices.Equal(m.Vals, b.Vals) || !slices.Equal(m.Lens, b.Lens) {
					t.Fatalf("n=%d %s %+v: merge does not invert split", n, name, shape)
				}
				noKeys := slices.Clone(dst)
				for i := range noKeys {
					noKeys[i].Keys = nil
				}
				m, err = sp.Merge(m, b.Keys, noKeys)
				if err != nil || !slices.Equal(m.Vals, b.Vals) {
					t.Fatalf("n=%d %s: merge without keys: %v", n, name, err)
				}
			}
		}
	}
}

// TestSplitContiguousShares checks that range ownership splits without
// copying.
func TestSplitContiguousShares(t *testing.T) {
	b := Batch{Keys: []uint64{1, 2, 10, 11, 20}, Vals: []float32{1, 2, 3, 4, 5}}
	parts, err := Split(b, 3, Ranges([]uint64{0, 10, 20}))
	if err != nil {
		t.Fatal(err)
	}
	if &parts[1].Keys[0] != &b.Keys[2] || &parts[2].Vals[0] != &b.Vals[4] {
		t.Fatal("contiguous parts were copied")
	}
	// Appending to a part must not overwrite the next part.
	_ = append(parts[0].Keys, 99)
	if b.Keys[2] != 10 {
		t.Fatal("part capacity extends into the next part")
	}
}

func TestSplitAllocs(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	b := randomBatch(r, 10000, 1, false)
	for name, route := range map[string]Router{
		"ranges": Ranges([]uint64{0, 1 << 13, 1 << 14, 1 << 15}),
		"mod":    func(k uint64) int { return int(k % 4) },
	} {
		sp := NewSplitter(4, route)
		dst, _ := sp.Split(nil, b)
		merged, _ := sp.Merge(Batch{}, b.Keys, dst)
		allocs := testing.AllocsPerRun(10, func() {
			dst, _ = sp.Split(dst, b)
			merged, _ = sp.Merge(merged, b.Keys, dst)
		})
		if allocs != 0 {
			t.Errorf("%s: %.0f allocations per warm split and merge", name, allocs)
		}
	}
}

func TestSplitErrors(t *testing.T) {
	b := Batch{Keys: []uint64{1, 2}, Vals: []float32{1, 2}}
	if _, err := Split(b, 2, func(uint64) int { return 2 }); !errors.Is(err, ErrRoute) {
		t.Errorf("out-of-range server: %v", err)
	}
	if _, err := Split(b, 2, func(uint64) int { return -1 }); !errors.Is(err, ErrRoute) {
		t.Errorf("negative server: %v", err)
	}
	if _, err := Split(Batch{Keys: []uint64{1, 2}, Vals: []float32{1}}, 1, func(uint64) int { return 0 }); err == nil {
		t.Error("ragged batch accepted")
	}
	if _, err := Split(Batch{Keys: []uint64{1}, Vals: []float32{1}, Lens: []int32{2}}, 1, func(uint64) int { return 0 }); err == nil {
		t.Error("inconsistent lens accepted")
	}
}

func TestMergeErrors(t *testing.T) {
	route := func(k uint64) int { return int(k % 2) }
	sp := NewSplitter(2, route)
	keys := []uint64{1, 2, 3}
	good := []Batch{{Keys: []uint64{2}, Vals: []float32{2}}, {Keys: []uint64{1, 3}, Vals: []float32{1, 3}}}
	if m, err := sp.Merge(Batch{}, keys, good); err != nil || !slices.Equal(m.Vals, []float32{1, 2, 3}) {
		t.Fatalf("good merge = %v, %v", m.Vals, err)
	}
	for name, parts := range map[string][]Batch{
		"wrong key":    {{Keys: []uint64{4}, Vals: []float32{2}}, good[1]},
		"missing key":  {{Keys: []uint64{}}, good[1]},
		"extra values": {{Keys: []uint64{2}, Vals: []float32{2, 2, 2}}, {Keys: []uint64{1, 3}, Vals: []float32{1, 3, 3}}},
		"ragged":       {good[0], {Vals: []float32{1, 3, 3}}},
		"bad lens":     {{Vals: []float32{2}, Lens: []int32{2}}, good[1]},
		"one part":     {good[0]},
	} {
		if _, err := sp.Merge(Batch{}, keys, parts); err == nil {
			t.Errorf("%s: merge accepted", name)
		}
	}
	// Mixed: lengths from one server, uniform width from the other.
	mixed := []Batch{{Vals: []float32{2, 2}, Lens: []int32{2}}, {Vals: []float32{1, 3}}}
	m, err := sp.Merge(Batch{}, keys, mixed)
	if err != nil || !slices.Equal(m.Lens, []int32{1, 2, 1}) || !slices.Equal(m.Vals, []float32{1, 2, 2, 3}) {
		t.Fatalf("mixed merge = %v %v, %v", m.Vals, m.Lens, err)
	}
}

func TestRanges(t *testing.T) {
	route := Ranges([]uint64{10, 20, 30})
	for k, want := range map[uint64]int{0: 0, 9: 0, 10: 0, 19: 0, 20: 1, 29: 1, 30: 2, 1 << 63: 2} {
		if got := route(k); got != want {
			t.Errorf("route(%d) = %d, want %d", k, got, want)
		}
	}
}

func ExampleSplitter() {
	b := Batch{Keys: []uint64{3, 7, 12, 15}, Vals: []float32{0.5, -1, 2, 4}}
	sp := NewSplitter(2, Ranges([]uint64{0, 10}))
	parts, _ := sp.Split(nil, b)
	for s, p := range parts {
		fmt.Println("server", s, p.Keys, p.Vals)
	}
	// The servers answer a pull for the same keys; Merge restores the
	// request's order.
	answers := []Batch{{Vals: []float32{1, 2}}, {Vals: []float32{3, 4}}}
	pulled, _ := sp.Merge(Batch{}, b.Keys, answers)
	fmt.Println(pulled.Keys, pulled.Vals)
	// Output:
	// server 0 [3 7] [0.5 -1]
	// server 1 [12 15] [2 4]
	// [3 7 12 15] [1 2 3 4]
}

func BenchmarkSplit(b *testing.B) {
	r := rand.New(rand.NewPCG(9, 10))
	batch := Batch{Keys: randomKeys(r, 100_000, 1<<24)}
	batch.Vals = make([]float32, len(batch.Keys))
	for name, route := range map[string]Router{
		"ranges": Ranges([]uint64{0, 1 << 22, 1 << 23, 3 << 22}),
		"mod":    func(k uint64) int { return int(k % 4) },
	} {
		b.Run(name, func(b *testing.B) {
			sp := NewSplitter(4, route)
			var dst []Batch
			b.ReportAllocs()
			for b.Loop() {
				dst, _ = sp.Split(dst, batch)
			}
			b.ReportMetric(float64(len(batch.Keys))*float64(b.N)/b.Elapsed().Seconds()/1e6, "Mkeys/s")
		})
	}
}

func BenchmarkDecodeKeys(b *testing.B) {
	keys := randomKeys(rand.New(rand.NewPCG(11, 12)), 100_000, 1<<24)
	enc, _ := AppendKeys(nil, keys)
	dst := make([]uint64, len(keys))
	b.SetBytes(int64(8 * len(keys)))
	for b.Loop() {
		dst, _ = DecodeKeys(dst, enc, len(keys))
	}
	b.ReportMetric(float64(len(keys))*float64(b.N)/b.Elapsed().Seconds()/1e6, "Mkeys/s")
}

func BenchmarkAppendKeys(b *testing.B) {
	keys := randomKeys(rand.New(rand.NewPCG(11, 12)), 100_000, 1<<24)
	var buf []byte
	b.SetBytes(int64(8 * len(keys)))
	for b.Loop() {
		buf, _ = AppendKeys(buf[:0], keys)
	}
	b.ReportMetric(float64(len(keys))*float64(b.N)/b.Elapsed().Seconds()/1e6, "Mkeys/s")
}
