package dense

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
)

// DefaultMaxValues bounds n·d for text input: 2^29 float32 values (2 GiB).
const DefaultMaxValues = 1 << 29

// LibSVMOptions control ReadLibSVM.
type LibSVMOptions struct {
	// IndexBase is 0 or 1 for 0- or 1-based feature indices, or -1 to
	// detect: 0-based when an index 0 occurs.
	IndexBase int
	// Dim fixes the number of features; 0 takes the largest index. An index
	// beyond a fixed Dim is an error.
	Dim int
	// MaxValues bounds n·d, the size of the dense matrix; 0 means
	// DefaultMaxValues. Sparse data with a wide feature space belongs in
	// package graph, not here.
	MaxValues int64
}

// DefaultLibSVMOptions returns options that detect the index base and the
// width.
func DefaultLibSVMOptions() LibSVMOptions { return LibSVMOptions{IndexBase: -1} }

// Validate checks the options and names the offending field.
func (o LibSVMOptions) Validate() error {
	if o.IndexBase < -1 || o.IndexBase > 1 {
		return fmt.Errorf("index base %d: want 0, 1 or -1 (detect)", o.IndexBase)
	}
	if o.Dim < 0 {
		return fmt.Errorf("dim %d: want 0 (detect) or more", o.Dim)
	}
	if o.MaxValues < 0 {
		return fmt.Errorf("max values %d: want 0 (default) or more", o.MaxValues)
	}
	return nil
}

// maxLine bounds the length of one text line.
const maxLine = 1 << 28

// ReadLibSVM reads libsvm text with one class label per line:
//
//	label index:value index:value ... [# comment]
//
// Indices must increase within a line; "qid:" fields are skipped. Absent
// features are 0. name is used in errors.
func ReadLibSVM(r io.Reader, name string, o LibSVMOptions) (*Dataset, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	maxValues := o.MaxValues
	if maxValues == 0 {
		maxValues = DefaultMaxValues
	}
	fail := func(line, field int, format string, args ...any) error {
		return &ParseError{File: name, Line: line, Field: field, Msg: fmt.Sprintf(format, args...)}
	}
	var (
		rowEnd   []int // entries of row i end at rowEnd[i]
		index    []int
		value    []float32
		labels   []int
		classes  = newClassMap()
		minIndex = math.MaxInt
		maxIndex = -1
	)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<16), maxLine)
	line := 0
	for sc.Scan() {
		line++
		text := sc.Bytes()
		if k := bytes.IndexByte(text, '#'); k >= 0 {
			text = text[:k]
		}
		fields := bytes.Fields(text)
		if len(fields) == 0 {
			continue
		}
		label := fields[0]
		if bytes.IndexByte(label, ',') >= 0 {
			return nil, fail(line, 1, "multi-label %q: want one class label per sample", label)
		}
		if v, err := strconv.ParseFloat(string(label), 64); err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fail(line, 1, "label %q: want a number", label)
		}
		labels = append(labels, classes.add(string(label)))
		prev := -1
		for f, field := range fields[1:] {
			colon := bytes.IndexByte(field, ':')
			if colon < 0 {
				return nil, fail(line, f+2, "%q: want index:value", field)
			}
			if string(field[:colon]) == "qid" {
				continue
			}
			idx, err := strconv.Atoi(string(field[:colon]))
			if err != nil || idx < 0 || idx > math.MaxInt32 {
				return nil, fail(line, f+2, "index %q: want an integer in 0..2^31-1", field[:colon])
			}
			if idx <= prev {
				return nil, fail(line, f+2, "index %d after %d: indices must increase within a line", idx, prev)
			}
			if idx == 0 && o.IndexBase == 1 {
				return nil, fail(line, f+2, "index 0 with 1-based indices")
			}
			if o.Dim > 0 && idx-max(o.IndexBase, 0) >= o.Dim {
				return nil, fail(line, f+2, "index %d beyond the %d features set by the options", idx, o.Dim)
			}
			v, err := strconv.ParseFloat(string(field[colon+1:]), 32)
			if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, fail(line, f+2, "value %q: want a finite number", field[colon+1:])
			}
			prev = idx
			minIndex = min(minIndex, idx)
			maxIndex = max(maxIndex, idx)
			index = append(index, idx)
			value = append(value, float32(v))
		}
		rowEnd = append(rowEnd, len(index))
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, fail(line+1, 0, "line longer than %d bytes", maxLine)
		}
		return nil, fmt.Errorf("%s:%d: %w", name, line+1, err)
	}
	base := o.IndexBase
	if base < 0 {
		base = 1
		if minIndex == 0 {
			base = 0
		}
	}
	dim := o.Dim
	if dim == 0 {
		dim = maxIndex + 1 - base
	}
	if dim < 1 {
		return nil, fail(0, 0, "no features in %d samples: want at least one index:value", len(labels))
	}
	if int64(len(labels))*int64(dim) > maxValues {
		return nil, fail(0, 0, "%d samples × %d features = %d values, more than the dense limit of %d: is this sparse data?",
			len(labels), dim, int64(len(labels))*int64(dim), maxValues)
	}
	features := make([]float32, len(labels)*dim)
	start := 0
	for i, end := range rowEnd {
		row := features[i*dim : (i+1)*dim]
		for k := start; k < end; k++ {
			row[index[k]-base] = value[k]
		}
		start = end
	}
	k, names := classes.finish(labels)
	return &Dataset{Features: features, Labels: labels, Dim: dim, Classes: k, ClassNames: names, Source: name}, nil
}
