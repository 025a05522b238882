// Package datasum names the data a job, a placement or a shard directory
// was made from by a checksum of its files: the CRC-32C (Castagnoli) of
// their bytes as stored (compressed or not), one after another, written
// "crc32c:1a2b3c4d". Two datasets with the same number of samples (a9a
// and a8a cut to one size, MNIST and Fashion-MNIST) get different sums,
// so that what was made from one is not taken for the other; the same
// bytes under another name or path get the same sum.
//
// Cost: one sequential read of every file, O(bytes), at the speed of the
// hardware CRC (several GB/s); nothing is kept in memory beyond a 1 MiB
// buffer.
//
//	sum, err := datasum.Files("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz")
package datasum

import (
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"strings"
)

// Prefix starts every sum Files returns.
const Prefix = "crc32c:"

// Files returns the checksum of the files' bytes, in the order given;
// empty paths are skipped. Errors name the file.
func Files(paths ...string) (string, error) {
	h := crc32.New(crc32.MakeTable(crc32.Castagnoli))
	buf := make([]byte, 1<<20)
	for _, p := range paths {
		if p == "" {
			continue
		}
		f, err := os.Open(p)
		if err != nil {
			return "", fmt.Errorf("checksum of the data: %w", err)
		}
		_, err = io.CopyBuffer(h, f, buf)
		f.Close()
		if err != nil {
			return "", fmt.Errorf("checksum of the data: %s: %w", p, err)
		}
	}
	return fmt.Sprintf("%s%08x", Prefix, h.Sum32()), nil
}

// Valid reports whether s is a sum as Files writes it.
func Valid(s string) bool {
	hex, ok := strings.CutPrefix(s, Prefix)
	if !ok || len(hex) != 8 {
		return false
	}
	for _, c := range hex {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}
