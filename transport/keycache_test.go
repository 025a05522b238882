package transport

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"colo/kv"
)

// keyLists returns n sorted key lists of random lengths in [lo, hi), and
// for each a twin that differs in one unsampled key only, so that the
// fingerprints agree and only the full comparison tells them apart.
func keyLists(r *rand.Rand, n, lo, hi int) [][]uint64 {
	var out [][]uint64
	for range n {
		keys := make([]uint64, lo+r.IntN(hi-lo))
		k := uint64(r.IntN(100))
		for i := range keys {
			k += 1 + r.Uint64N(1<<uint(r.IntN(20)))
			keys[i] = k
		}
		twin := slices.Clone(keys)
		i := 1 + len(keys)/7/2 // between the first two samples
		twin[i] = (twin[i-1] + twin[i]) / 2
		if twin[i] == twin[i-1] || slices.Equal(twin, keys) {
			twin[i] = keys[i] // no room: a repeat instead
		}
		out = append(out, keys, twin)
	}
	return out
}

// keyCacheRun encodes a random sequence of messages over lists (with
// repeats) through one Encoder into a stream, dropping some frames as a
// failed send does (never written, Sent not called), and decodes the
// stream; it checks every message against what was sent, and again at
// the end, when the slots have been replaced many times. It returns the
// frames that stored and named slots and the frames that emptied slots.
func keyCacheRun(t *testing.T, seed uint64, limit int, raw bool, lists [][]uint64, frames int) (stores, hits, evictions, ascending int) {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 9))
	o := FrameOptions{RawKeys: raw, KeyCache: limit}
	enc := NewEncoder(o)
	var stream bytes.Buffer
	var sent []*Message
	for i := range frames {
		// A skewed choice: a few lists repeat often, the rest rarely.
		keys := lists[min(r.IntN(len(lists)), r.IntN(len(lists)))]
		m := &Message{Header: Header{ID: uint64(i)}, KV: kv.Batch{Keys: keys, Vals: make([]float32, len(keys))}}
		for j := range m.KV.Vals {
			m.KV.Vals[j] = float32(i)
		}
		bufs, size, err := enc.Encode(m, 1, 2)
		if err != nil {
			t.Fatal(err)
		}
		if want := FrameSize(m, o); size != want {
			t.Fatalf("frame %d: size %d, FrameSize %d", i, size, want)
		}
		hdr := bufs[0]
		switch hdr[7] {
		case keysSlot:
			hits++
		case keysStoreRaw, keysStoreDelta:
			stores++
			if binary.LittleEndian.Uint16(hdr[58:]) != 0 {
				evictions++
			}
		}
		if r.IntN(10) == 0 {
			continue // not sent
		}
		for _, b := range bufs {
			stream.Write(b)
		}
		enc.Sent()
		sent = append(sent, m)
	}
	dec := NewDecoder(&stream, 0)
	dec.SetKeyCache(limit)
	pool := new(Pool)
	dec.SetPool(pool)
	var got []*Message
	for i, want := range sent {
		m := new(Message)
		size, err := dec.Decode(m)
		if err != nil {
			t.Fatalf("frame %d of %d: %v", i, len(sent), err)
		}
		if w := FrameSize(want, o); size != w {
			t.Fatalf("frame %d: decoded size %d, FrameSize %d", i, size, w)
		}
		want.Sender, want.Receiver = 1, 2
		if !equalMessages(m, want) {
			t.Fatalf("frame %d: decoded %v, sent %v", i, m, want)
		}
		if m.KeysAscending() {
			ascending++
			if !slices.IsSorted(m.KV.Keys) || len(slices.Compact(slices.Clone(m.KV.Keys))) != len(m.KV.Keys) {
				t.Fatalf("frame %d: keys not increasing, but KeysAscending", i)
			}
		}
		if dec.keys.total > limit {
			t.Fatalf("frame %d: receiver holds %d bytes of keys, limit %d", i, dec.keys.total, limit)
		}
		if r.IntN(3) == 0 {
			m.Release() // recycles the values, never a slot's keys
		} else {
			got = append(got, m)
		}
	}
	if _, err := dec.Decode(new(Message)); err != io.EOF {
		t.Fatalf("after the last frame: %v", err)
	}
	for _, m := range got {
		if !slices.Equal(m.KV.Keys, sentKeys(sent, m.ID)) {
			t.Fatalf("message %d changed after later frames", m.ID)
		}
	}
	return stores, hits, evictions, ascending
}

// sentKeys returns the keys of the sent message with the given id.
func sentKeys(sent []*Message, id uint64) []uint64 {
	for _, m := range sent {
		if m.ID == id {
			return m.KV.Keys
		}
	}
	return nil
}

// TestKeyCacheRoundTrip: on random sequences of key lists with repeats,
// near-twins, dropped frames and a byte limit that forces evictions, the
// receiver's keys are always the sender's, the sizes are FrameSize's,
// and the receiver stays within its limit.
func TestKeyCacheRoundTrip(t *testing.T) {
	for seed := range uint64(6) {
		r := rand.New(rand.NewPCG(seed, 1))
		lists := keyLists(r, 12, MinCachedKeys-50, 3000)
		// Short lists too, never cached, and lists out of order, never
		// KeysAscending.
		lists = append(lists, []uint64{1, 2, 3}, nil)
		for _, l := range lists[:4] {
			lists = append(lists, slices.Concat(l[len(l)/2:], l[:len(l)/2]))
		}
		for _, raw := range []bool{false, true} {
			// Room for about six of the longest lists: evictions by
			// bytes, and by slots among 26 lists.
			limit := 6 * 8 * 3000
			stores, hits, evictions, ascending := keyCacheRun(t, seed, limit, raw, lists, 600)
			if stores == 0 || hits == 0 || evictions == 0 || ascending == 0 {
				t.Errorf("seed %d raw %v: %d stores, %d hits, %d with evictions, %d known ascending: the run did not exercise the cache", seed, raw, stores, hits, evictions, ascending)
			}
		}
	}
}

// TestKeyCacheOneSlot: a limit that holds one list at most evicts the
// other on every store, and a list over the limit is never stored.
func TestKeyCacheOneSlot(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	lists := keyLists(r, 3, 1000, 1001)
	lists = append(lists, make([]uint64, 2000)) // over the limit
	for i := range lists[len(lists)-1] {
		lists[len(lists)-1][i] = uint64(i)
	}
	stores, hits, evictions, _ := keyCacheRun(t, 5, 8*1500, true, lists, 300)
	if stores == 0 || hits == 0 || evictions == 0 {
		t.Errorf("%d stores, %d hits, %d with evictions", stores, hits, evictions)
	}
}

// TestKeyCacheRepeats: a list sent again and again is sent once, stored
// the second time and named from the third on, in frames smaller by its
// keys; a list that never repeats is never stored.
func TestKeyCacheRepeats(t *testing.T) {
	keys := make([]uint64, 1000)
	for i := range keys {
		keys[i] = uint64(i) * 3
	}
	o := FrameOptions{RawKeys: true, KeyCache: DefaultKeyCache}
	enc := NewEncoder(o)
	m := &Message{KV: kv.Batch{Keys: keys, Vals: make([]float32, 1000)}}
	for i, want := range []byte{keysRaw, keysStoreRaw, keysSlot, keysSlot} {
		bufs, size, _ := enc.Encode(m, 0, 1)
		wire := 0
		for _, b := range bufs {
			wire += len(b)
		}
		if bufs[0][7] != want {
			t.Fatalf("send %d: key encoding %d, want %d", i, bufs[0][7], want)
		}
		if want == keysSlot && wire != size-8000 || want != keysSlot && wire != size {
			t.Fatalf("send %d: %d bytes on the wire, size %d", i, wire, size)
		}
		enc.Sent()
	}
	enc.ResetKeys()
	if bufs, _, _ := enc.Encode(m, 0, 1); bufs[0][7] != keysRaw {
		t.Fatalf("after ResetKeys: key encoding %d", bufs[0][7])
	}
	// Never repeating: never stored.
	enc = NewEncoder(o)
	for i := range 100 {
		ks := make([]uint64, 500)
		for j := range ks {
			ks[j] = uint64(i*1000 + j)
		}
		bufs, _, _ := enc.Encode(&Message{KV: kv.Batch{Keys: ks}}, 0, 1)
		if bufs[0][7] != keysRaw {
			t.Fatalf("list %d: key encoding %d", i, bufs[0][7])
		}
		enc.Sent()
	}
}

// slotFrame returns a frame of n keys with the given key encoding, slot
// and mask bytes (raw keys 0..n-1 for the stores).
func slotFrame(enc byte, slot byte, mask uint16, n int) []byte {
	keys := make([]uint64, n)
	for i := range keys {
		keys[i] = uint64(i)
	}
	b, _ := AppendFrame(nil, &Message{KV: kv.Batch{Keys: keys}}, 1, 2, FrameOptions{RawKeys: true})
	if enc == keysSlot {
		b = b[:PrefixSize+HeaderSize]
		binary.LittleEndian.PutUint32(b, HeaderSize)
		binary.LittleEndian.PutUint32(b[44:], 0)
	}
	b[7], b[56] = enc, slot
	binary.LittleEndian.PutUint16(b[58:], mask)
	return b
}

// TestKeyCacheBadFrames: frames that misuse key slots are refused with
// ErrBadFrame and a message naming the slot.
func TestKeyCacheBadFrames(t *testing.T) {
	store := slotFrame(keysStoreRaw, 3, 0, 300)
	for _, tc := range []struct {
		name   string
		limit  int
		stream [][]byte
		want   string
	}{
		{"empty slot", DefaultKeyCache, [][]byte{slotFrame(keysSlot, 3, 0, 300)}, "key slot 3, which is empty"},
		{"other slot", DefaultKeyCache, [][]byte{store, slotFrame(keysSlot, 4, 0, 300)}, "key slot 4, which is empty"},
		{"count", DefaultKeyCache, [][]byte{store, slotFrame(keysSlot, 3, 0, 299)}, "299 keys, key slot 3 holds 300"},
		{"emptied", DefaultKeyCache, [][]byte{store, slotFrame(keysStoreRaw, 5, 1<<3, 300), slotFrame(keysSlot, 3, 0, 300)}, "key slot 3, which is empty"},
		{"out of range", DefaultKeyCache, [][]byte{slotFrame(keysStoreRaw, KeySlots, 0, 300)}, "key slot 16 out of range"},
		{"off", 0, [][]byte{store}, "key slot 3, but key caching is off"},
		{"off ref", 0, [][]byte{slotFrame(keysSlot, 0, 0, 300)}, "key slot 0, but key caching is off"},
		{"over limit", 8 * 500, [][]byte{store, slotFrame(keysStoreRaw, 4, 0, 300)}, "to 4800 bytes, limit 4000"},
		{"mask on a reference", DefaultKeyCache, [][]byte{store, slotFrame(keysSlot, 3, 1, 300)}, "empties slots"},
		{"unknown encoding", DefaultKeyCache, [][]byte{slotFrame(5, 0, 0, 300)}, "unknown key encoding 5"},
		{"reserved", DefaultKeyCache, [][]byte{slotFrame(keysRaw, 1, 0, 300)}, "reserved field"},
	} {
		dec := NewDecoder(bytes.NewReader(slices.Concat(tc.stream...)), 0)
		dec.SetKeyCache(tc.limit)
		var err error
		for range tc.stream {
			if _, err = dec.Decode(new(Message)); err != nil {
				break
			}
		}
		if !errors.Is(err, ErrBadFrame) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want ErrBadFrame with %q", tc.name, err, tc.want)
		}
	}
	// Replacing a slot within the limit is fine: its old keys go.
	dec := NewDecoder(bytes.NewReader(slices.Concat(store, slotFrame(keysStoreRaw, 3, 0, 500))), 0)
	dec.SetKeyCache(8 * 500)
	for range 2 {
		if _, err := dec.Decode(new(Message)); err != nil {
			t.Fatal(err)
		}
	}
}

// FuzzDecodeKeySlots decodes a stream of frames with key caching under
// a small limit: any bytes give frames or a classified error, never a
// panic, and the slots never hold more than the limit.
func FuzzDecodeKeySlots(f *testing.F) {
	r := rand.New(rand.NewPCG(8, 8))
	lists := keyLists(r, 2, MinCachedKeys, MinCachedKeys+20)
	enc := NewEncoder(FrameOptions{KeyCache: 1 << 16})
	var stream []byte
	for i := range 8 {
		m := &Message{KV: kv.Batch{Keys: lists[i%2], Vals: []float32{1}}}
		bufs, _, _ := enc.Encode(m, 1, 2)
		for _, b := range bufs {
			stream = append(stream, b...)
		}
		enc.Sent()
	}
	f.Add(stream)
	f.Add(slices.Concat(slotFrame(keysStoreRaw, 3, 0, 300), slotFrame(keysSlot, 3, 0, 300)))
	f.Add(slotFrame(keysStoreDelta, 15, 0xffff, 300))
	f.Fuzz(func(t *testing.T, data []byte) {
		const limit = 1 << 16
		dec := NewDecoder(bytes.NewReader(data), 1<<20)
		dec.SetKeyCache(limit)
		for {
			m := new(Message)
			_, err := dec.Decode(m)
			if dec.keys.total > limit {
				t.Fatalf("slots hold %d bytes, limit %d", dec.keys.total, limit)
			}
			if err != nil {
				if !errors.Is(err, ErrBadFrame) && !errors.Is(err, ErrFrameTooLarge) && err != io.EOF && err != io.ErrUnexpectedEOF {
					t.Fatalf("unclassified error: %v", err)
				}
				return
			}
		}
	})
}

// BenchmarkEncodeKeys measures the Encoder's cost per frame of 100,000
// raw keys and their values, without and with key caching, for a list
// that repeats (named from the third frame on) and for lists that never
// do (what caching costs traffic it cannot help: a fingerprint).
func BenchmarkEncodeKeys(b *testing.B) {
	const n = 100_000
	lists := make([][]uint64, 64)
	for i := range lists {
		lists[i] = make([]uint64, n)
		for j := range lists[i] {
			lists[i][j] = uint64(j*97 + i)
		}
	}
	vals := make([]float32, n)
	for _, tc := range []struct {
		name   string
		cache  int
		repeat bool
	}{
		{"repeat/off", 0, true},
		{"repeat/on", DefaultKeyCache, true},
		{"fresh/off", 0, false},
		{"fresh/on", DefaultKeyCache, false},
	} {
		b.Run(tc.name, func(b *testing.B) {
			enc := NewEncoder(FrameOptions{RawKeys: true, KeyCache: tc.cache})
			wire := 0
			for i := range b.N {
				keys := lists[0]
				if !tc.repeat {
					keys = lists[i%len(lists)]
					keys[n/3] = uint64(i) // a new list every time
				}
				bufs, _, err := enc.Encode(&Message{KV: kv.Batch{Keys: keys, Vals: vals}}, 0, 1)
				if err != nil {
					b.Fatal(err)
				}
				for _, x := range bufs {
					wire += len(x)
				}
				enc.Sent()
			}
			b.ReportMetric(float64(wire)/float64(b.N), "wire-B/op")
		})
	}
}
