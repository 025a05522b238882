// Package train trains models on the parameter server with the data and
// parameters where a placement put them: sparse logistic regression
// (binary and multinomial) and matrix factorisation, the workloads of
// seeds 000 and 001 (§6.3 and §5.5).
//
// A sample's path: the loader reads it into a graph.Graph; TrainRows
// turns it into a row of keys and values; the placement (partition)
// puts it on machine Data[u], whose Part cuts its samples into batches;
// each round the machine's worker pulls the batch's keys from the
// servers that own them (Param[v], through route.FromPlacement), computes
// the gradient and pushes it back. Run does all of it in one process on
// a cluster.Cluster; Loop is the per-worker loop any deployment runs.
package train

import (
	"context"
	"fmt"
	"time"

	"colo/cluster"
	"colo/placement"
	"colo/ps/clock"
	"colo/ps/node"
	"colo/ps/proto"
	"colo/ps/route"
	"colo/ps/update"
	"colo/ps/worker"
	"colo/transport"
)

// App is a model ready to train on a placement: it cuts each machine's
// samples into parts and evaluates the trained model.
type App interface {
	// Name is "lr" or "mf".
	Name() string
	// Width is the number of values per key.
	Width() int
	// NumSamples and NumKeys are the sizes of the training graph: the
	// samples the placement places and the keys of the servers.
	NumSamples() int
	NumKeys() int
	// Part returns the part of machine rank, whose samples are rows, cut
	// into batches batches per pass with seed.
	Part(rank int, rows []int32, batches int, seed uint64) Part
	// Evaluate runs on every worker after training, all at once; the
	// evaluation of worker 0 is the job's.
	Evaluate(ctx context.Context, w *worker.Worker, part Part) (Eval, error)
}

// Eval is the test-set measure of a trained model; fields that do not
// apply are nil.
type Eval struct {
	// On names what was scored: "test" (a test file), "train" (the
	// training set, when lr has no test file) or "held-out" (mf entries
	// held out of training).
	On       string   `json:"evaluated_on"`
	Samples  int      `json:"test_samples"`
	Accuracy *float64 `json:"test_accuracy,omitempty"`
	LogLoss  *float64 `json:"test_log_loss,omitempty"`
	AUC      *float64 `json:"test_auc,omitempty"`
	RMSE     *float64 `json:"test_rmse,omitempty"`
}

// Config is a training job's settings, apart from the data and placement.
type Config struct {
	// Machines is K, the number of machines (a server and a worker each).
	Machines int
	// Clock is the consistency model.
	Clock clock.Config
	// Rule is the servers' update rule.
	Rule update.Config
	// Batch is the number of samples per round over all machines; 0 is
	// full-batch rounds.
	Batch int
	// Epsilon and MaxPasses are the stopping criterion (see Schedule).
	Epsilon   float64
	MaxPasses int
	// Seed seeds the batches and the models' initial values.
	Seed uint64
	// Transport is "mem" (in-memory, the default) or "tcp" (loopback).
	Transport string
	// LinkBandwidth is each machine's network rate in bytes per second
	// (0: unlimited), and Bandwidth a matrix of machine-to-machine rates.
	LinkBandwidth float64
	Bandwidth     *transport.Bandwidth
	// Progress, when set, is called after every pass.
	Progress Progress
	// Logf, when set, receives the cluster's log lines.
	Logf func(format string, args ...any)
}

// DefaultConfig returns 4 machines, BSP, AdaGrad with learning rate 0.5,
// full-batch rounds, ε = 1e-4 (seed 000) and at most 200 passes.
func DefaultConfig() Config {
	r := update.DefaultConfig()
	r.Name, r.LR = "adagrad", 0.5
	return Config{
		Machines: 4, Clock: clock.DefaultConfig(), Rule: r,
		Epsilon: 1e-4, MaxPasses: 200, Seed: 1, Transport: "mem",
	}
}

// Result is the outcome of one training job, as written to the JSON
// summary.
type Result struct {
	App         string `json:"app"`
	Placement   string `json:"placement"`
	Machines    int    `json:"machines"`
	Consistency string `json:"consistency"`
	Updater     string `json:"updater"`
	Batch       int    `json:"batch"`
	// LinkBandwidth is each machine's emulated rate in bytes per second
	// (0: unlimited).
	LinkBandwidth float64 `json:"link_bandwidth_bytes_per_s"`

	PartitionSeconds float64 `json:"partition_seconds"`
	// StartSeconds is the time to start the cluster, TrainSeconds the
	// training to the stopping criterion, EvalSeconds the evaluation.
	StartSeconds float64 `json:"start_seconds"`
	TrainSeconds float64 `json:"train_seconds"`
	EvalSeconds  float64 `json:"eval_seconds"`
	// TotalSeconds is partition, start, training and evaluation.
	TotalSeconds float64 `json:"total_seconds"`

	Rounds int `json:"rounds"`
	Passes int `json:"passes"`
	// BytesInner and BytesInter are the data bytes sent during training
	// (the evaluation's excluded) between a machine's worker and its own
	// server (memory) and between machines (network), control messages to
	// the scheduler excluded.
	BytesInner int64 `json:"bytes_inner"`
	BytesInter int64 `json:"bytes_inter"`
	// MessagesInter counts the data messages between machines.
	MessagesInter int64 `json:"messages_inter"`
	// Cost is the placement's cost-model evaluation; PredictedInterValues
	// is the number of values the cost model predicts cross machines
	// during training with full-batch rounds: T_sum per round times the
	// width, times the rounds.
	TMax                 int64 `json:"T_max"`
	TSum                 int64 `json:"T_sum"`
	PredictedInterValues int64 `json:"predicted_inter_values,omitempty"`
	// InterValues is the number of values the workers pushed to or
	// pulled from another machine's server during training.
	InterValues int64 `json:"inter_values"`

	FinalTrainLoss float64 `json:"final_train_loss"`
	Eval
	RoundsDetail []Pass `json:"rounds_detail"`
}

// Run trains app on an in-process cluster of cfg.Machines machines with
// the data and parameters placed by p, whose partitioning took
// partitionSeconds (reported, not measured here).
func Run(ctx context.Context, app App, p *placement.Placement, name string, partitionSeconds float64, cost *placement.Cost, cfg Config) (*Result, error) {
	k := cfg.Machines
	if p.K != k {
		return nil, fmt.Errorf("train: the placement %s is for %d machines, the job has %d", name, p.K, k)
	}
	if len(p.Data) != app.NumSamples() || len(p.Param) != app.NumKeys() {
		return nil, fmt.Errorf("train: the placement %s places %d samples and %d parameters, the data has %d and %d",
			name, len(p.Data), len(p.Param), app.NumSamples(), app.NumKeys())
	}
	sched := NewSchedule(app, cfg)
	batches := sched.Batches
	if err := sched.Validate(); err != nil {
		return nil, err
	}
	rule, err := update.New(cfg.Rule)
	if err != nil {
		return nil, err
	}
	table, err := route.FromPlacement(p.Param, k)
	if err != nil {
		return nil, err
	}
	parts := make([]Part, k)
	for i := range k {
		parts[i] = app.Part(i, Shard(p, i), batches, cfg.Seed)
	}

	res := NewResult(app, name, partitionSeconds, cost, cfg)

	cc := cluster.DefaultConfig()
	cc.Machines, cc.Transport = k, cfg.Transport
	if cc.Transport == "" {
		cc.Transport = "mem"
	}
	cc.Table, cc.NumKeys, cc.Width, cc.Clock, cc.Rule = table, uint64(app.NumKeys()), app.Width(), cfg.Clock, rule
	cc.LinkBandwidth, cc.Bandwidth = cfg.LinkBandwidth, cfg.Bandwidth
	cc.Heartbeat, cc.Timeout = 200*time.Millisecond, 30*time.Second
	cc.Logf = cfg.Logf
	t0 := time.Now()
	c, err := cluster.Start(ctx, cc)
	if err != nil {
		return nil, fmt.Errorf("train: starting the cluster: %w", err)
	}
	defer c.Close()
	res.StartSeconds = time.Since(t0).Seconds()

	outs := make([]WorkerResult, k)
	var trained []node.Stats
	counted := AfterTraining(app, func(rank int) {
		if rank == 0 {
			trained = c.Stats()
		}
	})
	err = c.Run(ctx, func(ctx context.Context, w *worker.Worker) error {
		var err error
		outs[w.Rank()], err = Work(ctx, w, counted, parts[w.Rank()], sched, cfg.Progress)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("train: %s on %s: %w", app.Name(), name, err)
	}
	res.SetWork(outs[0])
	res.TotalSeconds = res.PartitionSeconds + res.StartSeconds + res.TrainSeconds + res.EvalSeconds
	res.AddTraffic(trained)
	res.InterValues = InterValues(parts, p, app.Width(), res.Passes)
	if cost != nil && batches == 1 {
		res.PredictedInterValues = cost.TSum * int64(app.Width()) * int64(res.Rounds)
	}
	return res, nil
}

// consistencyName names a clock configuration as the command line does.
func consistencyName(c clock.Config) string {
	switch c.Mode {
	case clock.Bounded:
		return fmt.Sprintf("ssp:%d", c.Tau)
	case clock.Async:
		return "async"
	}
	return "bsp"
}

// ParseConsistency reads bsp, async or ssp:τ.
func ParseConsistency(s string) (clock.Config, error) {
	switch s {
	case "bsp":
		return clock.Config{Mode: clock.BSP}, nil
	case "async":
		return clock.Config{Mode: clock.Async}, nil
	}
	var tau int
	if _, err := fmt.Sscanf(s, "ssp:%d", &tau); err == nil && fmt.Sprintf("ssp:%d", tau) == s {
		c := clock.Config{Mode: clock.Bounded, Tau: tau}
		if err := c.Validate(); err != nil {
			return c, err
		}
		return c, nil
	}
	return clock.Config{}, fmt.Errorf("consistency %q: want bsp, async or ssp:τ with τ ≥ 1", s)
}

// WorkerResult is what Work returns on one worker.
type WorkerResult struct {
	Passes []Pass `json:"passes"`
	Eval   Eval   `json:"eval"`
	// TrainSeconds is the time of the training loop up to the barrier
	// after it, EvalSeconds the evaluation up to the barrier after it.
	TrainSeconds float64 `json:"train_seconds"`
	EvalSeconds  float64 `json:"eval_seconds"`
}

// Work is the whole job of one worker in any deployment: the training
// Loop, a barrier, the application's evaluation and a last barrier.
// Every worker of the cluster must run it with the same schedule.
func Work(ctx context.Context, w *worker.Worker, app App, part Part, s Schedule, progress Progress) (WorkerResult, error) {
	var res WorkerResult
	start := time.Now()
	var err error
	res.Passes, err = Loop(ctx, w, part, s, progress)
	if err != nil {
		return res, err
	}
	if err := w.Barrier(ctx); err != nil {
		return res, err
	}
	res.TrainSeconds = time.Since(start).Seconds()
	start = time.Now()
	if res.Eval, err = app.Evaluate(ctx, w, part); err != nil {
		return res, fmt.Errorf("evaluation: %w", err)
	}
	if err := w.Barrier(ctx); err != nil {
		return res, err
	}
	res.EvalSeconds = time.Since(start).Seconds()
	return res, nil
}

// SetWork fills the fields of r that worker 0's result gives: times of
// training and evaluation, passes, rounds, final loss and evaluation.
func (r *Result) SetWork(w WorkerResult) {
	r.TrainSeconds, r.EvalSeconds = w.TrainSeconds, w.EvalSeconds
	r.RoundsDetail = w.Passes
	if n := len(w.Passes); n > 0 {
		last := w.Passes[n-1]
		r.Rounds, r.Passes, r.FinalTrainLoss = last.Rounds, last.Pass, last.TrainLoss
	}
	r.Eval = w.Eval
}

// NewSchedule returns the schedule of cfg for app.
func NewSchedule(app App, cfg Config) Schedule {
	batches := 1
	if cfg.Batch > 0 {
		batches = max(1, (app.NumSamples()+cfg.Batch-1)/cfg.Batch)
	}
	return Schedule{Epsilon: cfg.Epsilon, MaxPasses: cfg.MaxPasses, Samples: app.NumSamples(), Batches: batches}
}

// AddTraffic adds the data bytes the nodes sent to r: between a machine's
// worker and its own server (inner) and between machines (inter), control
// messages to and from the scheduler excluded.
func (r *Result) AddTraffic(stats []node.Stats) {
	for _, st := range stats {
		for _, l := range st.Links {
			if l.From == proto.SchedulerID || l.To == proto.SchedulerID {
				continue
			}
			if l.Inner {
				r.BytesInner += int64(l.BytesSent)
			} else {
				r.BytesInter += int64(l.BytesSent)
				r.MessagesInter += int64(l.MsgsSent)
			}
		}
	}
}

// InterValues returns the number of values the machines' parts push to
// and pull from other machines' servers in the given number of passes
// (parts[i] is machine i's): the sum of their PartInterValues.
func InterValues(parts []Part, p *placement.Placement, width, passes int) int64 {
	var n int64
	for i, part := range parts {
		n += PartInterValues(part, i, p, width, passes)
	}
	return n
}

// AfterTraining wraps app so that its evaluation first calls hook with
// the worker's rank on every worker and then waits at a barrier: a hook
// that reads the traffic counters sees the training rounds' traffic
// exactly, none of the evaluation's.
func AfterTraining(app App, hook func(rank int)) App {
	return &afterTraining{App: app, hook: hook}
}

// afterTraining is the App AfterTraining returns.
type afterTraining struct {
	App
	hook func(rank int)
}

func (a *afterTraining) Evaluate(ctx context.Context, w *worker.Worker, part Part) (Eval, error) {
	a.hook(w.Rank())
	if err := w.Barrier(ctx); err != nil {
		return Eval{}, err
	}
	return a.App.Evaluate(ctx, w, part)
}
