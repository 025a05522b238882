//go:build unix

package checkpoint

import (
	"os"
	"syscall"
)

// openNonBlocking opens path for reading without following a symbolic
// link and without blocking on a FIFO (readRegular then refuses it).
func openNonBlocking(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOFOLLOW, 0)
}
