package features

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"colo/graph"
	"colo/internal/colotest"
	"colo/table"
)

// row is a row of the tables the tests write.
type row struct {
	Date   time.Time `parquet:"date,timestamp(microsecond)"`
	Delay  *int64    `parquet:"delay,optional"`
	Dist   int64     `parquet:"distance"`
	Origin string    `parquet:"origin"`
	Dest   string    `parquet:"destination"`
	Score  float64   `parquet:"score"`
}

// tinyRows are six flights; the one on June 2 has no delay.
func tinyRows() []row {
	d := func(v int64) *int64 { return &v }
	at := func(m, day, h int) time.Time { return time.Date(2001, time.Month(m), day, h, 0, 0, 0, time.UTC) }
	return []row{
		{at(1, 1, 8), d(20), 100, "SEA", "SFO", 0.5},  // Monday
		{at(1, 2, 9), d(-5), 800, "SFO", "SEA", 1.5},  // Tuesday
		{at(2, 3, 17), d(16), 100, "SEA", "LAX", 2.5}, // Saturday
		{at(3, 4, 23), d(0), 2500, "LAX", "SEA", 3.5}, // Sunday
		{at(6, 1, 6), d(30), 800, "SEA", "SFO", 4.5},  // Friday: test
		{at(6, 2, 7), nil, 100, "ORD", "SEA", 5.5},    // no label
	}
}

// writeTable writes rows as Parquet (groups of two rows) and as CSV in
// dir and returns their paths.
func writeTable(t *testing.T, dir string, rows []row) (pq, csv string) {
	t.Helper()
	var buf bytes.Buffer
	w := parquet.NewGenericWriter[row](&buf, parquet.MaxRowsPerRowGroup(2), parquet.Compression(&parquet.Zstd))
	if _, err := w.Write(rows); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	pq = filepath.Join(dir, "t.parquet")
	if err := os.WriteFile(pq, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	var c strings.Builder
	c.WriteString("date,delay,distance,origin,destination,score\n")
	for _, r := range rows {
		delay := ""
		if r.Delay != nil {
			delay = strings.TrimSpace(strings.ReplaceAll(string(json.RawMessage(mustJSON(*r.Delay))), "\"", ""))
		}
		c.WriteString(r.Date.Format("2006-01-02 15:04:05") + "," + delay + "," + string(mustJSON(r.Dist)) + "," + r.Origin + "," + r.Dest + "," + string(mustJSON(r.Score)) + "\n")
	}
	csv = filepath.Join(dir, "t.csv")
	if err := os.WriteFile(csv, []byte(c.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return pq, csv
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

const tinySpec = "delay > 15 ~ origin + origin*destination + hour(date) + weekday(date) + month(date) + quantile(distance, 4) + log(distance); test: date >= 2001-06-01"

func TestParseRoundTrip(t *testing.T) {
	s, err := Parse(tinySpec)
	if err != nil {
		t.Fatal(err)
	}
	want := Spec{
		Label: "delay > 15",
		Test:  "date >= 2001-06-01",
		Features: []Feature{
			{Columns: []string{"origin"}},
			{Columns: []string{"origin", "destination"}},
			{Columns: []string{"date"}, Transform: Hour},
			{Columns: []string{"date"}, Transform: Weekday},
			{Columns: []string{"date"}, Transform: Month},
			{Columns: []string{"distance"}, Transform: Quantile, Buckets: 4},
			{Columns: []string{"distance"}, Transform: Log},
		},
	}
	if !reflect.DeepEqual(s, want) {
		t.Fatalf("Parse = %+v\nwant %+v", s, want)
	}
	back, err := Parse(s.Compact())
	if err != nil || !reflect.DeepEqual(back, s) {
		t.Fatalf("Parse(Compact()) = %+v, %v", back, err)
	}
	for _, bad := range []struct{ in, want string }{
		{" ~ origin", "label is empty"},
		{"delay > 15", "want LABEL ~ FEATURE"},
		{"delay > 15 ~ origin + ", "empty feature"},
		{"delay > 15 ~ sqrt(distance)", "unknown transform"},
		{"delay > 15 ~ hour(date*origin)", "only category and hash cross"},
		{"delay > 15 ~ quantile(distance, 1)", "buckets 1"},
		{"delay > 15 ~ origin + origin", "the same as feature 1"},
		{"delay >> 15 ~ origin", "label"},
		{"delay > 15 ~ origin; date > 3", "test:"},
	} {
		if _, err := Parse(bad.in); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("Parse(%q) = %v, want an error with %q", bad.in, err, bad.want)
		}
	}
}

// edges returns the sorted parameter ids of each sample of g.
func edges(g *graph.Graph) [][]uint64 {
	out := make([][]uint64, g.NumSamples())
	for u := range out {
		for _, v := range g.Params(u) {
			out[u] = append(out[u], g.ParamID(int(v)))
		}
	}
	return out
}

func TestFitAndGraphByHand(t *testing.T) {
	pq, csv := writeTable(t, t.TempDir(), tinyRows())
	s, err := Parse(tinySpec)
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{pq, csv} {
		t.Run(filepath.Ext(path), func(t *testing.T) {
			f, err := Fit(path, s, table.DefaultOptions())
			if err != nil {
				t.Fatal(err)
			}
			// Training rows: the first four. origin: other, LAX, SEA, SFO.
			// crosses: other, LAX·SEA, SEA·LAX, SEA·SFO, SFO·SEA. Quantile
			// edges of {100, 800, 100, 2500} at 1/4, 2/4, 3/4: 100, 800,
			// 2500, less the smallest: 800, 2500.
			wantFields := []Field{
				{Name: "origin", Base: 0, Size: 4, Dict: []string{"LAX", "SEA", "SFO"}},
				{Name: "origin*destination", Base: 4, Size: 5, Dict: []string{"LAX\x1fSEA", "SEA\x1fLAX", "SEA\x1fSFO", "SFO\x1fSEA"}},
				{Name: "hour(date)", Base: 9, Size: 24},
				{Name: "weekday(date)", Base: 33, Size: 7},
				{Name: "month(date)", Base: 40, Size: 12},
				{Name: "quantile(distance, 4)", Base: 52, Size: 3, Edges: []float64{800, 2500}},
				{Name: "log(distance)", Base: 55, Size: 128},
			}
			if !reflect.DeepEqual(f.Fields, wantFields) || f.Params != 183 || f.Rows != 4 {
				t.Fatalf("fitted %+v (params %d, rows %d)", f.Fields, f.Params, f.Rows)
			}
			g, err := f.Graph(path, Train, table.DefaultOptions())
			if err != nil {
				t.Fatal(err)
			}
			// Row 1: SEA (2), SEA·SFO (4+3), 8h (9+8), Monday (33+1),
			// January (40), 100 in bucket 0 (52), 100 has 7 bits (55+7).
			want := [][]uint64{
				{2, 7, 17, 34, 40, 52, 62},
				{3, 8, 18, 35, 40, 53, 65},
				{2, 6, 26, 39, 41, 52, 62},
				{1, 5, 32, 33, 42, 54, 67},
			}
			if got := edges(g); !reflect.DeepEqual(got, want) {
				t.Fatalf("edges %v\nwant %v", got, want)
			}
			if !reflect.DeepEqual(g.Labels(), []float64{1, 0, 1, 0}) {
				t.Fatalf("labels %v", g.Labels())
			}
			test, err := f.Graph(path, Test, table.DefaultOptions())
			if err != nil {
				t.Fatal(err)
			}
			// One pass gives the same two graphs.
			tr2, te2, err := f.Split(path, table.DefaultOptions())
			if err != nil || !reflect.DeepEqual(edges(tr2), edges(g)) || !reflect.DeepEqual(edges(te2), edges(test)) ||
				!reflect.DeepEqual(tr2.Labels(), g.Labels()) || !reflect.DeepEqual(te2.Labels(), test.Labels()) {
				t.Fatalf("Split differs from Graph of each part (%v)", err)
			}
			// The test row: SEA·SFO known; the unlabelled ORD row is left out.
			if got := edges(test); !reflect.DeepEqual(got, [][]uint64{{2, 7, 15, 38, 45, 53, 65}}) || test.Label(0) != 1 {
				t.Fatalf("test edges %v labels %v", got, test.Labels())
			}
		})
	}
}

func TestCrossWithTimePart(t *testing.T) {
	pq, csv := writeTable(t, t.TempDir(), tinyRows())
	s, err := Parse("delay > 15 ~ origin*hour(date) + hash(weekday(date)*destination, 3); test: date >= 2001-06-01")
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Features[0].Columns; !reflect.DeepEqual(got, []string{"origin", "hour(date)"}) {
		t.Fatalf("factors %q", got)
	}
	for _, path := range []string{pq, csv} {
		f, err := Fit(path, s, table.DefaultOptions())
		if err != nil {
			t.Fatal(err)
		}
		if want := []string{"LAX\x1f23", "SEA\x1f17", "SEA\x1f8", "SFO\x1f9"}; !reflect.DeepEqual(f.Fields[0].Dict, want) {
			t.Fatalf("%s: dictionary %q, want %q", path, f.Fields[0].Dict, want)
		}
		g, err := f.Graph(path, Train, table.DefaultOptions())
		if err != nil {
			t.Fatal(err)
		}
		for u, want := range []uint64{3, 4, 2, 1} {
			if got := g.ParamID(int(g.Params(u)[0])); got != want {
				t.Fatalf("%s: row %d: cross id %d, want %d", path, u, got, want)
			}
		}
	}
	if s, err := Parse("y ~ hour(date)*weekday(date)"); err != nil || !reflect.DeepEqual(s.Features[0].Columns, []string{"hour(date)", "weekday(date)"}) {
		t.Fatalf("a cross of two parts: %+v, %v", s, err)
	}
	if _, err := Parse("delay > 15 ~ category(hour(date))"); err == nil {
		t.Fatal("a timestamp part as a category's only column parsed")
	}
}

func TestFittedSaveLoad(t *testing.T) {
	dir := t.TempDir()
	pq, _ := writeTable(t, dir, tinyRows())
	s, _ := Parse("delay ~ origin + hash(origin*destination, 4) + std(score) + raw(distance) + 1")
	f, err := Fit(pq, s, table.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Save(dir); err != nil {
		t.Fatal(err)
	}
	back, err := Load(dir)
	if err != nil || !reflect.DeepEqual(back, f) {
		t.Fatalf("Load = %+v, %v\nwant %+v", back, err, f)
	}
	spec, fitted, err := Read(filepath.Join(dir, FileName))
	if err != nil || fitted == nil || !reflect.DeepEqual(spec, s) {
		t.Fatalf("Read of a fitted spec: %v %v", fitted, err)
	}
	g, err := f.Graph(pq, All, table.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	if g.NumSamples() != 5 || !g.HasValues() {
		t.Fatalf("%v, values %v", g, g.HasValues())
	}
	// Every row has the bias, the last id.
	for u := range g.NumSamples() {
		ps := g.Params(u)
		if g.ParamID(int(ps[len(ps)-1])) != f.Params-1 {
			t.Fatalf("row %d has no bias", u)
		}
	}
	// std(score): mean 2.5 of the five labelled scores 0.5..4.5.
	if fd := f.Fields[2]; fd.Mean != 2.5 {
		t.Fatalf("std mean %v", fd.Mean)
	}
	bad := *f
	bad.Params++
	data, _ := json.Marshal(&bad)
	if _, err := DecodeFitted(data); err == nil {
		t.Fatal("a fitted spec with the wrong count of parameters decoded")
	}
}

func TestSpecErrors(t *testing.T) {
	pq, csv := writeTable(t, t.TempDir(), tinyRows())
	for _, c := range []struct {
		spec, path, want string
	}{
		{"delay > 15 ~ carrier", pq, `column "carrier": no such column`},
		{"delay > 15 ~ score", pq, `feature 1 (score): column "score" holds floats`},
		{"delay > 15 ~ quantile(origin)", pq, `column "origin" holds strings: quantile wants numbers`},
		{"delay > 15 ~ hour(distance)", pq, `column "distance" holds integer values: hour wants a timestamp`},
		{"origin ~ destination", pq, `label: column "origin" holds strings`},
		{"origin > 3 ~ destination", pq, `holds strings: compare it with == or !=, not >`},
		{"distance == \"far\" ~ destination", pq, `"far" is not a number`},
		{"delay > 15 ~ origin; test: date >= soon", pq, `"soon" is not a date`},
		{"delay > 15 ~ origin; test: date >= 2002-01-01", pq, "no test rows"},
		{"delay > 15 ~ origin; test: date >= 2000-01-01", pq, "no training rows"},
		{"delay > 15 ~ quantile(origin)", csv, `t.csv: line 2: column "origin": "SEA" is not a finite number`},
		{"delay > 15 ~ hour(origin)", csv, `t.csv: line 2: column "origin": "SEA" is not a time`},
	} {
		s, err := Parse(c.spec)
		if err != nil {
			t.Fatalf("%s: %v", c.spec, err)
		}
		err = func() error {
			f, err := Fit(c.path, s, table.DefaultOptions())
			if err != nil {
				return err
			}
			if _, err := f.Graph(c.path, Train, table.DefaultOptions()); err != nil {
				return err
			}
			_, err = f.Graph(c.path, Test, table.DefaultOptions())
			return err
		}()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s on %s: %v, want an error with %s", c.spec, filepath.Base(c.path), err, c.want)
		}
	}
}

func TestBucketAndLog(t *testing.T) {
	edges := []float64{10, 20}
	for x, want := range map[float64]int{-1: 0, 9.9: 0, 10: 1, 15: 1, 20: 2, 1e9: 2} {
		if got := bucket(edges, x); got != want {
			t.Errorf("bucket(%v) = %d, want %d", x, got, want)
		}
	}
	for x, want := range map[float64]uint64{0: 0, 0.5: 0, 1: 1, 3: 2, 4: 3, 1e300: 63, -1: 65, -4: 67} {
		if got := logBucket(x); got != want {
			t.Errorf("logBucket(%v) = %d, want %d", x, got, want)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add(tinySpec)
	f.Add("y ~ hash(a*b, 3) + std(`c d`) + 1; test: t == \"x\"")
	f.Add("y ~ a*hour(t) + hash(weekday(t)*b, 5)")
	f.Fuzz(func(t *testing.T, text string) {
		s, err := Parse(text)
		if err != nil {
			return
		}
		back, err := Parse(s.Compact())
		if err != nil {
			t.Fatalf("Parse(%q) = %+v, whose compact form %q does not parse: %v", text, s, s.Compact(), err)
		}
		_ = back
	})
}

// TestFitRefusesEmptyField: a feature whose column has no value in any
// training row (all null, or present only in the test rows) is refused
// by Fit, naming the file, the feature and the column; before, it got
// one parameter no row had an edge to, and a spec of that feature alone
// failed in training with "route: empty placement", naming nothing.
func TestFitRefusesEmptyField(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "t.csv")
	text := "date,delay,origin,note,later\n" +
		"2001-01-01 08:00:00,20,SEA,,\n" +
		"2001-01-02 09:00:00,-5,SFO,,\n" +
		"2001-01-03 17:00:00,16,SEA,,\n" +
		"2001-06-01 06:00:00,30,LAX,,5\n"
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	const split = "; test: date >= 2001-06-01"
	for _, c := range []struct{ spec, want string }{
		{"delay > 15 ~ note", `t.csv: feature note: column "note" has no value in any of the 4 training rows: want a column with values`},
		{"delay > 15 ~ origin + note" + split, `feature note: column "note" has no value in any of the 3 training rows`},
		{"delay > 15 ~ origin + later" + split, `feature later: column "later" has no value in any of the 3 training rows`},
		{"delay > 15 ~ origin*note", `t.csv: feature origin*note: no training row of the 4 has a value in every one of its columns "origin", "note"`},
		{"delay > 15 ~ hash(note, 4)", `column "note" has no value`},
		{"delay > 15 ~ log(note)", `column "note" has no value`},
		{"delay > 15 ~ raw(note)", `column "note" has no value`},
		{"delay > 15 ~ std(note)", `column "note" has no value`},
		{"delay > 15 ~ quantile(note, 4)", `column "note" has no value`},
		{"delay > 15 ~ hour(note)", `column "note" has no value`},
	} {
		s, err := Parse(c.spec)
		if err != nil {
			t.Fatalf("%s: %v", c.spec, err)
		}
		f, err := Fit(path, s, table.DefaultOptions())
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: fitted %v, error %v; want an error with %s", c.spec, f, err, c.want)
		}
	}
	// A column with a value in one training row is a field.
	s, err := Parse("delay > 15 ~ origin + later")
	if err != nil {
		t.Fatal(err)
	}
	if f, err := Fit(path, s, table.DefaultOptions()); err != nil || f.Fields[1].Size != 2 {
		t.Errorf("later, valued in one training row: %v, %v", f, err)
	}
}

// TestReadSpecFileKinds: a spec file linked to /dev/zero is refused
// unread by Read and Load, naming it, and so is a features.json FIFO in
// a directory; a spec given through a pipe (--spec <(…)) is read. Before,
// /dev/zero was read until memory ran out and Load waited for ever for
// the FIFO's writer.
func TestReadSpecFileKinds(t *testing.T) {
	dir := t.TempDir()
	zero := filepath.Join(dir, "zero.json")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Skip(err)
	}
	if _, _, err := Read(zero); err == nil || err.Error() != "spec: open "+zero+": a character device: want a regular file" {
		t.Errorf("Read(/dev/zero): %v", err)
	}
	fifoDir := t.TempDir()
	fifo := filepath.Join(fifoDir, FileName)
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skip(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := Load(fifoDir)
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || err.Error() != "open "+fifo+": a named pipe (FIFO): want a regular file" {
			t.Errorf("Load of a FIFO: %v", err)
		}
	case <-time.After(colotest.HangTimeout(t)):
		t.Fatalf("Load of a FIFO has not returned in %v", colotest.HangTimeout(t))
	}
	// A pipe with a writer, as the shell's <(…) gives, is read.
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	go func() {
		w.Write([]byte(`{"label": "delay > 15", "features": [{"columns": ["origin"]}]}`))
		w.Close()
	}()
	s, _, err := Read(fmt.Sprintf("/proc/self/fd/%d", r.Fd()))
	if err != nil || s.Label != "delay > 15" || len(s.Features) != 1 {
		t.Errorf("Read of a pipe: %+v, %v", s, err)
	}
}

// TestLabelNotFinite: a label or test column whose value is NaN or an
// infinity is refused, naming the file, the line and the column, as a
// feature's is; before, "delay > 15" took a delay of nan for 0, a NaN
// compared equal to any literal ("delay == 15" held), and a label column
// of nan trained on NaN, all with exit 0.
func TestLabelNotFinite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.csv")
	text := "date,delay,origin\n" +
		"2001-01-01 08:00:00,20,SEA\n" +
		"2001-01-02 09:00:00,nan,SFO\n" +
		"2001-01-03 17:00:00,-inf,SEA\n"
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ spec, want string }{
		{"delay > 15 ~ origin", `t.csv: line 3: label: column "delay": "nan" is not a finite number to compare with 15`},
		{"delay == 15 ~ origin", `t.csv: line 3: label: column "delay": "nan" is not a finite number to compare with 15`},
		{"delay ~ origin", `t.csv: line 3: label: column "delay": "nan" is not a finite number`},
		{"origin == \"SEA\" ~ origin; test: delay > 0", `t.csv: line 3: test: column "delay": "nan" is not a finite number to compare with 0`},
	} {
		s, err := Parse(c.spec)
		if err != nil {
			t.Fatalf("%s: %v", c.spec, err)
		}
		f, err := Fit(path, s, table.DefaultOptions())
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: fitted %v, error %v; want an error with %s", c.spec, f, err, c.want)
		}
	}
	// A column of floats (Parquet's DOUBLE) holding NaN.
	nan := math.NaN()
	rows := tinyRows()
	rows[1].Score = nan
	pq, _ := writeTable(t, t.TempDir(), rows)
	for _, spec := range []string{"score > 1 ~ origin", "score ~ origin"} {
		s, err := Parse(spec)
		if err != nil {
			t.Fatal(err)
		}
		if f, err := Fit(pq, s, table.DefaultOptions()); err == nil || !strings.Contains(err.Error(), `column "score": NaN is not a finite number`) {
			t.Errorf("%s on Parquet: fitted %v, error %v", spec, f, err)
		}
	}
}
