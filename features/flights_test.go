package features

import (
	"os"
	"testing"

	"colo/table"
)

// flightsPath is the real table of docs/ctr.md's experiment, beside the
// repository.
const flightsPath = "../../shared/data/flights-3m/flights-3m.parquet"

// flightsSpec is docs/ctr.md's spec with the hour crosses.
const flightsSpec = "delay > 15 ~ origin + destination + origin*destination + hour(date) + weekday(date) + month(date) + " +
	"quantile(distance, 16) + origin*hour(date) + destination*hour(date) + hour(date)*weekday(date); test: date >= 2001-06-01"

// BenchmarkFlights fits docs/ctr.md's spec on the training rows of
// flights-3m and builds their graph (rows/s: training rows per second of
// fit and build together).
func BenchmarkFlights(b *testing.B) {
	if _, err := os.Stat(flightsPath); err != nil {
		b.Skipf("flights-3m is not beside the repository (%v): see ../shared/data/flights-3m/README.md", err)
	}
	s, err := Parse(flightsSpec)
	if err != nil {
		b.Fatal(err)
	}
	rows := 0
	for b.Loop() {
		f, err := Fit(flightsPath, s, table.DefaultOptions())
		if err != nil {
			b.Fatal(err)
		}
		g, err := f.Graph(flightsPath, Train, table.DefaultOptions())
		if err != nil {
			b.Fatal(err)
		}
		if g.NumSamples() != 2497772 {
			b.Fatalf("%d training rows, want 2,497,772", g.NumSamples())
		}
		rows += g.NumSamples()
	}
	b.ReportMetric(float64(rows)/b.Elapsed().Seconds(), "rows/s")
}
