package ooc

import (
	"bytes"
	"os"

	"colo/internal/membudget"
)

// The estimate of AutoMemory: a loaded graph and its loading take about
// 3 bytes of memory per byte of libsvm text (8 bytes per edge both ways,
// twice while building, against about 9 bytes of text per edge); a
// compressed file counts 10 bytes of text per byte.
const (
	outOfCoreExpansion  = 3
	compressedExpansion = 10
)

// AutoMemory decides whether to partition the file at path out of core
// when no cap is given (colo partition --memory auto): when its estimated
// in-memory size exceeds the memory available (availableMemory: the
// memory budget's figure, see colo/internal/membudget), it returns half
// of that as the cap and true; otherwise,
// or when either cannot be known, 0 and false (in memory; the loader
// reports a file it cannot read).
func AutoMemory(path string) (int64, bool) {
	fi, err := os.Stat(path)
	if err != nil {
		return 0, false
	}
	avail := availableMemory()
	if avail <= 0 {
		return 0, false
	}
	est := fi.Size() * outOfCoreExpansion
	if compressedFile(path) {
		est *= compressedExpansion
	}
	if est <= avail {
		return 0, false
	}
	return avail / 2, true
}

// compressedFile reports whether the file starts with the magic bytes of
// gzip, xz, zstd or bzip2.
func compressedFile(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	head := make([]byte, 6)
	n, _ := f.Read(head)
	head = head[:n]
	for _, magic := range [][]byte{{0x1f, 0x8b}, {0xfd, '7', 'z', 'X', 'Z', 0}, {0x28, 0xb5, 0x2f, 0xfd}, {'B', 'Z', 'h'}} {
		if bytes.HasPrefix(head, magic) {
			return true
		}
	}
	return false
}

// availableMemory returns the memory the process can take
// (membudget.Available: MemAvailable, the cgroup's limit less its use,
// the address-space limit), or 0.
func availableMemory() int64 { return membudget.Available() }
