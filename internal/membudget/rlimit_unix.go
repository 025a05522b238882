//go:build unix

package membudget

import (
	"math"
	"syscall"
)

// addressSpaceLimit returns the soft RLIMIT_AS of the process in bytes, or
// 0 when there is none.
func addressSpaceLimit() int64 {
	var r syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_AS, &r); err != nil || r.Cur >= math.MaxInt64 {
		return 0
	}
	return int64(r.Cur)
}
