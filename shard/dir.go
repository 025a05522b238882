package shard

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"colo/internal/atomicfile"
	"colo/internal/textio"
)

// The files of a shard directory, as colo shard writes it.
const (
	// ShardsFile holds one line per sample, in the dataset's order: its
	// worker 0..N-1, or * for a sample every worker gets (Broadcast).
	ShardsFile = "shards.txt"
	// SummaryFile is the run's summary as indented JSON: a Summary, or
	// a struct embedding one. It is written last: a directory without it
	// is incomplete.
	SummaryFile = "summary.json"
)

// WriteShards writes assign in the format of ShardsFile: one line per
// sample, its worker number or * for Broadcast.
func WriteShards(w io.Writer, assign []int) error {
	bw := bufio.NewWriterSize(w, 1<<16)
	var line []byte
	for _, a := range assign {
		line = line[:0]
		if a == Broadcast {
			line = append(line, '*')
		} else {
			line = strconv.AppendInt(line, int64(a), 10)
		}
		line = append(line, '\n')
		if _, err := bw.Write(line); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// ReadShards reads a file in the format of ShardsFile for workers
// workers; name labels the errors. Every line holds one token, a worker
// number in 0..workers-1 written in plain decimal digits (no sign, no
// leading zero: "+3" and "03" are refused) or *, with optional white
// space around it. An error names the file, the line and what was
// expected.
func ReadShards(r io.Reader, name string, workers int) ([]int, error) {
	if workers < 1 {
		return nil, &textio.ParseError{File: name, Msg: fmt.Sprintf("%d workers: want at least 1", workers)}
	}
	sc := bufio.NewScanner(r)
	var assign []int
	for line := 1; sc.Scan(); line++ {
		tok := bytes.TrimSpace(sc.Bytes())
		if len(tok) == 1 && tok[0] == '*' {
			assign = append(assign, Broadcast)
			continue
		}
		a, ok := textio.ParseIndex(tok, workers-1)
		if !ok {
			return nil, &textio.ParseError{File: name, Line: line,
				Msg: fmt.Sprintf("%q: want a worker number in 0..%d or * (every worker)", tok, workers-1)}
		}
		assign = append(assign, a)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s:%d: %w", name, len(assign)+1, err)
	}
	return assign, nil
}

// dirSummary holds the fields of a summary that ReadDir checks.
type dirSummary struct {
	Workers *int `json:"workers"`
	Samples *int `json:"samples"`
}

// parseDirSummary decodes the summary's workers and samples; name labels
// the errors.
func parseDirSummary(b []byte, name string) (workers int, samples int, err error) {
	var s dirSummary
	if err := json.Unmarshal(b, &s); err != nil {
		return 0, 0, fmt.Errorf("%s: %w: want a JSON object with \"workers\" and \"samples\"", name, err)
	}
	if s.Workers == nil || *s.Workers < 1 {
		return 0, 0, fmt.Errorf("%s: want a \"workers\" field of at least 1", name)
	}
	samples = -1
	if s.Samples != nil {
		samples = *s.Samples
	}
	return *s.Workers, samples, nil
}

// WriteDir writes a shard directory: assign as ShardsFile, then summary
// as SummaryFile, in dir (created if needed). summary must encode to a
// JSON object with a "workers" field, as Summary does; its "samples", if
// present, must equal len(assign), and every assignment must be Broadcast
// or a worker in 0..workers-1. Each file is replaced atomically (package
// internal/atomicfile); the old summary is removed first and the new one
// written last, so a directory holding a summary is complete. Nothing is
// written when the summary or the assignment is wrong.
func WriteDir(dir string, assign []int, summary any) error {
	var js bytes.Buffer
	enc := json.NewEncoder(&js)
	enc.SetIndent("", "  ")
	if err := enc.Encode(summary); err != nil {
		return fmt.Errorf("%s: encode the summary: %w", filepath.Join(dir, SummaryFile), err)
	}
	workers, samples, err := parseDirSummary(js.Bytes(), "summary")
	if err != nil {
		return fmt.Errorf("shard.WriteDir %s: %w", dir, err)
	}
	if samples >= 0 && samples != len(assign) {
		return fmt.Errorf("shard.WriteDir %s: the summary has %d samples, the assignment %d", dir, samples, len(assign))
	}
	for i, a := range assign {
		if a != Broadcast && (a < 0 || a >= workers) {
			return fmt.Errorf("shard.WriteDir %s: sample %d on worker %d: want 0..%d or Broadcast", dir, i, a, workers-1)
		}
	}
	if err := CheckDir(dir); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	// A stale summary from an earlier run must not vouch for new shards.
	// Only a regular file is removed: a link is followed when the new
	// summary is written, and a FIFO or a device is written through.
	if err := atomicfile.RemoveRegular(filepath.Join(dir, SummaryFile)); err != nil {
		return err
	}
	if err := atomicfile.Write(filepath.Join(dir, ShardsFile), func(w io.Writer) error { return WriteShards(w, assign) }); err != nil {
		return err
	}
	return atomicfile.Write(filepath.Join(dir, SummaryFile), func(w io.Writer) error { _, err := w.Write(js.Bytes()); return err })
}

// CheckDir reports whether WriteDir could write a shard directory at
// dir, without writing anything: dir, or its nearest ancestor that
// exists, must take new files, and each of shards.txt and summary.json
// already there must be a file atomicfile.Write can write: a directory
// or a block device in the place of one is refused, naming it. A command
// calls it before it reads the data; WriteDir calls it before it writes
// or removes anything.
func CheckDir(dir string) error {
	return atomicfile.CheckDirFiles(dir, ShardsFile, SummaryFile)
}

// maxSummary bounds the summary.json ReadDir reads.
const maxSummary = 64 << 20

// ReadDir reads a shard directory written by WriteDir (colo shard): the
// assignment of ShardsFile, one worker or Broadcast per sample, and the
// number of workers from SummaryFile's "workers". A directory without a
// summary is incomplete (the run failed or is still writing) and is
// refused. Errors name the file, and for shards.txt the line and what
// was expected; with a "samples" field in the summary, shards.txt must
// have that many lines.
func ReadDir(dir string) (assign []int, workers int, err error) {
	sumPath := filepath.Join(dir, SummaryFile)
	b, err := textio.ReadRegular(sumPath, maxSummary)
	if errors.Is(err, os.ErrNotExist) {
		return nil, 0, fmt.Errorf("%s: missing: %s is incomplete (the run that wrote it failed or has not finished)", sumPath, dir)
	}
	if err != nil {
		return nil, 0, err
	}
	workers, samples, err := parseDirSummary(b, sumPath)
	if err != nil {
		return nil, 0, err
	}
	shardsPath := filepath.Join(dir, ShardsFile)
	f, size, err := textio.OpenRegular(shardsPath)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	if assign, err = ReadShards(io.LimitReader(f, size), shardsPath, workers); err != nil {
		return nil, 0, err
	}
	if samples >= 0 && len(assign) != samples {
		return nil, 0, fmt.Errorf("%s: %d lines, %s has %d samples: want one line per sample", shardsPath, len(assign), SummaryFile, samples)
	}
	return assign, workers, nil
}
