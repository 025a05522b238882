package launch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"colo/app/smoke"
	"colo/metrics"
	"colo/ps/node"
	"colo/ps/proto"
	"colo/ps/sched"
	"colo/transport"
	"colo/transport/tcp"
)

// Node is one node of a cluster of processes as colo node runs it: a
// server, a worker or a machine, with the job its worker runs.
type Node struct {
	// Config is the node's (node.Config): role, scheduler, network.
	Config node.Config
	// Metrics, when not empty, is the address at which the node serves
	// its counters (metrics.WriteNode at /metrics) while it runs.
	Metrics string
	// Job runs on the node's worker, if it has one, and records what it
	// did in sum; nil runs nothing (the worker only joins).
	Job func(ctx context.Context, n *node.Node, sum *NodeSummary) error
}

// RunNode starts nd, runs its job on the worker, reports the job's end
// to the scheduler and waits for the cluster's end. It returns the
// node's summary and the job's outcome: nil when every node's job
// succeeded, otherwise the error that ended the job (this node's, or the
// scheduler's verdict naming a failed node).
func RunNode(ctx context.Context, nd Node) (*NodeSummary, error) {
	t0 := time.Now()
	n, err := node.Start(ctx, nd.Config)
	if err != nil {
		return nil, err
	}
	defer n.Close()
	startedAt := time.Now()
	if nd.Metrics != "" {
		_, stop, err := metrics.Serve(nd.Metrics, func(w io.Writer) error { return metrics.WriteNode(w, n.Stats()) })
		if err != nil {
			return nil, fmt.Errorf("metrics: %w", err)
		}
		defer stop()
	}
	sum := &NodeSummary{Role: nd.Config.Role.String(), StartSeconds: startedAt.Sub(t0).Seconds(), StartedUnixNano: startedAt.UnixNano()}
	if n.Worker() != nil {
		var jobErr error
		if nd.Job != nil {
			jobErr = nd.Job(ctx, n, sum)
		}
		n.Finish(jobErr)
	}
	select {
	case <-n.Done():
	case <-ctx.Done():
		return sum, errors.New("interrupted")
	}
	jobErr := n.Wait()
	sum.Stats = n.Stats()
	sum.Machine = sum.Stats.Machine
	srv, wrk := n.IDs()
	for _, id := range []transport.NodeID{srv, wrk} {
		if id != 0 {
			sum.Nodes = append(sum.Nodes, proto.Name(id))
		}
	}
	if jobErr != nil {
		sum.Error = jobErr.Error()
	}
	return sum, jobErr
}

// SmokeJob returns the Job of a node that runs the smoke job cfg.
func SmokeJob(cfg smoke.Config) func(ctx context.Context, n *node.Node, sum *NodeSummary) error {
	return func(ctx context.Context, n *node.Node, sum *NodeSummary) error {
		r, err := cfg.Run(ctx, n.Worker(), n.Assignment().NumWorkers)
		sum.Smoke = &r
		return err
	}
}

// Scheduler is the scheduler of a cluster of processes as colo node runs
// it.
type Scheduler struct {
	// Config is the scheduler's (sched.Config).
	Config sched.Config
	// Addr is the host:port to listen at (port 0: any), Token the
	// cluster's token.
	Addr, Token string
	// Metrics, when not empty, is the address at which the scheduler
	// serves its links' counters.
	Metrics string
	// Out receives "scheduler listening on ADDR", the line
	// Supervisor.StartScheduler reads, and "job finished" at the end;
	// Log a line for every refusal and failure. Neither may be nil.
	Out, Log io.Writer
}

// RunScheduler runs s until the job ends: nil when every node's job
// succeeded, otherwise the error naming what failed.
func RunScheduler(ctx context.Context, s Scheduler) error {
	if err := s.Config.Validate(); err != nil {
		return err
	}
	var mu sync.Mutex
	logf := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(s.Log, format+"\n", args...)
	}
	tc := tcp.DefaultConfig()
	tc.ID, tc.Addr, tc.Token = proto.SchedulerID, s.Addr, s.Token
	tc.Refused = node.RefusedLogger(proto.SchedulerID, logf)
	ep, err := tcp.Listen(tc)
	if err != nil {
		return err
	}
	sc, err := sched.Start(s.Config, ep, logf)
	if err != nil {
		ep.Close()
		return err
	}
	defer sc.Close()
	fmt.Fprintf(s.Out, "%s%s\n", schedulerPrefix, ep.Addr())
	if f, ok := s.Out.(interface{ Sync() error }); ok {
		f.Sync()
	}
	if s.Metrics != "" {
		_, stop, err := metrics.Serve(s.Metrics, func(w io.Writer) error { return metrics.WriteEndpoint(w, "scheduler", ep.Stats()) })
		if err != nil {
			return fmt.Errorf("metrics: %w", err)
		}
		defer stop()
	}
	select {
	case <-sc.Done():
	case <-ctx.Done():
		return errors.New("interrupted")
	}
	if err := sc.Wait(); err != nil {
		return fmt.Errorf("job failed: %w", err)
	}
	fmt.Fprintf(s.Out, "job finished: %d servers, %d workers\n", s.Config.NumServers, s.Config.NumWorkers)
	return nil
}
