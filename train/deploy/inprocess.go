package deploy

import (
	"context"
	"fmt"
	"time"

	"colo/balance"
	"colo/cluster"
	"colo/ps/node"
	"colo/ps/route"
	"colo/ps/server"
	"colo/ps/update"
	"colo/ps/worker"
	"colo/train"
)

// InProcess deploys training jobs (train.Deployer) on a cluster in this
// process: a scheduler and the job's machines, joined by Network, every
// machine's worker running train.Work on its part, and the evaluator the
// job asks for (train.Watch). The links of the
// job's Config shape the network as Config.LinkBandwidth and
// Config.Bandwidth say.
//
//	res, err := train.Run(ctx, job, app, p, deploy.InProcess{})
type InProcess struct {
	// Network is the nodes' network, as Config.Network: nil for an
	// in-memory network, node.TCP{} for TCP on loopback.
	Network node.Network
	// Watch, when set, is called with Cluster.Stats once the cluster has
	// started, and again before it closes with a function that returns
	// the nodes' final counters (for metrics.Job.Watch).
	Watch func(stats func() []node.Stats)
}

// Deploy runs d on a new cluster and closes it.
func (in InProcess) Deploy(ctx context.Context, d *train.Deployment) (*train.Outcome, error) {
	job, app, p := d.Job.Config, d.App, d.Placement
	k := job.Machines
	rule, err := update.New(job.Rule)
	if err != nil {
		return nil, err
	}
	table, err := route.FromPlacement(p.Param, job.NumServers())
	if err != nil {
		return nil, err
	}
	parts := make([]train.Part, k)
	for i := range k {
		parts[i] = d.Part(i)
	}
	cc := cluster.DefaultConfig()
	cc.Machines, cc.Network = k, in.Network
	if !job.Colocated() {
		cc.Machines, cc.Servers, cc.Workers = 0, job.Servers, k
	}
	cc.Table, cc.NumKeys, cc.Width, cc.Clock, cc.Rule = table, uint64(app.NumKeys()), app.Width(), job.Clock, rule
	cc.LinkBandwidth, cc.Bandwidth = job.LinkBandwidth, job.Bandwidth
	cc.RandomBandwidth, cc.BandwidthChange, cc.Seed = job.RandomBandwidth, job.BandwidthChange, job.Seed
	cc.Heartbeat, cc.Timeout, cc.Replicas = train.Heartbeat, train.Timeout, job.Replicas
	cc.Logf = job.Logf
	cc.Evaluators = d.Evaluators()
	t0 := time.Now()
	c, err := cluster.Start(ctx, cc)
	if err != nil {
		return nil, fmt.Errorf("starting the cluster: %w", err)
	}
	defer c.Close()
	if in.Watch != nil {
		in.Watch(c.Stats)
		defer func() {
			final := c.Stats()
			in.Watch(func() []node.Stats { return final })
		}()
	}
	out := &train.Outcome{StartSeconds: time.Since(t0).Seconds()}

	var watched chan error
	if cc.Evaluators > 0 {
		watched = make(chan error, 1)
		go func() {
			n := c.Evaluator(0)
			rep, err := train.Watch(ctx, n, d.App.(train.Scorer), job.EvalEvery, d.StepsPerEpoch(), job.Checked)
			out.Evaluator = rep
			n.Finish(err)
			watched <- err
		}()
	}
	if d.Truth == nil && c.Rates() != nil {
		d.Truth = c.Rates
	}
	scheds := make([]train.Schedule, k)
	var bal0 *balance.Balancer
	for i := range k {
		var b *balance.Balancer
		var srv *server.Server
		if job.Colocated() {
			srv = c.Server(i)
		}
		if scheds[i], b, err = d.WorkerSchedule(i, srv); err != nil {
			return nil, err
		}
		if i == 0 {
			bal0 = b
		}
	}
	works := make([]train.WorkerResult, k)
	counted := train.AfterTraining(app, func(rank int) {
		if rank == 0 {
			out.Stats = c.Stats()
		}
	})
	err = c.Run(ctx, func(ctx context.Context, w *worker.Worker) error {
		var err error
		works[w.Rank()], err = train.Work(ctx, w, counted, parts[w.Rank()], scheds[w.Rank()], job.Progress)
		return err
	})
	if watched != nil {
		if werr := <-watched; err == nil && werr != nil {
			err = fmt.Errorf("evaluator: %w", werr)
		}
	}
	if err != nil {
		return nil, err
	}
	out.Work = works[0]
	if bal0 != nil {
		rep := bal0.Report()
		out.Balance = &rep
	}
	out.Seconds = out.StartSeconds + out.Work.TrainSeconds + out.Work.EvalSeconds
	if n := len(out.Work.Passes); n > 0 {
		passes := out.Work.Passes[n-1].Pass
		for i, part := range parts {
			out.InterValues += train.PartInterValues(part, d.Local(i), p, app.Width(), passes)
		}
	}
	return out, nil
}
