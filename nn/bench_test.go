package nn

import (
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
	"time"

	"colo/ps/update"
)

// benchModel measures training steps at batch 64 as PyTorch's peer
// (../shared/peers/torch/bench_dense.py) does: forward, backward and
// an SGD step with momentum 0.9 (the servers' rule, ps/update.Momentum,
// on the workspace's threads: Workspace.Parallel), walking the data one
// contiguous batch after another, on as many threads
// (Workspace.SetThreads) as GOMAXPROCS: -cpu 1,2 measures one and two.
// The step clears the gradient it has used, range by range while the
// range is in the cache, ready for the next LossGrad (which adds to it).
// Besides the mean (samples/s) it reports the speed of the 10th
// percentile of the steps' times (samples/s-p10), which on a shared
// machine is the speed of the steps that had the cores.
// Inputs are Fashion-MNIST's test images when present, else random.
func benchModel(b *testing.B, name string) {
	const batch = 64
	m, err := New(name, DefaultConfig())
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 1))
	var x []float32
	var labels []int32
	if _, err := statFashion(); err == nil {
		x, labels = fashionTest(b)
	} else {
		x = randSlice(rng, 4096*784)
		labels = make([]int32, 4096)
		for i := range labels {
			labels[i] = int32(rng.IntN(10))
		}
	}
	n, d := len(labels), m.InputDim()
	params, grad, mom := make([]float32, m.NumParams()), make([]float32, m.NumParams()), make([]float32, m.NumParams())
	m.Init(params, rng)
	ws := m.NewWorkspace(batch)
	ws.SetThreads(runtime.GOMAXPROCS(0))
	rule := update.Momentum{LR: 0.05, Mu: 0.9}
	pos := 0
	steps := make([]time.Duration, 0, 1<<14)
	last := time.Now()
	for b.Loop() {
		if pos+batch > n {
			pos = 0
		}
		m.LossGrad(params, x[pos*d:], labels[pos:], batch, grad, 1.0/batch, ws)
		// The step on the workspace's threads, as PyTorch's runs on its
		// threads: each value's update depends on its own alone.
		ws.Parallel(len(params), func(lo, hi int) {
			rule.Update(params[lo:hi], grad[lo:hi], [][]float32{mom[lo:hi]})
			clear(grad[lo:hi])
		})
		pos += batch
		if now := time.Now(); len(steps) < cap(steps) {
			steps = append(steps, now.Sub(last))
			last = now
		}
	}
	b.ReportMetric(float64(batch*b.N)/b.Elapsed().Seconds(), "samples/s")
	// On a machine shared with others the mean mixes the steps that had
	// the cores with those that waited for them; the 10th percentile of
	// the steps' times is what a step costs when it has them.
	if len(steps) >= 10 {
		slices.Sort(steps)
		b.ReportMetric(batch/steps[len(steps)/10].Seconds(), "samples/s-p10")
	}
}

// BenchmarkMLP measures the default mlp (784-256-128-10).
func BenchmarkMLP(b *testing.B) { benchModel(b, "mlp") }

// BenchmarkCNN measures the default cnn (LeNet-5).
func BenchmarkCNN(b *testing.B) { benchModel(b, "cnn") }
