package atomicfile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// CheckFile reports whether Write(path, …) could create or replace the
// file at path, without writing it: path must not be a directory, its
// directory must exist, and a temporary file must be creatable there
// (one is created and removed). A command calls it before a long
// computation whose result goes to path, so that a path it cannot write
// fails at once instead of after the work. The error names path.
func CheckFile(path string) error {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return fmt.Errorf("cannot write %s: it is a directory", path)
	}
	dir := filepath.Dir(path)
	st, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("cannot write %s: %w", path, err)
	}
	if !st.IsDir() {
		return fmt.Errorf("cannot write %s: %s is not a directory", path, dir)
	}
	return probe(dir, path)
}

// CheckDir reports whether a directory of files could be written at dir
// (made with os.MkdirAll, then filled by Write), without making it: dir,
// or the nearest of its ancestors that exists, must be a directory in
// which a temporary file can be created (one is created and removed). The
// error names dir.
func CheckDir(dir string) error {
	for at := filepath.Clean(dir); ; {
		st, err := os.Stat(at)
		switch {
		case err == nil && st.IsDir():
			return probe(at, dir)
		case err == nil:
			return fmt.Errorf("cannot write into %s: %s is not a directory", dir, at)
		case !errors.Is(err, os.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR):
			return fmt.Errorf("cannot write into %s: %w", dir, err)
		}
		up := filepath.Dir(at)
		if up == at {
			return fmt.Errorf("cannot write into %s: no ancestor exists", dir)
		}
		at = up
	}
}

// probe creates and removes a temporary file in dir; target is what the
// error names.
func probe(dir, target string) error {
	f, err := os.CreateTemp(dir, ".colo-probe-*")
	if err != nil {
		return fmt.Errorf("cannot write %s: %w", target, err)
	}
	name := f.Name()
	f.Close()
	return os.Remove(name)
}
