//go:build unix

package ctr

import (
	"fmt"
	"math/rand/v2"
	"os"
	"testing"

	"colo/app/lr"
	"colo/features"
	"colo/internal/cputime"
	"colo/table"
)

// flightsPath is the real table of docs/ctr.md's experiment, beside the
// repository.
const flightsPath = "../../../shared/data/flights-3m/flights-3m.parquet"

// flightsSpec is docs/ctr.md's second spec, with the crosses of the hour.
const flightsSpec = "delay > 15 ~ origin + destination + origin*destination + hour(date) + weekday(date) + month(date) + " +
	"quantile(distance, 16) + origin*hour(date) + destination*hour(date) + hour(date)*weekday(date); test: date >= 2001-06-01"

// BenchmarkFlightsStep measures a worker's step (gather, the mlp's
// forward and backward, scatter) on one goroutine over the first 200,000
// training rows of flights-3m read through docs/ctr.md's second spec, in
// batches of 1,000 rows, for rows of 16 and 32 values, and of 32 with the
// dot interactions: the samples per
// second one core computes (Msamples/s, and per second of processor time,
// Msamples/cpu-s, which the load of other work does not lower), beside
// lr's BenchmarkFlightsLossGrad.
func BenchmarkFlightsStep(b *testing.B) {
	if _, err := os.Stat(flightsPath); err != nil {
		b.Skipf("flights-3m is not beside the repository (%v): see ../shared/data/flights-3m/README.md", err)
	}
	s, err := features.Parse(flightsSpec)
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
	for _, c := range []struct {
		dim   int
		inter string
	}{{16, "none"}, {32, "none"}, {32, "dot"}} {
		dim := c.dim
		b.Run(fmt.Sprintf("dim %d %s", dim, c.inter), func(b *testing.B) {
			cfg := DefaultConfig()
			cfg.Dim, cfg.Interactions = dim, c.inter
			a, err := New(cfg, f, g, nil)
			if err != nil {
				b.Fatal(err)
			}
			rows := make([]int32, 200000)
			for i := range rows {
				rows[i] = int32(i)
			}
			p := a.Part(0, rows, len(rows)/1000, 1)
			var vals, grad []float32
			samples := 0
			cpu0 := cputime.Process().Seconds()
			for b.Loop() {
				for bt := range p.Batches() {
					n := p.Keys(bt).Len() * dim
					vals, grad = grow(vals, n), grow(grad, n)
					clear(vals)
					clear(grad)
					_, m, _ := p.Step(bt, vals, grad, 1e-3)
					samples += m
				}
			}
			b.ReportMetric(float64(samples)/1e6/b.Elapsed().Seconds(), "Msamples/s")
			b.ReportMetric(float64(samples)/1e6/(cputime.Process().Seconds()-cpu0), "Msamples/cpu-s")
		})
	}
}

func grow(s []float32, n int) []float32 {
	if cap(s) < n {
		return make([]float32, n)
	}
	return s[:n]
}

// BenchmarkGatherScatter measures the gather of a batch's inputs (10
// fields of 16 values for 1,000 rows, from 4,000 embedding rows) and the
// scatter of their gradients, with lr's kernels (what Step runs) and with
// the scalar loops they replace.
func BenchmarkGatherScatter(b *testing.B) {
	const rows, fields, d, keys = 1000, 10, 16, 4000
	rng := rand.New(rand.NewPCG(1, 2))
	emb, grad := make([]float32, keys*d), make([]float32, keys*d)
	for i := range emb {
		emb[i] = rng.Float32()
	}
	pos := make([]int32, rows*fields)
	for i := range pos {
		pos[i] = int32(rng.IntN(keys))
	}
	x := make([]float32, rows*fields*d)
	one, sc := []float32{1}, []float32{0.5}
	b.Run("kernels", func(b *testing.B) {
		for b.Loop() {
			for i := range pos {
				lr.AddRows(x[i*d:(i+1)*d], emb, pos[i:i+1], one)
			}
			for i := range pos {
				lr.ScatterRows(grad, x[i*d:(i+1)*d], pos[i:i+1], sc)
			}
		}
		b.ReportMetric(float64(b.N*rows)/1e6/b.Elapsed().Seconds(), "Mrows/s")
	})
	b.Run("loops", func(b *testing.B) {
		for b.Loop() {
			for i, q := range pos {
				dst, src := x[i*d:(i+1)*d], emb[int(q)*d:int(q+1)*d]
				for j := range dst {
					dst[j] = src[j]
				}
			}
			for i, q := range pos {
				src, dst := x[i*d:(i+1)*d], grad[int(q)*d:int(q+1)*d]
				for j := range dst {
					dst[j] += 0.5 * src[j]
				}
			}
		}
		b.ReportMetric(float64(b.N*rows)/1e6/b.Elapsed().Seconds(), "Mrows/s")
	})
}
