package partition

// The priority queues of the FM passes (kway.go): fmQueue, the queue of
// candidate moves, one entry per vertex changed in place; and fmHeap, the
// per-block heaps of the vertices whose best move waits for room in that
// block. Both order by gain, ties to the lower vertex, a total order, so
// the moves made do not depend on how the heaps are laid out.

// fmEntry is a candidate move waiting on a block, with the version of
// its vertex when queued.
type fmEntry struct {
	gain int64
	u    int32
	ver  int32
}

// fmHeap is a binary max-heap of candidate moves by gain, ties to the
// lower vertex, for the vertices waiting on a block. push and pop follow
// container/heap's algorithm without its interface calls.
type fmHeap []fmEntry

func (h fmHeap) Len() int { return len(h) }

func (e fmEntry) before(f fmEntry) bool {
	return e.gain > f.gain || (e.gain == f.gain && e.u < f.u)
}

func (h *fmHeap) push(x fmEntry) {
	*h = append(*h, x)
	q := *h
	j := len(q) - 1
	for j > 0 {
		i := (j - 1) / 2
		if i == j || !q[j].before(q[i]) {
			break
		}
		q[i], q[j] = q[j], q[i]
		j = i
	}
}

func (h *fmHeap) pop() fmEntry {
	q := *h
	n := len(q) - 1
	q[0], q[n] = q[n], q[0]
	i := 0
	for {
		j1 := 2*i + 1
		if j1 >= n || j1 < 0 {
			break
		}
		j := j1
		if j2 := j1 + 1; j2 < n && q[j2].before(q[j1]) {
			j = j2
		}
		if !q[j].before(q[i]) {
			break
		}
		q[i], q[j] = q[j], q[i]
		i = j
	}
	x := q[n]
	*h = q[:n]
	return x
}

// fmQueue is the FM priority queue: a 4-ary max-heap of candidate
// moves by gain, ties to the lower vertex, with at most one entry per
// vertex, whose position it keeps so that the entry can be changed or
// removed in place. A heap into which every change pushes a new entry,
// the old ones skipped as stale when popped, makes the same moves: its
// valid entries are these, and come out in the same order (gain, then
// vertex, is a total order on them); this one stays as small as the
// number of vertices queued.
type fmQueue struct {
	q   []fmSlot
	pos []int32 // per vertex: index in q, or −1
}

// fmSlot is an entry of fmQueue.
type fmSlot struct {
	gain int64
	u    int32
}

func (x fmSlot) before(y fmSlot) bool {
	return x.gain > y.gain || (x.gain == y.gain && x.u < y.u)
}

func newFMQueue(n int) *fmQueue {
	pos := make([]int32, n)
	for i := range pos {
		pos[i] = -1
	}
	return &fmQueue{pos: pos}
}

func (h *fmQueue) Len() int { return len(h.q) }

// reset empties the queue.
func (h *fmQueue) reset() {
	for _, x := range h.q {
		h.pos[x.u] = -1
	}
	h.q = h.q[:0]
}

// set queues vertex u with gain g, replacing its entry.
func (h *fmQueue) set(u int32, g int64) {
	x := fmSlot{g, u}
	j := int(h.pos[u])
	if j < 0 {
		h.q = append(h.q, x)
		h.up(len(h.q)-1, x)
		return
	}
	if old := h.q[j]; x.before(old) {
		h.up(j, x)
	} else {
		h.down(j, x)
	}
}

// remove takes u's entry out of the queue, if any.
func (h *fmQueue) remove(u int32) {
	j := int(h.pos[u])
	if j < 0 {
		return
	}
	h.pos[u] = -1
	n := len(h.q) - 1
	last := h.q[n]
	h.q = h.q[:n]
	if j == n {
		return
	}
	if last.before(h.q[j]) {
		h.up(j, last)
	} else {
		h.down(j, last)
	}
}

// pop removes and returns the entry of largest gain.
func (h *fmQueue) pop() fmSlot {
	top := h.q[0]
	h.pos[top.u] = -1
	n := len(h.q) - 1
	last := h.q[n]
	h.q = h.q[:n]
	if n > 0 {
		h.down(0, last)
	}
	return top
}

// up places x at index j or above.
func (h *fmQueue) up(j int, x fmSlot) {
	q, pos := h.q, h.pos
	for j > 0 {
		i := (j - 1) / 4
		if !x.before(q[i]) {
			break
		}
		q[j] = q[i]
		pos[q[j].u] = int32(j)
		j = i
	}
	q[j] = x
	pos[x.u] = int32(j)
}

// down places x at index i or below.
func (h *fmQueue) down(i int, x fmSlot) {
	q, pos := h.q, h.pos
	n := len(q)
	for {
		c := 4*i + 1
		if c >= n {
			break
		}
		j := c
		if c+3 < n {
			// Four children: the first of each pair, then of the two.
			// The order is total, so this is the child the scan below
			// finds.
			if q[c+1].before(q[c]) {
				j = c + 1
			}
			j2 := c + 2
			if q[c+3].before(q[c+2]) {
				j2 = c + 3
			}
			if q[j2].before(q[j]) {
				j = j2
			}
		} else {
			for d := c + 1; d < n; d++ {
				if q[d].before(q[j]) {
					j = d
				}
			}
		}
		if !q[j].before(x) {
			break
		}
		q[i] = q[j]
		pos[q[i].u] = int32(i)
		i = j
	}
	q[i] = x
	pos[x.u] = int32(i)
}
