package update

import (
	"math"
	"math/rand/v2"
	"testing"
)

// adagradRef is AdaGrad.Update written plainly, one value at a time,
// every operation rounded to float32: the reference of the vector
// kernel.
func adagradRef(r AdaGrad, w, g, n []float32) {
	for i := range w {
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

// sameBits reports whether a and b are the same float32, any NaN
// matching any NaN (the hardware's choice of payload is not the
// rule's).
func sameBits(a, b float32) bool {
	if a != a && b != b {
		return true
	}
	return math.Float32bits(a) == math.Float32bits(b)
}

// TestAdaGradKernel checks AdaGrad.Update, whose bulk runs in a vector
// kernel on amd64, against the plain loop bit for bit: random blocks of
// every length up to 41 (the kernel's blocks and the loop's tail),
// values of every magnitude with zeros of both signs, subnormals,
// infinities and NaN among them, with and without L2 and L1, over
// several steps so that the sums of squares grow.
func TestAdaGradKernel(t *testing.T) {
	rnd := rand.New(rand.NewPCG(32, 7))
	special := []float32{0, float32(math.Copysign(0, -1)), 1e-45, -1e-45, 1e-38, float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), 3e38, -3e38}
	val := func() float32 {
		if rnd.IntN(8) == 0 {
			return special[rnd.IntN(len(special))]
		}
		return float32(rnd.NormFloat64() * math.Pow(10, float64(rnd.IntN(12)-8)))
	}
	rules := []AdaGrad{
		{LR: 0.5, Eps: 1e-10},
		{LR: 0.01, Eps: 1e-8, L2: 1e-3},
		{LR: 0.1, Eps: 0, L2: 0},
		{LR: 0.1, Eps: 1e-10, L1: 1e-4, L2: 1e-4},
	}
	for _, r := range rules {
		for n := 0; n <= 41; n++ {
			w, g, s := make([]float32, n), make([]float32, n), make([]float32, n)
			for i := range w {
				w[i] = val()
				if rnd.IntN(2) == 0 {
					s[i] = float32(math.Abs(float64(val())))
				}
			}
			wr, sr := append([]float32(nil), w...), append([]float32(nil), s...)
			for step := range 4 {
				for i := range g {
					g[i] = val()
				}
				r.Update(w, g, [][]float32{s})
				adagradRef(r, wr, g, sr)
				for i := range w {
					if !sameBits(w[i], wr[i]) || !sameBits(s[i], sr[i]) {
						t.Fatalf("rule %+v, %d values, step %d, value %d: w %v (%#x) sum %v, want w %v (%#x) sum %v", r, n, step, i, w[i], math.Float32bits(w[i]), s[i], wr[i], math.Float32bits(wr[i]), sr[i])
					}
				}
			}
		}
	}
}
