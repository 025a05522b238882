package train

import (
	"strings"
	"testing"

	"colo/checkpoint"
)

// TestCheckpointValidate checks each refusal's message.
func TestCheckpointValidate(t *testing.T) {
	for _, c := range []struct {
		ck   Checkpoint
		want string
	}{
		{Checkpoint{Dir: "d", Every: -1}, "checkpoint.every -1: want a positive number of rounds"},
		{Checkpoint{Every: 5}, "checkpoint.every 5 without checkpoint.dir"},
		{Checkpoint{Dir: "d"}, "checkpoint.dir d without checkpoint.every"},
		{Checkpoint{Dir: "d", Every: 5}, ""},
		{Checkpoint{Resume: "d"}, ""},
		{Checkpoint{Resume: "d", Wait: true}, "checkpoint.wait without checkpoint.dir"},
		{Checkpoint{Dir: "d", Every: 5, Wait: true}, ""},
		{Checkpoint{Resume: "d", Durable: true}, "checkpoint.durable without checkpoint.dir"},
		{Checkpoint{Dir: "d", Every: 5, Durable: true}, ""},
	} {
		err := c.ck.Validate()
		if (err == nil) != (c.want == "") || err != nil && !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.ck, err, c.want)
		}
	}
	cfg := DefaultConfig()
	cfg.Checkpoint = Checkpoint{Dir: "d", Every: 1}
	cfg.Balance = nil
	if err := cfg.Validate(); err != nil {
		t.Errorf("checkpoints without balancing: %v", err)
	}
}

// TestCheckDirs refuses to write into a directory holding an earlier
// run's checkpoints, unless the job resumes from it.
func TestCheckDirs(t *testing.T) {
	dir := t.TempDir()
	if err := (Checkpoint{Dir: dir, Every: 3}).CheckDirs(); err != nil {
		t.Fatalf("empty directory: %v", err)
	}
	if _, err := checkpoint.WriteFile(dir, 3, "worker-000.json", []byte("{}")); err != nil {
		t.Fatal(err)
	}
	if err := (Checkpoint{Dir: dir, Every: 3}).CheckDirs(); err == nil || !strings.Contains(err.Error(), dir+" holds checkpoints of an earlier run (round 3)") {
		t.Errorf("directory with a checkpoint: %v", err)
	}
	if err := (Checkpoint{Dir: dir, Every: 3, Resume: dir}).CheckDirs(); err != nil {
		t.Errorf("resuming from it: %v", err)
	}
}
