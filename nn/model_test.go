package nn

import (
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// refLogits computes sample s's logits in float64 with direct loops over
// each sample in (channel, row, column) order: an implementation that
// shares nothing with the fast path but the layer sizes.
func refLogits(m *Model, params, x []float64) []float64 {
	a := slices.Clone(x)
	for i, l := range m.layers {
		p := params[m.offsets[i]:]
		switch l := l.(type) {
		case *toPlanes, *flatten:
			// One sample's values are in the same order either way.
		case *dense:
			out := make([]float64, l.out)
			for j := range l.out {
				s := p[l.out*l.in+j]
				for k := range l.in {
					s += p[j*l.in+k] * a[k]
				}
				out[j] = s
				if l.relu {
					out[j] = math.Max(s, 0)
				}
			}
			a = out
		case *relu:
			for j := range a {
				a[j] = math.Max(a[j], 0)
			}
		case *conv:
			out := make([]float64, l.outSize())
			for o := range l.oc {
				for oy := range l.oh {
					for ox := range l.ow {
						s := p[l.oc*l.ck()+o]
						for c := range l.c {
							for ki := range l.k {
								for kj := range l.k {
									iy, ix := oy+ki-l.pad, ox+kj-l.pad
									if iy < 0 || iy >= l.h || ix < 0 || ix >= l.w {
										continue
									}
									s += p[((o*l.c+c)*l.k+ki)*l.k+kj] * a[(c*l.h+iy)*l.w+ix]
								}
							}
						}
						out[(o*l.oh+oy)*l.ow+ox] = s
					}
				}
			}
			a = out
		case *maxPool:
			out := make([]float64, l.outSize())
			for c := range l.c {
				for oy := range l.oh {
					for ox := range l.ow {
						best := math.Inf(-1)
						for dy := range l.size {
							for dx := range l.size {
								best = math.Max(best, a[(c*l.h+oy*l.size+dy)*l.w+ox*l.size+dx])
							}
						}
						if l.relu {
							best = math.Max(best, 0)
						}
						out[(c*l.oh+oy)*l.ow+ox] = best
					}
				}
			}
			a = out
		default:
			panic("refLogits: unknown layer")
		}
	}
	return a
}

// refLoss is the summed softmax cross-entropy of refLogits.
func refLoss(m *Model, params, x []float64, labels []int32) float64 {
	d := m.InputDim()
	loss := 0.0
	for s, y := range labels {
		z := refLogits(m, params, x[s*d:(s+1)*d])
		mx := slices.Max(z)
		sum := 0.0
		for _, v := range z {
			sum += math.Exp(v - mx)
		}
		loss += math.Log(sum) + mx - z[y]
	}
	return loss
}

func to64(s []float32) []float64 {
	out := make([]float64, len(s))
	for i, v := range s {
		out[i] = float64(v)
	}
	return out
}

// testModels are small models of every layer kind, and the two
// architectures at small sizes.
func testModels(t *testing.T) map[string]*Model {
	ms := map[string]*Model{
		"dense":            build([]layer{&dense{name: "fc1", in: 5, out: 3}}, 5),
		"dense-40-classes": build([]layer{&dense{name: "fc1", in: 5, out: 40}}, 5), // the softmax's long rows
		"relu": build([]layer{&dense{name: "fc1", in: 5, out: 6, relu: true},
			&dense{name: "fc2", in: 6, out: 3}}, 5),
		"relu-last": build([]layer{&dense{name: "fc1", in: 5, out: 6}, &dense{name: "fc2", in: 6, out: 4, relu: true}}, 5),
		"relu-layer": build([]layer{&dense{name: "fc1", in: 5, out: 6}, &relu{size: 6},
			&dense{name: "fc2", in: 6, out: 3}}, 5),
		"conv-pad": build([]layer{&toPlanes{c: 2, hw: 30}, newConv("conv1", 2, 5, 6, 3, 3, 1, false),
			&flatten{c: 3, hw: 30}, &dense{name: "fc1", in: 90, out: 3}}, 60),
		"conv-conv": build([]layer{&toPlanes{c: 1, hw: 36}, newConv("conv1", 1, 6, 6, 2, 2, 0, true),
			&relu{size: 50}, newConv("conv2", 2, 5, 5, 3, 3, 2, false),
			&flatten{c: 3, hw: 49}, &dense{name: "fc1", in: 147, out: 4}}, 36),
		"conv-chunked": build([]layer{&toPlanes{c: 2, hw: 30}, &conv{name: "conv1", c: 2, h: 5, w: 6, oc: 3, k: 3, pad: 1, oh: 5, ow: 6, chunk: 2},
			&flatten{c: 3, hw: 30}, &dense{name: "fc1", in: 90, out: 3}}, 60),
		"conv-valid-chunked": build([]layer{&toPlanes{c: 2, hw: 42}, &conv{name: "conv1", c: 2, h: 6, w: 7, oc: 3, k: 3, oh: 4, ow: 5, chunk: 2, relu: true},
			newMaxPool(3, 4, 5, 2, true), &conv{name: "conv2", c: 3, h: 2, w: 2, oc: 2, k: 2, oh: 1, ow: 1, chunk: 3},
			&flatten{c: 2, hw: 1}, &dense{name: "fc1", in: 2, out: 3}}, 84),
		"maxpool": build([]layer{&toPlanes{c: 2, hw: 35}, newConv("conv1", 2, 5, 7, 2, 1, 0, false),
			newMaxPool(2, 5, 7, 2, false), &flatten{c: 2, hw: 6}, &dense{name: "fc1", in: 12, out: 3}}, 70),
		"maxpool3-relu": build([]layer{&toPlanes{c: 2, hw: 56}, newConv("conv1", 2, 7, 8, 2, 1, 0, false),
			newMaxPool(2, 7, 8, 3, true), &flatten{c: 2, hw: 4}, &dense{name: "fc1", in: 8, out: 3}}, 112),
	}
	for name, m := range ms {
		m.name = name
		m.cfg.Classes = m.layers[len(m.layers)-1].outSize()
	}
	var err error
	if ms["mlp"], err = New("mlp", Config{Channels: 1, Height: 4, Width: 3, Classes: 3, Hidden: []int{7, 5}}); err != nil {
		t.Fatal(err)
	}
	if ms["cnn"], err = New("cnn", Config{Channels: 2, Height: 12, Width: 11, Classes: 4, Hidden: []int{6}, Conv: []int{3, 4}, Kernel: 3, Pool: 2}); err != nil {
		t.Fatal(err)
	}
	return ms
}

// TestGradients checks LossGrad's loss against the float64 reference
// and its gradient, for every layer kind, against central differences of
// the reference loss.
func TestGradients(t *testing.T) {
	for name, m := range testModels(t) {
		t.Run(name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(3, 4))
			const n = 5
			params := make([]float32, m.NumParams())
			m.Init(params, rng)
			for i := range params { // non-zero biases too
				params[i] += float32(0.1 * rng.NormFloat64())
			}
			x := randSlice(rng, n*m.InputDim())
			labels := make([]int32, n)
			for i := range labels {
				labels[i] = int32(rng.IntN(m.Classes()))
			}
			grad := randSlice(rng, m.NumParams())
			before := slices.Clone(grad)
			const scale = 0.5
			ws := m.NewWorkspace(2) // grows to n
			loss, _ := m.LossGrad(params, x, labels, n, grad, scale, ws)
			p64, x64 := to64(params), to64(x)
			want := refLoss(m, p64, x64, labels)
			if math.Abs(loss-want) > 1e-4*(1+math.Abs(want)) {
				t.Fatalf("loss %v, reference %v", loss, want)
			}
			const h = 1e-6
			for i := range params {
				p64[i] += h
				up := refLoss(m, p64, x64, labels)
				p64[i] -= 2 * h
				down := refLoss(m, p64, x64, labels)
				p64[i] += h
				fd := scale * (up - down) / (2 * h)
				got := float64(grad[i] - before[i])
				if math.Abs(got-fd) > 2e-4+1e-3*math.Abs(fd) {
					t.Errorf("%s: ∂loss/∂p[%d] = %v, central difference %v", tensorAt(m, i), i, got, fd)
				}
			}
		})
	}
}

// TestInputGradient checks LossGradInput's gradient with respect to the
// inputs against central differences of the reference loss, for every
// layer kind, and that its loss and parameter gradient are LossGrad's,
// bit for bit.
func TestInputGradient(t *testing.T) {
	for name, m := range testModels(t) {
		t.Run(name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(5, 6))
			const n = 4
			params := make([]float32, m.NumParams())
			m.Init(params, rng)
			x := randSlice(rng, n*m.InputDim())
			labels := make([]int32, n)
			for i := range labels {
				labels[i] = int32(rng.IntN(m.Classes()))
			}
			ws := m.NewWorkspace(n)
			grad, want := make([]float32, m.NumParams()), make([]float32, m.NumParams())
			dx := randSlice(rng, n*m.InputDim()) // overwritten
			loss, correct := m.LossGradInput(params, x, labels, n, grad, dx, 0.5, ws)
			wantLoss, wantCorrect := m.LossGrad(params, x, labels, n, want, 0.5, ws)
			if loss != wantLoss || correct != wantCorrect || !slices.Equal(grad, want) {
				t.Fatalf("LossGradInput: loss %v, %d right, gradient differs: %v; LossGrad %v, %d", loss, correct, !slices.Equal(grad, want), wantLoss, wantCorrect)
			}
			p64, x64 := to64(params), to64(x)
			const h = 1e-6
			for i := range x {
				x64[i] += h
				up := refLoss(m, p64, x64, labels)
				x64[i] -= 2 * h
				down := refLoss(m, p64, x64, labels)
				x64[i] += h
				fd := (up - down) / (2 * h)
				if got := float64(dx[i]); math.Abs(got-fd) > 2e-4+1e-3*math.Abs(fd) {
					t.Errorf("∂loss/∂x[%d] = %v, central difference %v", i, got, fd)
				}
			}
		})
	}
}

// tensorAt names the tensor holding parameter i.
func tensorAt(m *Model, i int) string {
	for _, t := range m.Tensors() {
		if i >= t.Offset && i < t.Offset+t.Len() {
			return t.Name
		}
	}
	return "?"
}

// TestDefaultModels checks the default architectures' sizes, their
// forward pass against the reference and a sample of their gradient.
func TestDefaultModels(t *testing.T) {
	for _, tc := range []struct {
		name   string
		params int
		desc   string
	}{
		{"mlp", 235146, "mlp 1×28×28 fc256 relu fc128 relu fc10, 235146 parameters"},
		{"cnn", 61706, "cnn 1×28×28 conv5x5(6,pad2) relu maxpool2 conv5x5(16,pad0) relu maxpool2 flatten fc120 relu fc84 relu fc10, 61706 parameters"},
	} {
		m, err := New(tc.name, DefaultConfig())
		if err != nil {
			t.Fatal(err)
		}
		if m.NumParams() != tc.params || m.String() != tc.desc {
			t.Errorf("%s: %d parameters, %q; want %d (as PyTorch counts), %q", tc.name, m.NumParams(), m, tc.params, tc.desc)
		}
		rng := rand.New(rand.NewPCG(5, 6))
		params := make([]float32, m.NumParams())
		m.Init(params, rng)
		const n = 3
		x := randSlice(rng, n*m.InputDim())
		labels := []int32{1, 7, 3}
		grad := make([]float32, m.NumParams())
		loss, _ := m.LossGrad(params, x, labels, n, grad, 1, m.NewWorkspace(n))
		p64, x64 := to64(params), to64(x)
		if want := refLoss(m, p64, x64, labels); math.Abs(loss-want) > 1e-4*(1+want) {
			t.Errorf("%s: loss %v, reference %v", tc.name, loss, want)
		}
		for _, tn := range m.Tensors() {
			for range 4 {
				i := tn.Offset + rng.IntN(tn.Len())
				const h = 1e-6
				p64[i] += h
				up := refLoss(m, p64, x64, labels)
				p64[i] -= 2 * h
				down := refLoss(m, p64, x64, labels)
				p64[i] += h
				if fd := (up - down) / (2 * h); math.Abs(float64(grad[i])-fd) > 2e-4+1e-3*math.Abs(fd) {
					t.Errorf("%s %s: ∂loss/∂p[%d] = %v, central difference %v", tc.name, tn.Name, i, grad[i], fd)
				}
			}
		}
	}
}

// TestTensorsCover checks that the tensors tile the parameter vector.
func TestTensorsCover(t *testing.T) {
	for name, m := range testModels(t) {
		seen := make([]int, m.NumParams())
		names := map[string]bool{}
		for _, tn := range m.Tensors() {
			if names[tn.Name] {
				t.Errorf("%s: tensor %s twice", name, tn.Name)
			}
			names[tn.Name] = true
			for i := range tn.Len() {
				seen[tn.Offset+i]++
			}
		}
		for i, c := range seen {
			if c != 1 {
				t.Fatalf("%s: parameter %d in %d tensors", name, i, c)
			}
		}
	}
	m, _ := New("cnn", DefaultConfig())
	var got []string
	for _, tn := range m.Tensors() {
		got = append(got, tn.Name)
	}
	want := "conv1.weight conv1.bias conv2.weight conv2.bias fc1.weight fc1.bias fc2.weight fc2.bias fc3.weight fc3.bias"
	if strings.Join(got, " ") != want {
		t.Errorf("cnn tensors %v, want %s", got, want)
	}
	if ts := m.Tensors(); !slices.Equal(ts[0].Shape, []int{6, 1, 5, 5}) || !slices.Equal(ts[4].Shape, []int{120, 400}) {
		t.Errorf("cnn shapes %v, %v", ts[0].Shape, ts[4].Shape)
	}
}

// TestInitDeterministic checks that Init depends only on the rng state,
// and that its weights have the intended scale.
func TestInitDeterministic(t *testing.T) {
	m, _ := New("mlp", DefaultConfig())
	a, b, c := make([]float32, m.NumParams()), make([]float32, m.NumParams()), make([]float32, m.NumParams())
	m.Init(a, rand.New(rand.NewPCG(7, 8)))
	m.Init(b, rand.New(rand.NewPCG(7, 8)))
	m.Init(c, rand.New(rand.NewPCG(7, 9)))
	if !slices.Equal(a, b) {
		t.Error("same seed, different parameters")
	}
	if slices.Equal(a, c) {
		t.Error("different seeds, same parameters")
	}
	w := a[:256*784] // fc1.weight, He: variance 2/784
	ss := 0.0
	for _, v := range w {
		ss += float64(v) * float64(v)
	}
	if v := ss / float64(len(w)); math.Abs(v-2.0/784)/(2.0/784) > 0.02 {
		t.Errorf("fc1.weight variance %v, want %v", v, 2.0/784)
	}
	for _, v := range a[256*784 : 256*785] {
		if v != 0 {
			t.Fatal("fc1.bias not zero")
		}
	}
}

// TestDefaults checks that zero sizes take each architecture's defaults.
func TestDefaults(t *testing.T) {
	m, err := New("cnn", Config{Channels: 1, Height: 28, Width: 28, Classes: 10})
	if err != nil {
		t.Fatal(err)
	}
	c := m.Config()
	if c.Kernel != 5 || c.Pool != 2 || !slices.Equal(c.Conv, []int{6, 16}) || !slices.Equal(c.Hidden, []int{120, 84}) || m.NumParams() != 61706 {
		t.Errorf("cnn defaults %+v, %d parameters", c, m.NumParams())
	}
}

func TestNewErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		mod  func(*Config)
		want string
	}{
		{"rnn", func(*Config) {}, `unknown architecture "rnn": want one of cnn, mlp`},
		{"mlp", func(c *Config) { c.Classes = 1 }, "classes 1"},
		{"mlp", func(c *Config) { c.Height = 0 }, "input_height 0"},
		{"mlp", func(c *Config) { c.Hidden = []int{3, -1} }, "hidden[1] -1"},
		{"cnn", func(c *Config) { c.Conv = []int{0} }, "conv_channels[0] 0"},
		{"cnn", func(c *Config) { c.Kernel = -1 }, "kernel -1"},
		{"cnn", func(c *Config) { c.Pool = -2 }, "pool -2"},
		{"cnn", func(c *Config) { c.Height, c.Width = 8, 8 }, "too small"},
	} {
		c := DefaultConfig()
		tc.mod(&c)
		if _, err := New(tc.name, c); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s %+v: %v, want an error about %q", tc.name, c, err, tc.want)
		}
	}
}

// TestEvaluateAndPredict checks that Evaluate and Predict over several
// workspace-sized chunks agree with one LossGrad over the whole batch.
func TestEvaluateAndPredict(t *testing.T) {
	m := testModels(t)["cnn"]
	rng := rand.New(rand.NewPCG(9, 9))
	params := make([]float32, m.NumParams())
	m.Init(params, rng)
	const n = 23
	x := randSlice(rng, n*m.InputDim())
	labels := make([]int32, n)
	for i := range labels {
		labels[i] = int32(i % m.Classes())
	}
	loss, correct := m.LossGrad(params, x, labels, n, make([]float32, m.NumParams()), 1, m.NewWorkspace(n))
	ws := m.NewWorkspace(5)
	e := m.Evaluate(params, x, labels, n, ws)
	if e.Samples != n || e.Correct != correct || math.Abs(e.Loss-loss) > 1e-9*loss {
		t.Errorf("Evaluate %+v, LossGrad loss %v correct %d", e, loss, correct)
	}
	pred := m.Predict(nil, params, x, n, ws)
	hits, perClass := 0, make([]int, m.Classes())
	for i, p := range pred {
		if p == labels[i] {
			hits++
			perClass[p]++
		}
	}
	if hits != correct || !slices.Equal(perClass, e.ClassCorrect) {
		t.Errorf("Predict: %d hits %v, Evaluate %d %v", hits, perClass, e.Correct, e.ClassCorrect)
	}
	var sum Eval
	if err := sum.Add(e); err != nil || sum.Add(e) != nil || sum.Samples != 2*n || sum.ClassSamples[0] != 2*e.ClassSamples[0] {
		t.Errorf("Add: %+v", sum)
	}
}

// TestNoAllocs checks that a step on a warm workspace does not allocate.
func TestNoAllocs(t *testing.T) {
	for _, name := range []string{"mlp", "cnn"} {
		m, _ := New(name, DefaultConfig())
		rng := rand.New(rand.NewPCG(1, 1))
		params, grad := make([]float32, m.NumParams()), make([]float32, m.NumParams())
		m.Init(params, rng)
		const n = 8
		x := randSlice(rng, n*m.InputDim())
		labels := make([]int32, n)
		ws := m.NewWorkspace(n)
		if a := testing.AllocsPerRun(3, func() { m.LossGrad(params, x, labels, n, grad, 1, ws) }); a != 0 {
			t.Errorf("%s: %v allocations per step", name, a)
		}
	}
}

// TestThreadsBitIdentical checks that a step's loss, gradient and logits
// are bit for bit the same at every thread count, for every layer kind and
// batch sizes that do and do not divide into the parts; the small models'
// passes, which would run on the caller alone, are cut into parts too.
func TestThreadsBitIdentical(t *testing.T) {
	ms := testModels(t)
	for _, name := range []string{"mlp", "cnn"} {
		m, err := New(name, DefaultConfig())
		if err != nil {
			t.Fatal(err)
		}
		ms["default-"+name] = m
	}
	for name, m := range ms {
		for _, n := range []int{1, 7, 64} {
			rng := rand.New(rand.NewPCG(uint64(n), 9))
			params := make([]float32, m.NumParams())
			m.Init(params, rng)
			x := randSlice(rng, n*m.InputDim())
			labels := make([]int32, n)
			for i := range labels {
				labels[i] = int32(rng.IntN(m.Classes()))
			}
			var want []float32
			var wantLoss float64
			for _, threads := range []int{1, 2, 3, 5} {
				ws := m.NewWorkspace(n)
				ws.SetThreads(threads)
				ws.pool.serial = 0
				if ws.Threads() != threads {
					t.Fatalf("Threads() = %d after SetThreads(%d)", ws.Threads(), threads)
				}
				grad := make([]float32, m.NumParams())
				loss, _ := m.LossGrad(params, x, labels, n, grad, 0.3, ws) // not a power of 2: a cut across a micro-tile would round differently
				if threads == 1 {
					want, wantLoss = grad, loss
					continue
				}
				if loss != wantLoss {
					t.Errorf("%s n=%d threads=%d: loss %v, one thread %v", name, n, threads, loss, wantLoss)
				}
				for i := range grad {
					if math.Float32bits(grad[i]) != math.Float32bits(want[i]) {
						t.Errorf("%s n=%d threads=%d: %s grad[%d] = %v, one thread %v", name, n, threads, tensorAt(m, i), i, grad[i], want[i])
						break
					}
				}
			}
		}
	}
}

// TestHelpersEnd checks that the helper goroutines of a workspace's
// threads end when SetThreads lowers their number and when the workspace
// is dropped, and that a workspace whose thread count changes between
// passes still computes what one thread does.
func TestHelpersEnd(t *testing.T) {
	m, err := New("mlp", DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 5))
	params := make([]float32, m.NumParams())
	m.Init(params, rng)
	x := randSlice(rng, 64*m.InputDim())
	labels := make([]int32, 64)
	one := m.NewWorkspace(64)
	want := make([]float32, m.NumParams())
	m.LossGrad(params, x, labels, 64, want, 1, one)

	// waitFor runs the collector until at most n goroutines are left, or
	// fails after as many tries as a cleanup could need.
	waitFor := func(n int, what string) {
		for range 1000 {
			if runtime.NumGoroutine() <= n {
				return
			}
			runtime.GC()
			runtime.Gosched()
		}
		t.Fatalf("%s: %d goroutines, want at most %d", what, runtime.NumGoroutine(), n)
	}
	// Workspaces of other tests may still be waiting for collection: the
	// count is taken once it has not fallen for a while.
	before := runtime.NumGoroutine()
	for steady := 0; steady < 20; steady++ {
		runtime.GC()
		runtime.Gosched()
		if n := runtime.NumGoroutine(); n < before {
			before, steady = n, 0
		}
	}
	func() {
		ws := m.NewWorkspace(64)
		for _, threads := range []int{4, 2, 3} {
			ws.SetThreads(threads)
			grad := make([]float32, m.NumParams())
			m.LossGrad(params, x, labels, 64, grad, 1, ws)
			if !slices.Equal(grad, want) {
				t.Fatalf("%d threads after others: the gradient differs from one thread's", threads)
			}
		}
		ws.SetThreads(1)
		waitFor(before, "one thread")
		ws.SetThreads(2)
	}()
	waitFor(before, "the workspace dropped")
}

// TestParallelCovers checks that Workspace.Parallel hands out every index
// of [0, n) exactly once, in ranges that start on multiples of 16, at
// any thread count.
func TestParallelCovers(t *testing.T) {
	m, err := New("mlp", DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	for _, threads := range []int{1, 2, 3} {
		ws := m.NewWorkspace(1)
		ws.SetThreads(threads)
		for _, n := range []int{0, 1, 15, 16, 17, 1000, 1 << 17, 235146} {
			seen := make([]int32, n)
			ws.Parallel(n, func(lo, hi int) {
				if lo%16 != 0 {
					t.Errorf("range [%d, %d) does not start on a multiple of 16", lo, hi)
				}
				for i := lo; i < hi; i++ {
					seen[i]++
				}
			})
			for i, c := range seen {
				if c != 1 {
					t.Fatalf("%d threads, n = %d: index %d handed out %d times", threads, n, i, c)
				}
			}
		}
	}
}
