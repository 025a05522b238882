package dataset

import (
	"colo/internal/membudget"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Header says whether the first CSV record names the columns.
type Header int

// The header modes.
const (
	// HeaderAuto takes the first record for a header when one of its
	// feature cells is not a number.
	HeaderAuto Header = iota
	// HeaderYes always skips the first record.
	HeaderYes
	// HeaderNo reads the first record as data.
	HeaderNo
)

// CSVOptions control ReadCSV.
type CSVOptions struct {
	// LabelCol is the column of the label, from 0; a negative value counts
	// from the end (-1 is the last column).
	LabelCol int
	// LabelName selects the label column by its header name instead of
	// LabelCol; it requires a header.
	LabelName string
	// LabelAuto, when LabelName is empty, finds the label column instead
	// of taking LabelCol: a header's column named like a label
	// (LabelNames, in any case), or column 0 in a file without a header.
	// A header without such a column, or with several, is an error that
	// lists the header's columns: the label is never guessed.
	LabelAuto bool
	// Header says whether the first record is a header.
	Header Header
	// Comma is the field separator; 0 means ','.
	Comma rune
	// MaxValues bounds n·d; 0 means DefaultMaxValues.
	MaxValues int64
}

// DefaultCSVOptions returns options for comma-separated data with
// header detection and the label column found (LabelAuto).
func DefaultCSVOptions() CSVOptions { return CSVOptions{LabelAuto: true} }

// LabelNames are the header names LabelAuto takes for the label column.
var LabelNames = []string{"label", "class", "target", "y"}

// labelLike reports whether a header cell names a label column.
func labelLike(cell string) bool {
	return slices.Contains(LabelNames, strings.ToLower(strings.TrimSpace(cell)))
}

// columnList lists a header's columns for an error, the first dozen of a
// wide one.
func columnList(rec []string) string {
	const most = 12
	names := make([]string, 0, min(len(rec), most))
	for c, cell := range rec[:min(len(rec), most)] {
		names = append(names, fmt.Sprintf("%d %q", c, strings.TrimSpace(cell)))
	}
	list := strings.Join(names, ", ")
	if len(rec) > most {
		list += fmt.Sprintf(", … (%d columns)", len(rec))
	}
	return list
}

// Validate checks the options and names the offending field.
func (o CSVOptions) Validate() error {
	if o.Header < HeaderAuto || o.Header > HeaderNo {
		return fmt.Errorf("header %d: want HeaderAuto, HeaderYes or HeaderNo", o.Header)
	}
	if o.LabelName != "" && o.Header == HeaderNo {
		return fmt.Errorf("label name %q: a label column chosen by name needs a header", o.LabelName)
	}
	if o.Comma == '"' || o.Comma == '\r' || o.Comma == '\n' {
		return fmt.Errorf("comma %q: not a valid separator", o.Comma)
	}
	if o.MaxValues < 0 {
		return fmt.Errorf("max values %d: want 0 (default) or more", o.MaxValues)
	}
	return nil
}

// ParseHeader parses "auto", "yes" or "no".
func ParseHeader(s string) (Header, error) {
	switch strings.ToLower(s) {
	case "auto", "":
		return HeaderAuto, nil
	case "yes", "true":
		return HeaderYes, nil
	case "no", "false":
		return HeaderNo, nil
	}
	return 0, fmt.Errorf("header %q: want auto, yes or no", s)
}

// ReadCSV reads comma-separated values with one label column; every other
// column is a numeric feature. Every record must have the same number of
// fields. Labels may be numbers or names. name is used in errors.
//
// It reads within the machine's memory budget (see ReadCSVBounded).
func ReadCSV(r io.Reader, name string, o CSVOptions) (*Dataset, error) {
	return ReadCSVBounded(r, name, o, membudget.Auto, nil)
}

// ReadCSVBounded is ReadCSV within the memory budget memory (package
// colo/internal/membudget: 0 for the machine's default, negative for
// none), for a model that checkDim (when not nil) says can or cannot take
// samples of a given number of features. It refuses, naming the line:
// a line longer than the budget's line limit (membudget.MaxLine) before
// it is parsed; a first record of more fields than a 64th of the
// budget holds at the 64 bytes a field costs the parser; a first record
// whose width checkDim refuses, before any other is read; a later record
// of more than twice the first record's fields (plus 16) before it is
// parsed (one of another width is refused after, as before); and the
// record at which the features read (twice, as their storage grows)
// exceed the budget.
func ReadCSVBounded(r io.Reader, name string, o CSVOptions, memory int64, checkDim func(dim int) error) (*Dataset, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	maxValues := o.MaxValues
	if maxValues == 0 {
		maxValues = DefaultMaxValues
	}
	limit := membudget.Resolve(memory)
	comma := o.Comma
	if comma == 0 {
		comma = ','
	}
	bounds := newCSVBounds(r, name, comma, membudget.MaxLine(limit))
	bounds.setMaxFields(int(min(limit/64/csvFieldBytes, math.MaxInt32)), fmt.Sprintf(
		"more than the memory budget of %s holds while the record is split (%s SIZE sets it)", membudget.FormatBytes(limit), membudget.Flag))
	cr := csv.NewReader(bounds)
	if o.Comma != 0 {
		cr.Comma = o.Comma
	}
	cr.ReuseRecord = true
	fail := func(field int, format string, args ...any) error {
		line, _ := cr.FieldPos(max(field-1, 0))
		return &ParseError{File: name, Line: line, Field: field, Msg: fmt.Sprintf(format, args...)}
	}
	readErr := func(err error) error {
		if pe, ok := errors.AsType[*ParseError](err); ok {
			return pe // csvBounds'
		}
		var pe *csv.ParseError
		if errors.As(err, &pe) {
			return &ParseError{File: name, Line: pe.Line, Field: pe.Column, Msg: pe.Err.Error()}
		}
		return fmt.Errorf("%s: %w", name, err)
	}
	var (
		features []float32
		labels   []int
		classes  = newClassMap()
		ncol     int
		labelCol int
		record   = 0
		found    bool // the label column was found by its header name
	)
	first := true
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if errors.Is(err, csv.ErrFieldCount) {
			// "field 1: wrong number of fields" said neither how many
			// there were nor how many were wanted.
			line, _ := cr.FieldPos(0)
			return nil, &ParseError{File: name, Line: line, Msg: fmt.Sprintf("record %d: %d fields, want %d like the first record", record+1, len(rec), ncol)}
		}
		if err != nil {
			return nil, readErr(err)
		}
		record++
		if first {
			first = false
			// A byte order mark (a spreadsheet's "CSV UTF-8") is not
			// part of the first cell: "\ufefflabel" named no label
			// column, and "\ufeff3" was no number.
			if len(rec) > 0 {
				rec[0] = strings.TrimPrefix(rec[0], "\ufeff")
			}
			ncol = len(rec)
			if ncol < 2 {
				return nil, fail(0, "%d column(s): want a label column and at least one feature", ncol)
			}
			header := o.Header == HeaderYes || o.LabelName != ""
			auto := o.LabelAuto && o.LabelName == ""
			if auto {
				labelCol = -1 // decided once the header is
			} else if o.LabelName != "" {
				labelCol = -1
				for c, cell := range rec {
					if strings.TrimSpace(cell) == o.LabelName {
						labelCol = c
						break
					}
				}
				if labelCol < 0 {
					return nil, fail(0, "no column named %q in the header", o.LabelName)
				}
			} else {
				labelCol = o.LabelCol
				if labelCol < 0 {
					labelCol += ncol
				}
				if labelCol < 0 || labelCol >= ncol {
					return nil, fail(0, "label column %d: the file has %d columns", o.LabelCol, ncol)
				}
			}
			if o.Header == HeaderAuto && !header {
				words, named := 0, false
				for c, cell := range rec {
					if c == labelCol {
						continue
					}
					if _, err := parseCell(cell); err != nil {
						words++
						named = named || labelLike(cell)
					}
				}
				// Without a known label column, one word among numbers
				// is a data record's class name unless it names a label.
				header = words > 0 && (!auto || words > 1 || named)
			}
			if auto {
				if labelCol, err = autoLabel(rec, header); err != nil {
					return nil, fail(0, "%v", err)
				}
				found = header
			}
			if checkDim != nil {
				if err := checkDim(ncol - 1); err != nil {
					return nil, fail(0, "%d features (the first record's %d columns but the label): %v", ncol-1, ncol, err)
				}
			}
			bounds.setMaxFields(2*ncol+16, fmt.Sprintf("the first record has %d", ncol))
			if header {
				o.LabelName = strings.TrimSpace(rec[labelCol])
				continue
			}
		}
		if int64(len(labels)+1)*int64(ncol-1) > maxValues {
			return nil, fail(0, "more than %d values at record %d: over the dense limit", maxValues, record)
		}
		if need := int64(len(labels)+1) * (2*4*int64(ncol-1) + 8); need > limit {
			line, _ := cr.FieldPos(0)
			return nil, &membudget.Error{File: name, Line: line, Limit: limit, Need: need,
				What: fmt.Sprintf("the %d records of %d features read so far", len(labels)+1, ncol-1)}
		}
		for c, cell := range rec {
			if c == labelCol {
				label := strings.TrimSpace(cell)
				if label == "" {
					return nil, fail(c+1, "empty label")
				}
				labels = append(labels, classes.add(label))
				continue
			}
			v, err := parseCell(cell)
			if err != nil {
				if auto := o.LabelAuto && o.LabelName == ""; auto && !found {
					return nil, fail(c+1, "record %d: %v (the label was taken from column %d, as in a file without a header: name the label column with --label-col)", record, err, labelCol)
				}
				return nil, fail(c+1, "record %d: %v", record, err)
			}
			features = append(features, v)
		}
	}
	if record == 0 {
		return nil, &ParseError{File: name, Msg: "empty file: want a header or data records"}
	}
	k, names := classes.finish(labels)
	return &Dataset{Features: features, Labels: labels, Dim: ncol - 1, Classes: k, ClassNames: names, Source: name,
		Format: FormatCSV, LabelCol: labelCol, LabelName: o.LabelName}, nil
}

// autoLabel returns the label column LabelAuto finds in the first record
// rec: the one a header names like a label, or column 0 without a
// header.
func autoLabel(rec []string, header bool) (int, error) {
	if !header {
		return 0, nil
	}
	var cols []int
	for c, cell := range rec {
		if labelLike(cell) {
			cols = append(cols, c)
		}
	}
	switch len(cols) {
	case 1:
		return cols[0], nil
	case 0:
		return 0, fmt.Errorf("the header names no label column (%s): name it with --label-col, by name or number; the columns are %s",
			strings.Join(LabelNames, ", "), columnList(rec))
	}
	names := make([]string, len(cols))
	for i, c := range cols {
		names[i] = fmt.Sprintf("%d %q", c, strings.TrimSpace(rec[c]))
	}
	return 0, fmt.Errorf("the header names several label columns (%s): choose one with --label-col", strings.Join(names, ", "))
}

// csvFieldBytes is what a field costs encoding/csv while it splits a
// record, at most: the field's string header (16 bytes), its index (8) and
// position (16), doubled as their slices grow.
const csvFieldBytes = 64

// parseCell parses one numeric CSV cell.
func parseCell(cell string) (float32, error) {
	s := strings.TrimSpace(cell)
	if s == "" {
		return 0, errors.New("empty cell: want a number (missing values are not supported)")
	}
	v, err := strconv.ParseFloat(s, 32)
	if errors.Is(err, strconv.ErrRange) {
		return 0, fmt.Errorf("%q: out of the float32 range (±3.4e38)", s)
	}
	if err != nil {
		return 0, fmt.Errorf("%q is not a number", s)
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("%q: want a finite number", s)
	}
	return float32(v), nil
}
