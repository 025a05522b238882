package distparsa

import (
	"context"
	"fmt"
	"sync"
	"time"

	"colo/cluster"
	"colo/graph"
	"colo/partition"
	"colo/placement"
	"colo/ps/node"
)

// Report describes a distributed run.
type Report struct {
	Workers     int    `json:"workers"`
	Tau         int    `json:"tau"`
	Consistency string `json:"consistency"`
	// Seconds is the time from the cluster's start to the placement on
	// worker 0, StartSeconds the part of it the cluster took to form.
	Seconds      float64 `json:"seconds"`
	StartSeconds float64 `json:"start_seconds"`
	// PerWorker is each worker's share.
	PerWorker []Result `json:"per_worker"`
	// Parsa is the run's statistics.
	Parsa *partition.ParsaStats `json:"parsa"`
}

// InProcess runs Parsa on g with opt across cfg.Workers machines (a
// server and a worker each) of a parameter server in this process
// (package cluster), over network (nil: the in-memory network), and
// returns the placement. It fails, naming the node, when a node fails.
func InProcess(ctx context.Context, g *graph.Graph, opt partition.Options, cfg Config, network node.Network) (*placement.Placement, *Report, error) {
	return inProcess(ctx, g, opt, cfg, network, nil)
}

// inProcess is InProcess with a hook after each block: given the cluster,
// it is called as hook(c)(rank, block).
func inProcess(ctx context.Context, g *graph.Graph, opt partition.Options, cfg Config, network node.Network,
	hook func(c *cluster.Cluster) func(rank, block int)) (*placement.Placement, *Report, error) {
	if err := cfg.Validate(); err != nil {
		return nil, nil, err
	}
	opt = cfg.PlanOptions(g, opt)
	pl, err := partition.PlanParsa(g, opt)
	if err != nil {
		return nil, nil, err
	}
	l := cfg.Layout(g, opt.K)
	cc := cluster.DefaultConfig()
	cc.Machines, cc.Network = cfg.Workers, network
	cc.NumKeys, cc.Width, cc.Clock = l.NumKeys(), l.Width(), cfg.Clock()
	t0 := time.Now()
	c, err := cluster.Start(ctx, cc)
	if err != nil {
		return nil, nil, fmt.Errorf("distparsa: starting the cluster: %w", err)
	}
	defer c.Close()
	rep := &Report{Workers: cfg.Workers, Tau: cfg.Tau, Consistency: cfg.Clock().Mode.String(),
		StartSeconds: time.Since(t0).Seconds(), PerWorker: make([]Result, cfg.Workers)}
	var after func(rank, block int)
	if hook != nil {
		after = hook(c)
	}
	var p *placement.Placement
	var wg sync.WaitGroup
	for r := range cfg.Workers {
		wg.Go(func() {
			n := c.WorkerNode(r)
			res, err := work(ctx, n.Worker(), graphSource{g, pl}, pl, cfg, after)
			if err == nil {
				rep.PerWorker[r] = *res
				if res.Placement != nil {
					p, rep.Parsa = res.Placement, res.Stats
				}
			}
			n.Finish(err)
		})
	}
	wg.Wait()
	// The scheduler's verdict: the first failure, naming the node. (Not
	// Cluster.Wait: a node that died never reports its own end.)
	if err := c.Scheduler().Wait(); err != nil {
		return nil, nil, fmt.Errorf("distparsa: %w", err)
	}
	if p == nil {
		return nil, nil, fmt.Errorf("distparsa: worker 0 ended without the placement")
	}
	rep.Seconds = time.Since(t0).Seconds()
	return p, rep, nil
}
