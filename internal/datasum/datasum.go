// Package datasum names the data a job, a placement or a shard directory
// was made from by a checksum of its files: the CRC-32C (Castagnoli) of
// their bytes as stored (compressed or not), one after another, written
// "crc32c:1a2b3c4d". Two datasets with the same number of samples (a9a
// and a8a cut to one size, MNIST and Fashion-MNIST) get different sums,
// so that what was made from one is not taken for the other; the same
// bytes under another name or path get the same sum.
//
// A placement or shard directory records the sum of the data it was made
// from in its summary.json (the field SummaryField), and Check refuses to
// apply it to other data.
//
// Cost: one sequential read of every file, O(bytes), at the speed of the
// hardware CRC (several GB/s); nothing is kept in memory beyond a 1 MiB
// buffer.
//
//	sum, err := datasum.Files("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz")
package datasum

import (
	"encoding/json"
	"fmt"
	"hash/crc32"
	"io"
	"strings"

	"colo/internal/textio"
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
		f, err := textio.Open(p)
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

// SummaryField is the field of a placement's or a shard directory's
// summary.json that holds the sum of the data it was made from.
const SummaryField = "data_checksum"

// maxSummary bounds the summary file Check reads.
const maxSummary = 64 << 20

// Check compares the sum that the summary file summaryPath records of
// the data it was made from with sum, the sum of the data about to be
// placed, named data in messages. A summary without one (written before
// colo recorded it) passes with a warning; another sum is an error that
// names both. An empty sum checks nothing.
func Check(summaryPath, sum, data string) (warning string, err error) {
	if sum == "" {
		return "", nil
	}
	// A FIFO or a device in the summary's place is refused unread: a
	// FIFO waited for a writer, a link to /dev/zero was read until
	// memory ran out.
	b, err := textio.ReadRegular(summaryPath, maxSummary)
	if err != nil {
		return "", err
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(b, &fields); err != nil {
		return "", fmt.Errorf("%s: %w: want a JSON object", summaryPath, err)
	}
	raw, ok := fields[SummaryField]
	if !ok {
		return fmt.Sprintf("%s records no %s (written by an earlier colo): not checked against %s", summaryPath, SummaryField, data), nil
	}
	var got string
	if err := json.Unmarshal(raw, &got); err != nil || !Valid(got) {
		return "", fmt.Errorf("%s: %s %s: want %s and 8 hexadecimal digits", summaryPath, SummaryField, raw, Prefix)
	}
	if got != sum {
		return "", fmt.Errorf("%s: made from other data: %s %s, but %s is %s", summaryPath, SummaryField, got, data, sum)
	}
	return "", nil
}
