package dataset

import (
	"colo/internal/textio"
	"strconv"

	"colo/internal/decompress"

	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
)

// Format names an input format.
type Format string

// The formats Load reads.
const (
	// FormatAuto detects the format from the content.
	FormatAuto Format = ""
	// FormatIDX is the idx format of MNIST: images and labels in two files.
	FormatIDX Format = "idx"
	// FormatLibSVM is libsvm text: `label idx:val ...` per sample.
	FormatLibSVM Format = "libsvm"
	// FormatCSV is comma-separated values with one label column.
	FormatCSV Format = "csv"
)

// LoadOptions control Load.
type LoadOptions struct {
	// Format of the data file; FormatAuto detects it from the content.
	Format Format
	// Labels is the idx label file; required for idx data, unused otherwise.
	Labels string
	// CSV configures the CSV reader.
	CSV CSVOptions
	// LibSVM configures the libsvm reader.
	LibSVM LibSVMOptions
	// CheckDim, when not nil, says whether the model the data is for can
	// take samples of dim features: a CSV's first record, an idx file's
	// header and a libsvm file's largest index are checked with it
	// before the rest is read, and a refusal names the file and line.
	CheckDim func(dim int) error `json:"-"`
	// Memory is the memory budget of the loading in bytes (package
	// colo/internal/membudget): 0 (membudget.Auto) for the machine's
	// default, negative (membudget.Off) for none. What a file declares
	// or holds beyond it is refused before it is allocated, naming the
	// file, the line and the figures.
	Memory int64
}

// SetCSV sets the CSV reader's options as a command line or a job file
// spells them: the label column, a number from 0 (negative counts from
// the end), a header name, or "" (or "auto") to find it
// (CSVOptions.LabelAuto); the header, auto, yes or no; the separator,
// one character or "\t" or "tab". Errors name the option.
func (o *LoadOptions) SetCSV(labelCol, header, sep string) error {
	switch n, err := strconv.Atoi(labelCol); {
	case labelCol == "" || labelCol == "auto":
		o.CSV.LabelAuto, o.CSV.LabelName = true, ""
	case err == nil:
		o.CSV.LabelCol, o.CSV.LabelName, o.CSV.LabelAuto = n, "", false
	default:
		o.CSV.LabelName, o.CSV.LabelAuto = labelCol, false
	}
	h, err := ParseHeader(header)
	if err != nil {
		return fmt.Errorf("header: %w", err)
	}
	o.CSV.Header = h
	if sep == `\t` || sep == "tab" {
		sep = "\t"
	}
	r := []rune(sep)
	if len(r) != 1 {
		return fmt.Errorf("sep %q: want one character", sep)
	}
	o.CSV.Comma = r[0]
	return nil
}

// DefaultLoadOptions returns options that detect the format, read the CSV
// label from the first column and detect the libsvm index base.
func DefaultLoadOptions() LoadOptions {
	return LoadOptions{CSV: DefaultCSVOptions(), LibSVM: DefaultLibSVMOptions()}
}

// Validate checks the options and names the offending field.
func (o LoadOptions) Validate() error {
	switch o.Format {
	case FormatAuto, FormatIDX, FormatLibSVM, FormatCSV:
	default:
		return fmt.Errorf("format %q: want idx, libsvm or csv", string(o.Format))
	}
	if err := o.CSV.Validate(); err != nil {
		return fmt.Errorf("csv: %w", err)
	}
	if err := o.LibSVM.Validate(); err != nil {
		return fmt.Errorf("libsvm: %w", err)
	}
	return nil
}

// ParseError is malformed input. It names the file, the line (from 1; 0
// for binary input or the whole file), the field (from 1; 0 for the whole
// line) and what was expected. It is the same type as graph.ParseError.
type ParseError = textio.ParseError

// Load reads a dataset from a file, undoing compression and detecting the
// format when o.Format is FormatAuto. For idx data o.Labels names the label
// file.
func Load(path string, o LoadOptions) (*Dataset, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	f, err := textio.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r, size, err := openSized(f, o.Memory)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	// A UTF-8 byte order mark is not data: the first label "\ufeff-1"
	// was no number, and detected behind it a comment line was a CSV
	// record, a quoted CSV header a bare quote. (No idx file starts with
	// one: its magic number starts with two zero bytes.)
	if b, _ := r.Peek(3); string(b) == "\ufeff" {
		r.Discard(3)
	}
	format := o.Format
	if format == FormatAuto {
		head, _ := r.Peek(4096)
		format = DetectFormat(head)
	}
	if o.Labels != "" && format != FormatIDX {
		return nil, fmt.Errorf("%s: a separate label file is only read for idx data; %s data carries its labels", path, format)
	}
	var d *Dataset
	switch format {
	case FormatIDX:
		if o.Labels == "" {
			return nil, fmt.Errorf("%s: idx data needs a label file", path)
		}
		images, err := readIDX(r, path, o.Memory, size, o.CheckDim)
		if err != nil {
			return nil, err
		}
		labels, err := LoadIDX(o.Labels, o.Memory)
		if err != nil {
			return nil, err
		}
		d, err = FromIDX(images, labels)
		if err != nil {
			return nil, err
		}
	case FormatLibSVM:
		lo := o.LibSVM
		if lo.Memory == 0 {
			lo.Memory = o.Memory
		}
		if lo.CheckDim == nil {
			lo.CheckDim = o.CheckDim
		}
		d, err = ReadLibSVM(r, path, lo)
	case FormatCSV:
		d, err = ReadCSVBounded(r, path, o.CSV, o.Memory, o.CheckDim)
	}
	if err != nil {
		return nil, err
	}
	return d, nil
}

// LoadIDX reads one idx file, undoing compression, within the memory
// budget memory (ReadIDXBounded; 0 for the machine's default).
func LoadIDX(path string, memory int64) (*IDX, error) {
	f, err := textio.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r, size, err := openSized(f, memory)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return ReadIDXBounded(r, path, memory, size)
}

// openSized returns a buffered reader over the decompressed content of f
// and the size of that content when f is not compressed (-1 when it is,
// or when f's size is unknown).
func openSized(f *os.File, memory int64) (*bufio.Reader, int64, error) {
	size := int64(-1)
	if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
		size = st.Size()
		head := make([]byte, 6)
		n, _ := f.ReadAt(head, 0)
		if decompress.Compressed(head[:n]) {
			size = -1
		}
	}
	z, err := decompress.NewReaderBudget(f, memory)
	if err != nil {
		return nil, 0, err
	}
	return bufio.NewReaderSize(z, 1<<16), size, nil
}

// DetectFormat guesses the format from the first bytes of the decompressed
// content: idx when it starts with an idx magic number, libsvm when the
// second field of the first data line has the form index:value, CSV
// otherwise.
func DetectFormat(head []byte) Format {
	if _, _, err := parseIDXMagic(head); err == nil {
		return FormatIDX
	}
	for line := range bytes.Lines(head) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 || line[0] == '#' {
			continue
		}
		fields := bytes.Fields(line)
		if len(fields) >= 2 && bytes.IndexByte(fields[1], ':') > 0 {
			return FormatLibSVM
		}
		if len(fields) == 1 && !bytes.ContainsAny(line, ",;\t") {
			// A lone label: a libsvm sample with no features.
			return FormatLibSVM
		}
		return FormatCSV
	}
	return FormatCSV
}

// openDecompressed returns a buffered reader over the decompressed content
// of r (see colo/internal/decompress).
func openDecompressed(r io.Reader) (*bufio.Reader, error) {
	z, err := decompress.NewReader(r)
	if err != nil {
		return nil, err
	}
	return bufio.NewReaderSize(z, 1<<16), nil
}

// isEOF reports whether err is the end of the content (and not the end of
// a compressed stream that was cut short).
func isEOF(err error) bool {
	var de *decompress.Error
	if errors.As(err, &de) {
		return false
	}
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}
