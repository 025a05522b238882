package features

import (
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"colo/graph"
	"colo/internal/atomicfile"
	"colo/internal/membudget"
	"colo/internal/textio"
	"colo/table"
)

// FileName is the name of the fitted spec in a placement's directory.
const FileName = "features.json"

// sampleSize is the most values of a column a quantile's edges are taken
// from.
const sampleSize = 1 << 17

// logBuckets is the size of a log field: 64 powers of two for each sign.
const logBuckets = 128

// Field is the fitted state of a feature: its range of parameters and
// what it learnt from the training rows.
type Field struct {
	// Name is the feature as the compact form writes it.
	Name string `json:"name"`
	// Base is the id of the field's first parameter; Size the number.
	Base uint64 `json:"base"`
	Size uint64 `json:"size"`
	// Dict are the values of a category with a parameter of their own,
	// sorted: value Dict[i] is parameter Base+1+i; Base is every other
	// value's. A cross's values are joined by the byte 0x1f.
	Dict []string `json:"dict,omitempty"`
	// Edges are a quantile's bucket edges, increasing: x is in bucket
	// the number of edges <= x.
	Edges []float64 `json:"edges,omitempty"`
	// Mean and SD standardise a column.
	Mean float64 `json:"mean,omitempty"`
	SD   float64 `json:"sd,omitempty"`
}

// Fitted is a spec with what it learnt from the training rows of a
// table: the value saved with a placement and a job, so that every
// reading of the table numbers the parameters the same way.
type Fitted struct {
	Spec   Spec    `json:"spec"`
	Fields []Field `json:"fields"`
	// Params is the number of parameter ids (the last is the bias's
	// when Spec.Bias).
	Params uint64 `json:"params"`
	// Rows is the number of training rows fitted on.
	Rows int64 `json:"rows"`
}

// TableOptions returns the options of a table's reader under the memory
// budget limit (package membudget: 0 the machine's default, negative
// none): each row group, or batch of lines, must fit it.
func TableOptions(limit int64) table.Options {
	o := table.DefaultOptions()
	if b := membudget.Resolve(limit); b < math.MaxInt64 {
		o.Memory = b
	}
	return o
}

// Part selects the rows of a table.
type Part int

// The parts of a table.
const (
	// All rows.
	All Part = iota
	// Train is the rows the spec's test predicate does not pick (all
	// rows without one).
	Train
	// Test is the rows the test predicate picks (none without one).
	Test
	// split is Train and Test in one pass (Split).
	split Part = -1
)

// scanner reads the rows of a table for a spec: their labels, whether
// they are test rows, and their columns.
type scanner struct {
	path   string
	spec   Spec
	r      *table.Reader
	pos    map[string]int
	kinds  map[string]table.Kind
	label  evaluator
	test   *evaluator
	labels []float64
	rows   []int
	// inTest marks the test rows among rows (part split only).
	inTest []bool
	// skipped counts rows without a label.
	skipped int64
}

// open opens path for the columns of s and checks their kinds.
func open(path string, s Spec, opt table.Options) (*scanner, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	cols := s.Columns()
	r, err := table.Open(path, cols, opt)
	if err != nil {
		return nil, err
	}
	sc := &scanner{path: path, spec: s, r: r, pos: map[string]int{}, kinds: map[string]table.Kind{}}
	for i, f := range r.Fields() {
		sc.pos[f.Name], sc.kinds[f.Name] = i, f.Kind
	}
	fail := func(what string, err error) (*scanner, error) {
		r.Close()
		return nil, fmt.Errorf("%s: spec %s: %w", path, what, err)
	}
	le, _ := parseExpr(s.Label)
	if sc.label, err = compile(le, sc.kinds[le.col]); err != nil {
		return fail("label", err)
	}
	if s.Test != "" {
		te, _ := parseExpr(s.Test)
		ev, err := compile(te, sc.kinds[te.col])
		if err != nil {
			return fail("test", err)
		}
		sc.test = &ev
	}
	for i, f := range s.Features {
		for _, c := range f.Columns {
			col, part := factorOf(c)
			err := fits(f, col, sc.kinds[col])
			if part != "" {
				err = fits(Feature{Transform: part}, col, sc.kinds[col])
			}
			if err != nil {
				return fail(fmt.Sprintf("feature %d (%s)", i+1, f.Name()), err)
			}
		}
	}
	return sc, nil
}

// factor is a factor of a category's key: a column of the batch, or a
// part of a timestamp column.
type factor struct {
	col  int
	part Transform
}

// factors returns the factors of feature f's key.
func (sc *scanner) factors(f Feature) []factor {
	var out []factor
	for _, c := range f.Columns {
		col, part := factorOf(c)
		out = append(out, factor{sc.pos[col], part})
	}
	return out
}

// fits says whether a column of kind k fits feature f.
func fits(f Feature, col string, k table.Kind) error {
	switch f.Transform {
	case "", Category, Hash:
		if k == table.KindFloat {
			return fmt.Errorf("column %q holds floats: a category wants strings or integers (bucket it: quantile(%s) or log(%s))", col, col, col)
		}
	case Quantile, Log, Standardise, Raw:
		if k == table.KindString || k == table.KindTime {
			return fmt.Errorf("column %q holds %ss: %s wants numbers", col, k, f.Transform)
		}
	case Hour, Weekday, Month, Day:
		if k != table.KindTime && k != table.KindText {
			return fmt.Errorf("column %q holds %s values: %s wants a timestamp", col, k, f.Transform)
		}
	}
	return nil
}

// next reads the next batch and the rows of part in it with their
// labels, or io.EOF.
func (sc *scanner) next(part Part) (*table.Batch, error) {
	b, err := sc.r.Next()
	if err != nil {
		return nil, err
	}
	lc := b.Cols[sc.pos[sc.label.e.col]]
	sc.rows, sc.labels, sc.inTest = sc.rows[:0], sc.labels[:0], sc.inTest[:0]
	for i := 0; i < b.Rows; i++ {
		isTest := false
		if sc.test != nil && part != All {
			tc := b.Cols[sc.pos[sc.test.e.col]]
			v, ok, err := sc.test.value(tc, i)
			if err != nil {
				return nil, fmt.Errorf("%s: %s: test: %w", sc.path, b.Where(i), err)
			}
			isTest = ok && v == 1
		}
		if part != split && isTest != (part == Test) {
			continue
		}
		y, ok, err := sc.label.value(lc, i)
		if err != nil {
			return nil, fmt.Errorf("%s: %s: label: %w", sc.path, b.Where(i), err)
		}
		if !ok {
			sc.skipped++
			continue
		}
		sc.rows = append(sc.rows, i)
		sc.labels = append(sc.labels, y)
		sc.inTest = append(sc.inTest, isTest)
	}
	return b, nil
}

// key appends the category key of row i of the factors fs of b; ok is
// false when a value is missing.
func key(dst []byte, b *table.Batch, fs []factor, i int) (_ []byte, ok bool, err error) {
	for j, f := range fs {
		col := b.Cols[f.col]
		if col.IsNull(i) {
			return dst, false, nil
		}
		if j > 0 {
			dst = append(dst, 0x1f)
		}
		switch {
		case f.part != "":
			p, err := timePart(b, col, i, f.part)
			if err != nil {
				return dst, false, err
			}
			dst = strconv.AppendUint(dst, p, 10)
		case col.Kind == table.KindString || col.Kind == table.KindText:
			dst = append(dst, col.Str(i)...)
		default:
			dst = strconv.AppendInt(dst, col.Ints[i], 10)
		}
	}
	return dst, true, nil
}

// timePart returns part (hour 0..23, weekday 0..6 from Sunday, month
// 0..11, day 0..30) of the time in row i of col.
func timePart(b *table.Batch, col *table.Column, i int, part Transform) (uint64, error) {
	t, ok := col.Time(i)
	if !ok {
		return 0, fmt.Errorf("%s: column %q: %q is not a time", b.Where(i), col.Name, col.Str(i))
	}
	switch part {
	case Hour:
		return uint64(t.Hour()), nil
	case Weekday:
		return uint64(t.Weekday()), nil
	case Month:
		return uint64(t.Month() - 1), nil
	}
	return uint64(t.Day() - 1), nil
}

// number returns row i of col as a number for feature f.
func number(b *table.Batch, col *table.Column, i int) (float64, bool, error) {
	if col.IsNull(i) {
		return 0, false, nil
	}
	x, ok := col.Float(i)
	if !ok || math.IsNaN(x) || math.IsInf(x, 0) {
		return 0, false, fmt.Errorf("%s: column %q: %s is not a finite number", b.Where(i), col.Name, strconv.Quote(string(col.Str(i))))
	}
	return x, true, nil
}

// anyNull reports whether row i of b is missing in one of the columns.
func anyNull(b *table.Batch, cols []int, i int) bool {
	for _, c := range cols {
		if b.Cols[c].IsNull(i) {
			return true
		}
	}
	return false
}

// quoteList writes names quoted and separated by commas.
func quoteList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = strconv.Quote(n)
	}
	return strings.Join(q, ", ")
}

// fitState accumulates what a feature learns in the fitting pass.
type fitState struct {
	cols   []int
	keys   []factor
	counts map[string]int64
	sample []float64
	seen   int64
	rng    *rand.Rand
	n      int64
	mean   float64
	m2     float64
	valued int64 // training rows with a value of every column
}

// Fit reads the training rows of the table at path once and returns the
// spec fitted on them: the dictionaries of its categories, the edges of
// its quantiles and the moments of its standardised columns. Errors name
// the file, the row (row group or line) and the column.
func Fit(path string, s Spec, opt table.Options) (*Fitted, error) {
	sc, err := open(path, s, opt)
	if err != nil {
		return nil, err
	}
	defer sc.r.Close()
	st := make([]fitState, len(s.Features))
	for fi, f := range s.Features {
		for _, c := range f.Columns {
			st[fi].cols = append(st[fi].cols, sc.pos[c])
		}
		st[fi].keys = sc.factors(f)
		switch f.Transform {
		case "", Category:
			st[fi].counts = map[string]int64{}
		case Quantile:
			st[fi].rng = rand.New(rand.NewPCG(uint64(fi)+1, 0x5eed))
		}
	}
	var rows int64
	var buf []byte
	for {
		b, err := sc.next(Train)
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		rows += int64(len(sc.rows))
		for fi, f := range s.Features {
			fs := &st[fi]
			for _, i := range sc.rows {
				switch f.Transform {
				case "", Category:
					var ok bool
					if buf, ok, err = key(buf[:0], b, fs.keys, i); err != nil {
						return nil, fmt.Errorf("%s: %w", path, err)
					} else if ok {
						fs.counts[string(buf)]++
						fs.valued++
					}
				case Quantile, Standardise:
					x, ok, err := number(b, b.Cols[fs.cols[0]], i)
					if err != nil {
						return nil, fmt.Errorf("%s: %w", path, err)
					}
					if !ok {
						continue
					}
					fs.valued++
					if f.Transform == Standardise {
						fs.n++
						d := x - fs.mean
						fs.mean += d / float64(fs.n)
						fs.m2 += d * (x - fs.mean)
						continue
					}
					fs.seen++
					if len(fs.sample) < sampleSize {
						fs.sample = append(fs.sample, x)
					} else if j := fs.rng.Int64N(fs.seen); j < sampleSize {
						fs.sample[j] = x
					}
				default:
					if !anyNull(b, fs.cols, i) {
						fs.valued++
					}
				}
			}
		}
	}
	if rows == 0 {
		return nil, fmt.Errorf("%s: no training rows with a label (%d rows without one)", path, sc.skipped)
	}
	// A field without a value in any training row has nothing to learn
	// and gives no row an edge: a column that is all null (or, for a
	// cross, columns never present together) is a mistake to name, not
	// a field to train on in silence.
	for fi, f := range s.Features {
		if st[fi].valued > 0 {
			continue
		}
		if len(f.Columns) == 1 {
			return nil, fmt.Errorf("%s: feature %s: column %q has no value in any of the %d training rows: want a column with values", path, f.Name(), f.Columns[0], rows)
		}
		return nil, fmt.Errorf("%s: feature %s: no training row of the %d has a value in every one of its columns %s", path, f.Name(), rows, quoteList(f.Columns))
	}
	fit := &Fitted{Spec: s, Rows: rows}
	var base uint64
	for fi, f := range s.Features {
		fs := &st[fi]
		fd := Field{Name: f.Name(), Base: base}
		switch f.Transform {
		case "", Category:
			for v, n := range fs.counts {
				if n >= int64(max(f.MinCount, 1)) {
					fd.Dict = append(fd.Dict, v)
				}
			}
			slices.Sort(fd.Dict)
			fd.Size = uint64(len(fd.Dict)) + 1
		case Hash:
			fd.Size = 1 << f.bits()
		case Quantile:
			fd.Edges = quantileEdges(fs.sample, f.buckets())
			fd.Size = uint64(len(fd.Edges)) + 1
		case Log:
			fd.Size = logBuckets
		case Standardise:
			fd.Mean, fd.SD = fs.mean, 1
			if fs.n > 1 {
				if sd := math.Sqrt(fs.m2 / float64(fs.n-1)); sd > 0 {
					fd.SD = sd
				}
			}
			fd.Size = 1
		case Raw:
			fd.Size = 1
		case Hour:
			fd.Size = 24
		case Weekday:
			fd.Size = 7
		case Month:
			fd.Size = 12
		case Day:
			fd.Size = 31
		}
		fit.Fields = append(fit.Fields, fd)
		base += fd.Size
	}
	if s.Bias {
		base++
	}
	fit.Params = base
	return fit, nil
}

// quantileEdges returns the distinct values at the quantiles k/buckets of
// sample (k = 1..buckets-1).
func quantileEdges(sample []float64, buckets int) []float64 {
	if len(sample) == 0 {
		return nil
	}
	s := slices.Clone(sample)
	slices.Sort(s)
	var edges []float64
	for k := 1; k < buckets; k++ {
		e := s[min(len(s)-1, k*len(s)/buckets)]
		if len(edges) == 0 || e > edges[len(edges)-1] {
			edges = append(edges, e)
		}
	}
	// An edge at the smallest value would leave bucket 0 empty.
	if len(edges) > 0 && edges[0] == s[0] {
		edges = edges[1:]
	}
	return edges
}

// Validate checks that f is consistent: its spec valid, one field per
// feature, the ranges consecutive.
func (f *Fitted) Validate() error {
	if err := f.Spec.Validate(); err != nil {
		return err
	}
	if len(f.Fields) != len(f.Spec.Features) {
		return fmt.Errorf("fitted spec: %d fields for %d features", len(f.Fields), len(f.Spec.Features))
	}
	var base uint64
	for i, fd := range f.Fields {
		ft := f.Spec.Features[i]
		if fd.Base != base || fd.Size == 0 {
			return fmt.Errorf("fitted spec: field %d (%s): parameters from %d, %d of them: want from %d, at least one", i+1, fd.Name, fd.Base, fd.Size, base)
		}
		if (ft.Transform == "" || ft.Transform == Category) && fd.Size != uint64(len(fd.Dict))+1 {
			return fmt.Errorf("fitted spec: field %d (%s): %d parameters for a dictionary of %d", i+1, fd.Name, fd.Size, len(fd.Dict))
		}
		if !slices.IsSorted(fd.Dict) || !slices.IsSorted(fd.Edges) {
			return fmt.Errorf("fitted spec: field %d (%s): dictionary or edges not sorted", i+1, fd.Name)
		}
		if ft.Transform == Quantile && fd.Size != uint64(len(fd.Edges))+1 {
			return fmt.Errorf("fitted spec: field %d (%s): %d parameters for %d edges", i+1, fd.Name, fd.Size, len(fd.Edges))
		}
		if fd.SD < 0 || math.IsNaN(fd.SD) || math.IsNaN(fd.Mean) {
			return fmt.Errorf("fitted spec: field %d (%s): sd %v, mean %v", i+1, fd.Name, fd.SD, fd.Mean)
		}
		base += fd.Size
	}
	if f.Spec.Bias {
		base++
	}
	if f.Params != base {
		return fmt.Errorf("fitted spec: %d parameters, the fields have %d", f.Params, base)
	}
	return nil
}

// DecodeFitted reads a fitted spec from its JSON and checks it.
func DecodeFitted(data []byte) (*Fitted, error) {
	var f Fitted
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, err
	}
	if err := f.Validate(); err != nil {
		return nil, err
	}
	return &f, nil
}

// Save writes f as dir/features.json, atomically.
func (f *Fitted) Save(dir string) error {
	data, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(filepath.Join(dir, FileName), func(w io.Writer) error {
		_, err := w.Write(append(data, '\n'))
		return err
	})
}

// Load reads dir/features.json; it returns nil and no error when there is
// none.
func Load(dir string) (*Fitted, error) {
	path := filepath.Join(dir, FileName)
	data, err := textio.ReadRegular(path, MaxFile)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	f, err := DecodeFitted(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return f, nil
}

// Graph reads the rows of part of the table at path and returns their
// graph: a sample per row with a label, the edges of its fields (ids
// Base+index) and, for standardised and raw fields, their values. Rows
// without a label are left out. Errors name the file, the row and the
// column.
func (f *Fitted) Graph(path string, part Part, opt table.Options) (*graph.Graph, error) {
	if part == split {
		return nil, fmt.Errorf("features: Graph of part %d: want All, Train or Test", part)
	}
	gs, err := f.graphs(path, part, opt)
	if err != nil {
		return nil, err
	}
	return gs[0], nil
}

// Split is Graph of the training rows and of the test rows (the spec's
// test predicate picks them) in one pass over the table.
func (f *Fitted) Split(path string, opt table.Options) (train, test *graph.Graph, err error) {
	if f.Spec.Test == "" {
		return nil, nil, fmt.Errorf("%s: spec %s has no test predicate to split the table by", path, f.Spec.Compact())
	}
	gs, err := f.graphs(path, split, opt)
	if err != nil {
		return nil, nil, err
	}
	return gs[0], gs[1], nil
}

// Samples passes the parameter ids of each row of part of the table at
// path to sample, sorted and distinct, in row order: the samples of
// Graph's graph, one row group held at a time (out-of-core placement).
func (f *Fitted) Samples(path string, part Part, opt table.Options, sample func(ids []uint64) error) error {
	if part == split {
		return fmt.Errorf("features: Samples of part %d: want All, Train or Test", part)
	}
	_, err := f.rows(path, part, opt, func(_ int, _ float64, ids []uint64, _ []float32) error { return sample(ids) })
	return err
}

// graphs builds the graph of part, or of the training and the test rows
// for split.
func (f *Fitted) graphs(path string, part Part, opt table.Options) ([]*graph.Graph, error) {
	parts := []Part{part}
	if part == split {
		parts = []Part{Train, Test}
	}
	builders := make([]*graph.Builder, len(parts))
	for i := range builders {
		builders[i] = graph.NewBuilder(graph.Meta{Format: "table", Source: path})
		builders[i].SetHasLabels()
		builders[i].SetDupPolicy(graph.DupSum)
	}
	if _, err := f.rows(path, part, opt, func(target int, label float64, ids []uint64, vals []float32) error {
		return builders[target].AddSample(label, ids, vals)
	}); err != nil {
		return nil, err
	}
	gs := make([]*graph.Graph, len(builders))
	for i, b := range builders {
		if b.NumSamples() == 0 {
			what := map[Part]string{All: "rows", Train: "training rows", Test: "test rows"}[parts[i]]
			return nil, fmt.Errorf("%s: no %s with a label (spec %s)", path, what, f.Spec.Compact())
		}
		g, err := b.Build()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		gs[i] = g
	}
	return gs, nil
}

// rows reads the rows of part of the table at path and passes each to
// emit with its target (0, or 1 for a test row of split), label, sorted
// parameter ids and values (nil when every value is 1); the slices are
// reused. It returns the number of rows passed.
func (f *Fitted) rows(path string, part Part, opt table.Options, emit func(target int, label float64, ids []uint64, vals []float32) error) (int64, error) {
	if err := f.Validate(); err != nil {
		return 0, err
	}
	sc, err := open(path, f.Spec, opt)
	if err != nil {
		return 0, err
	}
	defer sc.r.Close()
	type fieldRun struct {
		cols []int
		keys []factor
		dict map[string]uint32
		mask uint64
		seed []byte
	}
	runs := make([]fieldRun, len(f.Fields))
	valued := false
	for fi, ft := range f.Spec.Features {
		fr := &runs[fi]
		for _, c := range ft.Columns {
			fr.cols = append(fr.cols, sc.pos[c])
		}
		fr.keys = sc.factors(ft)
		switch ft.Transform {
		case "", Category:
			fr.dict = make(map[string]uint32, len(f.Fields[fi].Dict))
			for i, v := range f.Fields[fi].Dict {
				fr.dict[v] = uint32(i + 1)
			}
		case Hash:
			fr.mask = f.Fields[fi].Size - 1
			fr.seed = []byte(f.Fields[fi].Name)
		case Standardise, Raw:
			valued = true
		}
	}
	ids := make([]uint64, 0, len(f.Fields)+1)
	var vals []float32
	var buf []byte
	var n int64
	for {
		batch, err := sc.next(part)
		if err == io.EOF {
			break
		}
		if err != nil {
			return n, err
		}
		for k, i := range sc.rows {
			ids = ids[:0]
			if valued {
				vals = vals[:0]
			}
			for fi := range f.Fields {
				fd, fr := &f.Fields[fi], &runs[fi]
				idx, val, ok := uint64(0), float32(1), true
				switch f.Spec.Features[fi].Transform {
				case "", Category:
					if buf, ok, err = key(buf[:0], batch, fr.keys, i); err != nil {
						return n, fmt.Errorf("%s: %w", path, err)
					} else if ok {
						idx = uint64(fr.dict[string(buf)])
					}
				case Hash:
					if buf, ok, err = key(append(buf[:0], fr.seed...), batch, fr.keys, i); err != nil {
						return n, fmt.Errorf("%s: %w", path, err)
					} else if ok {
						h := fnv.New64a()
						h.Write(buf)
						idx = mix(h.Sum64()) & fr.mask
					}
				case Quantile, Log, Standardise, Raw:
					var x float64
					x, ok, err = number(batch, batch.Cols[fr.cols[0]], i)
					if err != nil {
						return n, fmt.Errorf("%s: %w", path, err)
					}
					switch f.Spec.Features[fi].Transform {
					case Quantile:
						idx = uint64(bucket(fd.Edges, x))
					case Log:
						idx = logBucket(x)
					case Standardise:
						val = float32((x - fd.Mean) / fd.SD)
					case Raw:
						val = float32(x)
					}
				default:
					col := batch.Cols[fr.cols[0]]
					if col.IsNull(i) {
						ok = false
						break
					}
					if idx, err = timePart(batch, col, i, f.Spec.Features[fi].Transform); err != nil {
						return n, fmt.Errorf("%s: %w", path, err)
					}
				}
				if !ok {
					continue
				}
				ids = append(ids, fd.Base+idx)
				if valued {
					vals = append(vals, val)
				}
			}
			if f.Spec.Bias {
				ids = append(ids, f.Params-1)
				if valued {
					vals = append(vals, 1)
				}
			}
			var v []float32
			if valued {
				v = vals
			}
			target := 0
			if part == split && sc.inTest[k] {
				target = 1
			}
			if err := emit(target, sc.labels[k], ids, v); err != nil {
				return n, fmt.Errorf("%s: %s: %w", path, batch.Where(i), err)
			}
			n++
		}
	}
	return n, nil
}

// mix is the SplitMix64 finaliser.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}

// bucket returns the number of edges <= x.
func bucket(edges []float64, x float64) int {
	i, found := slices.BinarySearch(edges, x)
	if found {
		i++
	}
	return i
}

// logBucket returns the log field's index of x: the bit length of
// floor(|x|) (0..63), plus 64 for a negative x.
func logBucket(x float64) uint64 {
	a := math.Abs(x)
	b := uint64(0)
	if a >= 1 {
		b = uint64(min(math.Floor(math.Log2(a))+1, 63))
	}
	if x < 0 {
		b += 64
	}
	return b
}
