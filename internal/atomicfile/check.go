package atomicfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// CheckFile reports whether Write(path, …) could write path, without
// writing it, by path's kind as Write sees it: a regular file must be
// writable by the process and a temporary file creatable beside it (one
// is created and removed); a new file needs its directory to exist and
// to take a temporary file; a character device, FIFO or socket must be
// writable (it is not opened: opening a FIFO waits for its reader); a
// descriptor of the process must be open. A directory or a block device
// is refused. A command calls it before a long computation whose result
// goes to path, so that a path it cannot write fails at once instead of
// after the work. The error names path.
func CheckFile(path string) error {
	fail := func(err error) error {
		return fmt.Errorf("cannot write %s: %w", path, err)
	}
	t, err := resolve(path)
	if err != nil {
		return fail(err)
	}
	if t.path != filepath.Clean(path) {
		fail = func(err error) error {
			return fmt.Errorf("cannot write %s (a link to %s): %w", path, t.path, err)
		}
	}
	dir := filepath.Dir(t.path)
	switch {
	case t.fd >= 0:
		err = fdOpen(t.fd)
	case t.info == nil:
		if err = isDir(dir); err == nil {
			err = probe(dir)
		}
	case t.info.Mode().IsRegular():
		var f *os.File
		if f, err = os.OpenFile(t.path, os.O_WRONLY, 0); err == nil {
			f.Close()
			err = probe(dir)
		}
	case t.info.Mode()&(fs.ModeNamedPipe|fs.ModeCharDevice|fs.ModeSocket) != 0:
		err = writable(t.path)
	default:
		err = refuse(t.info)
	}
	if err != nil {
		return fail(err)
	}
	return nil
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
			if err := probe(at); err != nil {
				return fmt.Errorf("cannot write into %s: %w", dir, err)
			}
			return nil
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

// CheckDirFiles is CheckDir for a directory that will hold files of the
// given names: besides dir, each of them that exists in dir must be one
// Write can write, as CheckFile says (a directory or a block device in
// its place is refused); the error names it.
func CheckDirFiles(dir string, names ...string) error {
	if err := CheckDir(dir); err != nil {
		return err
	}
	for _, name := range names {
		p := filepath.Join(dir, name)
		if _, err := os.Lstat(p); err != nil {
			continue // nothing there: CheckDir vouched for new files
		}
		if err := CheckFile(p); err != nil {
			return err
		}
	}
	return nil
}

// RemoveRegular removes path when it is a regular file itself, not a
// link to one, and leaves anything else in place: a symbolic link, a
// FIFO, a device, a socket, a directory. A writer removes a stale file
// that its new one will replace (a summary that must not vouch for new
// part files) this way, so that nothing Write would not replace is
// removed either. Nothing at path is no error.
func RemoveRegular(path string) error {
	fi, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR):
		return nil
	case err != nil:
		return err
	case !fi.Mode().IsRegular():
		return nil
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// probe creates and removes a temporary file in dir.
func probe(dir string) error {
	f, err := os.CreateTemp(dir, ".colo-probe-*")
	if err != nil {
		return err
	}
	name := f.Name()
	f.Close()
	return os.Remove(name)
}
