package update

import "fmt"

// Async is how a server scales the step of a push it applies alone, in
// asynchronous and bounded-delay training (Config.AsyncStep, the package
// doc). BSP
// applies the rule once to a round's sum, unscaled, whatever it says.
type Async uint8

const (
	// AsyncNone applies every push with the rule's whole step.
	AsyncNone Async = iota
	// AsyncWorkers divides the step of every push by the number of
	// workers W: a round's W pushes move a value written by every worker
	// about as far as BSP's one step of their sum.
	AsyncWorkers
	// AsyncStaleness divides the step of a push by its staleness τ, at
	// least 1: the pushes the server applied between its answer to the
	// worker's pull of the round and the push (Zhang et al. 2016, §3,
	// the learning rate α/τ). A push whose pull the server did not
	// answer (a batch that read none of its keys) counts τ = W.
	AsyncStaleness
)

var asyncNames = []string{"none", "workers", "staleness"}

// String returns the name Config.Async spells.
func (a Async) String() string {
	if int(a) < len(asyncNames) {
		return asyncNames[a]
	}
	return fmt.Sprintf("async(%d)", uint8(a))
}

// ParseAsync reads none, workers or staleness; empty is AsyncNone.
func ParseAsync(s string) (Async, error) {
	if s == "" {
		return AsyncNone, nil
	}
	for i, n := range asyncNames {
		if n == s {
			return Async(i), nil
		}
	}
	return 0, fmt.Errorf("update: AsyncStep %q is not none, workers or staleness", s)
}

// StepScales reports whether rule name's step can be scaled push by
// push (a Scaled rule): sgd, momentum, adagrad and adam; not sum (no
// step) or ftrl (its weights follow from its sums).
func StepScales(name string) bool { return name != "sum" && name != "ftrl" }

// Scaled is a rule whose step a server can scale push by push.
type Scaled interface {
	Rule
	// AsyncStep returns how the rule wants the step of a push applied
	// alone scaled.
	AsyncStep() Async
	// UpdateScaled is Update with the step multiplied by s in (0, 1]:
	// the state gathers g as Update's does (AdaGrad's squares, Adam's
	// moments), only the move of the weights is s times as large, the
	// L1 shrink included (momentum: the velocity gathers s·g, and the
	// shrink is s·η·L1). s = 1 gives Update's result bit for bit.
	UpdateScaled(w, g []float32, st [][]float32, s float32)
}

// AsyncStep returns r.Async.
func (r SGD) AsyncStep() Async { return r.Async }

// UpdateScaled takes one step of rate s·LR.
func (r SGD) UpdateScaled(w, g []float32, st [][]float32, s float32) {
	r.LR *= s
	r.Update(w, g, st)
}

// AsyncStep returns r.Async.
func (r Momentum) AsyncStep() Async { return r.Async }

// UpdateScaled takes one step whose gradient, its L2 term included,
// enters the velocity times s: v ← μv + s·g'; w −= η v, then the L1
// step with s·η, as the other rules' L1 steps scale with their rate.
func (r Momentum) UpdateScaled(w, g []float32, st [][]float32, s float32) {
	if s == 1 {
		r.Update(w, g, st)
		return
	}
	g, v := g[:len(w)], st[0][:len(w)]
	l1 := s * r.LR * r.L1
	for i := range w {
		vi := r.Mu*v[i] + s*(g[i]+r.L2*w[i])
		v[i] = vi
		wi := w[i] - r.LR*vi
		if r.L1 > 0 {
			wi = shrink(wi, l1)
		}
		w[i] = wi
	}
}

// AsyncStep returns r.Async.
func (r AdaGrad) AsyncStep() Async { return r.Async }

// UpdateScaled takes one step of rate s·LR; the sum of squares gathers
// g² as Update's does.
func (r AdaGrad) UpdateScaled(w, g []float32, st [][]float32, s float32) {
	r.LR *= s
	r.Update(w, g, st)
}

// AsyncStep returns r.Async.
func (r Adam) AsyncStep() Async { return r.Async }

// UpdateScaled takes one step of rate s·LR; the moments and the step
// count move as Update's do.
func (r Adam) UpdateScaled(w, g []float32, st [][]float32, s float32) {
	r.LR *= s
	r.Update(w, g, st)
}
