package graph

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"runtime"
	"strconv"

	"colo/internal/membudget"
)

// ReadLibSVM reads libsvm/svmlight text from r, which must be decompressed
// already (Read and Load decompress); name is used in errors and as
// Meta.Source.
//
// Each non-blank line is a sample: `label idx:value idx:value ...`, tokens
// separated by spaces or tabs, "\n" or "\r\n" line endings. The label is
// any finite number (±1, 0/1, class ids, regression targets; "+1" is
// fine). Indices are non-negative integers, unique within a line but in any
// order; values are finite numbers that fit a float32 and are stored as
// float32(strconv.ParseFloat(value, 64)). '#' starts a comment that runs to
// the end of the line; `qid:N` tokens are ignored; blank and comment-only
// lines are not samples; a line with only a label is a sample without
// parameters.
//
// opt.IndexBase says which indices are allowed: 0 allows index 0, 1 makes
// it an error, -1 detects: the file is 0-based when an index 0 occurs. The
// base is recorded in Meta.IndexBase; parameter ids are the indices as
// written either way. Samples are the lines in file order.
//
// A malformed line is a *ParseError naming the file, line and field (from
// 1; the label is field 1). Input without samples is an error too.
//
// The reader does not allocate per line or token: it parses integers and
// short decimals by hand, and it parses chunks of lines on GOMAXPROCS
// goroutines (at most 8) while one reads r (decompressing, for Read and
// Load), with the same result as on one.
func ReadLibSVM(r io.Reader, name string, opt LoadOptions) (*Graph, error) {
	return readLibSVM(r, name, opt, runtime.GOMAXPROCS(0), chunkBytes, -1)
}

// readLibSVM is ReadLibSVM on workers goroutines, with chunks of about
// chunk bytes, of text of size bytes when that is not negative
// (scanLibSVMParallel).
func readLibSVM(r io.Reader, name string, opt LoadOptions, workers, chunk int, size int64) (*Graph, error) {
	if opt.IndexBase < -1 || opt.IndexBase > 1 {
		return nil, fmt.Errorf("%s: index base %d: want 0, 1 or -1 (detect)", name, opt.IndexBase)
	}
	b, sawZero, err := scanLibSVMParallel(r, name, opt, workers, chunk, size)
	if err != nil {
		return nil, err
	}
	g, err := buildSamples(b, name)
	if err != nil {
		return nil, err
	}
	setIndexBase(g, opt, sawZero)
	return g, nil
}

// buildSamples builds the graph of b, the samples read from the input
// called name: an error when there are none.
func buildSamples(b *Builder, name string) (*Graph, error) {
	if b.NumSamples() == 0 {
		return nil, emptyError(name)
	}
	g, err := b.Build()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return g, nil
}

// setIndexBase records the index base of a libsvm graph: opt's, or when
// it detects, 0 if an index 0 occurred and 1 otherwise.
func setIndexBase(g *Graph, opt LoadOptions, sawZero bool) {
	switch {
	case opt.IndexBase >= 0:
		g.meta.IndexBase = opt.IndexBase
	case sawZero:
		g.meta.IndexBase = 0
	default:
		g.meta.IndexBase = 1
	}
}

// scanLibSVM reads the sample lines of libsvm text from r and calls add for
// each, in file order, with its label, indices and values (valid until the
// next call); samples returns the number of samples added so far (for
// opt.SampleCheck). An add error that is a *DuplicateError, or any other,
// becomes a *ParseError naming the line (and the field of the repeated
// index). It reports whether an index 0 occurred. ReadLibSVM documents the
// format; the out-of-core partitioner reads the file through it too.
func scanLibSVM(r io.Reader, name string, opt LoadOptions, samples func() int,
	add func(label float64, ids []uint64, vals []float32) error) (sawZero bool, err error) {
	return scanLibSVMLines(newLineReader(r, name, opt.maxLine()), name, opt, samples, add)
}

// scanLibSVMLines is scanLibSVM over the lines of lr.
func scanLibSVMLines(lr *lineReader, name string, opt LoadOptions, samples func() int,
	add func(label float64, ids []uint64, vals []float32) error) (sawZero bool, err error) {
	var (
		ids      []uint64
		vals     []float32
		nvals    int64
		maxIndex uint64
	)
	perr := func(field int, format string, args ...any) error {
		return &ParseError{File: name, Line: lr.line, Field: field, Msg: fmt.Sprintf(format, args...)}
	}
	for {
		line, err := lr.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return false, err
		}
		if i := bytes.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		t := trimSpace(line)
		if len(t) == 0 {
			continue
		}
		label, i, ok := scanFloat(t)
		if !ok {
			tok, _ := nextToken(t)
			return false, perr(1, "%s: want a finite number label", quote(tok))
		}
		ids, vals = ids[:0], vals[:0]
		for field := 2; i < len(t); field++ {
			for isSpace(t[i]) {
				i++
			}
			// The common case inline: digits, ':', a number. Anything
			// else goes through parsePair, which knows qid tokens and
			// says what is wrong.
			// Up to 19 digits cannot overflow 64 bits; a longer index
			// goes through parsePair.
			start := i
			var id uint64
			for end := min(len(t), i+19); i < end && t[i]-'0' <= 9; i++ {
				id = id*10 + uint64(t[i]-'0')
			}
			var v float32
			fast := i > start && i < len(t) && t[i] == ':'
			if fast {
				// A value of up to 15 digits alone (a count) is an
				// integer below 2^53: exactly what scanFloat returns.
				j := i + 1
				var m uint64
				for end := min(len(t), j+15); j < end && t[j]-'0' <= 9; j++ {
					m = m*10 + uint64(t[j]-'0')
				}
				if j > i+1 && (j == len(t) || isSpace(t[j])) {
					i, v = j, float32(m)
				} else {
					var f float64
					var n int
					f, n, fast = scanFloat(t[i+1:])
					i += 1 + n
					v = float32(f)
					fast = fast && v <= math.MaxFloat32 && v >= -math.MaxFloat32
				}
			}
			if !fast {
				tok, _ := nextToken(t[start:])
				i = start + len(tok)
				var msg string
				id, v, msg = parsePair(tok)
				if msg == qidToken {
					continue
				}
				if msg != "" {
					return false, perr(field, "%s: %s", quote(tok), msg)
				}
			}
			if id == 0 {
				if opt.IndexBase == 1 {
					return false, perr(field, "%s: index 0 but the index base is 1", quote(t[start:i]))
				}
				sawZero = true
			}
			ids = append(ids, id)
			vals = append(vals, v)
		}
		if err := add(label, ids, vals); err != nil {
			if me, ok := errors.AsType[*membudget.Error](err); ok {
				me.Line = lr.line
				return false, me
			}
			var dup *DuplicateError
			if errors.As(err, &dup) {
				return false, perr(duplicateField(t, dup.ID), "index %d occurs twice in the sample", dup.ID)
			}
			return false, perr(0, "%v", err)
		}
		if opt.SampleCheck != nil {
			nvals += int64(len(ids))
			for _, id := range ids {
				maxIndex = max(maxIndex, id)
			}
			if err := opt.SampleCheck(samples(), nvals, maxIndex); err != nil {
				if me, ok := errors.AsType[*membudget.Error](err); ok {
					me.File, me.Line = name, lr.line
					return false, me
				}
				return false, perr(0, "%v", err)
			}
		}
	}
	return sawZero, nil
}

// duplicateField returns the field of the second occurrence of index id in
// the sample line t.
func duplicateField(t []byte, id uint64) int {
	seen := false
	for field := 1; len(t) > 0; field++ {
		var tok []byte
		tok, t = nextToken(t)
		if field == 1 {
			continue
		}
		if x, _, msg := parsePair(tok); msg == "" && x == id {
			if seen {
				return field
			}
			seen = true
		}
	}
	return 0
}

// qidToken is parsePair's answer for a `qid:N` token, which is skipped.
const qidToken = "qid"

// parsePair parses an `idx:value` token. On failure it returns a message
// saying what was expected, or qidToken for a query id.
func parsePair(tok []byte) (id uint64, v float32, msg string) {
	i, overflow := 0, false
	for i < len(tok) && tok[i] >= '0' && tok[i] <= '9' {
		d := uint64(tok[i] - '0')
		if id > (math.MaxUint64-d)/10 {
			overflow = true
		}
		id = id*10 + d
		i++
	}
	if i == len(tok) || tok[i] != ':' || i == 0 || overflow {
		colon := bytes.IndexByte(tok, ':')
		switch {
		case colon < 0:
			return 0, 0, "want idx:value"
		case overflow && colon == i:
			return 0, 0, "index does not fit in 64 bits"
		case string(tok[:colon]) == "qid":
			return 0, 0, qidToken
		case colon > 1 && tok[0] == '-' && isDigits(tok[1:colon]):
			return 0, 0, "negative index: want idx:value with a non-negative integer index"
		}
		return 0, 0, "want idx:value with a non-negative integer index"
	}
	f, ok := parseFloat(tok[i+1:])
	if !ok {
		return 0, 0, "want idx:value with a finite number value"
	}
	v = float32(f)
	if math.IsInf(float64(v), 0) {
		return 0, 0, "value out of the float32 range"
	}
	return id, v, ""
}

// isDigits reports whether b is a non-empty string of decimal digits.
func isDigits(b []byte) bool {
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return len(b) > 0
}

// pow10 holds the powers of ten that are exact in float64.
var pow10 = [...]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10,
	1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}

// parseFloat parses a finite number exactly as strconv.ParseFloat(s, 64)
// does, rejecting NaN and infinities; see scanFloat.
func parseFloat(s []byte) (float64, bool) {
	f, n, ok := scanFloat(s)
	if !ok || n != len(s) {
		return 0, false
	}
	return f, true
}

// scanFloat parses the number at the start of b, which ends at a separator
// (see isSpace) or at the end of b, and returns it and its length. The
// result is exactly strconv.ParseFloat's (64 bits) on those bytes; NaN and
// infinities are rejected.
//
// Plain decimals such as "1", "-3" or "0.25" with at most 19 digits take a
// fast path: the digits form an integer mantissa m and, when m < 2^53 and
// there are at most 22 fraction digits, m / 10^k is a single correctly
// rounded division of two exact float64 values, which is what ParseFloat
// returns. Everything else (exponents, long mantissas, hex, special values)
// goes to strconv.
func scanFloat(b []byte) (float64, int, bool) {
	i, neg := 0, false
	if len(b) > 0 && (b[0] == '-' || b[0] == '+') {
		neg = b[0] == '-'
		i = 1
	}
	var m uint64
	digits, frac, dot := 0, 0, false
	for ; i < len(b); i++ {
		c := b[i]
		if c-'0' <= 9 {
			if digits == 19 {
				return scanFloatSlow(b)
			}
			m = m*10 + uint64(c-'0')
			digits++
			if dot {
				frac++
			}
			continue
		}
		if c == '.' && !dot {
			dot = true
			continue
		}
		if isSpace(c) {
			break
		}
		return scanFloatSlow(b)
	}
	if digits == 0 || m >= 1<<53 || frac >= len(pow10) {
		return scanFloatSlow(b)
	}
	f := float64(m)
	if frac > 0 {
		f /= pow10[frac]
	}
	if neg {
		f = -f
	}
	return f, i, true
}

// scanFloatSlow is scanFloat through strconv.
func scanFloatSlow(b []byte) (float64, int, bool) {
	n := 0
	for n < len(b) && !isSpace(b[n]) {
		n++
	}
	f, err := strconv.ParseFloat(string(b[:n]), 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, n, false
	}
	return f, n, true
}
