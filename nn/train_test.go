package nn

import (
	"math/rand/v2"
	"testing"
)

// sgd trains m with plain minibatch SGD (mean gradient, learning rate
// lr) on the n samples x for the given epochs and returns the parameters.
func sgd(m *Model, params, x []float32, labels []int32, n, batch, epochs int, lr float32, rng *rand.Rand) {
	d := m.InputDim()
	grad := make([]float32, m.NumParams())
	ws := m.NewWorkspace(batch)
	bx, by := make([]float32, batch*d), make([]int32, batch)
	for range epochs {
		perm := rng.Perm(n)
		for s := 0; s+batch <= n; s += batch {
			for i, j := range perm[s : s+batch] {
				copy(bx[i*d:(i+1)*d], x[j*d:(j+1)*d])
				by[i] = labels[j]
			}
			clear(grad)
			m.LossGrad(params, bx, by, batch, grad, 1/float32(batch), ws)
			for i, g := range grad {
				params[i] -= lr * g
			}
		}
	}
}

// TestTrainSynthetic trains both architectures on a separable problem:
// the class of an image is the quadrant where its bright blob lies.
func TestTrainSynthetic(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	cfg := Config{Channels: 1, Height: 12, Width: 12, Classes: 4, Kernel: 3, Pool: 2, Hidden: []int{16}, Conv: []int{4, 8}}
	const n = 256
	x := make([]float32, n*144)
	labels := make([]int32, n)
	for s := range n {
		q := rng.IntN(4)
		labels[s] = int32(q)
		cy, cx := 3+6*(q/2)+rng.IntN(3)-1, 3+6*(q%2)+rng.IntN(3)-1
		for i := range 144 {
			x[s*144+i] = float32(0.3 * rng.NormFloat64())
			if dy, dx := i/12-cy, i%12-cx; dy*dy+dx*dx <= 2 {
				x[s*144+i] += 2
			}
		}
	}
	for _, name := range []string{"mlp", "cnn"} {
		m, err := New(name, cfg)
		if err != nil {
			t.Fatal(err)
		}
		params := make([]float32, m.NumParams())
		m.Init(params, rng)
		ws := m.NewWorkspace(64)
		before := m.Evaluate(params, x, labels, n, ws)
		sgd(m, params, x, labels, n, 16, 10, 0.05, rng)
		after := m.Evaluate(params, x, labels, n, ws)
		t.Logf("%s: loss %.3f → %.3f, accuracy %.3f → %.3f", name, before.MeanLoss(), after.MeanLoss(), before.Accuracy(), after.Accuracy())
		if after.MeanLoss() > before.MeanLoss()/4 || after.Accuracy() < 0.95 {
			t.Errorf("%s did not learn: loss %.3f → %.3f, accuracy %.3f", name, before.MeanLoss(), after.MeanLoss(), after.Accuracy())
		}
	}
}

// TestTrainFashion trains both default architectures on 600 of
// Fashion-MNIST's images and checks that the loss on them falls and that
// 600 other images come out well above chance.
func TestTrainFashion(t *testing.T) {
	x, labels := fashionTest(t)
	const n, d = 600, 784
	train, trainY := x[:n*d], labels[:n]
	held, heldY := x[n*d:2*n*d], labels[n:2*n]
	for _, name := range []string{"mlp", "cnn"} {
		m, _ := New(name, DefaultConfig())
		rng := rand.New(rand.NewPCG(1, 2))
		params := make([]float32, m.NumParams())
		m.Init(params, rng)
		ws := m.NewWorkspace(200)
		before := m.Evaluate(params, train, trainY, n, ws)
		sgd(m, params, train, trainY, n, 32, 3, 0.05, rng)
		after := m.Evaluate(params, train, trainY, n, ws)
		test := m.Evaluate(params, held, heldY, n, ws)
		t.Logf("%s: training loss %.3f → %.3f, accuracy %.3f → %.3f; held out %.3f", name,
			before.MeanLoss(), after.MeanLoss(), before.Accuracy(), after.Accuracy(), test.Accuracy())
		if after.MeanLoss() > 0.6*before.MeanLoss() || test.Accuracy() < 0.6 {
			t.Errorf("%s: training loss %.3f → %.3f, held-out accuracy %.3f", name, before.MeanLoss(), after.MeanLoss(), test.Accuracy())
		}
	}
}
