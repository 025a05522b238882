package transport

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
	"unsafe"

	"colo/kv"
)

// equalMessages compares messages by content, empty and nil alike.
func equalMessages(a, b *Message) bool {
	return a.Header == b.Header && bytes.Equal(a.Body, b.Body) && slices.Equal(a.KV.Keys, b.KV.Keys) &&
		slices.EqualFunc(a.KV.Vals, b.KV.Vals, sameBits) && slices.Equal(a.KV.Lens, b.KV.Lens)
}

// sameBits compares floats bit for bit, so that NaN payloads compare
// equal to themselves.
func sameBits(x, y float32) bool { return math.Float32bits(x) == math.Float32bits(y) }

// TestFrameGolden checks the bytes of a small frame worked out by hand
// from the layout in frame.go.
func TestFrameGolden(t *testing.T) {
	m := &Message{
		Header: Header{Type: TypeControl, Flags: FlagRequest | FlagPull, Cmd: 0x0203, App: 9, Customer: 10, ID: 0x0102030405060708},
		Body:   []byte("hi"),
		KV:     kv.Batch{Keys: []uint64{3, 7, 12}, Vals: []float32{1}},
	}
	want := []byte{
		0x41, 0, 0, 0, // 69 − 4 bytes follow
		0xc6, 1, 1, 1, // magic, version, control, gap-coded keys
		5, 0, 3, 2, // flags, command
		1, 0, 0, 0, 2, 0, 0, 0, // sender 1, receiver 2
		9, 0, 0, 0, 10, 0, 0, 0, // app, customer
		8, 7, 6, 5, 4, 3, 2, 1, // request id
		2, 0, 0, 0, 3, 0, 0, 0, 3, 0, 0, 0, // body bytes, keys, key bytes
		1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, // values, lengths, reserved
		'h', 'i',
		3, 3, 4, // 3, 7−3−1, 12−7−1
		0, 0, 0x80, 0x3f, // 1.0f
	}
	got, err := AppendFrame(nil, m, 1, 2, FrameOptions{})
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("frame\n got %x, %v\nwant %x", got, err, want)
	}
	if n := FrameSize(m, FrameOptions{}); n != len(want) {
		t.Fatalf("FrameSize %d, want %d", n, len(want))
	}
	back, err := DecodeFrame(want, 0)
	m.Sender, m.Receiver = 1, 2
	if err != nil || !equalMessages(back, m) {
		t.Fatalf("decoded %v, %v; want %v", back, err, m)
	}
	// Raw keys: 24 bytes of keys instead of 3.
	raw, _ := AppendFrame(nil, m, 1, 2, FrameOptions{RawKeys: true})
	if len(raw) != len(want)+21 || raw[7] != 0 {
		t.Fatalf("raw-key frame of %d bytes, encoding %d", len(raw), raw[7])
	}
}

// randomMessage returns a message exercising every segment.
func randomMessage(r *rand.Rand) *Message {
	m := &Message{Header: Header{Type: MsgType(r.IntN(3)), Flags: Flags(r.Uint32()), Cmd: uint16(r.Uint32()), App: r.Uint32(), Customer: r.Uint32(), ID: r.Uint64()}}
	if r.IntN(2) == 0 {
		m.Body = make([]byte, r.IntN(100))
		for i := range m.Body {
			m.Body[i] = byte(r.Uint32())
		}
	}
	n := r.IntN(2000)
	m.KV.Keys = make([]uint64, n)
	k := uint64(0)
	for i := range m.KV.Keys {
		k += 1 + r.Uint64N(1<<uint(r.IntN(40)))
		m.KV.Keys[i] = k
	}
	if r.IntN(4) == 0 && n > 1 {
		m.KV.Keys[0], m.KV.Keys[n-1] = m.KV.Keys[n-1], m.KV.Keys[0] // unsorted: raw
	}
	m.KV.Vals = make([]float32, r.IntN(3)*n)
	for i := range m.KV.Vals {
		m.KV.Vals[i] = r.Float32()
	}
	if r.IntN(3) == 0 {
		m.KV.Lens = make([]int32, n)
		for i := range m.KV.Lens {
			m.KV.Lens[i] = int32(r.Uint32())
		}
	}
	return m
}

func TestFrameStream(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, o := range []FrameOptions{{}, {RawKeys: true}} {
		var stream []byte
		var msgs []*Message
		for range 50 {
			m := randomMessage(r)
			from, to := NodeID(r.Uint32()), NodeID(r.Uint32())
			enc := NewEncoder(o)
			bufs, size, err := enc.Encode(m, from, to)
			if err != nil {
				t.Fatal(err)
			}
			if size != FrameSize(m, o) {
				t.Fatalf("Encode size %d, FrameSize %d", size, FrameSize(m, o))
			}
			before := len(stream)
			for _, b := range bufs {
				stream = append(stream, b...)
			}
			if len(stream)-before != size {
				t.Fatalf("buffers hold %d bytes, size %d", len(stream)-before, size)
			}
			m.Sender, m.Receiver = from, to
			msgs = append(msgs, m)
		}
		var pool Pool
		for _, withPool := range []bool{false, true} {
			d := NewDecoder(bytes.NewReader(stream), 0)
			if withPool {
				d.SetPool(&pool)
			}
			for i, want := range msgs {
				got := new(Message)
				if _, err := d.Decode(got); err != nil {
					t.Fatalf("frame %d: %v", i, err)
				}
				if !equalMessages(got, want) {
					t.Fatalf("frame %d: got %v, want %v", i, got, want)
				}
				got.Release()
			}
			if _, err := d.Decode(new(Message)); err != io.EOF {
				t.Fatalf("after the last frame: %v, want io.EOF", err)
			}
		}
	}
}

// TestEncoderNoCopy checks that values and raw keys go out as views of the
// message's arrays.
func TestEncoderNoCopy(t *testing.T) {
	if !littleEndianHost() {
		t.Skip("big-endian hosts convert")
	}
	m := &Message{KV: kv.Batch{Keys: []uint64{5, 1}, Vals: []float32{1, 2}, Lens: []int32{1, 1}}}
	bufs, _, err := NewEncoder(FrameOptions{}).Encode(m, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(bufs) != 4 {
		t.Fatalf("%d buffers, want header, keys, values, lengths", len(bufs))
	}
	for i, p := range []unsafe.Pointer{unsafe.Pointer(&m.KV.Keys[0]), unsafe.Pointer(&m.KV.Vals[0]), unsafe.Pointer(&m.KV.Lens[0])} {
		if unsafe.Pointer(&bufs[i+1][0]) != p {
			t.Errorf("segment %d was copied", i)
		}
	}
}

func TestDecodeRejects(t *testing.T) {
	good, err := AppendFrame(nil, &Message{Body: []byte{1}, KV: kv.Batch{Keys: []uint64{3, 7}, Vals: []float32{1, 2}}}, 1, 2, FrameOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := DecodeFrame(good, 0); err != nil {
		t.Fatal(err)
	}
	mod := func(f func(b []byte) []byte) []byte { return f(slices.Clone(good)) }
	put32 := func(off int, v uint32) []byte {
		return mod(func(b []byte) []byte { binary.LittleEndian.PutUint32(b[off:], v); return b })
	}
	for _, tc := range []struct {
		name  string
		frame []byte
		want  error
	}{
		{"magic", mod(func(b []byte) []byte { b[4] = 'G'; return b }), ErrBadFrame},
		{"version", mod(func(b []byte) []byte { b[5] = 2; return b }), ErrBadFrame},
		{"key encoding", mod(func(b []byte) []byte { b[7] = 2; return b }), ErrBadFrame},
		{"raw keys of wrong size", mod(func(b []byte) []byte { b[7] = 0; return b }), ErrBadFrame},
		{"reserved", put32(56, 1), ErrBadFrame},
		{"body too long", put32(36, 2), ErrBadFrame},
		{"too many keys", put32(40, 3), ErrBadFrame},
		{"no gap-coded keys", put32(40, 0), ErrBadFrame},
		{"values overflow", put32(48, 1<<31), ErrBadFrame},
		{"bad varint", mod(func(b []byte) []byte { b[61] = 0x80; return b }), ErrBadFrame},
		{"shorter than a header", put32(0, 10), ErrBadFrame},
		{"truncated", good[:len(good)-1], io.ErrUnexpectedEOF},
		{"truncated header", good[:20], io.ErrUnexpectedEOF},
		{"trailing byte", append(slices.Clone(good), 0), ErrBadFrame},
		{"empty", nil, io.EOF},
		{"over the limit", put32(0, 1<<20), ErrFrameTooLarge},
	} {
		_, err := DecodeFrame(tc.frame, 1<<16)
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
}

// hugeReader announces a frame of 2 GiB and then yields zeros forever,
// counting what was read.
type hugeReader struct{ n int }

func (r *hugeReader) Read(p []byte) (int, error) {
	for i := range p {
		if r.n+i < 4 {
			p[i] = []byte{0xfc, 0xff, 0xff, 0x7f}[r.n+i]
		} else {
			p[i] = 0
		}
	}
	r.n += len(p)
	return len(p), nil
}

// TestOversizedNotAllocated checks that a frame over the limit is refused
// from its length prefix: nothing past the prefix is read and nothing is
// allocated for the frame.
func TestOversizedNotAllocated(t *testing.T) {
	r := &hugeReader{}
	d := NewDecoder(r, 1<<20)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := d.Decode(new(Message))
	runtime.ReadMemStats(&after)
	if !errors.Is(err, ErrFrameTooLarge) {
		t.Fatalf("Decode: %v, want ErrFrameTooLarge", err)
	}
	if r.n != PrefixSize {
		t.Errorf("read %d bytes, want only the %d-byte prefix", r.n, PrefixSize)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 64<<10 {
		t.Errorf("allocated %d bytes for a refused frame", grew)
	}
	allocs := testing.AllocsPerRun(100, func() {
		NewDecoder(&hugeReader{}, 1<<20).Decode(&Message{})
	})
	if allocs > 16 { // the decoder, the error; more under the race detector
		t.Errorf("%.0f allocations to refuse a frame", allocs)
	}
}

func TestFrameLimit(t *testing.T) {
	o := FrameOptions{MaxFrame: 1000}
	fits := &Message{KV: kv.Batch{Vals: make([]float32, (1000-PrefixSize-HeaderSize)/4)}}
	over := &Message{KV: kv.Batch{Vals: make([]float32, (1000-PrefixSize-HeaderSize)/4+1)}}
	enc := NewEncoder(o)
	if _, n, err := enc.Encode(fits, 0, 0); err != nil || n != 1000 {
		t.Fatalf("frame at the limit: %d, %v", n, err)
	}
	if _, _, err := enc.Encode(over, 0, 0); !errors.Is(err, ErrFrameTooLarge) {
		t.Fatalf("frame over the limit: %v", err)
	}
	// Refused before gap-coding a million keys.
	many := &Message{KV: kv.Batch{Keys: make([]uint64, 1e6)}}
	if _, _, err := enc.Encode(many, 0, 0); !errors.Is(err, ErrFrameTooLarge) {
		t.Fatalf("many keys: %v", err)
	}
	fb, _ := AppendFrame(nil, fits, 0, 0, FrameOptions{})
	if _, err := DecodeFrame(fb, 1000); err != nil {
		t.Fatalf("decode at the limit: %v", err)
	}
	if _, err := DecodeFrame(fb, 999); !errors.Is(err, ErrFrameTooLarge) {
		t.Fatalf("decode over the limit: %v", err)
	}
	for _, bad := range []int{1, MinMaxFrame - 1, MaxMaxFrame + 1, -1} {
		if err := (FrameOptions{MaxFrame: bad}).Validate(); err == nil {
			t.Errorf("MaxFrame %d accepted", bad)
		}
	}
}

func FuzzDecodeFrame(f *testing.F) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 4 {
		b, _ := AppendFrame(nil, randomMessage(r), 1, 2, FrameOptions{})
		if len(b) < 4096 {
			f.Add(b)
		}
	}
	small := &Message{Header: Header{ID: 7}, Body: []byte("x"), KV: kv.Batch{Keys: []uint64{1, 2, 300}, Vals: []float32{1, 2, 3}, Lens: []int32{1, 1, 1}}}
	for _, o := range []FrameOptions{{}, {RawKeys: true}} {
		b, _ := AppendFrame(nil, small, 3, 4, o)
		f.Add(b)
	}
	empty, _ := AppendFrame(nil, &Message{}, 0, 0, FrameOptions{})
	f.Add(empty)
	f.Add([]byte{0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := DecodeFrame(data, 1<<20)
		if err != nil {
			if !errors.Is(err, ErrBadFrame) && !errors.Is(err, ErrFrameTooLarge) && err != io.EOF && err != io.ErrUnexpectedEOF {
				t.Fatalf("unclassified error: %v", err)
			}
			return
		}
		// A frame that decodes re-encodes to a frame that decodes to the
		// same message, and to the same bytes when the encoder would have
		// chosen the same key encoding.
		raw := data[7] == keysRaw
		again, err := AppendFrame(nil, m, m.Sender, m.Receiver, FrameOptions{RawKeys: raw, MaxFrame: 1 << 20})
		if err != nil {
			t.Fatalf("re-encoding: %v", err)
		}
		m2, err := DecodeFrame(again, 1<<20)
		if err != nil || !equalMessages(m, m2) {
			t.Fatalf("re-encoded frame decodes to %v, %v; want %v", m2, err, m)
		}
		if size, _ := kv.KeysSize(m.KV.Keys); (raw || size < 8*len(m.KV.Keys)) && !bytes.Equal(again, data) {
			t.Fatalf("re-encoding differs:\n got %x\nwant %x", again, data)
		}
	})
}
