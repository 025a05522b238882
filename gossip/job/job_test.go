package job

import (
	"context"
	"math/rand/v2"
	"testing"

	"colo/app/dense"
	"colo/dataset"
	"colo/gossip"
	"colo/shard"
	"colo/train"
)

func blobs(n, dim, classes int, seed uint64) *dataset.Dataset {
	rng := rand.New(rand.NewPCG(seed, 1))
	centres := make([]float32, classes*dim)
	for i := range centres {
		centres[i] = float32(2 * rng.NormFloat64())
	}
	x := make([]float32, n*dim)
	y := make([]int, n)
	for i := range n {
		y[i] = i % classes
		for d := range dim {
			x[i*dim+d] = centres[y[i]*dim+d] + float32(rng.NormFloat64())
		}
	}
	d, err := dataset.New(x, y, dim, classes)
	if err != nil {
		panic(err)
	}
	return d
}

func open(t *testing.T) *Data {
	t.Helper()
	j := train.DefaultJob()
	j.App, j.Data.Train = "mlp", "blobs"
	if err := dense.Defaults(&j); err != nil {
		t.Fatal(err)
	}
	o := dense.DefaultOptions()
	o.Hidden = []int{16}
	if err := j.SetOptions(o); err != nil {
		t.Fatal(err)
	}
	d, err := Open(j, blobs(480, 8, 4, 1), blobs(200, 8, 4, 1))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestTrainShards trains 4 workers of speeds 1:2:4:8 on random equal and
// on submodular ratio shards, in memory and over TCP on loopback: the
// shard sizes follow the speeds, the model learns the blobs, and the two
// transports give the same model.
func TestTrainShards(t *testing.T) {
	d := open(t)
	cfg := gossip.DefaultConfig()
	cfg.Speeds, cfg.Batch, cfg.Epochs, cfg.LR, cfg.Topology = []float64{1, 2, 4, 8}, 48, 4, 0.2, "exponential"
	for _, spec := range []ShardSpec{{Scheme: "random"}, {Scheme: "submodular", Function: shard.FacilityLocation}, {Scheme: "submodular", Function: shard.GraphCut}} {
		shards, _, err := d.Shards(spec, cfg, 1)
		if err != nil {
			t.Fatal(err)
		}
		for w, s := range shards {
			want := 120
			if spec.Scheme == "submodular" {
				want = 480 * int(cfg.Speeds[w]) / 15
			}
			if len(s) < want-4 || len(s) > want+4 {
				t.Errorf("%s: worker %d has %d samples, want about %d", spec.Name(), w, len(s), want)
			}
		}
		mem, err := d.Train(context.Background(), cfg, shards, Net{Link: 1e9})
		if err != nil {
			t.Fatal(err)
		}
		if acc := *mem.Eval.Accuracy; acc < 0.9 {
			t.Errorf("%s: test accuracy %.3f", spec.Name(), acc)
		}
		if spec.Scheme != "random" {
			continue
		}
		tcp, err := d.Train(context.Background(), cfg, shards, Net{TCP: true})
		if err != nil {
			t.Fatal(err)
		}
		for i := range mem.Model {
			if mem.Model[i] != tcp.Model[i] {
				t.Fatalf("TCP and in-memory training differ at parameter %d", i)
			}
		}
		if tcp.Bytes != mem.Bytes {
			t.Errorf("TCP sent %d bytes, in memory %d", tcp.Bytes, mem.Bytes)
		}
	}
	if w0 := d.Initial(d.App.Seed); !equal(w0, d.App.Initial()) {
		t.Error("Initial of the job's seed differs from app/dense's initial parameters")
	}
	if got := (ShardSpec{Scheme: "submodular"}).Name(); got != "facility" {
		t.Errorf("submodular's default name %q", got)
	}
}

func equal(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
