//go:build unix

package atomicfile

import (
	"io/fs"
	"os"
	"syscall"
)

// dupFile opens a copy of the process's descriptor fd, so that closing it
// leaves fd open.
func dupFile(fd int, name string) (*os.File, error) {
	d, err := syscall.Dup(fd)
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(d), name), nil
}

// keepOwner gives tmp the owner and group of the file it replaces, when
// they differ from the process's (only root may, and only root needs to:
// a user's own file stays theirs).
func keepOwner(tmp *os.File, old fs.FileInfo) error {
	if old == nil || os.Geteuid() != 0 {
		return nil
	}
	st, ok := old.Sys().(*syscall.Stat_t)
	if !ok || (int(st.Uid) == os.Geteuid() && int(st.Gid) == os.Getegid()) {
		return nil
	}
	return tmp.Chown(int(st.Uid), int(st.Gid))
}

// writable reports whether the process may write path (access(2) with
// W_OK), without opening it: opening a FIFO would wait for a reader, and
// closing it would end the reader's input.
func writable(path string) error {
	if err := syscall.Access(path, 2); err != nil {
		return &fs.PathError{Op: "access", Path: path, Err: err}
	}
	return nil
}

// fdOpen reports whether fd is an open descriptor of the process.
func fdOpen(fd int) error {
	var st syscall.Stat_t
	return syscall.Fstat(fd, &st)
}
