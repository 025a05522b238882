package transport

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// wireArrival is a message put on a wire in a test: at ns after the start,
// on flow key, of size bytes.
type wireArrival struct {
	at   int64
	key  Flow
	size int
}

// slowFQ is the reference: a deficit round robin that sends one byte per
// nanosecond, one byte at a time. It returns when each message has
// passed, in ns after the start.
func slowFQ(quantum int64, arrivals []wireArrival) []int64 {
	type msg struct {
		i   int
		rem int64
	}
	queues := map[Flow][]*msg{}
	var order []Flow
	var left int64
	done := make([]int64, len(arrivals))
	next := 0
	for t, pending := int64(0), len(arrivals); pending > 0; t++ {
		for ; next < len(arrivals) && arrivals[next].at == t; next++ {
			a := arrivals[next]
			if len(queues[a.key]) == 0 {
				if len(order) == 0 {
					left = quantum
				}
				order = append(order, a.key)
			}
			queues[a.key] = append(queues[a.key], &msg{next, int64(a.size)})
		}
		if len(order) == 0 {
			continue
		}
		k := order[0]
		h := queues[k][0]
		h.rem--
		left--
		if h.rem == 0 {
			done[h.i] = t + 1
			pending--
			queues[k] = queues[k][1:]
			if len(queues[k]) == 0 {
				order = order[1:]
				left = quantum
				continue
			}
		}
		if left == 0 {
			order = append(order[1:], k)
			left = quantum
		}
	}
	return done
}

// randomWireArrivals draws n messages on up to flows flows over span ns.
func randomWireArrivals(r *rand.Rand, n, flows int, span int64, maxSize int) []wireArrival {
	as := make([]wireArrival, n)
	for i := range as {
		as[i] = wireArrival{at: r.Int64N(span), key: Flow{NodeID(r.IntN(flows)), 9}, size: 1 + r.IntN(maxSize)}
	}
	slices.SortStableFunc(as, func(a, b wireArrival) int { return int(a.at - b.at) })
	return as
}

// runFQ puts arrivals on an fq of one byte per ns, advancing it also at
// the moments extra (ns), and returns when each message passed.
func runFQ(t *testing.T, quantum int, arrivals []wireArrival, extra []int64) []int64 {
	t.Helper()
	start := time.Unix(1000, 0)
	q := newFQ(1e9, quantum)
	q.at = start
	done := make([]int64, len(arrivals))
	for i := range done {
		done[i] = -1
	}
	ei := 0
	for i, a := range arrivals {
		for ; ei < len(extra) && extra[ei] <= a.at; ei++ {
			q.advance(start.Add(time.Duration(extra[ei])))
		}
		q.add(start.Add(time.Duration(a.at)), a.key, a.size, func(at time.Time) {
			if done[i] >= 0 {
				t.Errorf("message %d passed twice", i)
			}
			done[i] = int64(at.Sub(start))
		})
	}
	for {
		at, ok := q.next()
		if !ok {
			break
		}
		q.advance(at)
	}
	return done
}

// TestFQAgainstBytes: the closed form of fq passes every message at the
// nanosecond a byte-by-byte round robin does, whatever the quantum and
// however often it is advanced.
func TestFQAgainstBytes(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 35))
	for trial := range 300 {
		quantum := 1 + r.IntN(40)
		as := randomWireArrivals(r, 1+r.IntN(30), 1+r.IntN(6), 1+r.Int64N(2000), 1+r.IntN(300))
		want := slowFQ(int64(quantum), as)
		extra := make([]int64, r.IntN(20))
		for i := range extra {
			extra[i] = r.Int64N(3000)
		}
		slices.Sort(extra)
		if got := runFQ(t, quantum, as, nil); !slices.Equal(got, want) {
			t.Fatalf("trial %d, quantum %d, %v:\n got %v\nwant %v", trial, quantum, as, got, want)
		}
		if got := runFQ(t, quantum, as, extra); !slices.Equal(got, want) {
			t.Fatalf("trial %d, advanced also at %v:\n got %v\nwant %v", trial, extra, got, want)
		}
	}
}

// TestFQByHand: quantum 10, flow a queues 25 bytes at 0, flow b 5 bytes
// at 3 and 12 more at 4. Bytes: a 0–10, b 10–15 (its first message
// passes at 15) and 15–20, a 20–30, b 30–37 (passes at 37), a 37–42.
func TestFQByHand(t *testing.T) {
	a, b := Flow{1, 9}, Flow{2, 9}
	got := runFQ(t, 10, []wireArrival{{0, a, 25}, {3, b, 5}, {4, b, 12}}, nil)
	if want := []int64{42, 15, 37}; !slices.Equal(got, want) {
		t.Fatalf("passed at %v, want %v", got, want)
	}
}

// TestFQRate: at 12.5 MB/s, messages that keep the wire busy pass, the
// last of them, when their bytes divided by the rate have elapsed, and
// every message after it arrived plus its own bytes' time.
func TestFQRate(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 5))
	start := time.Unix(1000, 0)
	q := newFQ(12.5e6, DefaultQuantum)
	q.at = start
	var total int64
	var last time.Time
	for i := range 200 {
		size := 1 + r.IntN(200_000)
		total += int64(size)
		at := start.Add(time.Duration(i) * time.Microsecond)
		q.add(at, Flow{NodeID(i % 7), 9}, size, func(p time.Time) {
			if earliest := at.Add(time.Duration(float64(size) / 12.5e6 * 1e9)); p.Before(earliest) {
				t.Errorf("message %d of %d bytes passed %v after it came", i, size, p.Sub(at))
			}
			if p.After(last) {
				last = p
			}
		})
	}
	for {
		at, ok := q.next()
		if !ok {
			break
		}
		q.advance(at)
	}
	want := start.Add(time.Duration(float64(total) / 12.5e6 * 1e9))
	if d := last.Sub(want); d < -time.Nanosecond || d > time.Nanosecond {
		t.Fatalf("%d bytes at 12.5 MB/s ended %v after the start, want %v", total, last.Sub(start), want.Sub(start))
	}
}
