package dataset

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"colo/internal/membudget"
)

// allocated returns the bytes f allocates.
func allocated(f func()) uint64 {
	var a, b runtime.MemStats
	runtime.ReadMemStats(&a)
	f()
	runtime.ReadMemStats(&b)
	return b.TotalAlloc - a.TotalAlloc
}

// gzipZeros returns an idx header of type uint8 and dims, followed by n
// zero bytes, gzip'd.
func gzipZeros(t *testing.T, dims []int, n int) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	zw.Write(idxBytes(IDXUint8, dims, nil))
	zw.Write(make([]byte, n))
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestIDXClaimsMoreThanTheFileHolds: a header that declares more data
// than the file holds, or more memory than the budget, is refused before
// the data is allocated.
func TestIDXClaimsMoreThanTheFileHolds(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// 1 GiB declared by 20 bytes of file.
	plain := write("plain.idx", idxBytes(IDXUint8, []int{1 << 14, 1 << 8, 1 << 8}, []byte{1, 2, 3, 4}))
	var err error
	if a := allocated(func() { _, err = LoadIDX(plain, membudget.Off) }); a > 4<<20 {
		t.Errorf("refusing a header of 1 GiB in a file of 20 bytes allocated %d bytes", a)
	}
	if err == nil || !strings.Contains(err.Error(), "declare 1073741824 bytes of data, the file has 4") || !strings.HasPrefix(err.Error(), plain) {
		t.Errorf("plain file: %v", err)
	}

	// 64 GiB declared by a gzip'd stream of 1 MiB of zeros: over the
	// budget, refused before reading.
	huge := write("huge.idx.gz", gzipZeros(t, []int{262144, 512, 512}, 1<<20))
	if a := allocated(func() { _, err = LoadIDX(huge, 1<<30) }); a > 4<<20 {
		t.Errorf("refusing 64 GiB over a budget of 1 GiB allocated %d bytes", a)
	}
	me, ok := errors.AsType[*membudget.Error](err)
	if !ok || me.Need != 5*(1<<36) || me.Limit != 1<<30 || me.File != huge || !strings.Contains(err.Error(), "262144×512×512") {
		t.Fatalf("64 GiB over a budget of 1 GiB: %v", err)
	}

	// 256 MiB declared, within the budget, by a stream of 1 MiB: the
	// buffer grows with what arrives, and the end is a truncation.
	short := write("short.idx.gz", gzipZeros(t, []int{1 << 12, 1 << 8, 1 << 8}, 1<<20))
	if a := allocated(func() { _, err = LoadIDX(short, membudget.Off) }); a > 8<<20 {
		t.Errorf("a stream of 1 MiB claiming 256 MiB allocated %d bytes", a)
	}
	if err == nil || !strings.Contains(err.Error(), "declare 268435456 bytes of data, the file has 1048576") {
		t.Errorf("short stream: %v", err)
	}

	// Through Load, with the budget in the options.
	lo := DefaultLoadOptions()
	lo.Labels, lo.Memory = plain, 1<<20
	if _, err := Load(huge, lo); !membudget.Is(err) {
		t.Errorf("Load with a budget of 1 MiB: %v", err)
	}
}

// TestIDXWithinBudgetLoadsAsBefore: the exact-size buffer of an
// uncompressed file and the growing one of a stream read the same.
func TestIDXWithinBudgetLoadsAsBefore(t *testing.T) {
	data := make([]byte, 3*5*7)
	for i := range data {
		data[i] = byte(i * 7)
	}
	raw := idxBytes(IDXUint8, []int{3, 5, 7}, data)
	dir := t.TempDir()
	for name, b := range map[string][]byte{"a.idx": raw, "a.idx.gz": gzipBytes(t, raw)} {
		p := filepath.Join(dir, name)
		os.WriteFile(p, b, 0o644)
		x, err := LoadIDX(p, membudget.Auto)
		if err != nil || !bytes.Equal(x.Data, data) || len(x.Dims) != 3 {
			t.Errorf("%s: %v", name, err)
		}
		if _, err := LoadIDX(p, 3*5*7*5-1); !membudget.Is(err) {
			t.Errorf("%s: one byte under the need: %v", name, err)
		}
		if _, err := LoadIDX(p, 3*5*7*5); err != nil {
			t.Errorf("%s: exactly the need: %v", name, err)
		}
	}
}

// countingReader counts the bytes read from it.
type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

// TestCSVClaimsMoreThanItHolds: a CSV whose lines, records or width would
// cost more than the budget or the model allows is refused at the line,
// before the parser holds it.
func TestCSVClaimsMoreThanItHolds(t *testing.T) {
	const budget = 16 << 20 // lines of 1 MiB, records of 4096 fields
	row := func(n int) string { return "1" + strings.Repeat(",0.5", n) + "\n" }
	rows := func(k, n int) string { return strings.Repeat(row(n), k) }
	for _, c := range []struct {
		name, text string
		checkDim   func(int) error
		line       int
		msg        string
		alloc      uint64
	}{
		{"a line of 2 MiB", rows(3, 4) + "1," + strings.Repeat("7", 2<<20) + "\n", nil, 4, "line longer than 1048576 bytes", 8 << 20},
		{"a first record of 20000 fields", row(20000) + rows(2, 20000), nil, 1, "record of more than 4096 fields", 8 << 20},
		{"a later record of many fields", rows(5, 10) + row(1000) + rows(5, 10), nil, 6, "record of more than 38 fields: the first record has 11", 4 << 20},
		{"a width the model refuses", rows(5000, 300), func(d int) error {
			if d > 100 {
				return errors.New("more than 100 features")
			}
			return nil
		}, 1, "300 features (the first record's 301 columns but the label): more than 100 features", 4 << 20},
		{"more features than the budget", rows(10000, 256), nil, 8161, "the 8161 records of 256 features read so far need 16.0 MiB", 64 << 20},
	} {
		t.Run(c.name, func(t *testing.T) {
			cr := &countingReader{r: strings.NewReader(c.text)}
			var err error
			a := allocated(func() { _, err = ReadCSVBounded(cr, "f.csv", CSVOptions{Header: HeaderNo}, budget, c.checkDim) })
			var line int
			if pe, ok := errors.AsType[*ParseError](err); ok {
				line = pe.Line
			} else if me, ok := errors.AsType[*membudget.Error](err); ok {
				line = me.Line
			}
			if line != c.line || !strings.Contains(fmt.Sprint(err), c.msg) || !strings.HasPrefix(fmt.Sprint(err), fmt.Sprintf("f.csv:%d: ", c.line)) {
				t.Fatalf("error %v: want line %d and %q", err, c.line, c.msg)
			}
			if a > c.alloc {
				t.Errorf("refusing allocated %d bytes, want at most %d", a, c.alloc)
			}
			if c.checkDim != nil && cr.n > 64<<10 {
				t.Errorf("read %d bytes of %d before refusing the width", cr.n, len(c.text))
			}
		})
	}
}

// TestCSVBoundsCountsFieldsOutsideQuotes: separators and newlines inside
// quotes do not count, so a record's fields are exactly encoding/csv's.
func TestCSVBoundsCountsFieldsOutsideQuotes(t *testing.T) {
	text := "\"a,b,\"\"c\"\",\nd\",1,2\n\"x\",3,4\n"
	d, err := ReadCSVBounded(strings.NewReader(text), "q.csv", CSVOptions{Header: HeaderNo}, membudget.Off, nil)
	if err != nil || d.Len() != 2 || d.Dim != 2 {
		t.Fatalf("%v %+v", err, d)
	}
	b := newCSVBounds(strings.NewReader(text), "q.csv", ',', 1<<20)
	b.setMaxFields(3, "three")
	if _, err := io.ReadAll(b); err != nil {
		t.Fatalf("records of three fields under a limit of three: %v", err)
	}
	b = newCSVBounds(strings.NewReader(text), "q.csv", ',', 1<<20)
	b.setMaxFields(2, "two")
	if _, err := io.ReadAll(b); err == nil || !strings.HasPrefix(err.Error(), "q.csv:1: record of more than 2 fields: two") {
		t.Fatalf("limit of two: %v", err)
	}
}

// TestLibSVMDenseClaimsMoreThanTheBudget: a libsvm file whose dense
// layout would pass the budget, or whose width the model refuses, is
// refused at the line where it does.
func TestLibSVMDenseClaimsMoreThanTheBudget(t *testing.T) {
	var b strings.Builder
	for i := range 4000 {
		fmt.Fprintf(&b, "%d 1:1 %d:0.5\n", i%3, 1000+i%24) // 1024 features, dense 4 KiB a sample
	}
	_, err := ReadLibSVM(strings.NewReader(b.String()), "f.svm", LibSVMOptions{IndexBase: -1, Memory: 4 << 20})
	me, ok := errors.AsType[*membudget.Error](err)
	if !ok || me.File != "f.svm" || me.Line != 1025 || !strings.HasPrefix(err.Error(), "f.svm:1025: 1025 samples × 1024 features") {
		t.Fatalf("dense over a budget of 4 MiB: %v", err)
	}
	_, err = ReadLibSVM(strings.NewReader(b.String()), "f.svm", LibSVMOptions{IndexBase: 1, CheckDim: func(d int) error {
		if d > 1010 {
			return fmt.Errorf("%d features: too wide", d)
		}
		return nil
	}})
	if err == nil || !strings.HasPrefix(err.Error(), "f.svm:12: feature index 1011: 1011 features: too wide") {
		t.Fatalf("width refused: %v", err)
	}
	if d, err := ReadLibSVM(strings.NewReader(b.String()), "f.svm", LibSVMOptions{IndexBase: -1, Memory: 64 << 20}); err != nil || d.Dim != 1023 {
		t.Fatalf("within the budget: %v", err)
	}
}

// TestIDXWidthTheModelRefuses: the model's check of the width is asked
// from the header, before the data is read.
func TestIDXWidthTheModelRefuses(t *testing.T) {
	dir := t.TempDir()
	images := filepath.Join(dir, "i.idx")
	labels := filepath.Join(dir, "l.idx")
	os.WriteFile(images, idxBytes(IDXUint8, []int{2, 30, 40}, make([]byte, 2400)), 0o644)
	os.WriteFile(labels, idxBytes(IDXUint8, []int{2}, []byte{0, 1}), 0o644)
	lo := DefaultLoadOptions()
	lo.Labels = labels
	asked := 0
	lo.CheckDim = func(d int) error {
		asked = d
		if d > 1000 {
			return fmt.Errorf("%d features: too wide", d)
		}
		return nil
	}
	if _, err := Load(images, lo); err == nil || asked != 1200 || !strings.Contains(err.Error(), "dimensions 2×30×40 give samples of 1200 features: 1200 features: too wide") {
		t.Fatalf("asked %d: %v", asked, err)
	}
	lo.CheckDim = func(int) error { return nil }
	if d, err := Load(images, lo); err != nil || d.Dim != 1200 {
		t.Fatalf("accepted: %v", err)
	}
}
