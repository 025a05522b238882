package gossip

import (
	"fmt"
	"slices"
	"strings"
)

// Topology is an undirected communication graph over N workers: Adj[i]
// lists the neighbours of worker i in increasing order, without i itself.
// Worker i exchanges models only with its neighbours.
type Topology struct {
	// Name is the topology's name (ring, torus, exponential, complete or
	// the weight file it was read from).
	Name string
	// N is the number of workers.
	N int
	// Adj are the neighbour lists.
	Adj [][]int
}

// Topologies lists the names New accepts.
func Topologies() []string { return []string{"ring", "torus", "exponential", "complete"} }

// New returns the named topology over n workers:
//
//   - ring: i ~ i±1 mod n (degree 2; n = 2 is one edge);
//   - torus: a r×c grid with wrap-around, r the largest divisor of n
//     with r ≤ √n (degree ≤ 4); n must have such a divisor r ≥ 2;
//   - exponential: i ~ i±2^k mod n for every 2^k < n (degree about
//     2·log2 n), the undirected exponential graph;
//   - complete: every pair.
//
// A single worker has no neighbours under every name.
func New(name string, n int) (*Topology, error) {
	if n < 1 {
		return nil, fmt.Errorf("topology %s: %d workers: want at least 1", name, n)
	}
	t := &Topology{Name: name, N: n, Adj: make([][]int, n)}
	add := func(i, j int) {
		i, j = ((i%n)+n)%n, ((j%n)+n)%n
		if i == j {
			return
		}
		if !slices.Contains(t.Adj[i], j) {
			t.Adj[i] = append(t.Adj[i], j)
			t.Adj[j] = append(t.Adj[j], i)
		}
	}
	switch name {
	case "ring":
		for i := range n {
			add(i, i+1)
		}
	case "torus":
		r := 1
		for d := 2; d*d <= n; d++ {
			if n%d == 0 {
				r = d
			}
		}
		if n > 1 && r == 1 {
			return nil, fmt.Errorf("topology torus: %d workers has no factorisation r×c with 2 ≤ r ≤ c: want a composite number such as 4, 6, 8 or 9", n)
		}
		c := n / max(r, 1)
		for i := range n {
			row, col := i/c, i%c
			add(i, row*c+(col+1)%c)
			add(i, ((row+1)%r)*c+col)
		}
	case "exponential":
		for i := range n {
			for h := 1; h < n; h *= 2 {
				add(i, i+h)
			}
		}
	case "complete":
		for i := range n {
			for j := i + 1; j < n; j++ {
				add(i, j)
			}
		}
	default:
		return nil, fmt.Errorf("topology %q: want one of %s", name, strings.Join(Topologies(), ", "))
	}
	for _, a := range t.Adj {
		slices.Sort(a)
	}
	return t, nil
}

// Degree returns the number of neighbours of worker i.
func (t *Topology) Degree(i int) int { return len(t.Adj[i]) }

// Edges returns every edge once, as (i, j) with i < j, in increasing
// order.
func (t *Topology) Edges() [][2]int {
	var out [][2]int
	for i, a := range t.Adj {
		for _, j := range a {
			if i < j {
				out = append(out, [2]int{i, j})
			}
		}
	}
	return out
}

// Connected reports whether every worker reaches every other one.
func (t *Topology) Connected() bool {
	if t.N <= 1 {
		return true
	}
	seen := make([]bool, t.N)
	stack := []int{0}
	seen[0] = true
	count := 1
	for len(stack) > 0 {
		i := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, j := range t.Adj[i] {
			if !seen[j] {
				seen[j] = true
				count++
				stack = append(stack, j)
			}
		}
	}
	return count == t.N
}

// Validate checks that t is a symmetric graph without self-loops and
// connected; the error names the topology.
func (t *Topology) Validate() error {
	if t.N < 1 || len(t.Adj) != t.N {
		return fmt.Errorf("topology %s: %d neighbour lists for %d workers", t.Name, len(t.Adj), t.N)
	}
	for i, a := range t.Adj {
		for _, j := range a {
			if j < 0 || j >= t.N || j == i {
				return fmt.Errorf("topology %s: worker %d has neighbour %d: want another worker in 0..%d", t.Name, i, j, t.N-1)
			}
			if !slices.Contains(t.Adj[j], i) {
				return fmt.Errorf("topology %s: %d lists %d as neighbour but not the other way round", t.Name, i, j)
			}
		}
	}
	if !t.Connected() {
		return fmt.Errorf("topology %s is not connected: the models of its components never mix; want a connected graph", t.Name)
	}
	return nil
}
