package partition

import (
	"fmt"
	"slices"
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
// number of goroutines its starts run on, nor on their scheduling.
func TestBestConcurrent(t *testing.T) {
	for seed := uint64(1); seed <= 3; seed++ {
		g := randomGraph(t, seed, 300, 150, 0.04)
		var want *placement.Placement
		var wantReports []string
		for _, workers := range []int{1, 2, 4, 1, 3} {
			var reports []string
			opt := Options{K: 4, Seed: seed, Report: func(name string, v any) {
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
