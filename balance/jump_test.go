package balance

import "testing"

// TestJumpRestartsTheAverage: a window within Jump of the estimate is
// averaged in; one beyond it, either way, replaces the estimate; with
// Jump 0 every window is averaged.
func TestJumpRestartsTheAverage(t *testing.T) {
	window := func(n int, speeds []float64) []float64 { // egress bytes and nanoseconds per node
		sum := make([]float64, 2*n*n+2*n)
		for j, s := range speeds {
			sum[2*n*n+j] = s * 4 // bytes in one second
			sum[2*n*n+n+j] = 1e9
		}
		return sum
	}
	for _, c := range []struct {
		jump       float64
		next, want float64
	}{
		{1.5, 1200, 1100}, // within 1.5×: averaged
		{1.5, 2000, 2000}, // up beyond 1.5×: restarted
		{1.5, 500, 500},   // down beyond 1.5×: restarted
		{0, 2000, 1500},   // never restarted
	} {
		cfg := DefaultConfig()
		cfg.Scheme, cfg.Jump = Aware, c.jump
		b, err := New(cfg, 2, 1<<16, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		b.measure(window(2, []float64{1000, 1000}))
		b.measure(window(2, []float64{c.next, 1000}))
		if b.est[0] != c.want || b.est[1] != 1000 {
			t.Errorf("jump %v, 1000 then %v keys/s: estimates %v, want %v and 1000", c.jump, c.next, b.est, c.want)
		}
	}
	for _, j := range []float64{1, 0.5, -1} {
		cfg := DefaultConfig()
		cfg.Jump = j
		if cfg.Validate() == nil {
			t.Errorf("jump %v accepted", j)
		}
	}
}
