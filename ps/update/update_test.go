package update

import (
	"math"
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
		{Config{Name: "adam", LR: 1}, "Name"},
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
