// Package textio holds what colo's text loaders share: the error that
// names the file, line and field of malformed input, and Open, which
// refuses a directory given for an input file by saying so.
package textio

import "fmt"

// ParseError is malformed input. It names the file, the line (from 1; 0
// for binary input or the whole file), the field (from 1; 0 for the whole
// line) and what was expected.
type ParseError struct {
	File  string
	Line  int
	Field int
	Msg   string
}

func (e *ParseError) Error() string {
	switch {
	case e.Line == 0:
		return fmt.Sprintf("%s: %s", e.File, e.Msg)
	case e.Field == 0:
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	default:
		return fmt.Sprintf("%s:%d: field %d: %s", e.File, e.Line, e.Field, e.Msg)
	}
}
