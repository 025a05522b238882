package launch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"time"

	"colo/app/smoke"
	"colo/metrics"
	"colo/ps/clock"
	"colo/ps/node"
	"colo/ps/sched"
	"colo/transport"
)

// SmokeConfig is a cluster of processes running the built-in smoke job
// (package app/smoke), what colo launch starts: a scheduler and Machines
// machines (a server and a worker each), or, when Servers or Workers is
// set, that many separate servers and workers.
type SmokeConfig struct {
	// Machines is the number of machines, when Servers and Workers are 0.
	Machines int `json:"machines"`
	// Servers and Workers, when either is set, replace the machines by
	// separate servers and workers; both must then be at least 1. Server
	// i and worker i run on host i+1.
	Servers int `json:"servers"`
	Workers int `json:"workers"`
	// Consistency is the consistency model: bsp, async or bounded.
	Consistency string `json:"consistency"`
	// Tau is the delay bound of bounded.
	Tau int `json:"tau"`
	// Keys, Batch and Rounds are the smoke job's (smoke.Config).
	Keys   uint64 `json:"keys"`
	Batch  int    `json:"batch"`
	Rounds int    `json:"rounds"`
	// Token is the cluster token; empty for a random one (NewToken). The
	// processes get it in their environment (COLO_TOKEN), never on their
	// command lines, where any user of the host could read it.
	Token string `json:"token,omitempty"`
	// TLS, when set, runs every link of the cluster over mutual TLS with
	// these files, which every process uses (see TLSFlags).
	TLS TLSFlags `json:"-"`
	// Heartbeat is the scheduler's heartbeat period; a node silent for
	// Timeout is dead.
	Heartbeat time.Duration `json:"heartbeat"`
	Timeout   time.Duration `json:"timeout"`
	// Bin is the colo binary to run; empty for this one.
	Bin string `json:"bin,omitempty"`
	// Starter places the processes; nil for Loopback.
	Starter Starter `json:"-"`
	// Metrics serves the metrics of every process, each sample labelled
	// process=scheduler, machine_0, …, at one address while the cluster
	// runs, and their final values after it (see metrics.Flags); each
	// process serves its own on a loopback port. Log receives the line
	// that says where the final values stay; nil discards it.
	Metrics metrics.Flags `json:"-"`
	Log     io.Writer     `json:"-"`
	// Restarts is how many times the cluster is started again, whole and
	// from the start of the smoke job, when one of its processes fails
	// (is killed, exits or falls silent): the smoke job keeps no
	// checkpoint, its check being that every value is the exact sum of
	// every push since the start. 0 ends at the first failure. Sums that
	// are wrong are never retried.
	Restarts int `json:"restarts,omitempty"`
}

// DefaultSmokeConfig returns colo launch's defaults: 2 machines, BSP, 20
// rounds of 10k keys out of 100k, a heartbeat of 100 ms and a timeout of
// 2 s, on loopback.
func DefaultSmokeConfig() SmokeConfig {
	j := smoke.DefaultConfig()
	return SmokeConfig{
		Machines: 2, Consistency: "bsp", Keys: j.Keys, Batch: j.Batch, Rounds: j.Rounds,
		Heartbeat: 100 * time.Millisecond, Timeout: 2 * time.Second,
	}
}

// separate reports whether c runs separate servers and workers.
func (c SmokeConfig) separate() bool { return c.Servers > 0 || c.Workers > 0 }

// shape returns the numbers of servers and workers.
func (c SmokeConfig) shape() (servers, workers int) {
	if c.separate() {
		return c.Servers, c.Workers
	}
	return c.Machines, c.Machines
}

// Validate checks c; errors name the field and the bound.
func (c SmokeConfig) Validate() error {
	switch {
	case c.separate() && (c.Servers < 1 || c.Workers < 1):
		return fmt.Errorf("launch: Servers %d and Workers %d must both be at least 1", c.Servers, c.Workers)
	case !c.separate() && c.Machines < 1:
		return fmt.Errorf("launch: Machines %d, at least 1", c.Machines)
	case c.Tau < 0:
		return fmt.Errorf("launch: Tau %d is negative", c.Tau)
	case c.Restarts < 0:
		return fmt.Errorf("launch: Restarts %d is negative", c.Restarts)
	case c.Heartbeat < sched.MinHeartbeat:
		return fmt.Errorf("launch: Heartbeat %v, at least %v", c.Heartbeat, sched.MinHeartbeat)
	case c.Timeout < 2*c.Heartbeat:
		return fmt.Errorf("launch: Timeout %v, must be at least 2 heartbeats (%v)", c.Timeout, 2*c.Heartbeat)
	}
	if _, err := clock.ParseMode(c.Consistency); err != nil {
		return fmt.Errorf("launch: Consistency: %w", err)
	}
	if err := (smoke.Config{Keys: c.Keys, Batch: c.Batch, Rounds: c.Rounds}).Validate(); err != nil {
		return fmt.Errorf("launch: %w", err)
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
	// Smoke is the worker's smoke job.
	Smoke *smoke.Result `json:"smoke,omitempty"`
	// Train is the worker's training job, a train.WorkerResult (kept as
	// JSON: package train builds on this one).
	Train json.RawMessage `json:"train,omitempty"`
	Error string          `json:"error,omitempty"`
	Stats node.Stats      `json:"stats"`
}

// SmokeSummary is the outcome of Smoke.
type SmokeSummary struct {
	Servers  int `json:"servers"`
	Workers  int `json:"workers"`
	Machines int `json:"machines"`
	// Consistency is the model the cluster ran.
	Consistency string `json:"consistency"`
	// StartSeconds is the time from the launch to the moment the last
	// node had joined.
	StartSeconds float64 `json:"start_s"`
	// KeysPushed and KeysPerSec are summed over workers; the rate divides
	// by the slowest worker's time.
	KeysPushed uint64  `json:"keys_pushed"`
	Seconds    float64 `json:"seconds"`
	KeysPerSec float64 `json:"keys_per_s"`
	// Checked is set when a worker checked every value is the exact sum.
	Checked bool `json:"checked"`
	// Inner and Inter are the nodes' traffic summed, inside machines and
	// between them.
	Inner        transport.LinkStats `json:"inner"`
	Inter        transport.LinkStats `json:"inter"`
	TotalSeconds float64             `json:"total_s"`
	Nodes        []NodeSummary       `json:"nodes"`
	Error        string              `json:"error,omitempty"`
	// Restarts lists the failed runs before this one (SmokeConfig.Restarts).
	Restarts []SmokeRestart `json:"restarts,omitempty"`
	// failed is set when a process failed (what a restart retries).
	failed bool
}

// SmokeRestart is one failed run of the smoke cluster that was started
// again.
type SmokeRestart struct {
	// Error is the failure that ended the run; Seconds the time from the
	// launch of the failed run to the failure noticed (its processes
	// stopped); RestartSeconds the time from then to the new cluster's
	// last node running.
	Error          string  `json:"error"`
	Seconds        float64 `json:"seconds"`
	RestartSeconds float64 `json:"restart_s"`
}

// Smoke runs the cluster of cfg and gathers the nodes' summaries. It
// returns a summary whenever the processes ran, with the error in it when
// they failed, did not print a summary or no worker checked the sums; it
// returns no summary when cfg is invalid or the scheduler did not start.
// ctx done stops the cluster.
func Smoke(ctx context.Context, cfg SmokeConfig) (*SmokeSummary, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	st := cfg.Starter
	if st == nil {
		st = Loopback{}
	}
	if _, err := cfg.TLS.Load(); err != nil {
		return nil, fmt.Errorf("launch: %w", err)
	}
	token := cfg.Token
	if token == "" {
		token = NewToken()
	}
	env, err := cfg.TLS.Env()
	if err != nil {
		return nil, fmt.Errorf("launch: %w", err)
	}
	env = append(env, EnvName("token")+"="+token)
	ns, nw := cfg.shape()
	common := []string{
		"--num-servers", strconv.Itoa(ns), "--num-workers", strconv.Itoa(nw),
		"--keys", strconv.FormatUint(cfg.Keys, 10),
	}
	var cm *clusterMetrics
	endMetrics := func(context.Context) error { return nil }
	if cfg.Metrics.Enabled() {
		var err error
		if cm, err = newClusterMetrics(); err != nil {
			return nil, fmt.Errorf("launch: metrics: %w", err)
		}
		defer cm.close()
		if endMetrics, err = cfg.Metrics.Start(cm, cfg.Log); err != nil {
			return nil, err
		}
	}
	var restarts []SmokeRestart
	for {
		t0 := time.Now()
		sum, err := smokeOnce(ctx, cfg, st, common, env, cm)
		if sum != nil {
			sum.Restarts = restarts
			if n := len(restarts); n > 0 {
				restarts[n-1].RestartSeconds = sum.StartSeconds
			}
		}
		if err == nil || sum == nil || !sum.failed || len(restarts) >= cfg.Restarts || ctx.Err() != nil {
			if merr := endMetrics(ctx); merr != nil {
				err = errors.Join(err, merr)
				if sum != nil {
					sum.Error = err.Error()
				}
			}
			return sum, err
		}
		restarts = append(restarts, SmokeRestart{Error: err.Error(), Seconds: time.Since(t0).Seconds()})
		if cfg.Log != nil {
			fmt.Fprintf(cfg.Log, "launch: restart %d of %d after %v: the smoke job from its start\n", len(restarts), cfg.Restarts, err)
		}
	}
}

// smokeOnce runs the cluster of cfg once, on st.
func smokeOnce(ctx context.Context, cfg SmokeConfig, st Starter, common, env []string, cm *clusterMetrics) (*SmokeSummary, error) {
	ns, nw := cfg.shape()
	sup := NewSupervisor(cfg.Bin, st)
	t0 := time.Now()
	addr, err := sup.StartScheduler(ctx, Spec{Name: "scheduler", Host: 0, Env: env, Args: append(append([]string{
		"node", "--role", "scheduler", "--scheduler", st.SchedulerAddr(),
		"--consistency", cfg.Consistency, "--tau", strconv.Itoa(cfg.Tau),
		"--heartbeat", cfg.Heartbeat.String(), "--timeout", cfg.Timeout.String()}, common...), cm.args("scheduler")...)})
	if err != nil {
		return nil, fmt.Errorf("launch: %w", err)
	}
	var nodes []*Proc
	start := func(role string, rank int) {
		nodes = append(nodes, sup.Start(ctx, Spec{
			Name: role + " " + strconv.Itoa(rank), Host: rank + 1, Stdout: true, Env: env,
			Args: append([]string{"node", "--role", role, "--scheduler", addr, "--rank", strconv.Itoa(rank),
				"--host", st.Addr(rank + 1), "--json",
				"--batch", strconv.Itoa(cfg.Batch), "--rounds", strconv.Itoa(cfg.Rounds)}, slices.Concat(common, cm.args(role+" "+strconv.Itoa(rank)))...),
		}))
	}
	if cfg.separate() {
		for i := range ns {
			start("server", i)
		}
		for i := range nw {
			start("worker", i)
		}
	} else {
		for i := range ns {
			start("machine", i)
		}
	}
	var errs []error
	werr := sup.Wait(ctx)
	if werr != nil {
		errs = append(errs, fmt.Errorf("launch: %w", werr))
	}
	sum := &SmokeSummary{Servers: ns, Workers: nw, Consistency: cfg.Consistency, TotalSeconds: time.Since(t0).Seconds(), failed: werr != nil}
	if !cfg.separate() {
		sum.Machines = cfg.Machines
	}
	var lastStart int64
	for _, p := range nodes {
		var n NodeSummary
		if err := json.Unmarshal(p.Stdout(), &n); err != nil {
			if p.Err() == nil {
				errs = append(errs, fmt.Errorf("launch: %s: bad summary: %w", p.Name(), err))
			}
			continue
		}
		sum.Nodes = append(sum.Nodes, n)
		lastStart = max(lastStart, n.StartedUnixNano)
		sum.Inner = sum.Inner.Add(n.Stats.Inner)
		sum.Inter = sum.Inter.Add(n.Stats.Inter)
		if s := n.Smoke; s != nil {
			sum.KeysPushed += s.KeysPushed
			sum.Seconds = max(sum.Seconds, s.Seconds)
			sum.Checked = sum.Checked || s.Checked
		}
	}
	if lastStart > 0 {
		sum.StartSeconds = float64(lastStart-t0.UnixNano()) / 1e9
	}
	if sum.Seconds > 0 {
		sum.KeysPerSec = float64(sum.KeysPushed) / sum.Seconds
	}
	if len(errs) == 0 && !sum.Checked {
		errs = append(errs, errors.New("launch: no worker checked the sums"))
	}
	err = errors.Join(errs...)
	if err != nil {
		sum.Error = err.Error()
	}
	return sum, err
}
