package gossip

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"colo/dataset"
	"colo/nn"
	"colo/ps/node"
	"colo/shard"
)

// blobs returns n samples of dim features in classes Gaussian clusters.
func blobs(n, dim, classes int, seed uint64) *dataset.Dataset {
	rng := rand.New(rand.NewPCG(seed, 1))
	centres := make([]float32, classes*dim)
	for i := range centres {
		centres[i] = float32(rng.NormFloat64())
	}
	x := make([]float32, n*dim)
	y := make([]int, n)
	for i := range n {
		y[i] = i % classes
		for d := range dim {
			x[i*dim+d] = centres[y[i]*dim+d] + float32(0.7*rng.NormFloat64())
		}
	}
	d, err := dataset.New(x, y, dim, classes)
	if err != nil {
		panic(err)
	}
	return d
}

// denseLearner returns a small mlp on d and its seeded initial parameters.
func denseLearner(t *testing.T, d *dataset.Dataset) (*Dense, []float32) {
	t.Helper()
	cfg := nn.Config{Channels: 1, Height: 1, Width: d.Dim, Classes: d.Classes, Hidden: []int{12}}
	m, err := nn.New("mlp", cfg)
	if err != nil {
		t.Fatal(err)
	}
	labels := make([]int32, d.Len())
	for i, l := range d.Labels {
		labels[i] = int32(l)
	}
	init := make([]float32, m.NumParams())
	m.Init(init, rand.New(rand.NewPCG(3, 4)))
	return &Dense{Model: m, X: d.Features, Labels: labels}, init
}

// equalShards deals 0..n-1 round-robin to k workers.
func equalShards(n, k int) [][]int32 {
	out := make([][]int32, k)
	for i := range n {
		out[i%k] = append(out[i%k], int32(i))
	}
	return out
}

func memNet(t *testing.T, n int) node.Network {
	t.Helper()
	net, err := MemNetwork(n, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { net.Close() })
	return node.Mem{Net: net}
}

func run(t *testing.T, cfg Config, l Learner, shards [][]int32, init []float32) *Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := Run(ctx, cfg, l, shards, init, memNet(t, cfg.Workers))
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestOneWorkerIsSGD: one worker trains exactly as a plain loop of SGD
// steps on the same batches, step for step (the per-step losses and the
// final parameters agree bit for bit).
func TestOneWorkerIsSGD(t *testing.T) {
	for _, decay := range []string{"none", "cosine", "step:1,2"} {
		t.Run(decay, func(t *testing.T) { oneWorkerIsSGD(t, decay) })
	}
}

// oneWorkerIsSGD is TestOneWorkerIsSGD with a schedule of the rate: the
// plain loop takes Config.Rate's rate at every step.
func oneWorkerIsSGD(t *testing.T, decay string) {
	d := blobs(200, 6, 3, 1)
	l, init := denseLearner(t, d)
	cfg := DefaultConfig()
	cfg.Workers, cfg.Batch, cfg.Epochs, cfg.LR, cfg.LocalSteps, cfg.LRDecay = 1, 32, 3, 0.2, 2, decay
	K := (200 + 31) / 32
	cfg.PointsPerEpoch = K // one curve point per step
	shards := equalShards(200, 1)
	res := run(t, cfg, l, shards, init)

	w := slices.Clone(init)
	g := make([]float32, len(w))
	ws := l.Model.NewWorkspace(32)
	var losses []float64 // summed loss of each step
	var counts []int
	for e := range cfg.Epochs {
		for _, rows := range Batches(shards[0], K, cfg.Seed, 0, e) {
			var x []float32
			var y []int32
			for _, u := range rows {
				x = append(x, d.Row(int(u))...)
				y = append(y, l.Labels[u])
			}
			clear(g)
			loss, _ := l.Model.LossGrad(w, x, y, len(rows), g, 1/float32(len(rows)), ws)
			rate := float32(cfg.Rate(e, len(losses), cfg.Epochs*K))
			losses, counts = append(losses, loss), append(counts, len(rows))
			for i := range w {
				w[i] -= rate * g[i]
			}
		}
	}
	if len(res.Curve) != len(losses) {
		t.Fatalf("%d curve points, want one per step: %d", len(res.Curve), len(losses))
	}
	// Point k is the mean loss of steps k−K+1..k: with K points per epoch
	// the points determine every step's loss.
	for k, p := range res.Curve {
		sum, n := 0.0, 0
		for j := max(0, k+1-K); j <= k; j++ {
			sum, n = sum+losses[j], n+counts[j]
		}
		if p.TrainLoss != sum/float64(n) || p.Epoch != float64(k+1)/float64(K) {
			t.Fatalf("step %d: point %+v, plain SGD's mean loss over the last epoch %v", k, p, sum/float64(n))
		}
	}
	if !slices.Equal(res.Model, w) {
		t.Error("the final model differs from plain SGD's")
	}
	if losses[len(losses)-1]/float64(counts[len(counts)-1]) > 0.5*losses[0]/float64(counts[0]) {
		t.Errorf("SGD did not train: loss %v → %v", losses[0], losses[len(losses)-1])
	}
	if res.Bytes != 0 || res.Rounds != 0 {
		t.Errorf("one worker sent %d bytes in %d rounds", res.Bytes, res.Rounds)
	}
}

// TestCompleteGraphIsSynchronousSGD: with equal speeds, F = 1 and the
// complete graph's weights (all 1/N), every worker holds the model of
// synchronous data-parallel SGD on the same batches: each step moves by
// the mean of the workers' mean gradients.
func TestCompleteGraphIsSynchronousSGD(t *testing.T) {
	const n, N = 240, 4
	d := blobs(n, 6, 3, 2)
	l, init := denseLearner(t, d)
	cfg := DefaultConfig()
	cfg.Workers, cfg.Topology, cfg.Batch, cfg.Epochs, cfg.LR = N, "complete", 40, 2, 0.3
	shards := equalShards(n, N)
	res := run(t, cfg, l, shards, init)

	K := n / cfg.Batch
	w := slices.Clone(init)
	sum := make([]float64, len(w))
	g := make([]float32, len(w))
	ws := l.Model.NewWorkspace(16)
	for e := range cfg.Epochs {
		batches := make([][][]int32, N)
		for i := range N {
			batches[i] = Batches(shards[i], K, cfg.Seed, i, e)
		}
		for b := range K {
			clear(sum)
			for i := range N {
				var x []float32
				var y []int32
				for _, u := range batches[i][b] {
					x = append(x, d.Row(int(u))...)
					y = append(y, l.Labels[u])
				}
				clear(g)
				l.Model.LossGrad(w, x, y, len(y), g, 1/float32(len(y)), ws)
				for j, v := range g {
					sum[j] += float64(v)
				}
			}
			for j := range w {
				w[j] -= float32(cfg.LR * sum[j] / N)
			}
		}
	}
	worst := 0.0
	for j := range w {
		worst = max(worst, math.Abs(float64(w[j]-res.Model[j])))
	}
	if worst > 1e-5 {
		t.Errorf("D-PSGD on the complete graph differs from synchronous SGD by up to %g", worst)
	}
	// CTA on the same graph is another algorithm: it must not coincide.
	cfg.Order = CombineThenAdapt
	cta := run(t, cfg, l, shards, init)
	if slices.Equal(cta.Model, res.Model) {
		t.Error("combine-then-adapt gave the same model as adapt-then-combine")
	}
}

// consensus is a learner whose oracle sets each worker's model to its own value at the first step
// and takes no gradient afterwards: only averaging moves the models.
type consensus struct {
	n     int
	start [][]float32
	lr    float32
}

func (c *consensus) NumParams() int { return len(c.start[0]) }
func (c *consensus) Oracle(rank int) Oracle {
	return &consensusOracle{c: c, rank: rank}
}

type consensusOracle struct {
	c     *consensus
	rank  int
	steps int
}

func (o *consensusOracle) LossGrad(params []float32, rows []int32, grad []float32) float64 {
	if o.steps == 0 { // x − γ·(x − s)/γ = s
		for i := range grad {
			grad[i] = (params[i] - o.c.start[o.rank][i]) / o.c.lr
		}
	}
	o.steps++
	return 0
}

// TestConsensus: averaging alone drives every worker to the mean of the
// initial models, on every topology, with a weight file and with MATCHA.
func TestConsensus(t *testing.T) {
	const N, P = 8, 5
	rng := rand.New(rand.NewPCG(9, 9))
	c := &consensus{n: N, lr: 1}
	mean := make([]float64, P)
	for range N {
		s := make([]float32, P)
		for j := range s {
			s[j] = float32(rng.IntN(100))
			mean[j] += float64(s[j]) / N
		}
		c.start = append(c.start, s)
	}
	ring, _ := New("ring", N)
	for _, tc := range []struct {
		name string
		set  func(*Config)
	}{
		{"ring", func(c *Config) { c.Topology = "ring" }},
		{"torus", func(c *Config) { c.Topology = "torus" }},
		{"exponential", func(c *Config) { c.Topology = "exponential" }},
		{"complete", func(c *Config) { c.Topology = "complete" }},
		{"weights", func(c *Config) { c.Weights = MetropolisHastings(ring) }},
		{"matcha ring", func(c *Config) { c.Topology, c.Matcha, c.Budget = "ring", true, 0.5 }},
		{"matcha exponential", func(c *Config) { c.Topology, c.Matcha, c.Budget = "exponential", true, 0.3 }},
		{"F=3", func(c *Config) { c.Topology, c.LocalSteps = "exponential", 3 }},
	} {
		cfg := DefaultConfig()
		cfg.Workers, cfg.Batch, cfg.LR, cfg.Epochs = N, N, float64(c.lr), 1
		tc.set(&cfg)
		shards := equalShards(N*300, N) // 300 steps of one sample per worker
		res, err := Run(context.Background(), cfg, c, shards, make([]float32, P), memNet(t, N))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		for i, x := range res.Models {
			for j := range P {
				if math.Abs(float64(x[j])-mean[j]) > 1e-3 {
					t.Fatalf("%s: worker %d holds %v at %d, the mean is %v", tc.name, i, x[j], j, mean[j])
				}
			}
		}
		if res.Rounds == 0 || res.Bytes == 0 {
			t.Errorf("%s: %d rounds, %d bytes", tc.name, res.Rounds, res.Bytes)
		}
	}
}

// recorder wraps a learner and records the rows of every step per worker.
type recorder struct {
	Learner
	seen [][][]int32 // worker → step → rows
}

func (r *recorder) Oracle(rank int) Oracle {
	return &recOracle{Oracle: r.Learner.Oracle(rank), r: r, rank: rank}
}

type recOracle struct {
	Oracle
	r    *recorder
	rank int
}

func (o *recOracle) LossGrad(params []float32, rows []int32, grad []float32) float64 {
	o.r.seen[o.rank] = append(o.r.seen[o.rank], slices.Clone(rows))
	return o.Oracle.LossGrad(params, rows, grad)
}

// TestProportionalBatches: on ratio-constrained shards for speeds 1:2:4:8
// a worker of speed r trains on r/Σr of the samples of each epoch (within
// the rounding of one sample per class), in batches proportional to r,
// and every sample is trained on exactly once per epoch.
func TestProportionalBatches(t *testing.T) {
	const n = 600
	d := blobs(n, 6, 3, 4)
	speeds := []float64{1, 2, 4, 8}
	o := shard.DefaultOptions()
	o.Workers, o.Scheme, o.Ratios = 4, shard.SchemeSubmodular, speeds
	sh, err := shard.Shard(d, o, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	shards := make([][]int32, 4)
	for u, w := range sh.Assign {
		shards[w] = append(shards[w], int32(u))
	}
	l, init := denseLearner(t, d)
	rec := &recorder{Learner: l, seen: make([][][]int32, 4)}
	cfg := DefaultConfig()
	cfg.Batch, cfg.Epochs, cfg.Speeds, cfg.LocalSteps = 60, 2, speeds, 2
	res := run(t, cfg, rec, shards, init)
	K := res.IterationsPerEpoch
	if K != n/60 {
		t.Fatalf("%d iterations per epoch, want %d", K, n/60)
	}
	for e := range cfg.Epochs {
		count := make([]int, n)
		for w := range 4 {
			got := 0
			if len(rec.seen[w]) != K*cfg.Epochs {
				t.Fatalf("worker %d took %d steps, want %d", w, len(rec.seen[w]), K*cfg.Epochs)
			}
			for _, rows := range rec.seen[w][e*K : (e+1)*K] {
				if want := float64(cfg.Batch) * speeds[w] / 15; math.Abs(float64(len(rows))-want) > 1+float64(d.Classes) {
					t.Errorf("epoch %d worker %d: batch of %d, want about %.1f", e, w, len(rows), want)
				}
				got += len(rows)
				for _, u := range rows {
					count[u]++
				}
			}
			if want := n * speeds[w] / 15; math.Abs(float64(got)-want) > float64(d.Classes) {
				t.Errorf("epoch %d: worker %d of speed %v trained on %d samples, want %.0f", e, w, speeds[w], got, want)
			}
		}
		for u, c := range count {
			if c != 1 {
				t.Fatalf("epoch %d: sample %d trained on %d times, want once", e, u, c)
			}
		}
	}
	for w, st := range res.Workers {
		if st.Processed != cfg.Epochs*len(shards[w]) || st.Speed != speeds[w] || st.Slowdown != 8/speeds[w] {
			t.Errorf("worker %d stats %+v", w, st)
		}
	}
}

// busy is a learner whose steps take a fixed time of computation.
type busy struct{ step time.Duration }

func (b busy) NumParams() int    { return 1 }
func (b busy) Oracle(int) Oracle { return b }
func (b busy) LossGrad(_ []float32, _ []int32, g []float32) float64 {
	for t0 := time.Now(); time.Since(t0) < b.step; {
	}
	return 1
}

// TestSpeedEmulation: a worker of speed r sleeps (r_max/r − 1) times its
// measured compute time, so the slowest sets the pace.
func TestSpeedEmulation(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Workers, cfg.Speeds, cfg.Batch, cfg.Epochs, cfg.Topology = 2, []float64{1, 4}, 2, 1, "complete"
	res := run(t, cfg, busy{step: time.Millisecond}, equalShards(500, 2), []float32{0}) // 125 steps of 1 ms a worker
	slow, fast := res.Workers[0], res.Workers[1]
	if fast.SleepSeconds != 0 || fast.Slowdown != 1 {
		t.Errorf("the fastest worker slept %v s (slowdown %v)", fast.SleepSeconds, fast.Slowdown)
	}
	// A timer never fires early and each step's oversleep is taken off
	// the next step's sleep, so the worker sleeps at least 3× its compute
	// time, and more by its last sleep's oversleep alone: the delay in
	// waking it, which a loaded machine stretches. Half the compute time
	// (125 ms and more) is far above a wake-up's delay and below a
	// slowdown of r_max/r instead of r_max/r − 1 (+ΣC).
	if over := slow.SleepSeconds - 3*slow.ComputeSeconds; over < -1e-6 || over > slow.ComputeSeconds/2 {
		t.Errorf("the speed-1 worker slept %.4f s for %.4f s of compute, want 3× and at most a wake-up's delay more", slow.SleepSeconds, slow.ComputeSeconds)
	}
	if res.Seconds < 0.9*4*slow.ComputeSeconds {
		t.Errorf("the run took %.3f s, less than the slow worker's emulated %.3f s", res.Seconds, 4*slow.ComputeSeconds)
	}
}

// TestDeterministic: two runs with one seed give the same models bit for
// bit, on D-PSGD and MATCHA; another seed another model.
func TestDeterministic(t *testing.T) {
	d := blobs(240, 6, 3, 5)
	l, init := denseLearner(t, d)
	for _, matcha := range []bool{false, true} {
		cfg := DefaultConfig()
		cfg.Workers, cfg.Topology, cfg.Batch, cfg.Epochs, cfg.Matcha, cfg.LocalSteps = 6, "exponential", 48, 2, matcha, 2
		a := run(t, cfg, l, equalShards(240, 6), init)
		b := run(t, cfg, l, equalShards(240, 6), init)
		if !slices.Equal(a.Model, b.Model) || a.Bytes != b.Bytes {
			t.Errorf("matcha %v: two runs with one seed differ", matcha)
		}
		cfg.Seed = 2
		c := run(t, cfg, l, equalShards(240, 6), init)
		if slices.Equal(a.Model, c.Model) {
			t.Errorf("matcha %v: seeds 1 and 2 gave the same model", matcha)
		}
	}
}

// TestLocalStepsHalveTraffic: F = 2 sends half the frames of F = 1.
func TestLocalStepsHalveTraffic(t *testing.T) {
	d := blobs(240, 6, 3, 6)
	l, init := denseLearner(t, d)
	cfg := DefaultConfig()
	cfg.Batch, cfg.Epochs = 40, 2
	one := run(t, cfg, l, equalShards(240, 4), init)
	cfg.LocalSteps = 2
	two := run(t, cfg, l, equalShards(240, 4), init)
	if 2*two.Messages != one.Messages || 2*two.Bytes != one.Bytes {
		t.Errorf("F=2: %d messages, %d bytes; F=1: %d, %d", two.Messages, two.Bytes, one.Messages, one.Bytes)
	}
	// A ring of 4: two neighbours per worker, 12 rounds of 4·2 messages.
	if one.Messages != 12*8 {
		t.Errorf("F=1 sent %d messages, want %d", one.Messages, 12*8)
	}
}

// wide is a learner with P parameters and no gradient.
type wide struct{ p int }

func (w wide) NumParams() int                                       { return w.p }
func (w wide) Oracle(int) Oracle                                    { return w }
func (w wide) LossGrad(_ []float32, _ []int32, _ []float32) float64 { return 1 }

// TestLinkRate: on MemNetwork's emulated interfaces an averaging cannot
// be faster than the bytes a worker sends over its rate.
func TestLinkRate(t *testing.T) {
	const P, rate, rounds = 25_000, 2e6, 4 // 100 kB models, 2 MB/s
	cfg := DefaultConfig()
	cfg.Workers, cfg.Topology, cfg.Batch, cfg.Epochs = 3, "complete", 3, 1
	net, err := MemNetwork(3, rate, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer net.Close()
	res, err := Run(context.Background(), cfg, wide{P}, equalShards(3*rounds, 3), make([]float32, P), node.Mem{Net: net})
	if err != nil {
		t.Fatal(err)
	}
	perWorker := float64(res.Workers[0].BytesSent)
	if want := float64(rounds * 2 * (4*P + 60)); perWorker < want {
		t.Fatalf("worker 0 sent %v bytes, want at least %v", perWorker, want)
	}
	if min := perWorker / rate; res.Seconds < 0.95*min {
		t.Errorf("%d rounds took %.3f s; sending %.0f bytes at %.0f B/s takes %.3f s", rounds, res.Seconds, perWorker, rate, min)
	}
}

// TestBatchWeightedIsSGDOnTheUnion: on shards of unequal sizes (and so
// batches of 4, 8, 12 and 16 samples), D-PSGD with batch-weighted steps
// on the complete graph with F = 1 takes, iteration by iteration, one SGD
// step on the union of the workers' batches; with one γ for all (Alg. 2
// as written) it does not.
func TestBatchWeightedIsSGDOnTheUnion(t *testing.T) {
	const n, N = 240, 4
	d := blobs(n, 6, 3, 5)
	l, init := denseLearner(t, d)
	cfg := DefaultConfig()
	cfg.Workers, cfg.Topology, cfg.Batch, cfg.Epochs, cfg.LR, cfg.BatchWeighted = N, "complete", 40, 2, 0.3, true
	shards := make([][]int32, N)
	for i, next := 0, 0; i < N; i++ { // 24, 48, 72 and 96 samples
		for range 24 * (i + 1) {
			shards[i] = append(shards[i], int32(next))
			next++
		}
	}
	res := run(t, cfg, l, shards, init)

	K := n / cfg.Batch
	w := slices.Clone(init)
	g := make([]float32, len(w))
	ws := l.Model.NewWorkspace(64)
	for e := range cfg.Epochs {
		batches := make([][][]int32, N)
		for i := range N {
			batches[i] = Batches(shards[i], K, cfg.Seed, i, e)
		}
		for b := range K {
			var x []float32
			var y []int32
			for i := range N {
				for _, u := range batches[i][b] {
					x = append(x, d.Row(int(u))...)
					y = append(y, l.Labels[u])
				}
			}
			if len(y) != cfg.Batch {
				t.Fatalf("iteration %d: a union of %d samples", b, len(y))
			}
			clear(g)
			l.Model.LossGrad(w, x, y, len(y), g, 1/float32(len(y)), ws)
			for j := range w {
				w[j] -= float32(cfg.LR) * g[j]
			}
		}
	}
	dist := func(m []float32) float64 {
		worst := 0.0
		for j := range w {
			worst = max(worst, math.Abs(float64(w[j]-m[j])))
		}
		return worst
	}
	if worst := dist(res.Model); worst > 1e-5 {
		t.Errorf("batch-weighted D-PSGD on the complete graph differs from SGD on the union of the batches by up to %g", worst)
	}
	cfg.BatchWeighted = false
	if worst := dist(run(t, cfg, l, shards, init).Model); worst < 1e-3 {
		t.Errorf("one γ for all workers is within %g of SGD on the union: the test cannot tell the two apart", worst)
	}
}

// TestRate: the schedules' rates at chosen iterations, and the refusals
// of schedules that mean nothing.
func TestRate(t *testing.T) {
	c := DefaultConfig()
	c.LR = 0.8
	for _, tc := range []struct {
		decay           string
		epoch, it, want float64
	}{
		{"none", 5, 50, 0.8},
		{"", 5, 50, 0.8},
		{"cosine", 0, 0, 0.8},
		{"cosine", 5, 50, 0.4}, // half way: (1 + cos π/2)/2
		{"cosine", 9, 100, 0},
		{"step:100,150", 99, 0, 0.8},
		{"step:100,150", 100, 0, 0.08},
		{"step:100,150", 149, 0, 0.08},
		{"step:100,150", 150, 0, 0.008},
	} {
		c.LRDecay = tc.decay
		if err := c.Validate(); err != nil {
			t.Fatalf("%q: %v", tc.decay, err)
		}
		if got := c.Rate(int(tc.epoch), int(tc.it), 100); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("%q at epoch %v, iteration %v of 100: rate %v, want %v", tc.decay, tc.epoch, tc.it, got, tc.want)
		}
	}
	for _, bad := range []string{"linear", "step:", "step:0", "step:5,5", "step:9,3", "step:x"} {
		c.LRDecay = bad
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "lr-decay") {
			t.Errorf("%q: error %v, want one naming lr-decay", bad, err)
		}
	}
}
