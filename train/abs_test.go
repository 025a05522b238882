package train_test

import (
	"path/filepath"
	"testing"

	"colo/train"
)

func TestJobAbs(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	j := train.DefaultJob()
	j.Data.Train, j.Data.Test, j.Config.Checkpoint.Dir, j.Placement = "a.libsvm", "", "ckpt", "."
	got, err := j.Abs()
	if err != nil {
		t.Fatal(err)
	}
	if got.Data.Train != filepath.Join(dir, "a.libsvm") || got.Data.Test != "" || got.Config.Checkpoint.Dir != filepath.Join(dir, "ckpt") ||
		got.Config.Checkpoint.Resume != "" || got.Placement != dir {
		t.Errorf("Abs() = train %q, test %q, checkpoint %q, resume %q, placement %q", got.Data.Train, got.Data.Test,
			got.Config.Checkpoint.Dir, got.Config.Checkpoint.Resume, got.Placement)
	}
	if j.Data.Train != "a.libsvm" {
		t.Errorf("Abs changed the job it was called on")
	}
	j.Placement = "parsa" // a partitioner, not a directory
	if got, _ := j.Abs(); got.Placement != "parsa" {
		t.Errorf("Abs() placement %q, want parsa", got.Placement)
	}
}
