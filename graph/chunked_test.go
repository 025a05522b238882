package graph

import (
	"slices"
	"testing"
)

func TestChunked(t *testing.T) {
	for _, n := range []int{0, 1, minChunk - 1, minChunk, minChunk + 1, 3*minChunk + 5, maxChunk + 3*minChunk} {
		var c chunked[int]
		var want []int
		for i := range n {
			c.add(i * 7)
			want = append(want, i*7)
		}
		for i, ch := range c.chunks {
			if cap(ch) > maxChunk || (i < len(c.chunks)-1 && len(ch) != cap(ch)) {
				t.Fatalf("n %d: chunk %d holds %d of %d", n, i, len(ch), cap(ch))
			}
		}
		var seen []int
		c.each(func(x int) { seen = append(seen, x) })
		got := c.flat()
		if !slices.Equal(got, want) || !slices.Equal(seen, want) {
			t.Fatalf("n %d: flat %d elements, each %d, want %d", n, len(got), len(seen), len(want))
		}
		if c.n != 0 || c.chunks != nil {
			t.Fatalf("n %d: flat left %d elements", n, c.n)
		}
	}
}
