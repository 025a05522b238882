package partition

// levelMem is the memory of Refine's V-cycles, handed from one V-cycle
// to the next: each V-cycle coarsens the same graph into levels of
// about the same sizes as the one before, and on 20 Newsgroups at k = 8
// a thorough start allocated about 100 MB a V-cycle for them (the
// levels' pins and nets, coarsening's per-net records, the counts of
// each level's FM state), most of it in arrays large enough that every
// allocation faulted its pages in and cleared them again. A V-cycle
// takes its arrays from a levelMem and gives them back when it no
// longer reads them, so the next one finds them there. A nil *levelMem
// allocates, for the callers that coarsen once.
//
// What is taken from a levelMem holds nothing that decides a result: the
// get methods return zeroed slices, as make does, and the grab methods
// slices whose every element the caller writes before reading it.
type levelMem struct {
	i32   slab[int32]
	u32   slab[uint32]
	i64   slab[int64]
	u64   slab[uint64]
	f64   slab[float64]
	bools slab[bool]
	nets  slab[scanNet]
}

// slab is a list of free slices of one element type.
type slab[T any] struct {
	free [][]T
}

// grab returns a slice of length n with undefined contents: the free
// slice of smallest capacity that holds n, or a new one (zeroed).
func (s *slab[T]) grab(n int) []T {
	best := -1
	for i, f := range s.free {
		if cap(f) >= n && (best < 0 || cap(f) < cap(s.free[best])) {
			best = i
		}
	}
	if best < 0 {
		// An eighth to spare: the next V-cycle's level may be a little
		// larger.
		return make([]T, n, n+n/8)
	}
	f := s.free[best][:n]
	last := len(s.free) - 1
	s.free[best], s.free[last] = s.free[last], nil
	s.free = s.free[:last]
	return f
}

// put gives f back, to be handed out again whole (its capacity).
func (s *slab[T]) put(f []T) {
	if cap(f) > 0 {
		s.free = append(s.free, f[:0])
	}
}

// The typed takers: get zeroed, grab undefined; on a nil *levelMem both
// allocate, and put drops the slice.

func (m *levelMem) getI32(n int) []int32 {
	if m == nil {
		return make([]int32, n)
	}
	f := m.i32.grab(n)
	clear(f)
	return f
}

func (m *levelMem) grabI32(n int) []int32 {
	if m == nil {
		return make([]int32, n)
	}
	return m.i32.grab(n)
}

func (m *levelMem) grabU32(n int) []uint32 {
	if m == nil {
		return make([]uint32, n)
	}
	return m.u32.grab(n)
}

func (m *levelMem) getI64(n int) []int64 {
	if m == nil {
		return make([]int64, n)
	}
	f := m.i64.grab(n)
	clear(f)
	return f
}

func (m *levelMem) grabI64(n int) []int64 {
	if m == nil {
		return make([]int64, n)
	}
	return m.i64.grab(n)
}

func (m *levelMem) getU64(n int) []uint64 {
	if m == nil {
		return make([]uint64, n)
	}
	f := m.u64.grab(n)
	clear(f)
	return f
}

func (m *levelMem) getF64(n int) []float64 {
	if m == nil {
		return make([]float64, n)
	}
	f := m.f64.grab(n)
	clear(f)
	return f
}

func (m *levelMem) grabF64(n int) []float64 {
	if m == nil {
		return make([]float64, n)
	}
	return m.f64.grab(n)
}

func (m *levelMem) grabBools(n int) []bool {
	if m == nil {
		return make([]bool, n)
	}
	return m.bools.grab(n)
}

func (m *levelMem) getNets(n int) []scanNet {
	if m == nil {
		return make([]scanNet, n)
	}
	f := m.nets.grab(n)
	clear(f)
	return f
}

func (m *levelMem) putI32(fs ...[]int32) {
	if m != nil {
		for _, f := range fs {
			m.i32.put(f)
		}
	}
}

func (m *levelMem) putU32(fs ...[]uint32) {
	if m != nil {
		for _, f := range fs {
			m.u32.put(f)
		}
	}
}

func (m *levelMem) putI64(fs ...[]int64) {
	if m != nil {
		for _, f := range fs {
			m.i64.put(f)
		}
	}
}

func (m *levelMem) putU64(fs ...[]uint64) {
	if m != nil {
		for _, f := range fs {
			m.u64.put(f)
		}
	}
}

func (m *levelMem) putF64(fs ...[]float64) {
	if m != nil {
		for _, f := range fs {
			m.f64.put(f)
		}
	}
}

func (m *levelMem) putBools(fs ...[]bool) {
	if m != nil {
		for _, f := range fs {
			m.bools.put(f)
		}
	}
}

func (m *levelMem) putNets(f []scanNet) {
	if m != nil {
		m.nets.put(f)
	}
}

// putLevel gives back the arrays of a level that contract built from m,
// and its maps.
func (m *levelMem) putLevel(lv *level) {
	m.putI64(lv.vw, lv.nw, lv.voff, lv.noff)
	m.putU32(lv.vadj, lv.nadj)
	m.putI32(lv.vmap, lv.nmap)
}
