// Package train is the training engine of the parameter server: a job
// (Job: the application, its data, the placement, the consistency model,
// the update rule and the links), the per-worker loop that every
// deployment runs (Loop and Work), and Run, which trains a job on a
// Deployer and assembles the Result. The applications themselves (sparse
// logistic regression, matrix factorisation, the models of later seeds)
// live in the packages under app/, behind the App interface; the
// registry that finds one by name is package app.
//
// A sample's path: the application loads its file (app/lr reads a
// graph.Graph); the placement (package partition) puts the sample on
// machine Data[u] and each key on server Param[v]; App.Part cuts the
// machine's samples into the batches of a pass; each round Loop pulls the
// batch's keys (a sorted list for a sparse model, a range for a dense
// one) from the servers that own them (ps/route.FromPlacement), Part.Step
// computes the gradient, and Loop pushes it back.
//
// A Deployer runs the cluster: package cluster in this process (over the
// in-memory network or TCP on loopback), package launch as processes on
// loopback or in network namespaces. Every deployment runs the same Work
// on every worker, so a BSP job gives the same passes and evaluation bit
// for bit in each. RunMachine is what one machine of a cluster of
// processes runs.
//
//	job := train.DefaultJob()
//	job.App, job.Data.Train, job.Placement = "lr", "news20.svm", "parsa"
//	a, _ := app.Open(job)                               // the registry
//	res, err := train.Run(ctx, job, a, p, deploy.InProcess{})
//	res.Placed(partitionSeconds, cost)                  // the caller labels
package train

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"colo/balance"
	"colo/placement"
	"colo/ps/clock"
	"colo/ps/node"
	"colo/ps/proto"
	"colo/ps/server"
	"colo/ps/update"
	"colo/ps/worker"
	"colo/timeline"
	"colo/transport"
)

// App is a model ready to train on a placement: it cuts each machine's
// samples into parts and evaluates the trained model.
type App interface {
	// Name is the application's name in the registry: "lr", "mf".
	Name() string
	// Width is the number of values per key.
	Width() int
	// NumSamples and NumKeys are the sizes of the training data: the
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
	// MRR is the mean reciprocal rank of held-out links among sampled
	// negatives (link prediction).
	MRR *float64 `json:"test_mrr,omitempty"`
	// ClassAccuracy is the accuracy of each class (classifiers of dense
	// data).
	ClassAccuracy []float64 `json:"test_class_accuracy,omitempty"`
}

// Words is the test measure for a line of output: ", test accuracy
// 84.63%", ", held-out RMSE 0.9312", ", held-out MRR 0.4120, AUC
// 0.9310", or nothing.
func (ev Eval) Words() string {
	switch {
	case ev.Accuracy != nil:
		return fmt.Sprintf(", %s accuracy %.2f%%", ev.On, 100**ev.Accuracy)
	case ev.RMSE != nil:
		return fmt.Sprintf(", %s RMSE %.4f", ev.On, *ev.RMSE)
	case ev.MRR != nil && ev.AUC != nil:
		return fmt.Sprintf(", %s MRR %.4f, AUC %.4f", ev.On, *ev.MRR, *ev.AUC)
	}
	return ""
}

// Config is a training job's settings, apart from the application, the
// data and the placement.
type Config struct {
	// Machines is K, the number of machines: a worker each, and a server
	// each unless Servers is set.
	Machines int `json:"machines"`
	// Servers, when positive, is the number of servers, each a machine of
	// its own apart from the Machines workers (seed 004's 2 servers and 12
	// workers); 0 puts a server beside every worker.
	Servers int `json:"servers,omitempty"`
	// Replicas, with servers apart (Servers), keeps each server's keys
	// and update rule states on that many other servers (package
	// ps/replica, OSDI'14 §4.3): a push is acknowledged once they have
	// it, and a server that fails is taken over by its backup at once,
	// with no pause and no round computed again (docs/ps.md). 0: none.
	Replicas int `json:"replicas,omitempty"`
	// Clock is the consistency model, written "bsp", "async" or "ssp:τ".
	Clock clock.Config `json:"consistency"`
	// Rule is the servers' update rule. The summing rule does not train.
	Rule update.Config `json:"rule"`
	// Batch is the number of samples per round over all machines; 0 is
	// full-batch rounds.
	Batch int `json:"batch"`
	// Directions, under BSP with a server beside every worker, has a
	// partitioner's placement end with partition.BalanceDirections: the
	// parameters move between servers so that no machine pulls much more
	// than it serves, which lowers the round bound R_max
	// (placement.Cost) at a higher T_max. It applies to partitioners
	// other than random, not to a placement read from a directory.
	Directions bool `json:"directions"`
	// Epsilon and MaxPasses are the stopping criterion (see Schedule).
	Epsilon   float64 `json:"epsilon"`
	MaxPasses int     `json:"max_passes"`
	// MaxSteps, when positive, is a step budget: training stops after
	// this many steps (batches pushed, counted over every machine: a
	// round of K machines is K steps), rounded up to whole rounds, in
	// the middle of a pass if need be.
	MaxSteps int64 `json:"max_steps,omitempty"`
	// Seed seeds the batches and the models' initial values.
	Seed uint64 `json:"seed"`
	// EvalEvery, when not zero, runs an evaluator beside the workers
	// (applications that are Scorers): a node of its own that pulls the
	// model this often, outside the consistency clock, and scores it on
	// the validation set, and scores the final model (Result.Evaluator).
	// The workers never wait for it, and its traffic is not in the
	// training's.
	EvalEvery Every `json:"eval_every,omitzero"`
	// LinkBandwidth is each machine's network rate in bytes per second
	// (0: unlimited), and Bandwidth a matrix of machine-to-machine rates;
	// at most one of them is set. What they limit depends on the
	// deployment (see package cluster and launch).
	LinkBandwidth float64              `json:"link_bandwidth_bytes_per_s,omitempty"`
	Bandwidth     *transport.Bandwidth `json:"bandwidth_matrix,omitempty"`
	// RandomBandwidth, when positive, draws each machine's interface rate
	// from [max/10, max] bytes per second (seeded by Seed), and
	// BandwidthChange, when positive, draws again every period (in
	// process, on the in-memory network): seed 002's changing network.
	RandomBandwidth float64       `json:"random_bandwidth_bytes_per_s,omitempty"`
	BandwidthChange time.Duration `json:"bandwidth_change,omitempty"`
	// Balance, when set, re-decides which server holds which keys of a
	// dense model while it trains (package balance; co-located machines).
	Balance *balance.Config `json:"balance,omitempty"`
	// Checkpoint, when set, writes checkpoints every so many rounds, or
	// resumes the job from one (see checkpoint.go).
	Checkpoint Checkpoint `json:"checkpoint,omitzero"`
	// Sequential turns off the overlap of consecutive rounds
	// (Schedule.Overlap): each round's pull, computation and push then
	// run one after another, each waited for. Under BSP both train the
	// same model; the overlap only hides waiting.
	Sequential bool `json:"sequential,omitempty"`
	// PullAhead, under async training, sends each round's pull before
	// the previous round's push (Schedule.PullAhead): its values travel
	// during the computation, but lack the worker's own last update, one
	// more round of staleness, which with momentum can cost much of the
	// accuracy (an mlp on Fashion-MNIST: 0.4 against 0.75 after two
	// epochs on two machines). Off by default.
	PullAhead bool `json:"pull_ahead,omitempty"`
	// Progress, when set, is called on machine 0 after every pass.
	Progress Progress `json:"-"`
	// Checked, when set, is called by the evaluator after every score.
	Checked func(Check) `json:"-"`
	// Logf, when set, receives the cluster's log lines.
	Logf func(format string, args ...any) `json:"-"`
	// Trace, when set, gives worker rank a track for its spans
	// (timeline.Recorder.Workers); in this process's deployments only.
	Trace func(rank int) *timeline.Track `json:"-"`

	// writeGate, when set (by tests), is called by worker rank's
	// checkpoint writer before it writes the checkpoint of round.
	writeGate func(rank, round int)
	// checkpointClock, when set (by tests), is the checkpoints' clock,
	// which decides which are durable (Checkpoint.Durable).
	checkpointClock func() time.Time
}

// DefaultConfig returns 4 machines, BSP, AdaGrad with learning rate 0.5,
// full-batch rounds, ε = 1e-4 (seed 000) and at most 200 passes. An
// application may change the rule's defaults (app.DefaultJob).
func DefaultConfig() Config {
	r := update.DefaultConfig()
	r.Name, r.LR = "adagrad", 0.5
	return Config{
		Machines: 4, Clock: clock.DefaultConfig(), Rule: r,
		Epsilon: 1e-4, MaxPasses: 200, Seed: 1, Directions: true,
	}
}

// NumServers returns the number of servers: Servers, or one per machine.
func (c Config) NumServers() int {
	if c.Servers > 0 {
		return c.Servers
	}
	return c.Machines
}

// Hosts returns the number of machines of the cluster: Machines, plus
// the servers when they run apart (numbered first, as in
// cluster.Config).
func (c Config) Hosts() int { return c.Machines + c.Servers }

// Rates returns the emulated rate policy of the job's TCP links, for a
// node of a cluster of processes (node.Rates): the machines of a
// co-located cluster by rank, servers apart first.
func (c Config) Rates() node.Rates {
	r := node.Rates{Link: c.LinkBandwidth, Matrix: c.Bandwidth}
	if c.Servers > 0 {
		r.Host = node.Apart(c.Servers)
	}
	return r
}

// MaxRounds returns the rounds of the step budget MaxSteps, 0 for none.
func (c Config) MaxRounds() int {
	if c.MaxSteps <= 0 || c.Machines < 1 {
		return 0
	}
	return int((c.MaxSteps + int64(c.Machines) - 1) / int64(c.Machines))
}

// Colocated reports whether every worker has a server beside it.
func (c Config) Colocated() bool { return c.Servers == 0 }

// maxRate bounds rates in bytes per second.
const maxRate = 1e18

// Validate checks c; errors name the field (as a job file spells it) and
// the bound.
func (c Config) Validate() error {
	if c.Machines < 1 {
		return fmt.Errorf("machines %d: want at least 1", c.Machines)
	}
	if c.Servers < 0 {
		return fmt.Errorf("servers %d: want 0 (a server on every machine) or a number of servers", c.Servers)
	}
	if err := c.Clock.Validate(); err != nil {
		return fmt.Errorf("consistency: %w", err)
	}
	switch {
	case c.Replicas < 0:
		return fmt.Errorf("replicas %d: want 0 (none) or a number of backups of each server", c.Replicas)
	case c.Replicas > 0 && c.Colocated():
		return fmt.Errorf("replicas %d: a server's backup takes over only a server apart from the workers (servers > 0): a machine that fails loses its worker too, and is replaced", c.Replicas)
	case c.Replicas > 0 && c.Replicas >= c.Servers:
		return fmt.Errorf("replicas %d: want fewer than the servers (%d)", c.Replicas, c.Servers)
	}
	if c.Rule.Name == "sum" {
		return errors.New("rule.name sum does not train: want sgd, momentum, adagrad, adam or ftrl")
	}
	if err := c.Rule.Validate(); err != nil {
		return fmt.Errorf("rule: %w", err)
	}
	if c.Batch < 0 {
		return fmt.Errorf("batch %d: want 0 (full batch) or a positive number of samples", c.Batch)
	}
	if !(c.Epsilon >= 0) || math.IsInf(c.Epsilon, 0) {
		return fmt.Errorf("epsilon %v: want a finite value ≥ 0", c.Epsilon)
	}
	if c.MaxPasses < 1 {
		return fmt.Errorf("max_passes %d: want at least 1", c.MaxPasses)
	}
	if c.MaxSteps < 0 || c.MaxSteps > 1<<40 {
		return fmt.Errorf("max_steps %d: want 0 (no budget) or a number of steps up to 2^40", c.MaxSteps)
	}
	if c.EvalEvery.Epochs < 0 || c.EvalEvery.Steps < 0 || c.EvalEvery.Interval < 0 {
		return fmt.Errorf("eval_every %v: want 0 (none), a number of epochs or steps, or a duration", c.EvalEvery)
	}
	if c.Balance != nil {
		if err := c.Balance.Validate(); err != nil {
			return fmt.Errorf("balance: %w", err)
		}
		if !c.Colocated() {
			return errors.New("balance: load balancing runs on co-located machines (servers 0)")
		}
	}
	if err := c.Checkpoint.Validate(); err != nil {
		return err
	}
	if c.Balance != nil && !c.Checkpoint.IsZero() {
		return errors.New("checkpoint: a job that balances keys between servers (balance) is not checkpointed: its routing table is not saved")
	}
	if c.RandomBandwidth != 0 || c.BandwidthChange != 0 {
		switch {
		case !(c.RandomBandwidth > 0) || c.RandomBandwidth > maxRate:
			return fmt.Errorf("random_bandwidth_bytes_per_s %v: want (0, %g]", c.RandomBandwidth, maxRate)
		case c.BandwidthChange < 0:
			return fmt.Errorf("bandwidth_change %v: want a positive period, or 0 for rates that do not change", c.BandwidthChange)
		case c.LinkBandwidth > 0 || c.Bandwidth != nil:
			return errors.New("random_bandwidth_bytes_per_s excludes link_bandwidth_bytes_per_s and bandwidth_matrix")
		}
	}
	if !(c.LinkBandwidth >= 0) || c.LinkBandwidth > maxRate {
		return fmt.Errorf("link_bandwidth_bytes_per_s %v: want [0, %g]", c.LinkBandwidth, maxRate)
	}
	if b := c.Bandwidth; b != nil {
		if c.LinkBandwidth > 0 {
			return errors.New("link_bandwidth_bytes_per_s and bandwidth_matrix exclude each other")
		}
		if b.K != c.Hosts() {
			return fmt.Errorf("bandwidth_matrix is for %d machines, the job has %d", b.K, c.Hosts())
		}
		if len(b.Rates) != b.K*b.K {
			return fmt.Errorf("bandwidth_matrix has %d rates, want %d×%d", len(b.Rates), b.K, b.K)
		}
		for i, r := range b.Rates {
			if !(r >= 0) || r > maxRate {
				return fmt.Errorf("bandwidth_matrix rate %d→%d = %v: want [0, %g]", i/b.K, i%b.K, r, maxRate)
			}
		}
	}
	return nil
}

// Result is the outcome of one training job, as written to the JSON
// summary.
type Result struct {
	App         string `json:"app"`
	Placement   string `json:"placement"`
	Machines    int    `json:"machines"`
	Servers     int    `json:"servers,omitempty"`
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
	// Overlap reports whether consecutive rounds overlapped
	// (Schedule.Overlap), Phases where worker 0's training time went,
	// summed over the passes (RoundsDetail has each pass's).
	Overlap bool   `json:"overlap"`
	Phases  Phases `json:"phases"`
	// SamplesPerSecond is the samples trained (on every machine, every
	// pass) per second of training.
	SamplesPerSecond float64 `json:"samples_per_s"`
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
	RMax                 int64 `json:"R_max"`
	PredictedInterValues int64 `json:"predicted_inter_values,omitempty"`
	// BoundRoundSeconds is the cost model's lower bound on the time of a
	// full-batch round over links of LinkBandwidth: the parameters the
	// busiest machine's link carries one after another, R_max under BSP
	// and T_max otherwise (placement.Cost.Totals), of Width values of 4
	// bytes each. It is 0 where it does not apply: unlimited links,
	// mini-batches, servers apart from the workers, keys of varying
	// width, or keys that the load balancer moves while the job runs. RoundSeconds is the measured time of a round, TrainSeconds
	// over Rounds.
	BoundRoundSeconds float64 `json:"bound_round_s,omitempty"`
	RoundSeconds      float64 `json:"round_s,omitempty"`
	// InterValues is the number of values the workers pushed to or
	// pulled from another machine's server during training.
	InterValues int64 `json:"inter_values"`

	FinalTrainLoss float64 `json:"final_train_loss"`
	Eval
	RoundsDetail []Pass `json:"rounds_detail"`
	// Staleness measures the pushes the servers applied during training,
	// summed over the servers (each measures the pushes it applied; see
	// server.Staleness): BSP gives 0, bounded delay τ at most τ.
	Staleness *Staleness `json:"staleness,omitempty"`
	// Replication counts, summed over the servers, the updates they sent
	// their backups (with replicated key ranges, Config.Replicas) and
	// how long their pushes' acknowledgements waited for the backups
	// (see server.ReplicaStats); nil without backups.
	Replication *server.ReplicaStats `json:"replication,omitempty"`
	// Evaluator is the evaluator's validation curve (Config.EvalEvery);
	// its traffic is not in BytesInter.
	Evaluator *EvaluatorReport `json:"evaluator,omitempty"`
	// Balance is what the load balancer of worker 0 did (Config.Balance).
	Balance *balance.Report `json:"balance,omitempty"`
	// Recoveries are the failures the job recovered from (Outcome).
	Recoveries []Recovery `json:"recoveries,omitempty"`
	// Diagnosis, when the training went nowhere (its loss did not fall,
	// or sits at a uniform guess's, or its accuracy is at chance), says
	// so with the likely causes (Diagnose).
	Diagnosis string `json:"diagnosis,omitempty"`
	// Checkpoints is the number of checkpoints taken and
	// CheckpointSeconds the training time they cost worker 0, included in
	// TrainSeconds (Config.Checkpoint): the barrier and the capture of
	// its share in memory. CheckpointsSkipped counts the checkpoints due
	// while the one before was still being written, not taken;
	// CheckpointWriteSeconds is the time worker 0's writer spent on its
	// files beside training.
	Checkpoints            int     `json:"checkpoints,omitempty"`
	CheckpointSeconds      float64 `json:"checkpoint_seconds,omitempty"`
	CheckpointsSkipped     int     `json:"checkpoints_skipped,omitempty"`
	CheckpointWriteSeconds float64 `json:"checkpoint_write_seconds,omitempty"`
	// CheckpointBytes is the size of the checkpoints' files (every
	// worker's), CheckpointDeltas the servers' deltas among them
	// (Checkpoint.Incremental).
	CheckpointBytes  int64 `json:"checkpoint_bytes,omitempty"`
	CheckpointDeltas int   `json:"checkpoint_deltas,omitempty"`

	// batches is the number of batches of a pass, width the values per
	// key.
	batches, width int
}

// Staleness is server.Staleness with its mean.
type Staleness struct {
	server.Staleness
	Mean float64 `json:"mean"`
}

// String writes the mean and the largest staleness, "0.56/2"; "-" for
// none measured.
func (s *Staleness) String() string {
	if s == nil {
		return "-"
	}
	return fmt.Sprintf("%.2f/%d", s.Mean, s.Max)
}

// Placed labels r with what the placement cost: the seconds partitioning
// took (added to the total) and its cost-model evaluation (nil: none).
func (r *Result) Placed(seconds float64, cost *placement.Cost) {
	r.PartitionSeconds = seconds
	r.TotalSeconds += seconds
	if cost == nil {
		return
	}
	r.TMax, r.TSum, r.RMax = cost.TMax, cost.TSum, cost.RMax
	if r.batches == 1 {
		r.PredictedInterValues = cost.TSum * int64(r.width) * int64(r.Rounds)
		if r.LinkBandwidth > 0 && r.Servers == 0 && r.width > 0 && r.Balance == nil {
			busiest := cost.TMax
			if r.Consistency == "bsp" {
				busiest = cost.RMax
			}
			r.BoundRoundSeconds = float64(busiest) * float64(r.width) * 4 / r.LinkBandwidth
		}
	}
}

// Heartbeat and Timeout are the scheduler's of a training cluster, in
// every deployment: a failed node is noticed at once when its links close;
// the timeout bounds silent nodes (data messages take as long as their
// emulated link needs, so only control messages are bounded).
const (
	Heartbeat = 200 * time.Millisecond
	Timeout   = 30 * time.Second
)

// Deployer runs the cluster of a job: it starts a scheduler and
// Config.Machines machines, runs Work on every worker with the parts and
// schedule of the Deployment and reports what happened. Package cluster
// deploys in this process, package launch as processes.
type Deployer interface {
	Deploy(ctx context.Context, d *Deployment) (*Outcome, error)
}

// PlacementWriter is an App that can write a placement of its own to a
// directory which, as a job's Placement, places the job the same way in
// another process: a deployment of processes writes it once instead of
// each process computing it (the dense models' sharding schemes).
type PlacementWriter interface {
	WritePlacement(dir string, job Job, p *placement.Placement) error
}

// Deployment is what a Deployer runs.
type Deployment struct {
	Job       Job
	App       App
	Placement *placement.Placement
	// Schedule is the job's schedule for the application.
	Schedule Schedule
	// Truth, when the deployer sets it, returns the true rates in bytes
	// per second of the links between machines at the time of the call
	// (Truth()[j][i] from machine j to i): balance.Oracle's input.
	Truth func() [][]float64
}

// Balancer returns a worker's load balancer, nil when the job does not
// balance (Config.Balance); egress, when not nil, reads the sending
// counters of the server on the worker's machine (balance.New).
func (d *Deployment) Balancer(egress func() server.Egress) (*balance.Balancer, error) {
	c := d.Job.Config.Balance
	if c == nil {
		return nil, nil
	}
	return balance.New(*c, d.Job.Config.Machines, uint64(d.App.NumKeys()), d.Truth, egress)
}

// WorkerSchedule returns the schedule of machine rank's worker: the
// job's, with its track when the job is traced (Config.Trace), the load
// balancer's hook when the job balances and the checkpointer when it
// takes or resumes from checkpoints, and the balancer; srv is the
// machine's server (nil: none known).
func (d *Deployment) WorkerSchedule(rank int, srv *server.Server) (Schedule, *balance.Balancer, error) {
	s := d.Schedule
	if d.Job.Config.Trace != nil {
		s.Track = d.Job.Config.Trace(rank)
	}
	if c := d.Job.Config; !c.Checkpoint.IsZero() {
		s.Checkpoint = &Checkpointer{Config: c.Checkpoint, Job: d.JobID(), Servers: c.NumServers(), Workers: c.Machines, Logf: c.Logf}
		if g := c.writeGate; g != nil {
			s.Checkpoint.gate = func(round int) { g(rank, round) }
		}
		s.Checkpoint.now = c.checkpointClock
	}
	var egress func() server.Egress
	if srv != nil {
		egress = func() server.Egress { return srv.Stats().Egress }
	}
	b, err := d.Balancer(egress)
	if err != nil || b == nil {
		return s, nil, err
	}
	s.AfterRound = b.AfterRound
	return s, b, nil
}

// Local returns the rank of machine rank's own server for
// PartInterValues: rank itself, or −1 when the servers run apart.
func (d *Deployment) Local(rank int) int {
	if d.Job.Config.Colocated() {
		return rank
	}
	return -1
}

// Evaluators returns the number of evaluators the deployment runs: one
// when the job asks for validation curves (Config.EvalEvery) of an
// application that is a Scorer, none otherwise.
func (d *Deployment) Evaluators() int {
	if _, ok := d.App.(Scorer); ok && !d.Job.Config.EvalEvery.IsZero() {
		return 1
	}
	return 0
}

// StepsPerEpoch returns the steps of an epoch: every machine's batches of
// a pass.
func (d *Deployment) StepsPerEpoch() int64 {
	return int64(d.Job.Config.Machines) * int64(d.Schedule.Batches)
}

// Part returns machine rank's part of the deployment.
func (d *Deployment) Part(rank int) Part {
	return d.App.Part(rank, Shard(d.Placement, rank), d.Schedule.Batches, d.Job.Config.Seed)
}

// Outcome is what a Deployer reports.
type Outcome struct {
	// Work is worker 0's result.
	Work WorkerResult
	// Stats are the counters of every node at the end of training, before
	// the evaluation.
	Stats []node.Stats
	// InterValues is the sum of the machines' PartInterValues.
	InterValues int64
	// StartSeconds is the time until every node ran, Seconds the whole
	// deployment's.
	StartSeconds, Seconds float64
	// Evaluator is the evaluator's report, when the deployment ran one.
	Evaluator *EvaluatorReport
	// Balance is worker 0's balancer's report, when the job balances.
	Balance *balance.Report
	// Recoveries are the failures the deployment recovered from, in
	// order.
	Recoveries []Recovery
}

// Recovery is one failure a deployment recovered from, as colo train
// --json reports it under "recoveries".
type Recovery struct {
	// Event numbers the failure events from 1: processes that failed
	// within one detection window of each other (a host that died with
	// its processes) share one, and count once against the restarts.
	Event int `json:"event"`
	// Failure says what failed and how.
	Failure string `json:"failure"`
	// Replaced names the process started again while the others kept
	// running; "" when the whole job restarted.
	Replaced string `json:"replaced,omitempty"`
	// Round is the round of the checkpoint the workers rolled back to
	// (−1: the start of the job, or not known).
	Round int `json:"rolled_back_to_round"`
	// Seconds is the time from the failure noticed to training resumed
	// (0 when the job ended before it resumed).
	Seconds float64 `json:"seconds_to_resume"`
}

// Run trains the job's application app on the deployment d with the
// data and parameters placed by p, and returns the result, labelled with
// the job's placement name; the caller adds what the placement cost
// (Result.Placed).
func Run(ctx context.Context, job Job, app App, p *placement.Placement, d Deployer) (*Result, error) {
	if err := job.Validate(); err != nil {
		return nil, err
	}
	dep, err := NewDeployment(job, app, p)
	if err != nil {
		return nil, err
	}
	out, err := d.Deploy(ctx, dep)
	if err != nil {
		return nil, fmt.Errorf("train: %s on %s: %w", app.Name(), job.Placement, err)
	}
	cfg := job.Config
	res := &Result{
		App: app.Name(), Placement: job.Placement, Machines: cfg.Machines, Servers: cfg.Servers, Consistency: cfg.Clock.Name(),
		Updater: cfg.Rule.Name, Batch: cfg.Batch, LinkBandwidth: cfg.LinkBandwidth,
		StartSeconds: out.StartSeconds, TotalSeconds: out.Seconds, InterValues: out.InterValues, Overlap: dep.Schedule.Overlap,
		batches: dep.Schedule.Batches, width: app.Width(),
	}
	w := out.Work
	res.TrainSeconds, res.EvalSeconds = w.TrainSeconds, w.EvalSeconds
	res.Checkpoints, res.CheckpointSeconds = w.Checkpoints, w.CheckpointSeconds
	res.CheckpointsSkipped, res.CheckpointWriteSeconds = w.CheckpointsSkipped, w.CheckpointWriteSeconds
	res.CheckpointBytes, res.CheckpointDeltas = w.CheckpointBytes, w.CheckpointDeltas
	res.RoundsDetail = w.Passes
	for _, p := range w.Passes {
		res.Phases = res.Phases.Add(p.Phases)
	}
	if n := len(w.Passes); n > 0 {
		last := w.Passes[n-1]
		res.Rounds, res.Passes, res.FinalTrainLoss = last.Rounds, last.Pass, last.TrainLoss
		if last.Rounds > 0 {
			res.RoundSeconds = res.TrainSeconds / float64(last.Rounds)
		}
	}
	res.Eval = w.Eval
	res.Diagnosis = Diagnose(app, w.Passes, w.Eval, cfg.Rule.LR)
	res.Evaluator, res.Balance, res.Recoveries = out.Evaluator, out.Balance, out.Recoveries
	if res.TrainSeconds > 0 {
		n := 0
		for _, p := range w.Passes {
			n += p.Samples
		}
		res.SamplesPerSecond = float64(n) / res.TrainSeconds
	}
	res.addTraffic(out.Stats)
	return res, nil
}

// NewDeployment checks that p places app's samples and keys on the job's
// machines and returns the deployment with the job's schedule.
func NewDeployment(job Job, app App, p *placement.Placement) (*Deployment, error) {
	k := job.Config.Machines
	if p.K != k {
		return nil, fmt.Errorf("train: the placement %s is for %d machines, the job has %d", job.Placement, p.K, k)
	}
	if len(p.Data) != app.NumSamples() || len(p.Param) != app.NumKeys() {
		return nil, fmt.Errorf("train: the placement %s places %d samples and %d parameters, the data has %d and %d",
			job.Placement, len(p.Data), len(p.Param), app.NumSamples(), app.NumKeys())
	}
	s := NewSchedule(app, job.Config)
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return &Deployment{Job: job, App: app, Placement: p, Schedule: s}, nil
}

// WorkerResult is what Work returns on one worker.
type WorkerResult struct {
	Passes []Pass `json:"passes"`
	Eval   Eval   `json:"eval"`
	// TrainSeconds is the time of the training loop up to the barrier
	// after it, EvalSeconds the evaluation up to the barrier after it.
	TrainSeconds float64 `json:"train_seconds"`
	EvalSeconds  float64 `json:"eval_seconds"`
	// Checkpoints is the number of checkpoints taken, CheckpointSeconds
	// the training time they cost this worker (Config.Checkpoint),
	// CheckpointsSkipped those skipped while the one before was being
	// written and CheckpointWriteSeconds the time its writer spent beside
	// training, CheckpointBytes and CheckpointDeltas the checkpoints'
	// files and deltas (Checkpointer).
	Checkpoints            int     `json:"checkpoints,omitempty"`
	CheckpointSeconds      float64 `json:"checkpoint_seconds,omitempty"`
	CheckpointsSkipped     int     `json:"checkpoints_skipped,omitempty"`
	CheckpointWriteSeconds float64 `json:"checkpoint_write_seconds,omitempty"`
	CheckpointBytes        int64   `json:"checkpoint_bytes,omitempty"`
	CheckpointDeltas       int     `json:"checkpoint_deltas,omitempty"`
	// Restores lists the checkpoints the worker restored: when it
	// resumed the job, and each time it rolled back after a failed node
	// was replaced.
	Restores []Restore `json:"restores,omitempty"`
}

// Work is the whole job of one worker in any deployment: the training
// Loop, a barrier, the application's evaluation and a last barrier.
// Every worker of the cluster must run it with the same schedule.
func Work(ctx context.Context, w *worker.Worker, app App, part Part, s Schedule, progress Progress) (WorkerResult, error) {
	var res WorkerResult
	start := time.Now()
	var paused error
	for {
		var err error
		res.Passes, err = loopAfter(ctx, w, part, s, progress, paused)
		if c := s.Checkpoint; c != nil {
			res.Checkpoints, res.CheckpointSeconds, res.Restores = c.Taken, c.Seconds, c.Restored
			res.CheckpointsSkipped, res.CheckpointWriteSeconds = c.Skipped, c.WriteSeconds
			res.CheckpointBytes, res.CheckpointDeltas = c.Bytes, c.Deltas
		}
		if err != nil {
			return res, err
		}
		err = w.Barrier(ctx)
		res.TrainSeconds = time.Since(start).Seconds()
		t0 := time.Now()
		if err == nil {
			if res.Eval, err = app.Evaluate(ctx, w, part); err != nil {
				err = fmt.Errorf("evaluation: %w", err)
			}
		}
		if err == nil {
			err = w.Barrier(ctx)
		}
		if s.rollsBack(err) {
			// A node failed after training: roll back and train to the
			// end again with the replacement, then evaluate.
			paused = err
			continue
		}
		res.EvalSeconds = time.Since(t0).Seconds()
		return res, err
	}
}

// NewSchedule returns the schedule of cfg for app.
func NewSchedule(app App, cfg Config) Schedule {
	batches := 1
	if cfg.Batch > 0 {
		batches = max(1, (app.NumSamples()+cfg.Batch-1)/cfg.Batch)
	}
	s := Schedule{Epsilon: cfg.Epsilon, MaxPasses: cfg.MaxPasses, MaxRounds: cfg.MaxRounds(), Samples: app.NumSamples(), Batches: batches,
		Overlap: !cfg.Sequential, PullAhead: cfg.PullAhead}
	if a, ok := app.(Advisor); ok {
		s.Advice = a.NonFiniteAdvice()
	}
	return s
}

// Advisor is an App that knows when its data, rather than the learning
// rate, is the likely cause of a non-finite training loss: features of a
// large scale that its features transform leaves as they are.
type Advisor interface {
	App
	// NonFiniteAdvice returns what to change, in words for the error of
	// a non-finite loss, or "" when the learning rate is the likely
	// cause.
	NonFiniteAdvice() string
}

// addTraffic adds the data bytes the nodes sent to r: between a machine's
// worker and its own server (inner) and between machines (inter), control
// messages to and from the scheduler and the evaluators' traffic
// excluded.
func (r *Result) addTraffic(stats []node.Stats) {
	for _, st := range stats {
		if st.Server != nil && st.Server.Staleness.Pushes > 0 {
			if r.Staleness == nil {
				r.Staleness = &Staleness{}
			}
			r.Staleness.Add(st.Server.Staleness)
			r.Staleness.Mean = r.Staleness.Staleness.Mean()
		}
		if st.Server != nil && st.Server.Replication != (server.ReplicaStats{}) {
			if r.Replication == nil {
				r.Replication = &server.ReplicaStats{}
			}
			r.Replication.Add(st.Server.Replication)
		}
		for _, l := range st.Links {
			from, _ := proto.Identify(l.From)
			to, _ := proto.Identify(l.To)
			if l.From == proto.SchedulerID || l.To == proto.SchedulerID || from == proto.RoleEvaluator || to == proto.RoleEvaluator {
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

// PartInterValues returns the values machine rank's part pushes to and
// pulls from other machines' servers in the given number of passes: each
// key of a batch owned by another machine costs 2·width values per pass.
// With servers apart from the workers pass rank −1: every key is remote.
func PartInterValues(part Part, rank int, p *placement.Placement, width, passes int) int64 {
	var n int64
	for b := range part.Batches() {
		part.Keys(b).Each(func(key uint64) {
			if int(p.Param[key]) != rank {
				n += int64(2 * width * passes)
			}
		})
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

// PullChunk bounds the bytes of values one pull of PullModel asks for,
// so that no server's answer exceeds the transport's frame limit
// (transport.DefaultMaxFrame, 64 MiB) however large the model is.
const PullChunk = 16 << 20

// PullModel pulls the values of keys [0, numKeys) from the servers, of
// w.Width() values each, in pulls of at most PullChunk bytes.
func PullModel(w *worker.Worker, numKeys int) ([]float32, error) {
	return PullModelIn(w, numKeys, PullChunk)
}

// PullModelIn is PullModel in pulls of at most chunk bytes (at least one
// key each).
func PullModelIn(w *worker.Worker, numKeys, chunk int) ([]float32, error) {
	d := w.Width()
	model := make([]float32, numKeys*d)
	step := max(1, chunk/(4*max(d, 1)))
	keys := make([]uint64, 0, min(step, numKeys))
	for lo := 0; lo < numKeys; lo += step {
		hi := min(lo+step, numKeys)
		keys = keys[:0]
		for k := lo; k < hi; k++ {
			keys = append(keys, uint64(k))
		}
		if err := w.Pull(keys, model[lo*d:hi*d]).Wait(); err != nil {
			return nil, fmt.Errorf("pull keys %d..%d of the model: %w", lo, hi-1, err)
		}
	}
	return model, nil
}

// Shard returns the samples that placement p puts on machine w, in
// increasing order.
func Shard(p *placement.Placement, w int) []int32 {
	var s []int32
	for u, m := range p.Data {
		if int(m) == w {
			s = append(s, int32(u))
		}
	}
	return s
}

// LinkWords describes the emulated network of c: "links from a bandwidth
// matrix", "RATE links" or "unlimited links".
func (c Config) LinkWords() string {
	switch {
	case c.Bandwidth != nil:
		return "links from a bandwidth matrix"
	case c.LinkBandwidth > 0:
		return transport.RateWords(c.LinkBandwidth) + " links"
	}
	return "unlimited links"
}
