package update

import (
	"math"
	"math/rand/v2"
	"testing"
)

// momentumRef is Momentum.Update without regularisation written plainly,
// one value at a time, every operation rounded to float32: the reference
// of the vector kernel.
func momentumRef(r Momentum, w, g, v []float32) {
	for i := range w {
		vi := float32(r.Mu*v[i]) + g[i]
		v[i] = vi
		w[i] = w[i] - float32(r.LR*vi)
	}
}

// TestMomentumKernel checks Momentum.Update, whose bulk runs in a vector
// kernel on amd64, against the plain loop bit for bit: random blocks of
// every length up to 41 (whole blocks of eight and the tail), at several
// offsets into their arrays, with ±0, subnormals, infinities, NaN and
// values near the largest float32 among the weights, velocities and
// gradients, over several steps.
func TestMomentumKernel(t *testing.T) {
	rnd := rand.New(rand.NewPCG(33, 8))
	special := []float32{0, float32(math.Copysign(0, -1)), 1e-45, -1e-45, 1e-38, -1e-39, float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), 3e38, -3e38}
	val := func() float32 {
		if rnd.IntN(8) == 0 {
			return special[rnd.IntN(len(special))]
		}
		return float32(rnd.NormFloat64() * math.Pow(10, float64(rnd.IntN(12)-8)))
	}
	rules := []Momentum{
		{LR: 0.05, Mu: 0.9},
		{LR: 1, Mu: 0},
		{LR: 0, Mu: 0.5},
		{LR: 3e-39, Mu: 1e-30},
		{LR: float32(math.Inf(1)), Mu: 0.99},
	}
	for _, r := range rules {
		for n := 0; n <= 41; n++ {
			for off := range 3 {
				w, g, v := make([]float32, n+off), make([]float32, n+off), make([]float32, n+off)
				for i := range w {
					w[i], v[i] = val(), val()
				}
				wr, vr := append([]float32(nil), w...), append([]float32(nil), v...)
				for step := range 3 {
					for i := range g {
						g[i] = val()
					}
					r.Update(w[off:], g[off:], [][]float32{v[off:]})
					momentumRef(r, wr[off:], g[off:], vr[off:])
					for i := range w {
						if !sameBits(w[i], wr[i]) || !sameBits(v[i], vr[i]) {
							t.Fatalf("rule %+v, %d values from %d, step %d, value %d: w %v (%#x) v %v (%#x), want w %v (%#x) v %v (%#x)",
								r, n, off, step, i, w[i], math.Float32bits(w[i]), v[i], math.Float32bits(v[i]),
								wr[i], math.Float32bits(wr[i]), vr[i], math.Float32bits(vr[i]))
						}
					}
				}
			}
		}
	}
}
