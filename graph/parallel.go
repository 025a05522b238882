package graph

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"sync"

	"colo/internal/decompress"
)

// minParallelBytes is the least file size Load parses on more than one
// goroutine, and each goroutine's least share of it: below this the
// goroutines cost more than they save.
const minParallelBytes = 8 << 20

// loadParallel is Load for a large uncompressed libsvm file on several
// cores: it cuts the file into ranges of whole lines (as SplitLines), parses
// each into a Builder of its own on a goroutine and joins the builders in
// file order, so the graph is the one ReadLibSVM builds, bit for bit. An
// error is the one ReadLibSVM would return: that of the first range, in
// file order, that has one, its line counted from the start of the file.
//
// ok is false, and f untouched past its start, when the file is not such a
// file (compressed, another format, small, opt.SampleCheck set: its counts
// run across the file) or only one core is available; Load then reads it
// as a stream.
func loadParallel(f *os.File, path string, opt LoadOptions) (g *Graph, ok bool, err error) {
	return loadRanges(f, path, opt, runtime.GOMAXPROCS(0), minParallelBytes)
}

// loadRanges is loadParallel on at most workers goroutines, each with at
// least share bytes of the file.
func loadRanges(f *os.File, path string, opt LoadOptions, workers int, share int64) (g *Graph, ok bool, err error) {
	if workers < 2 || opt.SampleCheck != nil || opt.Validate() != nil {
		return nil, false, nil
	}
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() || st.Size() < 2*share {
		return nil, false, nil
	}
	size := st.Size()
	name := path // as Read names it
	head := make([]byte, headSize)
	nh, err := f.ReadAt(head, 0)
	if err != nil && err != io.EOF {
		return nil, false, nil
	}
	head = head[:nh]
	if decompress.Compressed(head) {
		return nil, false, nil
	}
	format := opt.Format
	if format == FormatAuto {
		if format, err = DetectFormat(head); err != nil {
			return nil, false, nil
		}
	}
	if format != FormatLibSVM {
		return nil, false, nil
	}
	if opt.IndexBase < -1 || opt.IndexBase > 1 {
		return nil, true, fmt.Errorf("%s: index base %d: want 0, 1 or -1 (detect)", name, opt.IndexBase)
	}
	workers = int(min(int64(workers), size/share))

	bounds := make([]int64, workers+1)
	bounds[workers] = size
	for q := 1; q < workers; q++ {
		if bounds[q], err = lineStartAfter(f, name, int64(q)*size/int64(workers), size); err != nil {
			return nil, true, err
		}
		bounds[q] = max(bounds[q], bounds[q-1])
	}
	parts := make([]*Builder, workers)
	zero := make([]bool, workers)
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for q := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b := NewBuilder(Meta{Format: string(FormatLibSVM), Source: name})
			sec := io.NewSectionReader(f, bounds[q], bounds[q+1]-bounds[q])
			lr := &lineReader{br: bufio.NewReaderSize(sec, bufSize), name: name}
			zero[q], errs[q] = scanLibSVMLines(lr, name, opt, b.NumSamples, b.AddSample)
			if errs[q] == nil {
				if n, _ := sec.Seek(0, io.SeekCurrent); n != bounds[q+1]-bounds[q] {
					errs[q] = fmt.Errorf("%s: read %d bytes of [%d, %d): the file changed while it was read", name, n, bounds[q], bounds[q+1])
				}
			}
			parts[q] = b
		}()
	}
	wg.Wait()
	for q, err := range errs {
		if err == nil {
			continue
		}
		if pe, ok := errors.AsType[*ParseError](err); ok && pe.Line > 0 && q > 0 {
			before, cerr := countLines(f, bounds[q])
			if cerr != nil {
				return nil, true, fmt.Errorf("%w (the line's number counts from byte %d: counting the lines before it: %v)", err, bounds[q], cerr)
			}
			pe.Line += before
		}
		return nil, true, err
	}
	b := parts[0]
	sawZero := zero[0]
	for q := 1; q < workers; q++ {
		b.join(parts[q])
		parts[q] = nil
		sawZero = sawZero || zero[q]
	}
	b.SetHasLabels()
	if b.NumSamples() == 0 {
		return nil, true, emptyError(name)
	}
	if g, err = b.Build(); err != nil {
		return nil, true, fmt.Errorf("%s: %w", name, err)
	}
	setIndexBase(g, opt, sawZero)
	return g, true, nil
}

// join appends the samples of o, a Builder of the same kind, after b's,
// taking o's storage: o must not be used after.
func (b *Builder) join(o *Builder) {
	for i := 1; i < len(o.off); i++ {
		b.off = append(b.off, b.n+o.off[i])
	}
	b.ids = append(b.ids, o.ids...)
	b.vals = append(b.vals, o.vals...)
	b.n += o.n
	b.labels = append(b.labels, o.labels...)
	b.hasLabels = b.hasLabels || o.hasLabels
	b.sampleIDs = append(b.sampleIDs, o.sampleIDs...)
	b.withIDs = b.withIDs || o.withIDs
	*o = Builder{}
}
