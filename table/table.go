// Package table reads tables (Parquet, CSV and JSON lines) column by
// column, a batch of rows at a time, for the feature columns of package
// features: the data of click-through and recommendation models, which
// come as tables of categorical, numeric and timestamp columns rather than
// as libsvm text.
//
// One interface serves the three formats. Open names the columns a
// caller wants (projection: the others are never decoded) and Next
// returns the next batch of rows of those columns:
//
//	r, err := table.Open("flights.parquet", []string{"origin", "delay"}, table.DefaultOptions())
//	for {
//		b, err := r.Next() // one row group of a Parquet file
//		if err == io.EOF { break }
//		...
//	}
//
// A Parquet file is read one row group at a time through
// github.com/parquet-go/parquet-go, which decompresses the pages (snappy,
// gzip, zstd, lz4, brotli) and decodes their encodings (plain,
// dictionary, RLE, delta). Its flat columns map to kinds: integers to
// KindInt, floating point to KindFloat, booleans to KindBool, byte arrays
// (strings) to KindString, DATE and TIMESTAMP to KindTime (microseconds
// since 1970-01-01 of the wall clock, whatever the file's unit and its
// UTC adjustment). Nested and repeated columns are refused. A CSV file
// (with a header line naming the columns; .tsv is tab-separated) and a
// JSON-lines file (one object per line; .jsonl or .ndjson) are read in
// batches of Options.BatchRows rows whose values are KindText, parsed by
// the consumer (Column.Float, Column.Time): a text table carries no types.
//
// Memory is bounded by Options.Memory: a batch that would take more is
// refused before it is read, naming the file, the row group (or line) and
// the column that takes the most, never read and never an out-of-memory
// crash. A batch takes about its decoded values (8 bytes a number, the
// bytes of a string plus 8) and, for Parquet, its projected column chunks
// uncompressed; one batch is held at a time, so reading a file takes the
// memory of its largest row group, not of the file.
//
// Every error names the file, and where known the row group, line and
// column (*Error). Bad input (a truncated file, a corrupt footer or page,
// a column of another type) is an error, never a panic.
package table

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"colo/internal/textio"
)

// Format names a table format.
type Format string

// The formats Open reads.
const (
	// FormatAuto detects the format: Parquet by its magic bytes, CSV and
	// JSON lines by the file name's extension.
	FormatAuto    Format = ""
	FormatParquet Format = "parquet"
	FormatCSV     Format = "csv"
	FormatTSV     Format = "tsv"
	FormatJSONL   Format = "jsonl"
)

// Kind is the type of a column's values in a Batch.
type Kind uint8

// The kinds of column.
const (
	// KindInt is a signed integer, in Column.Ints.
	KindInt Kind = iota + 1
	// KindFloat is a floating-point number, in Column.Floats.
	KindFloat
	// KindBool is false or true, in Column.Ints as 0 or 1.
	KindBool
	// KindString is a byte string, in Column.Bytes.
	KindString
	// KindTime is a point in time, in Column.Ints as microseconds since
	// 1970-01-01 00:00 of the wall clock the file records.
	KindTime
	// KindText is a value of a text table (CSV, JSON lines) as written,
	// in Column.Bytes; Column.Float and Column.Time parse it.
	KindText
)

// String names the kind.
func (k Kind) String() string {
	switch k {
	case KindInt:
		return "integer"
	case KindFloat:
		return "float"
	case KindBool:
		return "boolean"
	case KindString:
		return "string"
	case KindTime:
		return "timestamp"
	case KindText:
		return "text"
	}
	return fmt.Sprintf("kind(%d)", int(k))
}

// Field is a column of a table's schema.
type Field struct {
	Name string
	Kind Kind
}

// Column is the values of one column in a batch. Which slice holds them
// depends on Kind; Null, when not nil, marks the missing values (whose
// slots hold zero).
type Column struct {
	Name   string
	Kind   Kind
	Ints   []int64   // KindInt, KindBool, KindTime
	Floats []float64 // KindFloat
	Bytes  []byte    // KindString, KindText: the values back to back
	Offs   []int     // KindString, KindText: value i is Bytes[Offs[i]:Offs[i+1]]
	Null   []bool
}

// Len returns the number of values.
func (c *Column) Len() int {
	switch c.Kind {
	case KindFloat:
		return len(c.Floats)
	case KindString, KindText:
		return max(len(c.Offs)-1, 0)
	}
	return len(c.Ints)
}

// IsNull reports whether value i is missing.
func (c *Column) IsNull(i int) bool { return c.Null != nil && c.Null[i] }

// Str returns value i of a string or text column; it is valid until the
// next batch.
func (c *Column) Str(i int) []byte { return c.Bytes[c.Offs[i]:c.Offs[i+1]] }

// Float returns value i as a number: integers, booleans (0, 1) and floats
// as they are, timestamps in microseconds, and text parsed as a decimal
// number (true and false as 1 and 0). It reports false for a string, or
// text that is not a number.
func (c *Column) Float(i int) (float64, bool) {
	switch c.Kind {
	case KindInt, KindBool, KindTime:
		return float64(c.Ints[i]), true
	case KindFloat:
		return c.Floats[i], true
	case KindText:
		s := c.Str(i)
		switch string(s) {
		case "true":
			return 1, true
		case "false":
			return 0, true
		}
		v, err := strconv.ParseFloat(string(s), 64)
		return v, err == nil
	}
	return 0, false
}

// timeLayouts are the layouts Time accepts for text.
var timeLayouts = []string{
	time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02 15:04:05", "2006-01-02T15:04", "2006-01-02 15:04",
	"2006/01/02 15:04:05", "2006/01/02 15:04", "2006-01-02", "2006/01/02",
}

// Time returns value i as a time of the wall clock (UTC as location):
// timestamps as they are, and text in RFC 3339 or "2006-01-02 15:04:05"
// and its shorter forms (a zone, when given, is dropped: the wall clock
// is kept). It reports false for any other kind or text.
func (c *Column) Time(i int) (time.Time, bool) {
	switch c.Kind {
	case KindTime:
		return time.UnixMicro(c.Ints[i]).UTC(), true
	case KindText:
		s := string(c.Str(i))
		for _, l := range timeLayouts {
			if t, err := time.Parse(l, s); err == nil {
				y, m, d := t.Date()
				return time.Date(y, m, d, t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), time.UTC), true
			}
		}
	}
	return time.Time{}, false
}

// Batch is a run of consecutive rows of the projected columns.
type Batch struct {
	// Group is the row group of a Parquet file, or the number of the
	// batch (from 0) of a text table.
	Group int
	// FirstRow is the row of the file (from 0) that the batch starts at.
	FirstRow int64
	// Rows is the number of rows.
	Rows int
	// Lines, for a text table, is the line (from 1) of each row; nil for
	// Parquet.
	Lines []int
	// Cols are the columns in the order Open was given them.
	Cols []*Column
}

// Where names row i of the batch for an error: "line 12" for a text
// table, "row group 3, row 17" for Parquet.
func (b *Batch) Where(i int) string {
	if b.Lines != nil {
		return fmt.Sprintf("line %d", b.Lines[i])
	}
	return fmt.Sprintf("row group %d, row %d", b.Group, b.FirstRow+int64(i))
}

// Options control how a table is read.
type Options struct {
	// Format is the table's format; FormatAuto detects it.
	Format Format
	// Memory is the most bytes one batch may take (decoded values and,
	// for Parquet, its projected column chunks uncompressed); 0 is no
	// bound. A larger batch is refused with an error naming the column.
	Memory int64
	// BatchRows is the number of rows of a batch of a text table (1 to
	// 1<<24).
	BatchRows int
}

// DefaultOptions returns options that detect the format, with no memory
// bound and batches of 65536 rows for text tables.
func DefaultOptions() Options { return Options{BatchRows: 1 << 16} }

// Validate checks the options, naming the field.
func (o Options) Validate() error {
	switch o.Format {
	case FormatAuto, FormatParquet, FormatCSV, FormatTSV, FormatJSONL:
	default:
		return fmt.Errorf("table format %q: want parquet, csv, tsv or jsonl", string(o.Format))
	}
	if o.Memory < 0 {
		return fmt.Errorf("table memory %d: want 0 (no bound) or more bytes", o.Memory)
	}
	if o.BatchRows < 1 || o.BatchRows > 1<<24 {
		return fmt.Errorf("table batch rows %d: want 1..%d", o.BatchRows, 1<<24)
	}
	return nil
}

// Error is a bad table or a table that does not fit what was asked. It
// names the file and, where known, the row group, the line and the
// column.
type Error struct {
	File   string
	Group  int // row group of a Parquet file; -1 when none
	Line   int // line of a text table; 0 when none
	Column string
	Msg    string
	Err    error // the cause, when there is one
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	if e.Group >= 0 {
		fmt.Fprintf(&b, ": row group %d", e.Group)
	}
	if e.Column != "" {
		fmt.Fprintf(&b, ": column %q", e.Column)
	}
	b.WriteString(": ")
	b.WriteString(e.Msg)
	if e.Err != nil {
		if e.Msg != "" {
			b.WriteString(": ")
		}
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// ErrMemory is the cause of an *Error for a batch larger than
// Options.Memory.
var ErrMemory = errors.New("beyond the memory budget")

// Reader reads a table batch by batch. It is not safe for concurrent use.
type Reader struct {
	src    source
	name   string
	fields []Field
	close  func() error
}

// source is one format's reader.
type source interface {
	next() (*Batch, error)
}

// Fields returns the projected columns, in the order Open was given them.
func (r *Reader) Fields() []Field { return r.fields }

// Next returns the next batch, or io.EOF after the last. The batch is
// valid until the next call.
func (r *Reader) Next() (*Batch, error) { return r.src.next() }

// Close releases the file.
func (r *Reader) Close() error {
	if r.close == nil {
		return nil
	}
	c := r.close
	r.close = nil
	return c()
}

// formatOfName returns the format a file name's extension says.
func formatOfName(path string) (Format, bool) {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".parquet", ".pq":
		return FormatParquet, true
	case ".csv":
		return FormatCSV, true
	case ".tsv":
		return FormatTSV, true
	case ".jsonl", ".ndjson":
		return FormatJSONL, true
	}
	return FormatAuto, false
}

// Open opens the table at path for reading the named columns (all of
// them, in the file's order, when columns is empty). An unknown column is
// an error that lists the table's columns.
func Open(path string, columns []string, opt Options) (*Reader, error) {
	f, err := textio.Open(path)
	if err != nil {
		return nil, fmt.Errorf("table: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("table: %w", err)
	}
	r, err := NewReader(f, st.Size(), path, columns, opt)
	if err != nil {
		f.Close()
		return nil, err
	}
	r.close = f.Close
	return r, nil
}

// NewReader is Open for the size bytes of ra; name is the file name used
// in errors and to detect the format of a text table. Close does not
// close ra.
func NewReader(ra io.ReaderAt, size int64, name string, columns []string, opt Options) (*Reader, error) {
	if err := opt.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	format := opt.Format
	if format == FormatAuto {
		var head [4]byte
		n, _ := ra.ReadAt(head[:], 0)
		if string(head[:n]) == "PAR1" {
			format = FormatParquet
		} else if format, _ = formatOfName(name); format == FormatAuto {
			return nil, &Error{File: name, Group: -1, Msg: "not a table: want a Parquet file, or a name ending in .parquet, .csv, .tsv, .jsonl or .ndjson"}
		}
	}
	// A UTF-8 byte order mark at the start of a text table is not data:
	// it made a quoted CSV header a bare quote and the first JSON line
	// no JSON. (A Parquet file starts with PAR1.)
	start := int64(0)
	if format != FormatParquet {
		var head [3]byte
		if n, _ := ra.ReadAt(head[:], 0); string(head[:n]) == "\ufeff" {
			start = 3
		}
	}
	sr := io.NewSectionReader(ra, start, size-start)
	switch format {
	case FormatParquet:
		return openParquet(ra, size, name, columns, opt)
	case FormatJSONL:
		return openJSONL(sr, name, columns, opt)
	case FormatTSV:
		return openCSV(sr, name, '\t', columns, opt)
	}
	return openCSV(sr, name, ',', columns, opt)
}

// project returns the index in names of each of columns (all of names
// when columns is empty), or an error naming an unknown column.
func project(file string, names []string, columns []string) ([]int, error) {
	if len(columns) == 0 {
		idx := make([]int, len(names))
		for i := range idx {
			idx[i] = i
		}
		return idx, nil
	}
	pos := make(map[string]int, len(names))
	for i, n := range names {
		if _, dup := pos[n]; !dup {
			pos[n] = i
		}
	}
	idx := make([]int, len(columns))
	for i, c := range columns {
		j, ok := pos[c]
		if !ok {
			return nil, &Error{File: file, Group: -1, Column: c, Msg: fmt.Sprintf("no such column: the table has %s", listNames(names))}
		}
		idx[i] = j
	}
	return idx, nil
}

// listNames lists column names for an error, the first 20 of them.
func listNames(names []string) string {
	if len(names) == 0 {
		return "no columns"
	}
	const most = 20
	q := make([]string, 0, min(len(names), most))
	for _, n := range names[:min(len(names), most)] {
		q = append(q, strconv.Quote(n))
	}
	s := strings.Join(q, ", ")
	if len(names) > most {
		s += fmt.Sprintf(" and %d more", len(names)-most)
	}
	return s
}

// valueBytes is what a value of kind k takes in a batch, beyond a string's
// own bytes.
func valueBytes(Kind) int64 {
	return 8 + 1 // a number or a string's offset, and its null flag
}

// mib formats bytes for an error.
func mib(n int64) string {
	if n < 1<<20 {
		return fmt.Sprintf("%d bytes", n)
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}
