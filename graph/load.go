package graph

import (
	"colo/internal/membudget"
	"colo/internal/textio"

	"fmt"
)

// Format names an input format.
type Format string

// The input formats colo reads.
const (
	// FormatAuto detects the format from the first lines of the content.
	FormatAuto Format = ""
	// FormatLibSVM is libsvm/svmlight text: `label idx:val ...` per sample.
	FormatLibSVM Format = "libsvm"
	// FormatSNAP is a SNAP directed edge list: `u v` per line, `#` comments.
	// Each node is a sample and a parameter; edge (u,v) joins sample u to
	// parameter v.
	FormatSNAP Format = "snap"
	// FormatSNAPUndirected is a SNAP edge list read in both directions.
	FormatSNAPUndirected Format = "snap-undirected"
	// FormatCriteo is Criteo-style TSV: a 0/1 label, 13 integer and 26
	// categorical columns, hashed into 2^HashBits parameters.
	FormatCriteo Format = "criteo"
	// FormatRatings is a list of matrix entries: `row col value` per line
	// (MovieLens u.data: `user item rating timestamp`), '#' comments.
	// Rows are samples, columns parameters, values the edge values. It is
	// never detected: pass it explicitly.
	FormatRatings Format = "ratings"
)

// DefaultHashBits is the default number of hash bits for Criteo features.
const DefaultHashBits = 20

// LoadOptions control how a dataset is read.
type LoadOptions struct {
	// Format of the content; FormatAuto detects it.
	Format Format
	// IndexBase is 0 or 1 for libsvm indices, or -1 to detect it (0-based
	// when an index 0 occurs). With 1, an index 0 is an error.
	IndexBase int
	// DropSelfLoops drops SNAP edges from a node to itself.
	DropSelfLoops bool
	// HashBits is the number of hash bits for Criteo features (1..32).
	HashBits int
	// SampleCheck, when not nil, is called by the libsvm reader after
	// each sample line with the samples read so far (this one included),
	// the index:value pairs read so far and the largest index so far; an
	// error ends the read with a *ParseError naming that line. A caller
	// that sizes memory by the largest index (package dataset's dense
	// layout) refuses an index out of proportion to the file this way,
	// before the rest is read and anything is sized by it. A
	// *membudget.Error it returns is returned as it is, with the file and
	// the line.
	SampleCheck func(samples int, values int64, maxIndex uint64) error
	// Memory is the memory budget of the loading in bytes (package
	// colo/internal/membudget): 0 (membudget.Auto) for the machine's
	// default, negative (membudget.Off) for none. The in-memory readers
	// refuse a file whose graph would need more, at the line where their
	// estimate of the need (bytesPerEdge, bytesPerSample) passes it, and
	// every reader refuses a line longer than membudget.MaxLine of it.
	Memory int64
	// Name, when set, is what errors call the file instead of its path:
	// the name of the file that the one read stands in for (a copy of
	// its content, decompressed), whose line numbers it has.
	Name string
}

// nameOf returns what errors call the file at path.
func (o LoadOptions) nameOf(path string) string {
	if o.Name != "" {
		return o.Name
	}
	return path
}

// resolved returns o with its memory budget in bytes (membudget.Resolve),
// so that the machine's memory is read once per load.
func (o LoadOptions) resolved() LoadOptions {
	o.Memory = membudget.Resolve(o.Memory)
	return o
}

// maxLine returns the line limit under o's (resolved) budget.
func (o LoadOptions) maxLine() int { return membudget.MaxLine(membudget.Resolve(o.Memory)) }

// The estimate of the memory a loaded graph needs at its peak, the end of
// Build: per edge the raw parameter id and value the Builder holds (12
// bytes) beside the adjacency of both directions and the values of the
// graph (12 bytes); per sample the offsets, the label and the id of the
// Builder and the graph. (Measured: a libsvm file of 53.6 million samples
// and 161 million edges peaks at 5.3 GB resident; the estimate is 5.1 GB.)
// A SNAP edge list holds its edges packed in 8 bytes (16 once an id needs
// more than 32 bits), sorted through a second copy, before they reach the
// Builder: snapBytesPerEdge.
const (
	bytesPerEdge     = 24
	bytesPerSample   = 24
	snapBytesPerEdge = 32
)

// overBudget returns a *membudget.Error when edges and samples need more
// than the budget limit (resolved), naming the file; the line is set by
// the caller that knows it.
func overBudget(name string, line int, limit, edges, samples, need int64) error {
	if need <= limit {
		return nil
	}
	return &membudget.Error{File: name, Line: line, Limit: limit, Need: need,
		What: fmt.Sprintf("the %d edges and %d samples read so far", edges, samples)}
}

// longLineError is the error for a line longer than max bytes.
func longLineError(name string, line, max int) error {
	return &ParseError{File: name, Line: line, Msg: fmt.Sprintf(
		"line longer than %d bytes, the longest line read under the memory budget (%s SIZE sets it)", max, membudget.Flag)}
}

// DefaultLoadOptions returns options that detect everything.
func DefaultLoadOptions() LoadOptions {
	return LoadOptions{IndexBase: -1, HashBits: DefaultHashBits}
}

// Validate checks the options and names the offending field.
func (o LoadOptions) Validate() error {
	switch o.Format {
	case FormatAuto, FormatLibSVM, FormatSNAP, FormatSNAPUndirected, FormatCriteo, FormatRatings:
	default:
		return fmt.Errorf("unknown format %q: want libsvm, snap, snap-undirected, criteo or ratings", string(o.Format))
	}
	if o.IndexBase < -1 || o.IndexBase > 1 {
		return fmt.Errorf("index base %d: want 0, 1 or -1 (detect)", o.IndexBase)
	}
	if o.HashBits < 1 || o.HashBits > 32 {
		return fmt.Errorf("hash bits %d: want 1..32", o.HashBits)
	}
	return nil
}

// ParseError is a malformed input. It names the file, the line (from 1),
// the field (from 1, 0 when the whole line is at fault) and what was
// expected. Both colo's sparse (graph) and dense loaders return it.
type ParseError = textio.ParseError
