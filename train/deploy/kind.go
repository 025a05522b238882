// Package deploy runs training jobs (train.Job) on clusters: InProcess
// deploys one on a cluster in this process (package cluster), Processes
// on a cluster of processes of the colo binary, on loopback or in
// network namespaces (launch.Cluster), and Kind is the training
// kind every process of such a cluster runs (colo node --job-file), the
// same job whoever starts the processes: colo train --processes, mpirun,
// srun, dmlc-submit or Kubernetes.
//
// The job travels as a launch.Envelope of kind "train" whose job is a Job:
// the train.Job, with the routing table of its placement and the
// application's width, so that the scheduler loads no data. A machine
// (or a worker, a server apart, an evaluator) opens the job's application
// and its placement (Kind.Place) and runs its share: train.RunMachine,
// train.RunEvaluator, or a server's update rule; every one writes a
// train.MachineReport in its launch.Report.
//
//	res, err := train.Run(ctx, job, a, p, &deploy.Processes{Graph: g})
package deploy

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"colo/launch"
	"colo/placement"
	"colo/ps/node"
	"colo/ps/proto"
	"colo/ps/route"
	"colo/ps/sched"
	"colo/ps/update"
	"colo/train"
)

// Job is the job of the training kind: a train.Job (its fields at the top
// level of the JSON) with what its scheduler needs, so that it loads no
// data: the routing table of the job's placement and the application's
// width. Without Route (a job written by hand) the scheduler opens and
// places the job itself (app.Route), the same for the same seed.
type Job struct {
	train.Job
	// Route is the routing table of the placement (route.Table's
	// MarshalBinary, base64 in the JSON).
	Route []byte `json:"route,omitempty"`
	// Width is the application's values per key, with Route.
	Width int `json:"width,omitempty"`
}

// Name is the kind's name, "train".
const Name = "train"

// NewJob returns the job of j placed by p for application a: with its
// routing table and width.
func NewJob(j train.Job, a train.App, p *placement.Placement) (Job, error) {
	table, err := route.FromPlacement(p.Param, j.Config.NumServers())
	if err != nil {
		return Job{}, fmt.Errorf("placement %s: %w", j.Placement, err)
	}
	b, err := table.MarshalBinary()
	if err != nil {
		return Job{}, err
	}
	return Job{Job: j, Route: b, Width: a.Width()}, nil
}

// Envelope returns j in its envelope.
func (j Job) Envelope() (launch.Envelope, error) { return launch.NewEnvelope(Name, j) }

// DecodeJob reads the job of an envelope: the train.Job's defaults
// (train.DefaultJob) for what it leaves out, unknown fields refused,
// then validated.
func DecodeJob(raw json.RawMessage) (Job, error) {
	j := Job{Job: train.DefaultJob()}
	if err := launch.DecodeJob(Name, raw, &j); err != nil {
		return j, err
	}
	if err := j.Job.Validate(); err != nil {
		return j, fmt.Errorf("job of kind %s: %w", Name, err)
	}
	if (len(j.Route) == 0) != (j.Width == 0) {
		return j, fmt.Errorf("job of kind %s: route and width go together", Name)
	}
	return j, nil
}

// Kind is the training kind. Place and Route open a job's application
// and placement (app.OpenPlaced and app.Route, which the caller passes in:
// this package knows no application). Its scheduler refuses a member
// whose job is not its own, all of it but the fields each host may set
// for itself (Job.digest).
type Kind struct {
	// Place opens the job's application and places it, as every process
	// does the same for the same job.
	Place func(job train.Job) (train.App, *placement.Placement, error)
	// Route returns the routing table of the job's placement and the
	// application's width, for a job without its Route.
	Route func(job train.Job) (*route.Table, int, error)
	// Observe, when set, is given the job's configuration before a member
	// runs it, to watch its progress (Config.Progress, Config.Checked).
	Observe func(c *train.Config)
}

// digest is the launch.Digest of what every process of j's cluster must
// agree on, as decoded (defaults filled, so that two files that spell
// one job differently agree): the application and its options, the
// training configuration, how the data is read and its checksum, the
// routing table and width: everything but the fields each host may set
// for itself (train.LocalFields: the paths of the data, its cache and
// the checkpoints, and the host's memory budget). The placement is left
// out too when the job has its routing table, by which the scheduler
// routes; without one (a job written by hand) every process places the
// job itself, and the placement must agree.
func (j Job) digest() (launch.Digest, error) {
	local := train.LocalFields()
	if len(j.Route) > 0 {
		local = append(local, "placement")
	}
	return launch.JobDigest(Name, j, local...)
}

// Name returns "train".
func (Kind) Name() string { return Name }

// Scheduler sets the numbers of servers and workers, the routing table,
// key space and width, and the consistency model of the job.
func (k Kind) Scheduler(raw json.RawMessage, cfg *sched.Config) error {
	j, err := DecodeJob(raw)
	if err != nil {
		return err
	}
	if len(j.Route) > 0 {
		var t route.Table
		if err := t.UnmarshalBinary(j.Route); err != nil {
			return fmt.Errorf("job of kind %s: route: %w", Name, err)
		}
		cfg.Table, cfg.Width = &t, j.Width
	} else if k.Route == nil {
		return fmt.Errorf("job of kind %s: no route: the scheduler needs the job's routing table", Name)
	} else if cfg.Table, cfg.Width, err = k.Route(j.Job); err != nil {
		return err
	}
	cfg.NumKeys, cfg.Clock = cfg.Table.NumKeys(), j.Config.Clock
	cfg.NumServers, cfg.NumWorkers, cfg.Replicas = j.Config.NumServers(), j.Config.Machines, j.Config.Replicas
	d, err := j.digest() // every member must run this job
	if err != nil {
		return err
	}
	cfg.JobDigest, cfg.JobFields = d.Sum, d.Fields
	return nil
}

// Open opens the member at: a machine, or a worker or server apart
// (config.servers), or the evaluator. A machine, a worker and the
// evaluator load the data and the placement; a server only its rule. A
// replacement machine or worker (at.Recover) reads only its share of
// the training data from the job's data cache (train.Data.Share).
func (k Kind) Open(_ context.Context, raw json.RawMessage, at launch.Position) (*launch.Member, error) {
	j, err := DecodeJob(raw)
	if err != nil {
		return nil, err
	}
	job := j.Job
	role, rank := at.Role, at.Rank
	switch {
	case rank < 0 && role != proto.RoleServer && role != proto.RoleEvaluator:
		return nil, fmt.Errorf("a training job needs the %s's rank (--rank): its machine in the placement", role)
	case role == proto.RoleMachine && !job.Config.Colocated():
		return nil, fmt.Errorf("the job runs %d servers apart from its workers: --role server or worker, not machine", job.Config.Servers)
	case (role == proto.RoleServer || role == proto.RoleWorker) && job.Config.Colocated():
		return nil, fmt.Errorf("the job runs on machines (config.servers is 0): --role machine, not %s", role)
	case at.Workers > 0 && at.Workers != job.Config.Machines:
		return nil, fmt.Errorf("--num-workers %d: the job has %d machines", at.Workers, job.Config.Machines)
	case at.Servers > 0 && at.Servers != job.Config.NumServers():
		return nil, fmt.Errorf("--num-servers %d: the job has %d servers", at.Servers, job.Config.NumServers())
	}
	d, err := j.digest()
	if err != nil {
		return nil, err
	}
	m := &launch.Member{Rates: job.Config.Rates(), JobDigest: d.Sum, JobFields: d.Fields}
	if m.Rule, err = update.New(job.Config.Rule); err != nil {
		return nil, fmt.Errorf("job of kind %s: config.rule: %w", Name, err)
	}
	if role == proto.RoleServer { // its counters, for the traffic and the staleness
		m.Report = func(sum *launch.NodeSummary) any { return &train.MachineReport{Rank: rank, Stats: sum.Stats} }
		return m, nil
	}
	if role == proto.RoleEvaluator {
		rank = 0 // its placement is any machine's: it reads none
	}
	if at.Recover {
		ck := &job.Config.Checkpoint
		if ck.Dir == "" {
			return nil, fmt.Errorf("a replacement (--recover) needs a job that writes checkpoints (config.checkpoint.dir): it resumes from the last one")
		}
		ck.Resume = ck.Dir
		if role != proto.RoleEvaluator && job.Data.Cache != "" {
			r := rank // its share of the data, not all of it
			job.Data.Share = &r
		}
	}
	if k.Place == nil {
		return nil, fmt.Errorf("job of kind %s: this process cannot open applications", Name)
	}
	a, p, err := k.Place(job)
	if err != nil {
		return nil, err
	}
	if rank >= p.K {
		return nil, fmt.Errorf("--rank %d: the placement %s has %d machines", rank, job.Placement, p.K)
	}
	if k.Observe != nil {
		k.Observe(&job.Config)
	}
	m.Run = func(ctx context.Context, n *node.Node, sum *launch.NodeSummary) (any, error) {
		var r *train.MachineReport
		var err error
		if role == proto.RoleEvaluator {
			r, err = train.RunEvaluator(ctx, n, job, a, p)
		} else {
			r, err = train.RunMachine(ctx, n, job, a, p, rank)
		}
		if r == nil {
			return nil, err
		}
		if b, merr := json.Marshal(&r.Work); merr == nil {
			sum.Train = b
		}
		if t := r.Work; len(t.Passes) > 0 {
			last := t.Passes[len(t.Passes)-1]
			sum.Lines = append(sum.Lines, fmt.Sprintf("trained %d passes (%d rounds) in %.3f s, loss %.4f%s", last.Pass, last.Rounds, t.TrainSeconds, last.TrainLoss, t.Eval.Words()))
		}
		return r, err
	}
	return m, nil
}

// RunHint tells the operator of a job written to path (colo train
// --write-job) which processes run it: a scheduler and the job's
// machines, or its servers and workers apart, each with its ranks, and
// the evaluator of an application a that scores when the job validates.
func (j Job) RunHint(path string, a train.App) string {
	c := j.Config
	ranks := func(n int, role string) string {
		if n == 1 {
			return fmt.Sprintf("1 %s (--role %s --rank 0)", role, role)
		}
		return fmt.Sprintf("%d %ss (--role %s --rank 0 to %d)", n, role, role, n-1)
	}
	procs := []string{"a scheduler (--role scheduler)", ranks(c.Machines, "machine")}
	if !c.Colocated() {
		procs = []string{procs[0], ranks(c.NumServers(), "server"), ranks(c.Machines, "worker")}
	}
	d := train.Deployment{Job: j.Job, App: a}
	if d.Evaluators() > 0 {
		procs = append(procs, "1 evaluator (--role evaluator)")
	}
	last := len(procs) - 1
	return fmt.Sprintf("run it with colo node --job-file %s: %s and %s (docs/deploy.md)", path, strings.Join(procs[:last], ", "), procs[last])
}
