package partition

import (
	"fmt"
	"runtime"
	"slices"
	"sync/atomic"
	"testing"

	"colo/placement"
)

// TestBestPicksTheLowerTMax: Best returns a placement no worse in T_max
// than each of its refined starts (Bisect's on the seeds whose graphs have
// popular parameters, at least bisectMinParamDegree samples each on
// average), and TSH-2 is never worse than TSH-1 (it keeps TSH-1's
// placement when its own is worse).
func TestBestPicksTheLowerTMax(t *testing.T) {
	for seed := uint64(1); seed <= 6; seed++ {
		g := randomGraph(t, seed, 120, 60, 0.06)
		starts := []string{"parsa+refine"}
		if seed%2 == 0 {
			g = randomGraph(t, seed, 1200, 6, 0.3) // 360 samples per parameter
			starts = append(starts, "bisect+refine")
		}
		opt := Options{K: 4, Seed: seed}
		got, err := Best(g, opt)
		if err != nil {
			t.Fatal(err)
		}
		gc, err := placement.Evaluate(g, got, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, start := range starts {
			run, err := Lookup(start)
			if err != nil {
				t.Fatal(err)
			}
			p, err := run(g, opt)
			if err != nil {
				t.Fatal(err)
			}
			c, err := placement.Evaluate(g, p, 0)
			if err != nil {
				t.Fatal(err)
			}
			if gc.TMax > c.TMax {
				t.Errorf("seed %d: best has T_max %d, %s %d", seed, gc.TMax, start, c.TMax)
			}
		}
		var tmax [3]int64
		for alpha := 1; alpha <= 2; alpha++ {
			o := opt
			o.TSH.Alpha = alpha
			p, err := TSH(g, o)
			if err != nil {
				t.Fatal(err)
			}
			c, err := placement.Evaluate(g, p, 0)
			if err != nil {
				t.Fatal(err)
			}
			tmax[alpha] = c.TMax
		}
		if tmax[2] > tmax[1] {
			t.Errorf("seed %d: TSH-2 T_max %d above TSH-1's %d", seed, tmax[2], tmax[1])
		}
	}
}

// TestBestConcurrent: Best's result and reports do not depend on the
// number of goroutines its starts run on, nor on their scheduling; with
// Options.Round neither do they depend on which starts were refined ahead
// of time by the goroutines left idle (runAhead).
func TestBestConcurrent(t *testing.T) {
	for seed := uint64(1); seed <= 6; seed++ {
		g := randomGraph(t, seed, 300, 150, 0.04)
		var want *placement.Placement
		var wantReports []string
		for _, workers := range []int{1, 2, 4, 1, 3} {
			var reports []string
			opt := Options{K: 4, Seed: seed, Round: seed > 3, Directions: seed%2 == 0, Report: func(name string, v any) {
				reports = append(reports, fmt.Sprintf("%s %+v", name, v))
			}}
			p, err := best(g, opt, workers)
			if err != nil {
				t.Fatal(err)
			}
			if want == nil {
				want, wantReports = p, reports
				continue
			}
			if !slices.Equal(p.Data, want.Data) || !slices.Equal(p.Param, want.Param) {
				t.Fatalf("seed %d: %d goroutines place otherwise than one", seed, workers)
			}
			if !slices.Equal(reports, wantReports) {
				t.Fatalf("seed %d: %d goroutines report %q, one %q", seed, workers, reports, wantReports)
			}
		}
	}
}

// TestRunAhead walks runAhead through a schedule fixed by channels: three
// starts on two goroutines, start 0 done at once, so that the goroutine
// left idle when start 1 ends refines start 1 ahead while start 2 runs.
// When start 2 ends with a lower value, the refinement of start 1 is
// stopped (Best then refines start 2); with a higher one it is kept.
func TestRunAhead(t *testing.T) {
	for _, tc := range []struct {
		last    int // start 2's value
		stopped bool
	}{{1, true}, {9, false}} {
		value := []int{5, 3, tc.last}
		release := []chan struct{}{nil, make(chan struct{}), make(chan struct{})}
		refined := make(chan struct{})
		var calls atomic.Int32
		placed := &placement.Placement{K: 1}
		go func() { <-refined; close(release[2]) }()
		close(release[1])
		ahead := runAhead(3, 2, func(i int) {
			if release[i] != nil {
				<-release[i]
			}
		}, func(i int) int { return i }, func(done []bool) (int, *placement.Placement, uint64) {
			best := -1
			for i, d := range done {
				if d && (best < 0 || value[i] < value[best]) {
					best = i
				}
			}
			return best, placed, uint64(best)
		}, func(p *placement.Placement, seed uint64, stop *atomic.Bool) (*placement.Placement, RoundStats, error) {
			calls.Add(1)
			if seed != 1 || p != placed {
				t.Errorf("refined ahead: seed %d, want start 1's", seed)
			}
			close(refined)
			if !tc.stopped {
				return p, RoundStats{Passes: 7}, nil
			}
			for !stop.Load() {
				runtime.Gosched()
			}
			return nil, RoundStats{}, errRoundStopped
		})
		if calls.Load() != 1 || len(ahead) != 1 || ahead[0].start != 1 {
			t.Fatalf("start 2 of value %d: %d refinements ahead, %d kept", tc.last, calls.Load(), len(ahead))
		}
		if a := ahead[0]; a.stop.Load() != tc.stopped || (a.err == nil) == tc.stopped || (!tc.stopped && (a.p != placed || a.st.Passes != 7)) {
			t.Errorf("start 2 of value %d: refinement of start 1 stopped %v, error %v, placement %p, stats %+v", tc.last, a.stop.Load(), a.err, a.p, a.st)
		}
	}
}
