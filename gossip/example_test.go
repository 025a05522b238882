package gossip_test

import (
	"fmt"

	"colo/gossip"
)

// The Metropolis–Hastings weights of a ring of four: each worker keeps a
// third and takes a third from each neighbour.
func ExampleMetropolisHastings() {
	top, _ := gossip.New("ring", 4)
	for _, row := range gossip.MetropolisHastings(top) {
		fmt.Printf("%.3f\n", row)
	}
	// Output:
	// [0.333 0.333 0.000 0.333]
	// [0.333 0.333 0.333 0.000]
	// [0.000 0.333 0.333 0.333]
	// [0.333 0.000 0.333 0.333]
}

// MATCHA on a ring of four: two matchings, each active half the time with
// a budget of 0.5.
func ExampleNewMatcha() {
	top, _ := gossip.New("ring", 4)
	m, _ := gossip.NewMatcha(top, 0.5)
	fmt.Println(m.Matchings)
	fmt.Printf("%.2f\n", m.P)
	// Output:
	// [[[0 1] [2 3]] [[0 3] [1 2]]]
	// [0.50 0.50]
}
