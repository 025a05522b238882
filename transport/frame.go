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
//	7      1    key encoding: 0 raw uint64, 1 gap varints (kv.AppendKeys),
//	            2 the keys of a key slot, 3 raw and 4 gap varints stored
//	            in a key slot (see KeyCache)
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
//	56     1    key slot (encodings 2–4), else zero
//	57     1    reserved, zero
//	58     2    key slots emptied before the store (encodings 3–4), else zero
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
	keysRaw        = 0
	keysDelta      = 1
	keysSlot       = 2 // no key bytes: the keys stored in the slot
	keysStoreRaw   = 3 // raw keys, kept in the slot
	keysStoreDelta = 4 // gap-coded keys, kept in the slot
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
	// KeyCache, when positive, turns on key caching (see KeyCache): the
	// bytes of key lists, 8 a key, that the receiver of a stream keeps
	// for its sender. A sender stays within its own KeyCache and a
	// receiver refuses a frame that would take it over its own, or that
	// uses a key slot while its KeyCache is 0: both ends of a link need
	// the same value. DefaultKeyCache is the usual one.
	KeyCache int
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
	if o.KeyCache < 0 {
		return fmt.Errorf("KeyCache %d is negative (0 turns key caching off, %d is the default)", o.KeyCache, DefaultKeyCache)
	}
	return nil
}

// FrameSize returns the number of bytes m takes on the wire with the given
// options, prefix included: what an Encoder produces and what Stats count.
// With key caching a frame whose keys are a key slot's is shorter on the
// wire by the size of its keys; Stats count it at FrameSize all the same,
// so that they measure the messages, alike on every transport. It runs
// in O(len(keys)) to size the key encoding.
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
	cache   senderKeys // with opt.KeyCache > 0
}

// NewEncoder returns an Encoder with the given options, which must be
// valid.
func NewEncoder(o FrameOptions) *Encoder {
	e := &Encoder{opt: o, max: o.maxFrame()}
	e.cache.limit = o.KeyCache
	return e
}

// Sent tells the Encoder that the frame it returned last was written
// whole: with key caching, a key list that frame stores is now the
// receiver's, and later frames may name it. Without the call (the frame
// was not sent) the next Encode forgets it. O(keys) when the frame stores
// its keys (the Encoder keeps a copy), O(1) otherwise.
func (e *Encoder) Sent() { e.cache.commit() }

// ResetKeys forgets the key slots, for a new stream whose receiver has
// none: a frame written on another connection than the last one's must
// be encoded after it.
func (e *Encoder) ResetKeys() { e.cache.reset() }

// Encode frames m as sent from sender to receiver (m's own Sender and
// Receiver are ignored) and returns the frame as buffers for a vectored
// write, with its size as Stats count it: FrameSize(m), which is more
// than the buffers hold when the frame names a key slot instead of
// carrying its keys (see KeyCache; call Sent once the frame is written).
// The buffers stay valid until the next call
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
	c := &e.cache
	c.staged = nil
	// With key caching: a list a slot holds is named, not sent; a list
	// seen once before is stored (staged until Sent).
	slot, hit, store := -1, 0, false
	var fp fingerprint
	if c.limit > 0 && len(keys) >= MinCachedKeys {
		fp = fingerprintOf(keys)
		if slot = c.find(fp, keys); slot >= 0 {
			hit = c.slots[slot].nominal
			c.tick++
			c.slots[slot].used = c.tick
		} else if 8*len(keys) <= c.limit && c.sawBefore(fp) {
			store = true
		}
	}
	enc := byte(keysRaw)
	var kb []byte
	if slot < 0 && !e.opt.RawKeys && len(keys) > 0 {
		// Gap-encode in one pass; fall back to raw keys when they are
		// not increasing or the encoding is no smaller.
		b, err := kv.AppendKeys(e.keys[:0], keys)
		if err == nil && len(b) < 8*len(keys) {
			kb, enc = b, keysDelta
		}
		e.keys = b[:0]
	}
	switch {
	case slot >= 0:
		enc = keysSlot
	case enc == keysRaw:
		kb = toLittle(keys, &e.scratch)
	}
	vb := toLittle(m.KV.Vals, &e.scratch)
	lb := toLittle(m.KV.Lens, &e.scratch)
	size := PrefixSize + HeaderSize + len(m.Body) + len(kb) + len(vb) + len(lb)
	if size+hit > e.max {
		return nil, 0, fmt.Errorf("%w: %d bytes, limit %d", ErrFrameTooLarge, size+hit, e.max)
	}
	var mask uint16
	if store {
		slot, mask = c.plan(8 * len(keys))
		c.store = keyStore{slot: slot, mask: mask, keys: keys, fp: fp, nominal: len(kb)}
		c.staged = &c.store
		enc += keysStoreRaw - keysRaw
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
	h[56], h[57] = 0, 0
	if slot >= 0 {
		h[56] = byte(slot)
	}
	le.PutUint16(h[58:], mask)
	bufs := append(e.bufs[:0], h)
	for _, b := range [][]byte{m.Body, kb, vb, lb} {
		if len(b) > 0 {
			bufs = append(bufs, b)
		}
	}
	return bufs, size + hit, nil
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
	slot                         int    // key slot, encodings 2–4
	mask                         uint16 // key slots emptied, encodings 3–4
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
	p.slot, p.mask = int(h[52]), le.Uint16(h[54:])
	switch {
	case p.enc <= keysDelta && le.Uint32(h[52:]) != 0:
		return p, fmt.Errorf("%w: reserved field %#x is not zero", ErrBadFrame, le.Uint32(h[52:]))
	case p.enc > keysDelta && h[53] != 0:
		return p, fmt.Errorf("%w: reserved byte %#x is not zero", ErrBadFrame, h[53])
	case p.enc > keysDelta && p.enc <= keysStoreDelta && p.slot >= KeySlots:
		return p, fmt.Errorf("%w: key slot %d out of range [0, %d)", ErrBadFrame, p.slot, KeySlots)
	case p.enc == keysSlot && p.mask != 0:
		return p, fmt.Errorf("%w: frame uses key slot %d and empties slots %#x", ErrBadFrame, p.slot, p.mask)
	}
	switch p.enc {
	case keysRaw, keysStoreRaw:
		if uint64(p.keyBytes) != 8*uint64(p.nkeys) {
			return p, fmt.Errorf("%w: %d raw keys in %d bytes", ErrBadFrame, p.nkeys, p.keyBytes)
		}
	case keysDelta, keysStoreDelta:
		if p.nkeys == 0 || p.keyBytes < p.nkeys {
			return p, fmt.Errorf("%w: %d gap-coded keys in %d bytes", ErrBadFrame, p.nkeys, p.keyBytes)
		}
	case keysSlot:
		if p.nkeys == 0 || p.keyBytes != 0 {
			return p, fmt.Errorf("%w: %d keys of key slot %d with %d key bytes", ErrBadFrame, p.nkeys, p.slot, p.keyBytes)
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
	keys    receiverKeys
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

// SetKeyCache turns on key caching (see KeyCache) for the stream: the
// Decoder keeps the key lists its frames store, up to limit bytes (8 a
// key), and refuses a frame that would take it over the limit. Without
// it, a frame that stores or names a key slot is refused. Call it before
// the first Decode.
func (d *Decoder) SetKeyCache(limit int) { d.keys.limit = max(limit, 0) }

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
// when one was registered for the frame), and returns the frame's size
// as Stats count it: for a frame that names a key slot (see KeyCache),
// the size of the frame that stored the slot's keys, which is what it
// would take without key caching; its keys are then the slot's, shared
// and read-only.
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
	if m.sharedKeys {
		// m's keys are a slot's: never written into.
		m.KV.Keys, m.sharedKeys = nil, false
	}
	m.ascending = false
	// A frame that uses a key slot: the slot's keys (shared, read-only)
	// or a new array that the slot keeps, never a pool's or m's.
	var slotKeys []uint64
	switch p.enc {
	case keysSlot:
		keys, nominal, err := d.keys.lookup(p.slot, p.nkeys)
		if err != nil {
			return 0, err
		}
		slotKeys = keys
		size += uint64(nominal)
		m.ascending = d.keys.ascending[p.slot]
	case keysStoreRaw, keysStoreDelta:
		if err := d.keys.prepare(p.slot, p.mask, p.nkeys); err != nil {
			return 0, err
		}
		slotKeys = make([]uint64, p.nkeys)
	}
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
		if slotKeys == nil {
			m.KV.Keys = get[uint64](&d.pool.u64, int(p.nkeys), 8)
		}
		if landed != nil {
			m.KV.Vals, m.landed = landed, true
		} else {
			m.KV.Vals = get[float32](&d.pool.f32, int(p.nvals), 4)
		}
		m.KV.Lens = get[int32](&d.pool.i32, int(p.nlens), 4)
	} else if landed != nil {
		m.Body = grow(m.Body, int(p.body))
		if slotKeys == nil {
			m.KV.Keys = grow(m.KV.Keys, int(p.nkeys))
		}
		m.KV.Vals, m.landed = landed, true
	} else {
		m.Body = grow(m.Body, int(p.body))
		if slotKeys == nil {
			m.KV.Keys = grow(m.KV.Keys, int(p.nkeys))
		}
		m.KV.Vals = grow(m.KV.Vals, int(p.nvals))
		m.KV.Lens = grow(m.KV.Lens, int(p.nlens))
	}
	if slotKeys != nil {
		m.KV.Keys, m.sharedKeys = slotKeys, true
	}
	if err := d.readFull(m.Body); err != nil {
		return 0, err
	}
	switch p.enc {
	case keysDelta, keysStoreDelta:
		d.scratch = grow(d.scratch, int(p.keyBytes))
		if err := d.readFull(d.scratch); err != nil {
			return 0, err
		}
		if _, err := kv.DecodeKeys(m.KV.Keys, d.scratch, int(p.nkeys)); err != nil {
			return 0, fmt.Errorf("%w: %w", ErrBadFrame, err)
		}
	case keysRaw, keysStoreRaw:
		if err := readArray(d, m.KV.Keys); err != nil {
			return 0, err
		}
	}
	if p.enc == keysStoreRaw || p.enc == keysStoreDelta {
		m.ascending = d.keys.keep(p.slot, m.KV.Keys, int(p.keyBytes))
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
