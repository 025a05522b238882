package server

import (
	"fmt"
	"math/bits"
	"sort"

	"colo/kv"
	"colo/ps/route"
)

// Key families: the keys of a table spread over the key space.
//
// A client that lays a table's rows out on keys base + i·stride (package
// clib spreads every table so over the whole key space) sends the
// servers the family with proto.DataFamily. Each server reserves a run
// of slots for the family's keys it owns, and finds a key's slot by
// arithmetic: (key − base)/stride, the division an exact one done as a
// shift and a multiplication by the inverse of stride's odd part, checked
// by one more multiplication. Without a family such keys are found in a
// hash map, whose lookups cost most of a pull of random rows of a large
// table: the map's memory is touched at random, once more per row than
// the family's O(1) arithmetic and its array of slots.
//
// A family is an acceleration, never a change of the values: a family
// some of whose keys have slots already (pushed before it came, or
// restored from a snapshot) is not installed, nor one beyond
// MaxFamilies, nor one of more than MaxFamilyKeys keys on this server;
// their keys stay in the map.

// MaxFamilyKeys bounds the keys of a family on one server: the slots it
// reserves cost 12 bytes each at width 0 (and width values each at a
// uniform width) before any is pushed.
const MaxFamilyKeys = 1 << 24

// MaxFamilies bounds the families of a store.
const MaxFamilies = 256

// family is a run of slots for the keys base + i·stride, i < n.
type family struct {
	base, stride uint64
	n            uint64
	shift        uint   // trailing zeros of stride
	inv          uint64 // inverse of stride>>shift modulo 2^64
	low          uint64 // 1<<shift − 1
	start        int    // slot of key base
	// At width 0, the values of the keys pushed with the family's first
	// length dim are one block at voff (−1 before the first push), key i
	// at voff + i·dim, and placed has a bit for each such key.
	dim    int
	voff   int
	placed []uint64
}

// newFamily returns the family of keys base + i·stride, i < n, whose
// slots start at start.
func newFamily(base, stride, n uint64, start int) family {
	z := uint(bits.TrailingZeros64(stride))
	odd := stride >> z
	inv := odd // Newton's iteration doubles the correct low bits: 3, 6, …, 96
	for range 5 {
		inv *= 2 - odd*inv
	}
	return family{base: base, stride: stride, n: n, shift: z, inv: inv, low: 1<<z - 1, start: start, voff: -1}
}

// index returns i with key = base + i·stride, or false.
func (f *family) index(key uint64) (uint64, bool) {
	d := key - f.base
	if d&f.low != 0 {
		return 0, false
	}
	i := (d >> f.shift) * f.inv
	return i, i < f.n && i*f.stride == d
}

// MaxFamilyValues bounds the block of values a family reserves at its
// first push (width 0): n·dim values, and as many for each state of the
// rule. A larger family's keys get their values one by one, as others.
const MaxFamilyValues = 1 << 24

// famPlace gives slot j of a family, pushed for the first time with n
// values, its place in the family's block of values, reserving the
// block at the family's first push; false when j is in no family, the
// family has no block, or its keys have another length.
func (s *Store) famPlace(j, n int) bool {
	for q := range s.fams {
		f := &s.fams[q]
		i := j - f.start
		if i < 0 || uint64(i) >= f.n {
			continue
		}
		if f.voff < 0 && f.dim == 0 && n > 0 && f.n*uint64(n) <= MaxFamilyValues {
			f.dim, f.voff = n, len(s.vals)
			total := int(f.n) * n
			s.vals = append(s.vals, make([]float32, total)...)
			for a := range s.state {
				s.state[a] = append(s.state[a], make([]float32, total)...)
			}
			f.placed = make([]uint64, (f.n+63)/64)
		}
		if f.voff < 0 || n != f.dim {
			return false
		}
		s.off[j], s.ln[j] = f.voff+i*n, int32(n)
		f.placed[i/64] |= 1 << (i % 64)
		return true
	}
	return false
}

// pullFamily is Pull at width 0 of keys mostly in family f, the values
// landing where their answer goes, grown once: a key of the family is
// found by arithmetic (its slot f.start + i), and one placed in the
// family's block of values, when it has one, is read from voff + i·dim
// with no look at its slot; any other key as Pull reads it.
func (s *Store) pullFamily(f *family, out kv.Batch, keys []uint64) kv.Batch {
	if cap(out.Lens) < len(keys) {
		out.Lens = make([]int32, 0, len(keys))
	}
	lens := out.Lens[:len(keys)]
	vals := out.Vals[:cap(out.Vals)]
	dim, hasBlock := f.dim, f.voff >= 0
	var block []float32
	if hasBlock {
		block = s.vals[f.voff : f.voff+int(f.n)*f.dim]
	}
	v := 0
	for i, k := range keys {
		q, ok := f.index(k)
		if hasBlock && ok && f.placed[q/64]&(1<<(q%64)) != 0 {
			if v+dim > len(vals) {
				vals = append(vals[:v], make([]float32, (len(keys)-i)*dim)...)
				vals = vals[:cap(vals)]
			}
			o := int(q) * dim
			copy(vals[v:v+dim], block[o:o+dim])
			lens[i] = int32(dim)
			v += dim
			continue
		}
		j := f.start + int(q)
		if !ok {
			j = s.slot(k, false)
		}
		if j < 0 || s.off[j] < 0 {
			lens[i] = 0
			continue
		}
		o, n := s.off[j], int(s.ln[j])
		lens[i] = int32(n)
		if v+n > len(vals) {
			vals = append(vals[:v], make([]float32, max(n, (len(keys)-i)*n))...)
			vals = vals[:cap(vals)]
		}
		copy(vals[v:v+n], s.vals[o:o+n])
		v += n
	}
	out.Lens, out.Vals = lens, vals[:v]
	return out
}

// famSlot returns the slot of key in a family, −1 when none has it.
func (s *Store) famSlot(key uint64) int {
	f := &s.fams[s.last]
	if i, ok := f.index(key); ok {
		return f.start + int(i)
	}
	for q := range s.fams {
		if q == s.last {
			continue
		}
		f := &s.fams[q]
		if i, ok := f.index(key); ok {
			s.last = q
			return f.start + int(i)
		}
	}
	return -1
}

// Family reserves slots for the keys base + i·stride, i < n, which lie
// outside the store's index. It reports whether it installed the family:
// not when the same family is there already, when some of its keys have
// slots, when the store has MaxFamilies, or when n exceeds
// MaxFamilyKeys. It fails on a family that overflows the key space or
// may share keys with another (two progressions meet unless the gcd of
// their strides fails to divide the difference of their bases).
func (s *Store) Family(base, stride, n uint64) (bool, error) {
	if n == 0 {
		return false, nil
	}
	if stride == 0 {
		return false, fmt.Errorf("key family from %d: stride 0", base)
	}
	if hi, c := bits.Mul64(n-1, stride); hi != 0 || base+c < base {
		return false, fmt.Errorf("key family from %d of %d keys %d apart overflows the key space", base, n, stride)
	}
	if s.ranged && s.size > 0 && base < s.lo+uint64(s.size) && base+(n-1)*stride >= s.lo {
		return false, fmt.Errorf("key family from %d of %d keys %d apart meets the index [%d, %d)", base, n, stride, s.lo, s.lo+uint64(s.size))
	}
	for _, f := range s.fams {
		if f.base == base && f.stride == stride && f.n == n {
			return false, nil
		}
		g := gcd(f.stride, stride)
		d := max(f.base, base) - min(f.base, base)
		if d%g == 0 {
			return false, fmt.Errorf("key family from %d of %d keys %d apart may share keys with the family from %d of %d keys %d apart", base, n, stride, f.base, f.n, f.stride)
		}
	}
	if n > MaxFamilyKeys || len(s.fams) >= MaxFamilies {
		return false, nil
	}
	f := newFamily(base, stride, n, s.nslots)
	for k := range s.extra {
		if _, ok := f.index(k); ok {
			return false, nil
		}
	}
	s.grow(int(n))
	s.fams = append(s.fams, f)
	return true, nil
}

func gcd(a, b uint64) uint64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// familyKeys writes the key of each family slot into keys, indexed by
// slot.
func (s *Store) familyKeys(keys []uint64) {
	for _, f := range s.fams {
		for i := range f.n {
			keys[f.start+int(i)] = f.base + i*f.stride
		}
	}
}

// famDecl is a family as a worker declared it: the keys base + i·stride,
// i < n, of which each server installs those it owns.
type famDecl struct{ base, stride, n uint64 }

// family handles a worker's DataFamily: KV.Keys is {base, stride, n}.
// The server installs the run of the family's keys the routing table
// gives it (ownership of keys beyond the placement's is monotone in
// the key in Ranges and Runs tables; a Dense table's keys beyond it
// alternate between servers, and get no family) and keeps the
// declaration, so that a rewound store gets it again.
func (c *Core) family(r Request) []Reply {
	reply := Reply{Worker: r.Worker, ID: r.ID}
	c.since = 0 // keys change outside the marks: the next capture is whole
	if len(r.KV.Keys) != 3 {
		c.stats.Errors++
		reply.Err = fmt.Errorf("server %d: key family: %d numbers, want {base, stride, n}", c.cfg.Rank, len(r.KV.Keys))
		return append(c.out, reply)
	}
	d := famDecl{r.KV.Keys[0], r.KV.Keys[1], r.KV.Keys[2]}
	if err := c.install(c.store, d); err != nil {
		c.stats.Errors++
		reply.Err = fmt.Errorf("server %d: %w", c.cfg.Rank, err)
		return append(c.out, reply)
	}
	for _, o := range c.fams {
		if o == d {
			return append(c.out, reply)
		}
	}
	c.fams = append(c.fams, d)
	return append(c.out, reply)
}

// install installs on store the keys of d that this server owns.
func (c *Core) install(store *Store, d famDecl) error {
	t := c.cfg.Table
	if c.table != nil {
		t = c.table
	}
	if d.n == 0 || d.stride == 0 {
		if d.n > 0 {
			return fmt.Errorf("key family from %d: stride 0", d.base)
		}
		return nil
	}
	if hi, lo := bits.Mul64(d.n-1, d.stride); hi != 0 || d.base+lo < d.base {
		return fmt.Errorf("key family from %d of %d keys %d apart overflows the key space", d.base, d.n, d.stride)
	}
	if d.base < t.NumKeys() || t.Kind() == route.Dense || d.n > 1<<62 {
		return nil
	}
	key := func(i int) uint64 { return d.base + uint64(i)*d.stride }
	n := int(d.n)
	rank := c.cfg.Rank
	i0 := sort.Search(n, func(i int) bool { return t.Owner(key(i)) >= rank })
	i1 := sort.Search(n, func(i int) bool { return t.Owner(key(i)) > rank })
	if i0 >= i1 || t.Owner(key(i0)) != rank || t.Owner(key(i1-1)) != rank {
		return nil
	}
	_, err := store.Family(key(i0), d.stride, uint64(i1-i0))
	return err
}
