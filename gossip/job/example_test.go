package job_test

import (
	"context"
	"fmt"
	"log"

	"colo/app"
	"colo/gossip"
	"colo/gossip/job"
	"colo/shard"
)

// Example trains an mlp on Fashion-MNIST by gossip over 4 workers of
// relative speeds 1, 2, 4 and 8, on submodular shards in proportion to
// their speeds, over 1 Gbit/s emulated links, and scores the average
// model on the test set.
func Example() {
	j, err := app.DefaultJob("mlp")
	if err != nil {
		log.Fatal(err)
	}
	j.Data.Train, j.Data.Test = "train-images-idx3-ubyte.gz", "t10k-images-idx3-ubyte.gz"
	err = app.SetOptions(&j, map[string]any{"labels": "train-labels-idx1-ubyte.gz", "test_labels": "t10k-labels-idx1-ubyte.gz"})
	if err != nil {
		log.Fatal(err)
	}
	d, err := job.Load(j)
	if err != nil {
		log.Fatal(err)
	}
	cfg := gossip.DefaultConfig()
	cfg.Speeds, cfg.LocalSteps = []float64{1, 2, 4, 8}, 2
	shards, _, err := d.Shards(job.ShardSpec{Scheme: string(shard.SchemeSubmodular), Function: shard.FacilityLocation}, cfg, 1)
	if err != nil {
		log.Fatal(err)
	}
	rep, err := d.Train(context.Background(), cfg, shards, job.Net{Link: 125e6})
	if err != nil {
		log.Fatal(err)
	}
	if rep.Eval.Accuracy != nil {
		fmt.Printf("test accuracy %.3f\n", *rep.Eval.Accuracy)
	}
}
