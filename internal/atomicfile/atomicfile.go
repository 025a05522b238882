// Package atomicfile writes a file so that a reader, or a later run after
// a crash, finds either the old file or the whole new one, never a part.
//
// Write sends the content through a buffer into a temporary file in the
// target's directory (so the final rename stays on one file system), syncs
// it to disk, gives it mode 0644 and renames it over the target. If the
// writing function, the sync or the rename fails, the temporary file is
// removed and the target is left as it was. Errors name the target path.
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
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Mode is the permission of every file Write creates.
const Mode = 0o644

// bufSize is the size of the buffer between write and the file.
const bufSize = 1 << 16

// Write replaces the file at path with what write writes. The writer
// passed to write is buffered; write need not flush it. The directory of
// path must exist. On any error the file at path is unchanged and no
// temporary file remains; the error names path.
func Write(path string, write func(w io.Writer) error) (err error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
			err = fmt.Errorf("write %s: %w", path, err)
		}
	}()
	bw := bufio.NewWriterSize(tmp, bufSize)
	if err := write(bw); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	if err := tmp.Chmod(Mode); err != nil {
		return err
	}
	if err := tmp.Sync(); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
