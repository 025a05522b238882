//go:build !unix

package atomicfile

import (
	"errors"
	"io/fs"
	"os"
)

func dupFile(fd int, name string) (*os.File, error) {
	return nil, errors.New("descriptors are written only on Unix")
}

func keepOwner(*os.File, fs.FileInfo) error { return nil }

func writable(string) error { return nil }

func fdOpen(int) error { return errors.New("descriptors are written only on Unix") }
