package transport

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"unsafe"

	"colo/kv"
)

// Frame layout, all integers little-endian:
//
//	offset size field
//	0      4    length of the rest of the frame (frame size − 4)
//	4      1    magic 0xC6
//	5      1    version 1
//	6      1    message type
//	7      1    key encoding: 0 raw uint64, 1 gap varints (kv.AppendKeys)
//	8      2    flags
//	10     2    command
//	12     4    sender
//	16     4    receiver
//	20     4    app
//	24     4    customer
//	28     8    request id
//	36     4    body bytes
//	40     4    number of keys
//	44     4    key bytes
//	48     4    number of values (float32)
//	52     4    number of lengths (int32)
//	56     4    reserved, zero
//	60          body, keys, values, lengths
const (
	// PrefixSize is the size of the length prefix of a frame.
	PrefixSize = 4
	// HeaderSize is the size of the fixed header after the prefix.
	HeaderSize = 56
	// Magic is the first byte after the length prefix.
	Magic = 0xC6
	// Version is the version of the frame layout.
	Version = 1
	// DefaultMaxFrame is the default limit on a frame's size: 64 MiB,
	// room for 16M float32 values.
	DefaultMaxFrame = 64 << 20
	// MinMaxFrame is the smallest allowed limit: an empty message.
	MinMaxFrame = PrefixSize + HeaderSize
	// MaxMaxFrame is the largest allowed limit, set by the 32-bit prefix.
	MaxMaxFrame = math.MaxUint32
)

// Key encodings of the frame header.
const (
	keysRaw   = 0
	keysDelta = 1
)

// ErrFrameTooLarge is wrapped by the errors for a frame over the limit,
// on either side of a link. The receiver checks the length prefix before
// allocating anything for the frame.
var ErrFrameTooLarge = errors.New("frame too large")

// ErrBadFrame is wrapped by the errors for a malformed frame: wrong magic
// or version, inconsistent sizes, bad key encoding.
var ErrBadFrame = errors.New("malformed frame")

// FrameOptions configure the framing of messages.
type FrameOptions struct {
	// MaxFrame is the largest frame, prefix included, that is sent or
	// accepted; 0 means DefaultMaxFrame.
	MaxFrame int
	// RawKeys sends keys as raw uint64s even when gap encoding is
	// smaller: it saves the encoding time where bandwidth is plentiful.
	RawKeys bool
}

// maxFrame returns the effective limit.
func (o FrameOptions) maxFrame() int {
	if o.MaxFrame == 0 {
		return DefaultMaxFrame
	}
	return o.MaxFrame
}

// Validate checks the options; the error names the field and the bound.
func (o FrameOptions) Validate() error {
	if o.MaxFrame != 0 && (o.MaxFrame < MinMaxFrame || o.MaxFrame > MaxMaxFrame) {
		return fmt.Errorf("MaxFrame %d out of range [%d, %d] (0 for the default %d)", o.MaxFrame, MinMaxFrame, MaxMaxFrame, DefaultMaxFrame)
	}
	return nil
}

// FrameSize returns the number of bytes m takes on the wire with the given
// options, prefix included: what an Encoder produces and what Stats count.
// It runs in O(len(keys)) to size the key encoding.
func FrameSize(m *Message, o FrameOptions) int {
	n := PrefixSize + HeaderSize + len(m.Body) + 4*len(m.KV.Vals) + 4*len(m.KV.Lens)
	kb, _ := keyEncoding(m.KV.Keys, o.RawKeys)
	return n + kb
}

// keyEncoding chooses the encoding of keys and returns its size.
func keyEncoding(keys []uint64, raw bool) (int, byte) {
	if !raw && len(keys) > 0 {
		if n, ok := kv.KeysSize(keys); ok && n < 8*len(keys) {
			return n, keysDelta
		}
	}
	return 8 * len(keys), keysRaw
}

// littleEndianHost reports whether this machine stores integers
// little-endian, so that arrays can go on the wire as they are in memory.
func littleEndianHost() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 1
}

// asBytes views an array of fixed-size numbers as bytes, without copying.
func asBytes[T uint64 | float32 | int32](v []T) []byte {
	if len(v) == 0 {
		return nil
	}
	var zero T
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(v))), len(v)*int(unsafe.Sizeof(zero)))
}

// toLittle returns the little-endian bytes of v: a view of v on a
// little-endian host, a converted copy appended to scratch otherwise.
func toLittle[T uint64 | float32 | int32](v []T, scratch *[]byte) []byte {
	b := asBytes(v)
	if littleEndianHost() || len(b) == 0 {
		return b
	}
	start := len(*scratch)
	*scratch = append(*scratch, b...)
	out := (*scratch)[start:]
	swapBytes(out, len(b)/len(v))
	return out
}

// swapBytes reverses every size-byte word of b in place: the conversion
// between little-endian wire order and a big-endian host.
func swapBytes(b []byte, size int) {
	for i := 0; i+size <= len(b); i += size {
		w := b[i : i+size]
		for l, r := 0, size-1; l < r; l, r = l+1, r-1 {
			w[l], w[r] = w[r], w[l]
		}
	}
}

// Encoder frames messages for one stream. The frames reference the
// message's arrays instead of copying them; only the header and gap-coded
// keys are written into the Encoder's buffers. An Encoder is not safe for
// concurrent use.
type Encoder struct {
	opt     FrameOptions
	max     int
	hdr     [PrefixSize + HeaderSize]byte
	keys    []byte // gap-coded keys
	scratch []byte // arrays converted on a big-endian host
	bufs    [5][]byte
}

// NewEncoder returns an Encoder with the given options, which must be
// valid.
func NewEncoder(o FrameOptions) *Encoder {
	return &Encoder{opt: o, max: o.maxFrame()}
}

// Encode frames m as sent from sender to receiver (m's own Sender and
// Receiver are ignored) and returns the frame as buffers for a vectored
// write, with its total size. The buffers stay valid until the next call
// and while m's arrays are unchanged. A frame over the limit is refused
// with an error wrapping ErrFrameTooLarge.
func (e *Encoder) Encode(m *Message, sender, receiver NodeID) (net.Buffers, int, error) {
	keys := m.KV.Keys
	// The smallest possible frame (one byte per key) first, so that an
	// oversized message costs no key encoding.
	lower := uint64(PrefixSize+HeaderSize) + uint64(len(m.Body)) + uint64(len(keys)) + 4*uint64(len(m.KV.Vals)) + 4*uint64(len(m.KV.Lens))
	if lower > uint64(e.max) {
		return nil, 0, fmt.Errorf("%w: at least %d bytes, limit %d", ErrFrameTooLarge, lower, e.max)
	}
	e.scratch = e.scratch[:0]
	enc := byte(keysRaw)
	var kb []byte
	if !e.opt.RawKeys && len(keys) > 0 {
		// Gap-encode in one pass; fall back to raw keys when they are
		// not increasing or the encoding is no smaller.
		b, err := kv.AppendKeys(e.keys[:0], keys)
		if err == nil && len(b) < 8*len(keys) {
			kb, enc = b, keysDelta
		}
		e.keys = b[:0]
	}
	if enc == keysRaw {
		kb = toLittle(keys, &e.scratch)
	}
	vb := toLittle(m.KV.Vals, &e.scratch)
	lb := toLittle(m.KV.Lens, &e.scratch)
	size := PrefixSize + HeaderSize + len(m.Body) + len(kb) + len(vb) + len(lb)
	if size > e.max {
		return nil, 0, fmt.Errorf("%w: %d bytes, limit %d", ErrFrameTooLarge, size, e.max)
	}
	h := e.hdr[:]
	le := binary.LittleEndian
	le.PutUint32(h[0:], uint32(size-PrefixSize))
	h[4], h[5], h[6], h[7] = Magic, Version, byte(m.Type), enc
	le.PutUint16(h[8:], uint16(m.Flags))
	le.PutUint16(h[10:], m.Cmd)
	le.PutUint32(h[12:], uint32(sender))
	le.PutUint32(h[16:], uint32(receiver))
	le.PutUint32(h[20:], m.App)
	le.PutUint32(h[24:], m.Customer)
	le.PutUint64(h[28:], m.ID)
	le.PutUint32(h[36:], uint32(len(m.Body)))
	le.PutUint32(h[40:], uint32(len(keys)))
	le.PutUint32(h[44:], uint32(len(kb)))
	le.PutUint32(h[48:], uint32(len(m.KV.Vals)))
	le.PutUint32(h[52:], uint32(len(m.KV.Lens)))
	le.PutUint32(h[56:], 0)
	bufs := append(e.bufs[:0], h)
	for _, b := range [][]byte{m.Body, kb, vb, lb} {
		if len(b) > 0 {
			bufs = append(bufs, b)
		}
	}
	return bufs, size, nil
}

// AppendFrame appends the frame of m, as sent from sender to receiver, to
// dst. It copies what an Encoder references, for tests and tools.
func AppendFrame(dst []byte, m *Message, sender, receiver NodeID, o FrameOptions) ([]byte, error) {
	bufs, _, err := NewEncoder(o).Encode(m, sender, receiver)
	if err != nil {
		return dst, err
	}
	for _, b := range bufs {
		dst = append(dst, b...)
	}
	return dst, nil
}

// header is a parsed frame header with its segment sizes.
type header struct {
	Header
	enc                          byte
	body, nkeys, keyBytes, nvals uint32
	nlens                        uint32
}

// parseHeader checks and parses the fixed header h (after the prefix) of
// a frame whose rest is n bytes long.
func parseHeader(h []byte, n uint32) (header, error) {
	le := binary.LittleEndian
	var p header
	if h[0] != Magic {
		return p, fmt.Errorf("%w: magic %#x, want %#x", ErrBadFrame, h[0], Magic)
	}
	if h[1] != Version {
		return p, fmt.Errorf("%w: version %d, want %d", ErrBadFrame, h[1], Version)
	}
	p.Type = MsgType(h[2])
	p.enc = h[3]
	p.Flags = Flags(le.Uint16(h[4:]))
	p.Cmd = le.Uint16(h[6:])
	p.Sender = NodeID(le.Uint32(h[8:]))
	p.Receiver = NodeID(le.Uint32(h[12:]))
	p.App = le.Uint32(h[16:])
	p.Customer = le.Uint32(h[20:])
	p.ID = le.Uint64(h[24:])
	p.body = le.Uint32(h[32:])
	p.nkeys = le.Uint32(h[36:])
	p.keyBytes = le.Uint32(h[40:])
	p.nvals = le.Uint32(h[44:])
	p.nlens = le.Uint32(h[48:])
	if r := le.Uint32(h[52:]); r != 0 {
		return p, fmt.Errorf("%w: reserved field %#x is not zero", ErrBadFrame, r)
	}
	switch p.enc {
	case keysRaw:
		if uint64(p.keyBytes) != 8*uint64(p.nkeys) {
			return p, fmt.Errorf("%w: %d raw keys in %d bytes", ErrBadFrame, p.nkeys, p.keyBytes)
		}
	case keysDelta:
		if p.nkeys == 0 || p.keyBytes < p.nkeys {
			return p, fmt.Errorf("%w: %d gap-coded keys in %d bytes", ErrBadFrame, p.nkeys, p.keyBytes)
		}
	default:
		return p, fmt.Errorf("%w: unknown key encoding %d", ErrBadFrame, p.enc)
	}
	want := uint64(HeaderSize) + uint64(p.body) + uint64(p.keyBytes) + 4*uint64(p.nvals) + 4*uint64(p.nlens)
	if want != uint64(n) {
		return p, fmt.Errorf("%w: segments take %d bytes, frame has %d", ErrBadFrame, want, n)
	}
	return p, nil
}

// Decoder reads frames from a stream. Its buffers are reused between
// frames; the messages it returns are not. A Decoder is not safe for
// concurrent use.
type Decoder struct {
	r       io.Reader
	max     int
	pool    *Pool
	berths  *Berths
	from    NodeID // the only sender whose frames may use berths
	abort   func()
	hdr     [PrefixSize + HeaderSize]byte
	scratch []byte
	// Early delivery (see SetEarly): which frames, and the progress and
	// bytes of the values of the message delivered early last.
	choose  func(h *Header, nvals int) bool
	pending *arrival
	early   []byte
}

// NewDecoder returns a Decoder reading from r that accepts frames up to
// maxFrame bytes (0 for DefaultMaxFrame).
func NewDecoder(r io.Reader, maxFrame int) *Decoder {
	if maxFrame == 0 {
		maxFrame = DefaultMaxFrame
	}
	return &Decoder{r: r, max: maxFrame}
}

// SetPool makes the Decoder take the arrays of messages from p, so that
// Message.Release recycles them. Without a pool they are allocated.
func (d *Decoder) SetPool(p *Pool) { d.pool = p }

// SetBerths makes the Decoder read the values of frames from sender from
// into the destinations registered in b (see Berths). abort, when not nil,
// interrupts a read in progress, for Berths.Cancel: it typically closes
// the stream.
func (d *Decoder) SetBerths(b *Berths, from NodeID, abort func()) {
	d.berths, d.from, d.abort = b, from, abort
}

// Decode reads the next frame into m, reusing the capacity of m's arrays
// (or taking them from the Decoder's pool, and the values from a berth
// when one was registered for the frame), and returns the frame's size.
// A frame over the limit is rejected from
// its length prefix, before anything is allocated for it, with an error
// wrapping ErrFrameTooLarge; malformed frames wrap ErrBadFrame. It returns
// io.EOF at a clean end of stream and io.ErrUnexpectedEOF inside a frame.
// After an error the stream position is undefined. With SetEarly, Decode
// first reads the rest of the values of the message it delivered early
// last (Finish), and may deliver m before its values are read.
func (d *Decoder) Decode(m *Message) (int, error) {
	if err := d.Finish(); err != nil {
		return 0, err
	}
	if _, err := io.ReadFull(d.r, d.hdr[:PrefixSize]); err != nil {
		return 0, err
	}
	n := binary.LittleEndian.Uint32(d.hdr[:])
	size := uint64(n) + PrefixSize
	if size > uint64(d.max) {
		return 0, fmt.Errorf("%w: length prefix announces %d bytes, limit %d", ErrFrameTooLarge, size, d.max)
	}
	if n < HeaderSize {
		return 0, fmt.Errorf("%w: %d bytes, shorter than the header", ErrBadFrame, size)
	}
	if _, err := io.ReadFull(d.r, d.hdr[PrefixSize:]); err != nil {
		return 0, unexpected(err)
	}
	p, err := parseHeader(d.hdr[PrefixSize:], n)
	if err != nil {
		return 0, err
	}
	m.Header = p.Header
	fresh := m.pool == nil && m.Body == nil && m.KV.Keys == nil && m.KV.Vals == nil && m.KV.Lens == nil
	var landed []float32
	if d.berths != nil && fresh && p.nvals > 0 && p.nlens == 0 && p.Sender == d.from {
		if landed = d.berths.claim(p.Sender, p.ID, int(p.nvals), d.abort); landed != nil {
			defer d.berths.release(p.Sender, p.ID)
		}
	}
	if d.pool != nil && fresh {
		m.pool = d.pool
		m.Body = get[byte](&d.pool.bytes, int(p.body), 1)
		m.KV.Keys = get[uint64](&d.pool.u64, int(p.nkeys), 8)
		if landed != nil {
			m.KV.Vals, m.landed = landed, true
		} else {
			m.KV.Vals = get[float32](&d.pool.f32, int(p.nvals), 4)
		}
		m.KV.Lens = get[int32](&d.pool.i32, int(p.nlens), 4)
	} else if landed != nil {
		m.Body = grow(m.Body, int(p.body))
		m.KV.Keys = grow(m.KV.Keys, int(p.nkeys))
		m.KV.Vals, m.landed = landed, true
	} else {
		m.Body = grow(m.Body, int(p.body))
		m.KV.Keys = grow(m.KV.Keys, int(p.nkeys))
		m.KV.Vals = grow(m.KV.Vals, int(p.nvals))
		m.KV.Lens = grow(m.KV.Lens, int(p.nlens))
	}
	if err := d.readFull(m.Body); err != nil {
		return 0, err
	}
	if p.enc == keysDelta {
		d.scratch = grow(d.scratch, int(p.keyBytes))
		if err := d.readFull(d.scratch); err != nil {
			return 0, err
		}
		if _, err := kv.DecodeKeys(m.KV.Keys, d.scratch, int(p.nkeys)); err != nil {
			return 0, fmt.Errorf("%w: %w", ErrBadFrame, err)
		}
	} else if err := readArray(d, m.KV.Keys); err != nil {
		return 0, err
	}
	if d.choose != nil && landed == nil && p.nlens == 0 && p.nvals > 0 && littleEndianHost() && d.choose(&m.Header, int(p.nvals)) {
		d.pending = &arrival{n: int(p.nvals), kick: make(chan struct{}, 1)}
		d.early = asBytes(m.KV.Vals)
		m.arrival = d.pending
		return int(size), nil
	}
	if err := readArray(d, m.KV.Vals); err != nil {
		return 0, err
	}
	if err := readArray(d, m.KV.Lens); err != nil {
		return 0, err
	}
	return int(size), nil
}

// readFull reads exactly len(b) bytes.
func (d *Decoder) readFull(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	_, err := io.ReadFull(d.r, b)
	return unexpected(err)
}

// readArray reads a little-endian array straight into v's memory.
func readArray[T uint64 | float32 | int32](d *Decoder, v []T) error {
	b := asBytes(v)
	if err := d.readFull(b); err != nil {
		return err
	}
	if !littleEndianHost() && len(v) > 0 {
		swapBytes(b, len(b)/len(v))
	}
	return nil
}

// unexpected turns an EOF inside a frame into io.ErrUnexpectedEOF.
func unexpected(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// grow returns s resized to n, reusing its capacity; nil for n = 0.
func grow[T any](s []T, n int) []T {
	if n == 0 {
		return nil
	}
	if cap(s) >= n {
		return s[:n]
	}
	return make([]T, n)
}

// DecodeFrame decodes the one frame that fills b. It is Decoder.Decode
// for a frame in memory, with the same checks.
func DecodeFrame(b []byte, maxFrame int) (*Message, error) {
	r := bytes.NewReader(b)
	m := new(Message)
	if _, err := NewDecoder(r, maxFrame).Decode(m); err != nil {
		return nil, err
	}
	if r.Len() != 0 {
		return nil, fmt.Errorf("%w: %d bytes after the frame", ErrBadFrame, r.Len())
	}
	return m, nil
}
