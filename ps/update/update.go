// Package update holds the rules by which a server applies the gradients
// that workers push: plain summation, SGD, SGD with momentum, AdaGrad,
// Adam and FTRL-proximal, all but summation with optional L1 and L2
// regularisation. The application chooses the rule; servers run it on
// every value they store.
//
// A rule sees a block of weights w, the gradient g of the same length and
// its own state arrays parallel to w (AdaGrad's sum of squared gradients,
// the momentum's velocity, Adam's moments and step count, FTRL's z and
// n), all zero at the start. It runs in O(len(w)) and does not allocate.
// In synchronous training a server sums a round's pushes from all workers
// and applies the rule once to the sum.
//
//	rule, _ := update.New(update.Config{Name: "ftrl", LR: 0.1, Beta: 1, L1: 1})
//	rule.Update(w, g, [][]float32{z, n})
//
// The formulas, per value, with learning rate η (FTRL's α):
//
//	sum      w += g
//	sgd      w −= η (g + λ₂ w), then w ← sign(w) max(|w| − η λ₁, 0)
//	momentum g' = g + λ₂ w; v ← μ v + g'; w −= η v, then the L1 step with η
//	adagrad  n += g²; η' = η / (√n + ε); w −= η' (g + λ₂ w), then the L1 step with η'
//	adam     g' = g + λ₂ w; t += 1; m ← β₁ m + (1−β₁) g'; v ← β₂ v + (1−β₂) g'²;
//	         w −= η (m / (1−β₁ᵗ)) / (√(v / (1−β₂ᵗ)) + ε), then the L1 step with η
//	ftrl     σ = (√(n+g²) − √n)/α; z += g − σ w; n += g²;
//	         w = 0 if |z| ≤ λ₁, else −(z − sign(z) λ₁) / ((β + √n)/α + λ₂)
//
// The momentum is the heavy ball of Polyak (1964) as PyTorch's SGD
// writes it (the velocity sums gradients, the learning rate scales the
// step), so η and μ mean what they mean there. Adam is that of Kingma and
// Ba, "Adam: A Method for Stochastic Optimization" (ICLR 2015),
// Algorithm 1, with PyTorch's placement of ε; t counts the updates of
// each value, so a value that receives no gradient in a round (a sparse
// key) keeps its own bias correction. FTRL-proximal is that of McMahan et
// al., "Ad click prediction: a view from the trenches" (KDD 2013),
// Algorithm 1.
//
// Asynchronous training. Under BSP a server applies the rule once to the
// sum of a round's W pushes; under asynchronous and bounded-delay
// training it applies each push alone, W steps a round. The workers
// scale their gradients so that W pushes sum to the round's mean
// gradient: for the linear rules (sgd, momentum) W steps of a push each
// move the model as far as one step of their sum. AdaGrad and Adam
// divide each step by the root of the gradients' own squares, so the
// scale is lost: each push takes a whole step, the first ones to a fresh
// value η·sign(g) each, and W pushes a round move the model up to W
// times as far as BSP's one step (√W times once the accumulators fill).
// Config.AsyncStep chooses what a server does about it (Async, Scaled):
// nothing (the default), divide each push's step by W, or divide it by
// the push's staleness, the pushes the server applied since it answered
// the worker's pull (Zhang et al., "Staleness-aware async-SGD for
// distributed deep learning", IJCAI 2016, §3). Dividing by W is right
// for values that every worker writes every round (a dense network's);
// a value that one worker writes (a sparse feature placed with its
// samples) then moves W times slower than under BSP, so the application
// chooses (app/ctr: workers; app/lr: none, docs/ctr.md).
package update

import (
	"fmt"
	"math"
)

// Rule applies gradients to weights.
type Rule interface {
	// Name returns the rule's name as Config spells it.
	Name() string
	// States returns the number of state arrays the rule keeps per
	// weight array.
	States() int
	// Update applies gradient g to weights w, with st holding States()
	// arrays of len(w) values. len(g) == len(w).
	Update(w, g []float32, st [][]float32)
}

// Config chooses and parameterises a rule.
type Config struct {
	// Name is sum, sgd, adagrad or ftrl.
	Name string `json:"name"`
	// LR is the learning rate (FTRL's α).
	LR float64 `json:"lr"`
	// L1 and L2 are the regularisation weights.
	L1 float64 `json:"l1"`
	L2 float64 `json:"l2"`
	// Beta is FTRL's β.
	Beta float64 `json:"beta"`
	// Eps is the ε of AdaGrad and Adam.
	Eps float64 `json:"eps"`
	// Momentum is the momentum rule's μ, in [0, 1).
	Momentum float64 `json:"momentum"`
	// Beta1 and Beta2 are Adam's decay rates of its moments, in [0, 1).
	Beta1 float64 `json:"beta1"`
	Beta2 float64 `json:"beta2"`
	// AsyncStep is how a server scales the step of a push it applies
	// alone (asynchronous and bounded-delay training): "none" (or
	// empty), "workers" or "staleness" (see Async). BSP applies a
	// round's sum and ignores it.
	AsyncStep string `json:"async_step,omitempty"`
}

// DefaultConfig returns the summing rule, with defaults for the others'
// parameters should the name be changed: FTRL's β = 1, ε = 1e-8, momentum
// μ = 0.9, Adam's β₁ = 0.9 and β₂ = 0.999.
func DefaultConfig() Config {
	return Config{Name: "sum", LR: 0.1, Beta: 1, Eps: 1e-8, Momentum: 0.9, Beta1: 0.9, Beta2: 0.999}
}

// Names lists the rules.
var names = []string{"sum", "sgd", "momentum", "adagrad", "adam", "ftrl"}

// Validate checks c; errors name the field and the bound.
func (c Config) Validate() error {
	ok := false
	for _, n := range names {
		ok = ok || n == c.Name
	}
	if !ok {
		return fmt.Errorf("update: Name %q is not sum, sgd, momentum, adagrad, adam or ftrl", c.Name)
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"LR", c.LR}, {"L1", c.L1}, {"L2", c.L2}, {"Beta", c.Beta}, {"Eps", c.Eps}} {
		if !(f.v >= 0) || math.IsInf(f.v, 0) {
			return fmt.Errorf("update: %s %v must be a finite number ≥ 0", f.name, f.v)
		}
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"Momentum", c.Momentum}, {"Beta1", c.Beta1}, {"Beta2", c.Beta2}} {
		if !(f.v >= 0 && f.v < 1) {
			return fmt.Errorf("update: %s %v must be in [0, 1)", f.name, f.v)
		}
	}
	if c.Name != "sum" && c.LR == 0 {
		return fmt.Errorf("update: LR 0 for %s, must be positive", c.Name)
	}
	a, err := ParseAsync(c.AsyncStep)
	if err != nil {
		return err
	}
	if a != AsyncNone && !StepScales(c.Name) {
		return fmt.Errorf("update: AsyncStep %q for %s: only sgd, momentum, adagrad and adam scale their step (want none)", c.AsyncStep, c.Name)
	}
	return nil
}

// New returns the rule c describes.
func New(c Config) (Rule, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	a, _ := ParseAsync(c.AsyncStep)
	switch c.Name {
	case "sgd":
		return SGD{LR: float32(c.LR), L1: float32(c.L1), L2: float32(c.L2), Async: a}, nil
	case "momentum":
		return Momentum{LR: float32(c.LR), Mu: float32(c.Momentum), L1: float32(c.L1), L2: float32(c.L2), Async: a}, nil
	case "adagrad":
		return AdaGrad{LR: float32(c.LR), Eps: float32(c.Eps), L1: float32(c.L1), L2: float32(c.L2), Async: a}, nil
	case "adam":
		return Adam{LR: float32(c.LR), Beta1: c.Beta1, Beta2: c.Beta2, Eps: float32(c.Eps), L1: float32(c.L1), L2: float32(c.L2), Async: a}, nil
	case "ftrl":
		return FTRL{Alpha: c.LR, Beta: c.Beta, L1: c.L1, L2: c.L2}, nil
	}
	return Sum{}, nil
}

// Sum adds gradients to the weights: the server is an accumulator.
type Sum struct{}

// Name returns "sum".
func (Sum) Name() string { return "sum" }

// States returns 0.
func (Sum) States() int { return 0 }

// Update adds g to w.
func (Sum) Update(w, g []float32, _ [][]float32) {
	g = g[:len(w)]
	for i := range w {
		w[i] += g[i]
	}
}

// shrink is the proximal step of L1: sign(w) max(|w| − t, 0).
func shrink(w, t float32) float32 {
	switch {
	case w > t:
		return w - t
	case w < -t:
		return w + t
	}
	return 0
}

// SGD is stochastic gradient descent with L2 weight decay and an L1
// proximal step.
type SGD struct {
	LR, L1, L2 float32
	Async      Async
}

// Name returns "sgd".
func (SGD) Name() string { return "sgd" }

// States returns 0.
func (SGD) States() int { return 0 }

// Update takes one step.
func (r SGD) Update(w, g []float32, _ [][]float32) {
	g = g[:len(w)]
	for i := range w {
		v := w[i] - r.LR*(g[i]+r.L2*w[i])
		if r.L1 > 0 {
			v = shrink(v, r.LR*r.L1)
		}
		w[i] = v
	}
}

// Momentum is SGD with heavy-ball momentum: the velocity v, its state,
// decays by Mu and gathers the gradients; the weights move by LR·v.
type Momentum struct {
	LR, Mu, L1, L2 float32
	Async          Async
}

// Name returns "momentum".
func (Momentum) Name() string { return "momentum" }

// States returns 1: the velocity.
func (Momentum) States() int { return 1 }

// Update takes one step.
func (r Momentum) Update(w, g []float32, st [][]float32) {
	g, v := g[:len(w)], st[0][:len(w)]
	if r.L1 == 0 && r.L2 == 0 { // the common case: a vector kernel, then a tight loop
		// Each product is rounded before its sum (no fused multiply-add,
		// which some compilers would choose), as the kernel's lanes do.
		for i := momentumBlocks(w, g, v, r.LR, r.Mu); i < len(w); i++ {
			vi := float32(r.Mu*v[i]) + g[i]
			v[i] = vi
			w[i] -= float32(r.LR * vi)
		}
		return
	}
	for i := range w {
		vi := r.Mu*v[i] + g[i] + r.L2*w[i]
		v[i] = vi
		wi := w[i] - r.LR*vi
		if r.L1 > 0 {
			wi = shrink(wi, r.LR*r.L1)
		}
		w[i] = wi
	}
}

// Adam adapts each coordinate's step to running averages of its gradient
// and squared gradient, corrected for their start at zero. Its states
// are the two averages and the number of updates of each value (a
// float32, exact up to 2²⁴ updates).
type Adam struct {
	LR           float32
	Beta1, Beta2 float64
	Eps, L1, L2  float32
	Async        Async
}

// Name returns "adam".
func (Adam) Name() string { return "adam" }

// States returns 3: the first and second moments and the step count.
func (Adam) States() int { return 3 }

// Update takes one step.
func (r Adam) Update(w, g []float32, st [][]float32) {
	g, m, v, t := g[:len(w)], st[0][:len(w)], st[1][:len(w)], st[2][:len(w)]
	b1, b2 := float32(r.Beta1), float32(r.Beta2)
	// The bias corrections depend on the step count alone, which is
	// mostly the same along a block: keep the last one's.
	var last float32 = -1
	var c1, c2 float32 // 1/(1−β₁ᵗ) and 1/√(1−β₂ᵗ)
	for i := range w {
		gi := g[i] + r.L2*w[i]
		ti := t[i] + 1
		t[i] = ti
		if ti != last {
			last = ti
			c1 = float32(1 / (1 - math.Pow(r.Beta1, float64(ti))))
			c2 = float32(1 / math.Sqrt(1-math.Pow(r.Beta2, float64(ti))))
		}
		mi := b1*m[i] + (1-b1)*gi
		vi := b2*v[i] + (1-b2)*gi*gi
		m[i], v[i] = mi, vi
		wi := w[i] - r.LR*mi*c1/(float32(math.Sqrt(float64(vi)))*c2+r.Eps)
		if r.L1 > 0 {
			wi = shrink(wi, r.LR*r.L1)
		}
		w[i] = wi
	}
}

// AdaGrad scales each coordinate's step by the root of its summed squared
// gradients. The L2 term is part of the gradient it accumulates, g' = g +
// λ₂w, so a step never exceeds LR in size even where the data gradients
// are tiny (rare features), and the regularisation cannot diverge.
type AdaGrad struct {
	LR, Eps, L1, L2 float32
	Async           Async
}

// Name returns "adagrad".
func (AdaGrad) Name() string { return "adagrad" }

// States returns 1: the sum of squared gradients.
func (AdaGrad) States() int { return 1 }

// Update takes one step. Without L1 the bulk runs in a vector kernel
// where there is one (adagradBlocks), with the same bits as this loop,
// whose products are rounded before they are added (float32(…)) so that
// no build fuses them.
func (r AdaGrad) Update(w, g []float32, st [][]float32) {
	g, n := g[:len(w)], st[0][:len(w)]
	i0 := 0
	if r.L1 == 0 {
		i0 = adagradBlocks(w, g, n, r.LR, r.Eps, r.L2)
	}
	for i := i0; i < len(w); i++ {
		gi := g[i] + float32(r.L2*w[i])
		n[i] += float32(gi * gi)
		lr := r.LR / (float32(math.Sqrt(float64(n[i]))) + r.Eps)
		v := w[i] - float32(lr*gi)
		if r.L1 > 0 {
			v = shrink(v, lr*r.L1)
		}
		w[i] = v
	}
}

// FTRL is per-coordinate FTRL-proximal. Its arithmetic is in float64.
type FTRL struct{ Alpha, Beta, L1, L2 float64 }

// Name returns "ftrl".
func (FTRL) Name() string { return "ftrl" }

// States returns 2: z and n.
func (FTRL) States() int { return 2 }

// Update takes one step.
func (r FTRL) Update(w, g []float32, st [][]float32) {
	g, z, n := g[:len(w)], st[0][:len(w)], st[1][:len(w)]
	for i := range w {
		gi, ni := float64(g[i]), float64(n[i])
		n2 := ni + gi*gi
		sigma := (math.Sqrt(n2) - math.Sqrt(ni)) / r.Alpha
		zi := float64(z[i]) + gi - sigma*float64(w[i])
		z[i], n[i] = float32(zi), float32(n2)
		if math.Abs(zi) <= r.L1 {
			w[i] = 0
			continue
		}
		s := 1.0
		if zi < 0 {
			s = -1
		}
		w[i] = float32(-(zi - s*r.L1) / ((r.Beta+math.Sqrt(n2))/r.Alpha + r.L2))
	}
}
