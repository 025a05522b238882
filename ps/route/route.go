// Package route is the routing table of the parameter server: which
// server owns each key. The scheduler builds it from the placement (seed
// 000 §3.2: the assignment "is done by the scheduler before the actual
// training starts and it is known to all machines"), sends it to every
// node in the start message, and workers route their pushes and pulls
// through it while servers size their dense stores from it.
//
// A table takes one of three forms, the smallest that fits the keys:
//
//   - Ranges: server s owns [Starts[s], Starts[s+1]), the last server
//     everything from its start on. This is kv.Ranges, and a worker
//     splits a sorted request with S binary searches instead of routing
//     every key. A uniform split of the key space (ps-lite's only
//     routing) is the special case Uniform.
//   - Runs: the keys [0, NumKeys) cut into runs of consecutive keys, each
//     owned by one server, found by binary search: compact when the
//     placement keeps neighbouring parameters together.
//   - Dense: one owner per key of [0, NumKeys), one byte each for up to
//     256 servers and two beyond: any placement at all.
//
// Keys at or beyond NumKeys (when NumKeys > 0) belong to the last run's
// owner in the first two forms and to server key mod S in the dense one,
// so every uint64 has an owner.
//
// FromPlacement picks the form: Ranges when each server's parameters are
// one run in server order, otherwise Runs or Dense, whichever encodes
// smaller. Routing a key costs O(log S) for Ranges, O(log runs) for Runs
// and O(1) for Dense. MarshalBinary and UnmarshalBinary carry a table in
// a message; decoding checks every field and allocates no more than the
// input can describe.
package route

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"slices"
	"sort"

	"colo/kv"
)

// Kind is the form of a table.
type Kind uint8

// Forms of a table.
const (
	Ranges Kind = iota + 1
	Runs
	Dense
)

// String returns the form's name.
func (k Kind) String() string {
	switch k {
	case Ranges:
		return "ranges"
	case Runs:
		return "runs"
	case Dense:
		return "dense"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// MaxServers bounds the number of servers of a table.
const MaxServers = 1 << 16

// Table maps keys to servers. It is immutable and safe for concurrent
// use.
type Table struct {
	kind    Kind
	servers int
	numKeys uint64   // 0: unbounded
	starts  []uint64 // Ranges: one per server; Runs: one per run
	owners  []uint16 // Runs: owner of each run; Dense: owner of each key
}

// Uniform returns range ownership of [0, numKeys) split evenly among
// servers; numKeys 0 splits the whole uint64 space.
func Uniform(servers int, numKeys uint64) (*Table, error) {
	if servers < 1 || servers > MaxServers {
		return nil, fmt.Errorf("route: %d servers out of range [1, %d]", servers, MaxServers)
	}
	starts := make([]uint64, servers)
	for s := range starts {
		// ⌊s·numKeys/S⌋, or ⌊s·2^64/S⌋ for the whole space, in 128 bits.
		hi, lo := bits.Mul64(uint64(s), numKeys)
		if numKeys == 0 {
			hi, lo = uint64(s), 0
		}
		starts[s], _ = bits.Div64(hi, lo, uint64(servers))
	}
	return &Table{kind: Ranges, servers: servers, numKeys: numKeys, starts: starts}, nil
}

// FromRanges returns range ownership with server s owning keys from
// starts[s]; starts must start at 0 and not decrease. numKeys is
// informative (0 for unbounded): servers size their stores by it.
func FromRanges(starts []uint64, numKeys uint64) (*Table, error) {
	if len(starts) < 1 || len(starts) > MaxServers {
		return nil, fmt.Errorf("route: %d range starts, want 1 to %d", len(starts), MaxServers)
	}
	if starts[0] != 0 {
		return nil, fmt.Errorf("route: first range starts at %d, want 0", starts[0])
	}
	for s := 1; s < len(starts); s++ {
		if starts[s] < starts[s-1] {
			return nil, fmt.Errorf("route: range %d starts at %d, before range %d at %d", s, starts[s], s-1, starts[s-1])
		}
	}
	return &Table{kind: Ranges, servers: len(starts), numKeys: numKeys, starts: slices.Clone(starts)}, nil
}

// FromPlacement returns the table of a placement's parameter assignment:
// key v is owned by server param[v]. It picks the smallest form.
func FromPlacement(param []int32, servers int) (*Table, error) {
	if servers < 1 || servers > MaxServers {
		return nil, fmt.Errorf("route: %d servers out of range [1, %d]", servers, MaxServers)
	}
	if len(param) == 0 {
		return nil, errors.New("route: empty placement")
	}
	var starts []uint64
	var owners []uint16
	for v, s := range param {
		if s < 0 || int(s) >= servers {
			return nil, fmt.Errorf("route: parameter %d on server %d, want 0..%d", v, s, servers-1)
		}
		if v == 0 || s != param[v-1] {
			starts = append(starts, uint64(v))
			owners = append(owners, uint16(s))
		}
	}
	n := uint64(len(param))
	// Ranges: owners increasing, one run each.
	inOrder := true
	for i := 1; i < len(owners); i++ {
		inOrder = inOrder && owners[i] > owners[i-1]
	}
	if inOrder {
		// A server without parameters gets an empty range where the
		// next server's starts (or at the end).
		rs := make([]uint64, servers)
		next := 0
		for s := range servers {
			for next < len(owners) && int(owners[next]) < s {
				next++
			}
			rs[s] = n
			if next < len(owners) {
				rs[s] = starts[next]
			}
		}
		rs[0] = 0
		return &Table{kind: Ranges, servers: servers, numKeys: n, starts: rs}, nil
	}
	width := uint64(1)
	if servers > 256 {
		width = 2
	}
	if uint64(len(starts))*6 <= n*width {
		return &Table{kind: Runs, servers: servers, numKeys: n, starts: starts, owners: owners}, nil
	}
	dense := make([]uint16, n)
	for v, s := range param {
		dense[v] = uint16(s)
	}
	return &Table{kind: Dense, servers: servers, numKeys: n, owners: dense}, nil
}

// Kind returns the table's form.
func (t *Table) Kind() Kind { return t.kind }

// Servers returns the number of servers.
func (t *Table) Servers() int { return t.servers }

// NumKeys returns the size of the placed key space, 0 for unbounded.
func (t *Table) NumKeys() uint64 { return t.numKeys }

// Starts returns the range starts of a Ranges table (nil otherwise); the
// caller must not modify them.
func (t *Table) Starts() []uint64 {
	if t.kind != Ranges {
		return nil
	}
	return t.starts
}

// Owner returns the server that owns key.
func (t *Table) Owner(key uint64) int {
	switch t.kind {
	case Dense:
		if key < uint64(len(t.owners)) {
			return int(t.owners[key])
		}
		return int(key % uint64(t.servers))
	case Runs:
		i := sort.Search(len(t.starts), func(i int) bool { return t.starts[i] > key }) - 1
		return int(t.owners[max(i, 0)])
	}
	i := sort.Search(len(t.starts), func(i int) bool { return t.starts[i] > key }) - 1
	return max(i, 0)
}

// Router returns Owner as a kv.Router.
func (t *Table) Router() kv.Router { return t.Owner }

// Range returns the keys [lo, hi) that server s owns in a Ranges table;
// hi is the next start, or NumKeys for the last server (0 when
// unbounded, meaning up to 2^64). ok is false for other forms.
func (t *Table) Range(s int) (lo, hi uint64, ok bool) {
	if t.kind != Ranges {
		return 0, 0, false
	}
	lo = t.starts[s]
	if s+1 < len(t.starts) {
		hi = t.starts[s+1]
	} else {
		hi = max(t.numKeys, lo)
		if t.numKeys == 0 {
			hi = 0
		}
	}
	return lo, hi, true
}

// SplitSorted cuts sorted keys of a Ranges table by server: keys
// [cut[s], cut[s+1]) belong to server s. It costs O(S log n) and fills
// cut[:S+1], which it returns.
func (t *Table) SplitSorted(cut []int, keys []uint64) []int {
	cut = append(cut[:0], 0)
	for s := 1; s < t.servers; s++ {
		start := t.starts[s]
		lo := cut[s-1]
		i, _ := slices.BinarySearch(keys[lo:], start)
		cut = append(cut, lo+i)
	}
	return append(cut, len(keys))
}

// Index maps the keys of [0, NumKeys) that one server owns to dense
// slots 0 … Size()−1 in increasing key order.
type Index struct {
	size   int
	lo, hi uint64   // range form: slot = key − lo for lo ≤ key < hi
	starts []uint64 // runs of the server: key range starts …
	ends   []uint64 // … and ends
	base   []int    // slot of each run's first key
	dense  []int32  // dense form: slot of every key, −1 if not owned
}

// Size returns the number of slots.
func (x *Index) Size() int { return x.size }

// Slot returns the slot of key, or -1 when the key is not in the index
// (owned by another server, or beyond NumKeys).
func (x *Index) Slot(key uint64) int {
	switch {
	case x.dense != nil:
		if key < uint64(len(x.dense)) {
			return int(x.dense[key])
		}
		return -1
	case x.starts != nil:
		i := sort.Search(len(x.starts), func(i int) bool { return x.starts[i] > key }) - 1
		if i < 0 || key >= x.ends[i] {
			return -1
		}
		return x.base[i] + int(key-x.starts[i])
	}
	if key >= x.lo && key < x.hi {
		return int(key - x.lo)
	}
	return -1
}

// Offset returns lo and whether the index is one range of keys, where a
// key's slot is key − lo.
func (x *Index) Offset() (uint64, bool) {
	return x.lo, x.dense == nil && x.starts == nil
}

// MaxIndex bounds the slots of an index: a server whose placed keys
// exceed it indexes none and stores keys as they come.
const MaxIndex = 1 << 30

// Index returns the index of the keys that server s owns in [0,
// NumKeys). For an unbounded table, or more than MaxIndex keys, the index
// is empty.
func (t *Table) Index(s int) *Index {
	x := &Index{}
	if t.numKeys == 0 {
		return x
	}
	switch t.kind {
	case Ranges:
		lo, hi, _ := t.Range(s)
		hi = min(hi, t.numKeys)
		if hi > lo && hi-lo <= MaxIndex {
			x.lo, x.hi, x.size = lo, hi, int(hi-lo)
		}
	case Runs:
		slot := 0
		for i, st := range t.starts {
			if int(t.owners[i]) != s {
				continue
			}
			end := t.numKeys
			if i+1 < len(t.starts) {
				end = t.starts[i+1]
			}
			if uint64(slot)+end-st > MaxIndex {
				return &Index{}
			}
			x.starts = append(x.starts, st)
			x.ends = append(x.ends, end)
			x.base = append(x.base, slot)
			slot += int(end - st)
		}
		x.size = slot
		if x.starts == nil {
			x.starts = []uint64{}
		}
	case Dense:
		x.dense = make([]int32, len(t.owners))
		slot := int32(0)
		for k, o := range t.owners {
			if int(o) == s {
				x.dense[k] = slot
				slot++
			} else {
				x.dense[k] = -1
			}
		}
		x.size = int(slot)
	}
	return x
}

// Share returns the fraction of the placed keys [0, NumKeys) that server
// s owns, or of the whole uint64 space for an unbounded table: its share
// of the model, a measure of its load. It costs O(1) for Ranges, O(runs)
// for Runs and O(NumKeys) for Dense.
func (t *Table) Share(s int) float64 {
	var owned uint64
	switch t.kind {
	case Ranges:
		lo, hi, _ := t.Range(s)
		if t.numKeys == 0 {
			switch {
			case s == t.servers-1 && lo == 0:
				return 1
			case s == t.servers-1:
				return float64(-lo) / (1 << 64) // 2^64 − lo
			}
			return float64(hi-lo) / (1 << 64)
		}
		owned = min(hi, t.numKeys) - min(lo, t.numKeys)
	case Runs:
		for i, st := range t.starts {
			if int(t.owners[i]) == s {
				end := t.numKeys
				if i+1 < len(t.starts) {
					end = t.starts[i+1]
				}
				owned += end - st
			}
		}
	case Dense:
		for _, o := range t.owners {
			if int(o) == s {
				owned++
			}
		}
	}
	return float64(owned) / float64(t.numKeys)
}

// Encoding: 'R', version 1, kind, then uvarints: servers, numKeys; then
// Ranges: S start gaps; Runs: count, then per run the gap from the
// previous start and the owner; Dense: owners as bytes (S ≤ 256) or
// little-endian uint16.
const (
	magic   = 'R'
	version = 1
)

// MarshalBinary encodes the table.
func (t *Table) MarshalBinary() ([]byte, error) {
	b := []byte{magic, version, byte(t.kind)}
	b = binary.AppendUvarint(b, uint64(t.servers))
	b = binary.AppendUvarint(b, t.numKeys)
	switch t.kind {
	case Ranges:
		prev := uint64(0)
		for _, s := range t.starts {
			b = binary.AppendUvarint(b, s-prev)
			prev = s
		}
	case Runs:
		b = binary.AppendUvarint(b, uint64(len(t.starts)))
		prev := uint64(0)
		for i, s := range t.starts {
			b = binary.AppendUvarint(b, s-prev)
			b = binary.AppendUvarint(b, uint64(t.owners[i]))
			prev = s
		}
	case Dense:
		for _, o := range t.owners {
			if t.servers <= 256 {
				b = append(b, byte(o))
			} else {
				b = binary.LittleEndian.AppendUint16(b, o)
			}
		}
	}
	return b, nil
}

// ErrBadTable is wrapped by the errors of UnmarshalBinary.
var ErrBadTable = errors.New("route: bad table encoding")

// UnmarshalBinary decodes a table written by MarshalBinary.
func (t *Table) UnmarshalBinary(b []byte) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrBadTable, fmt.Sprintf(format, args...))
	}
	if len(b) < 3 || b[0] != magic || b[1] != version {
		return bad("header %q", b[:min(len(b), 3)])
	}
	kind := Kind(b[2])
	b = b[3:]
	next := func(what string) (uint64, error) {
		v, n := binary.Uvarint(b)
		if n <= 0 {
			return 0, bad("truncated %s", what)
		}
		b = b[n:]
		return v, nil
	}
	servers, err := next("servers")
	if err != nil {
		return err
	}
	if servers < 1 || servers > MaxServers {
		return bad("%d servers", servers)
	}
	numKeys, err := next("numKeys")
	if err != nil {
		return err
	}
	nt := Table{kind: kind, servers: int(servers), numKeys: numKeys}
	switch kind {
	case Ranges:
		if uint64(len(b)) < servers {
			return bad("%d bytes for %d range starts", len(b), servers)
		}
		nt.starts = make([]uint64, servers)
		prev := uint64(0)
		for s := range nt.starts {
			gap, err := next("range start")
			if err != nil {
				return err
			}
			if prev+gap < prev || (s == 0 && gap != 0) {
				return bad("range start %d", s)
			}
			prev += gap
			nt.starts[s] = prev
		}
	case Runs:
		count, err := next("run count")
		if err != nil {
			return err
		}
		if count < 1 || count > uint64(len(b))/2 {
			return bad("%d runs in %d bytes", count, len(b))
		}
		nt.starts = make([]uint64, count)
		nt.owners = make([]uint16, count)
		prev := uint64(0)
		for i := range nt.starts {
			gap, err := next("run start")
			if err != nil {
				return err
			}
			o, err := next("run owner")
			if err != nil {
				return err
			}
			if (i == 0 && gap != 0) || (i > 0 && gap == 0) || prev+gap < prev || o >= servers {
				return bad("run %d: gap %d owner %d", i, gap, o)
			}
			prev += gap
			nt.starts[i], nt.owners[i] = prev, uint16(o)
		}
		if numKeys != 0 && prev >= numKeys {
			return bad("run start %d beyond %d keys", prev, numKeys)
		}
	case Dense:
		w := uint64(1)
		if servers > 256 {
			w = 2
		}
		if numKeys == 0 || numKeys != uint64(len(b))/w || uint64(len(b))%w != 0 {
			return bad("%d bytes for %d dense owners", len(b), numKeys)
		}
		nt.owners = make([]uint16, numKeys)
		for k := range nt.owners {
			o := uint16(b[0])
			if w == 2 {
				o = binary.LittleEndian.Uint16(b)
			}
			b = b[w:]
			if uint64(o) >= servers {
				return bad("key %d on server %d of %d", k, o, servers)
			}
			nt.owners[k] = o
		}
	default:
		return bad("kind %d", kind)
	}
	if len(b) != 0 {
		return bad("%d trailing bytes", len(b))
	}
	*t = nt
	return nil
}

// Unmarshal decodes a table.
func Unmarshal(b []byte) (*Table, error) {
	t := new(Table)
	if err := t.UnmarshalBinary(b); err != nil {
		return nil, err
	}
	return t, nil
}

// String summarises the table.
func (t *Table) String() string {
	switch t.kind {
	case Runs:
		return fmt.Sprintf("%d runs over %d keys on %d servers", len(t.starts), t.numKeys, t.servers)
	case Dense:
		return fmt.Sprintf("dense table of %d keys on %d servers", t.numKeys, t.servers)
	}
	if t.numKeys == 0 {
		return fmt.Sprintf("%d ranges of the uint64 key space", t.servers)
	}
	return fmt.Sprintf("%d ranges of %d keys", t.servers, t.numKeys)
}

// AppendKeys appends the keys of slots 0 … Size()−1 to dst, in slot
// (that is, increasing key) order, and returns it. It costs O(Size()),
// or O(NumKeys) for a dense index.
func (x *Index) AppendKeys(dst []uint64) []uint64 {
	switch {
	case x.dense != nil:
		for k, j := range x.dense {
			if j >= 0 {
				dst = append(dst, uint64(k))
			}
		}
	case x.starts != nil:
		for i, st := range x.starts {
			for k := st; k < x.ends[i]; k++ {
				dst = append(dst, k)
			}
		}
	default:
		for k := x.lo; k < x.hi; k++ {
			dst = append(dst, k)
		}
	}
	return dst
}
