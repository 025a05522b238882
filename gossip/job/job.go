// Package job runs a decentralised training job of a dense model (package
// gossip on the mlp and cnn of package nn): it loads the data of a
// train.Job as app/dense does, shards it among the workers (random equal
// shards, or seed 003's ratio-constrained submodular shards with
// facility location or graph cut, in proportion to the workers' speeds),
// trains with gossip.Run over an emulated network, or with a process per
// worker on loopback (TrainProcesses, RunProcess), and scores the average
// model on the test set.
//
//	j, _ := app.DefaultJob("mlp")
//	j.Data.Train, j.Data.Test = "train-images-idx3-ubyte.gz", "t10k-images-idx3-ubyte.gz"
//	app.SetOptions(&j, map[string]any{"labels": "train-labels-idx1-ubyte.gz", "test_labels": "t10k-labels-idx1-ubyte.gz"})
//	d, _ := job.Load(j)
//	cfg := gossip.DefaultConfig()
//	cfg.Speeds, cfg.LocalSteps = []float64{1, 2, 4, 8}, 2
//	shards, _, _ := d.Shards(job.ShardSpec{Scheme: "submodular", Function: shard.FacilityLocation}, cfg, 1)
//	rep, _ := d.Train(ctx, cfg, shards, job.Net{Link: 125e6})
//
// (Example, with its errors handled, is compiled with the package's
// tests.)
package job

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"time"

	"colo/app/dense"
	"colo/dataset"
	"colo/gossip"
	"colo/ps/node"
	"colo/shard"
	"colo/train"
	"colo/transport"
)

// Data is a dense job's data and model, loaded once and trained many
// times.
type Data struct {
	App     *dense.App
	Samples *dataset.Dataset
	Test    *dataset.Dataset
	labels  []int32
}

// Load reads the training and test data of job (app/dense's options) and
// builds its model.
func Load(j train.Job) (*Data, error) {
	tr, te, err := dense.Load(j)
	if err != nil {
		return nil, err
	}
	return Open(j, tr, te)
}

// Open builds job's model for loaded training and test data (test may be
// nil: the training set is scored). The data trained and scored are the
// model's: standardised when the job's options say so (dense.Open).
func Open(j train.Job, tr, te *dataset.Dataset) (*Data, error) {
	a, err := dense.Open(j, tr, te)
	if err != nil {
		return nil, err
	}
	tr, te = a.Train, a.Test
	labels := make([]int32, tr.Len())
	for i, l := range tr.Labels {
		labels[i] = int32(l)
	}
	return &Data{App: a, Samples: tr, Test: te, labels: labels}, nil
}

// Learner returns the gossip learner of the model on the training data.
func (d *Data) Learner() *gossip.Dense {
	return &gossip.Dense{Model: d.App.Model, X: d.Samples.Features, Labels: d.labels}
}

// ShardSpec says how to shard: Scheme is a sharding scheme as a dense job
// names it (random, stratified, submodular, …) or a directory written by
// colo shard; Function is submodular's objective.
type ShardSpec struct {
	Scheme   string
	Function shard.Function
}

// Name returns how reports name the sharding: the scheme, or
// "facility"/"graphcut" for submodular.
func (s ShardSpec) Name() string {
	if s.Scheme == string(shard.SchemeSubmodular) {
		if s.Function == "" {
			return string(shard.FacilityLocation)
		}
		return string(s.Function)
	}
	return s.Scheme
}

// Shards splits the training samples among cfg.Workers workers as spec
// says, seeded by seed; submodular shards follow cfg.Speeds (Alg. 1's
// ratios), other schemes are equal. Samples a scheme broadcasts go to
// every worker. It returns the shards and the seconds sharding took.
func (d *Data) Shards(spec ShardSpec, cfg gossip.Config, seed uint64) ([][]int32, float64, error) {
	n := cfg.Workers
	var assign []int
	start := time.Now()
	if st, err := os.Stat(spec.Scheme); err == nil && st.IsDir() {
		var workers int
		if assign, workers, err = shard.ReadDir(spec.Scheme); err != nil {
			return nil, 0, err
		}
		if workers != n {
			return nil, 0, fmt.Errorf("%s shards the data among %d workers, the job has %d", spec.Scheme, workers, n)
		}
		if len(assign) != d.Samples.Len() {
			return nil, 0, fmt.Errorf("%s shards %d samples, %s has %d", spec.Scheme, len(assign), d.Samples.Source, d.Samples.Len())
		}
	} else {
		o, err := dense.ParseScheme(spec.Scheme)
		if err != nil {
			return nil, 0, err
		}
		o.Workers = n
		if o.Scheme == shard.SchemeSubmodular {
			o.Ratios = cfg.Speeds
			if spec.Function != "" {
				o.Function = spec.Function
			}
		}
		res, err := shard.Shard(d.Samples, o, rand.New(rand.NewPCG(seed, 0x5eed)))
		if err != nil {
			return nil, 0, err
		}
		assign = res.Assign
	}
	shards := make([][]int32, n)
	for u, w := range assign {
		if w == shard.Broadcast {
			for j := range shards {
				shards[j] = append(shards[j], int32(u))
			}
			continue
		}
		shards[w] = append(shards[w], int32(u))
	}
	return shards, time.Since(start).Seconds(), nil
}

// Net is the emulated network of a run.
type Net struct {
	// Link is each worker's network interface rate in bytes per second
	// (0: unlimited), shared by its messages to all neighbours.
	Link float64
	// TCP runs the workers' endpoints over TCP on loopback (in this
	// process) instead of the in-memory network; Link is then each
	// worker's interface over TCP (node.Rates), as on the in-memory
	// network.
	TCP bool
}

// network opens the transport of n workers.
func (nt Net) network(n int, seed uint64) (node.Network, func(), error) {
	if nt.TCP {
		rates := node.Rates{Link: nt.Link, Host: func(id transport.NodeID) (int, bool) { return int(id) - 1, true }}
		return node.TCP{Host: "127.0.0.1", Token: "gossip", Tune: rates.Tune(nil)}, func() {}, nil
	}
	m, err := gossip.MemNetwork(n, nt.Link, seed)
	if err != nil {
		return nil, nil, err
	}
	return node.Mem{Net: m}, func() { m.Close() }, nil
}

// Report is a trained run: gossip's result with the test scores of the
// average model.
type Report struct {
	*gossip.Result
	// Shard names the sharding and ShardSeconds its time.
	Shard        string  `json:"shard"`
	ShardSeconds float64 `json:"shard_seconds"`
	// Eval scores the average model on the test set (the training set
	// without one).
	Eval train.Eval `json:"eval"`
}

// Initial returns the initial parameters of seed, drawn as app/dense
// draws a job's (the same values for the job's seed).
func (d *Data) Initial(seed uint64) []float32 {
	w := make([]float32, d.App.Model.NumParams())
	d.App.Model.Init(w, rand.New(rand.NewPCG(seed, 0x1417)))
	return w
}

// Train runs gossip.Run on the shards over the network of nt, every
// worker starting from Initial(cfg.Seed), and scores the average model.
func (d *Data) Train(ctx context.Context, cfg gossip.Config, shards [][]int32, nt Net) (*Report, error) {
	net, done, err := nt.network(cfg.Workers, cfg.Seed)
	if err != nil {
		return nil, err
	}
	defer done()
	res, err := gossip.Run(ctx, cfg, d.Learner(), shards, d.Initial(cfg.Seed), net)
	if err != nil {
		return nil, err
	}
	return d.score(res), nil
}

// score scores the average model of res on the test set (the training
// set without one).
func (d *Data) score(res *gossip.Result) *Report {
	rep := &Report{Result: res}
	test, on := d.Test, "test"
	if test == nil {
		test, on = d.Samples, "train"
	}
	rep.Eval = d.App.Score(res.Model, test, on)
	rep.Eval.ClassAccuracy = nil
	return rep
}
