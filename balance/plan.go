package balance

import (
	"fmt"
	"math"
	"slices"
)

// Schemes of load distribution (colo train --balance).
const (
	// Average splits the model evenly and never moves it: network-agnostic
	// (seed 002's baseline, its ref. [17]).
	Average = "average"
	// Elastic models each server's transmission time as a linear function
	// of its load, fitted on the measured times, and equalises the
	// predicted times (seed 002's baseline, its ref. [18]).
	Elastic = "elastic"
	// Aware is seed 002's scheme: the links' throughputs measured on the
	// data messages (Eq. 6) give each node's speed (Eq. 8) and the shares
	// minimise the round time of Eq. 10 (Solve).
	Aware = "aware"
	// Oracle is Aware fed the true link rates of the emulated network: the
	// bound the others are measured against.
	Oracle = "oracle"
)

// Schemes returns the schemes.
func Schemes() []string { return []string{Average, Elastic, Aware, Oracle} }

// CheckScheme returns an error naming the schemes when s is none of them.
func CheckScheme(s string) error {
	if !slices.Contains(Schemes(), s) {
		return fmt.Errorf("balance scheme %q: want average, elastic, aware or oracle", s)
	}
	return nil
}

// Starts cuts m keys into consecutive ranges, one per server, of the
// shares given (any non-negative reals, scaled to sum to m; all 0: even)
// and returns the start of each server's range. Ranges are whole slices
// of slice keys, shared out by largest remainder; the largest range holds
// the part slice when slice does not divide m; then every server gets at
// least probe keys (the probe slices of Alg. 2, so that an idle server's
// links stay measured), taken from the largest ranges. It fails when the
// servers cannot all have probe keys.
func Starts(shares []float64, m, slice, probe uint64) ([]uint64, error) {
	n := len(shares)
	switch {
	case n == 0:
		return nil, fmt.Errorf("no servers")
	case slice == 0:
		return nil, fmt.Errorf("slice of 0 keys")
	case uint64(n)*probe > m:
		return nil, fmt.Errorf("%d servers of at least %d probe keys need %d keys, the model has %d", n, probe, uint64(n)*probe, m)
	}
	var total float64
	for i, s := range shares {
		if !(s >= 0) || math.IsInf(s, 1) {
			return nil, fmt.Errorf("share %d is %v", i, s)
		}
		total += s
	}
	if total == 0 {
		shares, total = slices.Repeat([]float64{1}, n), float64(n)
	}
	// Sizes in whole slices by largest remainder, then probes.
	units := (m + slice - 1) / slice
	size := make([]uint64, n)
	var used uint64
	type rem struct {
		i int
		f float64
	}
	rems := make([]rem, n)
	for i, s := range shares {
		q := s / total * float64(units)
		size[i] = uint64(q)
		used += size[i]
		rems[i] = rem{i, q - math.Floor(q)}
	}
	slices.SortStableFunc(rems, func(a, b rem) int {
		switch {
		case a.f > b.f:
			return -1
		case a.f < b.f:
			return 1
		}
		return 0
	})
	for k := 0; used < units; k++ {
		size[rems[k%n].i]++
		used++
	}
	keys := make([]uint64, n)
	for i := range size {
		keys[i] = size[i] * slice
	}
	// The last slice may be a part one: the largest range absorbs it.
	over := units*slice - m
	big := 0
	for i := range keys {
		if keys[i] > keys[big] {
			big = i
		}
	}
	keys[big] -= over
	for i := range keys {
		for keys[i] < probe {
			j := 0
			for k := range keys {
				if keys[k] > keys[j] {
					j = k
				}
			}
			give := min(probe-keys[i], keys[j]-probe)
			keys[j] -= give
			keys[i] += give
		}
	}
	starts := make([]uint64, n)
	for i := 1; i < n; i++ {
		starts[i] = starts[i-1] + keys[i-1]
	}
	return starts, nil
}

// Line is the fit t = A + B·m of a server's transmission time t against
// its load m (Elastic).
type Line struct{ A, B float64 }

// Fit returns the least-squares line through the points (m[k], t[k]); with
// fewer than two distinct loads, the line through the origin and their
// means. B is at least a tiny positive value, so that every server's time
// grows with its load.
func Fit(m, t []float64) Line {
	n := float64(len(m))
	if n == 0 {
		return Line{B: 1}
	}
	var sm, st, smm, smt float64
	for k := range m {
		sm, st, smm, smt = sm+m[k], st+t[k], smm+m[k]*m[k], smt+m[k]*t[k]
	}
	den := n*smm - sm*sm
	var l Line
	if den > 1e-12*max(1, smm*n) {
		l.B = (n*smt - sm*st) / den
		l.A = (st - l.B*sm) / n
	}
	if !(l.B > 0) {
		l = Line{B: st / max(sm, 1e-300)}
	}
	l.A = max(l.A, 0)
	l.B = max(l.B, 1e-18)
	return l
}

// Level returns the shares of total that give every line the same time
// where it has load, and no load to lines whose time without load is above
// that level: the water filling of min max_i (A_i + B_i·m_i) over
// Σ m_i = total, m_i ≥ 0.
func Level(lines []Line, total float64) []float64 {
	n := len(lines)
	m := make([]float64, n)
	if n == 0 {
		return m
	}
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		switch {
		case lines[a].A < lines[b].A:
			return -1
		case lines[a].A > lines[b].A:
			return 1
		}
		return 0
	})
	// With the k lines of smallest A active: T = (total + Σ A/B)/(Σ 1/B).
	var sa, sb, T float64
	for k, i := range order {
		sa += lines[i].A / lines[i].B
		sb += 1 / lines[i].B
		T = (total + sa) / sb
		if k+1 < n && lines[order[k+1]].A >= T {
			break
		}
	}
	for i, l := range lines {
		m[i] = max(0, (T-l.A)/l.B)
	}
	return m
}
