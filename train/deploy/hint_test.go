package deploy

import (
	"testing"

	"colo/train"
)

// scorer is an application that scores models, for the evaluator of a
// job that validates; RunHint asks nothing else of it.
type scorer struct{ train.App }

func (scorer) ScoreModel([]float32) train.Eval { return train.Eval{} }

// TestRunHint checks, by hand, the processes colo train --write-job tells
// the operator to start: machines for a job of machines (it said "2
// servers and 2 workers", and a server or worker was then refused for a
// job of machines), servers and workers apart, and the evaluator of a
// job that validates.
func TestRunHint(t *testing.T) {
	job := func(machines, servers int, every train.Every) Job {
		j := Job{Job: train.DefaultJob()}
		j.Config.Machines, j.Config.Servers, j.Config.EvalEvery = machines, servers, every
		return j
	}
	for _, tc := range []struct {
		job  Job
		app  train.App
		want string
	}{
		{job(2, 0, train.Every{}), nil,
			"run it with colo node --job-file j.json: a scheduler (--role scheduler) and 2 machines (--role machine --rank 0 to 1) (docs/deploy.md)"},
		{job(1, 0, train.Every{}), nil,
			"run it with colo node --job-file j.json: a scheduler (--role scheduler) and 1 machine (--role machine --rank 0) (docs/deploy.md)"},
		{job(2, 3, train.Every{}), nil,
			"run it with colo node --job-file j.json: a scheduler (--role scheduler), 3 servers (--role server --rank 0 to 2) and 2 workers (--role worker --rank 0 to 1) (docs/deploy.md)"},
		{job(4, 0, train.Every{Epochs: 1}), scorer{},
			"run it with colo node --job-file j.json: a scheduler (--role scheduler), 4 machines (--role machine --rank 0 to 3) and 1 evaluator (--role evaluator) (docs/deploy.md)"},
		{job(4, 0, train.Every{}), scorer{},
			"run it with colo node --job-file j.json: a scheduler (--role scheduler) and 4 machines (--role machine --rank 0 to 3) (docs/deploy.md)"},
	} {
		if got := tc.job.RunHint("j.json", tc.app); got != tc.want {
			t.Errorf("%d machines, %d servers, eval %+v:\n got %s\nwant %s", tc.job.Config.Machines, tc.job.Config.Servers, tc.job.Config.EvalEvery, got, tc.want)
		}
	}
}
