package graph

import (
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
	// before the rest is read and anything is sized by it.
	SampleCheck func(samples int, values int64, maxIndex uint64) error
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
