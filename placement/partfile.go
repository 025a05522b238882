package placement

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"colo/graph"
	"colo/internal/atomicfile"
	"colo/internal/textio"
)

// The files of a placement directory.
const (
	DataPartFile  = "data.part"
	ParamPartFile = "param.part"
	SummaryFile   = "summary.json"
)

// WriteDataPart writes one line per sample, in sample order, holding its
// machine: the format of hMETIS, PaToH and Zoltan partition files.
func WriteDataPart(w io.Writer, p *Placement) error {
	bw := bufio.NewWriterSize(w, 1<<16)
	var buf []byte
	for _, i := range p.Data {
		buf = strconv.AppendInt(buf[:0], int64(i), 10)
		buf = append(buf, '\n')
		if _, err := bw.Write(buf); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// WriteParamPart writes one line per parameter of g, in increasing order of
// its id in the input: `<id> <machine>`.
func WriteParamPart(w io.Writer, g *graph.Graph, p *Placement) error {
	bw := bufio.NewWriterSize(w, 1<<16)
	var buf []byte
	for v, i := range p.Param {
		buf = strconv.AppendUint(buf[:0], g.ParamID(v), 10)
		buf = append(buf, ' ')
		buf = strconv.AppendInt(buf, int64(i), 10)
		buf = append(buf, '\n')
		if _, err := bw.Write(buf); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// ReadDataPart reads a data part file for n samples: one machine number per
// line, in sample order, in plain decimal digits (no sign, no leading
// zero). k is the number of machines, or 0 to take it as one
// more than the largest machine number in the file. It returns the
// assignment and k.
//
// k is at most n, as a placement has no more machines than samples
// (Validate), so every machine number is below n: a larger one is refused
// on its line before anything is sized by it, and so is a k above n.
func ReadDataPart(r io.Reader, name string, n, k int) ([]int32, int, error) {
	return readDataPart(r, name, n, k, n)
}

// readDataPart is ReadDataPart with maxK, the bound of k and of machine
// numbers: the number of samples of the dataset, which may be more than
// the n lines of the file.
func readDataPart(r io.Reader, name string, n, k, maxK int) ([]int32, int, error) {
	if k > maxK {
		return nil, 0, fmt.Errorf("%s: k = %d: more machines than the %d samples", name, k, maxK)
	}
	data := make([]int32, 0, n)
	maxPart := -1
	err := eachLine(r, name, func(line int, text []byte) error {
		f := bytes.Fields(text)
		if len(f) != 1 {
			return fmt.Errorf("%s:%d: %q: want one machine number per line", name, line, text)
		}
		i, ok := textio.ParseIndex(f[0], math.MaxInt)
		switch {
		case k > 0 && (!ok || i >= k):
			return fmt.Errorf("%s:%d: %q: want a machine number in 0..%d", name, line, f[0], k-1)
		case !ok:
			return fmt.Errorf("%s:%d: %q: want a non-negative machine number", name, line, f[0])
		case i >= maxK:
			return fmt.Errorf("%s:%d: machine %d: want a machine number below the %d samples (k, the number of machines, is at most the number of samples)", name, line, i, maxK)
		}
		if len(data) == n {
			return fmt.Errorf("%s:%d: more lines than the %d samples of the dataset", name, line, n)
		}
		maxPart = max(maxPart, i)
		data = append(data, int32(i))
		return nil
	})
	if err != nil {
		return nil, 0, err
	}
	if len(data) != n {
		return nil, 0, fmt.Errorf("%s: %d lines for %d samples: want one line per sample", name, len(data), n)
	}
	if k == 0 {
		k = maxPart + 1
	}
	return data, k, nil
}

// ReadParamPart reads a parameter part file for the parameters of g on k
// machines. Each line is `<id> <machine>` with the parameter's id as in the
// input, in any order; every parameter of g must appear exactly once. A file
// of one machine number per line is also accepted, read in increasing order
// of parameter id.
func ReadParamPart(r io.Reader, name string, g *graph.Graph, k int) ([]int32, error) {
	m := g.NumParams()
	param := make([]int32, m)
	for i := range param {
		param[i] = Unassigned
	}
	seen, cols := 0, 0
	err := eachLine(r, name, func(line int, text []byte) error {
		f := bytes.Fields(text)
		if cols == 0 {
			cols = len(f)
		}
		if len(f) != cols || (cols != 1 && cols != 2) {
			return fmt.Errorf("%s:%d: %q: want `<parameter id> <machine>` on every line", name, line, text)
		}
		v := seen
		if cols == 2 {
			id, err := strconv.ParseUint(string(f[0]), 10, 64)
			if err != nil {
				return fmt.Errorf("%s:%d: %q: want a parameter id", name, line, f[0])
			}
			var ok bool
			if v, ok = g.ParamIndex(id); !ok {
				return fmt.Errorf("%s:%d: parameter %d does not occur in the dataset", name, line, id)
			}
		} else if v >= m {
			return fmt.Errorf("%s:%d: more lines than the %d parameters of the dataset", name, line, m)
		}
		i, ok := textio.ParseIndex(f[cols-1], k-1)
		if !ok {
			return fmt.Errorf("%s:%d: %q: want a machine number in 0..%d", name, line, f[cols-1], k-1)
		}
		if param[v] != Unassigned {
			return fmt.Errorf("%s:%d: parameter %d assigned twice", name, line, g.ParamID(v))
		}
		param[v] = int32(i)
		seen++
		return nil
	})
	if err != nil {
		return nil, err
	}
	if seen != m {
		for v, i := range param {
			if i == Unassigned {
				return nil, fmt.Errorf("%s: %d of %d parameters have no machine, first %d", name, m-seen, m, g.ParamID(v))
			}
		}
	}
	return param, nil
}

// eachLine calls fn with the number (from 1) and text of each non-blank
// line of r, trimmed of white space.
func eachLine(r io.Reader, name string, fn func(int, []byte) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxLine)
	line := 0
	for sc.Scan() {
		line++
		t := bytes.TrimSpace(sc.Bytes())
		if len(t) == 0 {
			continue
		}
		if err := fn(line, t); err != nil {
			return err
		}
	}
	switch err := sc.Err(); {
	case errors.Is(err, bufio.ErrTooLong):
		return fmt.Errorf("%s:%d: a line of more than %d bytes: want one machine number, or a parameter id and a machine, a line", name, line+1, maxLine)
	case err != nil:
		return fmt.Errorf("%s:%d: %w", name, line+1, err)
	}
	return nil
}

// maxLine bounds the length of a part file's line.
const maxLine = 1 << 20

// LoadDataPartPrefix reads the data part file of the placement directory
// dir for an incremental run over n samples on k machines: the file may
// place fewer samples than n, the first ones in order (a dataset that
// grew since), not more. As for ReadDir, the directory must hold the
// summary.json that WriteDir writes, with the same k, and the data part
// file it vouches for.
func LoadDataPartPrefix(dir string, n, k int) ([]int32, error) {
	sum, sumPath, err := readDirSummary(dir, n, k)
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, DataPartFile)
	f, size, err := textio.OpenRegular(path)
	if err != nil {
		return nil, err
	}
	lines := 0
	err = eachLine(io.LimitReader(f, size), path, func(int, []byte) error { lines++; return nil })
	f.Close()
	if err != nil {
		return nil, err
	}
	if lines > n {
		return nil, fmt.Errorf("%s: %d samples, more than the %d of the dataset", path, lines, n)
	}
	var data []int32
	err = readChecked(path, sum.PartFiles[DataPartFile], sumPath, func(r io.Reader) (err error) {
		data, _, err = readDataPart(r, path, lines, k, n)
		return err
	})
	return data, err
}

// LoadDataPart reads a data part file from disk; see ReadDataPart.
func LoadDataPart(path string, n, k int) ([]int32, int, error) {
	f, err := textio.Open(path)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	return ReadDataPart(f, path, n, k)
}

// LoadParamPart reads a parameter part file from disk; see ReadParamPart.
func LoadParamPart(path string, g *graph.Graph, k int) ([]int32, error) {
	f, err := textio.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadParamPart(f, path, g, k)
}

// WriteDir writes data.part, param.part and summary.json into dir, creating
// it if needed. Each file is written under a temporary name and renamed
// when complete, summary.json last, so that an interrupted write never
// leaves a directory that looks complete.
//
// summary must encode to a JSON object (such as a Summary) or be nil;
// WriteDir adds
// "k", the number of machines, unless the object has it (it must then be
// p.K), and "part_files", the line count and CRC-32C of data.part and
// param.part, with which ReadDir checks that the part files are the ones
// the summary vouches for. The two part files are written at once, on two
// goroutines, so that their syncs to the disk overlap.
func WriteDir(dir string, g *graph.Graph, p *Placement, summary any) error {
	return writeDir(dir, p.K,
		PartSource{Lines: len(p.Data), Write: func(w io.Writer) error { return WriteDataPart(w, p) }},
		PartSource{Lines: len(p.Param), Write: func(w io.Writer) error { return WriteParamPart(w, g, p) }},
		summary, true)
}

// CheckDir reports whether WriteDir could write a placement into dir,
// without writing anything: dir, or its nearest ancestor that exists,
// must take new files (atomicfile.CheckDir), and each of data.part,
// param.part and summary.json already there must be a file Write can
// write (atomicfile.CheckFile): a directory or a block device in the
// place of one is refused, naming it. A command calls it before it reads
// the data; WriteDir calls it before it writes or removes anything.
func CheckDir(dir string) error {
	return atomicfile.CheckDirFiles(dir, DataPartFile, ParamPartFile, SummaryFile)
}

// PartSource is a part file to write: its number of lines and a function
// that writes them.
type PartSource struct {
	Lines int
	Write func(io.Writer) error
}

// WriteDirFrom is WriteDir for a placement over k machines whose part
// files are written by functions (a placement kept on disk): data.part
// and param.part, then summary.json, each atomically.
func WriteDirFrom(dir string, k int, data, param PartSource, summary any) error {
	return writeDir(dir, k, data, param, summary, false)
}

// writeDir is WriteDirFrom, with the part files written on two goroutines
// at once when together is set.
func writeDir(dir string, k int, data, param PartSource, summary any, together bool) error {
	js, err := json.Marshal(summary)
	if err != nil {
		return fmt.Errorf("encode summary: %w", err)
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(js, &obj); err != nil {
		return fmt.Errorf("placement.WriteDir %s: the summary is not a JSON object", dir)
	}
	if obj == nil {
		obj = map[string]json.RawMessage{}
	}
	if raw, ok := obj["k"]; ok {
		var sk int
		if err := json.Unmarshal(raw, &sk); err != nil || sk != k {
			return fmt.Errorf("placement.WriteDir %s: the summary has k = %s, the placement %d", dir, raw, k)
		}
	}
	obj["k"], _ = json.Marshal(k)
	if err := CheckDir(dir); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	// A stale summary from an earlier run must not vouch for new part
	// files. Only a regular file is removed: a link is followed when the
	// new summary is written, and a FIFO or a device is written through.
	if err := atomicfile.RemoveRegular(filepath.Join(dir, SummaryFile)); err != nil {
		return err
	}
	parts := []struct {
		name string
		src  PartSource
		sum  PartFileSum
		err  error
	}{{name: DataPartFile, src: data}, {name: ParamPartFile, src: param}}
	write := func(x int) {
		f := &parts[x]
		f.err = atomicfile.Write(filepath.Join(dir, f.name), func(w io.Writer) error {
			h := crc32.New(castagnoli)
			if err := f.src.Write(io.MultiWriter(w, h)); err != nil {
				return err
			}
			f.sum = PartFileSum{Lines: f.src.Lines, CRC32C: fmt.Sprintf("%08x", h.Sum32())}
			return nil
		})
	}
	if together {
		var wg sync.WaitGroup
		wg.Go(func() { write(1) })
		write(0)
		wg.Wait()
	} else {
		for x := range parts {
			if write(x); parts[x].err != nil {
				break
			}
		}
	}
	files := map[string]PartFileSum{}
	for _, f := range parts {
		if f.err != nil {
			return f.err
		}
		files[f.name] = f.sum
	}
	obj["part_files"], _ = json.Marshal(files)
	out, err := json.MarshalIndent(obj, "", "  ")
	if err != nil {
		return fmt.Errorf("encode summary: %w", err)
	}
	return atomicfile.Write(filepath.Join(dir, SummaryFile), func(w io.Writer) error { _, err := w.Write(append(out, '\n')); return err })
}

// PartFileSum is what summary.json records of a part file.
type PartFileSum struct {
	Lines  int    `json:"lines"`
	CRC32C string `json:"crc32c"`
}

// maxSummary bounds the summary.json ReadDir reads.
const maxSummary = 64 << 20

// castagnoli is the CRC-32C table.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// dirSummary holds the fields of summary.json that ReadDir checks.
type dirSummary struct {
	K         *int                   `json:"k"`
	Workers   *int                   `json:"workers"` // a shard directory's (colo shard)
	PartFiles map[string]PartFileSum `json:"part_files"`
}

// ReadDir reads the placement of g's samples and parameters from dir, a
// directory written by WriteDir (colo partition): its data.part and
// param.part, and summary.json, which vouches for them. A directory
// without summary.json is incomplete (the run that wrote it failed or has
// not finished) and is refused; so is one whose summary has no "k" (the
// number of machines, at least 1 and at most the samples of g), or whose
// part files are not the ones the summary's "part_files" describes (a
// mix of files from two runs, say k = 8 and k = 4). Every machine number
// in either file must be below the summary's k. k, when positive, must
// equal the summary's; 0 takes the summary's. Errors name the file, and
// the line for malformed input. To evaluate part files written by
// another partitioner (hMETIS, PaToH, Zoltan), read them with
// LoadDataPart and LoadParamPart (colo eval --data-part --param-part).
//
// ReadDir(dir, g, p.K) after WriteDir(dir, g, p, s) returns p.
func ReadDir(dir string, g *graph.Graph, k int) (*Placement, error) {
	if k < 0 {
		return nil, fmt.Errorf("placement: read %s: k = %d: want the number of machines, or 0 to take it from %s", dir, k, SummaryFile)
	}
	n := g.NumSamples()
	sum, sumPath, err := readDirSummary(dir, n, k)
	if err != nil {
		return nil, err
	}
	k = *sum.K
	dataPath, paramPath := filepath.Join(dir, DataPartFile), filepath.Join(dir, ParamPartFile)
	var data, param []int32
	err = readChecked(dataPath, sum.PartFiles[DataPartFile], sumPath, func(r io.Reader) (err error) {
		data, _, err = ReadDataPart(r, dataPath, n, k)
		return err
	})
	if err != nil {
		return nil, err
	}
	err = readChecked(paramPath, sum.PartFiles[ParamPartFile], sumPath, func(r io.Reader) (err error) {
		param, err = ReadParamPart(r, paramPath, g, k)
		return err
	})
	if err != nil {
		return nil, err
	}
	return &Placement{K: k, Data: data, Param: param}, nil
}

// readDirSummary reads the summary.json of the placement directory dir
// and checks its k: 1 ≤ k ≤ n, and equal to want when want > 0.
func readDirSummary(dir string, n, want int) (dirSummary, string, error) {
	var sum dirSummary
	sumPath := filepath.Join(dir, SummaryFile)
	b, err := textio.ReadRegular(sumPath, maxSummary)
	if errors.Is(err, os.ErrNotExist) {
		return sum, sumPath, fmt.Errorf("%s: missing: %s is incomplete (the run that wrote it failed or has not finished)", sumPath, dir)
	}
	if err != nil {
		return sum, sumPath, err
	}
	if err := json.Unmarshal(b, &sum); err != nil {
		return sum, sumPath, fmt.Errorf("%s: %w: want a JSON object with \"k\", the number of machines", sumPath, err)
	}
	switch {
	case sum.K == nil && sum.Workers != nil:
		return sum, sumPath, fmt.Errorf("%s: no \"k\" but \"workers\": %s is a shard directory (colo shard, for the dense applications), not a placement (colo partition)", sumPath, dir)
	case sum.K == nil:
		return sum, sumPath, fmt.Errorf("%s: no \"k\": want the number of machines", sumPath)
	case *sum.K < 1 || *sum.K > n:
		return sum, sumPath, fmt.Errorf("%s: k = %d: want 1..%d, at most the %d samples", sumPath, *sum.K, max(n, 1), n)
	case want > 0 && want != *sum.K:
		return sum, sumPath, fmt.Errorf("%s: k = %d, not the %d machines asked for", sumPath, *sum.K, want)
	}
	return sum, sumPath, nil
}

// readChecked opens path and has read parse it; when want records a
// checksum (a summary written by WriteDir), the file's content must have
// it.
func readChecked(path string, want PartFileSum, sumPath string, read func(io.Reader) error) error {
	f, size, err := textio.OpenRegular(path)
	if err != nil {
		return err
	}
	defer f.Close()
	r := io.LimitReader(f, size)
	h := crc32.New(castagnoli)
	if err := read(io.TeeReader(r, h)); err != nil {
		return err
	}
	if want.CRC32C == "" {
		return nil
	}
	// The parser may stop before the end: hash the rest.
	if _, err := io.Copy(h, r); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if got := fmt.Sprintf("%08x", h.Sum32()); got != want.CRC32C {
		return fmt.Errorf("%s: CRC-32C %s, but %s records %s for %d lines: the part files are not the ones the summary vouches for (a mix of two runs, or changed since)", path, got, sumPath, want.CRC32C, want.Lines)
	}
	return nil
}
