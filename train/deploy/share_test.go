package deploy

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"colo/app"
	"colo/launch"
	"colo/placement"
	"colo/ps/proto"
)

// TestReplacementOpensItsShare: with the whole training graph taken out
// of the job's data cache, a replacement machine (--recover) of rank 1
// opens the job from its share alone, while a first start of the same
// machine, and a replacement of machine 0 of a job without a test file
// (it scores the training set), need the whole graph and say which file
// is missing.
func TestReplacementOpensItsShare(t *testing.T) {
	for _, test := range []bool{true, false} {
		job, opened, _ := newsJob(t, 3, 2, test)
		p, _, err := opened.Place(job)
		if err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		job.Placement = filepath.Join(dir, "placement")
		if err := placement.WriteDir(job.Placement, opened.Data.Graph, p, map[string]any{"k": 3}); err != nil {
			t.Fatal(err)
		}
		job.Data.Cache = filepath.Join(dir, "data")
		if ok, err := opened.WriteCache(job.Data.Cache, p); !ok || err != nil {
			t.Fatalf("write the cache: %v, %v", ok, err)
		}
		job.Data.Train, job.Data.Test = filepath.Join(dir, "gone.svm"), "" // read from the cache
		job.Config.Checkpoint.Dir, job.Config.Checkpoint.Every = filepath.Join(dir, "ck"), 1
		if err := os.Rename(filepath.Join(job.Data.Cache, "train.graph"), filepath.Join(dir, "moved")); err != nil {
			t.Fatal(err)
		}
		rj, err := NewJob(job, opened.App, p)
		if err != nil {
			t.Fatal(err)
		}
		raw, err := json.Marshal(rj)
		if err != nil {
			t.Fatal(err)
		}
		k := Kind{Place: app.Placed}
		open := func(role proto.Role, rank int, recover bool) error {
			_, err := k.Open(context.Background(), raw, launch.Position{Role: role, Rank: rank, Recover: recover})
			return err
		}
		if err := open(proto.RoleMachine, 1, true); err != nil {
			t.Errorf("test file %v: the replacement of machine 1 from its share: %v", test, err)
		}
		if err := open(proto.RoleMachine, 1, false); err == nil || !strings.Contains(err.Error(), "train.graph") {
			t.Errorf("test file %v: machine 1 started first, with the whole graph gone: %v, want an error naming train.graph", test, err)
		}
		err = open(proto.RoleMachine, 0, true)
		if test && err != nil {
			t.Errorf("the replacement of machine 0 from its share: %v", err)
		}
		if !test && (err == nil || !strings.Contains(err.Error(), "train.graph")) {
			t.Errorf("the replacement of machine 0, which scores the training set, with the whole graph gone: %v, want an error naming train.graph", err)
		}
	}
}
