package ooc

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
)

// Spill files of the out-of-core run: sequences of unsigned varints,
// written and read front to back. A row of sorted ids is its length and
// then the gaps between consecutive ids (the first id itself), so that
// most ids take one or two bytes.

// spillWriter writes one spill file. Errors are sticky and returned by
// close.
type spillWriter struct {
	path    string
	f       *os.File
	w       *bufio.Writer
	buf     [binary.MaxVarintLen64]byte
	scratch []byte // a row being encoded
	bytes   int64
	err     error
}

// createSpill creates a spill file with a write buffer of size bytes.
func createSpill(path string, size int) (*spillWriter, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("out-of-core spill: %w", err)
	}
	return &spillWriter{path: path, f: f, w: bufio.NewWriterSize(f, size)}, nil
}

// uvarint appends x.
func (s *spillWriter) uvarint(x uint64) {
	if x < 0x80 && s.w.Available() > 0 {
		s.w.WriteByte(byte(x))
		s.bytes++
		return
	}
	if s.err != nil {
		return
	}
	n := binary.PutUvarint(s.buf[:], x)
	_, s.err = s.w.Write(s.buf[:n])
	s.bytes += int64(n)
}

// row appends a row of increasing ids, encoded whole and written at once.
func (s *spillWriter) row(ids []uint32) {
	b := binary.AppendUvarint(s.scratch[:0], uint64(len(ids)))
	prev := uint32(0)
	for _, v := range ids {
		if d := v - prev; d < 0x80 {
			b = append(b, byte(d))
		} else {
			b = binary.AppendUvarint(b, uint64(d))
		}
		prev = v
	}
	s.write(b)
}

// rawRow appends a row of increasing 64-bit ids.
func (s *spillWriter) rawRow(ids []uint64) {
	b := binary.AppendUvarint(s.scratch[:0], uint64(len(ids)))
	prev := uint64(0)
	for _, v := range ids {
		b = binary.AppendUvarint(b, v-prev)
		prev = v
	}
	s.write(b)
}

// write appends encoded bytes, keeping them as the next scratch buffer.
func (s *spillWriter) write(b []byte) {
	s.scratch = b
	if s.err != nil {
		return
	}
	_, s.err = s.w.Write(b)
	s.bytes += int64(len(b))
}

// close flushes and closes the file and returns the first error.
func (s *spillWriter) close() error {
	if s.f == nil {
		return s.err
	}
	if s.err == nil {
		s.err = s.w.Flush()
	}
	if err := s.f.Close(); s.err == nil {
		s.err = err
	}
	s.f = nil
	if s.err != nil {
		return fmt.Errorf("out-of-core spill %s: %w", s.path, s.err)
	}
	return nil
}

// spillReader reads a spill file, or a section of one, decoding the
// numbers from its own buffer.
type spillReader struct {
	path     string
	f        *os.File
	src      io.Reader
	buf      []byte
	pos, end int
	eof      bool
	err      error
}

// openSpill opens the section [off, off+n) of a spill file (n < 0: to the
// end) with a read buffer of size bytes.
func openSpill(path string, off, n int64, size int) (*spillReader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("out-of-core spill: %w", err)
	}
	var r io.Reader = f
	if off > 0 || n >= 0 {
		if n < 0 {
			n = 1<<62 - off
		}
		r = io.NewSectionReader(f, off, n)
	}
	return &spillReader{path: path, f: f, src: r, buf: make([]byte, max(size, 2*binary.MaxVarintLen64))}, nil
}

// errSpillEnd is the error of a read past the end of a spill file.
var errSpillEnd = errors.New("unexpected end")

// fill moves the unread bytes to the front and reads more, until the
// buffer holds a whole number or the file ends.
func (s *spillReader) fill() {
	if s.eof || s.err != nil {
		return
	}
	s.end = copy(s.buf, s.buf[s.pos:s.end])
	s.pos = 0
	for s.end < binary.MaxVarintLen64 && !s.eof {
		n, err := s.src.Read(s.buf[s.end:])
		s.end += n
		if err == io.EOF {
			s.eof = true
		} else if err != nil {
			s.err = err
			return
		}
	}
}

// atEnd reports whether every byte has been read.
func (s *spillReader) atEnd() bool {
	if s.pos == s.end {
		s.fill()
	}
	return s.pos == s.end && s.err == nil
}

// uvarint reads the next number.
func (s *spillReader) uvarint() (uint64, error) {
	if s.end-s.pos < binary.MaxVarintLen64 {
		s.fill()
	}
	// The common case: one byte.
	if s.pos < s.end && s.buf[s.pos] < 0x80 {
		x := uint64(s.buf[s.pos])
		s.pos++
		return x, nil
	}
	x, n := binary.Uvarint(s.buf[s.pos:s.end])
	if n <= 0 {
		err := s.err
		if err == nil {
			err = errSpillEnd
			if n < 0 {
				err = errors.New("malformed number")
			}
		}
		return 0, fmt.Errorf("out-of-core spill %s: %w", s.path, err)
	}
	s.pos += n
	return x, nil
}

// row reads a row written by spillWriter.row, appending it to dst.
func (s *spillReader) row(dst []uint32) ([]uint32, error) {
	n, err := s.uvarint()
	if err != nil {
		return dst, err
	}
	prev := uint64(0)
	for n > 0 {
		// Runs of one-byte gaps straight from the buffer.
		if s.end-s.pos >= binary.MaxVarintLen64 {
			buf := s.buf[s.pos : s.end-binary.MaxVarintLen64+1]
			i := 0
			for ; n > 0 && i < len(buf) && buf[i] < 0x80; i++ {
				prev += uint64(buf[i])
				dst = append(dst, uint32(prev))
				n--
			}
			s.pos += i
			if n == 0 {
				break
			}
		}
		d, err := s.uvarint()
		if err != nil {
			return dst, err
		}
		prev += d
		dst = append(dst, uint32(prev))
		n--
	}
	return dst, nil
}

// skipRow reads past a row written by spillWriter.row and returns its
// length, without decoding its ids: each ends at a byte below 0x80.
func (s *spillReader) skipRow() (int, error) {
	n, err := s.uvarint()
	if err != nil {
		return 0, err
	}
	for left := n; left > 0; {
		if s.pos == s.end {
			s.fill()
			if s.pos == s.end {
				err := s.err
				if err == nil {
					err = errSpillEnd
				}
				return 0, fmt.Errorf("out-of-core spill %s: %w", s.path, err)
			}
		}
		buf := s.buf[s.pos:s.end]
		i := 0
		for ; i < len(buf) && left > 0; i++ {
			if buf[i] < 0x80 {
				left--
			}
		}
		s.pos += i
	}
	return int(n), nil
}

// rawRow reads a row written by spillWriter.rawRow, appending it to dst.
func (s *spillReader) rawRow(dst []uint64) ([]uint64, error) {
	n, err := s.uvarint()
	if err != nil {
		return dst, err
	}
	prev := uint64(0)
	for ; n > 0; n-- {
		d, err := s.uvarint()
		if err != nil {
			return dst, err
		}
		prev += d
		dst = append(dst, prev)
	}
	return dst, nil
}

// close closes the file.
func (s *spillReader) close() { s.f.Close() }
