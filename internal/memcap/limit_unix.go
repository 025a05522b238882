//go:build unix

package memcap

import (
	"fmt"
	"syscall"
)

// setLimit sets the soft RLIMIT_AS to n bytes (not above the hard limit)
// and returns what restores the old one.
func setLimit(n int64) (func(), error) {
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_AS, &old); err != nil {
		return nil, fmt.Errorf("getrlimit: %w", err)
	}
	if uint64(n) >= old.Cur {
		return func() {}, nil // already capped lower
	}
	lim := old
	lim.Cur = uint64(n)
	if err := syscall.Setrlimit(syscall.RLIMIT_AS, &lim); err != nil {
		return nil, fmt.Errorf("setrlimit: %w", err)
	}
	return func() { syscall.Setrlimit(syscall.RLIMIT_AS, &old) }, nil
}
