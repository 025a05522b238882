package metrics

import (
	"context"
	"io"

	"colo/ps/node"
	"colo/train"
)

// Job serves the metrics of a command that runs a training job in this
// process (colo train): the nodes' counters, read live through Watch, the
// training gauges, fed by Pass, and the runtime's. All its methods do
// nothing on a nil *Job, so a command without --metrics passes nil.
//
//	job, err := metrics.StartJob(flags, os.Stderr) // nil without --metrics
//	cfg.Progress = job.Pass
//	deployer := deploy.InProcess{Watch: job.Watch}
//	… train …
//	job.End(ctx) // --metrics-file, --linger
type Job struct {
	nodes    *NodeCollector
	training *Training
	end      func(context.Context) error
}

// StartJob serves as f says; it returns nil, and serves nothing, when f
// asks for nothing (neither --metrics nor --metrics-file).
func StartJob(f Flags, log io.Writer) (*Job, error) {
	if !f.Enabled() {
		return nil, nil
	}
	reg := NewRegistry()
	j := &Job{nodes: NewNodesCollector(nil), training: NewTraining(reg)}
	reg.MustRegister(j.nodes)
	var err error
	if j.end, err = f.Start(reg, log); err != nil {
		return nil, err
	}
	return j, nil
}

// Pass records a training pass (a train.Progress).
func (j *Job) Pass(p train.Pass) {
	if j != nil {
		j.training.Pass(p)
	}
}

// Check records a score of the evaluator (train.Config.Checked).
func (j *Job) Check(c train.Check) {
	if j != nil {
		j.training.Check(c)
	}
}

// Watch makes stats the source of the nodes' counters (as
// deploy.InProcess.Watch calls it).
func (j *Job) Watch(stats func() []node.Stats) {
	if j != nil {
		j.nodes.Set(stats)
	}
}

// End writes --metrics-file, keeps serving for --linger (unless ctx ends)
// and stops.
func (j *Job) End(ctx context.Context) error {
	if j == nil {
		return nil
	}
	return j.end(ctx)
}
