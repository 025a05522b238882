package graph

import (
	"colo/internal/membudget"

	"bytes"
	"fmt"
	"io"
	"math"
	"runtime"
	"slices"
	"strconv"
)

// criteoFields is the number of columns of a Criteo line: the label, 13
// integer and 26 categorical features.
const (
	criteoFields = 40
	criteoInts   = 13
)

// ReadCriteo reads Criteo-style click logs from r, which must be
// decompressed already; name is used in errors and as Meta.Source.
//
// Each non-blank line is a sample of up to 40 tab-separated fields: the
// label 0 or 1, then the integer features I1..I13 (columns 1..13), then the
// categorical features C1..C26 (columns 14..39, usually 8 hex digits). An
// empty field is a missing value, and so are trailing fields left out; more
// than 40 fields is an error. "\r\n" line endings are accepted.
//
// Each present feature becomes one parameter whose id is
// hash(column, token) mod 2^opt.HashBits, where the hash is FNV-1a (64-bit)
// over the column number and the token's bytes followed by the SplitMix64
// finaliser: fixed, so ids are the same on every run and machine. The token
// of a categorical feature is the field as written. An integer value v is
// bucketed first, as in common CTR practice: when v <= 2 the token is "SP"
// and v in decimal ("SP-3", "SP0", "SP2": small and negative values are
// kept apart), otherwise it is floor(ln(v)²) in decimal (v = 3 → "1", 100 →
// "21", 10⁶ → "190"), computed in float64. Features of one line that hash
// to the same id give one edge whose value is their count; all other values
// are 1. Labels are kept; Meta.Format is "criteo".
//
// Malformed lines are a *ParseError naming the file, line and field (the
// label is field 1).
func ReadCriteo(r io.Reader, name string, opt LoadOptions) (*Graph, error) {
	if opt.HashBits < 1 || opt.HashBits > 32 {
		return nil, fmt.Errorf("%s: hash bits %d: want 1..32", name, opt.HashBits)
	}
	return readCriteo(r, name, opt, runtime.GOMAXPROCS(0), chunkBytes)
}

// readCriteo is ReadCriteo parsing on workers goroutines, with chunks of
// about chunk bytes (parseChunks).
func readCriteo(r io.Reader, name string, opt LoadOptions, workers, chunk int) (*Graph, error) {
	opt = opt.resolved()
	b, err := parseChunks(r, name, opt.maxLine(), workers, chunk, nil, func(lr *lineReader, c textChunk) (*Builder, error) {
		p := NewBuilder(Meta{Format: string(FormatCriteo), Source: name})
		p.SetHasLabels()
		p.SetDupPolicy(DupSum)
		if c.text != nil {
			// At most 39 features a line.
			p.first = min(max(criteoFields*bytes.Count(c.text, []byte{'\n'}), firstChunkLen), chunkLen)
		}
		err := scanCriteoLines(lr, name, opt, p)
		p.trim()
		return p, err
	}, func(all, p *Builder) error {
		all.join(p)
		return all.overBudget(name, opt.Memory)
	})
	if err != nil {
		return nil, err
	}
	return buildSamples(b, name)
}

// scanCriteoLines adds the samples of the lines of lr to b, within the
// memory budget opt.Memory (resolved).
func scanCriteoLines(lr *lineReader, name string, opt LoadOptions, b *Builder) error {
	mask := uint64(1)<<opt.HashBits - 1
	var (
		ids  = make([]uint64, 0, criteoFields)
		vals = make([]float32, 0, criteoFields)
		tok  []byte
	)
	perr := func(field int, format string, args ...any) error {
		return &ParseError{File: name, Line: lr.line, Field: field, Msg: fmt.Sprintf(format, args...)}
	}
	for {
		line, err := lr.next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if len(trimSpace(line)) == 0 {
			continue
		}
		if n := bytes.Count(line, []byte{'\t'}) + 1; n > criteoFields {
			return perr(criteoFields+1, "%d fields: want at most %d (label, %d integer and %d categorical features)",
				n, criteoFields, criteoInts, criteoFields-1-criteoInts)
		}
		f, rest, more := bytes.Cut(line, []byte{'\t'})
		if len(f) != 1 || (f[0] != '0' && f[0] != '1') {
			return perr(1, "%s: want label 0 or 1", quote(f))
		}
		label := float64(f[0] - '0')
		ids = ids[:0]
		for col := 1; more; col++ {
			f, rest, more = bytes.Cut(rest, []byte{'\t'})
			if len(f) == 0 {
				continue
			}
			tok = tok[:0]
			if col <= criteoInts {
				v, ok := parseInt(f)
				if !ok {
					return perr(col+1, "%s: want an integer (feature I%d)", quote(f), col)
				}
				tok = appendBucket(tok, v)
			} else {
				tok = append(tok, f...)
			}
			ids = append(ids, hashFeature(col, tok)&mask)
		}
		var v []float32
		ids, v = countDuplicates(ids, vals[:0])
		if err := b.AddSample(label, ids, v); err != nil {
			return perr(0, "%v", err)
		}
		if err := b.overBudget(name, opt.Memory); err != nil {
			err.(*membudget.Error).Line = lr.line
			return err
		}
	}
}

// countDuplicates sorts ids and merges repeated ids into one whose value is
// the count. It returns the distinct ids and, when some id repeats, their
// counts in vals[:0]'s storage; otherwise nil values.
func countDuplicates(ids []uint64, vals []float32) ([]uint64, []float32) {
	slices.Sort(ids)
	k := 0
	for _, id := range ids {
		if k > 0 && ids[k-1] == id {
			if len(vals) == 0 {
				for range k {
					vals = append(vals, 1)
				}
			}
			vals[k-1]++
			continue
		}
		ids[k] = id
		if len(vals) > 0 {
			vals = append(vals, 1)
		}
		k++
	}
	if len(vals) == 0 {
		return ids[:k], nil
	}
	return ids[:k], vals
}

// appendBucket appends the token of integer feature value v; see
// ReadCriteo.
func appendBucket(dst []byte, v int64) []byte {
	if v <= 2 {
		return strconv.AppendInt(append(dst, "SP"...), v, 10)
	}
	l := math.Log(float64(v))
	return strconv.AppendInt(dst, int64(math.Floor(l*l)), 10)
}

// hashFeature returns the 64-bit hash of a feature token in a column: FNV-1a
// over the column number (one byte) and the token, then the SplitMix64
// finaliser so that the low bits are well mixed.
func hashFeature(col int, tok []byte) uint64 {
	const (
		offset = 14695981039346656037
		prime  = 1099511628211
	)
	h := uint64(offset)
	h ^= uint64(byte(col))
	h *= prime
	for _, c := range tok {
		h ^= uint64(c)
		h *= prime
	}
	h ^= h >> 30
	h *= 0xbf58476d1ce4e5b9
	h ^= h >> 27
	h *= 0x94d049bb133111eb
	h ^= h >> 31
	return h
}

// parseInt parses an optionally signed decimal integer that fits in int64.
func parseInt(b []byte) (int64, bool) {
	neg := false
	if len(b) > 0 && (b[0] == '-' || b[0] == '+') {
		neg = b[0] == '-'
		b = b[1:]
	}
	u, ok := parseUint(b)
	switch {
	case !ok:
		return 0, false
	case neg && u <= 1<<63:
		return -int64(u), true
	case !neg && u < 1<<63:
		return int64(u), true
	}
	return 0, false
}
