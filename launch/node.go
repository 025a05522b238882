package launch

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

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
	// Observe, when set, watches the node's counters from before it
	// starts (stats returns none until it joined, and their final values
	// after the job) and returns the function that ends the watch once
	// the job has ended: colo node serves them as Prometheus metrics.
	Observe func(stats func() []node.Stats) (end func(context.Context) error, err error)
	// Member is what the node runs (Kind.Open): its worker's job, if it
	// has a worker, and its report; nil runs nothing (the worker only
	// joins). Its Rule and Rates are the caller's to put in Config.
	Member *Member
}

// RunNode starts nd, runs its member's job on the worker, reports the
// job's end to the scheduler and waits for the cluster's end. It returns
// the node's summary, the member's report (Member.Run's or
// Member.Report's; nil for none) and the job's outcome: nil when every
// node's job succeeded, otherwise the error that ended the job (this
// node's, or the scheduler's verdict naming a failed node).
func RunNode(ctx context.Context, nd Node) (*NodeSummary, any, error) {
	t0 := time.Now()
	// The counters are watched from the start: none while the node joins,
	// the node's once it has.
	var (
		mu     sync.Mutex
		source func() []node.Stats
	)
	set := func(f func() []node.Stats) {
		mu.Lock()
		source = f
		mu.Unlock()
	}
	stats := func() []node.Stats {
		mu.Lock()
		f := source
		mu.Unlock()
		if f == nil {
			return nil
		}
		return f()
	}
	endMetrics := func(context.Context) error { return nil }
	if nd.Observe != nil {
		var err error
		if endMetrics, err = nd.Observe(stats); err != nil {
			return nil, nil, err
		}
	}
	if nd.Member != nil && nd.Config.JobDigest == "" {
		nd.Config.JobDigest, nd.Config.JobFields = nd.Member.JobDigest, nd.Member.JobFields
	}
	n, err := node.Start(ctx, nd.Config)
	if err != nil {
		stopped, stop := context.WithCancel(ctx)
		stop()
		endMetrics(stopped) // no linger: there was no job
		return nil, nil, err
	}
	defer n.Close()
	startedAt := time.Now()
	set(func() []node.Stats { return []node.Stats{n.Stats()} })
	sum := &NodeSummary{Role: nd.Config.Role.String(), StartSeconds: startedAt.Sub(t0).Seconds(), StartedUnixNano: startedAt.UnixNano()}
	var report any
	if n.Worker() != nil {
		var jobErr error
		if nd.Member != nil && nd.Member.Run != nil {
			report, jobErr = nd.Member.Run(ctx, n, sum)
		}
		n.Finish(jobErr)
	}
	select {
	case <-n.Done():
	case <-ctx.Done():
		endMetrics(ctx)
		return sum, nil, errors.New("interrupted")
	}
	jobErr := n.Wait()
	sum.Stats = n.Stats()
	set(func() []node.Stats { return []node.Stats{sum.Stats} })
	if err := endMetrics(ctx); err != nil && jobErr == nil {
		jobErr = err
	}
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
	if jobErr == nil && nd.Member != nil && nd.Member.After != nil {
		jobErr = nd.Member.After()
	}
	if report == nil && nd.Member != nil && nd.Member.Report != nil {
		report = nd.Member.Report(sum)
	}
	return sum, report, jobErr
}

// Scheduler is the scheduler of a cluster of processes as colo node runs
// it.
type Scheduler struct {
	// Config is the scheduler's (sched.Config).
	Config sched.Config
	// Addr is the host:port to listen at (port 0: any), Token the
	// cluster's token.
	Addr, Token string
	// TLS, when not nil, runs the scheduler's links over mutual TLS
	// (tcp.Config.TLS, TLSFlags.Load).
	TLS *tls.Config
	// Insecure lets the scheduler run without a Token: an open cluster
	// that any process reaching Addr may join, or disturb. Without it an
	// empty Token is refused (ErrNoToken); with it the scheduler says on
	// Log that the cluster is open.
	Insecure bool
	// Observe, when set, watches the counters of the scheduler's links
	// once it listens and returns the function that ends the watch after
	// the job; see Node.Observe.
	Observe func(stats func() transport.Stats) (end func(context.Context) error, err error)
	// Watch, when set, is called with the counters of the scheduler's
	// links once it listens, and again with their final values before it
	// returns (for dashboard.Board.WatchEndpoint).
	Watch func(stats func() transport.Stats)
	// Out receives "scheduler listening on ADDR", the line
	// Supervisor.StartScheduler reads, then "job started: S servers, W
	// workers" once every node is ready (before it, the supervisor ends
	// the cluster at once when a process fails), "job paused: epoch E:
	// lost NODES: WHY (NODE, node ID at ADDR)" each time the job pauses for a failed process
	// (the supervisor kills that process if it still runs, a hung one,
	// and starts its replacement), "job aborted: lost NODE: WHY (NODE,
	// node ID at ADDR)" when the job ends for a node's failure (the
	// supervisor names that node's process first), "backup made: server
	// B holds a copy of server S's ranges" when a new backup made after
	// a failover is in place (the supervisor counts it as the scheduler
	// does, Supervisor.BackedUp), with a standby "scheduler alive:
	// timeout T" every eighth of its timeout T (the supervisor kills a
	// scheduler that printed nothing for 2T/3, hung or stopped, and
	// starts the one that takes its job over: Supervisor.KillHung) and
	// "job finished: S servers, W workers" as the job ends well, before
	// the nodes are told to shut down (a node that dies after it is not
	// replaced); Log a line for every refusal and failure. Neither may
	// be nil.
	Out, Log io.Writer
	// Standby sets up a scheduler whose job another takes over if it
	// dies, or the one that takes it over (StandbyFlags).
	Standby StandbyFlags
}

// pauseLine is the line the scheduler prints when the job pauses for a
// failed process: "job paused: epoch E: lost server 1 and worker 1: no
// heartbeat for 3.2s (server 1, node 4 at ADDR)".
func pauseLine(p sched.Pause) string {
	lost := make([]string, len(p.Lost))
	for i, id := range p.Lost {
		lost[i] = proto.Name(id)
	}
	return fmt.Sprintf("%sepoch %d: lost %s: %v (%s)", pausedPrefix, p.Epoch, strings.Join(lost, " and "), p.Cause.Err, nodeAt(p.Cause))
}

// backupLine is the line the scheduler prints when a new copy of a
// server's ranges is in place after a failover: "backup made: server 2
// holds a copy of server 0's ranges".
func backupLine(b proto.Backup) string {
	return fmt.Sprintf("%sserver %d holds a copy of server %d's ranges", backupPrefix, b.Backup, b.Server)
}

// aliveLine is the line a scheduler with a standby prints every eighth
// of its timeout: "scheduler alive: timeout 30s".
func aliveLine(timeout time.Duration) string { return alivePrefix + "timeout " + timeout.String() }

// abortLine is the line the scheduler prints when the job ends for a
// node's failure: "job aborted: lost server 1: no heartbeat for 30s
// (server 1, node 4 at ADDR)".
func abortLine(ne *proto.NodeError) string {
	return fmt.Sprintf("%slost %s: %v (%s)", abortedPrefix, proto.Name(ne.ID), ne.Err, nodeAt(ne))
}

// nodeAt names the node of ne: "server 1, node 4 at ADDR".
func nodeAt(ne *proto.NodeError) string {
	who := fmt.Sprintf("%s, node %d", proto.Name(ne.ID), ne.ID)
	if ne.Addr != "" {
		who += " at " + ne.Addr
	}
	return who
}

// ErrNoToken is RunScheduler's error for a scheduler without a cluster
// token that was not declared insecure.
var ErrNoToken = errors.New("launch: the scheduler has no cluster token, so any process that reaches its port could join the job or end it: set one (colo node --token or COLO_TOKEN; colo launch and colo train --processes make a random one), or run an open cluster with --insecure")

// RunScheduler runs s until the job ends: nil when every node's job
// succeeded, otherwise the error naming what failed.
func RunScheduler(ctx context.Context, s Scheduler) error {
	if err := s.Config.Validate(); err != nil {
		return err
	}
	if s.Token == "" && !s.Insecure {
		return ErrNoToken
	}
	if err := s.Standby.check(s.Addr); err != nil {
		return err
	}
	identity, err := s.Standby.identity()
	if err != nil {
		return err
	}
	var mu sync.Mutex
	logf := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(s.Log, format+"\n", args...)
	}
	tc := tcp.DefaultConfig()
	tc.ID, tc.Addr, tc.Token, tc.TLS = proto.SchedulerID, s.Addr, s.Token, s.TLS
	// Members prove the link keys of the keys they register with; a
	// registration's provisional id proves the token.
	tc.Identity = identity
	tc.Keyed = func(peer transport.NodeID) bool { return !proto.IsProvisional(peer) }
	var flush func()
	tc.Refused, flush = node.RefusedLogger(proto.SchedulerID, logf)
	defer flush() // after the endpoint closes: the count of refusals not yet said
	ep, err := tcp.Listen(tc)
	if err != nil {
		return err
	}
	// The supervisor reads Out from two goroutines' writes: this one's
	// and the scheduler's (OnPause).
	var outMu sync.Mutex
	printf := func(format string, args ...any) {
		outMu.Lock()
		defer outMu.Unlock()
		fmt.Fprintf(s.Out, format, args...)
	}
	cfg := s.Config
	cfg.Standby = cfg.Standby || s.Standby.Standby || s.Standby.Takeover
	cfg.Takeover = cfg.Takeover || s.Standby.Takeover
	next := cfg.OnPause
	cfg.OnPause = func(p sched.Pause) {
		printf("%s\n", pauseLine(p))
		if next != nil {
			next(p)
		}
	}
	if cfg.Standby {
		// Lines of life for the supervisor, which takes a scheduler
		// silent for two thirds of its timeout for hung
		// (Supervisor.KillHung).
		every, ticks := max(1, int(cfg.Timeout/8/cfg.Heartbeat)), 0
		nextTick := cfg.OnTick
		cfg.OnTick = func() {
			if ticks++; ticks%every == 0 {
				printf("%s\n", aliveLine(cfg.Timeout))
			}
			if nextTick != nil {
				nextTick()
			}
		}
	}
	// "job finished" is printed as the job ends, before the nodes are
	// told to shut down: a node that dies after that is not replaced
	// (Supervisor.Replace), which no scheduler would take in.
	nextEnd := cfg.OnEnd
	cfg.OnEnd = func(err error) {
		if err == nil {
			printf("job finished: %d servers, %d workers\n", s.Config.NumServers, s.Config.NumWorkers)
		}
		if nextEnd != nil {
			nextEnd(err)
		}
	}
	nextBackup := cfg.OnBackedUp
	cfg.OnBackedUp = func(b proto.Backup) {
		printf("%s\n", backupLine(b))
		if nextBackup != nil {
			nextBackup(b)
		}
	}
	sc, err := sched.Start(cfg, ep, logf)
	if err != nil {
		ep.Close()
		return err
	}
	defer sc.Close()
	if s.Token == "" {
		logf("scheduler: WARNING: no cluster token (insecure): any process that reaches %s can join this job or end it", ep.Addr())
	}
	if s.Watch != nil {
		s.Watch(ep.Stats)
		defer func() {
			final := ep.Stats()
			s.Watch(func() transport.Stats { return final })
		}()
	}
	fmt.Fprintf(s.Out, "%s%s\n", schedulerPrefix, ep.Addr())
	if f, ok := s.Out.(interface{ Sync() error }); ok {
		f.Sync()
	}
	endMetrics := func(context.Context) error { return nil }
	if s.Observe != nil {
		if endMetrics, err = s.Observe(ep.Stats); err != nil {
			return err
		}
	}
	started := sc.Started()
wait:
	for {
		select {
		case <-started:
			started = nil
			printf("%s%d servers, %d workers\n", jobStartedPrefix, s.Config.NumServers, s.Config.NumWorkers)
		case <-sc.Done():
			break wait
		case <-ctx.Done():
			endMetrics(ctx)
			return errors.New("interrupted")
		}
	}
	jobErr := sc.Wait()
	var ne *proto.NodeError
	if errors.As(jobErr, &ne) {
		// The supervisor names the node the job ended for, which is
		// not always the first process to exit (often this one).
		printf("%s\n", abortLine(ne))
	}
	if err := endMetrics(ctx); err != nil && jobErr == nil {
		return err
	}
	if jobErr != nil {
		return fmt.Errorf("job failed: %w", jobErr)
	}
	return nil
}

// NodeSummary is the JSON summary of one node's job, what colo node
// --json prints when the job ends.
type NodeSummary struct {
	Role            string   `json:"role"`
	Nodes           []string `json:"nodes"`
	Machine         int      `json:"machine"`
	StartSeconds    float64  `json:"start_s"`
	StartedUnixNano int64    `json:"started_unix_ns"`
	// Smoke is the worker's smoke job, a smoke.Result (kept as JSON:
	// package app/smoke builds on this one).
	Smoke json.RawMessage `json:"smoke,omitempty"`
	// Train is the worker's training job, a train.WorkerResult (kept as
	// JSON: package train builds on this one).
	Train json.RawMessage `json:"train,omitempty"`
	Error string          `json:"error,omitempty"`
	Stats node.Stats      `json:"stats"`
	// Lines are what the node's kind says of its job, for people
	// (WriteText).
	Lines []string `json:"-"`
}
