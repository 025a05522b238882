package table

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"
)

// pqColumn is a projected column of a Parquet file.
type pqColumn struct {
	name  string
	leaf  int   // index of the column chunk in a row group
	kind  Kind  // kind in a batch
	scale int64 // KindTime: microseconds per unit of the file (0: nanoseconds)
	days  bool  // KindTime from DATE: days since 1970-01-01
	int32 bool  // physical INT32
	float bool  // physical FLOAT (not DOUBLE)
}

// pqSource reads a Parquet file row group by row group.
type pqSource struct {
	name  string
	file  *parquet.File
	cols  []pqColumn
	opt   Options
	group int
	row   int64
	batch Batch
	vals  []parquet.Value
}

// openParquet opens the Parquet file f of size bytes for the columns.
func openParquet(f io.ReaderAt, size int64, name string, columns []string, opt Options) (_ *Reader, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = &Error{File: name, Group: -1, Msg: "corrupt footer", Err: fmt.Errorf("%v", p)}
		}
	}()
	if size < 12 {
		return nil, &Error{File: name, Group: -1, Msg: fmt.Sprintf("truncated: %d bytes, shorter than a Parquet file's magic bytes and footer", size)}
	}
	// The library sizes its buffer by the footer's length: check that
	// it fits the file first.
	var tail [8]byte
	if _, err := f.ReadAt(tail[:], size-8); err != nil {
		return nil, &Error{File: name, Group: -1, Msg: "reading the footer", Err: err}
	}
	if string(tail[4:]) != "PAR1" {
		return nil, &Error{File: name, Group: -1, Msg: fmt.Sprintf("truncated, or not a Parquet file: ends in %q, not the magic bytes PAR1", tail[4:])}
	}
	if n := int64(binary.LittleEndian.Uint32(tail[:4])); n > size-12 {
		return nil, &Error{File: name, Group: -1, Msg: fmt.Sprintf("corrupt footer: its length %d is more than the file's %d bytes hold (truncated?)", n, size)}
	}
	pf, err := parquet.OpenFile(f, size, parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true), parquet.ReadBufferSize(1<<20))
	if err != nil {
		return nil, &Error{File: name, Group: -1, Msg: "not a readable Parquet file (truncated, or a corrupt footer)", Err: err}
	}
	top := pf.Root().Columns()
	names := make([]string, len(top))
	for i, c := range top {
		names[i] = c.Name()
	}
	idx, err := project(name, names, columns)
	if err != nil {
		return nil, err
	}
	s := &pqSource{name: name, file: pf, opt: opt}
	fields := make([]Field, len(idx))
	nleaves := 0
	for _, c := range top {
		nleaves += countLeaves(c)
	}
	for i, j := range idx {
		c, err := pqColumnOf(name, top[j])
		if err != nil {
			return nil, err
		}
		if c.leaf < 0 || c.leaf >= nleaves {
			return nil, &Error{File: name, Group: -1, Column: c.name, Msg: "corrupt footer: no column chunk"}
		}
		s.cols = append(s.cols, c)
		fields[i] = Field{Name: c.name, Kind: c.kind}
	}
	for g, rg := range pf.Metadata().RowGroups {
		if len(rg.Columns) != nleaves {
			return nil, &Error{File: name, Group: g, Msg: fmt.Sprintf("corrupt footer: %d column chunks, want %d", len(rg.Columns), nleaves)}
		}
		if rg.NumRows < 0 {
			return nil, &Error{File: name, Group: g, Msg: fmt.Sprintf("corrupt footer: %d rows", rg.NumRows)}
		}
		for _, c := range s.cols {
			switch codec := rg.Columns[c.leaf].MetaData.Codec; codec {
			case format.Lz4, format.Lz4Raw:
				// The library's LZ4 decoder grows its buffer without
				// end on a corrupt page.
				return nil, &Error{File: name, Group: g, Column: c.name,
					Msg: fmt.Sprintf("compressed with %s, which is not read: write the file with zstd, snappy or gzip", codec)}
			}
		}
	}
	return &Reader{src: s, name: name, fields: fields}, nil
}

// countLeaves returns the number of leaf columns under c.
func countLeaves(c *parquet.Column) int {
	if c.Leaf() {
		return 1
	}
	n := 0
	for _, d := range c.Columns() {
		n += countLeaves(d)
	}
	return n
}

// pqColumnOf maps a top-level column of a Parquet schema to a flat
// column of a batch, or refuses it.
func pqColumnOf(file string, c *parquet.Column) (pqColumn, error) {
	out := pqColumn{name: c.Name(), leaf: c.Index()}
	bad := func(format string, args ...any) (pqColumn, error) {
		return pqColumn{}, &Error{File: file, Group: -1, Column: out.name, Msg: fmt.Sprintf(format, args...)}
	}
	if !c.Leaf() {
		return bad("a nested column (a group of %d): want a flat column", len(c.Columns()))
	}
	if c.Repeated() {
		return bad("a repeated column (a list): want one value a row")
	}
	typ := c.Type()
	var lt *format.LogicalType
	if typ != nil {
		lt = typ.LogicalType()
	}
	if lt != nil {
		switch v := lt.Value.(type) {
		case *format.TimestampType:
			out.kind = KindTime
			switch v.Unit.Value.(type) {
			case *format.MilliSeconds:
				out.scale = 1000
			case *format.MicroSeconds:
				out.scale = 1
			default:
				out.scale = 0
			}
		case *format.DateType:
			out.kind, out.days = KindTime, true
		case *format.DecimalType:
			return bad("a decimal column: not read (write it as a double)")
		}
	}
	switch typ.Kind() {
	case parquet.Boolean:
		out.kind = KindBool
	case parquet.Int32:
		out.int32 = true
		if out.kind == 0 {
			out.kind = KindInt
		}
	case parquet.Int64:
		if out.kind == 0 {
			out.kind = KindInt
		}
	case parquet.Float:
		out.kind, out.float = KindFloat, true
	case parquet.Double:
		out.kind = KindFloat
	case parquet.ByteArray, parquet.FixedLenByteArray:
		out.kind = KindString
	default:
		return bad("of Parquet type %s: not read (want an integer, float, double, boolean, string, date or timestamp)", typ)
	}
	if out.kind == KindTime && out.int32 != out.days {
		return bad("a timestamp stored as %s: not read", typ)
	}
	return out, nil
}

// groupBytes returns what row group g takes in a batch, and its column
// taking the most with that column's share.
func (s *pqSource) groupBytes(g int) (total int64, worst string, most int64) {
	rg := s.file.Metadata().RowGroups[g]
	for _, c := range s.cols {
		n := rg.NumRows * valueBytes(c.kind)
		if md := rg.Columns[c.leaf].MetaData; md.TotalUncompressedSize > 0 {
			n += md.TotalUncompressedSize
			if c.kind == KindString {
				n += md.TotalUncompressedSize // the values copied into the batch
			}
		}
		total += n
		if n > most {
			worst, most = c.name, n
		}
	}
	return total, worst, most
}

// next reads the next row group.
func (s *pqSource) next() (*Batch, error) {
	groups := s.file.RowGroups()
	if s.group >= len(groups) {
		return nil, io.EOF
	}
	g := s.group
	s.group++
	rows := s.file.Metadata().RowGroups[g].NumRows
	if s.opt.Memory > 0 {
		if total, worst, most := s.groupBytes(g); total > s.opt.Memory {
			return nil, &Error{File: s.name, Group: g, Column: worst, Err: ErrMemory,
				Msg: fmt.Sprintf("%d rows take %s (this column %s), more than the %s allowed; write the file with smaller row groups or allow more memory",
					rows, mib(total), mib(most), mib(s.opt.Memory))}
		}
	}
	b := &s.batch
	b.Group, b.FirstRow, b.Rows, b.Lines = g, s.row, int(rows), nil
	if b.Cols == nil {
		b.Cols = make([]*Column, len(s.cols))
		for i, c := range s.cols {
			b.Cols[i] = &Column{Name: c.name, Kind: c.kind}
		}
	}
	chunks := groups[g].ColumnChunks()
	for i, c := range s.cols {
		if err := s.readChunk(g, rows, c, chunks[c.leaf], b.Cols[i]); err != nil {
			return nil, err
		}
	}
	s.row += rows
	return b, nil
}

// readChunk decodes column c of row group g (rows rows) into col. The
// decoder is a library's: a panic on a corrupt page is turned into an
// error naming the file, the row group and the column.
func (s *pqSource) readChunk(g int, rows int64, c pqColumn, cc parquet.ColumnChunk, col *Column) (err error) {
	fail := func(msg string, cause error) error {
		return &Error{File: s.name, Group: g, Column: c.name, Msg: msg, Err: cause}
	}
	defer func() {
		if p := recover(); p != nil {
			err = fail("corrupt page", fmt.Errorf("%v", p))
		}
	}()
	col.Ints, col.Floats, col.Bytes, col.Null = col.Ints[:0], col.Floats[:0], col.Bytes[:0], col.Null[:0]
	col.Offs = append(col.Offs[:0], 0)
	anyNull := false
	var n int64
	// The budget, when given, also bounds what the pages decode to: a
	// page may claim more values than its row group (a corrupt file).
	limit := s.opt.Memory
	pages := cc.Pages()
	defer pages.Close()
	if s.vals == nil {
		s.vals = make([]parquet.Value, 1024)
	}
	for {
		p, err := pages.ReadPage()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fail("reading a page", err)
		}
		vr := p.Values()
		for {
			k, err := vr.ReadValues(s.vals)
			if n+int64(k) > rows {
				parquet.Release(p)
				return fail(fmt.Sprintf("more values than the row group's %d rows", rows), nil)
			}
			for _, v := range s.vals[:k] {
				null := v.IsNull()
				anyNull = anyNull || null
				col.Null = append(col.Null, null)
				switch c.kind {
				case KindString:
					if !null {
						col.Bytes = append(col.Bytes, v.ByteArray()...)
					}
					col.Offs = append(col.Offs, len(col.Bytes))
				case KindFloat:
					x := 0.0
					if !null {
						if c.float {
							x = float64(v.Float())
						} else {
							x = v.Double()
						}
					}
					col.Floats = append(col.Floats, x)
				case KindBool:
					x := int64(0)
					if !null && v.Boolean() {
						x = 1
					}
					col.Ints = append(col.Ints, x)
				default:
					x := int64(0)
					if !null {
						if c.int32 {
							x = int64(v.Int32())
						} else {
							x = v.Int64()
						}
						if c.kind == KindTime {
							x = toMicros(x, c)
						}
					}
					col.Ints = append(col.Ints, x)
				}
			}
			n += int64(k)
			if limit > 0 && int64(len(col.Bytes)) > limit {
				parquet.Release(p)
				return &Error{File: s.name, Group: g, Column: c.name, Err: ErrMemory,
					Msg: fmt.Sprintf("its strings take more than the %s allowed", mib(limit))}
			}
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				parquet.Release(p)
				return fail("decoding a page", err)
			}
			if k == 0 {
				parquet.Release(p)
				return fail("decoding a page", io.ErrNoProgress)
			}
		}
		parquet.Release(p)
	}
	if n != rows {
		return fail(fmt.Sprintf("%d values for the row group's %d rows (truncated, or a corrupt page)", n, rows), nil)
	}
	if !anyNull {
		col.Null = nil
	}
	return nil
}

// toMicros converts a timestamp or date of column c to microseconds.
func toMicros(x int64, c pqColumn) int64 {
	switch {
	case c.days:
		return x * int64(24*time.Hour/time.Microsecond)
	case c.scale == 0:
		return x / 1000
	}
	return x * c.scale
}
