package balance

import (
	"math"
	"testing"
)

func TestSliceCostByHand(t *testing.T) {
	// M = 100, W = 2, N = 1, α = 4, Δt = 0.5, x = 20:
	// Eq. 1: (20/(2/1) + 4/2)·(100/20 + 1) + 0.5 = 12·6 + 0.5 = 72.5;
	// Eq. 2: 1·100/2 + 1·20/2 + 100·4/(2·20) + 4/2 + 0.5 = 50+10+10+2+0.5.
	c := SliceCost{M: 100, W: 2, N: 1, Alpha: 4, Delta: 0.5}
	if got := c.Time(20); got != 72.5 {
		t.Errorf("Eq. 1 at x = 20: %v, want 72.5", got)
	}
	// Eq. 4: √(100·4/1) = 20.
	if x, err := Granularity(100, 4, 1); err != nil || x != 20 {
		t.Errorf("Granularity(100, 4, 1) = %v, %v; want 20", x, err)
	}
	// √(1·100/2) ≈ 7.07 > M = 1: one slice.
	if x, err := Granularity(1, 100, 2); err != nil || x != 1 {
		t.Errorf("Granularity(1, 100, 2) = %v, %v; want M = 1", x, err)
	}
}

// goldenMin minimises f over [lo, hi] by golden-section search on log x.
func goldenMin(f func(float64) float64, lo, hi float64) float64 {
	a, b := math.Log(lo), math.Log(hi)
	g := (math.Sqrt(5) - 1) / 2
	c, d := b-g*(b-a), a+g*(b-a)
	fc, fd := f(math.Exp(c)), f(math.Exp(d))
	for b-a > 1e-12 {
		if fc <= fd {
			b, d, fd = d, c, fc
			c = b - g*(b-a)
			fc = f(math.Exp(c))
		} else {
			a, c, fc = c, d, fd
			d = a + g*(b-a)
			fd = f(math.Exp(d))
		}
	}
	return math.Exp((a + b) / 2)
}

// TestGranularityMinimisesEq1: Eq. 4's x agrees with a golden-section
// minimisation of Eq. 1 over (0, M], and no point of a fine grid beats it.
func TestGranularityMinimisesEq1(t *testing.T) {
	for _, c := range []SliceCost{
		{M: 2.5e7, W: 6.875e6, N: 12, Alpha: PaperAlpha, Delta: 0.1}, // ResNet50-sized; 220 Mbit/s of float32s
		{M: 5.5e6, W: 1e6, N: 12, Alpha: PaperAlpha},
		{M: 5.7e7, W: 1e8, N: 4, Alpha: PaperAlpha, Delta: 2},
		{M: 1e4, W: 10, N: 100, Alpha: 3},
		{M: 50, W: 1, N: 2, Alpha: 1e4}, // √(Mα/N) > M: the best is one slice
		{M: 1, W: 1, N: 1, Alpha: 1},    // √(Mα/N) = M exactly
	} {
		if err := c.Validate(); err != nil {
			t.Fatal(err)
		}
		x, err := Granularity(c.M, c.Alpha, c.N)
		if err != nil {
			t.Fatal(err)
		}
		numeric := goldenMin(c.Time, c.M*1e-9, c.M)
		if math.Abs(x-numeric) > 1e-5*x {
			t.Errorf("%+v: Eq. 4 gives %v, golden section %v", c, x, numeric)
		}
		best := c.Time(x)
		for k := 0; k <= 100000; k++ {
			g := c.M * math.Pow(10, -9*float64(k)/100000)
			if tg := c.Time(g); tg < best*(1-1e-12) {
				t.Fatalf("%+v: T(%v) = %v < T(Eq. 4 x = %v) = %v", c, g, tg, x, best)
			}
		}
	}
}
