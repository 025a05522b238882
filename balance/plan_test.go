package balance

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestStarts: ranges in whole slices (but the last), in proportion to the
// shares, every server at least its probe, and errors named.
func TestStarts(t *testing.T) {
	for _, c := range []struct {
		shares          []float64
		m, slice, probe uint64
		want            []uint64
	}{
		{[]float64{1, 1, 1, 1}, 100, 1, 0, []uint64{0, 25, 50, 75}},
		{[]float64{1, 3}, 100, 10, 0, []uint64{0, 30}},       // 2.5 and 7.5 slices: the larger remainder first
		{[]float64{0, 1, 1}, 100, 10, 5, []uint64{0, 5, 50}}, // the probe from the first largest
		{[]float64{0, 0, 0}, 90, 10, 0, []uint64{0, 30, 60}}, // no shares: even
		{[]float64{1, 1}, 95, 10, 0, []uint64{0, 45}},        // 10 slices, the first largest range has the part one
	} {
		got, err := Starts(c.shares, c.m, c.slice, c.probe)
		if err != nil || !equal(got, c.want) {
			t.Errorf("Starts(%v, %d, %d, %d) = %v, %v; want %v", c.shares, c.m, c.slice, c.probe, got, err, c.want)
		}
	}
	rng := rand.New(rand.NewPCG(4, 4))
	for range 500 {
		n := 1 + rng.IntN(12)
		m := uint64(n) + rng.Uint64N(5000)
		slice, probe := 1+rng.Uint64N(300), rng.Uint64N(m/uint64(n)+1)
		shares := make([]float64, n)
		for i := range shares {
			if rng.IntN(3) > 0 {
				shares[i] = rng.Float64() * 10
			}
		}
		st, err := Starts(shares, m, slice, probe)
		if err != nil {
			t.Fatal(err)
		}
		for i := range st {
			end := m
			if i+1 < n {
				end = st[i+1]
			}
			if end < st[i] || end-st[i] < probe {
				t.Fatalf("shares %v, m %d, slice %d, probe %d: starts %v: server %d has %d keys", shares, m, slice, probe, st, i, end-st[i])
			}
		}
		if st[0] != 0 {
			t.Fatalf("starts %v", st)
		}
	}
	for _, c := range []struct {
		shares          []float64
		m, slice, probe uint64
		err             string
	}{
		{nil, 10, 1, 0, "no servers"},
		{[]float64{1}, 10, 0, 0, "slice of 0 keys"},
		{[]float64{1, 1}, 10, 1, 6, "2 servers of at least 6 probe keys need 12 keys, the model has 10"},
		{[]float64{1, math.NaN()}, 10, 1, 0, "share 1 is NaN"},
	} {
		if _, err := Starts(c.shares, c.m, c.slice, c.probe); err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("Starts(%v, %d, %d, %d): %v, want %q", c.shares, c.m, c.slice, c.probe, err, c.err)
		}
	}
}

func equal(a, b []uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestFitAndLevel: a fit recovers an exact line; the level equalises the
// loaded lines' times, gives nothing to lines above it, and beats every
// other split found by random search.
func TestFitAndLevel(t *testing.T) {
	l := Fit([]float64{1, 2, 4}, []float64{3, 5, 9})
	if math.Abs(l.A-1) > 1e-9 || math.Abs(l.B-2) > 1e-9 {
		t.Fatalf("fit %+v, want A 1, B 2", l)
	}
	if l := Fit([]float64{5, 5}, []float64{1, 3}); math.Abs(l.B-0.4) > 1e-12 || l.A != 0 {
		t.Fatalf("one load: fit %+v, want the line through the origin and the means", l)
	}
	rng := rand.New(rand.NewPCG(9, 9))
	for range 300 {
		n := 1 + rng.IntN(6)
		lines := make([]Line, n)
		for i := range lines {
			lines[i] = Line{A: rng.Float64() * 3, B: 0.1 + rng.Float64()}
		}
		total := 1 + rng.Float64()*10
		m := Level(lines, total)
		var sum, worst float64
		for i, mi := range m {
			if mi < 0 {
				t.Fatalf("negative share %v", m)
			}
			sum += mi
			worst = max(worst, lines[i].A+lines[i].B*mi)
		}
		if math.Abs(sum-total) > 1e-9*total {
			t.Fatalf("shares %v sum to %v, want %v", m, sum, total)
		}
		for range 200 {
			r := make([]float64, n)
			var s float64
			for i := range r {
				r[i] = rng.Float64()
				s += r[i]
			}
			var w float64
			for i := range r {
				w = max(w, lines[i].A+lines[i].B*r[i]/s*total)
			}
			if w < worst-1e-9 {
				t.Fatalf("lines %+v total %v: level %v takes %v, a random split %v takes %v", lines, total, m, worst, r, w)
			}
		}
	}
}
