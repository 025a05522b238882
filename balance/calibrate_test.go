package balance_test

import (
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"colo/balance"
	"colo/cluster"
)

func TestAlphaOf(t *testing.T) {
	for _, c := range []struct {
		small, large time.Duration
		keys         uint64
		want         float64
		ok           bool
	}{
		// 1 ms of fixed cost, 1 µs a key: α = 1,000 keys.
		{time.Millisecond, time.Millisecond + 4095*time.Microsecond, 4096, 1000, true},
		// β = α/W: twice the fixed cost, twice α.
		{2 * time.Millisecond, 2*time.Millisecond + 4095*time.Microsecond, 4096, 2000, true},
		// Twice the bandwidth (half the time a key), twice α.
		{time.Millisecond, time.Millisecond + 4095*500*time.Nanosecond, 4096, 2000, true},
		{time.Millisecond, time.Millisecond, 4096, 0, false}, // the bytes cost nothing seen
		{time.Millisecond, time.Microsecond, 4096, 0, false},
		{0, time.Millisecond, 4096, 0, false},
		{time.Millisecond, 2 * time.Millisecond, 1, 0, false},
	} {
		got, ok := balance.AlphaOf(c.small, c.large, c.keys)
		if ok != c.ok || (ok && (got < c.want*(1-1e-9) || got > c.want*(1+1e-9))) {
			t.Errorf("AlphaOf(%v, %v, %d) = %v, %v; want %v, %v", c.small, c.large, c.keys, got, ok, c.want, c.ok)
		}
	}
}

func TestSliceFor(t *testing.T) {
	for _, c := range []struct {
		M, alpha float64
		n        int
		want     uint64
	}{
		{52500, 120000, 12, 4375}, // Eq. 4 gives 22,913; a server's even share is 4,375
		{52500, 300, 12, 1146},    // √(52,500·300/12) = 1,145.6
		{1e6, 1e-6, 4, 1},         // below a key: one key
		{100, 4, 1, 20},           // √(100·4/1)
	} {
		if got := balance.SliceFor(c.M, c.alpha, c.n); got != c.want {
			t.Errorf("SliceFor(%v, %v, %d) = %d, want %d", c.M, c.alpha, c.n, got, c.want)
		}
	}
}

// TestSliceLargerThanModel checks that a slice larger than the model is
// refused, naming both.
func TestSliceLargerThanModel(t *testing.T) {
	cfg := balance.DefaultConfig()
	cfg.Scheme, cfg.Slice = balance.Aware, 5000
	if _, err := balance.New(cfg, 4, 4096, nil, nil); err == nil || !strings.Contains(err.Error(), "slice of 5000 keys: the model has 4096") {
		t.Errorf("a slice larger than the model: %v", err)
	}
}

// TestCalibration: with the slice measured, every worker's balancer
// measures the same α, chooses Eq. 4's slice for it, and keeps the
// calibration's pulls out of the speeds it measures (which still match
// the true rates, as in TestAwareMeasuresTheLinks). On the fake clock of
// a synctest bubble the emulated links take their time exactly: a pull's
// fixed cost is its request and its reply's header at the links' rates,
// so α is the bytes of both in keys (a few tens).
func TestCalibration(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const machines, keys, rounds, rate = 4, 1 << 16, 4, 8e6
		cfg := cluster.DefaultConfig()
		cfg.Machines, cfg.NumKeys, cfg.LinkBandwidth = machines, keys, rate
		bc := balance.DefaultConfig()
		bc.Scheme, bc.Auto, bc.MinGain = balance.Aware, true, 0.99 // measure, never move
		reps := measureRounds(t, cfg, bc, rounds)
		c0 := reps[0].Calibration
		if c0 == nil {
			t.Fatal("no calibration")
		}
		t.Logf("calibration %+v", *c0)
		if c0.Links != machines*(machines-1) || !(c0.Alpha > 1 && c0.Alpha < 100) || c0.Note != "" {
			t.Errorf("calibration %+v: want %d links and α of a few tens of keys", *c0, machines*(machines-1))
		}
		if want := balance.SliceFor(keys, c0.Alpha, machines); c0.Slice != want {
			t.Errorf("slice %d, Eq. 4 gives %d", c0.Slice, want)
		}
		for r, rep := range reps {
			if c := rep.Calibration; c == nil || c.Alpha != c0.Alpha || c.Slice != c0.Slice {
				t.Errorf("worker %d calibrated %+v, worker 0 %+v", r, c, *c0)
			}
		}
		// The calibration's time is not a round's: every timed window
		// (the first is the untimed first round) is as long as the next.
		ds := reps[0].Decisions
		for i := 2; i < len(ds); i++ {
			if a, b := ds[i-1].Seconds, ds[i].Seconds; a > b*1.05 || b > a*1.05 {
				t.Errorf("round times %v and %v s: the calibration counted in a round", a, b)
			}
		}
		want := rate / 4 // keys per second
		for _, d := range reps[0].Decisions {
			for j, s := range d.Speeds {
				if s < want*0.98 || s > want*1.02 {
					t.Errorf("round %d: node %d measured %.0f keys/s, true %.0f", d.Round, j, s, want)
				}
			}
		}
	})
}
