package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"colo/partition"
)

// `colo partition --memory`: Parsa out of core (partition.ParsaFile).

// memoryFlags are --memory and --spill-dir.
type memoryFlags struct {
	memory string
	spill  string
}

func (m *memoryFlags) register(f *cmdFlags) {
	f.StringVar(&m.memory, "memory", "auto", "parsa: partition out of core within `SIZE` (64MiB, 2GB, ...), streaming the blocks\n"+
		"from disk; auto: out of core only when the file would not fit in the available memory;\noff: always in memory")
	f.StringVar(&m.spill, "spill-dir", "", "out of core: `DIR` for the temporary spill files (default: the system's temporary directory)")
}

// outOfCoreExpansion is how many bytes of memory a loaded graph and the
// loading take per byte of its text: 8 bytes per edge both ways, twice
// while building, against about 9 bytes of libsvm text per edge; a
// compressed file counts 10 bytes of text per byte.
const (
	outOfCoreExpansion  = 3
	compressedExpansion = 10
)

// cap decides whether to partition out of core and within what: a size,
// or with auto half the available memory when the file's estimated
// in-memory size exceeds the available memory. ok is false for an
// in-memory run.
func (m *memoryFlags) cap(path, algo string) (cap int64, ok bool, err error) {
	switch strings.ToLower(m.memory) {
	case "off":
		return 0, false, nil
	case "auto", "":
		if algo != "parsa" {
			return 0, false, nil
		}
		fi, err := os.Stat(path)
		if err != nil {
			return 0, false, nil // the loader reports it
		}
		avail := availableMemory()
		if avail <= 0 {
			return 0, false, nil
		}
		est := fi.Size() * outOfCoreExpansion
		if compressed(path) {
			est *= compressedExpansion
		}
		if est <= avail {
			return 0, false, nil
		}
		return avail / 2, true, nil
	}
	c, err := partition.ParseBytes(m.memory)
	if err != nil {
		return 0, false, usageError("--memory %s: %v", m.memory, err)
	}
	if c <= 0 {
		return 0, false, usageError("--memory %s: want a positive size, auto or off", m.memory)
	}
	if algo != "parsa" {
		return 0, false, usageError("--memory %s: only --algo parsa runs out of core, not %s", m.memory, algo)
	}
	return c, true, nil
}

// compressed reports whether the file starts with the magic bytes of gzip,
// xz, zstd or bzip2.
func compressed(path string) bool {
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

// availableMemory returns MemAvailable of /proc/meminfo in bytes, or 0.
func availableMemory() int64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "MemAvailable:"); ok {
			fields := strings.Fields(rest)
			if len(fields) > 0 {
				kb, _ := strconv.ParseInt(fields[0], 10, 64)
				return kb << 10
			}
		}
	}
	return 0
}

// runPartitionFile is runPartition out of core: partition.ParsaFile, then
// the summary and the placement directory as in memory.
func runPartitionFile(e *env, path, out, algo string, opt partition.Options, df *dataFlags, mf *memoryFlags, memCap int64, j *jsonFlag) error {
	load, err := df.options()
	if err != nil {
		return err
	}
	ph := startPhase(e, "partition "+algo+" out of core within "+partition.FormatBytes(memCap), 0)
	opt.Progress = ph.set
	opt.Phase = func(name string, done, total int) { ph.event("%s done (%d/%d)", name, done, total) }
	details := map[string]any{}
	opt.Report = func(name string, v any) { details[name] = v }
	start := time.Now()
	res, err := partition.ParsaFile(path, opt, partition.OutOfCore{Memory: memCap, TempDir: mf.spill, Load: load})
	if err != nil {
		ph.abort()
		var me *partition.MemoryError
		switch {
		case strings.EqualFold(mf.memory, "auto"):
			// Say why the run is out of core at all.
			return fmt.Errorf("--memory auto (%s would not fit in memory: out of core within %s): %w", path, partition.FormatBytes(memCap), err)
		case errors.As(err, &me):
			return fmt.Errorf("--memory %s: %s: %w", mf.memory, path, err)
		}
		return err
	}
	defer res.Close()
	took := time.Since(start)
	ph.finish("")
	s := res.Summary
	s.Algorithm, s.Seed, s.Seconds = algo, opt.Seed, took.Seconds()
	s.Details = details
	stamped, err := e.stamp(s)
	if err != nil {
		return err
	}
	if err := res.WriteDir(out, json.RawMessage(stamped)); err != nil {
		return err
	}
	if j.path != "" {
		if err := writeJSON(e, j.path, s); err != nil {
			return err
		}
	}
	st := res.Stats
	fmt.Fprintf(e.out, "%s: %s samples, %s parameters, %s edges; read out of core (%s)\n", path,
		commas(int64(s.NumSamp)), commas(int64(s.NumParams)), commas(s.NumEdges), st.Format)
	fmt.Fprintf(e.out, "%s on %d machines (seed %d) in %.3f s (%.2f M edges/s), written to %s\n", algo, opt.K, opt.Seed,
		took.Seconds(), float64(s.NumEdges)/took.Seconds()/1e6, out)
	fmt.Fprintf(e.out, "memory: cap %s, estimated need %s, peak resident %s, peak Go heap %s; %d blocks, %s spilled\n\n",
		partition.FormatBytes(memCap), partition.FormatBytes(st.Needed), partition.FormatBytes(st.PeakRSS),
		partition.FormatBytes(st.PeakHeap), st.Blocks, partition.FormatBytes(st.SpillBytes))
	return printCostTable(e.out, s)
}
