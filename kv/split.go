package kv

import (
	"fmt"
	"slices"
)

// Router returns the server, in [0, n), that owns key. It must be a pure
// function: the same key always goes to the same server.
type Router func(key uint64) int

// Ranges returns the router of range ownership: server s owns the keys in
// [starts[s], starts[s+1]), the last server everything from its start on,
// and keys below starts[0] go to server 0. starts must be increasing; it
// is copied. Routing takes O(log n) time.
func Ranges(starts []uint64) Router {
	st := slices.Clone(starts)
	return func(key uint64) int {
		// The number of starts ≤ key, minus one.
		lo, hi := 0, len(st)
		for lo < hi {
			m := int(uint(lo+hi) >> 1)
			if st[m] <= key {
				lo = m + 1
			} else {
				hi = m
			}
		}
		return max(lo-1, 0)
	}
}

// Splitter splits batches by server and merges pull responses back. It
// keeps scratch buffers between calls, so a warm Splitter does not
// allocate; it is not safe for concurrent use. Its zero value is not
// usable: use NewSplitter.
type Splitter struct {
	n     int
	route Router
	srv   []int32 // server of each key of the last scan
	count []int   // keys per server
	nval  []int   // values per server
	kc    []int   // per-server key cursor
	vc    []int   // per-server value cursor
	width []int   // per-server values per key (Merge)
	keys  []uint64
	vals  []float32
	lens  []int32
}

// NewSplitter returns a Splitter for n servers and the given router. It
// panics if n < 1 or route is nil, which are programming errors.
func NewSplitter(n int, route Router) *Splitter {
	if n < 1 || route == nil {
		panic("kv: NewSplitter needs n ≥ 1 servers and a router")
	}
	mk := func() []int { return make([]int, n) }
	return &Splitter{n: n, route: route, count: mk(), nval: mk(), kc: mk(), vc: mk(), width: mk()}
}

// Servers returns the number of servers.
func (s *Splitter) Servers() int { return s.n }

// scan routes every key once, recording its server in s.srv and the keys
// per server in s.count. It reports whether every server owns one run of
// consecutive keys.
func (s *Splitter) scan(keys []uint64) (contiguous bool, err error) {
	clear(s.count)
	s.srv = slices.Grow(s.srv[:0], len(keys))[:len(keys)]
	runs, prev := 0, -1
	for i, k := range keys {
		srv := s.route(k)
		if uint(srv) >= uint(s.n) {
			return false, fmt.Errorf("%w: key %d went to server %d of %d", ErrRoute, k, srv, s.n)
		}
		s.srv[i] = int32(srv)
		s.count[srv]++
		if srv != prev {
			runs++
			prev = srv
		}
	}
	owners := 0
	for _, c := range s.count {
		if c > 0 {
			owners++
		}
	}
	return runs == owners, nil
}

// Split cuts b into one batch per server, parts[s] holding the keys that
// the router sends to server s in increasing order, with their values and
// lengths. It reuses dst's storage for the slice of parts and returns it
// with length n; servers without keys get an empty Batch.
//
// The parts share memory with b when every server owns one run of
// consecutive keys, and with the Splitter's buffers otherwise; either way
// they stay valid until b is modified or Split is called again. b is not
// modified. Split checks only what routing needs (lengths consistent with
// the values); it does not check that keys are sorted. It calls the router
// once per key.
func (s *Splitter) Split(dst []Batch, b Batch) ([]Batch, error) {
	parts := slices.Grow(dst[:0], s.n)[:s.n]
	clear(parts)
	width, err := shape(b)
	if err != nil {
		return parts, err
	}
	contiguous, err := s.scan(b.Keys)
	if err != nil {
		return parts, err
	}
	if contiguous {
		s.splitShared(parts, b, width)
		return parts, nil
	}
	// Values per server, then each server's block in the scratch buffers.
	clear(s.nval)
	if b.Lens != nil {
		for i, l := range b.Lens {
			s.nval[s.srv[i]] += int(l)
		}
	} else {
		for srv, c := range s.count {
			s.nval[srv] = c * width
		}
	}
	s.keys = slices.Grow(s.keys[:0], len(b.Keys))[:len(b.Keys)]
	s.vals = slices.Grow(s.vals[:0], len(b.Vals))[:len(b.Vals)]
	if b.Lens != nil {
		s.lens = slices.Grow(s.lens[:0], len(b.Lens))[:len(b.Lens)]
	}
	ko, vo := 0, 0
	for srv := range s.n {
		s.kc[srv], s.vc[srv] = ko, vo
		ko, vo = ko+s.count[srv], vo+s.nval[srv]
	}
	switch {
	case b.Lens != nil:
		v := 0
		for i, k := range b.Keys {
			srv, l := s.srv[i], int(b.Lens[i])
			ki, vi := s.kc[srv], s.vc[srv]
			s.keys[ki], s.lens[ki] = k, b.Lens[i]
			copy(s.vals[vi:vi+l], b.Vals[v:v+l])
			s.kc[srv], s.vc[srv] = ki+1, vi+l
			v += l
		}
	case width == 1:
		for i, k := range b.Keys {
			srv := s.srv[i]
			ki := s.kc[srv]
			s.keys[ki], s.vals[ki] = k, b.Vals[i]
			s.kc[srv] = ki + 1
		}
	default:
		for i, k := range b.Keys {
			srv := s.srv[i]
			ki := s.kc[srv]
			s.keys[ki] = k
			copy(s.vals[ki*width:(ki+1)*width], b.Vals[i*width:(i+1)*width])
			s.kc[srv] = ki + 1
		}
	}
	ko, vo = 0, 0
	for srv := range s.n {
		k1, v1 := ko+s.count[srv], vo+s.nval[srv]
		if k1 > ko {
			parts[srv] = Batch{Keys: s.keys[ko:k1:k1], Vals: s.vals[vo:v1:v1]}
			if b.Lens != nil {
				parts[srv].Lens = s.lens[ko:k1:k1]
			}
		}
		ko, vo = k1, v1
	}
	return parts, nil
}

// splitShared fills parts with sub-slices of b, one run per server.
func (s *Splitter) splitShared(parts []Batch, b Batch, width int) {
	v := 0
	for k0 := 0; k0 < len(b.Keys); {
		srv := s.srv[k0]
		k1 := k0 + s.count[srv]
		v1 := v + (k1-k0)*width
		if b.Lens != nil {
			v1 = v
			for _, l := range b.Lens[k0:k1] {
				v1 += int(l)
			}
		}
		p := Batch{Keys: b.Keys[k0:k1:k1], Vals: b.Vals[v:v1:v1]}
		if b.Lens != nil {
			p.Lens = b.Lens[k0:k1:k1]
		}
		parts[srv] = p
		k0, v = k1, v1
	}
}

// shape checks the value layout of b and returns its uniform width (0
// when Lens is set).
func shape(b Batch) (int, error) {
	if b.Lens != nil {
		if len(b.Lens) != len(b.Keys) {
			return 0, fmt.Errorf("kv: %d lengths for %d keys", len(b.Lens), len(b.Keys))
		}
		sum := 0
		for _, l := range b.Lens {
			if l < 0 {
				return 0, fmt.Errorf("kv: negative length %d", l)
			}
			sum += int(l)
		}
		if sum != len(b.Vals) {
			return 0, fmt.Errorf("kv: lengths sum to %d but there are %d values", sum, len(b.Vals))
		}
		return 0, nil
	}
	if len(b.Keys) == 0 {
		if len(b.Vals) != 0 {
			return 0, fmt.Errorf("kv: %d values but no keys", len(b.Vals))
		}
		return 0, nil
	}
	if len(b.Vals)%len(b.Keys) != 0 {
		return 0, fmt.Errorf("kv: %d values are not a multiple of %d keys", len(b.Vals), len(b.Keys))
	}
	return len(b.Vals) / len(b.Keys), nil
}

// Split cuts b into n batches by server with a fresh Splitter; see
// Splitter.Split. Use a Splitter on hot paths.
func Split(b Batch, n int, route Router) ([]Batch, error) {
	return NewSplitter(n, route).Split(nil, b)
}

// Merge is the inverse of Split for pull responses: given the request's
// keys and parts[s], the answer of server s for the keys routed to it in
// increasing order, it appends every key's values in the order of keys to
// dst.Vals[:0] and returns the batch {keys, vals, lens}. Lens is filled
// (into dst.Lens[:0]) when any part has Lens, and nil otherwise; a part
// without Lens gives each of its keys len(Vals)/count values.
//
// A part whose Keys is nil is trusted to answer for the routed keys; a
// part with Keys must list exactly them, or Merge reports the first
// mismatch. Parts of servers that own none of keys must be empty. Merge
// calls the router once per key.
func (s *Splitter) Merge(dst Batch, keys []uint64, parts []Batch) (Batch, error) {
	out := Batch{Keys: keys, Vals: dst.Vals[:0]}
	if len(parts) != s.n {
		return out, fmt.Errorf("kv: merge of %d parts for %d servers", len(parts), s.n)
	}
	if _, err := s.scan(keys); err != nil {
		return out, err
	}
	withLens := false
	total := 0
	for srv, p := range parts {
		c := s.count[srv]
		if p.Keys != nil && len(p.Keys) != c {
			return out, fmt.Errorf("kv: server %d answered %d keys for %d", srv, len(p.Keys), c)
		}
		s.width[srv] = 0
		switch {
		case p.Lens != nil:
			withLens = true
			if len(p.Lens) != c {
				return out, fmt.Errorf("kv: server %d answered %d lengths for %d keys", srv, len(p.Lens), c)
			}
			sum := 0
			for _, l := range p.Lens {
				if l < 0 {
					return out, fmt.Errorf("kv: server %d answered negative length %d", srv, l)
				}
				sum += int(l)
			}
			if sum != len(p.Vals) {
				return out, fmt.Errorf("kv: server %d lengths sum to %d for %d values", srv, sum, len(p.Vals))
			}
		case c == 0:
			if len(p.Vals) != 0 {
				return out, fmt.Errorf("kv: server %d answered %d values for no keys", srv, len(p.Vals))
			}
		default:
			if len(p.Vals)%c != 0 {
				return out, fmt.Errorf("kv: server %d answered %d values for %d keys", srv, len(p.Vals), c)
			}
			s.width[srv] = len(p.Vals) / c
		}
		total += len(p.Vals)
	}
	out.Vals = slices.Grow(out.Vals, total)
	if withLens {
		out.Lens = slices.Grow(dst.Lens[:0], len(keys))
	}
	clear(s.kc)
	clear(s.vc)
	for k0 := 0; k0 < len(keys); {
		// One run of keys owned by the same server.
		srv := int(s.srv[k0])
		k1 := k0 + 1
		for k1 < len(keys) && int(s.srv[k1]) == srv {
			k1++
		}
		p, n, ki := parts[srv], k1-k0, s.kc[srv]
		if p.Keys != nil {
			for i, k := range p.Keys[ki : ki+n] {
				if k != keys[k0+i] {
					return out, fmt.Errorf("kv: server %d answered key %d where %d was asked", srv, k, keys[k0+i])
				}
			}
		}
		nv := n * s.width[srv]
		if p.Lens != nil {
			nv = 0
			for _, l := range p.Lens[ki : ki+n] {
				nv += int(l)
			}
			out.Lens = append(out.Lens, p.Lens[ki:ki+n]...)
		} else if withLens {
			for range n {
				out.Lens = append(out.Lens, int32(s.width[srv]))
			}
		}
		vi := s.vc[srv]
		out.Vals = append(out.Vals, p.Vals[vi:vi+nv]...)
		s.kc[srv], s.vc[srv] = ki+n, vi+nv
		k0 = k1
	}
	return out, nil
}
