package train

import (
	"context"
	"errors"
	"fmt"

	"colo/balance"
	"colo/placement"
	"colo/ps/node"
)

// MachineReport is what one machine of a cluster of processes reports
// of a training job (colo node --job train writes it to --result).
type MachineReport struct {
	Rank            int          `json:"rank"`
	StartedUnixNano int64        `json:"started_unix_ns"`
	Work            WorkerResult `json:"work"`
	// InterValues is the machine's share of Result.InterValues.
	InterValues int64 `json:"inter_values"`
	// Stats are the node's counters at the end of training, before the
	// evaluation.
	Stats node.Stats `json:"stats"`
	// Evaluator is an evaluator's report (RunEvaluator); Work is then
	// empty.
	Evaluator *EvaluatorReport `json:"evaluator,omitempty"`
	// Balance is machine 0's load balancer's report.
	Balance *balance.Report `json:"balance,omitempty"`
}

// RunMachine trains machine rank's share of job on the running node n, a
// machine (server and worker) or a worker of a cluster whose scheduler
// routes the keys by p's parameters: it checks that the cluster is the job's, runs
// Work on the node's worker and reports. Every machine of the cluster
// runs it with the same job; n.Finish is the caller's.
func RunMachine(ctx context.Context, n *node.Node, job Job, app App, p *placement.Placement, rank int) (*MachineReport, error) {
	d, err := NewDeployment(job, app, p)
	if err != nil {
		return nil, err
	}
	w := n.Worker()
	a := n.Assignment()
	switch {
	case w == nil:
		return nil, fmt.Errorf("train: node %d has no worker: a training job runs on workers", rank)
	case a.NumWorkers != p.K || a.NumServers != job.Config.NumServers():
		return nil, fmt.Errorf("train: the cluster has %d servers and %d workers, the job %d and %d", a.NumServers, a.NumWorkers, job.Config.NumServers(), p.K)
	case w.Rank() != rank:
		return nil, fmt.Errorf("train: the scheduler assigned rank %d, the machine's rank is %d", w.Rank(), rank)
	case w.Width() != app.Width():
		return nil, fmt.Errorf("train: the scheduler's width is %d, %s needs %d", w.Width(), app.Name(), app.Width())
	}
	part := d.Part(rank)
	// The node's counters when training ends: the traffic of the training
	// rounds alone, not the evaluation's.
	var trained node.Stats
	counted := AfterTraining(app, func(int) { trained = n.Stats() })
	s, bal, err := d.WorkerSchedule(rank, n.Server())
	if err != nil {
		return nil, err
	}
	res, err := Work(ctx, w, counted, part, s, job.Config.Progress)
	if err != nil {
		return nil, fmt.Errorf("train: machine %d: %w", rank, err)
	}
	r := &MachineReport{Rank: rank, Work: res, Stats: trained}
	if bal != nil && rank == 0 {
		rep := bal.Report()
		r.Balance = &rep
	}
	if k := len(res.Passes); k > 0 {
		r.InterValues = PartInterValues(part, d.Local(rank), p, app.Width(), res.Passes[k-1].Pass)
	}
	return r, nil
}

// RunEvaluator is RunMachine for the evaluator of job on the running
// node n (proto.RoleEvaluator): it scores the model while the workers
// train, as Config.EvalEvery says, and the final model once they are
// done (Watch). n.Finish is the caller's.
func RunEvaluator(ctx context.Context, n *node.Node, job Job, app App, p *placement.Placement) (*MachineReport, error) {
	d, err := NewDeployment(job, app, p)
	if err != nil {
		return nil, err
	}
	s, ok := app.(Scorer)
	switch {
	case !ok:
		return nil, fmt.Errorf("train: %s has no evaluator: it cannot score a model while it trains", app.Name())
	case d.Evaluators() == 0:
		return nil, errors.New("train: the job has no evaluator: config.eval_every is 0")
	}
	rep, err := Watch(ctx, n, s, job.Config.EvalEvery, d.StepsPerEpoch(), job.Config.Checked)
	if err != nil {
		return nil, fmt.Errorf("train: evaluator: %w", err)
	}
	return &MachineReport{Rank: -1, Stats: n.Stats(), Evaluator: rep}, nil
}
