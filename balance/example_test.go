package balance_test

import (
	"fmt"

	"colo/balance"
)

// Three co-located nodes and a model of 6·10⁶ parameters. Row i of the
// link matrix is what node i sends at, in parameters per second, so the
// aggregate speeds are S = (4, 5, 6)·10⁶ (Eq. 8). The even split takes
// 2 s on the slowest node; the optimum moves load to the fast ones and
// every node then takes 1.6 s. The model is cut at Eq. 4's granularity,
// √(6·10⁶·1.2·10⁵/3) ≈ 489 898 parameters, plus one probe slice of 10⁴
// per server, and Alg. 2 hands the slices out: each server ends within
// a slice of its share.
func Example() {
	s := [][]float64{
		{0, 2e6, 2e6},
		{2e6, 0, 3e6},
		{3e6, 3e6, 0},
	}
	S, err := balance.Aggregate(s)
	if err != nil {
		panic(err)
	}
	p := balance.Model{M: 6e6, S: S}
	fmt.Printf("even split: round %.2f s\n", p.RoundTime([]float64{2e6, 2e6, 2e6}))

	m, moves, err := p.Distribute(balance.DistributeConfig{SimilarityThreshold: 1e-3, MaxMoves: 100})
	if err != nil {
		panic(err)
	}
	fmt.Printf("Alg. 1: %.0f after %d move, round %.2f s\n", m, moves, p.RoundTime(m))
	m, err = p.Solve()
	if err != nil {
		panic(err)
	}
	fmt.Printf("optimum: %.0f, round %.2f s\n", m, p.RoundTime(m))

	x, err := balance.Granularity(p.M, balance.PaperAlpha, p.N())
	if err != nil {
		panic(err)
	}
	probe := balance.Probe{Num: 1, Size: 1e4}
	paras, err := balance.Segment(p.M, x, p.N(), probe)
	if err != nil {
		panic(err)
	}
	owner, err := balance.Assign(m, paras, probe)
	if err != nil {
		panic(err)
	}
	load := make([]float64, p.N())
	for j, i := range owner {
		load[i] += paras[j]
	}
	fmt.Printf("x = %.0f, %d slices, owners %v\n", x, len(paras), owner)
	fmt.Printf("assigned %.0f\n", load)
	// Output:
	// even split: round 2.00 s
	// Alg. 1: [400000 2000000 3600000] after 1 move, round 1.60 s
	// optimum: [400000 2000000 3600000], round 1.60 s
	// x = 489898, 16 slices, owners [0 1 2 2 2 2 2 1 2 1 2 1 2 1 0 2]
	// assigned [499898 1969592 3530510]
}
