//go:build unix

package lr

import (
	"os"
	"testing"

	"colo/app/sparse"
	"colo/features"
	"colo/internal/cputime"
	"colo/table"
)

// flightsPath is the real table of docs/ctr.md's experiment, beside the
// repository.
const flightsPath = "../../../shared/data/flights-3m/flights-3m.parquet"

// BenchmarkFlightsLossGrad measures logistic regression's forward and
// backward on one goroutine over the training rows of flights-3m read
// through docs/ctr.md's spec, in batches of 10,000 rows: the samples per
// second one core computes (Msamples/s, and per second of processor
// time, Msamples/cpu-s, which the load of other work does not lower), the
// figure to set beside Vowpal Wabbit's 0.67 M rows/s on one core.
func BenchmarkFlightsLossGrad(b *testing.B) {
	if _, err := os.Stat(flightsPath); err != nil {
		b.Skipf("flights-3m is not beside the repository (%v): see ../shared/data/flights-3m/README.md", err)
	}
	s, err := features.Parse("delay > 15 ~ origin + destination + origin*destination + hour(date) + weekday(date) + month(date) + " +
		"quantile(distance, 16) + origin*hour(date) + destination*hour(date) + hour(date)*weekday(date); test: date >= 2001-06-01")
	if err != nil {
		b.Fatal(err)
	}
	f, err := features.Fit(flightsPath, s, table.DefaultOptions())
	if err != nil {
		b.Fatal(err)
	}
	g, err := f.Graph(flightsPath, features.Train, table.DefaultOptions())
	if err != nil {
		b.Fatal(err)
	}
	app, err := New(g, nil, sparse.FeaturesRaw)
	if err != nil {
		b.Fatal(err)
	}
	rows := make([]int32, app.NumSamples())
	for i := range rows {
		rows[i] = int32(i)
	}
	batches := sparse.Batches(app.Train, rows, len(rows)/10000, 1, app.NumKeys())
	w := make([]float32, app.NumKeys()*app.Width())
	grad := make([]float32, len(w))
	samples := 0
	cpu0 := cputime.Process().Seconds()
	for b.Loop() {
		for _, bt := range batches {
			vals, g := w[:len(bt.Keys)*app.Width()], grad[:len(bt.Keys)*app.Width()]
			clear(g)
			app.Model.LossGrad(bt, vals, g, 1e-4)
			samples += bt.Len()
		}
	}
	b.ReportMetric(float64(samples)/1e6/b.Elapsed().Seconds(), "Msamples/s")
	b.ReportMetric(float64(samples)/1e6/(cputime.Process().Seconds()-cpu0), "Msamples/cpu-s")
}
