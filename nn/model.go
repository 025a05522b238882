package nn

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
)

// Tensor is one named block of a model's flat parameter vector: the
// values params[Offset : Offset+Len()] in row-major order of Shape.
// Weights of a dense layer have shape [out, in], of a convolution
// [out channels, in channels, k, k], as in PyTorch.
type Tensor struct {
	Name   string `json:"name"`
	Shape  []int  `json:"shape"`
	Offset int    `json:"offset"`
}

// Len returns the number of values of t: the product of its shape.
func (t Tensor) Len() int {
	n := 1
	for _, d := range t.Shape {
		n *= d
	}
	return n
}

// Config sets the sizes of a model. Zero-length Hidden and Conv, and zero
// Kernel and Pool, mean the architecture's defaults.
type Config struct {
	// Channels, Height and Width are the shape of an input sample, whose
	// Channels·Height·Width values come channel by channel, each row by
	// row (Fashion-MNIST: 1, 28, 28).
	Channels int `json:"input_channels"`
	Height   int `json:"input_height"`
	Width    int `json:"input_width"`
	// Classes is the number of outputs.
	Classes int `json:"classes"`
	// Hidden are the widths of the hidden dense layers, each followed by
	// a ReLU: mlp's default is [256, 128], cnn's [120, 84].
	Hidden []int `json:"hidden,omitempty"`
	// Conv are cnn's output channels per convolution stage (default
	// [6, 16]); each stage is a Kernel×Kernel convolution (default 5), a
	// ReLU and Pool×Pool max pooling (default 2). The first convolution
	// pads by (Kernel−1)/2 so it keeps the image size, the others do not
	// pad (LeNet-5).
	Conv   []int `json:"conv_channels,omitempty"`
	Kernel int   `json:"kernel,omitempty"`
	Pool   int   `json:"pool,omitempty"`
}

// DefaultConfig returns Fashion-MNIST's input (1×28×28, 10 classes),
// 5×5 kernels and 2×2 pooling, with each architecture's default widths.
func DefaultConfig() Config {
	return Config{Channels: 1, Height: 28, Width: 28, Classes: 10, Kernel: 5, Pool: 2}
}

// maxSize bounds every dimension and the number of parameters, so that
// sizes cannot overflow.
const maxSize = 1 << 28

// Validate checks the sizes c gives every architecture; New checks what
// is specific to one (that the image survives cnn's stages). Errors name
// the field as JSON spells it.
func (c Config) Validate() error {
	for _, f := range []struct {
		name string
		v    int
	}{{"input_channels", c.Channels}, {"input_height", c.Height}, {"input_width", c.Width}} {
		if f.v < 1 || f.v > maxSize {
			return fmt.Errorf("nn: %s %d: want 1..%d", f.name, f.v, maxSize)
		}
	}
	if c.Kernel < 0 || c.Kernel > maxSize {
		return fmt.Errorf("nn: kernel %d: want 0 (the default, 5) or 1..%d", c.Kernel, maxSize)
	}
	if c.Pool < 0 || c.Pool > maxSize {
		return fmt.Errorf("nn: pool %d: want 0 (the default, 2) or 1..%d", c.Pool, maxSize)
	}
	if c.Classes < 2 || c.Classes > maxSize {
		return fmt.Errorf("nn: classes %d: want 2..%d", c.Classes, maxSize)
	}
	for i, h := range c.Hidden {
		if h < 1 || h > maxSize {
			return fmt.Errorf("nn: hidden[%d] %d: want 1..%d", i, h, maxSize)
		}
	}
	for i, h := range c.Conv {
		if h < 1 || h > maxSize {
			return fmt.Errorf("nn: conv_channels[%d] %d: want 1..%d", i, h, maxSize)
		}
	}
	if c.Channels*c.Height > maxSize || c.Channels*c.Height*c.Width > maxSize {
		return fmt.Errorf("nn: input %d×%d×%d: want at most %d values", c.Channels, c.Height, c.Width, maxSize)
	}
	return nil
}

// Architectures returns the names New accepts.
func Architectures() []string { return []string{"cnn", "mlp"} }

// Model is a feed-forward classifier whose parameters live in one flat
// []float32 vector, owned by the caller. A Model holds only sizes: it is
// safe for concurrent use, each goroutine with its own Workspace.
type Model struct {
	name      string
	cfg       Config
	layers    []layer
	offsets   []int  // first parameter of each layer
	needDx    []bool // whether layer i's input gradient is needed
	tensors   []Tensor
	numParams int
	inDim     int
}

// New returns the architecture name ("mlp" or "cnn") with the sizes of cfg.
//
//	mlp: [dense, ReLU] per Hidden width, dense to Classes
//	cnn: [conv, ReLU, maxpool] per Conv width, flatten,
//	     [dense, ReLU] per Hidden width, dense to Classes
func New(name string, cfg Config) (*Model, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.Hidden, cfg.Conv = slices.Clone(cfg.Hidden), slices.Clone(cfg.Conv)
	var ls []layer
	c, h, w := cfg.Channels, cfg.Height, cfg.Width
	width := c * h * w
	switch name {
	case "mlp":
		if len(cfg.Hidden) == 0 {
			cfg.Hidden = []int{256, 128}
		}
	case "cnn":
		if len(cfg.Hidden) == 0 {
			cfg.Hidden = []int{120, 84}
		}
		if len(cfg.Conv) == 0 {
			cfg.Conv = []int{6, 16}
		}
		if cfg.Kernel == 0 {
			cfg.Kernel = 5
		}
		if cfg.Pool == 0 {
			cfg.Pool = 2
		}
		ls = append(ls, &toPlanes{c: c, hw: h * w})
		for i, oc := range cfg.Conv {
			pad := 0
			if i == 0 {
				pad = (cfg.Kernel - 1) / 2
			}
			cv := newConv(fmt.Sprintf("conv%d", i+1), c, h, w, oc, cfg.Kernel, pad, true)
			if cv.oh < cfg.Pool || cv.ow < cfg.Pool {
				return nil, fmt.Errorf("nn: cnn: input %d×%d is too small for %d stages of kernel %d and pool %d (stage %d sees %d×%d)",
					cfg.Height, cfg.Width, len(cfg.Conv), cfg.Kernel, cfg.Pool, i+1, h, w)
			}
			mp := newMaxPool(oc, cv.oh, cv.ow, cfg.Pool, true)
			ls = append(ls, cv, mp)
			c, h, w = oc, mp.oh, mp.ow
			if c*h*w > maxSize || int64(oc)*int64(cv.ck()) > maxSize {
				return nil, fmt.Errorf("nn: conv_channels[%d] %d: stage too large", i, oc)
			}
		}
		ls = append(ls, &flatten{c: c, hw: h * w})
		width = c * h * w
	default:
		return nil, fmt.Errorf("nn: unknown architecture %q: want one of %s", name, strings.Join(Architectures(), ", "))
	}
	for i, out := range cfg.Hidden {
		ls = append(ls, &dense{name: fmt.Sprintf("fc%d", i+1), in: width, out: out, relu: true})
		width = out
	}
	ls = append(ls, &dense{name: fmt.Sprintf("fc%d", len(cfg.Hidden)+1), in: width, out: cfg.Classes})
	m := build(ls, cfg.Channels*cfg.Height*cfg.Width)
	if m.numParams > maxSize {
		return nil, fmt.Errorf("nn: %s has %d parameters: want at most %d", name, m.numParams, maxSize)
	}
	m.name, m.cfg = name, cfg
	return m, nil
}

// build lays the layers' parameters out one after the other, lets a
// dense layer that follows a relu dense layer mask the gradient it passes
// back (dense.reluIn) and a convolution run the pooling layer after it in
// its forward pass (conv.pool) and the one before it in its backward pass
// (conv.below).
func build(ls []layer, inDim int) *Model {
	m := &Model{layers: ls, inDim: inDim}
	seenParams := false
	for i, l := range ls {
		if d, ok := l.(*dense); ok && i > 0 {
			if prev, ok := ls[i-1].(*dense); ok && prev.relu {
				d.reluIn, prev.dyMasked = true, true
			}
		}
		if mp, ok := l.(*maxPool); ok && i > 0 {
			if c, ok := ls[i-1].(*conv); ok && c.oc == mp.c && c.oh == mp.h && c.ow == mp.w {
				c.pool = mp
			}
		}
		if c, ok := l.(*conv); ok && i > 0 {
			if mp, ok := ls[i-1].(*maxPool); ok && mp.c == c.c && mp.oh == c.h && mp.ow == c.w {
				c.below = mp
			}
		}
		m.offsets = append(m.offsets, m.numParams)
		m.needDx = append(m.needDx, seenParams)
		for _, t := range l.tensors() {
			t.Offset += m.numParams
			m.tensors = append(m.tensors, t)
		}
		size := 0
		for _, t := range l.tensors() {
			size += t.Len()
		}
		m.numParams += size
		seenParams = seenParams || size > 0
	}
	return m
}

// Name returns the architecture's name.
func (m *Model) Name() string { return m.name }

// Config returns the model's sizes, the architecture's defaults filled in.
func (m *Model) Config() Config {
	c := m.cfg
	c.Hidden, c.Conv = slices.Clone(c.Hidden), slices.Clone(c.Conv)
	return c
}

// NumParams returns the length of the parameter vector.
func (m *Model) NumParams() int { return m.numParams }

// Tensors returns the named blocks of the parameter vector in order;
// they cover [0, NumParams()) once.
func (m *Model) Tensors() []Tensor {
	ts := make([]Tensor, len(m.tensors))
	for i, t := range m.tensors {
		t.Shape = slices.Clone(t.Shape)
		ts[i] = t
	}
	return ts
}

// InputDim returns the number of values per input sample.
func (m *Model) InputDim() int { return m.inDim }

// InputShape returns the channels, height and width of an input sample.
func (m *Model) InputShape() (channels, height, width int) {
	return m.cfg.Channels, m.cfg.Height, m.cfg.Width
}

// Classes returns the number of classes.
func (m *Model) Classes() int { return m.cfg.Classes }

// String describes the layers.
func (m *Model) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %d×%d×%d", m.name, m.cfg.Channels, m.cfg.Height, m.cfg.Width)
	for _, l := range m.layers {
		switch l := l.(type) {
		case *dense:
			fmt.Fprintf(&b, " fc%d", l.out)
			if l.relu {
				b.WriteString(" relu")
			}
		case *conv:
			fmt.Fprintf(&b, " conv%dx%d(%d,pad%d)", l.k, l.k, l.oc, l.pad)
		case *relu:
			b.WriteString(" relu")
		case *maxPool:
			if l.relu {
				b.WriteString(" relu") // applied after pooling, the same function
			}
			fmt.Fprintf(&b, " maxpool%d", l.size)
		case *flatten:
			b.WriteString(" flatten")
		}
	}
	fmt.Fprintf(&b, ", %d parameters", m.numParams)
	return b.String()
}

// Init sets params (NumParams values) to initial values drawn from rng:
// weights of layers followed by a ReLU He-normal, N(0, 2/fan_in), those
// of the output layer Glorot-uniform, U(±√(6/(fan_in+fan_out))), biases
// zero. The same rng state gives the same values.
func (m *Model) Init(params []float32, rng *rand.Rand) {
	m.check(params, "params")
	for i, l := range m.layers {
		end := m.numParams
		if i+1 < len(m.layers) {
			end = m.offsets[i+1]
		}
		l.init(params[m.offsets[i]:end], rng)
	}
}

func (m *Model) check(p []float32, what string) {
	if len(p) != m.numParams {
		panic(fmt.Sprintf("nn: %s has %d values, want NumParams() = %d", what, len(p), m.numParams))
	}
}

// Workspace holds the activations, gradients and scratch space of one
// goroutine's forward and backward passes, so the passes do not allocate.
// A Workspace belongs to the Model that made it; it grows when given a
// larger batch than it has room for.
type Workspace struct {
	m     *Model
	n     int // batch capacity
	acts  [][]float32
	grads [][]float32
	sc    []scratch
	pool  *pool
}

// NewWorkspace returns a workspace for batches of up to batch samples.
func (m *Model) NewWorkspace(batch int) *Workspace {
	ws := &Workspace{m: m, pool: newPool(1)}
	ws.grow(max(batch, 1))
	// The helpers SetThreads starts end with the workspace.
	runtime.AddCleanup(ws, (*pool).close, ws.pool)
	return ws
}

// SetThreads sets the number of goroutines (at least 1; the default) that
// run each layer's pass on ws: a pass is cut into parts (a convolution's
// forward pass and input gradient by chunks of samples, a dense layer's
// by blocks of output columns, the weight gradients by blocks of their
// columns), each part writes what no other part writes and sums in the
// order one thread would, so results
// are bit for bit the same at any setting. A pass's parts go to
// whichever goroutine is free: the caller's, or one of threads−1 helpers
// that the workspace keeps while it lives (each waits for the next pass
// spinning briefly, then parked). Passes of little work (a small layer,
// a small batch) run on the caller alone.
func (ws *Workspace) SetThreads(threads int) { ws.pool.setThreads(threads) }

// Threads returns the number of goroutines set by SetThreads.
func (ws *Workspace) Threads() int { return ws.pool.threads }

// Parallel calls f(lo, hi) on ranges that cut [0, n) into one per thread
// (starts on multiples of 16), on the workspace's threads: for an
// elementwise step beside the passes, such as an optimiser's update of
// the parameters. f must write only within its range; a step whose every
// value depends on its own inputs alone gives the same bits at any
// thread count. Small n runs on the caller alone.
func (ws *Workspace) Parallel(n int, f func(lo, hi int)) {
	if n <= 0 {
		return
	}
	size := split(n, ws.pool.threads, 16)
	ws.pool.run(ceilDiv(n, size), poolFlops*n, &rangeJob{n: n, size: size, f: f})
}

// rangeJob is Parallel's job: part i is the range [i·size, (i+1)·size).
type rangeJob struct {
	n, size int
	f       func(lo, hi int)
}

func (r *rangeJob) part(i, _ int) { r.f(i*r.size, min(r.n, (i+1)*r.size)) }

func (ws *Workspace) grow(n int) {
	m := ws.m
	ws.n = n
	ws.acts = make([][]float32, len(m.layers))
	ws.grads = make([][]float32, len(m.layers))
	ws.sc = make([]scratch, len(m.layers))
	for i, l := range m.layers {
		if l.inPlace() && i > 0 {
			ws.acts[i], ws.grads[i] = ws.acts[i-1], ws.grads[i-1]
		} else {
			ws.acts[i] = make([]float32, n*l.outSize())
			ws.grads[i] = make([]float32, n*l.outSize())
		}
		f, in := l.scratch(n)
		ws.sc[i] = scratch{f: make([]float32, f), i: make([]int32, in), pool: ws.pool}
	}
}

func (ws *Workspace) ready(m *Model, n int) {
	if ws.m != m {
		panic("nn: workspace of another model")
	}
	if n > ws.n {
		ws.grow(n)
	}
}

// forward runs the layers on x and returns the logits, [n, Classes].
func (m *Model) forward(params, x []float32, n int, ws *Workspace) []float32 {
	in := x[:n*m.inDim]
	for i := 0; i < len(m.layers); i++ {
		l := m.layers[i]
		out := ws.acts[i][:n*l.outSize()]
		if c, ok := l.(*conv); ok && c.pool != nil { // the pooling layer in the same pass
			py := ws.acts[i+1][:n*c.pool.outSize()]
			c.forwardPool(params[m.offsets[i]:], in, out, py, n, &ws.sc[i], &ws.sc[i+1])
			in = py
			i++
			continue
		}
		l.forward(params[m.offsets[i]:], in, out, n, &ws.sc[i])
		in = out
	}
	return in
}

func (m *Model) checkBatch(params, x []float32, labels []int32, n int) {
	m.check(params, "params")
	if n < 0 || len(x) < n*m.inDim {
		panic(fmt.Sprintf("nn: x has %d values, want n·InputDim() = %d·%d", len(x), n, m.inDim))
	}
	if labels != nil && len(labels) < n {
		panic(fmt.Sprintf("nn: %d labels for %d samples", len(labels), n))
	}
}

// LossGrad runs the model on the n samples x (n·InputDim() values, row
// by row) with the parameters params, adds scale times the gradient of
// the summed softmax cross-entropy loss to grad (NumParams values) and
// returns that loss and the number of samples whose most likely class
// is their label. Labels must be in [0, Classes()): LossGrad panics on a
// label out of range or slices of the wrong length, which are the
// caller's errors (an application checks its data's labels once, at
// load).
func (m *Model) LossGrad(params, x []float32, labels []int32, n int, grad []float32, scale float32, ws *Workspace) (loss float64, correct int) {
	return m.lossGrad(params, x, labels, n, grad, nil, scale, ws)
}

// LossGradInput is LossGrad that also sets dx (n·InputDim() values, row
// by row like x) to the gradient of the summed loss with respect to the
// inputs x, unscaled: what a model whose inputs are themselves learnt
// (the embeddings of a click-through model, package app/ctr) passes back
// to them. It costs one more matrix product, that of the first layer.
func (m *Model) LossGradInput(params, x []float32, labels []int32, n int, grad, dx []float32, scale float32, ws *Workspace) (loss float64, correct int) {
	if len(dx) < n*m.inDim {
		panic(fmt.Sprintf("nn: dx has %d values, want n·InputDim() = %d·%d", len(dx), n, m.inDim))
	}
	return m.lossGrad(params, x, labels, n, grad, dx[:n*m.inDim], scale, ws)
}

// lossGrad is LossGrad, and LossGradInput when dxIn is not nil.
func (m *Model) lossGrad(params, x []float32, labels []int32, n int, grad, dxIn []float32, scale float32, ws *Workspace) (loss float64, correct int) {
	m.checkBatch(params, x, labels, n)
	m.check(grad, "grad")
	if n == 0 {
		return 0, 0
	}
	ws.ready(m, n)
	z := m.forward(params, x, n, ws)
	last := len(m.layers) - 1
	dy := ws.grads[last][:len(z)]
	loss, correct = softmaxCE(z, labels, n, m.cfg.Classes, dy)
	for i := last; i >= 0; i-- {
		l := m.layers[i]
		in := x[:n*m.inDim]
		dx := dxIn
		if i > 0 {
			in = ws.acts[i-1][:n*m.layers[i-1].outSize()]
			dx = nil
			if m.needDx[i] || dxIn != nil {
				dx = ws.grads[i-1][:len(in)]
			}
		}
		if c, ok := l.(*conv); ok && c.below != nil && dx != nil && i >= 2 && m.needDx[i-1] {
			// The pooling layer below in the same pass.
			pdx := ws.grads[i-2][:n*m.layers[i-2].outSize()]
			c.backwardUnpool(params[m.offsets[i]:], dy, dx, grad[m.offsets[i]:], scale, n, &ws.sc[i], pdx, &ws.sc[i-1])
			dy = pdx
			i--
			continue
		}
		l.backward(params[m.offsets[i]:], in, ws.acts[i][:n*l.outSize()], dy, dx, grad[m.offsets[i]:], scale, n, &ws.sc[i])
		if dx == nil {
			break
		}
		dy = dx
	}
	return loss, correct
}

// Logits runs the model on the n samples x and returns the n×Classes()
// scores, row by row; the slice belongs to ws until its next use.
func (m *Model) Logits(params, x []float32, n int, ws *Workspace) []float32 {
	m.checkBatch(params, x, nil, n)
	if n == 0 {
		return nil
	}
	ws.ready(m, n)
	return m.forward(params, x, n, ws)
}

// Predict sets dst[i] to the most likely class of sample i (the first on
// ties) and returns dst, grown to n if it is too short.
func (m *Model) Predict(dst []int32, params, x []float32, n int, ws *Workspace) []int32 {
	dst = slices.Grow(dst[:0], n)[:n]
	k := m.cfg.Classes
	for s := 0; s < n; s += ws.n {
		b := min(ws.n, n-s)
		z := m.Logits(params, x[s*m.inDim:], b, ws)
		for i := range b {
			row := z[i*k : (i+1)*k]
			best := 0
			for j, v := range row {
				if v > row[best] {
					best = j
				}
			}
			dst[s+i] = int32(best)
		}
	}
	return dst
}

// Eval sums a model's loss and hits over labelled samples.
type Eval struct {
	Samples int     `json:"samples"`
	Loss    float64 `json:"loss"` // summed softmax cross-entropy
	Correct int     `json:"correct"`
	// ClassSamples and ClassCorrect count samples and hits per true class.
	ClassSamples []int `json:"class_samples"`
	ClassCorrect []int `json:"class_correct"`
}

// Accuracy returns Correct/Samples (0 without samples).
func (e *Eval) Accuracy() float64 {
	if e.Samples == 0 {
		return 0
	}
	return float64(e.Correct) / float64(e.Samples)
}

// MeanLoss returns Loss/Samples (0 without samples).
func (e *Eval) MeanLoss() float64 {
	if e.Samples == 0 {
		return 0
	}
	return e.Loss / float64(e.Samples)
}

// Add adds the counts of o, for the same classes, to e.
func (e *Eval) Add(o Eval) error {
	if len(e.ClassSamples) == 0 && e.Samples == 0 {
		e.ClassSamples, e.ClassCorrect = make([]int, len(o.ClassSamples)), make([]int, len(o.ClassCorrect))
	}
	if len(o.ClassSamples) != len(e.ClassSamples) || len(o.ClassCorrect) != len(e.ClassCorrect) {
		return errors.New("nn: adding evaluations of different numbers of classes")
	}
	e.Samples += o.Samples
	e.Loss += o.Loss
	e.Correct += o.Correct
	for i := range o.ClassSamples {
		e.ClassSamples[i] += o.ClassSamples[i]
		e.ClassCorrect[i] += o.ClassCorrect[i]
	}
	return nil
}

// Evaluate runs the model on the n labelled samples x, in batches of the
// workspace's size, and returns the summed loss and the hits overall and
// per class.
func (m *Model) Evaluate(params, x []float32, labels []int32, n int, ws *Workspace) Eval {
	m.checkBatch(params, x, labels, n)
	k := m.cfg.Classes
	e := Eval{Samples: n, ClassSamples: make([]int, k), ClassCorrect: make([]int, k)}
	for s := 0; s < n; s += ws.n {
		b := min(ws.n, n-s)
		z := m.Logits(params, x[s*m.inDim:], b, ws)
		lab := labels[s : s+b]
		for i, y := range lab {
			l, c := softmaxCE(z[i*k:(i+1)*k], lab[i:i+1], 1, k, nil)
			e.Loss += l
			e.Correct += c
			e.ClassSamples[y]++
			e.ClassCorrect[y] += c
		}
	}
	return e
}
