package partition

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
	path  string
	f     *os.File
	w     *bufio.Writer
	buf   [binary.MaxVarintLen64]byte
	bytes int64
	err   error
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
	if s.err != nil {
		return
	}
	n := binary.PutUvarint(s.buf[:], x)
	_, s.err = s.w.Write(s.buf[:n])
	s.bytes += int64(n)
}

// row appends a row of increasing ids.
func (s *spillWriter) row(ids []uint32) {
	s.uvarint(uint64(len(ids)))
	prev := uint32(0)
	for _, v := range ids {
		s.uvarint(uint64(v - prev))
		prev = v
	}
}

// rawRow appends a row of increasing 64-bit ids.
func (s *spillWriter) rawRow(ids []uint64) {
	s.uvarint(uint64(len(ids)))
	prev := uint64(0)
	for _, v := range ids {
		s.uvarint(v - prev)
		prev = v
	}
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

// spillReader reads a spill file, or a section of one.
type spillReader struct {
	path string
	f    *os.File
	r    *bufio.Reader
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
	return &spillReader{path: path, f: f, r: bufio.NewReaderSize(r, size)}, nil
}

// errSpillEnd is the error of a read past the end of a spill file.
var errSpillEnd = errors.New("unexpected end")

// uvarint reads the next number.
func (s *spillReader) uvarint() (uint64, error) {
	x, err := binary.ReadUvarint(s.r)
	if err == io.EOF {
		err = errSpillEnd
	}
	if err != nil {
		return 0, fmt.Errorf("out-of-core spill %s: %w", s.path, err)
	}
	return x, nil
}

// row reads a row written by spillWriter.row, appending it to dst.
func (s *spillReader) row(dst []uint32) ([]uint32, error) {
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
		dst = append(dst, uint32(prev))
	}
	return dst, nil
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
