//go:build !unix

package textio

import "os"

// openNonBlocking opens path for reading (OpenRegular checks its kind).
func openNonBlocking(path string) (*os.File, error) { return os.Open(path) }
