// Package atomicfile is the one way colo writes a command's outputs
// (--json, -o, --svg, --trace, --metrics-file, part files, checkpoints):
// a reader, or a later run after a crash, finds either the old file or
// the whole new one, never a part, and what is not a regular file is
// never replaced.
//
// What Write (or Create) does depends on what the path names:
//
//   - A regular file, or nothing: the content goes through a buffer into a
//     temporary file in the target's directory (so that the final rename
//     stays on one file system), is synced to disk, given the permission
//     bits of the file it replaces (Mode for a new file; as root, also its
//     owner) and renamed over the target. A file the process may not write
//     (a 0444 file for a user other than root) is refused, as the shell's
//     redirection refuses it.
//   - A character device (/dev/null, a terminal), a FIFO or a Unix socket:
//     the content is written through to it; it is never replaced.
//   - One of the process's own descriptors (/dev/stdout, /dev/stderr,
//     /dev/fd/N, /proc/self/fd/N): written to that descriptor, whatever it
//     is (a terminal, a pipe, a socket, or a file the shell opened), so
//     that --json=/dev/stdout works as --json=- does.
//   - A symbolic link: followed, link after link, to its target, which is
//     then treated by its own kind; a link to a missing file creates the
//     file where the link points, and the link stays.
//   - A directory or a block device: refused.
//
// If the writing function, the sync or the rename fails, the temporary
// file is removed and the target is left as it was. Errors name the path
// (and the link's target when they differ).
//
// Check reports, before any work, whether Write could write a path; a
// command calls it for every output it will write, so that a path it
// cannot write fails at once instead of after hours of training.
// CheckDir does the same for a directory of files (a checkpoint or a
// placement directory).
//
// A directory of several files that must appear together (part files and
// a summary, shards and a summary) is written one file at a time with the
// file that vouches for the others last: see placement.WriteDir and
// shard.WriteDir.
//
// Example:
//
//	err := atomicfile.Write("out/data.part", func(w io.Writer) error {
//		_, err := fmt.Fprintln(w, 3)
//		return err
//	})
package atomicfile

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"syscall"
)

// Mode is the permission of a file Write creates where none was.
const Mode = 0o644

// bufSize is the size of the buffer between write and the file.
const bufSize = 1 << 16

// maxLinks bounds the symbolic links followed from one path, as the
// kernel's own bound (40 on Linux) does.
const maxLinks = 40

// Write writes what write writes to path, by path's kind (see the package
// documentation): a regular file is replaced atomically with its mode
// kept, a device, FIFO or socket is written through. The writer passed to
// write is buffered; write need not flush it. The directory of a new file
// must exist. On any error a regular file at path is unchanged and no
// temporary file remains; the error names path.
func Write(path string, write func(w io.Writer) error) error {
	f, err := Create(path)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Abort()
		return f.wrap(err)
	}
	return f.Commit()
}

// Replaces reports whether Write(path, …) would replace a file, that is
// whether path names (through its links) a regular file or nothing, rather
// than a device, a FIFO, a socket or a descriptor written through. A
// writer that puts a second file beside its output (a PNG beside an SVG)
// does so only then: /dev/null.png is no place for it.
func Replaces(path string) bool {
	t, err := resolve(path)
	return err == nil && t.fd < 0 && (t.info == nil || t.info.Mode().IsRegular())
}

// Descriptor reports the descriptor of the process that path names
// through its links (/dev/stdout is 1), if it names one.
func Descriptor(path string) (fd int, ok bool) {
	t, err := resolve(path)
	return t.fd, err == nil && t.fd >= 0
}

// File is an output being written: Create opens it, Write adds to it,
// and Commit makes it the content of its path (Abort drops it). It suits
// a writer that streams for a whole run, such as a CPU profile.
type File struct {
	path, target string // the path asked for; what it resolves to
	w            *bufio.Writer
	f            io.WriteCloser
	os           *os.File // the temporary file when replacing; nil when writing through
	mode         fs.FileMode
	old          fs.FileInfo // the file replaced, or nil
	done         bool
}

// Create opens path for writing by its kind: a temporary file beside a
// regular (or new) file, or the device, FIFO, socket or descriptor
// itself. Nothing at path changes before Commit. The error names path.
func Create(path string) (*File, error) {
	t, err := resolve(path)
	if err != nil {
		return nil, fmt.Errorf("write %s: %w", path, err)
	}
	f := &File{path: path, target: t.path}
	switch {
	case t.fd >= 0:
		w, err := dupFile(t.fd, path)
		if err != nil {
			return nil, f.wrap(err)
		}
		f.f = w
	case t.info == nil || t.info.Mode().IsRegular():
		if err := f.createTemp(t.info); err != nil {
			return nil, f.wrap(err)
		}
	case t.info.Mode()&fs.ModeSocket != 0:
		c, err := net.Dial("unix", t.path)
		if err != nil {
			return nil, f.wrap(err)
		}
		f.f = c
	case t.info.Mode()&fs.ModeNamedPipe != 0 || t.info.Mode()&fs.ModeCharDevice != 0:
		// Neither created nor truncated: a device or a FIFO is written
		// to as it is. Opening a FIFO waits for its reader, as the
		// shell's redirection does.
		w, err := os.OpenFile(t.path, os.O_WRONLY, 0)
		if err != nil {
			return nil, f.wrap(err)
		}
		f.f = w
	default:
		return nil, f.wrap(refuse(t.info))
	}
	f.w = bufio.NewWriterSize(f.f, bufSize)
	return f, nil
}

// createTemp opens the temporary file beside the target, refusing an
// existing file the process may not write and a new file in a missing
// directory.
func (f *File) createTemp(old fs.FileInfo) error {
	dir := filepath.Dir(f.target)
	if old != nil {
		w, err := os.OpenFile(f.target, os.O_WRONLY, 0) // neither truncates nor changes it
		if err != nil {
			return err
		}
		w.Close()
		f.mode, f.old = old.Mode().Perm(), old
	} else {
		f.mode = Mode
		if err := isDir(dir); err != nil {
			return err
		}
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(f.target)+".tmp*")
	if err != nil {
		return err
	}
	f.f, f.os = tmp, tmp
	return nil
}

// Write adds p to the output.
func (f *File) Write(p []byte) (int, error) { return f.w.Write(p) }

// Commit flushes the output and, for a regular file, syncs the temporary
// file, gives it its mode and renames it over the path. After an error
// the path is as it was and the temporary file is gone.
func (f *File) Commit() (err error) {
	if f.done {
		return f.wrap(errors.New("already committed or aborted"))
	}
	defer func() {
		if err != nil {
			f.Abort()
			err = f.wrap(err)
		}
		f.done = true
	}()
	if err := f.w.Flush(); err != nil {
		return err
	}
	if f.os == nil {
		return f.f.Close()
	}
	if err := f.os.Chmod(f.mode); err != nil {
		return err
	}
	if err := keepOwner(f.os, f.old); err != nil {
		return err
	}
	if err := f.os.Sync(); err != nil {
		return err
	}
	if err := f.os.Close(); err != nil {
		return err
	}
	return os.Rename(f.os.Name(), f.target)
}

// Abort drops the output: the temporary file is removed and the path is
// left as it was (what was written through to a device stays written).
// It does nothing after Commit.
func (f *File) Abort() {
	if f.done {
		return
	}
	f.done = true
	f.f.Close()
	if f.os != nil {
		os.Remove(f.os.Name())
	}
}

// wrap names the path, and its target when a link led elsewhere.
func (f *File) wrap(err error) error {
	if pe, ok := err.(*fs.PathError); ok && pe.Op == "write" && (pe.Path == f.path || pe.Path == f.target) {
		err = pe.Err // "write /dev/full: no space left on device", said once
	}
	if f.target != "" && f.target != filepath.Clean(f.path) {
		return fmt.Errorf("write %s (a link to %s): %w", f.path, f.target, err)
	}
	return fmt.Errorf("write %s: %w", f.path, err)
}

// target is what a path resolves to: a descriptor of the process (fd ≥ 0),
// or a path with no link at its end and what is there (info nil when
// nothing is).
type target struct {
	path string
	info fs.FileInfo
	fd   int
}

// descriptor matches the names of the process's own descriptors:
// /dev/fd/N and /proc/WHO/fd/N, WHO being self, thread-self or a PID.
var descriptor = regexp.MustCompile(`^/(?:dev|proc/(self|thread-self|[0-9]+))/fd/([0-9]+)$`)

// resolve follows the links at the end of path to what they name.
func resolve(path string) (target, error) {
	p := filepath.Clean(path)
	for range maxLinks {
		if fd, ok := descriptorOf(p); ok {
			return target{path: p, fd: fd}, nil
		}
		fi, err := os.Lstat(p)
		switch {
		case errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR):
			return target{path: p, fd: -1}, nil
		case err != nil:
			return target{}, err
		case fi.Mode()&fs.ModeSymlink == 0:
			return target{path: p, info: fi, fd: -1}, nil
		}
		l, err := os.Readlink(p)
		if err != nil {
			return target{}, err
		}
		if !filepath.IsAbs(l) {
			l = filepath.Join(filepath.Dir(p), l)
		}
		p = filepath.Clean(l)
	}
	return target{}, fmt.Errorf("more than %d symbolic links", maxLinks)
}

// descriptorOf reports the descriptor of this process that p names:
// /dev/stdout, /dev/stderr, /dev/fd/N, /proc/self/fd/N or /proc/PID/fd/N
// with this process's PID.
func descriptorOf(p string) (int, bool) {
	switch p {
	case "/dev/stdout":
		return 1, true
	case "/dev/stderr":
		return 2, true
	}
	m := descriptor.FindStringSubmatch(p)
	if m == nil {
		return 0, false
	}
	if who := m[1]; who != "" && who != "self" && who != "thread-self" && who != strconv.Itoa(os.Getpid()) {
		return 0, false
	}
	fd, err := strconv.Atoi(m[2])
	return fd, err == nil
}

// isDir reports why dir cannot hold a new file.
func isDir(dir string) error {
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("directory %s does not exist", dir)
	case err != nil:
		return err
	case !st.IsDir():
		return fmt.Errorf("%s is not a directory", dir)
	}
	return nil
}

// refuse says why a kind of file is not written.
func refuse(fi fs.FileInfo) error {
	switch {
	case fi.IsDir():
		return errors.New("it is a directory")
	case fi.Mode()&fs.ModeDevice != 0:
		return errors.New("it is a block device: colo writes files, character devices, FIFOs and sockets, never a disk")
	}
	return fmt.Errorf("cannot write a file of mode %v", fi.Mode())
}
