// Package decompress undoes the compression of an input stream, detected
// from its leading bytes: gzip, xz, zstd or bzip2. Every colo loader reads
// through it, so a file may be stored compressed or not.
//
// A damaged or truncated stream fails with an *Error rather than ending
// early, so that a cut-off file is never taken for a shorter one.
package decompress

import (
	"bufio"
	"compress/bzip2"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"strings"

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
		tail := &xzTail{r: br}
		xr, err := xz.NewReader(tail)
		if err != nil {
			return nil, prefixed("xz", err)
		}
		return &decoder{kind: "xz", r: xr, atEOF: tail.check}, nil
	case strings.HasPrefix(head, magicZstd):
		// One decoding goroutine at most: the loaders read sequentially,
		// and a synchronous decoder leaves nothing running behind.
		d, err := zstd.NewReader(br, zstd.WithDecoderConcurrency(1))
		if err != nil {
			return nil, prefixed("zstd", err)
		}
		return &decoder{kind: "zstd", r: d, close: d.Close}, nil
	case strings.HasPrefix(head, magicBzip2) && len(head) > 3 && head[3] >= '1' && head[3] <= '9':
		return &decoder{kind: "bzip2", r: bzip2.NewReader(br)}, nil
	}
	return br, nil
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
