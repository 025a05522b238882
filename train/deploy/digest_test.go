package deploy

import (
	"encoding/base64"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"colo/launch"
	"colo/launch/launchtest"
	"colo/ps/proto"
	"colo/ps/route"
	"colo/ps/sched"
	"colo/train"
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
		{"the host's goroutines a step", r(`"features": "auto"`, `"features": "auto", "threads": 2`), true},
		{"max_passes", r(`"max_passes": 2`, `"max_passes": 5`), false},
		{"lr", r(`"lr": 0.5`, `"lr": 0.1`), false},
		{"checkpoint.every", r(`"every": 5`, `"every": 6`), false},
		{"options", r(`"features": "auto"`, `"features": "raw"`), false},
		{"hash_bits", r(`"hash_bits": 20`, `"hash_bits": 18`), false},
		{"route", r(rt, table(3), `"machines": 2`, `"machines": 2, "servers": 3`), false},
		{"another option", r(`{"features": "auto"}`, `{"hash": 0, "features": "auto"}`), false},
		{"another placement, the same route", r(`"parsa"`, `"random"`), true},
		{"a memory budget", r(`"hash_bits": 20`, `"hash_bits": 20, "memory_budget": 1000000`), true},
	} {
		if got := digest(c.raw); (got == d0) != c.same {
			t.Errorf("%s: digest %.12s, the base's %.12s: want the same %v", c.name, got, d0, c.same)
		}
	}
}

// TestJobDigestWithoutRoute checks that a job without its routing table
// (one written by hand), whose every process places the job itself,
// makes them agree on the placement, which one with its routing table
// leaves to the table.
func TestJobDigestWithoutRoute(t *testing.T) {
	job := func(placement string) Job {
		j := Job{Job: train.DefaultJob()}
		j.App, j.Data.Train, j.Placement = "lr", "/data/a.svm", placement
		return j
	}
	a, err := job("parsa").digest()
	if err != nil {
		t.Fatal(err)
	}
	b, err := job("random").digest()
	if err != nil {
		t.Fatal(err)
	}
	if a.Sum == b.Sum {
		t.Fatalf("placements parsa and random: the same digest %.12s", a.Sum)
	}
	if d := proto.JobFieldsDiffer(a.Fields, b.Fields); !slices.Equal(d, []string{"placement"}) {
		t.Fatalf("placements parsa and random differ in %q, want placement", d)
	}
}

// TestJoinAgreesOnJob checks that a server whose job is not the
// scheduler's is refused when it joins, naming the fields that differ,
// and that one whose job differs only in its host's paths and memory
// budget joins (launchtest.CheckJoin).
func TestJoinAgreesOnJob(t *testing.T) {
	tb, err := route.FromPlacement([]int32{0, 1, 0, 1, 1}, 2)
	if err != nil {
		t.Fatal(err)
	}
	rt, err := tb.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	base := `{"app": "mlp", "options": {"labels": "/data/l.idx", "hidden": [16]},
		"data": {"train": "/data/a.idx", "test": "/data/t.idx", "load": {"index_base": -1, "hash_bits": 20}},
		"placement": "random",
		"config": {"machines": 2, "servers": 2, "consistency": "bsp", "rule": {"name": "adagrad", "lr": 0.5, "eps": 1e-08},
			"max_passes": 2, "seed": 1, "checkpoint": {"dir": "/ck", "every": 5}},
		"route": "` + base64.StdEncoding.EncodeToString(rt) + `", "width": 20}`
	r := func(pairs ...string) string { return strings.NewReplacer(pairs...).Replace(base) }
	launchtest.CheckJoin(t, Kind{}, base, launch.Position{Role: proto.RoleServer, Rank: -1}, []launchtest.Variant{
		{Name: "the same job", Job: base},
		{Name: "other paths", Job: r(`/data/`, `/mnt/x/`, `"dir": "/ck"`, `"dir": "/other/ck"`)},
		{Name: "a memory budget", Job: r(`"hash_bits": 20`, `"hash_bits": 20, "memory_budget": 1000000`)},
		{Name: "another lr", Job: r(`"lr": 0.5`, `"lr": 0.1`), Differs: []string{"config.rule.lr"}},
		{Name: "more passes and another seed", Job: r(`"max_passes": 2`, `"max_passes": 5`, `"seed": 1`, `"seed": 2`), Differs: []string{"config.max_passes", "config.seed"}},
		{Name: "another model", Job: r(`[16]`, `[32]`), Differs: []string{"options.hidden"}},
		{Name: "another width", Job: r(`"width": 20`, `"width": 10`), Differs: []string{"width"}},
	})
}
