// Package membudget is the memory budget of colo's loaders: how much a
// reader may allocate for what a file declares or holds, and the error
// that refuses more, naming the file, the line and the figures.
//
// Every loader that sizes memory from its input (a header's dimensions, a
// CSV's width, the edges of a libsvm or SNAP file, a compressed stream's
// window) checks its need against a budget before it allocates, so that
// a hostile or mistaken file ends in an error that says what it would
// have cost, never in the runtime's fatal "out of memory".
//
// A budget is a number of bytes in an int64 as options carry it:
//
//   - 0 (Auto) is the machine's default, Default(): three quarters of the
//     smallest of the memory available (MemAvailable of /proc/meminfo), the
//     cgroup's limit less its use, and the address-space limit of the
//     process (ulimit -v); without any of them, no budget;
//   - a negative value (Off) is no budget: only the bounds that the file
//     itself sets (a header may not declare more than the file can hold);
//   - a positive value is that many bytes.
//
// The command line sets it with --memory-budget SIZE (Parse: 512MiB, 4GB,
// auto, off). Text lines have a limit of their own, derived from the
// budget (MaxLine): the length at which a loader stops assembling a line
// and refuses it.
//
// Example, in a loader that is about to allocate n float32 values:
//
//	if err := membudget.Check(opt.Memory, path, line, "1000 × 1000000 float32 features", 4*n); err != nil {
//		return nil, err
//	}
//
// Cost: Default reads two or three small files of /proc and /sys (about
// 50 µs); Check is arithmetic.
package membudget

import (
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
)

// The special budgets.
const (
	// Auto is the machine's default budget (Default).
	Auto int64 = 0
	// Off is no budget.
	Off int64 = -1
)

// Flag is the command-line flag that sets the budget, named in Error.
const Flag = "--memory-budget"

// Fraction of the machine's available memory that Default budgets, as
// numerator and denominator.
const (
	fractionNum = 3
	fractionDen = 4
)

// Default returns the machine's default budget in bytes: three quarters
// of the smallest of MemAvailable (/proc/meminfo), the cgroup's memory
// limit less its current use (cgroup v2 memory.max and memory.current, or
// v1 memory.limit_in_bytes and memory.usage_in_bytes) and the process's
// address-space limit (RLIMIT_AS). When none can be read it returns
// math.MaxInt64: no budget.
func Default() int64 {
	avail := Available()
	if avail <= 0 {
		return math.MaxInt64
	}
	return avail / fractionDen * fractionNum
}

// Available returns the memory the process can take in bytes: the
// smallest of MemAvailable, the cgroup's limit less its use and the
// address-space limit (see Default), or 0 when none can be read.
func Available() int64 {
	avail := int64(math.MaxInt64)
	if m := meminfoAvailable(); m > 0 {
		avail = m
	}
	if c := cgroupFree(); c > 0 {
		avail = min(avail, c)
	}
	if a := addressSpaceLimit(); a > 0 {
		avail = min(avail, a)
	}
	if avail == math.MaxInt64 {
		return 0
	}
	return avail
}

// Resolve returns the budget in bytes that limit stands for: Default()
// for Auto, math.MaxInt64 for a negative limit, limit otherwise.
func Resolve(limit int64) int64 {
	switch {
	case limit == Auto:
		return Default()
	case limit < 0:
		return math.MaxInt64
	}
	return limit
}

// The bounds of MaxLine.
const (
	MinLine    = 1 << 20
	MaxLineCap = 64 << 20
)

// MaxLine returns the longest text line, in bytes, that a loader reads
// under the budget limit (resolved already, see Resolve): a sixteenth of
// it, at least MinLine (1 MiB) and at most MaxLineCap (64 MiB). A parser
// may hold several times a line's length while it splits it (Go's CSV
// reader about 40 bytes per one-byte field), so a line is a fraction of
// the budget; 64 MiB is longer than the dense rows of a million features.
func MaxLine(limit int64) int {
	return int(min(max(limit/16, MinLine), MaxLineCap))
}

// Error is a need that exceeds the budget. It names the file (empty when
// the caller names it), the line (from 1; 0 for a header or the whole
// file), what was to be allocated and both figures.
type Error struct {
	File  string
	Line  int
	What  string // what needs the memory, e.g. "262144×512×512 unsigned bytes and their float32 features"
	Need  int64  // bytes
	Limit int64  // bytes, resolved
}

func (e *Error) Error() string {
	pos := e.File
	if e.Line > 0 {
		pos = fmt.Sprintf("%s:%d", e.File, e.Line)
	}
	msg := fmt.Sprintf("%s need %s of memory, more than the memory budget of %s (raise it with %s SIZE, or off)",
		e.What, FormatBytes(e.Need), FormatBytes(e.Limit), Flag)
	if pos == "" {
		return msg // the caller names the file
	}
	return pos + ": " + msg
}

// Check returns an *Error when need bytes exceed the budget limit (as
// options carry it: Auto, Off or bytes), nil otherwise. file, line and
// what describe the need for the error (see Error).
func Check(limit int64, file string, line int, what string, need int64) error {
	b := Resolve(limit)
	if need <= b {
		return nil
	}
	return &Error{File: file, Line: line, What: what, Need: need, Limit: b}
}

// Is reports whether err is or wraps an *Error.
func Is(err error) bool {
	_, ok := errors.AsType[*Error](err)
	return ok
}

// Parse reads a budget as the command line spells it: auto (Auto), off or
// none (Off), or a size: a number of bytes with an optional unit, binary
// (K, KiB, M, MiB, G, GiB, T, TiB) or decimal (KB, MB, GB, TB).
func Parse(s string) (int64, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "auto", "":
		return Auto, nil
	case "off", "none":
		return Off, nil
	}
	b, err := ParseSize(s, "memory budget", "a size (512MiB, 4GB), auto or off")
	if err == nil && b < 1 {
		return 0, fmt.Errorf("memory budget %q: want at least one byte, auto or off", s)
	}
	return b, err
}

// ParseSize reads a size: a number of bytes with an optional unit, binary
// (K, KiB, M, MiB, G, GiB, T, TiB) or decimal (KB, MB, GB, TB), in any
// case ("64M" is 64 MiB). Its errors start with what and s, and say want
// when s is no number.
func ParseSize(s, what, want string) (int64, error) {
	t := strings.TrimSpace(s)
	i := 0
	for i < len(t) && (t[i] >= '0' && t[i] <= '9' || t[i] == '.') {
		i++
	}
	num, unit := t[:i], strings.ToLower(strings.TrimSpace(t[i:]))
	x, err := strconv.ParseFloat(num, 64)
	if err != nil || num == "" {
		return 0, fmt.Errorf("%s %q: want %s", what, s, want)
	}
	mult := map[string]float64{"": 1, "b": 1,
		"k": 1 << 10, "kib": 1 << 10, "kb": 1e3,
		"m": 1 << 20, "mib": 1 << 20, "mb": 1e6,
		"g": 1 << 30, "gib": 1 << 30, "gb": 1e9,
		"t": 1 << 40, "tib": 1 << 40, "tb": 1e12}[unit]
	if mult == 0 {
		return 0, fmt.Errorf("%s %q: unknown unit %q: want B, KiB, MiB, GiB, TiB (or K, M, G, T) or KB, MB, GB, TB", what, s, t[i:])
	}
	if v := x * mult; v < math.MaxInt64 {
		return int64(v), nil
	}
	return 0, fmt.Errorf("%s %q: too large", what, s)
}

// FormatBytes writes a size in the largest binary unit below it, with the
// exact number of bytes when that unit is not bytes.
func FormatBytes(b int64) string {
	if b == math.MaxInt64 {
		return "unlimited"
	}
	units := []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}
	x := float64(b)
	u := 0
	for x >= 1024 && u < len(units)-1 {
		x /= 1024
		u++
	}
	if u == 0 {
		return fmt.Sprintf("%d B", b)
	}
	return fmt.Sprintf("%.1f %s", x, units[u])
}

// meminfoAvailable returns MemAvailable of /proc/meminfo in bytes, or 0.
func meminfoAvailable() int64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, "MemAvailable:"); ok {
			if f := strings.Fields(rest); len(f) > 0 {
				kb, err := strconv.ParseInt(f[0], 10, 64)
				if err == nil && kb > 0 && kb < math.MaxInt64>>10 {
					return kb << 10
				}
			}
		}
	}
	return 0
}

// cgroupFree returns the cgroup's memory limit less its use in bytes, or
// 0 when there is no limit or it cannot be read.
func cgroupFree() int64 {
	for _, p := range [][2]string{
		{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"},
		{"/sys/fs/cgroup/memory/memory.limit_in_bytes", "/sys/fs/cgroup/memory/memory.usage_in_bytes"},
	} {
		limit := readInt(p[0])
		if limit <= 0 || limit >= 1<<60 { // "max", or v1's "no limit"
			continue
		}
		return max(limit-max(readInt(p[1]), 0), 1)
	}
	return 0
}

// readInt reads a file holding one decimal integer, or returns -1.
func readInt(path string) int64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return -1
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return -1
	}
	return n
}
