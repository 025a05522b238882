package graph

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"colo/internal/decompress"
	"colo/internal/textio"
)

// LineRange is a part of an uncompressed file made of whole lines: the
// bytes [Begin, End).
type LineRange struct {
	Begin, End int64
	// Size is the file's size when the range was cut: ranges cut by
	// different processes fit together only if they saw the same size.
	Size int64
}

// ErrCompressed is the error of SplitLines and StreamRange for compressed
// input, whose byte offsets are not those of its lines: read it whole
// with Stream.
var ErrCompressed = errors.New("compressed input cannot be read by byte ranges")

// SplitLines cuts the file at path into count ranges of whole lines and
// returns range r: the bytes from offset ⌊r·size/count⌋ to offset
// ⌊(r+1)·size/count⌋ of the file, each moved to the start of a line. A
// range starts after the first newline at or after its offset (range 0 at
// the start of the file) and ends where range r+1 starts, so that every
// line is in exactly one range; a range may be empty (a line longer than
// the share, or fewer lines than ranges). Compressed input is
// ErrCompressed, wrapped with the file's name.
func SplitLines(path string, r, count int) (LineRange, error) {
	if count < 1 || r < 0 || r >= count {
		return LineRange{}, fmt.Errorf("%s: range %d of %d", path, r, count)
	}
	f, err := textio.Open(path)
	if err != nil {
		return LineRange{}, fmt.Errorf("load: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return LineRange{}, fmt.Errorf("load: %w", err)
	}
	size := st.Size()
	if c, err := compressedAt(f, path); err != nil {
		return LineRange{}, err
	} else if c {
		return LineRange{}, fmt.Errorf("%s: %w", path, ErrCompressed)
	}
	start := func(q int) (int64, error) {
		if q == 0 {
			return bomAt(f, path) // after a byte order mark, as Stream reads it
		}
		if q == count {
			return size, nil
		}
		return lineStartAfter(f, path, int64(q)*size/int64(count), size)
	}
	lr := LineRange{Size: size}
	if lr.Begin, err = start(r); err != nil {
		return LineRange{}, err
	}
	if lr.End, err = start(r + 1); err != nil {
		return LineRange{}, err
	}
	lr.End = max(lr.End, lr.Begin)
	return lr, nil
}

// lineStartAfter returns the offset just after the first newline at or
// after off, or size when there is none.
func lineStartAfter(f *os.File, path string, off, size int64) (int64, error) {
	buf := make([]byte, 64<<10)
	for off < size {
		n, err := f.ReadAt(buf, off)
		if i := bytes.IndexByte(buf[:n], '\n'); i >= 0 {
			return off + int64(i) + 1, nil
		}
		off += int64(n)
		if err == io.EOF {
			break
		}
		if err != nil {
			return 0, fmt.Errorf("%s: read at byte %d: %w", path, off, err)
		}
	}
	return size, nil
}

// StreamRange is Stream for the lines of the range lr of the uncompressed
// file at path (SplitLines): it passes their records to vis as Stream
// does for the whole file, in the format opt.Format or, when that is
// FormatAuto, the one detected from the start of the file (the whole
// file's, not the range's). It returns the format and the number of
// records read: libsvm samples, SNAP edges and dropped self-loops. A range
// without records is not an error (the file as a whole may have some). A
// malformed line is the *ParseError Stream returns for it, with the line's
// number in the whole file: the lines before the range are counted when
// the error happens, not before.
func StreamRange(path string, opt LoadOptions, lr LineRange, vis Visitor) (Format, int, error) {
	f, err := textio.Open(path)
	if err != nil {
		return "", 0, fmt.Errorf("load: %w", err)
	}
	defer f.Close()
	name := opt.nameOf(path)
	head := make([]byte, headSize)
	nh, err := io.ReadFull(f, head)
	if err != nil && err != io.EOF && err != io.ErrUnexpectedEOF {
		return "", 0, fmt.Errorf("%s: read: %w", name, err)
	}
	head = head[:nh]
	if decompress.Compressed(head) {
		return "", 0, fmt.Errorf("%s: %w", name, ErrCompressed)
	}
	// The format of the whole file, as Stream decides it.
	_, format, closeFn, err := decode(bytes.NewReader(head), name, opt)
	if err != nil {
		return "", 0, err
	}
	closeFn()
	before := -1
	var beforeErr error
	countBefore := func() int {
		if before < 0 && beforeErr == nil {
			before, beforeErr = countLines(f, lr.Begin)
		}
		return max(before, 0)
	}
	sec := io.NewSectionReader(f, lr.Begin, lr.End-lr.Begin)
	r := &lineReader{br: bufio.NewReaderSize(sec, bufSize), name: name, before: countBefore, max: opt.maxLine()}
	records, err := streamLines(r, name, format, opt, vis)
	if pe, ok := errors.AsType[*ParseError](err); ok && pe.Line > 0 {
		pe.Line += countBefore()
		if beforeErr != nil {
			return format, records, fmt.Errorf("%w (the line's number counts from byte %d: counting the lines before it: %v)", err, lr.Begin, beforeErr)
		}
	}
	if n, _ := sec.Seek(0, io.SeekCurrent); err == nil && n != lr.End-lr.Begin {
		return format, records, fmt.Errorf("%s: read %d bytes of the range [%d, %d): the file changed while it was read", name, n, lr.Begin, lr.End)
	}
	return format, records, err
}

// countLines returns the number of newlines in the first n bytes of f.
func countLines(f *os.File, n int64) (int, error) {
	buf := make([]byte, 1<<20)
	lines := 0
	for off := int64(0); off < n; {
		m, err := f.ReadAt(buf[:min(int64(len(buf)), n-off)], off)
		lines += bytes.Count(buf[:m], []byte{'\n'})
		off += int64(m)
		if err != nil && off < n {
			return 0, err
		}
	}
	return lines, nil
}

// EmptyError is the error of Stream for input without samples, for a
// reader of ranges (StreamRange) that finds none in any range.
func EmptyError(path string) error { return emptyError(path) }

// Compressed reports whether the file at path is compressed (gzip, xz,
// zstd or bzip2): content that Stream reads whole and SplitLines refuses.
func Compressed(path string) (bool, error) {
	f, err := textio.Open(path)
	if err != nil {
		return false, fmt.Errorf("load: %w", err)
	}
	defer f.Close()
	return compressedAt(f, path)
}

// compressedAt reports whether f, the file at path, starts with a
// compressed stream; it reads f's first bytes.
func compressedAt(f *os.File, path string) (bool, error) {
	head := make([]byte, 8)
	nh, err := io.ReadFull(f, head)
	if err != nil && err != io.EOF && err != io.ErrUnexpectedEOF {
		return false, fmt.Errorf("%s: read: %w", path, err)
	}
	return decompress.Compressed(head[:nh]), nil
}

// Decompressed writes the content of the compressed file at path to a
// new file in dir and returns that file's path, so that processes can
// read it by ranges (SplitLines, StreamRange) with LoadOptions.Name set
// to path: its lines are path's, with their numbers. A file that is not
// compressed gives "" and nothing is written. A damaged or truncated
// stream is an error, and the partial copy is removed.
func Decompressed(path, dir string) (string, error) {
	f, err := textio.Open(path)
	if err != nil {
		return "", fmt.Errorf("load: %w", err)
	}
	defer f.Close()
	if c, err := compressedAt(f, path); err != nil || !c {
		return "", err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	dr, err := decompress.NewReader(f)
	if err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	if c, ok := dr.(io.Closer); ok {
		defer c.Close()
	}
	out, err := os.CreateTemp(dir, filepath.Base(path)+"-*.plain")
	if err != nil {
		return "", fmt.Errorf("%s: decompress: %w", path, err)
	}
	_, err = io.Copy(out, dr)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(out.Name())
		return "", fmt.Errorf("%s: decompress to %s: %w", path, dir, err)
	}
	return out.Name(), nil
}

// bomAt returns the length of the UTF-8 byte order mark that the file f
// (named path) starts with: 3, or 0 when it has none.
func bomAt(f *os.File, path string) (int64, error) {
	b := make([]byte, len(bom))
	n, err := f.ReadAt(b, 0)
	if err != nil && err != io.EOF {
		return 0, fmt.Errorf("%s: read: %w", path, err)
	}
	if string(b[:n]) == bom {
		return int64(len(bom)), nil
	}
	return 0, nil
}
