package cluster

import (
	"context"
	"strings"
	"testing"
	"time"
)

func TestBenchKV(t *testing.T) {
	cfg := KVBenchConfig{Shapes: [][2]int{{1, 1}, {2, 2}}, Duration: 30 * time.Millisecond, SparseKeys: 1000, DenseVals: 2000}
	recs, err := BenchKV(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 8 {
		t.Fatalf("%d records, want 2 shapes × 4 kinds", len(recs))
	}
	for _, r := range recs {
		if r.Requests == 0 || r.KeysPerS <= 0 || r.MBPerS <= 0 || r.P50us <= 0 || r.P99us < r.P50us {
			t.Errorf("implausible record %+v", r)
		}
		if (r.Mode == "sparse") == (r.MBPerS != r.KeysPerS*12/1e6) {
			t.Errorf("%+v: MB/s does not follow from keys/s", r)
		}
	}
	if recs[0].Mode != "sparse" || recs[0].Op != "push" || recs[7].Servers != 2 || recs[7].Op != "pull" {
		t.Errorf("order: first %+v last %+v", recs[0], recs[7])
	}
}

func TestBenchKVConfig(t *testing.T) {
	for _, tc := range []struct {
		mut  func(*KVBenchConfig)
		want string
	}{
		{func(c *KVBenchConfig) { c.Shapes = nil }, "shapes"},
		{func(c *KVBenchConfig) { c.Shapes = [][2]int{{0, 1}} }, "shape 0 × 1"},
		{func(c *KVBenchConfig) { c.Duration = 0 }, "duration"},
		{func(c *KVBenchConfig) { c.SparseKeys = 0 }, "sparse keys 0"},
		{func(c *KVBenchConfig) { c.DenseVals = -1 }, "dense values -1"},
	} {
		c := DefaultKVBenchConfig()
		tc.mut(&c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("err = %v, want %q", err, tc.want)
		}
	}
}
