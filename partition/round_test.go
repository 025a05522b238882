package partition

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"colo/graph"
	"colo/placement"
)

// TestRefineRoundByHand walks RefineRound through two placements small
// enough to check by hand (k = 2, ε tiny: at most ⌈n/2⌉ samples a machine).
func TestRefineRoundByHand(t *testing.T) {
	for _, tc := range []struct {
		name        string
		rows        [][]uint32
		data, param []int32
		// Expected.
		before, after int64
		wantData      []int32
		wantParam     []int32
	}{{
		// Three samples use parameters a and b; machine 0 (u0, u1, full)
		// holds both, so machine 1 pulls two values and pushes two:
		// W = (0, 2), S = (2, 0), T = (2, 2), R = (2, 4). No sample can
		// move (machine 0 is full; u2 alone on machine 1 may not leave
		// it empty). Moving a to machine 1 gives W = S = (1, 1), R = (2,
		// 2); moving b then would undo it.
		name:     "a parameter changes hands",
		rows:     [][]uint32{{0, 1}, {0, 1}, {0, 1}},
		data:     []int32{0, 0, 1},
		param:    []int32{0, 0},
		before:   4,
		after:    2,
		wantData: []int32{0, 0, 1}, wantParam: []int32{1, 0},
	}, {
		// u0, u1 on machine 0 use a (held there); u2 on machine 1 uses
		// b (held there), u3 on machine 1 uses a: W = (0, 1), S = (1,
		// 0), R = (1, 2). Moving a to machine 1 only swaps the roles
		// (R = (2, 1)). Moving u3 to machine 0 (3 ≤ ⌈4/2 + ε⌉ = 3)
		// ends every pull: R = (0, 0), T_sum 0. No other sample move
		// helps: u0 or u1 joining machine 1 changes nothing, u2 joining
		// machine 0 makes it pull b.
		name:     "a sample joins its parameters",
		rows:     [][]uint32{{0}, {0}, {1}, {0}},
		data:     []int32{0, 0, 1, 1},
		param:    []int32{0, 1},
		before:   2,
		after:    0,
		wantData: []int32{0, 0, 1, 0}, wantParam: []int32{0, 1},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			g, err := graph.FromAdjacency(len(tc.param), tc.rows)
			if err != nil {
				t.Fatal(err)
			}
			p := &placement.Placement{K: 2, Data: tc.data, Param: tc.param}
			in := p.Clone()
			q, st, err := RefineRound(g, p, RoundOptions{Epsilon: 1e-9}, 1)
			if err != nil {
				t.Fatal(err)
			}
			if st.Before != tc.before || st.After != tc.after {
				t.Errorf("R_max %d → %d, want %d → %d", st.Before, st.After, tc.before, tc.after)
			}
			if !slices.Equal(q.Data, tc.wantData) || !slices.Equal(q.Param, tc.wantParam) {
				t.Errorf("data %v, param %v; want %v, %v", q.Data, q.Param, tc.wantData, tc.wantParam)
			}
			if !slices.Equal(p.Data, in.Data) || !slices.Equal(p.Param, in.Param) {
				t.Errorf("the input changed: %v %v", p.Data, p.Param)
			}
		})
	}
}

// randomPlacement places g's samples and parameters uniformly on k
// machines.
func randomPlacement(g *graph.Graph, k int, seed uint64) *placement.Placement {
	rng := placement.NewRand(seed)
	p := placement.New(k, g.NumSamples(), g.NumParams())
	for u := range p.Data {
		p.Data[u] = int32(rng.IntN(k))
	}
	for v := range p.Param {
		p.Param[v] = int32(rng.IntN(k))
	}
	return p
}

// checkRoundState compares the incremental statistics of r with the slow
// reference, placement.Evaluate of r's placement counted afresh.
func checkRoundState(t *testing.T, g *graph.Graph, r *roundState, what string) {
	t.Helper()
	p := &placement.Placement{K: r.k, Data: r.data, Param: r.param}
	c, err := placement.Evaluate(g, p, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(r.w, c.Worker) || !slices.Equal(r.s, c.Server) || r.tsum != c.TSum || r.rmax() != c.RMax || !slices.Equal(r.size, c.Samples) {
		t.Fatalf("%s: incremental W %v S %v T_sum %d R_max %d sizes %v; recounted W %v S %v T_sum %d R_max %d sizes %v",
			what, r.w, r.s, r.tsum, r.rmax(), r.size, c.Worker, c.Server, c.TSum, c.RMax, c.Samples)
	}
	for v := range r.c {
		set := r.sets[v*r.stride : (v+1)*r.stride]
		if set[0] != uint64(r.param[v]) {
			t.Fatalf("%s: parameter %d on machine %d, its record says %d", what, v, r.param[v], set[0])
		}
		for i := range r.k {
			used := set[1+i/64]>>(i%64)&1 == 1
			one := set[1+r.words+i/64]>>(i%64)&1 == 1
			if used != (r.cnt[v*r.k+i] > 0) || one != (r.cnt[v*r.k+i] == 1) {
				t.Fatalf("%s: parameter %d machine %d: in the set of users %v, of single users %v, count %d", what, v, i, used, one, r.cnt[v*r.k+i])
			}
		}
	}
	for u := range r.data {
		i := r.data[u]
		want := int32(0)
		for _, v := range g.Params(u) {
			if r.cnt[int(v)*r.k+int(i)] == 1 && r.param[v] != i {
				want++
			}
		}
		if r.ends[u] != want {
			t.Fatalf("%s: sample %d on machine %d: %d pulls end if it leaves, recounted %d", what, u, i, r.ends[u], want)
		}
	}
	for i := range r.k {
		if want := r.termOf(r.w[i], r.s[i]); r.term[i] != want {
			t.Fatalf("%s: term %d = %g, want %g", what, i, r.term[i], want)
		}
	}
}

// TestRoundMovesAgainstRecount checks every incremental gain of
// RefineRound against full recomputation: on random graphs and
// placements, the W and S that paramAfter and sampleAfter predict for a
// move to each machine equal placement.Evaluate's after the move, and the
// state stays equal to a recount along a random walk of moves; the last
// seeds have 65 and 66 machines, whose sets of users take two words, and
// 64 and 63, a full word and one short of it.
func TestRoundMovesAgainstRecount(t *testing.T) {
	for seed := uint64(1); seed <= 24; seed++ {
		k := 2 + int(seed%5)
		g := randomGraph(t, seed, 30+int(seed), 12+int(seed%7), 0.15)
		if seed > 20 {
			k = []int{65, 66, 64, 63}[seed-21]
			g = randomGraph(t, seed, 4*k, 12, 0.3)
		}
		p := randomPlacement(g, k, seed)
		r := newRoundState(g, p, RoundOptions{}.withDefaults())
		checkRoundState(t, g, r, "start")
		rng := placement.NewRand(seed + 100)
		for step := range 60 {
			if rng.IntN(2) == 0 {
				v := rng.IntN(g.NumParams())
				for j := range k {
					if j == int(r.param[v]) {
						continue
					}
					wo, so, wj, sj := r.paramAfter(v, j)
					q := p.Clone()
					q.Param[v] = int32(j)
					c, _ := placement.Evaluate(g, q, 0)
					o := p.Param[v]
					if c.Worker[o] != wo || c.Server[o] != so || c.Worker[j] != wj || c.Server[j] != sj {
						t.Fatalf("seed %d: parameter %d from %d to %d: predicted W/S %d/%d and %d/%d, recounted %d/%d and %d/%d",
							seed, v, o, j, wo, so, wj, sj, c.Worker[o], c.Server[o], c.Worker[j], c.Server[j])
					}
				}
				r.applyParam(v, rng.IntN(k))
			} else {
				u := rng.IntN(g.NumSamples())
				i := int(r.data[u])
				rem := r.sampleDeltas(u)
				if rem != int64(r.ends[u]) {
					t.Fatalf("seed %d: sample %d: %d pulls end if it leaves, its count says %d", seed, u, rem, r.ends[u])
				}
				for j := range k {
					if j == i {
						continue
					}
					q := p.Clone()
					q.Data[u] = int32(j)
					c, _ := placement.Evaluate(g, q, 0)
					for x := range k {
						if w, s := r.sampleAfter(j, x); w != c.Worker[x] || s != c.Server[x] {
							t.Fatalf("seed %d: sample %d from %d to %d: machine %d predicted W/S %d/%d, recounted %d/%d",
								seed, u, i, j, x, w, s, c.Worker[x], c.Server[x])
						}
					}
					if got := r.tsum + 2*(r.addW[j]-rem); got != c.TSum {
						t.Fatalf("seed %d: sample %d to %d: predicted T_sum %d, recounted %d", seed, u, j, got, c.TSum)
					}
				}
				if j := rng.IntN(k); j != i {
					r.applySample(u, j, rem)
				}
			}
			checkRoundState(t, g, r, fmt.Sprintf("seed %d step %d", seed, step))
		}
	}
}

// TestRefineRoundRandom checks RefineRound's promises on random graphs,
// from random placements and from Parsa's with Alg. 2's parameters: the
// input is left alone; the statistics are placement.Evaluate's of the
// result; R_max never rises; T_sum stays within the slack and every
// machine's samples within the bound; the same seed gives the same
// placement; and at the end no single sample or parameter move allowed by
// the bounds lowers the potential, checked by trying each.
func TestRefineRoundRandom(t *testing.T) {
	for seed := uint64(1); seed <= 12; seed++ {
		k := 2 + int(seed%6)
		g := randomGraph(t, seed, 80+4*int(seed), 40+int(seed), 0.06)
		starts := map[string]*placement.Placement{"random": randomPlacement(g, k, seed)}
		if pp, err := Parsa(g, Options{K: k, Seed: seed, Parsa: DefaultParsaOptions()}); err == nil {
			starts["parsa"] = pp
		} else {
			t.Fatal(err)
		}
		for name, p := range starts {
			in := p.Clone()
			before, _ := placement.Evaluate(g, p, 0)
			opt := RoundOptions{Slack: 0.01 * float64(seed%3)}
			q, st, err := RefineRound(g, p, opt, seed)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(p.Data, in.Data) || !slices.Equal(p.Param, in.Param) {
				t.Fatalf("seed %d %s: the input changed", seed, name)
			}
			c, err := placement.Evaluate(g, q, 0)
			if err != nil {
				t.Fatal(err)
			}
			o := opt.withDefaults()
			switch {
			case st.Before != before.RMax || st.After != c.RMax || st.TSumBefore != before.TSum || st.TSumAfter != c.TSum:
				t.Errorf("seed %d %s: stats %+v; evaluated R_max %d → %d, T_sum %d → %d", seed, name, st, before.RMax, c.RMax, before.TSum, c.TSum)
			case c.RMax > before.RMax:
				t.Errorf("seed %d %s: R_max rose %d → %d", seed, name, before.RMax, c.RMax)
			case float64(c.TSum) > float64(before.TSum)*(1+o.Slack):
				t.Errorf("seed %d %s: T_sum %d → %d, above the slack %g", seed, name, before.TSum, c.TSum, o.Slack)
			}
			hi := int64(math.Ceil((1 + o.Epsilon) * float64(g.NumSamples()) / float64(k)))
			for i, n := range c.Samples {
				if n > max(hi, before.Samples[i]) {
					t.Errorf("seed %d %s: machine %d has %d samples, bound %d", seed, name, i, n, max(hi, before.Samples[i]))
				}
			}
			again, _, _ := RefineRound(g, p, opt, seed)
			if !slices.Equal(again.Data, q.Data) || !slices.Equal(again.Param, q.Param) {
				t.Errorf("seed %d %s: not deterministic", seed, name)
			}
			if st.Converged && st.After < st.Before {
				// A local optimum of the last potential.
				r := newRoundState(g, q.Clone(), o)
				r.limit = before.TSum + int64(o.Slack*float64(before.TSum))
				r.ref = float64(before.RMax)
				for x := range r.hi {
					r.hi[x] = max(hi, before.Samples[x])
				}
				r.setPower(roundPowers[len(roundPowers)-1])
				for v := range g.NumParams() {
					if r.moveParam(v, k) {
						t.Errorf("seed %d %s: parameter %d still moves", seed, name, v)
					}
				}
				for u := range g.NumSamples() {
					if r.moveSample(u) {
						t.Errorf("seed %d %s: sample %d still moves", seed, name, u)
					}
				}
			}
		}
	}
}

// TestRoundPicksTheLowerRMax: the partitioner "rmax" (Best with
// Options.Round) returns a placement no worse in R_max than Best's
// balanced by direction, and with Options.Async it compares on T_max,
// which RefineRound does not lower, so it returns Best's own placement.
func TestRMaxPicksTheLowerRMax(t *testing.T) {
	run, err := Lookup("rmax")
	if err != nil {
		t.Fatal(err)
	}
	for seed := uint64(1); seed <= 4; seed++ {
		g := randomGraph(t, seed, 200, 80, 0.05)
		for _, directions := range []bool{false, true} {
			opt := Options{K: 4, Seed: seed, Directions: true}
			b, err := Best(g, opt)
			if err != nil {
				t.Fatal(err)
			}
			opt.Directions = directions
			r, err := run(g, opt)
			if err != nil {
				t.Fatal(err)
			}
			bc, _ := placement.Evaluate(g, b, 0)
			rc, _ := placement.Evaluate(g, r, 0)
			if rc.RMax > bc.RMax {
				t.Errorf("seed %d directions %v: rmax has R_max %d, best balanced %d", seed, directions, rc.RMax, bc.RMax)
			}
		}
		opt := Options{K: 4, Seed: seed, Async: true}
		b, err := Best(g, opt)
		if err != nil {
			t.Fatal(err)
		}
		r, err := run(g, opt)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(b.Data, r.Data) || !slices.Equal(b.Param, r.Param) {
			bc, _ := placement.Evaluate(g, b, 0)
			rc, _ := placement.Evaluate(g, r, 0)
			if rc.TMax > bc.TMax || (rc.TMax == bc.TMax && rc.TSum >= bc.TSum) {
				t.Errorf("seed %d async: rmax's T_max/T_sum %d/%d, best's %d/%d", seed, rc.TMax, rc.TSum, bc.TMax, bc.TSum)
			}
		}
	}
}

// TestParamMemo: along sweeps of parameter and sample moves on random
// graphs, every move that moveParam makes through its memo is the one
// bestParamMove computes afresh, and the memo is off above memoMaxK
// machines.
func TestParamMemo(t *testing.T) {
	hits := 0
	for seed := uint64(1); seed <= 10; seed++ {
		k := 2 + int(seed%7)
		g := randomGraph(t, seed, 60+int(seed), 30+int(seed%7), 0.12)
		p := randomPlacement(g, k, seed)
		r := newRoundState(g, p, RoundOptions{}.withDefaults())
		if r.memo == nil {
			t.Fatalf("seed %d: no memo at k = %d", seed, k)
		}
		for _, q := range roundPowers {
			r.setPower(q)
			for range 3 {
				for v := range g.NumParams() {
					o := int(r.param[v])
					row := r.cnt[v*k : v*k+k]
					if r.c[v] == 0 || (r.c[v] == 1 && row[o] > 0) {
						continue
					}
					key := int(r.sets[v*r.stride+1])*k + o
					if r.memo[key].gen == r.gen {
						hits++
					}
					want := r.bestParamMove(v, o, row)
					moved := r.moveParam(v, k)
					if moved != (want >= 0) || (moved && int(r.param[v]) != want) {
						t.Fatalf("seed %d q %d parameter %d: moved %v to %d, afresh %d", seed, q, v, moved, r.param[v], want)
					}
				}
				for u := range g.NumSamples() {
					r.moveSample(u)
				}
			}
		}
		checkRoundState(t, g, r, fmt.Sprintf("seed %d", seed))
	}
	if hits == 0 {
		t.Error("the memo was never used")
	}
	g := randomGraph(t, 1, 4*(memoMaxK+1), 12, 0.3)
	if r := newRoundState(g, randomPlacement(g, memoMaxK+1, 1), RoundOptions{}.withDefaults()); r.memo != nil {
		t.Errorf("a memo at k = %d", memoMaxK+1)
	}
}
