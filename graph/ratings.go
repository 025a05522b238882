package graph

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"slices"
)

// ReadRatings reads a ratings file (the entries of a sparse matrix, such as
// MovieLens u.data) from r, which must be decompressed already; name is
// used in errors and as Meta.Source.
//
// Each data line is `row col value`, optionally followed by more fields
// that are ignored (MovieLens: `user item rating timestamp`), separated by
// tabs or spaces. Row and column ids are non-negative integers (any
// uint64); the value is a finite number that fits a float32 and is stored
// as float32(strconv.ParseFloat(value, 64)). Lines starting with '#' or
// '%' are comments and blank lines are skipped.
//
// Every row that occurs becomes a sample whose id (SampleID) is the row id,
// in increasing order of row id, as SNAP's nodes do; columns become
// parameters with their ids as in the file; each entry is an edge whose
// value is the entry's value (so that a file whose values are all 1 has no
// values, see HasValues). The graph has no labels; Meta.Format is
// "ratings".
//
// Lines with fewer than three fields, ids that are not non-negative
// integers and values that are not finite float32 numbers are a
// *ParseError naming the file, line and field. An entry (row, col) given
// twice is a *ParseError at the first line that repeats an earlier one.
// Input without entries is an error too, and so is input of more than
// 2^32-1 lines.
//
// The entries are collected (24 bytes each) and sorted by (row, col):
// O(|E| log |E|) time.
func ReadRatings(r io.Reader, name string) (*Graph, error) {
	return readRatings(r, name, LoadOptions{})
}

// readRatings is ReadRatings within opt's memory budget: an entry needs
// ratingBytes while the file is read and sorted, and bytesPerEdge in the
// graph; the samples are at most the entries.
func readRatings(r io.Reader, name string, opt LoadOptions) (*Graph, error) {
	opt = opt.resolved()
	lr := newLineReader(r, name, opt.maxLine())
	var entries []rating
	for {
		line, err := lr.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		t := trimSpace(line)
		if skipLine(t) {
			continue
		}
		if lr.line > math.MaxUint32 {
			return nil, &ParseError{File: name, Line: lr.line, Msg: "more than 4294967295 lines"}
		}
		var tok [3][]byte
		if n := splitSpace(t, tok[:]); n < 3 {
			return nil, &ParseError{File: name, Line: lr.line, Msg: fmt.Sprintf(
				"%s: want \"row col value\", got %d fields", quote(t), n)}
		}
		var id [2]uint64
		for f, what := range [2]string{"row", "column"} {
			x, ok := parseUint(tok[f])
			if !ok {
				return nil, &ParseError{File: name, Line: lr.line, Field: f + 1, Msg: fmt.Sprintf(
					"%s: want a non-negative integer %s id", quote(tok[f]), what)}
			}
			id[f] = x
		}
		x, ok := parseFloat(tok[2])
		v := float32(x)
		if !ok || math.IsInf(float64(v), 0) {
			return nil, &ParseError{File: name, Line: lr.line, Field: 3, Msg: fmt.Sprintf(
				"%s: want a finite number value that fits a float32", quote(tok[2]))}
		}
		entries = append(entries, rating{row: id[0], col: id[1], val: v, line: uint32(lr.line)})
		if n := int64(len(entries)); n&1023 == 0 {
			// The entries (twice, as append grows them), then the graph.
			if err := overBudget(name, lr.line, opt.Memory, n, n, n*(2*ratingBytes+bytesPerEdge+bytesPerSample)); err != nil {
				return nil, err
			}
		}
	}
	if len(entries) == 0 {
		return nil, emptyError(name)
	}
	slices.SortFunc(entries, func(a, b rating) int {
		return cmp.Or(cmp.Compare(a.row, b.row), cmp.Compare(a.col, b.col), cmp.Compare(a.line, b.line))
	})
	// Report the earliest line of the file that repeats an entry; the
	// entries of one (row, col) are sorted by line, so the line it
	// repeats is the one just before it, the only earlier one.
	dup := -1
	for i := 1; i < len(entries); i++ {
		a, b := entries[i-1], entries[i]
		if a.row == b.row && a.col == b.col && (dup < 0 || b.line < entries[dup].line) {
			dup = i
		}
	}
	if dup >= 0 {
		e := entries[dup]
		return nil, &ParseError{File: name, Line: int(e.line), Msg: fmt.Sprintf(
			"entry (%d, %d) repeats line %d", e.row, e.col, entries[dup-1].line)}
	}

	b := NewBuilder(Meta{Format: string(FormatRatings), Source: name})
	var (
		cols []uint64
		vals []float32
	)
	for i := 0; i < len(entries); {
		row := entries[i].row
		cols, vals = cols[:0], vals[:0]
		for ; i < len(entries) && entries[i].row == row; i++ {
			cols = append(cols, entries[i].col)
			vals = append(vals, entries[i].val)
		}
		if err := b.AddSampleWithID(row, 0, cols, vals); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
	}
	g, err := b.Build()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return g, nil
}

// ratingBytes is the size of a rating.
const ratingBytes = 24

// rating is one entry of a ratings file and the line it was read from.
type rating struct {
	row, col uint64
	val      float32
	line     uint32
}
