package features

import (
	"bytes"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"colo/table"
)

// expr is a label or a predicate: a column alone, or a column compared
// with a literal.
type expr struct {
	col string
	op  string // "", ">", ">=", "<", "<=", "==", "!="
	lit string // the literal as written, unquoted
	str bool   // the literal was quoted: a string
}

// parseExpr reads `COLUMN` or `COLUMN OP LITERAL`.
func parseExpr(s string) (expr, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return expr{}, fmt.Errorf("empty")
	}
	var e expr
	if i := strings.IndexAny(s, "<>=!"); i >= 0 {
		e.col = unquote(strings.TrimSpace(s[:i]))
		rest := s[i:]
		for _, op := range []string{">=", "<=", "==", "!=", ">", "<", "="} {
			if strings.HasPrefix(rest, op) {
				e.op, rest = op, strings.TrimSpace(rest[len(op):])
				break
			}
		}
		if e.op == "" {
			return e, fmt.Errorf("%q: want COLUMN OP VALUE with OP one of > >= < <= == !=", s)
		}
		if e.op == "=" {
			e.op = "=="
		}
		if rest == "" {
			return e, fmt.Errorf("%q: no value after %s", s, e.op)
		}
		if strings.ContainsAny(rest[:1], "<>=!") {
			return e, fmt.Errorf("%q: want COLUMN OP VALUE with OP one of > >= < <= == !=", s)
		}
		if len(rest) >= 2 && rest[0] == '"' {
			v, err := strconv.Unquote(rest)
			if err != nil {
				return e, fmt.Errorf("%q: value %s: %v", s, rest, err)
			}
			e.lit, e.str = v, true
		} else {
			e.lit = rest
		}
	} else {
		e.col = unquote(s)
	}
	if e.col == "" {
		return e, fmt.Errorf("%q: no column", s)
	}
	return e, nil
}

// String writes the expression back.
func (e expr) String() string {
	if e.op == "" {
		return e.col
	}
	if e.str {
		return fmt.Sprintf("%s %s %q", e.col, e.op, e.lit)
	}
	return fmt.Sprintf("%s %s %s", e.col, e.op, e.lit)
}

// evaluator evaluates an expression on the rows of a column of one kind.
type evaluator struct {
	e    expr
	kind table.Kind
	num  float64 // the literal as a number (numeric columns)
	tm   int64   // the literal as microseconds (timestamp columns)
}

// compile prepares e for a column of kind k, or says why they do not fit.
func compile(e expr, k table.Kind) (evaluator, error) {
	ev := evaluator{e: e, kind: k}
	if e.op == "" {
		if k == table.KindString {
			return ev, fmt.Errorf("column %q holds strings: compare it with a value (%s == \"...\") to make a label", e.col, e.col)
		}
		if k == table.KindTime {
			return ev, fmt.Errorf("column %q holds timestamps: compare it with a date (%s >= 2001-06-01)", e.col, e.col)
		}
		return ev, nil
	}
	switch k {
	case table.KindInt, table.KindFloat, table.KindBool:
		lit := e.lit
		if k == table.KindBool && !e.str {
			switch lit {
			case "true":
				lit = "1"
			case "false":
				lit = "0"
			}
		}
		v, err := strconv.ParseFloat(lit, 64)
		if err != nil || e.str {
			return ev, fmt.Errorf("column %q holds %s values: %s is not a number", e.col, k, strconv.Quote(e.lit))
		}
		ev.num = v
	case table.KindTime:
		t, ok := parseTime(e.lit)
		if !ok {
			return ev, fmt.Errorf("column %q holds timestamps: %s is not a date or time (want 2001-06-01 or 2001-06-01T12:00:00)", e.col, strconv.Quote(e.lit))
		}
		ev.tm = t.UnixMicro()
	case table.KindString:
		if e.op != "==" && e.op != "!=" {
			return ev, fmt.Errorf("column %q holds strings: compare it with == or !=, not %s", e.col, e.op)
		}
	}
	return ev, nil
}

// parseTime reads a date or time literal.
func parseTime(s string) (time.Time, bool) {
	c := table.Column{Kind: table.KindText, Bytes: []byte(s), Offs: []int{0, len(s)}}
	return c.Time(0)
}

// cmp compares a and b.
func cmp[T int64 | float64](a, b T) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// holds says whether the comparison op holds for c = cmp(value, literal).
func holds(op string, c int) bool {
	switch op {
	case ">":
		return c > 0
	case ">=":
		return c >= 0
	case "<":
		return c < 0
	case "<=":
		return c <= 0
	case "==":
		return c == 0
	}
	return c != 0
}

// value returns the expression's value for row i of col: the column's
// number, or 1 or 0 for a comparison. ok is false for a missing value;
// err says why a value does not fit.
func (ev *evaluator) value(col *table.Column, i int) (v float64, ok bool, err error) {
	if col.IsNull(i) {
		return 0, false, nil
	}
	b2f := func(b bool) float64 {
		if b {
			return 1
		}
		return 0
	}
	// NaN and the infinities are refused as the features refuse them
	// (number): a NaN compared equal to any literal (cmp), and a label
	// of NaN or Inf trains nothing sensible.
	if ev.e.op == "" {
		x, ok := col.Float(i)
		if !ok || math.IsNaN(x) || math.IsInf(x, 0) {
			return 0, false, fmt.Errorf("column %q: %s is not a finite number", ev.e.col, quoteValue(col, i))
		}
		return x, true, nil
	}
	switch ev.kind {
	case table.KindInt, table.KindBool, table.KindFloat:
		x, _ := col.Float(i)
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return 0, false, fmt.Errorf("column %q: %s is not a finite number to compare with %s", ev.e.col, quoteValue(col, i), ev.e.lit)
		}
		return b2f(holds(ev.e.op, cmp(x, ev.num))), true, nil
	case table.KindTime:
		return b2f(holds(ev.e.op, cmp(col.Ints[i], ev.tm))), true, nil
	case table.KindString:
		return b2f(holds(ev.e.op, bytes.Compare(col.Str(i), []byte(ev.e.lit)))), true, nil
	}
	// Text: as the literal reads, a number, a time or a string.
	s := col.Str(i)
	if !ev.e.str {
		if lit, err := strconv.ParseFloat(ev.e.lit, 64); err == nil {
			x, ok := col.Float(i)
			if !ok {
				return 0, false, fmt.Errorf("column %q: %s is not a number to compare with %s", ev.e.col, strconv.Quote(string(s)), ev.e.lit)
			}
			if math.IsNaN(x) || math.IsInf(x, 0) {
				return 0, false, fmt.Errorf("column %q: %s is not a finite number to compare with %s", ev.e.col, strconv.Quote(string(s)), ev.e.lit)
			}
			return b2f(holds(ev.e.op, cmp(x, lit))), true, nil
		}
		if lit, ok := parseTime(ev.e.lit); ok {
			t, ok := col.Time(i)
			if !ok {
				return 0, false, fmt.Errorf("column %q: %s is not a time to compare with %s", ev.e.col, strconv.Quote(string(s)), ev.e.lit)
			}
			return b2f(holds(ev.e.op, cmp(t.UnixMicro(), lit.UnixMicro()))), true, nil
		}
	}
	return b2f(holds(ev.e.op, bytes.Compare(s, []byte(ev.e.lit)))), true, nil
}

// quoteValue quotes row i of col for an error: its text, or its number
// for a column of numbers.
func quoteValue(col *table.Column, i int) string {
	if col.Kind == table.KindString || col.Kind == table.KindText {
		return strconv.Quote(string(col.Str(i)))
	}
	x, _ := col.Float(i)
	return strconv.FormatFloat(x, 'g', -1, 64)
}
