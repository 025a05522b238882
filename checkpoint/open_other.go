//go:build !unix

package checkpoint

import "os"

// openNonBlocking opens path for reading (readRegular checks its kind
// before and after).
func openNonBlocking(path string) (*os.File, error) { return os.Open(path) }
