// Package parallel runs independent pieces of work on a bounded number of
// goroutines.
package parallel

import "sync"

// For calls f(i) for every i in [0, n) on up to threads goroutines (at
// least one), handing out the indices in ascending order, and returns when
// every call has. With one goroutine the calls run in order. f must be
// safe to call concurrently for distinct i.
func For(n, threads int, f func(i int)) {
	if n <= 0 {
		return
	}
	next := make(chan int, n)
	for i := range n {
		next <- i
	}
	close(next)
	var wg sync.WaitGroup
	for range max(1, min(threads, n)) {
		wg.Go(func() {
			for i := range next {
				f(i)
			}
		})
	}
	wg.Wait()
}
