package dataset

import (
	"fmt"
	"io"

	"colo/internal/membudget"
)

// csvBounds is the reader in front of encoding/csv in ReadCSV: it passes
// the bytes through while it counts the lines, the length of the current
// line and the fields of the current record (its separators outside
// quotes: a quote toggles quoting, and a doubled quote inside a quoted
// field toggles twice), and fails with a *ParseError naming the line
// before a line longer than maxLine bytes, or a record of more than
// maxFields fields, reaches the CSV parser, which holds about 40 bytes
// per field of a record while it splits it.
type csvBounds struct {
	r         io.Reader
	name      string
	comma     byte // the separator, when count
	count     bool // whether fields are counted: a one-byte separator
	maxLine   int
	maxFields int // of the current record; see setMaxFields
	why       string
	line      int // lines ended so far
	lineLen   int // bytes of the current line
	fields    int // fields of the current record so far
	recStart  int // line where the current record starts, from 1
	quoted    bool
	err       error
}

// newCSVBounds returns a csvBounds of r with no field limit yet.
func newCSVBounds(r io.Reader, name string, comma rune, maxLine int) *csvBounds {
	c := &csvBounds{r: r, name: name, maxLine: maxLine, fields: 1, recStart: 1, maxFields: int(^uint(0) >> 1)}
	if comma < 0x80 {
		c.comma, c.count = byte(comma), true
	}
	return c
}

// setMaxFields sets the field limit of the records after the current one
// and says why it is what it is, for the error.
func (c *csvBounds) setMaxFields(n int, why string) { c.maxFields, c.why = n, why }

// Read reads through the counts.
func (c *csvBounds) Read(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	n, err := c.r.Read(p)
	for i, b := range p[:n] {
		switch {
		case b == '\n':
			c.line++
			c.lineLen = 0
			if !c.quoted {
				c.fields, c.recStart = 1, c.line+1
			}
			continue
		case b == '"':
			c.quoted = !c.quoted
		case b == c.comma && c.count && !c.quoted:
			c.fields++
		}
		c.lineLen++
		switch {
		case c.lineLen > c.maxLine:
			c.err = &ParseError{File: c.name, Line: c.line + 1, Msg: fmt.Sprintf(
				"line longer than %d bytes, the longest line read under the memory budget (%s SIZE sets it)", c.maxLine, membudget.Flag)}
		case c.fields > c.maxFields:
			c.err = &ParseError{File: c.name, Line: c.recStart, Msg: fmt.Sprintf(
				"record of more than %d fields: %s", c.maxFields, c.why)}
		default:
			continue
		}
		// The bytes before the one at fault go through, then the error.
		return i, c.err
	}
	return n, err
}
