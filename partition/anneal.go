package partition

import (
	"math"
	"math/rand/v2"
	"slices"

	"colo/graph"
)

// Simulated annealing of the samples on the floor of the busiest machine.
//
// Whatever the parameters' placement, machine i sends or receives at least
// one message for every parameter it needs that another machine needs too:
// it either pulls the parameter or serves it to the others. That count,
// the boundary B_i, is a floor under T_i that no placement of the
// parameters can go below, and once FM has packed the samples for the
// connectivity, the busiest machine usually sits at it (ego-Facebook,
// k = 8: T_max 797 with B_i = 797 on that machine, while the mean T_i is
// 462). Lowering it takes moving samples off that machine in groups, or
// swapping them, through states where its boundary first grows: FM, which
// follows the gain in connectivity, does not.
//
// anneal lowers max_i B_i + annealSumWeight·Σ_i B_i by simulated
// annealing: a step takes a random sample u, a machine b that needs one of
// u's parameters (a random user of a random parameter of u), and moves u
// there, or, when b is full, swaps u with a random sample of b; it keeps
// the step if the cost does not rise, or with probability e^(−Δ/t)
// otherwise, where the temperature t falls linearly from annealStartTemp to
// zero. A step is rated before it is made (moveDelta), in O(|N(u)|) plus
// O(k) for each parameter whose number of machines would pass 1↔2, and
// made only if kept. It returns the best state seen.

// annealSumWeight is the weight of Σ_i B_i beside max_i B_i: it keeps
// the other machines from filling with boundary while the busiest one is
// worked on. On ego-Facebook (six seeds, 100 steps per sample) 0.2 kept
// T_max where 0.05 had it (k = 8: 739–797) and T_sum 5–25% lower (k = 16:
// 7,700–8,200 instead of 9,700–11,700, T_max 939–992 instead of 937–979).
const annealSumWeight = 0.2

// annealStartTemp is the starting temperature, in units of the cost: a
// step that raises the busiest machine's boundary by 1 is kept with
// probability 1/e at first. On ego-Facebook (k = 8, six seeds, 100 steps
// per sample) 1 reached T_max 742–801, 3 reached 756–830 and 6
// 799–830, each at more cost than the one before (more steps kept).
const annealStartTemp = 1.0

// annealer is the state of anneal: the machine of each sample, the users
// of each parameter on each machine, the number of machines that need
// each parameter, and each machine's boundary, size and members.
type annealer struct {
	g      *graph.Graph
	k      int
	data   []int32
	cnt    []int32 // cnt[v*k+i]: samples of machine i that need v
	lam    []int32 // machines that need v
	bnd    []int64 // B_i
	sum    int64   // Σ_i B_i
	mem    []int64 // |N(U_i)|
	hi     []int64 // the size bound of each machine
	theta  int64   // the memory bound θ (0: none)
	member [][]int32
	pos    []int32 // index of each sample in member[data[u]]
}

// newAnnealer counts the state of data.
func newAnnealer(g *graph.Graph, k int, data []int32, hi []int64, theta int64) *annealer {
	n, m := g.NumSamples(), g.NumParams()
	a := &annealer{g: g, k: k, data: data, cnt: make([]int32, m*k), lam: make([]int32, m),
		bnd: make([]int64, k), mem: make([]int64, k), hi: hi, theta: theta,
		member: make([][]int32, k), pos: make([]int32, n)}
	for u := 0; u < n; u++ {
		i := data[u]
		a.pos[u] = int32(len(a.member[i]))
		a.member[i] = append(a.member[i], int32(u))
		for _, v := range g.Params(u) {
			c := &a.cnt[int(v)*k+int(i)]
			if *c == 0 {
				a.lam[v]++
				a.mem[i]++
			}
			*c++
		}
	}
	for v := 0; v < m; v++ {
		if a.lam[v] < 2 {
			continue
		}
		for i := 0; i < k; i++ {
			if a.cnt[v*k+i] > 0 {
				a.bnd[i]++
				a.sum++
			}
		}
	}
	return a
}

// shared adds d to the boundary of every machine that needs v.
func (a *annealer) shared(v int, d int64) {
	row := a.cnt[v*a.k : v*a.k+a.k]
	for i, c := range row {
		if c > 0 {
			a.bnd[i] += d
			a.sum += d
		}
	}
}

// move puts sample u on machine b.
func (a *annealer) move(u int, b int32) {
	k, src := a.k, a.data[u]
	for _, v := range a.g.Params(u) {
		c := &a.cnt[int(v)*k+int(src)]
		if *c--; *c == 0 {
			a.mem[src]--
			if a.lam[v] >= 2 {
				a.bnd[src]--
				a.sum--
			}
			if a.lam[v]--; a.lam[v] == 1 {
				a.shared(int(v), -1)
			}
		}
		c = &a.cnt[int(v)*k+int(b)]
		if *c == 0 {
			a.mem[b]++
			if a.lam[v]++; a.lam[v] == 2 {
				a.shared(int(v), 1)
			}
			if a.lam[v] >= 2 {
				a.bnd[b]++
				a.sum++
			}
		}
		*c++
	}
	// Membership: swap u out with the last member of src.
	ms := a.member[src]
	last := ms[len(ms)-1]
	ms[a.pos[u]] = last
	a.pos[last] = a.pos[u]
	a.member[src] = ms[:len(ms)-1]
	a.pos[u] = int32(len(a.member[b]))
	a.member[b] = append(a.member[b], int32(u))
	a.data[u] = b
}

// paramDelta adds to d the change of each machine's boundary, and
// returns the change of Σ_i B_i, if one user of parameter v moved from
// machine src to dst, without moving it.
func (a *annealer) paramDelta(v int, src, dst int32, d []int64) int64 {
	row := a.cnt[v*a.k : v*a.k+a.k]
	leaves, joins := row[src] == 1, row[dst] == 0
	l := a.lam[v]
	l2 := l
	if leaves {
		l2--
	}
	if joins {
		l2++
	}
	was, is := l >= 2, l2 >= 2
	var sum int64
	if was != is {
		// Every other machine that needs v gains or loses it as shared.
		x := int64(-1)
		if is {
			x = 1
		}
		for i, c := range row {
			if c > 0 && int32(i) != src && int32(i) != dst {
				d[i] += x
				sum += x
			}
		}
	}
	if was {
		d[src]--
		sum--
	}
	if is && !leaves {
		d[src]++
		sum++
	}
	if was && !joins {
		d[dst]--
		sum--
	}
	if is {
		d[dst]++
		sum++
	}
	return sum
}

// costAfter is the cost max_i B_i + annealSumWeight·Σ_i B_i if each B_i
// changed by d[i] and Σ_i B_i by dsum.
func (a *annealer) costAfter(d []int64, dsum int64) float64 {
	var hi int64
	for i, b := range a.bnd {
		hi = max(hi, b+d[i])
	}
	return float64(hi) + annealSumWeight*float64(a.sum+dsum)
}

// moveDelta fills d (zeroed first) with the change of each B_i if u
// moved to dst and, when y ≥ 0, y moved to u's machine at the same time,
// and returns the change of Σ_i B_i. A parameter of both u and y keeps
// its counts, so only the parameters of one of the two count.
func (a *annealer) moveDelta(u int, dst int32, y int32, d []int64) int64 {
	clear(d)
	src := a.data[u]
	pu := a.g.Params(u)
	if y < 0 {
		var sum int64
		for _, v := range pu {
			sum += a.paramDelta(int(v), src, dst, d)
		}
		return sum
	}
	py := a.g.Params(int(y))
	var sum int64
	i, j := 0, 0
	for i < len(pu) || j < len(py) {
		switch {
		case j == len(py) || (i < len(pu) && pu[i] < py[j]):
			sum += a.paramDelta(int(pu[i]), src, dst, d)
			i++
		case i == len(pu) || py[j] < pu[i]:
			sum += a.paramDelta(int(py[j]), dst, src, d)
			j++
		default:
			i++
			j++
		}
	}
	return sum
}

// overMemory reports whether machine i is above θ.
func (a *annealer) overMemory(i int32) bool { return a.theta > 0 && a.mem[i] > a.theta }

// anneal runs steps steps of simulated annealing on data (see above),
// within the size bounds hi and the memory bound theta (0: none), and
// leaves in data the best state seen. It returns max_i B_i before and
// after.
func anneal(g *graph.Graph, k int, data []int32, hi []int64, theta int64, steps int, rng *rand.Rand) (before, after int64) {
	a := newAnnealer(g, k, data, hi, theta)
	before = slices.Max(a.bnd)
	n := g.NumSamples()
	delta := make([]int64, k)
	cur := a.costAfter(delta, 0)
	best, after := cur, before
	bestData := append([]int32(nil), data...)
	dirty := make([]bool, n) // moved since bestData was brought up to date
	var changed []int32
	for step := 0; step < steps; step++ {
		u := rng.IntN(n)
		ps := g.Params(u)
		if len(ps) == 0 {
			continue
		}
		users := g.Samples(int(ps[rng.IntN(len(ps))]))
		src, dst := data[u], data[users[rng.IntN(len(users))]]
		if dst == src {
			continue
		}
		temp := annealStartTemp * (1 - float64(step)/float64(steps))
		swap := int64(len(a.member[dst])) >= a.hi[dst]
		y := int32(-1)
		if swap {
			y = a.member[dst][rng.IntN(len(a.member[dst]))]
		}
		dsum := a.moveDelta(u, dst, y, delta)
		next := a.costAfter(delta, dsum)
		if next > cur && !(temp > 0 && rng.Float64() < math.Exp((cur-next)/temp)) {
			continue
		}
		overSrc, overDst := a.overMemory(src), a.overMemory(dst)
		a.move(u, dst)
		if swap {
			a.move(int(y), src)
		}
		if (!overSrc && a.overMemory(src)) || (!overDst && a.overMemory(dst)) {
			if swap {
				a.move(int(y), dst)
			}
			a.move(u, src)
			continue
		}
		cur = next
		for _, x := range [2]int32{int32(u), y} {
			if x >= 0 && !dirty[x] {
				dirty[x] = true
				changed = append(changed, x)
			}
		}
		if cur < best {
			// Bring the copy of the best state up to date with the
			// samples moved since it was taken.
			best, after = cur, slices.Max(a.bnd)
			for _, x := range changed {
				bestData[x], dirty[x] = data[x], false
			}
			changed = changed[:0]
		}
	}
	copy(data, bestData)
	return before, after
}
