package placement

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"colo/graph"
	"colo/internal/atomicfile"
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
// line, in sample order. k is the number of machines, or 0 to take it as one
// more than the largest machine number in the file. It returns the
// assignment and k.
func ReadDataPart(r io.Reader, name string, n, k int) ([]int32, int, error) {
	data := make([]int32, 0, n)
	maxPart := -1
	err := eachLine(r, func(line int, text []byte) error {
		f := bytes.Fields(text)
		if len(f) != 1 {
			return fmt.Errorf("%s:%d: %q: want one machine number per line", name, line, text)
		}
		i, err := strconv.Atoi(string(f[0]))
		if err != nil || i < 0 || (k > 0 && i >= k) {
			if k > 0 {
				return fmt.Errorf("%s:%d: %q: want a machine number in 0..%d", name, line, f[0], k-1)
			}
			return fmt.Errorf("%s:%d: %q: want a non-negative machine number", name, line, f[0])
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
	err := eachLine(r, func(line int, text []byte) error {
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
		i, err := strconv.Atoi(string(f[cols-1]))
		if err != nil || i < 0 || i >= k {
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
func eachLine(r io.Reader, fn func(int, []byte) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
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
	return sc.Err()
}

// LoadDataPartPrefix reads the data part file of the placement directory
// dir for an incremental run over n samples on k machines: the file may
// place fewer samples than n, the first ones in order (a dataset that
// grew since), not more.
func LoadDataPartPrefix(dir string, n, k int) ([]int32, error) {
	path := filepath.Join(dir, DataPartFile)
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	lines := 0
	err = eachLine(f, func(int, []byte) error { lines++; return nil })
	f.Close()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if lines > n {
		return nil, fmt.Errorf("%s: %d samples, more than the %d of the dataset", path, lines, n)
	}
	data, _, err := LoadDataPart(path, lines, k)
	return data, err
}

// LoadDataPart reads a data part file from disk; see ReadDataPart.
func LoadDataPart(path string, n, k int) ([]int32, int, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	return ReadDataPart(f, path, n, k)
}

// LoadParamPart reads a parameter part file from disk; see ReadParamPart.
func LoadParamPart(path string, g *graph.Graph, k int) ([]int32, error) {
	f, err := os.Open(path)
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
func WriteDir(dir string, g *graph.Graph, p *Placement, summary any) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	js, err := json.MarshalIndent(summary, "", "  ")
	if err != nil {
		return fmt.Errorf("encode summary: %w", err)
	}
	// A stale summary from an earlier run must not vouch for new part files.
	if err := os.Remove(filepath.Join(dir, SummaryFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	files := []struct {
		name  string
		write func(io.Writer) error
	}{
		{DataPartFile, func(w io.Writer) error { return WriteDataPart(w, p) }},
		{ParamPartFile, func(w io.Writer) error { return WriteParamPart(w, g, p) }},
		{SummaryFile, func(w io.Writer) error { _, err := w.Write(append(js, '\n')); return err }},
	}
	for _, f := range files {
		if err := atomicfile.Write(filepath.Join(dir, f.name), f.write); err != nil {
			return err
		}
	}
	return nil
}

// ReadDir reads the placement of g's samples and parameters from dir: its
// data.part and param.part, as WriteDir (colo partition) writes them or as
// hMETIS, PaToH and Zoltan write a data part file. summary.json is not
// read. k is the number of machines: every machine number in either file
// must be in 0..k-1. With k = 0 the data part file decides: k is one more
// than the largest machine number in it. Errors name the file, and the
// line for malformed input.
//
// ReadDir(dir, g, p.K) after WriteDir(dir, g, p, s) returns p.
func ReadDir(dir string, g *graph.Graph, k int) (*Placement, error) {
	if k < 0 {
		return nil, fmt.Errorf("placement: read %s: k = %d: want the number of machines, or 0 to take it from %s", dir, k, DataPartFile)
	}
	dataPath := filepath.Join(dir, DataPartFile)
	data, k, err := LoadDataPart(dataPath, g.NumSamples(), k)
	if err != nil {
		return nil, err
	}
	if k == 0 {
		return nil, fmt.Errorf("%s: no samples to take the number of machines from: want k > 0", dataPath)
	}
	param, err := LoadParamPart(filepath.Join(dir, ParamPartFile), g, k)
	if err != nil {
		return nil, err
	}
	return &Placement{K: k, Data: data, Param: param}, nil
}
