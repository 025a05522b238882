package graph

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"sync"

	"colo/internal/membudget"
)

// chunkBytes is how much text the libsvm and SNAP readers hand a
// goroutine at a time (cut after the last whole line). The chunks' buffers
// are reused once parsed, so the text in memory is a few chunks, not the
// file: 1 MB keeps both cores busy and the buffers small.
const chunkBytes = 1 << 20

// maxChunkWorkers caps the goroutines of parseChunks: one goroutine reads
// and cuts the input, so more parsers than this gain little, and each
// holds chunks in flight.
const maxChunkWorkers = 8

// scanLibSVMParallel reads libsvm text from r as ReadLibSVM does, on
// workers goroutines with chunks of about chunk bytes (parseChunks), and
// returns the Builder of its samples, in order, and whether an index 0
// occurred. opt.SampleCheck, whose counts run across the file, keeps it on
// one goroutine. When size, the length of the text, is known (not
// negative), the Builders of the chunks keep their rows in one arena
// sized by it (arenaFor), in slots of as many edges as their chunk has
// colons.
func scanLibSVMParallel(r io.Reader, name string, opt LoadOptions, workers, chunk int, size int64) (*Builder, bool, error) {
	type part struct {
		b       *Builder
		sawZero bool
	}
	opt = opt.resolved()
	if opt.SampleCheck != nil {
		workers = 1
	}
	var ar *arena
	if workers > 1 {
		ar = arenaFor(size, opt.Memory)
	}
	colons := func(text []byte) int { return bytes.Count(text, []byte{':'}) }
	all, err := parseChunks(r, name, opt.maxLine(), workers, chunk, colons, func(lr *lineReader, c textChunk) (*part, error) {
		p := &part{b: NewBuilder(Meta{Format: string(FormatLibSVM), Source: name})}
		p.b.SetHasLabels()
		switch {
		case c.text == nil:
		case ar != nil && c.before+c.units <= len(ar.ids):
			// Every edge has a colon: room for them all.
			p.b.useSlot(ar, c.before, c.before+c.units)
		default:
			p.b.first = min(max(c.units, firstChunkLen), chunkLen)
		}
		var err error
		p.sawZero, err = scanLibSVMLines(lr, name, opt, p.b.NumSamples, func(label float64, ids []uint64, vals []float32) error {
			if err := p.b.AddSample(label, ids, vals); err != nil {
				return err
			}
			return p.b.overBudget(name, opt.Memory)
		})
		p.b.trim()
		return p, err
	}, func(all, p *part) error {
		all.b.join(p.b)
		all.sawZero = all.sawZero || p.sawZero
		return all.b.overBudget(name, opt.Memory)
	})
	if err != nil {
		return nil, false, err
	}
	return all.b, all.sawZero, nil
}

// maxArenaBytes bounds the arena of arenaFor, whatever the budget.
const maxArenaBytes = 8 << 30

// arenaFor returns an arena for the edges of libsvm text of size bytes, or
// nil when size is unknown (negative) or the arena would take more than a
// quarter of the budget limit (resolved; the machine's memory when there
// is none) or maxArenaBytes. An index:value pair takes 4 bytes of the text
// at least (a separator, a digit, the colon and a digit), so the arena
// holds size/4 edges, 8 bytes each; only those written are touched.
func arenaFor(size, limit int64) *arena {
	if limit == math.MaxInt64 {
		limit = membudget.Default()
	}
	if size < 0 || 2*size > limit/4 || 2*size > maxArenaBytes {
		return nil
	}
	return newArena(int(size/4 + 1))
}

// parseChunks reads the lines of r with parse and returns the result of
// the first chunk with the results of the others joined into it, in input
// order (join(into, next)). One goroutine reads r, a decompressor included, and cuts
// what it reads into chunks of whole lines of up to about chunk bytes,
// counting their lines (lineCutter) and, when measure is not nil,
// measuring them in input order; workers goroutines (at most
// maxChunkWorkers) parse the chunks, each through a lineReader of its own;
// parse also gets the chunk's text and measures (textChunk) to size its
// storage. So text is parsed on several cores while it is read,
// and the results are those of parse over the whole input at once,
// provided parse's results join into its result on the whole. Errors too:
// parseChunks returns the first error in input order, a *ParseError's line
// counted from the start of the input, and a read error as a lineReader
// returns it, at the line it was reading. At most about 3·workers chunks
// are in memory at once.
//
// With workers < 2 or input that fits one chunk, parse runs once, on the
// calling goroutine.
//
// A line longer than maxLine bytes is a *ParseError (longLineError). An
// error of join (the memory budget's, see Builder.overBudget) ends the
// read like a parse error; a *membudget.Error without a line gets the
// last line of the chunk just joined.
func parseChunks[T any](r io.Reader, name string, maxLine, workers, chunk int, measure func([]byte) int, parse func(lr *lineReader, c textChunk) (T, error), join func(into, next T) error) (T, error) {
	workers = min(workers, maxChunkWorkers)
	if workers < 2 {
		return parse(newLineReader(r, name, maxLine), textChunk{})
	}
	// The first chunk tells whether the input is worth the goroutines.
	cut := &lineCutter{r: r, size: chunk, max: maxLine}
	first, lines, readErr := cut.next(nil)
	units := 0
	if measure != nil {
		units = measure(first)
	}
	if readErr == io.EOF {
		return parse(newTextLineReader(first, name, maxLine), textChunk{first, lines, 0, units})
	}
	if long, ok := readErr.(*lineTooLong); ok && len(first) == 0 {
		var zero T
		return zero, longLineError(name, lines+1, long.max)
	}

	type result struct {
		p   T
		end int // the last line of the chunk
		err error
	}
	type job struct {
		text   textChunk
		before int // lines before the text
		lines  int // lines in the text
		res    chan result
	}
	var (
		jobs  = make(chan job, workers)
		order = make(chan chan result, 2*workers)
		free  = make(chan []byte, workers+1)
		done  = make(chan struct{})
		wg    sync.WaitGroup
	)
	for range workers {
		wg.Go(func() {
			for j := range jobs {
				select {
				case <-done:
					j.res <- result{}
					continue
				default:
				}
				p, err := parse(newTextLineReader(j.text.text, name, maxLine), j.text)
				if pe, ok := errors.AsType[*ParseError](err); ok && pe.Line > 0 {
					pe.Line += j.before
				}
				if me, ok := errors.AsType[*membudget.Error](err); ok && me.Line > 0 {
					me.Line += j.before
				}
				end := j.before + j.lines
				select {
				case free <- j.text.text[:0]:
				default:
				}
				j.res <- result{p, end, err}
			}
		})
	}
	wg.Go(func() {
		defer close(order)
		defer close(jobs)
		data, before, measured := first, 0, 0
		for {
			res := make(chan result, 1)
			select {
			case order <- res:
			case <-done:
				return
			}
			if readErr != nil && readErr != io.EOF && len(data) == 0 {
				// What a lineReader says at the line it was reading.
				if long, ok := readErr.(*lineTooLong); ok {
					res <- result{err: longLineError(name, before+lines+1, long.max)}
				} else {
					res <- result{err: fmt.Errorf("%s:%d: read: %w", name, before+lines+1, readErr)}
				}
				return
			}
			jobs <- job{text: textChunk{data, lines, measured, units}, before: before, lines: lines, res: res}
			before += lines
			measured += units
			switch {
			case readErr == io.EOF:
				return
			case readErr != nil:
				data, lines = nil, 0 // the error, in order, after the lines read
			default:
				select {
				case <-done: // an error: read no further
					return
				default:
				}
				var buf []byte
				select {
				case buf = <-free:
				default:
				}
				data, lines, readErr = cut.next(buf)
				if measure != nil {
					units = measure(data)
				}
			}
		}
	})
	var (
		all  T
		have bool
		err  error
	)
	for res := range order {
		r := <-res
		switch {
		case err != nil:
		case r.err != nil:
			err = r.err
			close(done)
		case !have:
			all, have = r.p, true
		default:
			if e := join(all, r.p); e != nil {
				if me, ok := errors.AsType[*membudget.Error](e); ok && me.Line == 0 {
					me.Line = r.end
				}
				err = e
				close(done)
			}
		}
	}
	wg.Wait()
	if err != nil {
		var zero T
		return zero, err
	}
	return all, nil
}

// textChunk is a chunk of text that parseChunks hands its parse function
// beside a lineReader of its lines: the text (nil when parse reads the
// input as a stream), its newlines, and when parseChunks measures the
// chunks, the sum of the measures of the chunks before it (before) and
// its own (units).
type textChunk struct {
	text          []byte
	newlines      int
	before, units int
}

// lineCutter reads chunks of whole lines from r.
type lineCutter struct {
	r     io.Reader
	size  int
	max   int    // the longest line it reads on for (bytes, its ending included)
	carry []byte // the start of a line read with the previous chunk
	err   error  // the read error to return once carry is used
}

// next returns the next chunk, in buf's storage when it is large enough:
// the whole lines among the next size bytes (more when one line is
// longer), ending with a newline, or the input's last bytes; and the
// number of newlines in it. At the end
// of the input the error is io.EOF, with the last chunk (which may be
// empty). A read error is returned with the whole lines read before it,
// the part of a line after them dropped, as a line reader would not
// return it.
func (c *lineCutter) next(buf []byte) ([]byte, int, error) {
	if c.err != nil {
		return nil, 0, c.err
	}
	if cap(buf) < c.size+len(c.carry) {
		buf = make([]byte, 0, c.size+len(c.carry))
	}
	buf = append(buf[:0], c.carry...)
	c.carry = c.carry[:0]
	empty := 0
	for {
		for len(buf) < cap(buf) {
			n, err := c.r.Read(buf[len(buf):cap(buf)])
			buf = buf[:len(buf)+n]
			if n == 0 && err == nil {
				// As bufio does: a reader that makes no progress fails.
				if empty++; empty >= 100 {
					err = io.ErrNoProgress
				}
			}
			if err == io.EOF {
				return buf, bytes.Count(buf, []byte{'\n'}), io.EOF
			}
			if err != nil {
				i := bytes.LastIndexByte(buf, '\n') + 1
				c.err = err
				return buf[:i], bytes.Count(buf[:i], []byte{'\n'}), err
			}
		}
		if i := bytes.LastIndexByte(buf, '\n'); i >= 0 {
			c.carry = append(c.carry, buf[i+1:]...)
			buf = buf[:i+1]
			return buf, bytes.Count(buf, []byte{'\n'}), nil
		}
		// A line longer than the chunk: read on, up to the longest line.
		if len(buf) > c.max {
			c.err = &lineTooLong{c.max}
			return buf[:0], 0, c.err
		}
		buf = append(buf, make([]byte, cap(buf))...)[:len(buf)]
	}
}

// lineTooLong is the read error of a lineCutter that met a line longer
// than max bytes; parseChunks reports it as longLineError at its line.
type lineTooLong struct{ max int }

func (e *lineTooLong) Error() string { return fmt.Sprintf("line longer than %d bytes", e.max) }

// overBudget returns a *membudget.Error (without a line) when the graph of
// b would need more than the budget limit (resolved) at its peak
// (bytesPerEdge, bytesPerSample).
func (b *Builder) overBudget(name string, limit int64) error {
	samples := int64(len(b.off) - 1)
	return overBudget(name, 0, limit, b.n, samples, b.n*bytesPerEdge+samples*bytesPerSample)
}

// trim copies the last storage chunk to a slice of its length when a
// quarter of it or more is empty, as the last of a Builder's doubling
// chunks often is: the Builders of many chunks of text, joined, would
// otherwise hold up to twice their edges.
func (b *Builder) trim() {
	c := len(b.ids) - 1
	if c < 0 || cap(b.ids[c])-len(b.ids[c]) < len(b.ids[c])/3 {
		return
	}
	b.ids[c] = append([]uint64(nil), b.ids[c]...)
	if b.vals[c] != nil {
		b.vals[c] = append([]float32(nil), b.vals[c]...)
	}
}

// join appends the samples of o, a Builder of the same kind, after b's,
// taking o's storage: o must not be used after. The slots of both stay
// in their arena when o's come after b's in the same arena; otherwise
// their rows move to storage chunks (widen).
func (b *Builder) join(o *Builder) {
	if b.narrow != nil || o.narrow != nil {
		if last := len(b.narrow) - 1; last >= 0 && o.narrow != nil && b.arena == o.arena &&
			o.narrow[0].lo >= b.narrow[last].lo+cap(b.narrow[last].ids) {
			b.narrow = append(b.narrow, o.narrow...)
		} else {
			if b.narrow != nil {
				b.widen()
			}
			if o.narrow != nil {
				o.widen()
			}
		}
	}
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
