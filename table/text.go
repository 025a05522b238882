package table

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
)

// textBatch fills batches of a text table row by row, within the memory
// budget.
type textBatch struct {
	name  string
	opt   Options
	group int
	row   int64
	b     Batch
	bytes int64
}

// start begins a batch of the columns named.
func (t *textBatch) start(names []string) {
	b := &t.b
	if b.Cols == nil {
		b.Cols = make([]*Column, len(names))
		for i, n := range names {
			b.Cols[i] = &Column{Name: n, Kind: KindText}
		}
	}
	b.Group, b.FirstRow, b.Rows, b.Lines = t.group, t.row, 0, b.Lines[:0]
	if b.Lines == nil {
		b.Lines = []int{}
	}
	for _, c := range b.Cols {
		c.Bytes, c.Offs, c.Null = c.Bytes[:0], append(c.Offs[:0], 0), c.Null[:0]
	}
	t.bytes = 0
}

// fits reports whether a row of n bytes fits the batch; a row alone
// larger than the budget is an error naming the line and its largest
// value's column.
func (t *textBatch) fits(line int, n int64, widest string) (bool, error) {
	cost := n + int64(len(t.b.Cols))*valueBytes(KindText) + 8
	if t.opt.Memory > 0 && t.bytes+cost > t.opt.Memory {
		if t.b.Rows == 0 {
			return false, &Error{File: t.name, Group: -1, Line: line, Column: widest, Err: ErrMemory,
				Msg: fmt.Sprintf("the row takes %s, more than the %s allowed", mib(cost), mib(t.opt.Memory))}
		}
		return false, nil
	}
	t.bytes += cost
	return true, nil
}

// add appends value v (nil: missing) to column i.
func (t *textBatch) add(i int, v []byte, null bool) {
	c := t.b.Cols[i]
	c.Bytes = append(c.Bytes, v...)
	c.Offs = append(c.Offs, len(c.Bytes))
	c.Null = append(c.Null, null)
}

// end closes a row read at line.
func (t *textBatch) end(line int) {
	t.b.Lines = append(t.b.Lines, line)
	t.b.Rows++
}

// finish returns the batch, or io.EOF when it is empty.
func (t *textBatch) finish() (*Batch, error) {
	if t.b.Rows == 0 {
		return nil, io.EOF
	}
	t.group++
	t.row += int64(t.b.Rows)
	b := t.b
	b.Cols = make([]*Column, len(t.b.Cols))
	for i, c := range t.b.Cols {
		cc := *c
		if !slices.Contains(cc.Null, true) {
			cc.Null = nil
		}
		b.Cols[i] = &cc
	}
	return &b, nil
}

// csvSource reads a CSV or TSV table with a header line.
type csvSource struct {
	textBatch
	r       *csv.Reader
	idx     []int
	names   []string
	width   int      // the header's fields
	pending []string // a row read but left for the next batch
	pline   int
	done    bool
}

// openCSV opens a CSV table whose first line names the columns.
func openCSV(f io.Reader, name string, comma rune, columns []string, opt Options) (*Reader, error) {
	r := csv.NewReader(bufio.NewReaderSize(f, 1<<20))
	r.Comma = comma
	r.ReuseRecord = true
	if comma == '\t' {
		r.LazyQuotes = true
	}
	head, err := r.Read()
	if err == io.EOF {
		return nil, &Error{File: name, Group: -1, Line: 1, Msg: "empty: want a header line naming the columns"}
	}
	if err != nil {
		return nil, csvError(name, err)
	}
	names := make([]string, len(head))
	for i, h := range head {
		names[i] = strings.TrimSpace(strings.TrimPrefix(h, "\ufeff"))
	}
	idx, err := project(name, names, columns)
	if err != nil {
		return nil, err
	}
	s := &csvSource{textBatch: textBatch{name: name, opt: opt}, r: r, idx: idx, width: len(names)}
	fields := make([]Field, len(idx))
	for i, j := range idx {
		fields[i] = Field{Name: names[j], Kind: KindText}
		s.names = append(s.names, names[j])
	}
	return &Reader{src: s, name: name, fields: fields}, nil
}

// csvError turns an encoding/csv error into an *Error with its line.
func csvError(name string, err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return &Error{File: name, Group: -1, Line: pe.Line, Msg: fmt.Sprintf("field %d", pe.Column), Err: pe.Err}
	}
	return &Error{File: name, Group: -1, Msg: "read", Err: err}
}

// next reads the next batch of rows.
func (s *csvSource) next() (*Batch, error) {
	s.start(s.names)
	for s.b.Rows < s.opt.BatchRows {
		var rec []string
		var line int
		if s.pending != nil {
			rec, line, s.pending = s.pending, s.pline, nil
		} else {
			if s.done {
				break
			}
			var err error
			rec, err = s.r.Read()
			if err == io.EOF {
				s.done = true
				break
			}
			if errors.Is(err, csv.ErrFieldCount) {
				// "field 1: wrong number of fields" said neither how
				// many there were nor how many were wanted.
				line, _ = s.r.FieldPos(0)
				return nil, &Error{File: s.name, Group: -1, Line: line, Msg: fmt.Sprintf("%d fields, want %d like the header", len(rec), s.width)}
			}
			if err != nil {
				return nil, csvError(s.name, err)
			}
			line, _ = s.r.FieldPos(0)
		}
		n, widest, most := int64(0), "", -1
		for i, j := range s.idx {
			n += int64(len(rec[j]))
			if len(rec[j]) > most {
				widest, most = s.names[i], len(rec[j])
			}
		}
		ok, err := s.fits(line, n, widest)
		if err != nil {
			return nil, err
		}
		if !ok {
			s.pending, s.pline = append([]string(nil), rec...), line
			break
		}
		for i, j := range s.idx {
			v := rec[j]
			s.add(i, []byte(v), v == "")
		}
		s.end(line)
	}
	return s.finish()
}

// jsonSource reads a table of JSON objects, one a line.
type jsonSource struct {
	textBatch
	br      *bufio.Reader
	names   []string
	pos     map[string]int
	line    int
	vals    []json.RawMessage
	pending []byte
	pline   int
	done    bool
}

// openJSONL opens a JSON-lines table. The columns are the keys of the
// first object (or those asked for: a key a row lacks is missing there).
func openJSONL(f io.Reader, name string, columns []string, opt Options) (*Reader, error) {
	s := &jsonSource{textBatch: textBatch{name: name, opt: opt}, br: bufio.NewReaderSize(f, 1<<20)}
	names := columns
	if len(names) == 0 {
		line, err := s.readLine()
		if err == io.EOF {
			return nil, &Error{File: name, Group: -1, Line: 1, Msg: "empty: want one JSON object a line"}
		}
		if err != nil {
			return nil, err
		}
		keys, err := objectKeys(line)
		if err != nil {
			return nil, &Error{File: name, Group: -1, Line: s.line, Msg: "not a JSON object", Err: err}
		}
		names = keys
		s.pending, s.pline = bytes.Clone(line), s.line
	}
	s.names = names
	s.pos = make(map[string]int, len(names))
	for i, n := range names {
		s.pos[n] = i
	}
	s.vals = make([]json.RawMessage, len(names))
	fields := make([]Field, len(names))
	for i, n := range names {
		fields[i] = Field{Name: n, Kind: KindText}
	}
	return &Reader{src: s, name: name, fields: fields}, nil
}

// readLine returns the next non-blank line, bounded by the memory budget.
func (s *jsonSource) readLine() ([]byte, error) {
	var long []byte
	for {
		part, err := s.br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			long = append(long, part...)
			if s.opt.Memory > 0 && int64(len(long)) > s.opt.Memory {
				return nil, &Error{File: s.name, Group: -1, Line: s.line + 1, Err: ErrMemory,
					Msg: fmt.Sprintf("a line longer than the %s allowed", mib(s.opt.Memory))}
			}
			continue
		}
		if err != nil && err != io.EOF {
			return nil, &Error{File: s.name, Group: -1, Line: s.line + 1, Msg: "read", Err: err}
		}
		line := part
		if long != nil {
			line = append(long, part...)
			long = nil
		}
		if len(line) == 0 && err == io.EOF {
			return nil, io.EOF
		}
		s.line++
		if t := bytes.TrimSpace(line); len(t) > 0 {
			return t, nil
		}
		if err == io.EOF {
			return nil, io.EOF
		}
	}
}

// objectKeys returns the keys of a JSON object, in order.
func objectKeys(line []byte) ([]string, error) {
	d := json.NewDecoder(bytes.NewReader(line))
	t, err := d.Token()
	if err != nil {
		return nil, err
	}
	if t != json.Delim('{') {
		return nil, fmt.Errorf("starts with %v", t)
	}
	var keys []string
	for d.More() {
		k, err := d.Token()
		if err != nil {
			return nil, err
		}
		keys = append(keys, k.(string))
		var skip json.RawMessage
		if err := d.Decode(&skip); err != nil {
			return nil, err
		}
	}
	return keys, nil
}

// next reads the next batch of rows.
func (s *jsonSource) next() (*Batch, error) {
	s.start(s.names)
	for s.b.Rows < s.opt.BatchRows {
		var line []byte
		var at int
		if s.pending != nil {
			line, at, s.pending = s.pending, s.pline, nil
		} else {
			if s.done {
				break
			}
			var err error
			line, err = s.readLine()
			if err == io.EOF {
				s.done = true
				break
			}
			if err != nil {
				return nil, err
			}
			at = s.line
		}
		if err := s.parse(line, at); err != nil {
			return nil, err
		}
		n, widest, most := int64(0), "", -1
		for i, v := range s.vals {
			n += int64(len(v))
			if len(v) > most {
				widest, most = s.names[i], len(v)
			}
		}
		ok, err := s.fits(at, n, widest)
		if err != nil {
			return nil, err
		}
		if !ok {
			s.pending, s.pline = bytes.Clone(line), at
			break
		}
		for i, v := range s.vals {
			switch {
			case v == nil || string(v) == "null":
				s.add(i, nil, true)
			case v[0] == '"':
				var str string
				if err := json.Unmarshal(v, &str); err != nil {
					return nil, &Error{File: s.name, Group: -1, Line: at, Column: s.names[i], Msg: "bad string", Err: err}
				}
				s.add(i, []byte(str), false)
			case v[0] == '{' || v[0] == '[':
				return nil, &Error{File: s.name, Group: -1, Line: at, Column: s.names[i], Msg: "a nested value: want a string, number or boolean"}
			default:
				s.add(i, v, false)
			}
		}
		s.end(at)
	}
	return s.finish()
}

// parse reads the projected values of the object on line into s.vals
// (nil for a missing key).
func (s *jsonSource) parse(line []byte, at int) error {
	clear(s.vals)
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(line, &obj); err != nil {
		return &Error{File: s.name, Group: -1, Line: at, Msg: "not a JSON object", Err: err}
	}
	for k, v := range obj {
		if i, ok := s.pos[k]; ok {
			s.vals[i] = bytes.TrimSpace(v)
		}
	}
	return nil
}
