package job

import (
	"os"
	"path/filepath"
	"testing"

	"colo/app/dense"
	"colo/gossip"
	"colo/launch"
	"colo/launch/launchtest"
	"colo/ps/proto"
	"colo/train"
)

// TestJoinAgreesOnJob checks that a worker of decentralised training
// whose job is not the scheduler's (another learning rate, number of
// epochs, model, shards or link rate) is refused when it joins, naming
// the fields that differ, and that one whose job differs only in what its
// host sets for itself (the data file's path, the memory budget, the
// checkpoints' directory, the placement already turned into shards, the
// weights file's name) joins.
func TestJoinAgreesOnJob(t *testing.T) {
	dir := t.TempDir()
	csv := []byte("label,a,b\n0,0.1,0.2\n1,0.9,0.8\n0,0.2,0.1\n1,0.8,0.9\n")
	paths := []string{filepath.Join(dir, "a.csv"), filepath.Join(dir, "mnt", "a.csv")}
	if err := os.Mkdir(filepath.Dir(paths[1]), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, p := range paths {
		if err := os.WriteFile(p, csv, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	spec := launchtest.Jobs(t, func() ProcSpec {
		j := train.DefaultJob()
		j.App, j.Data.Train = "mlp", paths[0]
		if err := dense.Defaults(&j); err != nil {
			t.Fatal(err)
		}
		o := dense.DefaultOptions()
		o.Hidden = []int{4}
		if err := j.SetOptions(o); err != nil {
			t.Fatal(err)
		}
		g := gossip.DefaultConfig()
		g.Workers = 2
		return ProcSpec{Job: j, Gossip: g, Shards: [][]int32{{0, 1}, {2, 3}}, Link: 125e6}
	})
	launchtest.CheckJoin(t, Kind{}, spec(nil), launch.Position{Role: proto.RoleMachine, Rank: 1, Host: "127.0.0.1"}, []launchtest.Variant{
		{Name: "the same job", Job: spec(nil)},
		{Name: "the host's own fields", Job: spec(func(s *ProcSpec) {
			s.Job.Data.Train, s.Job.Data.Load.MemoryBudget = paths[1], 1<<30
			s.Job.Config.Checkpoint.Dir, s.Job.Placement, s.Gossip.WeightsFile = dir, "stratified", "w.txt"
		})},
		{Name: "another learning rate", Job: spec(func(s *ProcSpec) { s.Gossip.LR = 0.5 }), Differs: []string{"gossip.lr"}},
		{Name: "more epochs and local steps", Job: spec(func(s *ProcSpec) { s.Gossip.Epochs, s.Gossip.LocalSteps = 9, 2 }), Differs: []string{"gossip.epochs", "gossip.local_steps"}},
		{Name: "other shards", Job: spec(func(s *ProcSpec) { s.Shards = [][]int32{{0, 2}, {1, 3}} }), Differs: []string{"shards"}},
		{Name: "another model", Job: spec(func(s *ProcSpec) {
			o := dense.DefaultOptions()
			o.Hidden = []int{8}
			if err := s.Job.SetOptions(o); err != nil {
				t.Fatal(err)
			}
		}), Differs: []string{"job.options.hidden"}},
		{Name: "another link rate", Job: spec(func(s *ProcSpec) { s.Link = 0 }), Differs: []string{"link_bytes_per_s"}},
	})
}
