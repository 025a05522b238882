package clib

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"sync"

	"colo/kv"
	"colo/ps/update"
	"colo/ps/worker"
)

// TableSpec declares a table.
type TableSpec struct {
	// Name names the table in errors; unique in a session.
	Name string `json:"name"`
	// Rows and Dim shape a sparse table.
	Rows int64 `json:"rows,omitempty"`
	Dim  int   `json:"dim,omitempty"`
	// Dense makes a dense table of Size values.
	Dense bool  `json:"dense,omitempty"`
	Size  int64 `json:"size,omitempty"`
	// Placed keys row r as r, the placement's parameter r (the routing
	// table's first NumKeys keys), instead of spreading the rows.
	Placed bool `json:"placed,omitempty"`
	// Rule, when not nil, is the update rule the table expects of the
	// servers: Declare fails when the session knows the servers' rule
	// and it differs.
	Rule *update.Config `json:"rule,omitempty"`
	// Init is the initial value of a sparse table's rows.
	Init Init `json:"init"`
}

// Init is the initial value of a sparse table's rows, a function of
// (Seed, table, row, column) that every worker computes alike.
type Init struct {
	// Name is zeros (the default), normal (Mean, Std) or uniform
	// [Low, High).
	Name      string  `json:"name"`
	Mean, Std float64 `json:"-"`
	Low, High float64 `json:"-"`
	Seed      uint64  `json:"seed"`
}

// UnmarshalJSON reads Init with its parameters in lower case.
func (in *Init) UnmarshalJSON(b []byte) error {
	var v struct {
		Name string  `json:"name"`
		Mean float64 `json:"mean"`
		Std  float64 `json:"std"`
		Low  float64 `json:"low"`
		High float64 `json:"high"`
		Seed uint64  `json:"seed"`
	}
	if err := decodeStrict(b, &v); err != nil {
		return err
	}
	*in = Init{Name: v.Name, Mean: v.Mean, Std: v.Std, Low: v.Low, High: v.High, Seed: v.Seed}
	return nil
}

// decodeStrict decodes JSON refusing unknown fields.
func decodeStrict(b []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	return d.Decode(v)
}

// Validate checks spec; errors name the table and the field.
func (spec TableSpec) Validate() error {
	if spec.Name == "" {
		return fmt.Errorf("table: name is empty")
	}
	q := fmt.Sprintf("table %q", spec.Name)
	if spec.Dense {
		if spec.Size < 1 || spec.Size > 1<<40 {
			return fmt.Errorf("%s: size %d out of range [1, 2^40]", q, spec.Size)
		}
		if spec.Placed || spec.Rows != 0 || spec.Dim != 0 {
			return fmt.Errorf("%s: a dense table has a size, not rows, dim or placed", q)
		}
	} else {
		if spec.Rows < 1 || spec.Rows > 1<<48 {
			return fmt.Errorf("%s: rows %d out of range [1, 2^48]", q, spec.Rows)
		}
		if spec.Dim < 1 || spec.Dim > 1<<20 {
			return fmt.Errorf("%s: dim %d out of range [1, 2^20]", q, spec.Dim)
		}
	}
	switch spec.Init.Name {
	case "", "zeros":
	case "normal":
		if !(spec.Init.Std >= 0) || math.IsInf(spec.Init.Std, 0) || math.IsNaN(spec.Init.Mean) || math.IsInf(spec.Init.Mean, 0) {
			return fmt.Errorf("%s: init normal(mean %v, std %v): want finite numbers, std ≥ 0", q, spec.Init.Mean, spec.Init.Std)
		}
	case "uniform":
		if !(spec.Init.Low <= spec.Init.High) || math.IsInf(spec.Init.Low, 0) || math.IsInf(spec.Init.High, 0) {
			return fmt.Errorf("%s: init uniform[%v, %v): want finite low ≤ high", q, spec.Init.Low, spec.Init.High)
		}
	default:
		return fmt.Errorf("%s: init %q: zeros, normal or uniform", q, spec.Init.Name)
	}
	if spec.Dense && spec.Init.Name != "" && spec.Init.Name != "zeros" {
		return fmt.Errorf("%s: a dense table's initial values are the caller's, not init %q", q, spec.Init.Name)
	}
	if spec.Rule != nil {
		if err := spec.Rule.Validate(); err != nil {
			return fmt.Errorf("%s: %w", q, err)
		}
		if spec.Rule.L1 != 0 || spec.Rule.L2 != 0 || spec.Rule.Name == "ftrl" {
			return fmt.Errorf("%s: rule %s with l1 %v, l2 %v: the servers hold displacements from the initial values, so weight decay and FTRL are not available (want l1 = l2 = 0)", q, spec.Rule.Name, spec.Rule.L1, spec.Rule.L2)
		}
	}
	return nil
}

// shape says how a spec lays out its keys.
func (spec TableSpec) shape() (rows int64, dim, last int) {
	if !spec.Dense {
		return spec.Rows, spec.Dim, spec.Dim
	}
	c := int64(DenseChunk)
	rows = (spec.Size + c - 1) / c
	if rows == 1 {
		return 1, int(spec.Size), int(spec.Size)
	}
	return rows, DenseChunk, int(spec.Size - (rows-1)*c)
}

// Table is a declared table.
type Table struct {
	s    *Session
	spec TableSpec
	id   int
	rows int64
	dim  int
	last int // values of the last row (dense tables)
	// Row r < split (a placed table's rows the placement names) has key
	// r, any other base + (r − split)·stride.
	split  int64
	base   uint64
	stride uint64
	lens   []int32 // per-key lengths of a whole dense table
	allKey []uint64
	// direct holds key arrays for pulls and pushes, put back only by a
	// call its machine's server served before it returned
	// (worker.Future.Direct): one sent as messages may be read until it
	// is sent.
	direct sync.Pool // *[]uint64
	// answers holds *kv.Batch for pulls' answers, whose arrays of
	// lengths are reused from pull to pull.
	answers sync.Pool
	// Unique's scratch: a bit per row and each row's place.
	mark sync.Mutex
	bits []uint64
	slot []int32
}

// Spec returns the table's declaration.
func (t *Table) Spec() TableSpec { return t.spec }

// ID returns the table's index in its session.
func (t *Table) ID() int { return t.id }

// Declare declares a table, or returns the one declared before under the
// same name with the same shape. Every worker declares the same tables
// in the same order: Declare all-reduces a fingerprint of each new one
// and fails, naming the table, when the workers disagree.
func (s *Session) Declare(ctx context.Context, spec TableSpec) (*Table, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	q := fmt.Sprintf("table %q", spec.Name)
	if spec.Rule != nil && s.rule != nil && !sameRule(*spec.Rule, *s.rule) {
		return nil, &SpecError{fmt.Sprintf("%s: optimizer %s, but the servers run %s (one rule serves every key; %s)", q, ruleString(*spec.Rule), ruleString(*s.rule), startWith(*spec.Rule))}
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, ErrClosed
	}
	if old, ok := s.byName[spec.Name]; ok {
		s.mu.Unlock()
		o := old.spec
		if o.Rows != spec.Rows || o.Dim != spec.Dim || o.Dense != spec.Dense || o.Size != spec.Size || o.Placed != spec.Placed {
			return nil, &SpecError{fmt.Sprintf("%s declared again as %s, was %s", q, shapeString(spec), shapeString(o))}
		}
		if o.Init != spec.Init {
			return nil, &SpecError{fmt.Sprintf("%s declared again with init %+v, was %+v", q, spec.Init, o.Init)}
		}
		return old, nil
	}
	if len(s.tables) >= MaxTables {
		s.mu.Unlock()
		return nil, fmt.Errorf("%s: a session holds at most %d tables", q, MaxTables)
	}
	if spec.Placed {
		for _, o := range s.tables {
			if o.spec.Placed {
				s.mu.Unlock()
				return nil, &SpecError{fmt.Sprintf("%s: placed, but table %q is placed already: the placement's parameters are one set of keys", q, o.spec.Name)}
			}
		}
	}
	rows, dim, last := spec.shape()
	t := &Table{s: s, spec: spec, id: len(s.tables), rows: rows, dim: dim, last: last}
	var err error
	if t.split, t.base, t.stride, err = layout(s.lo, t.id, rows, spec.Placed); err != nil {
		s.mu.Unlock()
		return nil, fmt.Errorf("%s: %w", q, err)
	}
	if spec.Dense {
		t.lens = make([]int32, rows)
		t.allKey = make([]uint64, rows)
		for i := range t.lens {
			t.lens[i] = int32(dim)
			t.allKey[i] = t.key(int64(i))
		}
		t.lens[rows-1] = int32(last)
	}
	s.tables = append(s.tables, t)
	s.byName[spec.Name] = t
	s.mu.Unlock()
	// The workers agree on the tables, or the keys mean different rows:
	// checked before the servers hear of the table, so that workers that
	// disagree all get this error.
	fp := fingerprint(spec)
	vals := []float64{fp, 1}
	if err := s.AllReduce(ctx, vals); err != nil {
		return nil, fmt.Errorf("%s: declaring it with the other workers: %w", q, err)
	}
	if vals[0] != fp*vals[1] {
		return nil, &SpecError{fmt.Sprintf("%s (table %d of this worker): the workers declared different tables in this place; every worker declares the same tables, with the same shapes, in the same order", q, t.id)}
	}
	// The servers find the spread rows' keys by arithmetic (before any
	// push of this worker reaches them).
	if n := rows - t.split; n > 0 {
		if err := s.w.Family(ctx, t.base, t.stride, uint64(n)); err != nil {
			return nil, fmt.Errorf("%s: %w", q, err)
		}
	}
	return t, nil
}

func shapeString(s TableSpec) string {
	p := ""
	if s.Placed {
		p = ", placed"
	}
	if s.Dense {
		return fmt.Sprintf("dense of %d values", s.Size)
	}
	return fmt.Sprintf("%d rows × %d%s", s.Rows, s.Dim, p)
}

// layout returns the keys of table id of rows rows above the
// placement's lo keys (see the package doc): row r < split has key r,
// any other base + (r − split)·stride.
func layout(lo uint64, id int, rows int64, placed bool) (split int64, base, stride uint64, err error) {
	base = lo + uint64(id)
	if placed {
		if lo == 0 {
			return 0, 0, 0, &SpecError{"placed, but the job has no placement (colo run --placement)"}
		}
		// Rows the placement does not name go above its keys, 256 apart.
		return int64(min(lo, uint64(rows))), base, 256, nil
	}
	stride = ((math.MaxUint64 - lo) / uint64(rows)) &^ 255
	if stride < 256 {
		return 0, 0, 0, fmt.Errorf("%d rows do not fit the key space above the placement's %d keys", rows, lo)
	}
	return 0, base, stride, nil
}

// key returns row r's key.
func (t *Table) key(r int64) uint64 {
	if r < t.split {
		return uint64(r)
	}
	return t.base + uint64(r-t.split)*t.stride
}

// keyArray returns an array of at least n keys from t.direct.
func (t *Table) keyArray(n int) *[]uint64 {
	kp, _ := t.direct.Get().(*[]uint64)
	if kp == nil {
		kp = new([]uint64)
	}
	if cap(*kp) < n {
		*kp = make([]uint64, n)
	}
	return kp
}

// keysTo checks rows (ascending, unique, in range) and writes their
// keys to ks (len(rows) long). A key array goes back to t.direct only
// when the call was served before it returned: the worker's requests
// read it until they are sent, and a call can complete first (a failure
// or a pause ends it while its requests still wait in the outbox).
func (t *Table) keysTo(ks []uint64, rows []int64) ([]uint64, error) {
	prev := int64(-1)
	for i, r := range rows {
		if r < 0 || r >= t.rows {
			return nil, &IndexError{fmt.Sprintf("table %q: row %d (index %d of %d) out of range [0, %d)", t.spec.Name, r, i, len(rows), t.rows)}
		}
		if r <= prev {
			return nil, fmt.Errorf("table %q: rows must ascend without repeats: row %d at index %d follows %d", t.spec.Name, r, i, prev)
		}
		prev = r
		ks[i] = t.key(r)
	}
	return ks, nil
}

// SpecError is the error of a declaration that contradicts an earlier
// one, the servers' rule or the other workers' declarations.
type SpecError struct{ Msg string }

func (e *SpecError) Error() string { return e.Msg }

// IndexError is the error of a row out of a table's range.
type IndexError struct{ Msg string }

func (e *IndexError) Error() string { return e.Msg }

// Ticket is an asynchronous pull or push: Wait for its outcome. The
// arrays it was given stay in use until then.
type Ticket struct {
	fut  *worker.Future
	once sync.Once
	fin  func(error) error
	err  error
}

// Done reports whether Wait would return at once.
func (k *Ticket) Done() bool {
	select {
	case <-k.fut.Done():
		return true
	default:
		return false
	}
}

// Wait waits for the call and returns its outcome; later calls return
// the same.
func (k *Ticket) Wait() error {
	k.once.Do(func() {
		err := k.fut.Wait()
		if k.fin != nil {
			err = k.fin(err)
		}
		k.err = err
	})
	return k.err
}

// Pull fills dst (len(rows)·dim values, row after row) with the values
// of rows, which ascend without repeats. The values arrive when the
// ticket is waited for.
func (t *Table) Pull(rows []int64, dst []float32) (*Ticket, error) {
	if t.spec.Dense {
		return nil, fmt.Errorf("table %q is dense: pull it whole (PullAll)", t.spec.Name)
	}
	if len(dst) != len(rows)*t.dim {
		return nil, fmt.Errorf("table %q: pull of %d rows of dim %d into %d values, want %d", t.spec.Name, len(rows), t.dim, len(dst), len(rows)*t.dim)
	}
	kp := t.keyArray(len(rows))
	ks, err := t.keysTo((*kp)[:len(rows)], rows)
	if err != nil {
		t.direct.Put(kp)
		return nil, err
	}
	b, _ := t.answers.Get().(*kv.Batch)
	if b == nil {
		b = new(kv.Batch)
	}
	// The lengths' array is reused; a pull of no rows answers none.
	b.Keys, b.Vals, b.Lens = nil, dst[:0:len(dst)], b.Lens[:0]
	fut := t.s.w.PullLens(ks, b)
	return &Ticket{fut: fut, fin: func(err error) error {
		if fut.Direct() {
			t.direct.Put(kp)
		}
		if err == nil {
			err = t.land(b, dst, nil)
		}
		b.Keys, b.Vals = nil, nil
		t.answers.Put(b)
		if err == nil && t.spec.Init.Name != "" && t.spec.Init.Name != "zeros" {
			t.addInit(rows, dst)
		}
		if err != nil {
			return fmt.Errorf("table %q: pull of %d rows: %w", t.spec.Name, len(rows), err)
		}
		return nil
	}}, nil
}

// PullAll fills dst (Size values) with a dense table.
func (t *Table) PullAll(dst []float32) (*Ticket, error) {
	if !t.spec.Dense {
		return nil, fmt.Errorf("table %q is sparse: pull rows of it (Pull)", t.spec.Name)
	}
	if int64(len(dst)) != t.spec.Size {
		return nil, fmt.Errorf("table %q: pull of %d values into %d", t.spec.Name, t.spec.Size, len(dst))
	}
	b := &kv.Batch{Vals: dst[:0:len(dst)]}
	fut := t.s.w.PullLens(t.allKey, b)
	return &Ticket{fut: fut, fin: func(err error) error {
		if err == nil {
			err = t.land(b, dst, t.lens)
		}
		if err != nil {
			return fmt.Errorf("table %q: pull: %w", t.spec.Name, err)
		}
		return nil
	}}, nil
}

// land puts the answer b of a pull in place in dst: keys never pushed
// have no values in b and get zeros. want has each key's length (nil:
// dim each).
func (t *Table) land(b *kv.Batch, dst []float32, want []int32) error {
	n := len(b.Lens)
	keys := len(want)
	if want == nil {
		keys = len(dst) / t.dim
	}
	if n != keys {
		return fmt.Errorf("%d lengths answered for %d rows", n, keys)
	}
	wantOf := func(i int) int {
		if want != nil {
			return int(want[i])
		}
		return t.dim
	}
	if len(b.Vals) == len(dst) && len(b.Vals) > 0 && &b.Vals[0] == &dst[0] {
		return t.checkLens(b, wantOf) // every key answered in place
	}
	if err := t.checkLens(b, wantOf); err != nil {
		return err
	}
	if len(b.Vals) > 0 && &b.Vals[0] != &dst[0] {
		// The answer did not fit in place: it cannot be well formed.
		return fmt.Errorf("%d values answered for %d", len(b.Vals), len(dst))
	}
	// Move each answered key to its place, from the back.
	src, off := len(b.Vals), len(dst)
	for i := n - 1; i >= 0; i-- {
		w := wantOf(i)
		off -= w
		if b.Lens[i] == 0 {
			clear(dst[off : off+w])
			continue
		}
		src -= w
		if src != off {
			copy(dst[off:off+w], dst[src:src+w])
		}
	}
	return nil
}

// checkLens checks that each key came with its length or none.
func (t *Table) checkLens(b *kv.Batch, wantOf func(int) int) error {
	if len(t.lens) == 0 {
		// A sparse table: every row has dim values.
		d := int32(t.dim)
		for i, l := range b.Lens {
			if l != 0 && l != d {
				return fmt.Errorf("row %d has %d values on the servers, want %d (another program used these keys)", i, l, d)
			}
		}
		return nil
	}
	for i, l := range b.Lens {
		if l != 0 && int(l) != wantOf(i) {
			return fmt.Errorf("row %d has %d values on the servers, want %d (another program used these keys)", i, l, wantOf(i))
		}
	}
	return nil
}

// Push sends vals (len(rows)·dim values) to rows, which ascend without
// repeats, and ends the worker's round. vals is read until the ticket is
// waited for.
func (t *Table) Push(rows []int64, vals []float32) (*Ticket, error) {
	if t.spec.Dense {
		return nil, fmt.Errorf("table %q is dense: push it whole (PushAll)", t.spec.Name)
	}
	if len(vals) != len(rows)*t.dim {
		return nil, fmt.Errorf("table %q: push of %d rows of dim %d with %d values, want %d", t.spec.Name, len(rows), t.dim, len(vals), len(rows)*t.dim)
	}
	kp := t.keyArray(len(rows))
	ks, err := t.keysTo((*kp)[:len(rows)], rows)
	if err != nil {
		t.direct.Put(kp)
		return nil, err
	}
	fut := t.s.w.Push(ks, vals)
	if fut.Direct() {
		t.direct.Put(kp) // taken by the server before Push returned
	}
	t.s.sent(fut)
	return &Ticket{fut: fut, fin: func(err error) error {
		if err != nil {
			return fmt.Errorf("table %q: push of %d rows: %w", t.spec.Name, len(rows), err)
		}
		return nil
	}}, nil
}

// PushAll sends vals (Size values) to a dense table and ends the round.
func (t *Table) PushAll(vals []float32) (*Ticket, error) {
	if !t.spec.Dense {
		return nil, fmt.Errorf("table %q is sparse: push rows of it (Push)", t.spec.Name)
	}
	if int64(len(vals)) != t.spec.Size {
		return nil, fmt.Errorf("table %q: push of %d values for %d", t.spec.Name, len(vals), t.spec.Size)
	}
	fut := t.s.w.PushLens(t.allKey, vals, t.lens)
	t.s.sent(fut)
	return &Ticket{fut: fut, fin: func(err error) error {
		if err != nil {
			return fmt.Errorf("table %q: push: %w", t.spec.Name, err)
		}
		return nil
	}}, nil
}

// InitRows writes the initial values of rows (any order) into dst.
func (t *Table) InitRows(rows []int64, dst []float32) error {
	if t.spec.Dense {
		return fmt.Errorf("table %q is dense: its initial values are the caller's", t.spec.Name)
	}
	if len(dst) != len(rows)*t.dim {
		return fmt.Errorf("table %q: initial values of %d rows of dim %d into %d values", t.spec.Name, len(rows), t.dim, len(dst))
	}
	for i, r := range rows {
		if r < 0 || r >= t.rows {
			return &IndexError{fmt.Sprintf("table %q: row %d (index %d) out of range [0, %d)", t.spec.Name, r, i, t.rows)}
		}
	}
	clear(dst)
	t.addInit(rows, dst)
	return nil
}

// addInit adds the initial values of rows to dst.
func (t *Table) addInit(rows []int64, dst []float32) {
	in := t.spec.Init
	d := t.dim
	for i, r := range rows {
		row := dst[i*d : (i+1)*d]
		seed := in.Seed ^ (uint64(t.id)+1)*0x9e3779b97f4a7c15 ^ uint64(r)*0xbf58476d1ce4e5b9
		switch in.Name {
		case "normal":
			for j := 0; j < d; j += 2 {
				a, b := normalPair(seed, uint64(j))
				row[j] += float32(in.Mean + in.Std*a)
				if j+1 < d {
					row[j+1] += float32(in.Mean + in.Std*b)
				}
			}
		case "uniform":
			for j := range row {
				row[j] += float32(in.Low + (in.High-in.Low)*unit(mix(seed+uint64(j)*0x94d049bb133111eb)))
			}
		}
	}
}

// mix is splitmix64's finaliser.
func mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// unit maps x to [0, 1).
func unit(x uint64) float64 { return float64(x>>11) / (1 << 53) }

// normalPair returns two standard normal numbers for (seed, j), by
// Box–Muller.
func normalPair(seed, j uint64) (float64, float64) {
	u1 := 1 - unit(mix(seed+j*0x94d049bb133111eb)) // (0, 1]
	u2 := unit(mix(seed + j*0x94d049bb133111eb + 1))
	r := math.Sqrt(-2 * math.Log(u1))
	s, c := math.Sincos(2 * math.Pi * u2)
	return r * c, r * s
}

// maxMarked bounds the rows of a table whose Unique marks rows in arrays
// the size of the table (a bitmap and a slot per row); larger tables
// sort instead.
const maxMarked = 1 << 24

// Unique writes the distinct rows of idx, ascending, to uniq (len(idx)
// values at least) and to inv[i] the position in uniq of idx[i], and
// returns the number of distinct rows: what a layer pulls for a batch.
// Rows out of range are an *IndexError naming the first. It costs
// O(len(idx) + rows/64) for tables of up to 2^24 rows, O(n log n)
// beyond; it is safe for concurrent use.
func (t *Table) Unique(idx, uniq, inv []int64) (int, error) {
	if len(uniq) < len(idx) || len(inv) < len(idx) {
		return 0, fmt.Errorf("table %q: unique of %d rows into %d and %d values", t.spec.Name, len(idx), len(uniq), len(inv))
	}
	for i, r := range idx {
		if r < 0 || r >= t.rows {
			return 0, &IndexError{fmt.Sprintf("table %q: row %d (index %d of %d) out of range [0, %d)", t.spec.Name, r, i, len(idx), t.rows)}
		}
	}
	if t.rows > maxMarked {
		return t.uniqueSorted(idx, uniq, inv), nil
	}
	t.mark.Lock()
	defer t.mark.Unlock()
	if t.bits == nil {
		t.bits = make([]uint64, (t.rows+63)/64)
		t.slot = make([]int32, t.rows)
	}
	lo, hi := t.rows, int64(-1)
	for _, r := range idx {
		t.bits[r>>6] |= 1 << (r & 63)
		lo, hi = min(lo, r), max(hi, r)
	}
	n := 0
	if hi >= 0 {
		for w := lo >> 6; w <= hi>>6; w++ {
			b := t.bits[w]
			for b != 0 {
				r := w<<6 + int64(bits.TrailingZeros64(b))
				t.slot[r] = int32(n)
				uniq[n] = r
				n++
				b &= b - 1
			}
			t.bits[w] = 0
		}
	}
	for i, r := range idx {
		inv[i] = int64(t.slot[r])
	}
	return n, nil
}

// uniqueSorted is Unique by sorting, for tables too large to mark.
func (t *Table) uniqueSorted(idx, uniq, inv []int64) int {
	order := make([]int32, len(idx))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortFunc(order, func(a, b int32) int { return cmp.Compare(idx[a], idx[b]) })
	n := 0
	for k, i := range order {
		if k == 0 || idx[i] != uniq[n-1] {
			uniq[n] = idx[i]
			n++
		}
		inv[i] = int64(n - 1)
	}
	return n
}
