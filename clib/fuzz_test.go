package clib

import (
	"slices"
	"testing"

	"colo/ps/sched"
)

// FuzzDecodeJob checks that any job file is refused or accepted without a
// panic, and that an accepted one configures a scheduler and its links.
func FuzzDecodeJob(f *testing.F) {
	f.Add([]byte(`{"consistency":"bsp","rule":{"name":"adagrad","lr":0.1},"machines":2}`))
	f.Add([]byte(`{"consistency":"bounded","tau":2,"servers":2,"workers":3,"link_bandwidth":"100mbit"}`))
	f.Add([]byte(`{"route":"AQID","machines":1}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		j, err := DecodeJob(b)
		if err != nil {
			return
		}
		cfg := sched.DefaultConfig()
		if err := j.Scheduler(&cfg); err != nil {
			t.Fatalf("accepted job %s: scheduler: %v", b, err)
		}
		if j.BandwidthMatrix == "" {
			if _, err := j.Rates(); err != nil && j.LinkBandwidth == "" {
				t.Fatalf("accepted job %s: rates: %v", b, err)
			}
		}
	})
}

// FuzzTableSpec checks that any declaration is refused or laid out on
// keys that ascend with the rows.
func FuzzTableSpec(f *testing.F) {
	f.Add([]byte(`{"name":"emb","rows":1000,"dim":16,"init":{"name":"normal","std":1,"seed":3}}`), uint64(0))
	f.Add([]byte(`{"name":"w","dense":true,"size":40000}`), uint64(0))
	f.Add([]byte(`{"name":"p","rows":70000,"dim":20,"placed":true}`), uint64(53976))
	f.Fuzz(func(t *testing.T, b []byte, lo uint64) {
		var spec TableSpec
		if decodeStrict(b, &spec) != nil || spec.Validate() != nil {
			return
		}
		rows, dim, last := spec.shape()
		if rows < 1 || dim < 1 || last < 1 || last > dim {
			t.Fatalf("%s: shape %d × %d, last %d", b, rows, dim, last)
		}
		lo %= 1 << 40
		tb := &Table{rows: rows, id: 3}
		var err error
		if tb.split, tb.base, tb.stride, err = layout(lo, tb.id, rows, spec.Placed); err != nil {
			return
		}
		rs := slices.Compact([]int64{0, rows / 3, rows / 2, rows - 1})
		for i := 1; i < len(rs); i++ {
			if a, c := tb.key(rs[i-1]), tb.key(rs[i]); c <= a {
				t.Fatalf("%s, lo %d: row %d key %d after row %d key %d", b, lo, rs[i], c, rs[i-1], a)
			}
		}
	})
}
