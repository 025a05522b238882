package textio

import (
	"errors"
	"os"
)

// ErrIsDir is the error of Open on a directory.
var ErrIsDir = errors.New("is a directory, want a file")

// Open opens the input file at path for reading, as os.Open does, but
// refuses a directory at once with an *os.PathError wrapping ErrIsDir
// ("open data: is a directory, want a file"), where os.Open takes it and
// the first read fails with the kernel's EISDIR, in words that name the
// read, not the input.
func Open(path string) (*os.File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	if st, err := f.Stat(); err == nil && st.IsDir() {
		f.Close()
		return nil, &os.PathError{Op: "open", Path: path, Err: ErrIsDir}
	}
	return f, nil
}
