package dataset

import (
	"fmt"
	"io"
	"strconv"

	"colo/graph"
	"colo/internal/membudget"
)

// DefaultMaxValues bounds n·d for text input: 2^29 float32 values (2 GiB).
const DefaultMaxValues = 1 << 29

// The dense layout of libsvm text with a width taken from its largest
// index is bounded relative to the file: n·d may be at most
// max(MinDense, DenseFactor × the index:value pairs read), at every line.
// A file of 28 bytes with the index 2^28−1 would need 1 GiB: it is
// refused on that line. Data sparser than 1/DenseFactor belongs in
// package graph; a width set in the options (LibSVMOptions.Dim) is
// bounded by MaxValues only.
const (
	MinDense    = 1 << 24 // 64 MiB of float32
	DenseFactor = 64
)

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
	// Memory is the memory budget in bytes (package
	// colo/internal/membudget; 0 for the machine's default): the sparse
	// graph read first (graph.LoadOptions.Memory) and the dense matrix
	// (4 bytes a value) must each fit it, and the dense matrix is refused
	// at the line where the samples and the largest index so far pass it.
	Memory int64
	// CheckDim, when not nil, says whether the model can take samples of
	// dim features; it is asked at the line where the largest index
	// grows, so a refused width is refused there.
	CheckDim func(dim int) error `json:"-"`
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

// ReadLibSVM reads libsvm text with one class label per line:
//
//	label index:value index:value ... [# comment]
//
// through the sparse loader of package graph (so both accept exactly the
// same text: "qid:" fields skipped, rows in any index order, duplicates
// rejected) and lays it out densely; absent features are 0. Labels are
// class names: numbers, with "+1" and "1" the same class. name is used in
// errors.
func ReadLibSVM(r io.Reader, name string, o LibSVMOptions) (*Dataset, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	maxValues := o.MaxValues
	if maxValues == 0 {
		maxValues = DefaultMaxValues
	}
	limit := membudget.Resolve(o.Memory)
	lopt := graph.DefaultLoadOptions()
	lopt.Format, lopt.IndexBase, lopt.Memory = graph.FormatLibSVM, o.IndexBase, limit
	if o.Dim != 0 && o.CheckDim != nil {
		if err := o.CheckDim(o.Dim); err != nil {
			return nil, fmt.Errorf("%s: %d features: %w", name, o.Dim, err)
		}
	}
	if o.Dim == 0 {
		checked := uint64(0) // the largest index CheckDim took
		lopt.SampleCheck = func(samples int, values int64, maxIndex uint64) error {
			// Whatever the index base, maxIndex+1 features at most.
			if maxIndex > uint64(maxValues) {
				return fmt.Errorf("feature index %d: more features than the dense limit of %d values", maxIndex, maxValues)
			}
			if o.CheckDim != nil && maxIndex > checked {
				dim := int(maxIndex) + 1 // at most, whatever the index base
				if o.IndexBase == 1 {
					dim--
				}
				if err := o.CheckDim(dim); err != nil {
					return fmt.Errorf("feature index %d: %w", maxIndex, err)
				}
				checked = maxIndex
			}
			dense := int64(samples) * int64(maxIndex+1)
			if need := 4 * dense; need > limit {
				return &membudget.Error{Limit: limit, Need: need,
					What: fmt.Sprintf("%d samples × %d features (the largest index so far) as float32", samples, maxIndex+1)}
			}
			if dense > maxValues {
				return fmt.Errorf("feature index %d: %d samples × %d features = %d dense values, more than the dense limit of %d",
					maxIndex, samples, maxIndex+1, dense, maxValues)
			}
			if limit := max(MinDense, DenseFactor*values); dense > limit {
				return fmt.Errorf("feature index %d: %d samples × %d features = %d dense values for %d index:value pairs, more than %d, the larger of %d and %d× the pairs: is this sparse data?",
					maxIndex, samples, maxIndex+1, dense, values, limit, MinDense, DenseFactor)
			}
			return nil
		}
	}
	g, err := graph.ReadLibSVM(r, name, lopt)
	if err != nil {
		return nil, err
	}
	n, base := g.NumSamples(), uint64(g.Meta().IndexBase)
	if g.NumParams() == 0 {
		return nil, &ParseError{File: name, Msg: fmt.Sprintf("no features in %d samples: want at least one index:value", n)}
	}
	maxID := g.ParamID(g.NumParams() - 1)
	dim := o.Dim
	if dim == 0 {
		dim = int(maxID - base + 1)
	} else if maxID-base >= uint64(dim) {
		return nil, &ParseError{File: name, Msg: fmt.Sprintf("index %d beyond the %d features set by the options", maxID, dim)}
	}
	if int64(n)*int64(dim) > maxValues {
		return nil, &ParseError{File: name, Msg: fmt.Sprintf("%d samples × %d features = %d values, more than the dense limit of %d: is this sparse data?",
			n, dim, int64(n)*int64(dim), maxValues)}
	}
	if err := membudget.Check(limit, name, 0, fmt.Sprintf("%d samples × %d features as float32", n, dim), 4*int64(n)*int64(dim)); err != nil {
		return nil, err
	}
	features := make([]float32, n*dim)
	labels := make([]int, n)
	classes := newClassMap()
	for u := 0; u < n; u++ {
		denseRow(g, u, base, features[u*dim:(u+1)*dim])
		labels[u] = classes.add(strconv.FormatFloat(g.Label(u), 'g', -1, 64))
	}
	k, names := classes.finish(labels)
	return &Dataset{Features: features, Labels: labels, Dim: dim, Classes: k, ClassNames: names, Source: name, Format: FormatLibSVM}, nil
}
