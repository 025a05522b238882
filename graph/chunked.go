package graph

// chunked is an append-only sequence stored in chunks that double in size
// up to maxChunk elements. Unlike one slice grown by append, it never copies
// what it holds while it grows, so that reading a large edge list costs one
// copy (flat) rather than a copy per growth, with their page faults and
// garbage collections.
type chunked[T any] struct {
	chunks [][]T
	n      int
	first  int // elements of the first chunk (0: minChunk)
}

const (
	minChunk = 1 << 10
	maxChunk = 1 << 20
)

// add appends x.
func (c *chunked[T]) add(x T) {
	last := len(c.chunks) - 1
	if last < 0 || len(c.chunks[last]) == cap(c.chunks[last]) {
		size := minChunk
		if last >= 0 {
			size = min(2*cap(c.chunks[last]), maxChunk)
		} else if c.first > 0 {
			size = c.first
		}
		c.chunks = append(c.chunks, make([]T, 0, size))
		last++
	}
	c.chunks[last] = append(c.chunks[last], x)
	c.n++
}

// each calls f for every element in order.
func (c *chunked[T]) each(f func(T)) {
	for _, ch := range c.chunks {
		for _, x := range ch {
			f(x)
		}
	}
}

// flat returns the elements as one slice and empties c, releasing its
// chunks as they are copied.
func (c *chunked[T]) flat() []T {
	out := make([]T, 0, c.n)
	for i, ch := range c.chunks {
		out = append(out, ch...)
		c.chunks[i] = nil
	}
	*c = chunked[T]{}
	return out
}

// join appends the elements of o, which must not be used after.
func (c *chunked[T]) join(o *chunked[T]) {
	c.chunks = append(c.chunks, o.chunks...)
	c.n += o.n
	*o = chunked[T]{}
}

// trim copies the last chunk to a slice of its length when it is mostly
// empty, so that many sequences joined hold little more than their
// elements.
func (c *chunked[T]) trim() {
	last := len(c.chunks) - 1
	if last >= 0 && cap(c.chunks[last])-len(c.chunks[last]) > len(c.chunks[last])/8 {
		c.chunks[last] = append([]T(nil), c.chunks[last]...)
	}
}
