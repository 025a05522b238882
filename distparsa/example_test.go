package distparsa_test

import (
	"context"
	"fmt"

	"colo/distparsa"
	"colo/graph"
	"colo/partition"
	"colo/placement"
)

// ExampleInProcess partitions a generated graph on a parameter server of
// two machines in this process, under BSP: the placement depends on the
// seed and the number of workers only.
func ExampleInProcess() {
	g, err := graph.Sparse(graph.SparseConfig{Samples: 2000, Params: 500, Gamma: 0.9, Seed: 1})
	if err != nil {
		panic(err)
	}
	opt := partition.Options{K: 4, Seed: 1, Parsa: partition.ParsaOptions{Init: partition.InitGlobal}}
	p, rep, err := distparsa.InProcess(context.Background(), g, opt, distparsa.Config{Workers: 2}, nil)
	if err != nil {
		panic(err)
	}
	c, err := placement.Evaluate(g, p, 0)
	if err != nil {
		panic(err)
	}
	fmt.Printf("%d blocks, %d and %d on the two workers, %s, every sample placed: %v\n",
		rep.Parsa.Blocks, rep.PerWorker[0].Blocks, rep.PerWorker[1].Blocks, rep.Consistency, p.Validate(g) == nil)
	fmt.Println("max samples per machine:", c.MaxSamples)
	// Output:
	// 16 blocks, 8 and 8 on the two workers, bsp, every sample placed: true
	// max samples per machine: 500
}
