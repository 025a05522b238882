package clib

import (
	"colo/internal/cputime"
	"context"
	"math/rand/v2"
	"slices"
	"testing"
)

// benchTable opens a local session with a table of rows × dim pushed
// once (every row has values), and returns n sorted random rows of it.
func benchTable(b *testing.B, rows int64, dim, n int) (*Table, []int64, func()) {
	cfg := DefaultConfig()
	cfg.Local = &Local{Consistency: "bsp", Rule: sgd(0.1)}
	s, err := Open(context.Background(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	tb, err := s.Declare(context.Background(), TableSpec{Name: "bench", Rows: rows, Dim: dim})
	if err != nil {
		b.Fatal(err)
	}
	all := make([]int64, rows)
	for i := range all {
		all[i] = int64(i)
	}
	k, err := tb.Push(all, make([]float32, int(rows)*dim))
	if err != nil || k.Wait() != nil {
		b.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	pick := r.Perm(int(rows))[:n]
	sel := make([]int64, n)
	for i, p := range pick {
		sel[i] = int64(p)
	}
	slices.Sort(sel)
	return tb, sel, func() { s.CloseWait(0) }
}

// pullLoop pulls sel into dst b.N times, reporting the CPU time per
// pull beside the wall time.
func pullLoop(b *testing.B, tb *Table, sel []int64, dst []float32) {
	b.ResetTimer()
	c0 := cputime.Process()
	for b.Loop() {
		k, err := tb.Pull(sel, dst)
		if err != nil {
			b.Fatal(err)
		}
		if err := k.Wait(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(cputime.Process()-c0)/float64(b.N), "cpu-ns/op")
}

// BenchmarkPull4096x16 pulls 4,096 sorted rows of 16 values from a table
// of 100,000 rows on the co-located server of a local session.
func BenchmarkPull4096x16(b *testing.B) {
	const rows, dim, n = 100000, 16, 4096
	tb, sel, done := benchTable(b, rows, dim, n)
	defer done()
	b.SetBytes(n * dim * 4)
	pullLoop(b, tb, sel, make([]float32, n*dim))
}

// BenchmarkPull1x16 pulls one row: the fixed cost of a pull.
func BenchmarkPull1x16(b *testing.B) {
	tb, sel, done := benchTable(b, 100000, 16, 1)
	defer done()
	pullLoop(b, tb, sel, make([]float32, 16))
}

// BenchmarkStepAdagrad runs the library calls of a training step of
// python/bench/step.py's model (a table of 61,189 rows × 20 with AdaGrad
// on the co-located server, BSP): a pull of a batch's 3,800 distinct
// rows and a push of their gradients, waited for, over 64 batches of
// random rows in turn. It measures what the servers' side of a step
// costs: the pull's copy, the push's path and the rule.
func BenchmarkStepAdagrad(b *testing.B) {
	const rows, dim, n, batches = 61189, 20, 3800, 64
	cfg := DefaultConfig()
	cfg.Local = &Local{Consistency: "bsp", Rule: adagrad(0.5)}
	s, err := Open(context.Background(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer s.CloseWait(0)
	tb, err := s.Declare(context.Background(), TableSpec{Name: "step", Rows: rows, Dim: dim})
	if err != nil {
		b.Fatal(err)
	}
	r := rand.New(rand.NewPCG(3, 4))
	sel := make([][]int64, batches)
	grad := make([][]float32, batches)
	for i := range sel {
		pick := r.Perm(rows)[:n]
		sel[i] = make([]int64, n)
		for j, p := range pick {
			sel[i][j] = int64(p)
		}
		slices.Sort(sel[i])
		grad[i] = make([]float32, n*dim)
		for j := range grad[i] {
			grad[i][j] = float32(r.NormFloat64() * 1e-2)
		}
	}
	dst := make([]float32, n*dim)
	b.SetBytes(2 * n * dim * 4)
	c0 := cputime.Process()
	i := 0
	for b.Loop() {
		k, err := tb.Pull(sel[i%batches], dst)
		if err == nil {
			err = k.Wait()
		}
		if err != nil {
			b.Fatal(err)
		}
		if k, err = tb.Push(sel[i%batches], grad[i%batches]); err == nil {
			err = k.Wait()
		}
		if err != nil {
			b.Fatal(err)
		}
		i++
	}
	b.ReportMetric(float64(cputime.Process()-c0)/float64(b.N), "cpu-ns/op")
}
