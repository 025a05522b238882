// Package partition holds colo's partitioners: algorithms that place the
// samples and parameters of a graph on k machines so that the cost model of
// package placement is small.
//
// Every partitioner is a pure function of the graph, its options and a
// seed: it reads no files, keeps no global state and returns the same
// placement for the same input. Long runs report progress through
// Options.Progress.
//
// The algorithms:
//
//	random    uniform random samples and parameters, or balanced samples
//	          (|U_i| ≤ ⌈n/k⌉); the baseline of every comparison.
//
// Parameters of a data partition are assigned by AssignParams.
package partition

import (
	"fmt"
	"sort"
	"strings"

	"colo/graph"
	"colo/placement"
)

// Options are the settings shared by all partitioners.
type Options struct {
	// K is the number of machines, 1 ≤ K ≤ number of samples.
	K int
	// Seed seeds every random choice.
	Seed uint64
	// Balanced makes random placement deal samples evenly, |U_i| ≤ ⌈n/k⌉.
	Balanced bool
	// Theta is the memory bound θ on |N(U_i)| (0: none); partitioners that
	// honour it say so.
	Theta int64
	// Progress, when set, is called now and then with the work done and
	// the total, in an algorithm-defined unit.
	Progress func(done, total int64)
}

// Validate checks the options against a graph of n samples.
func (o Options) Validate(n int) error {
	if err := placement.CheckK(o.K, n); err != nil {
		return err
	}
	if o.Theta < 0 {
		return fmt.Errorf("theta = %d: want 0 (no bound) or a positive bound", o.Theta)
	}
	return nil
}

// Func is a partitioner.
type Func func(g *graph.Graph, opt Options) (*placement.Placement, error)

// algorithms lists the partitioners by name.
var algorithms = map[string]Func{
	"random": Random,
}

// Lookup returns the partitioner called name.
func Lookup(name string) (Func, error) {
	f, ok := algorithms[name]
	if !ok {
		return nil, fmt.Errorf("unknown algorithm %q: want one of %s", name, strings.Join(Names(), ", "))
	}
	return f, nil
}

// Names returns the names of the partitioners in alphabetical order.
func Names() []string {
	names := make([]string, 0, len(algorithms))
	for n := range algorithms {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
