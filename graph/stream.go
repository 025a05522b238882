package graph

import (
	"fmt"
	"slices"

	"colo/internal/textio"
)

// Visitor receives the records of a dataset that Stream reads, in file
// order, without a Graph being built. Slices passed to it are valid until
// the next call.
type Visitor struct {
	// Sample is called for each sample of libsvm input with its
	// parameter ids (indices as in the file) sorted and distinct.
	Sample func(ids []uint64) error
	// Edge is called for each edge (u, v) of a SNAP edge list that
	// ReadSNAP would keep, (v, u) too when the list is read undirected;
	// an edge listed twice is passed twice.
	Edge func(u, v uint64) error
	// Node is called for the node of a self-loop that
	// LoadOptions.DropSelfLoops drops: a sample without that edge.
	Node func(u uint64) error
}

// Stream reads the dataset in the file at path as Load does (compressed or
// not, the format detected when opt.Format is FormatAuto) and passes its
// records to vis instead of building a graph, holding only a line at a
// time. It reads libsvm and SNAP input; other formats are an error. A
// malformed line is the *ParseError that Load returns for it, and so is
// input without samples. It returns the format read.
//
// The graph Load would build from the file numbers samples and parameters
// as follows, which a caller of Stream reproduces: libsvm samples are the
// lines in file order, SNAP samples the distinct node ids (of either end of
// an edge, or of a dropped self-loop) in increasing order; parameters are
// the distinct parameter ids (SNAP: edge targets) in increasing order; a
// repeated SNAP edge counts once. An error of vis ends the read and is
// returned as it is.
func Stream(path string, opt LoadOptions, vis Visitor) (Format, error) {
	f, err := textio.Open(path)
	if err != nil {
		return "", fmt.Errorf("load: %w", err)
	}
	defer f.Close()
	name := opt.nameOf(path)
	r, format, closeFn, err := decode(f, name, opt)
	if err != nil {
		return "", err
	}
	defer closeFn()
	records, err := streamLines(newLineReader(r, name, opt.maxLine()), name, format, opt, vis)
	if err == nil && records == 0 {
		err = emptyError(name)
	}
	return format, err
}

// streamLines passes the records of the lines of lr, in format, to vis as
// Stream does, and returns how many records it read: libsvm samples, SNAP
// edges and dropped self-loops. Input without records is not an error
// here.
func streamLines(lr *lineReader, path string, format Format, opt LoadOptions, vis Visitor) (int, error) {
	switch format {
	case FormatLibSVM:
		if opt.IndexBase < -1 || opt.IndexBase > 1 {
			return 0, fmt.Errorf("%s: index base %d: want 0, 1 or -1 (detect)", path, opt.IndexBase)
		}
		n := 0
		var sorted []uint64
		var visitErr error
		_, err := scanLibSVMLines(lr, path, opt, func() int { return n }, func(_ float64, ids []uint64, _ []float32) error {
			sorted = append(sorted[:0], ids...)
			slices.Sort(sorted)
			for i := 1; i < len(sorted); i++ {
				if sorted[i] == sorted[i-1] {
					return &DuplicateError{ID: sorted[i]}
				}
			}
			n++
			if vis.Sample == nil {
				return nil
			}
			// The visitor's error ends the read as it is, not as a
			// malformed line.
			visitErr = vis.Sample(sorted)
			return visitErr
		})
		if visitErr != nil {
			return n, visitErr
		}
		return n, err
	case FormatSNAP, FormatSNAPUndirected:
		var visitErr error
		nodes := 0
		add := func(u, v uint64) error {
			nodes++
			if visitErr == nil && vis.Edge != nil {
				visitErr = vis.Edge(u, v)
			}
			return nil
		}
		lone := func(u uint64) {
			nodes++
			if visitErr == nil && vis.Node != nil {
				visitErr = vis.Node(u)
			}
		}
		err := scanSNAP(lr, path, format == FormatSNAPUndirected, opt, add, lone)
		if err == nil {
			err = visitErr
		}
		return nodes, err
	}
	return 0, fmt.Errorf("%s: %s input cannot be streamed: only libsvm and SNAP edge lists can (load it whole instead)", path, format)
}
