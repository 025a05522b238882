package clib

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"
)

// BenchmarkPull4096x16 pulls 4,096 sorted rows of 16 values from a table
// of 100,000 rows on the co-located server of a local session.
func BenchmarkPull4096x16(b *testing.B) {
	cfg := DefaultConfig()
	cfg.Local = &Local{Consistency: "bsp", Rule: sgd(0.1)}
	s, err := Open(context.Background(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer s.CloseWait(0)
	const rows, dim, n = 100000, 16, 4096
	tb, err := s.Declare(context.Background(), TableSpec{Name: "bench", Rows: rows, Dim: dim})
	if err != nil {
		b.Fatal(err)
	}
	all := make([]int64, rows)
	for i := range all {
		all[i] = int64(i)
	}
	k, err := tb.Push(all, make([]float32, rows*dim))
	if err != nil || k.Wait() != nil {
		b.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	pick := r.Perm(rows)[:n]
	sel := make([]int64, n)
	for i, p := range pick {
		sel[i] = int64(p)
	}
	slices.Sort(sel)
	dst := make([]float32, n*dim)
	b.SetBytes(n * dim * 4)
	b.ResetTimer()
	for b.Loop() {
		k, err := tb.Pull(sel, dst)
		if err != nil {
			b.Fatal(err)
		}
		if err := k.Wait(); err != nil {
			b.Fatal(err)
		}
	}
}
