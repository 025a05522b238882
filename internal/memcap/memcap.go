// Package memcap caps the memory of a test process, so that a fuzz target
// whose reader allocates what its input claims, beyond its budget, dies of
// the runtime's fatal "out of memory" (a crash the fuzzer reports and
// keeps as a failing input) instead of taking the machine's memory.
//
// Cap lowers the soft address-space limit (RLIMIT_AS, as ulimit -v does)
// to the address space the process maps already plus the bytes given, and
// restores it when the test ends. Go's fuzzer runs its inputs in worker
// processes that call the fuzz target's function before fuzzing, so a
// call at the top of FuzzX caps every worker:
//
//	func FuzzReadIDX(f *testing.F) {
//		memcap.Cap(f, 1<<30)
//		...
//		f.Fuzz(func(t *testing.T, in []byte) { ... ReadIDX with a budget of 256 MiB ... })
//	}
//
// Where the limit cannot be set (another OS, or a hard limit lower than
// the one asked for), Cap logs why and leaves the process as it is.
package memcap

import (
	"bytes"
	"os"
	"strconv"
	"testing"
)

// Cap limits the address space of the process to what it maps now plus
// extra bytes until tb ends.
func Cap(tb testing.TB, extra int64) {
	tb.Helper()
	mapped := vmSize()
	if mapped <= 0 {
		tb.Logf("memcap: no VmSize in /proc/self/status: memory not capped")
		return
	}
	restore, err := setLimit(mapped + extra)
	if err != nil {
		tb.Logf("memcap: memory not capped: %v", err)
		return
	}
	tb.Cleanup(restore)
}

// vmSize returns the address space the process maps (VmSize of
// /proc/self/status) in bytes, or 0.
func vmSize() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range bytes.Lines(b) {
		if rest, ok := bytes.CutPrefix(line, []byte("VmSize:")); ok {
			f := bytes.Fields(rest)
			if len(f) > 0 {
				kb, err := strconv.ParseInt(string(f[0]), 10, 64)
				if err == nil {
					return kb << 10
				}
			}
		}
	}
	return 0
}
