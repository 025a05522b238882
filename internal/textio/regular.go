package textio

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// ErrNotRegular is the error of OpenRegular and ReadRegular on a path
// that is not (and does not link to) a regular file.
var ErrNotRegular = errors.New("want a regular file")

// OpenRegular opens path, which must be a regular file or a symbolic
// link to one, for reading and returns it with its size. It is for the
// files colo writes into a directory and reads back (a placement's
// summary.json and part files, a shard directory's files, a fitted
// spec): a FIFO, a device, a socket or a directory there is refused with
// an *os.PathError that names path and what it is, wrapping
// ErrNotRegular (ErrIsDir for a directory), without waiting for a FIFO's
// writer or reading a device such as /dev/zero that never ends. The open
// does not block; the kind is checked on the open file, so a path
// swapped between a check and the open cannot pass. A caller reads at
// most the size returned (io.LimitReader), so a file that grows while it
// is read is not read past it.
func OpenRegular(path string) (*os.File, int64, error) {
	f, err := openNonBlocking(path)
	if err != nil {
		return nil, 0, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		if st.IsDir() {
			return nil, 0, &os.PathError{Op: "open", Path: path, Err: ErrIsDir}
		}
		return nil, 0, &os.PathError{Op: "open", Path: path, Err: fmt.Errorf("%s: %w", kindOf(st.Mode()), ErrNotRegular)}
	}
	return f, st.Size(), nil
}

// ReadRegular returns the content of the regular file at path
// (OpenRegular), refusing before reading it one of more than limit
// bytes with an error that names path, its size and limit.
func ReadRegular(path string, limit int64) ([]byte, error) {
	f, size, err := OpenRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if size > limit {
		return nil, fmt.Errorf("%s: %d bytes, want at most %d", path, size, limit)
	}
	b := make([]byte, size)
	n, err := io.ReadFull(f, b)
	if err != nil && err != io.ErrUnexpectedEOF {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return b[:n], nil
}

// ReadLimited returns what the reader r, named name in errors, holds up
// to its end, refusing more than limit bytes once it has read limit+1
// of them. It is for an input that may be a stream (a spec given as
// <(…)) and is read whole: /dev/zero fails after limit bytes instead of
// running out of memory.
func ReadLimited(r io.Reader, name string, limit int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%s: more than %d bytes, want at most %d", name, limit, limit)
	}
	return b, nil
}

// kindOf names the kind of file that mode describes.
func kindOf(mode fs.FileMode) string {
	switch {
	case mode&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case mode&fs.ModeCharDevice != 0:
		return "a character device"
	case mode&fs.ModeDevice != 0:
		return "a block device"
	case mode&fs.ModeSocket != 0:
		return "a socket"
	}
	return fmt.Sprintf("a file of mode %v", mode)
}
