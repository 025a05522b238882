package shard

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"colo/dataset"
)

// TestSummaryExact checks the count figures on a case worked by hand:
// samples x = 0 2 10 | 1 3 5 in classes 0 0 0 | 1 1 1, assigned
// 0 1 * | 0 0 1 to two workers (sample 2 broadcast).
func TestSummaryExact(t *testing.T) {
	d, err := dataset.New([]float32{0, 2, 10, 1, 3, 5}, []int{0, 0, 0, 1, 1, 1}, 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	res := &Result{Assign: []int{0, 1, Broadcast, 0, 0, 1}, Workers: 2, Scheme: SchemeDistAware}
	s, err := Summarize(d, res, SummaryOptions{Sigma: 1, CoverageSample: -1}, rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	if s.BroadcastSamples != 1 {
		t.Errorf("broadcast samples %d, want 1", s.BroadcastSamples)
	}
	// Class targets: class 0 has 2 own samples and 1 broadcast, 1+1 = 2
	// per shard; class 1 has 3 own samples, 1.5 per shard. Sizes: 5 own
	// samples, 2.5 per shard, plus the broadcast one.
	want := []ShardSummary{
		{Worker: 0, Size: 4, Own: 3, Target: 3.5, ClassCounts: []int{2, 2}, ClassTargets: []float64{2, 1.5}, MaxProportionDeviation: 0},
		{Worker: 1, Size: 3, Own: 2, Target: 3.5, ClassCounts: []int{2, 1}, ClassTargets: []float64{2, 1.5}, MaxProportionDeviation: 1.0 / 6},
	}
	for j, w := range want {
		g := s.Shards[j]
		if g.Size != w.Size || g.Own != w.Own || g.Target != w.Target || !slices.Equal(g.ClassCounts, w.ClassCounts) ||
			!slices.Equal(g.ClassTargets, w.ClassTargets) || math.Abs(g.MaxProportionDeviation-w.MaxProportionDeviation) > 1e-12 {
			t.Errorf("shard %d = %+v, want %+v", j, g, w)
		}
	}
	if s.MaxSizeDeviation != 0.5 || s.MaxClassCountDeviation != 0.5 || s.MaxClassCountSpread != 1 {
		t.Errorf("deviations: size %g, count %g, spread %d; want 0.5, 0.5, 1", s.MaxSizeDeviation, s.MaxClassCountDeviation, s.MaxClassCountSpread)
	}
	if math.Abs(s.MaxProportionDeviation-1.0/6) > 1e-12 {
		t.Errorf("proportion deviation %g, want 1/6", s.MaxProportionDeviation)
	}
	// Class 0: means (0+10)/2 = 5 and (2+10)/2 = 6; class 1: 2 and 5.
	if s.PerClass[0].MeanDistance != 1 || s.PerClass[1].MeanDistance != 3 || s.MaxMeanDistance != 3 {
		t.Errorf("mean distances %g, %g (max %g), want 1, 3 (3)", s.PerClass[0].MeanDistance, s.PerClass[1].MeanDistance, s.MaxMeanDistance)
	}
	if s.PerClass[1].CountSpread != 1 || s.PerClass[0].CountSpread != 0 {
		t.Errorf("count spreads %d, %d; want 0, 1", s.PerClass[0].CountSpread, s.PerClass[1].CountSpread)
	}
}

// TestCoverageAgainstDefinition compares the coverage figures with their
// definition computed in float64 over every reference sample.
func TestCoverageAgainstDefinition(t *testing.T) {
	d := blobs(t, []int{50, 33}, 3, 5)
	o := DefaultOptions()
	o.Workers, o.Scheme = 3, SchemeRandom
	res, err := Shard(d, o, rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	res.Assign[7] = Broadcast
	s, err := Summarize(d, res, SummaryOptions{CoverageSample: 1000}, rand.New(rand.NewPCG(2, 2)))
	if err != nil {
		t.Fatal(err)
	}
	for l, members := range d.ByClass() {
		sigma := classSigma(d, members)
		if s.PerClass[l].Sigma != sigma {
			t.Errorf("class %d: sigma %g, want the median heuristic %g", l, s.PerClass[l].Sigma, sigma)
		}
		for j := range 3 {
			want := 0.0
			for _, v := range members {
				best := 0.0
				for _, a := range members {
					if w := res.Assign[a]; w != j && w != Broadcast {
						continue
					}
					sq := 0.0
					for f := range d.Dim {
						t := float64(d.Row(v)[f]) - float64(d.Row(a)[f])
						sq += t * t
					}
					best = max(best, math.Exp(-sq/(2*sigma*sigma)))
				}
				want += best / float64(len(members))
			}
			if got := s.PerClass[l].Coverage[j]; math.Abs(got-want) > 1e-4 {
				t.Errorf("class %d shard %d: coverage %g, want %g", l, j, got, want)
			}
		}
	}
	if s.CoverageReference != 50 {
		t.Errorf("coverage reference %d, want 50 (the largest class)", s.CoverageReference)
	}
}

// TestBaselineSameSplit: when each class sits on one worker the random
// baseline with the same counts is the same split.
func TestBaselineSameSplit(t *testing.T) {
	d := blobs(t, []int{20, 30}, 2, 6)
	assign := slices.Clone(d.Labels)
	s, err := Summarize(d, &Result{Assign: assign, Workers: 2, Scheme: SchemeStratified}, SummaryOptions{}, rand.New(rand.NewPCG(3, 3)))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range s.PerClass {
		for j := range c.Coverage {
			if math.Abs(c.Coverage[j]-c.BaselineCoverage[j]) > 1e-12 {
				t.Errorf("class %d: coverage %v, baseline %v", c.Class, c.Coverage, c.BaselineCoverage)
			}
		}
		if math.Abs(c.Coverage[c.Class]-1) > 1e-6 {
			t.Errorf("class %d: a shard holding the whole class covers %g, want 1", c.Class, c.Coverage[c.Class])
		}
	}
	if math.Abs(s.MinCoverageGain) > 1e-12 {
		t.Errorf("min coverage gain %g, want 0", s.MinCoverageGain)
	}
}

func TestSummarizeErrors(t *testing.T) {
	d := blobs(t, []int{4}, 2, 1)
	for _, tt := range []struct {
		res  *Result
		o    SummaryOptions
		want string
	}{
		{&Result{Assign: []int{0, 0}, Workers: 2}, SummaryOptions{}, "assignment of 2 samples for a dataset of 4"},
		{&Result{Assign: []int{0, 0, 5, 0}, Workers: 2}, SummaryOptions{}, "sample 2 assigned to worker 5"},
		{&Result{Assign: []int{0, 0, 1, 0}, Workers: 2}, SummaryOptions{Ratios: []float64{1}}, "ratios: 1 values for 2 workers"},
	} {
		if _, err := Summarize(d, tt.res, tt.o, rand.New(rand.NewPCG(1, 1))); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("err = %v, want …%s…", err, tt.want)
		}
	}
}

// TestCoverageReferencesUnaligned: reference samples must not line up
// with a round-robin deal. With evenly strided references every one of
// them would sit in the same stratified shard and cover it perfectly.
func TestCoverageReferencesUnaligned(t *testing.T) {
	d := blobs(t, []int{400}, 8, 3)
	res := &Result{Assign: Stratified(d.Labels, d.Classes, 4), Workers: 4, Scheme: SchemeStratified}
	s, err := Summarize(d, res, SummaryOptions{CoverageSample: 100}, rand.New(rand.NewPCG(4, 4)))
	if err != nil {
		t.Fatal(err)
	}
	for j, c := range s.PerClass[0].Coverage {
		if c > 0.999 {
			t.Errorf("shard %d covers %g of the class: the references are aligned with the deal", j, c)
		}
	}
}
