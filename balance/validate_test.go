package balance

import (
	"math"
	"strings"
	"testing"
)

func TestValidationErrors(t *testing.T) {
	for _, c := range []struct {
		name, field string
		err         error
	}{
		{"empty matrix", "s:", func() error { _, err := Aggregate(nil); return err }()},
		{"ragged matrix", "s: row 1", func() error { _, err := Aggregate([][]float64{{0, 1}, {1}}); return err }()},
		{"negative link", "s[0][1]", func() error { _, err := Aggregate([][]float64{{0, -1}, {1, 0}}); return err }()},
		{"NaN link", "s[1][0]", func() error { _, err := Aggregate([][]float64{{0, 1}, {math.NaN(), 0}}); return err }()},
		{"infinite link", "s[1][0]", func() error { _, err := Aggregate([][]float64{{0, 1}, {math.Inf(1), 0}}); return err }()},
		{"M = 0", "M =", Model{M: 0, S: []float64{1, 1, 1}}.Validate()},
		{"M < 0", "M =", func() error { _, err := Model{M: -1, S: []float64{1, 1, 1}}.Solve(); return err }()},
		{"M NaN", "M =", Model{M: math.NaN(), S: []float64{1}}.Validate()},
		{"no nodes", "S:", Model{M: 1}.Validate()},
		{"negative S", "S[2]", Model{M: 1, S: []float64{1, 1, -2}}.Validate()},
		{"NaN S", "S[0]", Model{M: 1, S: []float64{math.NaN(), 1, 1}}.Validate()},
		{"threshold 0", "SimilarityThreshold", DistributeConfig{SimilarityThreshold: 0, MaxMoves: 1}.Validate()},
		{"threshold NaN", "SimilarityThreshold", DistributeConfig{SimilarityThreshold: math.NaN(), MaxMoves: 1}.Validate()},
		{"threshold Inf", "SimilarityThreshold", DistributeConfig{SimilarityThreshold: math.Inf(1), MaxMoves: 1}.Validate()},
		{"MaxMoves 0", "MaxMoves", DistributeConfig{SimilarityThreshold: 1}.Validate()},
		{"Alg. 1 dead node", "S[1]", func() error {
			_, _, err := Model{M: 1, S: []float64{1, 0, 1}}.Distribute(DefaultDistributeConfig())
			return err
		}()},
		{"x = 0", "x =", func() error { _, err := Segment(10, 0, 2, Probe{}); return err }()},
		{"x > M", "x =", func() error { _, err := Segment(10, 11, 2, Probe{}); return err }()},
		{"Segment M", "M =", func() error { _, err := Segment(0, 1, 2, Probe{}); return err }()},
		{"Segment n", "n =", func() error { _, err := Segment(10, 1, 0, Probe{}); return err }()},
		{"probe size", "Probe.Size", func() error { _, err := Segment(10, 1, 2, Probe{Num: 1}); return err }()},
		{"probe num", "Probe.Num", func() error { _, err := Assign([]float64{1}, []float64{1}, Probe{Num: -1}); return err }()},
		{"too many probes", "Probe:", func() error { _, err := Segment(10, 1, 2, Probe{Num: 3, Size: 2}); return err }()},
		{"negative load", "m[1]", func() error { _, err := Assign([]float64{2, -1}, []float64{1}, Probe{}); return err }()},
		{"no servers", "m:", func() error { _, err := Assign(nil, []float64{1}, Probe{}); return err }()},
		{"sums differ", "m:", func() error { _, err := Assign([]float64{1, 1}, []float64{1}, Probe{}); return err }()},
		{"slice size", "paras[1]", func() error { _, err := Assign([]float64{2}, []float64{2, 0}, Probe{}); return err }()},
		{"granularity M", "M =", func() error { _, err := Granularity(-1, 1, 1); return err }()},
		{"granularity alpha", "Alpha", func() error { _, err := Granularity(1, 0, 1); return err }()},
		{"granularity N", "N =", func() error { _, err := Granularity(1, 1, 0); return err }()},
		{"slice cost W", "W =", SliceCost{M: 1, W: 0, N: 1, Alpha: 1}.Validate()},
		{"slice cost Delta", "Delta", SliceCost{M: 1, W: 1, N: 1, Alpha: 1, Delta: -1}.Validate()},
	} {
		if c.err == nil {
			t.Errorf("%s: no error", c.name)
		} else if !strings.HasPrefix(c.err.Error(), c.field) {
			t.Errorf("%s: error %q does not start with the field %q", c.name, c.err, c.field)
		}
	}
	if err := DefaultDistributeConfig().Validate(); err != nil {
		t.Errorf("default config: %v", err)
	}
	if err := (SliceCost{M: 1, W: 1, N: 1, Alpha: 1}).Validate(); err != nil {
		t.Errorf("valid SliceCost: %v", err)
	}
}
