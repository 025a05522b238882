package balance

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestSegmentByHand(t *testing.T) {
	for _, c := range []struct {
		M, x  float64
		n     int
		probe Probe
		want  []float64
	}{
		{10, 4, 1, Probe{}, []float64{4, 4, 2}},
		{10, 3, 2, Probe{Num: 1, Size: 0.5}, []float64{0.5, 0.5, 3, 3, 3}},
		{10, 10, 3, Probe{}, []float64{10}},
		{1, 1, 2, Probe{Num: 1, Size: 0.5}, []float64{0.5, 0.5}},
	} {
		got, err := Segment(c.M, c.x, c.n, c.probe)
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("Segment(%v, %v, %d, %+v) = %v, %v; want %v", c.M, c.x, c.n, c.probe, got, err, c.want)
		}
	}
}

func TestAssignByHand(t *testing.T) {
	for _, c := range []struct {
		name  string
		m     []float64
		paras []float64
		probe Probe
		want  []int
	}{
		// Remaining (3,1,2); each slice to the largest remaining, the first
		// on ties: 0 (→2,1,2), 0 (→1,1,2), 2 (→1,1,1), 0 (→0,1,1),
		// 1 (→0,0,1), 2.
		{"no probes", []float64{3, 1, 2}, []float64{1, 1, 1, 1, 1, 1}, Probe{}, []int{0, 0, 2, 0, 1, 2}},
		// Segment(6, 1.5, 3, {1, 0.5}): each server first takes a probe
		// slice, idle server 0 too: remaining (−0.5, 3.5, 1.5); then 1.5 to
		// 1 (→2), 1.5 to 1 (→0.5), 1.5 to 2 (→0). Loads (0.5, 3.5, 2).
		{"probes first", []float64{0, 4, 2}, []float64{0.5, 0.5, 0.5, 1.5, 1.5, 1.5}, Probe{Num: 1, Size: 0.5}, []int{0, 1, 2, 1, 1, 2}},
		// Probe slices are found by size wherever they are: server 0 takes
		// slice 1, server 1 slice 3; remaining (1, 1); slice 0 to 0, slice
		// 2 to 1.
		{"interleaved probes", []float64{1.5, 1.5}, []float64{1, 0.5, 1, 0.5}, Probe{Num: 1, Size: 0.5}, []int{0, 0, 1, 1}},
		// Two probes each, but only two probe slices: server 0 takes both
		// (remaining 0.5, 1.5), server 1 none; slice 0 to 1, slice 2 to 0.
		{"probes run out", []float64{1.5, 1.5}, []float64{1, 0.5, 1, 0.5}, Probe{Num: 2, Size: 0.5}, []int{1, 0, 0, 0}},
	} {
		got, err := Assign(c.m, c.paras, c.probe)
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("%s: %v, %v; want %v", c.name, got, err, c.want)
		}
	}
}

// assignRef is a slow restatement of Alg. 2: the probe slices in order,
// Num to each server in turn; then, for each other slice, the servers
// sorted by remaining load minus the slice (stable, so the first on ties)
// and the first one takes it.
func assignRef(m, paras []float64, probe Probe) []int {
	rem := slices.Clone(m)
	owner := slices.Repeat([]int{-1}, len(paras))
	var probes []int
	for j, v := range paras {
		if probe.Num > 0 && v == probe.Size {
			probes = append(probes, j)
		}
	}
	for k, j := range probes {
		if i := k / probe.Num; i < len(m) {
			owner[j] = i
			rem[i] -= paras[j]
		}
	}
	for j, v := range paras {
		if owner[j] >= 0 {
			continue
		}
		servers := make([]int, len(m))
		for i := range servers {
			servers[i] = i
		}
		slices.SortStableFunc(servers, func(a, b int) int { return cmp.Compare(rem[b]-v, rem[a]-v) })
		owner[j] = servers[0]
		rem[servers[0]] -= v
	}
	return owner
}

func TestAssignProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(6, 7))
	withProbes, overloaded := 0, 0
	for trial := range 2000 {
		n := 1 + r.IntN(8)
		p := randomModel(r, n)
		p.M = 1e4 * (1 + r.Float64())
		m, err := p.Solve()
		if err != nil {
			t.Fatal(err)
		}
		x := p.M * math.Pow(10, -2.5*r.Float64())
		probe := Probe{}
		if trial%2 == 1 {
			num := 1 + r.IntN(3)
			probe = Probe{Num: num, Size: min(x, p.M/float64(2*n*num)) * (0.05 + 0.5*r.Float64())}
			withProbes++
		}
		paras, err := Segment(p.M, x, n, probe)
		if err != nil {
			t.Fatal(err)
		}
		if trial%3 == 0 {
			r.Shuffle(len(paras), func(a, b int) { paras[a], paras[b] = paras[b], paras[a] })
		}
		total := 0.0
		for _, v := range paras {
			total += v
		}
		if !near(total, p.M, 1e-12) {
			t.Fatalf("Segment sums to %v, want %v", total, p.M)
		}
		owner, err := Assign(m, paras, probe)
		if err != nil {
			t.Fatal(err)
		}
		if want := assignRef(m, paras, probe); !slices.Equal(owner, want) {
			t.Fatalf("m = %v, paras = %v, %+v:\n got %v\nwant %v", m, paras, probe, owner, want)
		}

		// Every slice exactly once, to a real server.
		if len(owner) != len(paras) {
			t.Fatalf("%d owners for %d slices", len(owner), len(paras))
		}
		got := make([]float64, n)
		probeLoad := make([]float64, n)
		probesLeft := slices.Repeat([]int{probe.Num}, n)
		for j, i := range owner {
			if i < 0 || i >= n {
				t.Fatalf("slice %d owned by %d of %d servers", j, i, n)
			}
			got[i] += paras[j]
			if probe.Num > 0 && paras[j] == probe.Size && probesLeft[i] > 0 {
				probesLeft[i]--
				probeLoad[i] += paras[j]
			}
		}
		// Within one slice of the target, unless probe slices alone push
		// some server past its target by O in all: then
		// m_i − assigned_i ∈ [min(m_i − probes_i, −p_max), max(p_max, O)].
		pmax := slices.Max(paras)
		O := 0.0
		for i := range m {
			O += max(0, probeLoad[i]-m[i])
		}
		if O > 0 {
			overloaded++
		}
		eps := 1e-9 * p.M
		for i := range m {
			rest := m[i] - got[i]
			if lo := min(m[i]-probeLoad[i], -pmax); rest < lo-eps {
				t.Fatalf("server %d: target %v, assigned %v, below %v", i, m[i], got[i], lo)
			}
			if hi := max(pmax, O); rest > hi+eps {
				t.Fatalf("server %d: target %v, assigned %v, short by more than %v", i, m[i], got[i], hi)
			}
			if O == 0 && math.Abs(rest) > pmax+eps {
				t.Fatalf("server %d: target %v, assigned %v, more than a slice (%v) off", i, m[i], got[i], pmax)
			}
		}
	}
	if overloaded == 0 || overloaded == withProbes {
		t.Fatalf("%d of %d probed instances overloaded a server: both cases must occur", overloaded, withProbes)
	}
}
