package table

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"
)

// flight is a row of the tables the tests write.
type flight struct {
	Date   time.Time `parquet:"date,timestamp(microsecond)"`
	Delay  *int64    `parquet:"delay,optional"`
	Dist   int32     `parquet:"distance"`
	Origin string    `parquet:"origin"`
	Dest   string    `parquet:"destination,dict"`
	Score  float64   `parquet:"score"`
	Late   bool      `parquet:"late"`
}

// flights returns n rows, every fifth without a delay.
func flights(n int) []flight {
	airports := []string{"SEA", "SFO", "LAX", "ORD", "JFK"}
	out := make([]flight, n)
	for i := range out {
		d := int64(i%40 - 10)
		f := flight{
			Date:   time.Date(2010, time.Month(1+i%12), 1+i%28, i%24, 30, 0, 0, time.UTC),
			Dist:   int32(100 + 7*i),
			Origin: airports[i%5],
			Dest:   airports[(i/5)%5],
			Score:  float64(i) / 4,
			Late:   d > 15,
		}
		if i%5 != 3 {
			f.Delay = &d
		}
		out[i] = f
	}
	return out
}

// writeParquet writes rows to a Parquet file in dir with groups of
// perGroup rows, compressed with codec.
func writeParquet(t testing.TB, dir string, rows []flight, perGroup int64, codec parquet.WriterOption) string {
	t.Helper()
	var buf bytes.Buffer
	opts := []parquet.WriterOption{parquet.MaxRowsPerRowGroup(perGroup)}
	if codec != nil {
		opts = append(opts, codec)
	}
	w := parquet.NewGenericWriter[flight](&buf, opts...)
	if _, err := w.Write(rows); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "flights.parquet")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// readAll reads every batch of r.
func readAll(t *testing.T, r *Reader) []Batch {
	t.Helper()
	var out []Batch
	for {
		b, err := r.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		c := *b
		c.Cols = nil
		for _, col := range b.Cols {
			cc := *col
			cc.Ints = append([]int64(nil), col.Ints...)
			cc.Floats = append([]float64(nil), col.Floats...)
			cc.Bytes = append([]byte(nil), col.Bytes...)
			cc.Offs = append([]int(nil), col.Offs...)
			cc.Null = append([]bool(nil), col.Null...)
			c.Cols = append(c.Cols, &cc)
		}
		out = append(out, c)
	}
}

func TestParquetProjectionAndGroups(t *testing.T) {
	rows := flights(1000)
	for _, codec := range []struct {
		name string
		opt  parquet.WriterOption
	}{
		{"none", nil},
		{"snappy", parquet.Compression(&parquet.Snappy)},
		{"zstd", parquet.Compression(&parquet.Zstd)},
		{"gzip", parquet.Compression(&parquet.Gzip)},
	} {
		t.Run(codec.name, func(t *testing.T) {
			path := writeParquet(t, t.TempDir(), rows, 300, codec.opt)
			r, err := Open(path, []string{"origin", "delay", "date", "distance", "score", "late"}, DefaultOptions())
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			want := []Field{{"origin", KindString}, {"delay", KindInt}, {"date", KindTime}, {"distance", KindInt}, {"score", KindFloat}, {"late", KindBool}}
			for i, f := range r.Fields() {
				if f != want[i] {
					t.Fatalf("field %d = %v, want %v", i, f, want[i])
				}
			}
			bs := readAll(t, r)
			if len(bs) != 4 {
				t.Fatalf("%d batches, want 4 row groups of at most 300", len(bs))
			}
			row := 0
			for g, b := range bs {
				if b.Group != g || b.FirstRow != int64(row) {
					t.Fatalf("batch %d: group %d, first row %d; want %d, %d", g, b.Group, b.FirstRow, g, row)
				}
				for i := 0; i < b.Rows; i, row = i+1, row+1 {
					f := rows[row]
					if got := string(b.Cols[0].Str(i)); got != f.Origin {
						t.Fatalf("row %d origin %q, want %q", row, got, f.Origin)
					}
					if null := b.Cols[1].IsNull(i); null != (f.Delay == nil) {
						t.Fatalf("row %d delay null %v", row, null)
					}
					if f.Delay != nil && b.Cols[1].Ints[i] != *f.Delay {
						t.Fatalf("row %d delay %d, want %d", row, b.Cols[1].Ints[i], *f.Delay)
					}
					if tm, _ := b.Cols[2].Time(i); !tm.Equal(f.Date) {
						t.Fatalf("row %d date %v, want %v", row, tm, f.Date)
					}
					if b.Cols[3].Ints[i] != int64(f.Dist) || b.Cols[4].Floats[i] != f.Score || (b.Cols[5].Ints[i] == 1) != f.Late {
						t.Fatalf("row %d: distance %d score %v late %d", row, b.Cols[3].Ints[i], b.Cols[4].Floats[i], b.Cols[5].Ints[i])
					}
				}
			}
			if row != len(rows) {
				t.Fatalf("%d rows read, want %d", row, len(rows))
			}
		})
	}
}

func TestParquetUnknownColumn(t *testing.T) {
	path := writeParquet(t, t.TempDir(), flights(10), 100, nil)
	_, err := Open(path, []string{"origin", "carrier"}, DefaultOptions())
	var te *Error
	if !errors.As(err, &te) || te.Column != "carrier" || !strings.Contains(err.Error(), `"destination"`) {
		t.Fatalf("err = %v, want one naming carrier and listing the columns", err)
	}
}

func TestParquetMemoryBudget(t *testing.T) {
	path := writeParquet(t, t.TempDir(), flights(2000), 1000, nil)
	opt := DefaultOptions()
	opt.Memory = 4 << 10
	r, err := Open(path, []string{"origin", "score"}, opt)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	_, err = r.Next()
	var te *Error
	if !errors.As(err, &te) || !errors.Is(err, ErrMemory) || te.Group != 0 || te.File != path || te.Column == "" {
		t.Fatalf("err = %v, want the memory budget refusing row group 0 naming a column", err)
	}
	// The same file within a budget that fits a group.
	opt.Memory = 1 << 20
	r2, err := Open(path, []string{"origin", "score"}, opt)
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Close()
	if bs := readAll(t, r2); len(bs) != 2 {
		t.Fatalf("%d batches, want 2", len(bs))
	}
}

func TestParquetBadFiles(t *testing.T) {
	dir := t.TempDir()
	path := writeParquet(t, dir, flights(500), 200, parquet.Compression(&parquet.Zstd))
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string][]byte{
		"truncated":      good[:len(good)/2],
		"short":          good[:6],
		"corrupt footer": append(append([]byte{}, good[:len(good)-40]...), bytes.Repeat([]byte{0xff}, 40)...),
		"corrupt pages": func() []byte {
			b := bytes.Clone(good)
			for i := 64; i < len(b)/2; i += 7 {
				b[i] ^= 0x5a
			}
			return b
		}(),
	}
	for name, data := range cases {
		t.Run(name, func(t *testing.T) {
			p := filepath.Join(dir, strings.ReplaceAll(name, " ", "_")+".parquet")
			if err := os.WriteFile(p, data, 0o644); err != nil {
				t.Fatal(err)
			}
			err := readFile(p, nil, DefaultOptions())
			if err == nil {
				t.Fatal("no error")
			}
			if !strings.Contains(err.Error(), p) {
				t.Fatalf("error %q does not name the file", err)
			}
			t.Log(err)
		})
	}
}

// readFile reads every batch of the table at path.
func readFile(path string, cols []string, opt Options) error {
	r, err := Open(path, cols, opt)
	if err != nil {
		return err
	}
	defer r.Close()
	for {
		if _, err := r.Next(); err == io.EOF {
			return nil
		} else if err != nil {
			return err
		}
	}
}

func TestCSV(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "t.csv")
	data := "date,origin,delay\n2010-01-02 13:45,SEA,20\n\"2010-03-04T05:06:07Z\",\"S,F\",\n2010-05-06,LAX,-3.5\n"
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	opt := DefaultOptions()
	opt.BatchRows = 2
	r, err := Open(path, []string{"delay", "origin", "date"}, opt)
	if err != nil {
		t.Fatal(err)
	}
	bs := readAll(t, r)
	if len(bs) != 2 || bs[0].Rows != 2 || bs[1].Rows != 1 {
		t.Fatalf("batches %d", len(bs))
	}
	if l := bs[1].Lines[0]; l != 4 {
		t.Fatalf("line of the third row %d, want 4", l)
	}
	b := bs[0]
	if v, ok := b.Cols[0].Float(0); !ok || v != 20 {
		t.Fatalf("delay %v %v", v, ok)
	}
	if !b.Cols[0].IsNull(1) || string(b.Cols[1].Str(1)) != "S,F" {
		t.Fatalf("row 2: null %v origin %q", b.Cols[0].IsNull(1), b.Cols[1].Str(1))
	}
	if tm, ok := b.Cols[2].Time(0); !ok || tm != time.Date(2010, 1, 2, 13, 45, 0, 0, time.UTC) {
		t.Fatalf("time %v %v", tm, ok)
	}
	if tm, ok := bs[1].Cols[2].Time(0); !ok || tm.Day() != 6 {
		t.Fatalf("date %v %v", tm, ok)
	}
	if _, err := Open(path, []string{"carrier"}, opt); err == nil || !strings.Contains(err.Error(), `"carrier"`) {
		t.Fatalf("unknown column: %v", err)
	}
	bad := filepath.Join(dir, "bad.csv")
	os.WriteFile(bad, []byte("a,b\n1,2\n3\n"), 0o644)
	if err := readFile(bad, nil, opt); err == nil || !strings.HasSuffix(err.Error(), "bad.csv:3: 1 fields, want 2 like the header") {
		t.Fatalf("short row: %v", err)
	}
	opt.Memory = 40
	long := filepath.Join(dir, "long.csv")
	os.WriteFile(long, []byte("a,b\n1,2\n3,"+strings.Repeat("x", 100)+"\n"), 0o644)
	if err := readFile(long, nil, opt); !errors.Is(err, ErrMemory) || !strings.Contains(err.Error(), `long.csv:3: column "b"`) {
		t.Fatalf("long row: %v", err)
	}
}

func TestJSONL(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "t.jsonl")
	data := `{"origin":"SEA","delay":20,"late":true}` + "\n\n" + `{"delay":null,"origin":"S\"F"}` + "\n" + `{"origin":"LAX","delay":-3}`
	os.WriteFile(path, []byte(data), 0o644)
	r, err := Open(path, nil, DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	if f := r.Fields(); len(f) != 3 || f[0].Name != "origin" || f[2].Name != "late" {
		t.Fatalf("fields %v", f)
	}
	bs := readAll(t, r)
	b := bs[0]
	if b.Rows != 3 || b.Lines[1] != 3 || b.Lines[2] != 4 {
		t.Fatalf("rows %d lines %v", b.Rows, b.Lines)
	}
	if string(b.Cols[0].Str(1)) != `S"F` || !b.Cols[1].IsNull(1) || !b.Cols[2].IsNull(2) {
		t.Fatal("values")
	}
	if v, ok := b.Cols[2].Float(0); !ok || v != 1 {
		t.Fatalf("late %v", v)
	}
	bad := filepath.Join(dir, "bad.jsonl")
	os.WriteFile(bad, []byte(`{"a":1}`+"\n"+`{"a":[1]}`+"\n"), 0o644)
	if err := readFile(bad, nil, DefaultOptions()); err == nil || !strings.Contains(err.Error(), `bad.jsonl:2: column "a"`) {
		t.Fatalf("nested: %v", err)
	}
}

// TestByteOrderMark: a UTF-8 byte order mark at the start of a CSV, TSV
// or JSON-lines table (a spreadsheet's "CSV UTF-8", an editor's) is not
// data: the table reads as it does without one. Before, a quoted CSV
// header had a bare quote, and a JSON-lines table's first object was
// no JSON.
func TestByteOrderMark(t *testing.T) {
	dir := t.TempDir()
	for name, data := range map[string]string{
		"t.csv":   "origin,delay\nSEA,20\nLAX,-3\n",
		"q.csv":   "\"origin\",\"delay\"\nSEA,20\nLAX,-3\n",
		"t.tsv":   "origin\tdelay\nSEA\t20\nLAX\t-3\n",
		"t.jsonl": `{"origin":"SEA","delay":20}` + "\n" + `{"origin":"LAX","delay":-3}` + "\n",
	} {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte("\ufeff"+data), 0o644); err != nil {
			t.Fatal(err)
		}
		r, err := Open(path, nil, DefaultOptions())
		if err != nil {
			t.Fatalf("%s with a byte order mark: %v", name, err)
		}
		bs := readAll(t, r)
		if len(bs) != 1 || bs[0].Rows != 2 {
			t.Fatalf("%s with a byte order mark: %d batches", name, len(bs))
		}
		b := bs[0]
		if v, ok := b.Cols[1].Float(1); string(b.Cols[0].Str(0)) != "SEA" || !ok || v != -3 {
			t.Errorf("%s with a byte order mark: origin %q, delay %v %v", name, b.Cols[0].Str(0), v, ok)
		}
	}
}
