package update

import (
	"math"
	"slices"
	"strings"
	"testing"
)

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-5*(1+math.Abs(b)) }

func TestValidate(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		c    Config
		want string
	}{
		{Config{Name: "rmsprop", LR: 1}, "Name"},
		{Config{Name: "momentum", LR: 1, Momentum: 1}, "Momentum 1"},
		{Config{Name: "adam", LR: 1, Beta1: -0.1}, "Beta1 -0.1"},
		{Config{Name: "adam", LR: 1, Beta2: math.NaN()}, "Beta2 NaN"},
		{Config{Name: "adam"}, "LR 0"},
		{Config{Name: "sgd"}, "LR 0"},
		{Config{Name: "sgd", LR: 1, L1: -1}, "L1"},
		{Config{Name: "ftrl", LR: math.NaN()}, "LR"},
	} {
		if err := tc.c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want an error about %s", tc.c, err, tc.want)
		}
	}
}

// step runs one update of rule on one weight and returns it with the
// state.
func step(r Rule, w, g float32, st []float32) (float32, []float32) {
	ws := []float32{w}
	arrs := make([][]float32, r.States())
	for i := range arrs {
		arrs[i] = []float32{st[i]}
	}
	r.Update(ws, []float32{g}, arrs)
	out := make([]float32, len(arrs))
	for i := range arrs {
		out[i] = arrs[i][0]
	}
	return ws[0], out
}

// TestRulesByHand checks each rule against values worked out by hand
// from its formula.
func TestRulesByHand(t *testing.T) {
	// sum: 1 + 2 = 3.
	if w, _ := step(Sum{}, 1, 2, nil); w != 3 {
		t.Errorf("sum: %v", w)
	}
	// sgd: 1 − 0.5·(2 + 0.1·1) = −0.05; L1 0.2 → shrink by 0.1 → 0 (|−0.05| < 0.1).
	if w, _ := step(SGD{LR: 0.5, L2: 0.1}, 1, 2, nil); !near(float64(w), -0.05) {
		t.Errorf("sgd: %v", w)
	}
	if w, _ := step(SGD{LR: 0.5, L1: 0.2, L2: 0.1}, 1, 2, nil); w != 0 {
		t.Errorf("sgd with L1: %v", w)
	}
	// sgd, L1 only: 1 − 0.5·(−2) = 2, shrink by 0.5·0.2 = 0.1 → 1.9.
	if w, _ := step(SGD{LR: 0.5, L1: 0.2}, 1, -2, nil); !near(float64(w), 1.9) {
		t.Errorf("sgd with L1: %v", w)
	}
	// adagrad: n = 0 + 4 = 4, η' = 1/(2+0) = 0.5, w = 1 − 0.5·2 = 0; then
	// g = 2 again: n = 8, η' = 1/√8, w = −2/√8.
	r := AdaGrad{LR: 1}
	w, st := step(r, 1, 2, []float32{0})
	if w != 0 || st[0] != 4 {
		t.Errorf("adagrad step 1: w %v n %v", w, st[0])
	}
	w, st = step(r, w, 2, st)
	if !near(float64(w), -2/math.Sqrt(8)) || st[0] != 8 {
		t.Errorf("adagrad step 2: w %v n %v", w, st[0])
	}
	// ftrl, α = 1, β = 1, λ1 = 1, λ2 = 0, from w = z = n = 0 with g = 3:
	// σ = (3 − 0)/1 = 3, z = 3 − 3·0 = 3, n = 9, w = −(3 − 1)/((1+3)/1) = −0.5.
	f := FTRL{Alpha: 1, Beta: 1, L1: 1}
	w, st = step(f, 0, 3, []float32{0, 0})
	if !near(float64(w), -0.5) || st[0] != 3 || st[1] != 9 {
		t.Errorf("ftrl step 1: w %v z %v n %v", w, st[0], st[1])
	}
	// g = −4: σ = (5 − 3)/1 = 2, z = 3 − 4 − 2·(−0.5) = 0, n = 25, |z| ≤ 1 → w = 0.
	w, st = step(f, w, -4, st)
	if w != 0 || !near(float64(st[0]), 0) || st[1] != 25 {
		t.Errorf("ftrl step 2: w %v z %v n %v", w, st[0], st[1])
	}
	// λ2 = 2 on step 1: w = −2/(4 + 2) = −1/3.
	if w, _ := step(FTRL{Alpha: 1, Beta: 1, L1: 1, L2: 2}, 0, 3, []float32{0, 0}); !near(float64(w), -1.0/3) {
		t.Errorf("ftrl with L2: %v", w)
	}
}

func TestNew(t *testing.T) {
	for _, n := range names {
		c := DefaultConfig()
		c.Name = n
		r, err := New(c)
		if err != nil || r.Name() != n {
			t.Errorf("New(%s) = %v, %v", n, r, err)
		}
	}
}

// TestSequencesByHand checks the rules with state across steps: each
// table row is one update of a single weight, from w = 1 and zero state,
// with values worked out from the formulas in the package doc.
func TestSequencesByHand(t *testing.T) {
	for _, tc := range []struct {
		name  string
		rule  Rule
		steps [][3]float64 // gradient, then the weight and the first state after the step
	}{
		// v = 0.9v + g; w −= 0.1v: v = 1, w = 0.9; v = 0.9 + 2 = 2.9, w = 0.9 − 0.29 =
		// 0.61; v = 2.61 − 1 = 1.61, w = 0.61 − 0.161 = 0.449.
		{"momentum", Momentum{LR: 0.1, Mu: 0.9}, [][3]float64{{1, 0.9, 1}, {2, 0.61, 2.9}, {-1, 0.449, 1.61}}},
		// L2 0.5: g' = 1 + 0.5·1 = 1.5, v = 1.5, w = 0.85; g' = 0 + 0.425, v = 1.35 +
		// 0.425 = 1.775, w = 0.85 − 0.1775 = 0.6725.
		{"momentum L2", Momentum{LR: 0.1, Mu: 0.9, L2: 0.5}, [][3]float64{{1, 0.85, 1.5}, {0, 0.6725, 1.775}}},
		// L1 2: w = 1 − 0.1·1 = 0.9, shrunk by 0.1·2 = 0.2 to 0.7.
		{"momentum L1", Momentum{LR: 0.1, Mu: 0.9, L1: 2}, [][3]float64{{1, 0.7, 1}}},
		// μ = 0 is SGD.
		{"momentum 0", Momentum{LR: 0.5}, [][3]float64{{2, 0, 2}, {-2, 1, -2}}},
		// η 0.1, β₁ 0.9, β₂ 0.999, ε 1e-8.
		// t=1: m = 0.1, v = 0.001, m̂ = 1, v̂ = 1, w = 1 − 0.1/(1 + 1e-8) ≈ 0.9.
		// t=2, g=2: m = 0.09 + 0.2 = 0.29, v = 0.000999 + 0.004 = 0.004999,
		// m̂ = 0.29/0.19 = 1.5263158, v̂ = 0.004999/0.001999 = 2.5007504,
		// w = 0.9 − 0.1·1.5263158/1.5813761 = 0.8034818.
		// t=3, g=−1: m = 0.261 − 0.1 = 0.161, v = 0.004994001 + 0.001 = 0.005994001,
		// m̂ = 0.161/0.271 = 0.5940959, v̂ = 0.005994001/0.002997001 = 2.0000,
		// w = 0.8034818 − 0.1·0.5940959/1.4142136 = 0.7614729.
		{"adam", Adam{LR: 0.1, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8}, [][3]float64{{1, 0.9, 0.1}, {2, 0.8034818, 0.29}, {-1, 0.7614729, 0.161}}},
		// Bias correction makes the first step η·sign(g) whatever g's size.
		{"adam first step", Adam{LR: 0.01, Beta1: 0.9, Beta2: 0.999}, [][3]float64{{-1e-3, 1.01, -1e-4}}},
		// L2 1: g' = 0 + 1·1 = 1, the first step of the "adam" row.
		{"adam L2", Adam{LR: 0.1, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, L2: 1}, [][3]float64{{0, 0.9, 0.1}}},
	} {
		w := float32(1)
		st := make([]float32, tc.rule.States())
		for i, s := range tc.steps {
			w, st = step(tc.rule, w, float32(s[0]), st)
			if !near(float64(w), s[1]) || !near(float64(st[0]), s[2]) {
				t.Errorf("%s step %d: w %v state %v, want w %v state %v", tc.name, i+1, w, st[0], s[1], s[2])
			}
		}
		if _, ok := tc.rule.(Adam); ok && st[2] != float32(len(tc.steps)) {
			t.Errorf("%s: step count %v after %d steps", tc.name, st[2], len(tc.steps))
		}
	}
}

// TestAdamStepCountPerValue checks that each value keeps its own bias
// correction: a value at its first step moves by η however often its
// neighbour in the block has been updated.
func TestAdamStepCountPerValue(t *testing.T) {
	r := Adam{LR: 0.1, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8}
	w := []float32{1, 1, 1}
	m, v, n := make([]float32, 3), make([]float32, 3), make([]float32, 3)
	r.Update(w[:1], []float32{1}, [][]float32{m[:1], v[:1], n[:1]})
	r.Update(w[:1], []float32{2}, [][]float32{m[:1], v[:1], n[:1]})
	// Value 0 takes its third step, value 1 its first, value 2 none (g = 0
	// still counts as a step, as in a dense push).
	r.Update(w, []float32{-1, 5, 0}, [][]float32{m, v, n})
	want := []float64{0.7614729, 0.9, 1}
	for i := range w {
		if !near(float64(w[i]), want[i]) {
			t.Errorf("value %d: w %v, want %v", i, w[i], want[i])
		}
	}
	if n[0] != 3 || n[1] != 1 || n[2] != 1 {
		t.Errorf("step counts %v, want [3 1 1]", n)
	}
}

// TestDefaultsUnchanged checks that the rules of before keep their
// defaults.
func TestDefaultsUnchanged(t *testing.T) {
	c := DefaultConfig()
	if c.Name != "sum" || c.LR != 0.1 || c.Beta != 1 || c.Eps != 1e-8 || c.L1 != 0 || c.L2 != 0 {
		t.Errorf("DefaultConfig() = %+v", c)
	}
	if c.Momentum != 0.9 || c.Beta1 != 0.9 || c.Beta2 != 0.999 {
		t.Errorf("DefaultConfig() = %+v: want momentum 0.9, beta1 0.9, beta2 0.999", c)
	}
}

// TestUpdateScaledByHand checks the scaled step of each rule that has
// one against values worked out by hand, and that a factor of 1 is
// Update bit for bit.
func TestUpdateScaledByHand(t *testing.T) {
	scaled := func(r Scaled, w, g, s float32, st []float32) (float32, []float32) {
		ws := []float32{w}
		arrs := make([][]float32, r.States())
		for i := range arrs {
			arrs[i] = []float32{st[i]}
		}
		r.UpdateScaled(ws, []float32{g}, arrs, s)
		out := make([]float32, len(arrs))
		for i := range arrs {
			out[i] = arrs[i][0]
		}
		return ws[0], out
	}
	for _, tc := range []struct {
		name string
		rule Scaled
		st   []float32
		// w = 1, g = 2, s = 1/4: the weight and the first state after.
		w, st0 float64
	}{
		// 1 − (0.5/4)·(2 + 0.1·1) = 1 − 0.2625 = 0.7375.
		{"sgd", SGD{LR: 0.5, L2: 0.1}, nil, 0.7375, 0},
		// 1 − (0.5/4)·2 = 0.75, then the L1 shrink of the scaled rate:
		// (0.5/4)·0.2 = 0.025, 0.725.
		{"sgd l1", SGD{LR: 0.5, L1: 0.2}, nil, 0.725, 0},
		// v = 0.9·1 + 2/4 = 1.4; w = 1 − 0.1·1.4 = 0.86, then the
		// shrink s·η·L1 = 0.25·0.1·0.4 = 0.01, as sgd's: 0.85.
		{"momentum l1", Momentum{LR: 0.1, Mu: 0.9, L1: 0.4}, []float32{1}, 0.85, 1.4},
		// v = 0.9·1 + (2 + 0.5·1)/4 = 1.525; w = 1 − 0.1·1.525 = 0.8475.
		{"momentum", Momentum{LR: 0.1, Mu: 0.9, L2: 0.5}, []float32{1}, 0.8475, 1.525},
		// n = 5 + 4 = 9 (the whole g²); w = 1 − (1/4)/(3)·2 = 1 − 1/6.
		{"adagrad", AdaGrad{LR: 1}, []float32{5}, 1 - 1.0/6, 9},
		// the first step of adam is η·sign(g): 1 − 0.1/4 = 0.975; m = 0.2.
		{"adam", Adam{LR: 0.1, Beta1: 0.9, Beta2: 0.999}, []float32{0, 0, 0}, 0.975, 0.2},
	} {
		st := tc.st
		if st == nil {
			st = make([]float32, tc.rule.States())
		}
		w, out := scaled(tc.rule, 1, 2, 0.25, st)
		if !near(float64(w), tc.w) || (len(out) > 0 && !near(float64(out[0]), tc.st0)) {
			t.Errorf("%s: w %v state %v, want %v and %v", tc.name, w, out, tc.w, tc.st0)
		}
		for _, g := range []float32{2, -0.3, 1e-4} {
			w1, st1 := scaled(tc.rule, 0.7, g, 1, st)
			w2, st2 := step(tc.rule, 0.7, g, st)
			if w1 != w2 || !slices.Equal(st1, st2) {
				t.Errorf("%s g %v: UpdateScaled by 1 gives %v %v, Update %v %v", tc.name, g, w1, st1, w2, st2)
			}
		}
	}
}

// TestAsyncConfig checks Config.AsyncStep: none by default, what it
// names otherwise, refused for the rules that cannot scale their step.
func TestAsyncConfig(t *testing.T) {
	for _, tc := range []struct {
		name, async string
		want        Async
	}{
		{"adagrad", "", AsyncNone}, {"adam", "", AsyncNone}, {"sgd", "", AsyncNone}, {"sum", "", AsyncNone}, {"ftrl", "none", AsyncNone},
		{"adagrad", "workers", AsyncWorkers}, {"sgd", "staleness", AsyncStaleness}, {"adam", "staleness", AsyncStaleness},
		{"momentum", "workers", AsyncWorkers},
	} {
		c := DefaultConfig()
		c.Name, c.AsyncStep = tc.name, tc.async
		r, err := New(c)
		if err != nil {
			t.Fatalf("%s async %q: %v", tc.name, tc.async, err)
		}
		got := AsyncNone
		if sc, ok := r.(Scaled); ok {
			got = sc.AsyncStep()
		}
		if got != tc.want {
			t.Errorf("%s async %q: %v, want %v", tc.name, tc.async, got, tc.want)
		}
	}
	for _, tc := range []struct{ name, async, want string }{
		{"adagrad", "linear", `AsyncStep "linear"`}, {"ftrl", "workers", "ftrl"}, {"sum", "staleness", "sum"},
	} {
		c := DefaultConfig()
		c.Name, c.AsyncStep = tc.name, tc.async
		if _, err := New(c); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s async %q: %v, want an error naming %s", tc.name, tc.async, err, tc.want)
		}
	}
}
