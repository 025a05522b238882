//go:build unix

package graph

import "syscall"

// minorFaults returns the minor page faults of the process so far, or -1
// when they cannot be read.
func minorFaults() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return -1
	}
	return int64(ru.Minflt)
}
