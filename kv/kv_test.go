package kv

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		b    Batch
		ok   bool
	}{
		{"empty", Batch{}, true},
		{"one value each", Batch{Keys: []uint64{1, 2}, Vals: []float32{1, 2}}, true},
		{"two values each", Batch{Keys: []uint64{1, 2}, Vals: []float32{1, 2, 3, 4}}, true},
		{"no values", Batch{Keys: []uint64{1, 2}}, true},
		{"lens", Batch{Keys: []uint64{1, 5}, Vals: []float32{1, 2, 3}, Lens: []int32{1, 2}}, true},
		{"zero length", Batch{Keys: []uint64{1, 5}, Vals: []float32{1}, Lens: []int32{0, 1}}, true},
		{"unsorted", Batch{Keys: []uint64{2, 1}, Vals: []float32{1, 2}}, false},
		{"duplicate", Batch{Keys: []uint64{2, 2}, Vals: []float32{1, 2}}, false},
		{"late unsorted", Batch{Keys: []uint64{1, 2, 3, 9, 4}}, false},
		{"late duplicate", Batch{Keys: []uint64{1, 2, 3, 3}}, false},
		{"ragged", Batch{Keys: []uint64{1, 2}, Vals: []float32{1, 2, 3}}, false},
		{"values without keys", Batch{Vals: []float32{1}}, false},
		{"lens count", Batch{Keys: []uint64{1, 2}, Vals: []float32{1, 2}, Lens: []int32{2}}, false},
		{"lens sum", Batch{Keys: []uint64{1, 2}, Vals: []float32{1, 2}, Lens: []int32{1, 2}}, false},
		{"negative len", Batch{Keys: []uint64{1, 2}, Vals: []float32{1, 2}, Lens: []int32{3, -1}}, false},
	} {
		err := tc.b.Validate()
		if (err == nil) != tc.ok {
			t.Errorf("%s: Validate = %v, want ok=%v", tc.name, err, tc.ok)
		}
	}
}

// TestValidateNamesKey checks that the error names the first key out of
// order and the one before it.
func TestValidateNamesKey(t *testing.T) {
	err := Batch{Keys: []uint64{1, 5, 7, 6, 2}}.Validate()
	if want := "kv: key 3 (6) is not greater than key 2 (7)"; err == nil || err.Error() != want {
		t.Errorf("Validate = %v, want %q", err, want)
	}
}

// TestKeysEncoding checks encodings worked out by hand.
func TestKeysEncoding(t *testing.T) {
	for _, tc := range []struct {
		keys []uint64
		want []byte
	}{
		{nil, nil},
		{[]uint64{0}, []byte{0}},
		{[]uint64{3, 7, 12}, []byte{3, 3, 4}},
		{[]uint64{5, 6, 7, 8}, []byte{5, 0, 0, 0}},
		{[]uint64{300}, []byte{0xac, 0x02}},               // 300 = 0b10_0101100
		{[]uint64{1, 1 + 1 + 128}, []byte{1, 0x80, 0x01}}, // gap−1 = 128
		{[]uint64{0, 128}, []byte{0, 0x7f}},
		{[]uint64{0, 1 + 0x3fff}, []byte{0, 0xff, 0x7f}},
		{[]uint64{0, 1 + 0x4000}, []byte{0, 0x80, 0x80, 0x01}},
		{[]uint64{0x4000, 0x4001}, []byte{0x80, 0x80, 0x01, 0}},
		{[]uint64{math.MaxUint64}, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}},
		{[]uint64{0, math.MaxUint64}, []byte{0, 0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}},
	} {
		got, err := AppendKeys(nil, tc.keys)
		if err != nil || !bytes.Equal(got, tc.want) {
			t.Errorf("AppendKeys(%v) = %x, %v; want %x", tc.keys, got, err, tc.want)
		}
		if n, ok := KeysSize(tc.keys); !ok || n != len(tc.want) {
			t.Errorf("KeysSize(%v) = %d, %v; want %d", tc.keys, n, ok, len(tc.want))
		}
		back, err := DecodeKeys(nil, tc.want, len(tc.keys))
		if err != nil || !slices.Equal(back, tc.keys) {
			t.Errorf("DecodeKeys(%x) = %v, %v; want %v", tc.want, back, err, tc.keys)
		}
	}
}

func TestAppendKeysOrder(t *testing.T) {
	dst := []byte{9}
	got, err := AppendKeys(dst, []uint64{1, 4, 4})
	if !errors.Is(err, ErrKeysOrder) || !bytes.Equal(got, []byte{9}) {
		t.Fatalf("AppendKeys of a duplicate = %x, %v", got, err)
	}
	if _, ok := KeysSize([]uint64{5, 3}); ok {
		t.Fatal("KeysSize accepted decreasing keys")
	}
}

func TestDecodeKeysErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		src  []byte
		n    int
	}{
		{"more keys than bytes", []byte{1, 2}, 3},
		{"negative count", []byte{1}, -1},
		{"truncated", []byte{0x80}, 1},
		{"overlong", []byte{0x80, 0x00}, 1},
		{"eleven bytes", []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, 1},
		{"tenth byte too big", []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02}, 1},
		{"sum overflows", []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0}, 2},
		{"gap overflows", []byte{1, 0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, 2},
		{"trailing", []byte{1, 2, 3}, 2},
	} {
		got, err := DecodeKeys(nil, tc.src, tc.n)
		if !errors.Is(err, ErrKeysEncoding) || len(got) != 0 {
			t.Errorf("%s: DecodeKeys = %v, %v; want ErrKeysEncoding", tc.name, got, err)
		}
	}
}

// randomKeys returns n distinct sorted keys below space.
func randomKeys(r *rand.Rand, n int, space uint64) []uint64 {
	seen := make(map[uint64]bool, n)
	keys := make([]uint64, 0, n)
	for len(keys) < n {
		k := r.Uint64N(space)
		if !seen[k] {
			seen[k] = true
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}

func TestKeysRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, space := range []uint64{1 << 10, 1 << 14, 1 << 17, 1 << 20, 1 << 40, math.MaxUint64} {
		keys := randomKeys(r, 1000, space)
		enc, err := AppendKeys(nil, keys)
		if err != nil {
			t.Fatal(err)
		}
		dst := make([]uint64, 3, 2000)
		got, err := DecodeKeys(dst, enc, len(keys))
		if err != nil || !slices.Equal(got, keys) {
			t.Fatalf("space %d: round trip failed: %v", space, err)
		}
		if &got[0] != &dst[:1][0] {
			t.Errorf("DecodeKeys did not reuse dst")
		}
	}
}

// TestKeysSizeSparse documents the size quoted in the package comment:
// 100k random keys of a 2^20 space take about one byte each.
func TestKeysSizeSparse(t *testing.T) {
	keys := randomKeys(rand.New(rand.NewPCG(3, 4)), 100_000, 1<<20)
	n, _ := KeysSize(keys)
	if per := float64(n) / float64(len(keys)); per > 1.1 {
		t.Errorf("%.2f bytes per key", per)
	}
}

func FuzzDecodeKeys(f *testing.F) {
	f.Add([]byte{3, 3, 4}, 3)
	f.Add([]byte{0xac, 0x02}, 1)
	f.Add([]byte{0x80, 0x00}, 1)
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0}, 2)
	f.Add([]byte{}, 0)
	f.Fuzz(func(t *testing.T, src []byte, n int) {
		keys, err := DecodeKeys(nil, src, n)
		if err != nil {
			if !errors.Is(err, ErrKeysEncoding) {
				t.Fatalf("error does not wrap ErrKeysEncoding: %v", err)
			}
			return
		}
		if len(keys) != n {
			t.Fatalf("%d keys for n = %d", len(keys), n)
		}
		// Valid input is canonical: it re-encodes to itself.
		enc, err := AppendKeys(nil, keys)
		if err != nil || !bytes.Equal(enc, src) {
			t.Fatalf("re-encoding gives %x, %v; want %x", enc, err, src)
		}
	})
}
