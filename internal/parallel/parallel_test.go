package parallel

import (
	"slices"
	"sync/atomic"
	"testing"
)

func TestFor(t *testing.T) {
	for _, tc := range []struct{ n, threads int }{{0, 4}, {1, 0}, {5, 1}, {100, 3}, {3, 16}, {7, -2}} {
		calls := make([]atomic.Int32, max(tc.n, 0))
		For(tc.n, tc.threads, func(i int) { calls[i].Add(1) })
		for i := range calls {
			if c := calls[i].Load(); c != 1 {
				t.Fatalf("n %d, threads %d: f(%d) called %d times", tc.n, tc.threads, i, c)
			}
		}
	}
	var order []int
	For(6, 1, func(i int) { order = append(order, i) })
	if !slices.Equal(order, []int{0, 1, 2, 3, 4, 5}) {
		t.Fatalf("one thread: calls in order %v", order)
	}
}
