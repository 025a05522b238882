package deploy

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"colo/ps/route"
	"colo/ps/sched"
)

// TestJobDigest checks what the scheduler of a training job makes every
// member agree on (sched.Config.JobDigest, which Kind.Scheduler sets and
// Kind.Open gives the member): the same job spelled otherwise
// (indentation, a number's notation, a default written out) or read from
// other paths agrees; a changed setting does not.
func TestJobDigest(t *testing.T) {
	table := func(servers int) string {
		tb, err := route.FromPlacement([]int32{0, 1, 0, 1, 1}, servers)
		if err != nil {
			t.Fatal(err)
		}
		b, err := tb.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		return base64.StdEncoding.EncodeToString(b)
	}
	rt := table(2)
	base := `{"app": "lr", "options": {"features": "auto"},
		"data": {"train": "/data/a.svm", "test": "/data/a.t", "load": {"index_base": -1, "hash_bits": 20}},
		"placement": "parsa",
		"config": {"machines": 2, "consistency": "bsp", "rule": {"name": "adagrad", "lr": 0.5, "eps": 1e-08},
			"epsilon": 0.0001, "max_passes": 2, "seed": 1, "checkpoint": {"dir": "/ck", "every": 5}},
		"route": "` + rt + `", "width": 20}`
	digest := func(raw string) string {
		t.Helper()
		var cfg sched.Config
		if err := (Kind{}).Scheduler(json.RawMessage(raw), &cfg); err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		if cfg.JobDigest == "" {
			t.Fatalf("%s: no digest", raw)
		}
		return cfg.JobDigest
	}
	d0 := digest(base)
	r := func(pairs ...string) string { return strings.NewReplacer(pairs...).Replace(base) }
	for _, c := range []struct {
		name, raw string
		same      bool
	}{
		{"indented otherwise", strings.Join(strings.Fields(r(`1e-08`, `1e-8`, `0.0001`, `1e-4`)), ""), true},
		{"other paths", r(`/data/`, `/mnt/x/`, `"dir": "/ck"`, `"dir": "/other/ck"`), true},
		{"a default written out", r(`"seed": 1,`, `"seed": 1, "batch": 0,`), true},
		{"max_passes", r(`"max_passes": 2`, `"max_passes": 5`), false},
		{"lr", r(`"lr": 0.5`, `"lr": 0.1`), false},
		{"checkpoint.every", r(`"every": 5`, `"every": 6`), false},
		{"options", r(`"features": "auto"`, `"features": "raw"`), false},
		{"hash_bits", r(`"hash_bits": 20`, `"hash_bits": 18`), false},
		{"route", r(rt, table(3), `"machines": 2`, `"machines": 2, "servers": 3`), false},
	} {
		if got := digest(c.raw); (got == d0) != c.same {
			t.Errorf("%s: digest %.12s, the base's %.12s: want the same %v", c.name, got, d0, c.same)
		}
	}
}
