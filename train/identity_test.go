package train

import (
	"reflect"
	"strings"
	"testing"
)

// TestIdentityRoundTrip: an identity reads back as written, options and
// the data's checksum included, and the files apart from the model are
// not in it.
func TestIdentityRoundTrip(t *testing.T) {
	job := DefaultJob()
	job.App, job.Data.Train, job.Data.Checksum = "mlp", "x.csv", "crc32c:0badf00d"
	if err := job.SetOptions(map[string]any{"features": "log1p-l2", "hidden": []int{8, 4}, "labels": "y.idx", "label_col": "class"}); err != nil {
		t.Fatal(err)
	}
	id := JobIdentity(job)
	got, ok := ParseIdentity(id.String())
	if !ok || !reflect.DeepEqual(got, id) {
		t.Fatalf("read back %v (%v), wrote %v", got, ok, id)
	}
	want := map[string]string{"--lr": "0.5", "--features": "log1p-l2", "--hidden": "[8,4]", "data": "crc32c:0badf00d", "--machines": "4"}
	for _, f := range got {
		if v, ok := want[f.Name]; ok && v != f.Value {
			t.Errorf("%s = %q, want %q", f.Name, f.Value, v)
		}
		delete(want, f.Name)
		if f.Name == "--labels" {
			t.Errorf("the labels file is in the identity: %v", f)
		}
	}
	if len(want) > 0 {
		t.Errorf("missing fields %v in %v", want, got)
	}
}

// TestCompareIdentity walks the refusals and the override by hand.
func TestCompareIdentity(t *testing.T) {
	job := DefaultJob()
	job.App = "lr"
	saved := JobIdentity(job).String() + "\nkeys 10"
	for _, tc := range []struct {
		name     string
		change   func(j *Job)
		override bool
		err      string
		warning  string
	}{
		{"same", func(*Job) {}, false, "", ""},
		{"rate", func(j *Job) { j.Config.Rule.LR = 0.1 }, false, "M is a checkpoint of another job: --lr: checkpoint 0.5, now 0.1 (--resume-override resumes from it with the new values)", ""},
		{"rate overridden", func(j *Job) { j.Config.Rule.LR = 0.1 }, true, "", "M: resuming with changed settings: --lr: checkpoint 0.5, now 0.1"},
		{"two", func(j *Job) { j.Config.Rule.L2, j.Config.Seed = 0.5, 3 }, false, "--l2: checkpoint 0, now 0.5; --seed: checkpoint 1, now 3 (", ""},
		{"async step", func(j *Job) { j.Config.Rule.AsyncStep = "workers" }, false, "--async-step: checkpoint none, now workers (", ""},
		{"machines overridden", func(j *Job) { j.Config.Machines, j.Config.Rule.LR = 2, 1 }, true, "M is a checkpoint of another job: --machines: checkpoint 4, now 2; --lr: checkpoint 0.5, now 1", ""},
	} {
		j := job
		tc.change(&j)
		warn, err := CompareIdentity("M", saved, JobIdentity(j), tc.override)
		if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) || warn != tc.warning {
			t.Errorf("%s: %q, %v; want %q, %q", tc.name, warn, err, tc.warning, tc.err)
		}
	}
	old := "lr placement 1234abcd width 1 keys 10"
	if _, err := CompareIdentity("M", old, JobIdentity(job), false); err == nil || !strings.Contains(err.Error(), "earlier version") {
		t.Errorf("an identity of an earlier version: %v", err)
	}
	if warn, err := CompareIdentity("M", old, JobIdentity(job), true); err != nil || !strings.Contains(warn, "without comparing") {
		t.Errorf("an identity of an earlier version, overridden: %q, %v", warn, err)
	}
}
