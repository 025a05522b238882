package graph

import (
	"colo/internal/decompress"
	"colo/internal/textio"
	"encoding/binary"
	"strings"

	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
)

// bufSize is the size of the read buffers of the loaders. Lines longer than
// this are still read, through a slower path.
const bufSize = 1 << 20

// headSize is how much decompressed content Read looks at to detect the
// format.
const headSize = 64 << 10

// errNoData is DetectFormat's error when the head holds no data line.
var errNoData = errors.New("no data line (only blank and comment lines)")

// DetectFormat decides the format of a dataset from the first few KB of its
// decompressed content. Blank lines and comment lines (starting with '#' or
// '%', such as the '#' header block of SNAP files) are skipped; the first
// data line decides:
//
//   - libsvm: a number followed by idx:value tokens, or a number alone (a
//     sample without features);
//   - SNAP: two non-negative integers separated by tabs or spaces (reported
//     as FormatSNAP, the directed reading);
//   - Criteo: at least 14 tab-separated fields, the first 0 or 1.
//
// A first data line cut off at the end of head is judged on its complete
// tokens. A Parquet file (its magic bytes) is an error that says to read
// it as a table. Any other content is an error that quotes the line.
func DetectFormat(head []byte) (Format, error) {
	if bytes.HasPrefix(head, []byte("PAR1")) {
		return FormatAuto, errors.New("a Parquet table: read it through feature columns (--spec, package features)")
	}
	rest := head
	for n := 1; len(rest) > 0; n++ {
		line := rest
		complete := false
		if i := bytes.IndexByte(rest, '\n'); i >= 0 {
			line, rest, complete = rest[:i], rest[i+1:], true
		} else {
			rest = nil
		}
		line = bytes.TrimRight(line, "\r")
		t := trimSpace(line)
		if skipLine(t) {
			continue
		}
		switch {
		case isCriteoLine(line):
			return FormatCriteo, nil
		case isSNAPLine(t):
			return FormatSNAP, nil
		case isLibSVMLine(t, complete):
			return FormatLibSVM, nil
		}
		return FormatAuto, fmt.Errorf("first data line %d: %s is not libsvm (label idx:value ...), "+
			"a SNAP edge list (u v) or Criteo TSV (a 0/1 label and at least 13 more tab-separated fields); pass --format",
			n, quote(line))
	}
	return FormatAuto, errNoData
}

// isCriteoLine reports whether line has at least 14 tab-separated fields
// and the first is 0 or 1.
func isCriteoLine(line []byte) bool {
	if bytes.Count(line, []byte{'\t'}) < 13 {
		return false
	}
	f := line[:bytes.IndexByte(line, '\t')]
	return len(f) == 1 && (f[0] == '0' || f[0] == '1')
}

// isSNAPLine reports whether the trimmed line t is two non-negative
// integers.
func isSNAPLine(t []byte) bool {
	var tok [3][]byte
	n := splitSpace(t, tok[:])
	if n != 2 {
		return false
	}
	for _, f := range tok[:2] {
		if _, ok := parseUint(f); !ok {
			return false
		}
	}
	return true
}

// isLibSVMLine reports whether the trimmed line t is a number followed by
// idx:value tokens. When the line is not complete its last token, which
// may be cut, is not judged.
func isLibSVMLine(t []byte, complete bool) bool {
	if i := bytes.IndexByte(t, '#'); i >= 0 {
		t = trimSpace(t[:i])
		complete = true
	}
	field := 0
	for len(t) > 0 {
		var tok []byte
		tok, t = nextToken(t)
		field++
		if len(t) == 0 && !complete && field > 1 {
			break
		}
		if field == 1 {
			if _, ok := parseFloat(tok); !ok {
				return false
			}
			continue
		}
		if bytes.HasPrefix(tok, []byte("qid:")) {
			continue
		}
		i := bytes.IndexByte(tok, ':')
		if i < 0 {
			return false
		}
		if _, ok := parseUint(tok[:i]); !ok {
			return false
		}
		if _, ok := parseFloat(tok[i+1:]); !ok {
			return false
		}
	}
	return field > 0
}

// Load reads the dataset in the file at path: it decompresses it (see
// internal/decompress), detects the format when opt.Format is FormatAuto (see
// DetectFormat) and calls ReadLibSVM, ReadSNAP, ReadCriteo or ReadRatings
// (never detected). Errors name the file, and for malformed content the
// line and field (*ParseError).
func Load(path string, opt LoadOptions) (*Graph, error) {
	f, err := textio.Open(path)
	if err != nil {
		return nil, fmt.Errorf("load: %w", err)
	}
	defer f.Close()
	return read(f, path, opt, plainSize(f))
}

// plainSize returns the size of f when it is a regular file whose content
// is not compressed, the length of the text a loader reads from it, and
// -1 otherwise (a pipe, a device, a compressed file).
func plainSize(f *os.File) int64 {
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		return -1
	}
	var head [8]byte
	n, _ := f.ReadAt(head[:], 0)
	if decompress.Compressed(head[:n]) {
		return -1
	}
	return st.Size()
}

// Read is Load for a stream; name is the file name used in errors and in
// the graph's Meta.Source.
func Read(r io.Reader, name string, opt LoadOptions) (*Graph, error) {
	return read(r, name, opt, -1)
}

// read is Read of content of size bytes when that is not negative: a hint
// that the libsvm reader sizes its storage by (scanLibSVMParallel).
func read(r io.Reader, name string, opt LoadOptions, size int64) (*Graph, error) {
	opt = opt.resolved()
	dr, format, closeFn, err := decode(r, name, opt)
	if err != nil {
		return nil, err
	}
	defer closeFn()
	switch format {
	case FormatLibSVM:
		return readLibSVM(dr, name, opt, runtime.GOMAXPROCS(0), chunkBytes, size)
	case FormatSNAP:
		return ReadSNAP(dr, name, false, opt)
	case FormatSNAPUndirected:
		return ReadSNAP(dr, name, true, opt)
	case FormatRatings:
		return readRatings(dr, name, opt)
	default:
		return ReadCriteo(dr, name, opt)
	}
}

// decode returns the decompressed content of r and its format: opt.Format,
// or the detected one when that is FormatAuto (see DetectFormat). The
// caller calls closeFn when done with the content.
func decode(r io.Reader, name string, opt LoadOptions) (_ io.Reader, _ Format, _ func(), err error) {
	if err := opt.Validate(); err != nil {
		return nil, "", nil, fmt.Errorf("%s: %w", name, err)
	}
	dr, err := decompress.NewReaderBudget(r, opt.Memory)
	if err != nil {
		return nil, "", nil, fmt.Errorf("%s: %w", name, err)
	}
	closeFn := func() {}
	if c, ok := dr.(io.Closer); ok {
		closeFn = func() { c.Close() }
	}
	defer func() {
		if err != nil {
			closeFn()
		}
	}()
	dr = skipBOM(dr)
	format := opt.Format
	if format == FormatAuto {
		br := bufio.NewReaderSize(dr, bufSize)
		dr = br
		head, readErr := br.Peek(headSize)
		complete := readErr == io.EOF
		if readErr != nil && readErr != io.EOF {
			// The decompressor failed early: judge the format on what
			// was read, and let the reader report the failure at the
			// line where it happened.
			dr = io.MultiReader(bytes.NewReader(bytes.Clone(head)), errReader{readErr})
		}
		if err := idxHint(head, name); err != nil {
			return nil, "", nil, err
		}
		format, err = DetectFormat(head)
		switch {
		case err != nil && readErr != nil && readErr != io.EOF:
			return nil, "", nil, fmt.Errorf("%s:%d: read: %w", name, bytes.Count(head, []byte{'\n'})+1, readErr)
		case err == errNoData && complete:
			return nil, "", nil, emptyError(name)
		case err == errNoData:
			return nil, "", nil, fmt.Errorf("cannot detect the format of %s: no data line in the first %d KB; pass --format", name, headSize>>10)
		case err != nil:
			return nil, "", nil, fmt.Errorf("cannot detect the format of %s: %w", name, err)
		}
	}
	return dr, format, closeFn, nil
}

// bom is the UTF-8 byte order mark, which an editor or a spreadsheet
// may put at the start of a text file.
const bom = "\ufeff"

// skipBOM returns r without a leading UTF-8 byte order mark: not data,
// it made the first line's label "\ufeff-1" (no number) and the format
// undetectable.
func skipBOM(r io.Reader) io.Reader {
	br, ok := r.(*bufio.Reader)
	if !ok {
		br = bufio.NewReaderSize(r, bufSize)
	}
	if b, _ := br.Peek(len(bom)); string(b) == bom {
		br.Discard(len(bom))
	}
	return br
}

// idxHint returns the error for an idx file (MNIST's binary format, read
// by colo's dense applications): head starts with its magic number, two
// zero bytes, an element type (0x08, 0x09, 0x0B to 0x0E) and 1 to 4
// dimensions, and its first dimension is not zero. Text never starts
// with two zero bytes, so nothing else is taken for one.
func idxHint(head []byte, name string) error {
	if len(head) < 8 || head[0] != 0 || head[1] != 0 || head[3] < 1 || head[3] > 4 ||
		(head[2] != 0x08 && head[2] != 0x09 && (head[2] < 0x0B || head[2] > 0x0E)) {
		return nil
	}
	nd := int(head[3])
	n := binary.BigEndian.Uint32(head[4:])
	if nd == 1 {
		return fmt.Errorf("%s is an idx label file (%d labels, MNIST's binary format), not sparse text: "+
			"give it to --labels beside its images: colo train IMAGES-idx3-ubyte --app mlp --labels %s", name, n, name)
	}
	shape := fmt.Sprintf("in %d dimensions", nd)
	if len(head) >= 4+4*nd {
		dims := make([]string, nd-1)
		for i := range dims {
			dims[i] = strconv.FormatUint(uint64(binary.BigEndian.Uint32(head[8+4*i:])), 10)
		}
		shape = "of " + strings.Join(dims, "×")
	}
	return fmt.Errorf("%s is an idx image file (%d images %s, MNIST's binary format), not sparse text: "+
		"train it with --app mlp (or cnn) --labels LABELS-idx1-ubyte", name, n, shape)
}

// errReader is a reader that fails with err.
type errReader struct{ err error }

// Read returns the error.
func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// emptyError is the error for an input without samples.
func emptyError(name string) error {
	return &ParseError{File: name, Msg: "empty: no samples"}
}

// lineReader reads lines without allocating per line. A line is valid until
// the next call of next.
type lineReader struct {
	br   *bufio.Reader
	text []byte // the rest of the input in memory, when br is nil
	name string
	line int    // number of the line last returned, from 1
	long []byte // assembles lines longer than the buffer
	max  int    // the longest line (bytes, its ending included) it assembles
	eof  bool
	// before, when set, returns the number of lines of the file before
	// the first line read (a range of the file: StreamRange), for the
	// line numbers of read errors.
	before func() int
}

// newLineReader returns a lineReader of r, reusing r when it is a large
// enough bufio.Reader, that refuses a line longer than max bytes.
func newLineReader(r io.Reader, name string, max int) *lineReader {
	return &lineReader{br: bufio.NewReaderSize(r, bufSize), name: name, max: max}
}

// newTextLineReader returns a lineReader of text in memory, which reads
// its lines where they are, as newLineReader of bytes.NewReader(text)
// returns them, errors included, without copying them into a buffer.
func newTextLineReader(text []byte, name string, max int) *lineReader {
	return &lineReader{text: text, name: name, max: max}
}

// next returns the next line without its line ending ("\n" or "\r\n"). At
// the end of the input it returns io.EOF; a read error is returned wrapped
// with the file name and the number of the line being read.
func (lr *lineReader) next() ([]byte, error) {
	if lr.eof {
		return nil, io.EOF
	}
	if lr.br == nil {
		return lr.nextText()
	}
	line, err := lr.br.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		lr.long = append(lr.long[:0], line...)
		for err == bufio.ErrBufferFull && len(lr.long) <= lr.max {
			line, err = lr.br.ReadSlice('\n')
			lr.long = append(lr.long, line...)
		}
		if len(lr.long) > lr.max {
			line := lr.line + 1
			if lr.before != nil {
				line += lr.before()
			}
			lr.long = nil
			return nil, longLineError(lr.name, line, lr.max)
		}
		line = lr.long
	}
	switch {
	case err == io.EOF:
		lr.eof = true
		if len(line) == 0 {
			return nil, io.EOF
		}
	case err != nil:
		line := lr.line + 1
		if lr.before != nil {
			line += lr.before()
		}
		return nil, fmt.Errorf("%s:%d: read: %w", lr.name, line, err)
	}
	lr.line++
	if n := len(line); n > 0 && line[n-1] == '\n' {
		line = line[:n-1]
	}
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	return line, nil
}

// nextText is next for text in memory. A line longer than the buffer of
// a bufio reader of newLineReader (bufSize, its ending included) and than
// max is refused, as there.
func (lr *lineReader) nextText() ([]byte, error) {
	line := lr.text
	if i := bytes.IndexByte(line, '\n'); i >= 0 {
		line = line[:i+1]
	} else {
		lr.eof = true
		if len(line) == 0 {
			return nil, io.EOF
		}
	}
	if len(line) > bufSize && len(line) > lr.max {
		n := lr.line + 1
		if lr.before != nil {
			n += lr.before()
		}
		return nil, longLineError(lr.name, n, lr.max)
	}
	lr.text = lr.text[len(line):]
	lr.line++
	if n := len(line); n > 0 && line[n-1] == '\n' {
		line = line[:n-1]
	}
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	return line, nil
}

// isSpace reports whether c separates tokens: space, tab, CR, VT or FF.
func isSpace(c byte) bool {
	const mask = 1<<' ' | 1<<'\t' | 1<<'\r' | 1<<'\v' | 1<<'\f'
	return c <= ' ' && (uint64(1)<<c)&mask != 0
}

// skipLine reports whether a trimmed line of an edge or rating list
// carries no record: blank, or a comment starting with '#' or '%'.
func skipLine(t []byte) bool { return len(t) == 0 || t[0] == '#' || t[0] == '%' }

// trimSpace returns b without leading and trailing separators.
func trimSpace(b []byte) []byte {
	for len(b) > 0 && isSpace(b[0]) {
		b = b[1:]
	}
	for len(b) > 0 && isSpace(b[len(b)-1]) {
		b = b[:len(b)-1]
	}
	return b
}

// nextToken splits the first token off b, which must start with a non-space
// byte, and returns it and the rest with leading separators removed.
func nextToken(b []byte) (tok, rest []byte) {
	i := 0
	for i < len(b) && !isSpace(b[i]) {
		i++
	}
	tok, rest = b[:i], b[i:]
	for len(rest) > 0 && isSpace(rest[0]) {
		rest = rest[1:]
	}
	return tok, rest
}

// splitSpace stores the space-separated tokens of the trimmed line t in dst
// and returns how many there are, which may exceed len(dst).
func splitSpace(t []byte, dst [][]byte) int {
	n := 0
	for len(t) > 0 {
		var tok []byte
		tok, t = nextToken(t)
		if n < len(dst) {
			dst[n] = tok
		}
		n++
	}
	return n
}

// parseUint parses a non-empty string of decimal digits into a uint64.
func parseUint(b []byte) (uint64, bool) {
	if len(b) == 0 {
		return 0, false
	}
	var v uint64
	for _, c := range b {
		d := uint64(c - '0')
		if d > 9 {
			return 0, false
		}
		if v > (1<<64-1-d)/10 {
			return 0, false
		}
		v = v*10 + d
	}
	return v, true
}

// quote quotes b for an error message, cutting it when long.
func quote(b []byte) string {
	const maxQuote = 80
	if len(b) > maxQuote {
		return strconv.Quote(string(b[:maxQuote])) + "..."
	}
	return strconv.Quote(string(b))
}
