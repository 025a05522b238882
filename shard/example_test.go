package shard_test

import (
	"fmt"
	"math/rand/v2"

	"colo/dataset"
	"colo/shard"
)

// Stratified sharding deals each class round-robin: every worker gets the
// same number of samples of every class, give or take one.
func ExampleShard() {
	features := []float32{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}
	labels := []int{0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 2, 2}
	d, err := dataset.New(features, labels, 1, 3)
	if err != nil {
		panic(err)
	}
	o := shard.DefaultOptions()
	o.Workers, o.Scheme = 2, shard.SchemeStratified
	res, err := shard.Shard(d, o, rand.New(rand.NewPCG(1, 0)))
	if err != nil {
		panic(err)
	}
	sum, err := shard.Summarize(d, res, shard.SummaryOptions{CoverageSample: -1}, nil)
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Assign)
	for _, s := range sum.Shards {
		fmt.Println(s.Worker, s.Size, s.ClassCounts)
	}
	// Output:
	// [0 1 0 1 0 1 0 1 0 1 0 1]
	// 0 6 [2 3 1]
	// 1 6 [2 3 1]
}

// Submodular sharding splits each class in proportion to the workers'
// speeds: here 1:3, so 2 and 6 samples of each class of 8.
func ExampleSubmodular() {
	rng := rand.New(rand.NewPCG(7, 0))
	var features []float32
	var labels []int
	for i := range 16 {
		features = append(features, float32(rng.NormFloat64()), float32(rng.NormFloat64()))
		labels = append(labels, i%2)
	}
	d, err := dataset.New(features, labels, 2, 2)
	if err != nil {
		panic(err)
	}
	o := shard.DefaultOptions()
	o.Workers, o.Scheme, o.Ratios = 2, shard.SchemeSubmodular, []float64{1, 3}
	res, err := shard.Shard(d, o, rng)
	if err != nil {
		panic(err)
	}
	sum, err := shard.Summarize(d, res, shard.SummaryOptions{Ratios: o.Ratios}, rng)
	if err != nil {
		panic(err)
	}
	for _, s := range sum.Shards {
		fmt.Println(s.Worker, s.Size, s.ClassCounts)
	}
	// Output:
	// 0 4 [2 2]
	// 1 12 [6 6]
}
