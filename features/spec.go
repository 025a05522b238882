// Package features turns a table (Parquet, CSV or JSON lines, package
// table) into colo's sample–parameter graph through feature columns
// written once as a value, the Spec: a label and the fields of a
// click-through model (seed 000 §3.4's graph G(U, V, E) with one sample a
// row and one parameter a row of an embedding table, one edge a field).
//
// A Spec names the label (a column, or a comparison such as
// `delay > 15`) and the features, each a field of parameters:
//
//   - category: one parameter per distinct value of a column, from a
//     dictionary built in one pass over the training rows (values seen
//     fewer than min_count times, and values never seen, share the
//     field's first row);
//   - hash: the value hashed into 2^bits parameters (no dictionary);
//   - a cross of columns (origin × destination): a category (or hash) of
//     the joined values;
//   - quantile: a numeric column cut into buckets at quantiles of the
//     training rows (edges from a seeded sample of at most 2^17 values);
//   - log: a numeric column in buckets of powers of two (sign kept);
//   - standardise: one parameter whose value is (x − mean) / sd;
//   - raw: one parameter whose value is x;
//   - hour, weekday, month, day: a part of a timestamp column.
//
// A row gives one edge per field (none where a column is missing). The
// parameters of field f are numbered Base_f .. Base_f + Size_f − 1 in the
// order of the spec, so the graphs of the training and test rows, and of
// any job that reads the table with the same fitted spec, share their
// parameter ids. An optional test predicate (`date >= 2001-06-01`) splits
// the table into training and test rows, by date as click-through data is
// split.
//
// Fit reads the training rows once and returns a Fitted spec: the spec
// with its dictionaries, bucket edges and moments, a value saved as JSON
// with a placement and with the job of a training run, so that the test
// split and a resumed job read the data identically. Graph reads the
// table a second time and builds the graph, one row group at a time (the
// memory of the largest row group plus the graph).
//
// Fitting and building take O(rows × fields) time; a dictionary takes
// memory in its distinct values, the rest is constant per field.
//
// The compact form of a spec, for a flag, is a formula:
//
//	delay > 15 ~ origin + destination + origin*destination + hour(date) +
//	    weekday(date) + month(date) + quantile(distance, 16); test: date >= 2001-06-01
package features

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"colo/internal/textio"
)

// Transform names what a feature does with its columns.
type Transform string

// The transforms.
const (
	Category    Transform = "category"
	Hash        Transform = "hash"
	Quantile    Transform = "quantile"
	Log         Transform = "log"
	Standardise Transform = "standardise"
	Raw         Transform = "raw"
	Hour        Transform = "hour"
	Weekday     Transform = "weekday"
	Month       Transform = "month"
	Day         Transform = "day"
)

// DefaultBuckets is the number of quantile buckets when a feature does not
// say.
const DefaultBuckets = 16

// DefaultHashBits is the number of hash bits when a feature does not say.
const DefaultHashBits = 20

// Feature is one field: a transform of one column, or of several for a
// cross.
type Feature struct {
	// Columns is the column, or the factors of a cross (category and
	// hash only): columns, or parts of a timestamp column written as
	// hour(date), weekday(date), month(date) or day(date).
	Columns []string `json:"columns"`
	// Transform is what is done with the column (category when empty).
	Transform Transform `json:"transform,omitempty"`
	// Bits is the hash's 2^bits parameters (1..30; DefaultHashBits when 0).
	Bits int `json:"bits,omitempty"`
	// Buckets is the most quantile buckets (2..65536; DefaultBuckets
	// when 0).
	Buckets int `json:"buckets,omitempty"`
	// MinCount is the fewest training rows a category value needs for a
	// parameter of its own (0 or 1: every value).
	MinCount int `json:"min_count,omitempty"`
}

// Name returns the feature as the compact form writes it.
func (f Feature) Name() string {
	quoted := make([]string, len(f.Columns))
	for i, c := range f.Columns {
		quoted[i] = colName(c)
	}
	cols := strings.Join(quoted, "*")
	switch f.Transform {
	case "", Category:
		if f.MinCount > 1 {
			return fmt.Sprintf("category(%s, %d)", cols, f.MinCount)
		}
		return cols
	case Hash:
		return fmt.Sprintf("hash(%s, %d)", cols, f.bits())
	case Quantile:
		return fmt.Sprintf("quantile(%s, %d)", cols, f.buckets())
	case Standardise:
		return fmt.Sprintf("std(%s)", cols)
	}
	return fmt.Sprintf("%s(%s)", f.Transform, cols)
}

func (f Feature) bits() int {
	if f.Bits == 0 {
		return DefaultHashBits
	}
	return f.Bits
}

func (f Feature) buckets() int {
	if f.Buckets == 0 {
		return DefaultBuckets
	}
	return f.Buckets
}

// Spec is a table's label and features.
type Spec struct {
	// Label is a column (its numbers, or booleans as 0 and 1) or a
	// comparison of a column with a value (`delay > 15`,
	// `carrier == "AA"`), 1 where it holds and 0 where not.
	Label string `json:"label"`
	// Features are the fields, each its own range of parameters.
	Features []Feature `json:"features"`
	// Test, when set, is a comparison that picks the test rows (`date >=
	// 2001-06-01`); the others are the training rows.
	Test string `json:"test,omitempty"`
	// Bias adds one parameter that every row has (an intercept).
	Bias bool `json:"bias,omitempty"`
}

// Validate checks the spec's form (not the table's columns, which Fit
// checks), naming the field.
func (s Spec) Validate() error {
	if strings.TrimSpace(s.Label) == "" {
		return errors.New("spec: label is empty: want a column or a comparison such as delay > 15")
	}
	if _, err := parseExpr(s.Label); err != nil {
		return fmt.Errorf("spec: label: %w", err)
	}
	if s.Test != "" {
		e, err := parseExpr(s.Test)
		if err != nil {
			return fmt.Errorf("spec: test: %w", err)
		}
		if e.op == "" {
			return fmt.Errorf("spec: test %q: want a comparison such as date >= 2001-06-01", s.Test)
		}
	}
	if len(s.Features) == 0 {
		return errors.New("spec: no features")
	}
	seen := map[string]int{}
	for i, f := range s.Features {
		at := func(format string, args ...any) error {
			return fmt.Errorf("spec: feature %d (%s): %s", i+1, f.Name(), fmt.Sprintf(format, args...))
		}
		if len(f.Columns) == 0 {
			return at("no column")
		}
		for _, c := range f.Columns {
			col, part := factorOf(c)
			if strings.TrimSpace(col) == "" {
				return at("an empty column name")
			}
			if strings.Contains(col, "`") {
				return at("column %q: a name with a backquote cannot be written in a spec (backquotes quote a name)", col)
			}
			if part != "" && len(f.Columns) == 1 {
				return at("%s as the column of a feature: write %s(%s) alone, or cross it", c, part, col)
			}
		}
		switch f.Transform {
		case "", Category, Hash:
		case Quantile, Log, Standardise, Raw, Hour, Weekday, Month, Day:
			if len(f.Columns) > 1 {
				return at("a cross of %d columns: only category and hash cross columns", len(f.Columns))
			}
		default:
			return at("transform %q: want category, hash, quantile, log, standardise, raw, hour, weekday, month or day", f.Transform)
		}
		if f.Bits != 0 && (f.Transform != Hash || f.Bits < 1 || f.Bits > 30) {
			return at("bits %d: want 1..30, for hash only", f.Bits)
		}
		if f.Buckets != 0 && (f.Transform != Quantile || f.Buckets < 2 || f.Buckets > 1<<16) {
			return at("buckets %d: want 2..65536, for quantile only", f.Buckets)
		}
		if f.MinCount < 0 || f.MinCount > 1 && f.Transform != "" && f.Transform != Category {
			return at("min_count %d: want 0 or more, for category only", f.MinCount)
		}
		if j, dup := seen[f.Name()]; dup {
			return at("the same as feature %d", j+1)
		}
		seen[f.Name()] = i
	}
	return nil
}

// Columns returns the columns the spec reads, each once, in the order of
// first use (label, test, features).
func (s Spec) Columns() []string {
	var out []string
	seen := map[string]bool{}
	add := func(c string) {
		if !seen[c] {
			seen[c] = true
			out = append(out, c)
		}
	}
	if e, err := parseExpr(s.Label); err == nil {
		add(e.col)
	}
	if e, err := parseExpr(s.Test); err == nil && s.Test != "" {
		add(e.col)
	}
	for _, f := range s.Features {
		for _, c := range f.Columns {
			col, _ := factorOf(c)
			add(col)
		}
	}
	return out
}

// factorOf splits a factor of a cross into its column and the part of a
// timestamp it takes ("" for the value itself): hour(date) is date's
// hour.
func factorOf(s string) (col string, part Transform) {
	for _, p := range []Transform{Hour, Weekday, Month, Day} {
		if rest, ok := strings.CutPrefix(s, string(p)+"("); ok && strings.HasSuffix(rest, ")") {
			return unquote(strings.TrimSpace(rest[:len(rest)-1])), p
		}
	}
	return s, ""
}

// colName returns column c as the compact form reads it back: in
// backquotes when it holds a character of the form's syntax, has spaces
// at an end or is "1" (the bias); a timestamp part of a cross as it is
// (Validate refuses a name with a backquote, which cannot be quoted).
func colName(c string) string {
	if _, part := factorOf(c); part != "" {
		return c
	}
	if c == "1" || strings.TrimSpace(c) != c || strings.ContainsAny(c, "*+,;~()") {
		return "`" + c + "`"
	}
	return c
}

// Compact returns the spec in the compact form Parse reads.
func (s Spec) Compact() string {
	var b strings.Builder
	b.WriteString(s.Label)
	b.WriteString(" ~ ")
	for i, f := range s.Features {
		if i > 0 {
			b.WriteString(" + ")
		}
		b.WriteString(f.Name())
	}
	if s.Bias {
		b.WriteString(" + 1")
	}
	if s.Test != "" {
		b.WriteString("; test: ")
		b.WriteString(s.Test)
	}
	return b.String()
}

// Parse reads a spec in its compact form:
//
//	LABEL ~ FEATURE + FEATURE + ... [; test: PREDICATE]
//
// where a FEATURE is a column (a category), a cross a*b (a category of
// the pair), 1 (the bias), or a transform of a column: category(c, MIN),
// hash(c, BITS), hash(a*b, BITS), quantile(c, BUCKETS), quantile(c),
// log(c), std(c), raw(c), hour(c), weekday(c), month(c), day(c). Column
// names are written as in the table (backquotes for a name with spaces or
// symbols: `dep time`).
func Parse(text string) (Spec, error) {
	var s Spec
	main, test, hasTest := strings.Cut(text, ";")
	if hasTest {
		t := strings.TrimSpace(test)
		rest, ok := strings.CutPrefix(t, "test:")
		if !ok {
			return s, fmt.Errorf("spec %q: after ';' want test: PREDICATE", text)
		}
		s.Test = strings.TrimSpace(rest)
	}
	label, feats, ok := strings.Cut(main, "~")
	if !ok {
		return s, fmt.Errorf("spec %q: want LABEL ~ FEATURE + FEATURE ... (such as delay > 15 ~ origin + destination)", text)
	}
	s.Label = strings.TrimSpace(label)
	for _, term := range splitTop(feats, '+') {
		term = strings.TrimSpace(term)
		if term == "" {
			return s, fmt.Errorf("spec %q: an empty feature between '+'", text)
		}
		if term == "1" {
			s.Bias = true
			continue
		}
		f, err := parseFeature(term)
		if err != nil {
			return s, fmt.Errorf("spec: feature %q: %w", term, err)
		}
		s.Features = append(s.Features, f)
	}
	return s, s.Validate()
}

// splitTop splits s at sep outside parentheses and backquotes.
func splitTop(s string, sep byte) []string {
	var out []string
	depth, quoted, start := 0, false, 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '`':
			quoted = !quoted
		case quoted:
		case c == '(':
			depth++
		case c == ')':
			depth--
		case c == sep && depth == 0:
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}

// parseFeature reads one term of the compact form.
func parseFeature(term string) (Feature, error) {
	var f Feature
	fn, args := "", term
	if i := strings.IndexByte(term, '('); i > 0 && !strings.HasPrefix(term, "`") && len(splitTop(term, '*')) == 1 {
		if !strings.HasSuffix(term, ")") {
			return f, errors.New("want NAME(COLUMN) or NAME(COLUMN, NUMBER)")
		}
		fn, args = strings.TrimSpace(term[:i]), term[i+1:len(term)-1]
	}
	parts := splitTop(args, ',')
	if len(parts) > 2 {
		return f, errors.New("more than two arguments")
	}
	factors := splitTop(parts[0], '*')
	for _, c := range factors {
		c = strings.TrimSpace(c)
		if col, part := factorOf(c); part != "" && len(factors) > 1 {
			c = string(part) + "(" + col + ")"
		} else {
			c = unquote(c)
		}
		if c == "" {
			return f, errors.New("an empty column name")
		}
		f.Columns = append(f.Columns, c)
	}
	n := 0
	if len(parts) == 2 {
		var err error
		if n, err = strconv.Atoi(strings.TrimSpace(parts[1])); err != nil {
			return f, fmt.Errorf("argument %q: want a whole number", strings.TrimSpace(parts[1]))
		}
	}
	switch fn {
	case "", "category":
		f.MinCount = n
	case "hash":
		f.Transform, f.Bits = Hash, n
	case "quantile":
		f.Transform, f.Buckets = Quantile, n
	case "std", "standardise", "standardize":
		f.Transform = Standardise
	case "log", "raw", "hour", "weekday", "month", "day":
		f.Transform = Transform(fn)
	default:
		return f, fmt.Errorf("unknown transform %q: want category, hash, quantile, log, std, raw, hour, weekday, month or day", fn)
	}
	if len(parts) == 2 && fn != "category" && fn != "hash" && fn != "quantile" {
		return f, fmt.Errorf("%s takes one column and no number", fn)
	}
	return f, nil
}

// unquote removes the backquotes of a column name.
func unquote(s string) string {
	if len(s) >= 2 && s[0] == '`' && s[len(s)-1] == '`' {
		return s[1 : len(s)-1]
	}
	return s
}

// Read returns the spec that arg names: a JSON file (a Spec, or a Fitted
// spec as colo partition saves it, whose fitted state is then kept), or
// the compact form. It returns the fitted spec when arg is one, and nil
// otherwise.
func Read(arg string) (Spec, *Fitted, error) {
	if st, err := os.Stat(arg); err == nil && !st.IsDir() {
		data, err := readSpecFile(arg, st)
		if err != nil {
			return Spec{}, nil, fmt.Errorf("spec: %w", err)
		}
		var probe struct {
			Spec *Spec `json:"spec"`
		}
		if err := json.Unmarshal(data, &probe); err != nil {
			return Spec{}, nil, fmt.Errorf("spec %s: %w", arg, err)
		}
		if probe.Spec != nil {
			f, err := DecodeFitted(data)
			if err != nil {
				return Spec{}, nil, fmt.Errorf("spec %s: %w", arg, err)
			}
			return f.Spec, f, nil
		}
		var s Spec
		d := json.NewDecoder(strings.NewReader(string(data)))
		d.DisallowUnknownFields()
		if err := d.Decode(&s); err != nil {
			return Spec{}, nil, fmt.Errorf("spec %s: %w", arg, err)
		}
		if err := s.Validate(); err != nil {
			return Spec{}, nil, fmt.Errorf("%s: %w", arg, err)
		}
		return s, nil, nil
	}
	if strings.HasSuffix(strings.ToLower(arg), ".json") {
		return Spec{}, nil, fmt.Errorf("spec %s: no such file", arg)
	}
	s, err := Parse(arg)
	return s, nil, err
}

// MaxFile bounds the size of a spec file, fitted or not, that Read and
// Load read: a fitted spec holds its categories' dictionaries, about
// the size of their values.
const MaxFile = 1 << 30

// readSpecFile reads the spec file path whose kind st gives: a regular
// file within MaxFile, or a pipe (--spec <(…)) up to MaxFile bytes. A
// device or a socket is refused unread: /dev/zero was read until memory
// ran out.
func readSpecFile(path string, st os.FileInfo) ([]byte, error) {
	if st.Mode()&os.ModeNamedPipe == 0 {
		return textio.ReadRegular(path, MaxFile)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return textio.ReadLimited(f, path, MaxFile)
}
