package partition

import (
	"sync"
	"testing"
)

// TestBestProgressTotal: best reports one total from its first call on,
// its done never falls, it reaches the total exactly when the last start
// has ended, and every start's end is named.
func TestBestProgressTotal(t *testing.T) {
	g := randomGraph(t, 2, 400, 40, 0.08)
	for _, name := range []string{"best", "parsa+refine"} {
		var mu sync.Mutex
		var calls, phases int
		var first, last, lastDone int64
		fell := false
		var names []string
		run, err := Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		opt := Options{K: 4, Seed: 1,
			Progress: func(d, tot int64) {
				mu.Lock()
				defer mu.Unlock()
				if calls == 0 {
					first = tot
				}
				calls++
				if tot != first {
					t.Errorf("%s: total %d after %d", name, tot, first)
				}
				if d < lastDone {
					fell = true
				}
				lastDone, last = d, tot
			},
			Phase: func(n string, done, total int) {
				mu.Lock()
				defer mu.Unlock()
				phases++
				names = append(names, n)
				if done != phases {
					t.Errorf("%s: phase %q numbered %d/%d, want %d", name, n, done, total, phases)
				}
			}}
		if _, err := run(g, opt); err != nil {
			t.Fatal(err)
		}
		if calls == 0 || fell || lastDone != last || last == 0 {
			t.Errorf("%s: %d calls, done fell %v, ended at %d of %d", name, calls, fell, lastDone, last)
		}
		if phases < 2 {
			t.Errorf("%s: phases %q, want every part named", name, names)
		}
	}
}
