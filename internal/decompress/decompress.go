// Package decompress undoes the compression of an input stream, detected
// from its leading bytes: gzip, xz, zstd or bzip2. Every colo loader reads
// through it, so a file may be stored compressed or not.
//
// A damaged or truncated stream fails with an *Error rather than ending
// early, so that a cut-off file is never taken for a shorter one.
//
// The window a decoder keeps (zstd's window, xz's dictionary) is declared
// by the stream's header and allocated by the decoder: NewReaderBudget
// refuses a first frame or block that declares more than half the
// memory budget (package colo/internal/membudget) before the decoder
// allocates it, and caps zstd's window for the frames after.
package decompress

import (
	"bufio"
	"compress/bzip2"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"strings"

	"colo/internal/membudget"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/ulikunitz/xz"
)

// bufSize is the size of the buffer in front of the compressed input.
const bufSize = 1 << 20

// The leading bytes ("magic numbers") of the compressed formats NewReader
// recognises.
const (
	magicGzip  = "\x1f\x8b"
	magicXz    = "\xfd7zXZ\x00"
	magicZstd  = "\x28\xb5\x2f\xfd"
	magicBzip2 = "BZh"
)

// Compressed reports whether head, the leading bytes of a file (at least
// the first six when the file has them), is the start of content that
// NewReader decompresses: gzip, xz, zstd or bzip2.
func Compressed(head []byte) bool {
	h := string(head)
	return strings.HasPrefix(h, magicGzip) || strings.HasPrefix(h, magicXz) || strings.HasPrefix(h, magicZstd) ||
		(strings.HasPrefix(h, magicBzip2) && len(h) > 3 && h[3] >= '1' && h[3] <= '9')
}

// NewReader returns a reader of the decompressed content of r. It detects
// gzip (1f 8b), xz (fd '7zXZ' 00), zstd (28 b5 2f fd) and bzip2 ("BZh"
// followed by a block-size digit) from the leading bytes; any other content
// is returned as it is, behind a buffer. Concatenated gzip members, xz
// streams, zstd frames and bzip2 streams are read one after the other, as
// the command-line tools do.
//
// A damaged or truncated compressed stream makes the returned reader fail
// with an *Error that wraps io.ErrUnexpectedEOF or the decoder's error,
// rather than end early, so a cut-off file is never taken for a shorter one.
// (For xz this needs a check of its own, see xzTail.) Errors in the header
// of the stream are returned by NewReader itself.
//
// When the returned reader implements io.Closer (gzip and zstd), the caller
// should close it once done to release the decoder; closing does not close
// r.
func NewReader(r io.Reader) (io.Reader, error) {
	return NewReaderBudget(r, membudget.Auto)
}

// NewReaderBudget is NewReader within the memory budget memory (0 for the
// machine's default, negative for none): a zstd frame or the first xz
// block whose header declares a window (dictionary) of more than half
// the budget is refused with a *membudget.Error before the
// decoder allocates it (the name of the file is the caller's to fill),
// and zstd's decoder refuses later frames of such a window.
func NewReaderBudget(r io.Reader, memory int64) (io.Reader, error) {
	maxWindow := max(membudget.Resolve(memory)/2, minWindow)
	br := bufio.NewReaderSize(r, bufSize)
	b, err := br.Peek(len(magicXz))
	if err != nil && err != io.EOF {
		return nil, fmt.Errorf("read: %w", err)
	}
	head := string(b)
	switch {
	case strings.HasPrefix(head, magicGzip):
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, prefixed("gzip", err)
		}
		return &decoder{kind: "gzip", r: zr, close: func() { zr.Close() }}, nil
	case strings.HasPrefix(head, magicXz):
		if err := checkWindow(br, "xz dictionary", xzDict, maxWindow); err != nil {
			return nil, err
		}
		tail := &xzTail{r: br}
		xr, err := xz.NewReader(tail)
		if err != nil {
			return nil, prefixed("xz", err)
		}
		return &decoder{kind: "xz", r: xr, atEOF: tail.check}, nil
	case strings.HasPrefix(head, magicZstd):
		// One decoding goroutine at most: the loaders read sequentially,
		// and a synchronous decoder leaves nothing running behind.
		if err := checkWindow(br, "zstd window", zstdWindow, maxWindow); err != nil {
			return nil, err
		}
		d, err := zstd.NewReader(br, zstd.WithDecoderConcurrency(1),
			zstd.WithDecoderMaxWindow(uint64(min(maxWindow, zstd.MaxWindowSize))))
		if err != nil {
			return nil, prefixed("zstd", err)
		}
		return &decoder{kind: "zstd", r: d, close: d.Close}, nil
	case strings.HasPrefix(head, magicBzip2) && len(head) > 3 && head[3] >= '1' && head[3] <= '9':
		return &decoder{kind: "bzip2", r: bzip2.NewReader(br)}, nil
	}
	return br, nil
}

// minWindow is the smallest window limit: 1 MiB, more than any default
// of the compressors' fast levels needs.
const minWindow = 1 << 20

// checkWindow returns a *membudget.Error when window, applied to the
// leading bytes of br, finds a header that declares a window of more than
// max bytes.
func checkWindow(br *bufio.Reader, what string, window func([]byte) int64, max int64) error {
	head, _ := br.Peek(xzHeadLen)
	if w := window(head); w > max {
		return &membudget.Error{What: fmt.Sprintf("a decoder's %s of %s (as the stream declares) and as much for the data read through it", what, membudget.FormatBytes(w)),
			Need: 2 * w, Limit: 2 * max}
	}
	return nil
}

// xzHeadLen is the most leading bytes checkWindow reads: an xz stream
// header (12 bytes) and a block header (at most 1024).
const xzHeadLen = 12 + 1024

// zstdWindow returns the window size that the zstd frame at the start of
// b declares (RFC 8878 section 3.1.1.1), or 0 when b is too short.
func zstdWindow(b []byte) int64 {
	if len(b) < 6 {
		return 0
	}
	fhd := b[4]
	if fhd&0x20 == 0 { // not a single segment: a window descriptor
		exp, mant := int64(b[5]>>3), int64(b[5]&7)
		base := int64(1) << (10 + exp)
		return base + base/8*mant
	}
	// A single segment: the window is the content size that follows the
	// descriptor (and the dictionary id, when there is one).
	pos := 5 + []int{0, 1, 2, 4}[fhd&3]
	n := []int{1, 2, 4, 8}[fhd>>6]
	if len(b) < pos+n {
		return 0
	}
	var size uint64
	for i := n - 1; i >= 0; i-- {
		size = size<<8 | uint64(b[pos+i])
	}
	if n == 2 {
		size += 256
	}
	return int64(min(size, 1<<62))
}

// xzDict returns the dictionary size that the LZMA2 filter of the first
// block of the xz stream at the start of b declares, or 0 when b holds no
// such block (an empty stream, another filter, or too few bytes).
func xzDict(b []byte) int64 {
	if len(b) < 14 || b[12] == 0 {
		return 0
	}
	end := 12 + (int(b[12])+1)*4
	if len(b) < end {
		return 0
	}
	h := b[14:end]
	varint := func() (uint64, bool) {
		var x uint64
		for i := 0; i < len(h) && i < 9; i++ {
			x |= uint64(h[i]&0x7f) << (7 * i)
			if h[i]&0x80 == 0 {
				h = h[i+1:]
				return x, true
			}
		}
		return 0, false
	}
	flags := b[13]
	if flags&0x40 != 0 {
		if _, ok := varint(); !ok {
			return 0
		}
	}
	if flags&0x80 != 0 {
		if _, ok := varint(); !ok {
			return 0
		}
	}
	for range int(flags&3) + 1 {
		id, ok1 := varint()
		size, ok2 := varint()
		if !ok1 || !ok2 || uint64(len(h)) < size {
			return 0
		}
		props := h[:size]
		h = h[size:]
		if id == 0x21 && size == 1 {
			d := props[0]
			switch {
			case d > 40:
				return 0 // invalid: the decoder says so
			case d == 40:
				return 1<<32 - 1
			}
			return int64(2|d&1) << (d/2 + 11)
		}
	}
	return 0
}

// decoder is the reader NewReader returns for compressed content: it names
// the compression in its errors and releases the decoder on Close.
type decoder struct {
	kind  string
	r     io.Reader
	close func()
	atEOF func() error // checks the end of the input, or nil
	err   error
}

// Read reads decompressed bytes. Errors other than io.EOF are sticky.
func (d *decoder) Read(p []byte) (int, error) {
	if d.err != nil {
		return 0, d.err
	}
	n, err := d.r.Read(p)
	if err == io.EOF && d.atEOF != nil {
		if e := d.atEOF(); e != nil {
			err = e
		}
	}
	if err != nil && err != io.EOF {
		d.err = prefixed(d.kind, err)
		err = d.err
	}
	return n, err
}

// Close releases the decoder; it does not close the underlying reader.
func (d *decoder) Close() error {
	if d.close != nil {
		d.close()
		d.close = nil
	}
	return nil
}

// Error is a failure of a decompressor: damaged or truncated compressed
// data. It is distinct from the end of the content.
type Error struct {
	Kind string // gzip, xz, zstd or bzip2
	Err  error
}

func (e *Error) Error() string {
	msg := strings.TrimPrefix(e.Err.Error(), e.Kind+": ")
	return e.Kind + ": corrupt or truncated compressed data: " + msg
}

// Unwrap returns the decoder's error.
func (e *Error) Unwrap() error { return e.Err }

func prefixed(kind string, err error) error { return &Error{Kind: kind, Err: err} }

// xzTail watches the compressed input of the xz decoder, which takes input
// that ends where a block header or the index should start for the end of
// the stream. Every xz stream ends with a 12-byte footer (CRC32 of the next
// six bytes, backward size, stream flags, "YZ"), optionally followed by
// stream padding: zero bytes in multiples of four. xzTail keeps the last 12
// bytes before the trailing zero bytes so that check can insist on a footer
// there once the decoder reports the end.
type xzTail struct {
	r     io.Reader
	last  []byte // up to xzFooterLen bytes ending at the last nonzero byte
	zeros int    // zero bytes after last
}

// xzFooterLen is the length of an xz stream footer.
const xzFooterLen = 12

// Read reads compressed input and updates the tail.
func (t *xzTail) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	q := p[:n]
	k := len(q) - 1
	for k >= 0 && q[k] == 0 {
		k--
	}
	if k < 0 {
		t.zeros += len(q)
		return n, err
	}
	if k+1 < xzFooterLen {
		for i := 0; i < min(t.zeros, xzFooterLen); i++ {
			t.last = append(t.last, 0)
		}
	} else {
		t.last = t.last[:0]
	}
	t.last = append(t.last, q[max(0, k+1-xzFooterLen):k+1]...)
	if len(t.last) > xzFooterLen {
		t.last = append(t.last[:0], t.last[len(t.last)-xzFooterLen:]...)
	}
	t.zeros = len(q) - 1 - k
	return n, err
}

// check reports whether the input read so far ends with a stream footer and
// valid stream padding; it returns io.ErrUnexpectedEOF when it does not.
func (t *xzTail) check() error {
	f := t.last
	if t.zeros%4 != 0 || len(f) != xzFooterLen || f[10] != 'Y' || f[11] != 'Z' ||
		crc32.ChecksumIEEE(f[4:10]) != binary.LittleEndian.Uint32(f[:4]) {
		return io.ErrUnexpectedEOF
	}
	return nil
}
