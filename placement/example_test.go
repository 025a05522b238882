package placement_test

import (
	"fmt"

	"colo/graph"
	"colo/placement"
)

// Three samples on two machines. Machine 0's worker needs parameters
// {0,1,2} and holds 0 and 2 on its server, so it pulls 1 from machine 1;
// machine 1's worker needs {2,3} and pulls 2 from machine 0.
func ExampleEvaluate() {
	g, _ := graph.FromAdjacency(4, [][]uint32{{0, 1}, {1, 2}, {2, 3}})
	p := &placement.Placement{K: 2, Data: []int32{0, 0, 1}, Param: []int32{0, 1, 0, 1}}
	c, _ := placement.Evaluate(g, p, 0)
	fmt.Println("memory", c.Memory, "worker", c.Worker, "server", c.Server)
	fmt.Println("T_max", c.TMax, "T_sum", c.TSum, "objective", c.Objective)
	// Output:
	// memory [3 2] worker [1 1] server [1 1]
	// T_max 2 T_sum 4 objective 4
}
