package distparsa

import (
	"strings"
	"testing"

	"colo/launch"
	"colo/launch/launchtest"
	"colo/ps/proto"
)

// TestJoinAgreesOnJob checks that a machine whose partition job is not
// the scheduler's (another k, ε, seed, memory cap, or whether the spill
// is shared) is refused when it joins, naming the fields that differ,
// and that one whose job differs only in its host's paths (the data
// file, its name, the output and spill directories) joins.
func TestJoinAgreesOnJob(t *testing.T) {
	base := `{"data": "/data/g.svm", "data_name": "/data/g.svm.gz", "index_base": -1, "hash_bits": 20,
		"k": 8, "seed": 3, "blocks": 0, "init": "global", "global_fraction": 0.05, "epsilon": 0.05,
		"config": {"workers": 2, "tau": 0}, "out": "/out", "spill_dir": "/spill", "shared_spill": true,
		"memory": 100000000, "keys": 1000}`
	r := func(pairs ...string) string { return strings.NewReplacer(pairs...).Replace(base) }
	launchtest.CheckJoin(t, Kind{}, base, launch.Position{Role: proto.RoleMachine, Rank: 1}, []launchtest.Variant{
		{Name: "the same job", Job: base},
		{Name: "other paths", Job: r(`/data/`, `/mnt/`, `"/out"`, `"/elsewhere/out"`, `"/spill"`, `"/tmp/spill"`)},
		{Name: "the same job spelled otherwise", Job: r(`0.05, "epsilon": 0.05`, `5e-2, "epsilon": 0.050`)},
		{Name: "another k", Job: r(`"k": 8`, `"k": 4`), Differs: []string{"k"}},
		{Name: "another ε and seed", Job: r(`"epsilon": 0.05`, `"epsilon": 0.1`, `"seed": 3`, `"seed": 4`), Differs: []string{"epsilon", "seed"}},
		{Name: "another memory cap", Job: r(`"memory": 100000000`, `"memory": 200000000`), Differs: []string{"memory"}},
		{Name: "a spill not shared", Job: r(`, "shared_spill": true`, ``), Differs: []string{"shared_spill"}},
		{Name: "another τ", Job: r(`"tau": 0`, `"tau": 2`), Differs: []string{"config.tau"}},
	})
}
