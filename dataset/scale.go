package dataset

import (
	"fmt"
	"math"
)

// Scaler standardises features: feature j of every sample becomes
// (x − Mean[j]) / Std[j], with the mean and the standard deviation of a
// training set (FitScaler), so that features of any scale (pixel
// intensities 0..16, incomes, counts) reach a model at unit scale. The
// same Scaler applies to the test set, which is scaled by the training
// set's statistics, never its own.
//
// A constant feature has Std 1: it is centred, not divided by zero.
// Fitting costs one pass over the n × d features in float64, O(n·d);
// Apply one more, and a copy of the features.
type Scaler struct {
	Mean, Std []float64
}

// FitScaler returns the statistics of d's features: each feature's mean
// and standard deviation (of the population, divided by n).
func FitScaler(d *Dataset) Scaler {
	s := Scaler{Mean: make([]float64, d.Dim), Std: make([]float64, d.Dim)}
	n := d.Len()
	if n == 0 {
		for j := range s.Std {
			s.Std[j] = 1
		}
		return s
	}
	for i := range n {
		for j, x := range d.Row(i) {
			s.Mean[j] += float64(x)
		}
	}
	for j := range s.Mean {
		s.Mean[j] /= float64(n)
	}
	for i := range n {
		for j, x := range d.Row(i) {
			v := float64(x) - s.Mean[j]
			s.Std[j] += v * v
		}
	}
	for j, v := range s.Std {
		s.Std[j] = math.Sqrt(v / float64(n))
		if !(s.Std[j] > 0) || math.IsInf(s.Std[j], 0) {
			s.Std[j] = 1
		}
	}
	return s
}

// Apply returns a copy of d with its features standardised. d must have
// the scaler's dimension.
func (s Scaler) Apply(d *Dataset) (*Dataset, error) {
	if d.Dim != len(s.Mean) || len(s.Std) != len(s.Mean) {
		return nil, fmt.Errorf("%s: %d features per sample, the standardisation has %d", d.Source, d.Dim, len(s.Mean))
	}
	out := *d
	out.Features = make([]float32, len(d.Features))
	for i := range d.Len() {
		row, dst := d.Row(i), out.Features[i*d.Dim:(i+1)*d.Dim]
		for j, x := range row {
			dst[j] = float32((float64(x) - s.Mean[j]) / s.Std[j])
		}
	}
	return &out, nil
}
