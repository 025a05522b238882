package smoke

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"colo/launch"
	"colo/ps/clock"
	"colo/ps/node"
	"colo/ps/proto"
	"colo/ps/sched"
	"colo/ps/update"
	"colo/transport"
)

// LaunchConfig is a cluster of processes running the built-in smoke job
// (package app/smoke), what colo launch starts: a scheduler and Machines
// machines (a server and a worker each), or, when Servers or Workers is
// set, that many separate servers and workers.
type LaunchConfig struct {
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
	// Keys, Batch and Rounds are the smoke job's (Config).
	Keys   uint64 `json:"keys"`
	Batch  int    `json:"batch"`
	Rounds int    `json:"rounds"`
	// Token is the cluster token; empty for a random one (launch.NewToken). The
	// processes get it in their environment (COLO_TOKEN), never on their
	// command lines, where any user of the host could read it.
	Token string `json:"token,omitempty"`
	// TLS, when set, runs every link of the cluster over mutual TLS with
	// these files, which every process uses (see launch.TLSFlags).
	TLS launch.TLSFlags `json:"-"`
	// Heartbeat is the scheduler's heartbeat period; a node silent for
	// Timeout is dead.
	Heartbeat time.Duration `json:"heartbeat"`
	Timeout   time.Duration `json:"timeout"`
	// Bin is the colo binary to run; empty for this one.
	Bin string `json:"bin,omitempty"`
	// Starter places the processes; nil for launch.Loopback.
	Starter launch.Starter `json:"-"`
	// Flags, when set, returns extra flags of the colo process named name
	// ("scheduler", "machine 0", …), such as where it serves its metrics
	// (metrics.Cluster.Args). Log receives a line for each restart; nil
	// discards them.
	Flags func(name string) []string `json:"-"`
	Log   io.Writer                  `json:"-"`
	// Restarts is how many times the cluster is started again, whole and
	// from the start of the smoke job, when one of its processes fails
	// (is killed, exits or falls silent): the smoke job keeps no
	// checkpoint, its check being that every value is the exact sum of
	// every push since the start. 0 ends at the first failure. Sums that
	// are wrong are never retried.
	Restarts int `json:"restarts,omitempty"`
}

// DefaultLaunchConfig returns colo launch's defaults: 2 machines, BSP, 20
// rounds of 10k keys out of 100k, a heartbeat of 100 ms and a timeout of
// 2 s, on loopback.
func DefaultLaunchConfig() LaunchConfig {
	j := DefaultConfig()
	return LaunchConfig{
		Machines: 2, Consistency: "bsp", Keys: j.Keys, Batch: j.Batch, Rounds: j.Rounds,
		Heartbeat: 100 * time.Millisecond, Timeout: 2 * time.Second,
	}
}

// separate reports whether c runs separate servers and workers.
func (c LaunchConfig) separate() bool { return c.Servers > 0 || c.Workers > 0 }

// shape returns the numbers of servers and workers.
func (c LaunchConfig) shape() (servers, workers int) {
	if c.separate() {
		return c.Servers, c.Workers
	}
	return c.Machines, c.Machines
}

// Validate checks c; errors name the field (colo launch says its flag)
// and the bound. The machines, or the servers and workers together, are
// at most launch.MaxProcesses: colo launch starts each as a process of
// this host.
func (c LaunchConfig) Validate() error {
	switch {
	case c.Servers < 0 || c.Workers < 0:
		return fmt.Errorf("launch: Servers %d and Workers %d: want 0 (machines instead) or at least 1 each", c.Servers, c.Workers)
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
	what, n := fmt.Sprintf("Machines %d", c.Machines), []int{c.Machines}
	if c.separate() {
		what, n = fmt.Sprintf("Servers %d and Workers %d", c.Servers, c.Workers), []int{c.Servers, c.Workers}
	}
	if err := launch.CheckProcesses(what, n...); err != nil {
		return fmt.Errorf("launch: %w", err)
	}
	if _, err := clock.ParseMode(c.Consistency); err != nil {
		return fmt.Errorf("launch: Consistency: %w", err)
	}
	if err := (Config{Keys: c.Keys, Batch: c.Batch, Rounds: c.Rounds}).Validate(); err != nil {
		return fmt.Errorf("launch: %w", err)
	}
	return nil
}

// Summary is the outcome of Smoke.
type Summary struct {
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
	Inner        transport.LinkStats  `json:"inner"`
	Inter        transport.LinkStats  `json:"inter"`
	TotalSeconds float64              `json:"total_s"`
	Nodes        []launch.NodeSummary `json:"nodes"`
	Error        string               `json:"error,omitempty"`
	// Restarts lists the failed runs before this one (LaunchConfig.Restarts).
	Restarts []Restart `json:"restarts,omitempty"`
	// failed is set when a process failed (what a restart retries).
	failed bool
}

// Restart is one failed run of the smoke cluster that was started
// again.
type Restart struct {
	// Error is the failure that ended the run; Seconds the time from the
	// launch of the failed run to the failure noticed (its processes
	// stopped); RestartSeconds the time from then to the new cluster's
	// last node running.
	Error          string  `json:"error"`
	Seconds        float64 `json:"seconds"`
	RestartSeconds float64 `json:"restart_s"`
}

// Launch runs the cluster of cfg and gathers the nodes' summaries. It
// returns a summary whenever the processes ran, with the error in it when
// they failed, did not print a summary or no worker checked the sums; it
// returns no summary when cfg is invalid or the scheduler did not start.
// ctx done stops the cluster.
func Launch(ctx context.Context, cfg LaunchConfig) (*Summary, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	st := cfg.Starter
	if st == nil {
		st = launch.Loopback{}
	}
	if _, err := cfg.TLS.Load(); err != nil {
		return nil, fmt.Errorf("launch: %w", err)
	}
	token := cfg.Token
	if token == "" {
		token = launch.NewToken()
	}
	env, err := cfg.TLS.Env()
	if err != nil {
		return nil, fmt.Errorf("launch: %w", err)
	}
	job := DefaultJob()
	job.Keys, job.Batch, job.Rounds, job.Consistency, job.Tau = cfg.Keys, cfg.Batch, cfg.Rounds, cfg.Consistency, cfg.Tau
	envelope, err := launch.NewEnvelope(Kind{}.Name(), job)
	if err != nil {
		return nil, err
	}
	var restarts []Restart
	for {
		t0 := time.Now()
		sum, err := launchOnce(ctx, cfg, st, envelope, env, token)
		if sum != nil {
			sum.Restarts = restarts
			if n := len(restarts); n > 0 {
				restarts[n-1].RestartSeconds = sum.StartSeconds
			}
		}
		if err == nil || sum == nil || !sum.failed || len(restarts) >= cfg.Restarts || ctx.Err() != nil {
			return sum, err
		}
		restarts = append(restarts, Restart{Error: err.Error(), Seconds: time.Since(t0).Seconds()})
		if cfg.Log != nil {
			fmt.Fprintf(cfg.Log, "launch: restart %d of %d after %v: the smoke job from its start\n", len(restarts), cfg.Restarts, err)
		}
	}
}

// launchOnce runs the cluster of cfg once, on st.
func launchOnce(ctx context.Context, cfg LaunchConfig, st launch.Starter, env launch.Envelope, tlsEnv []string, token string) (*Summary, error) {
	ns, nw := cfg.shape()
	c := &launch.Cluster{Envelope: env, Bin: cfg.Bin, Starter: st, Token: token, Env: tlsEnv,
		Heartbeat: cfg.Heartbeat, Timeout: cfg.Timeout}
	if cfg.separate() {
		c.Servers, c.Workers = ns, nw
	} else {
		c.Machines = cfg.Machines
	}
	c.Flags = cfg.Flags
	t0 := time.Now()
	out, werr := c.Run(ctx)
	if werr != nil {
		werr = fmt.Errorf("launch: %w", werr)
	}
	if out == nil {
		return nil, werr
	}
	var errs []error
	if werr != nil {
		errs = append(errs, werr)
	}
	sum := &Summary{Servers: ns, Workers: nw, Consistency: cfg.Consistency, TotalSeconds: time.Since(t0).Seconds(), failed: werr != nil}
	if !cfg.separate() {
		sum.Machines = cfg.Machines
	}
	var lastStart int64
	// The servers first, then the workers, as colo launch has always
	// listed them.
	members := slices.Clone(out.Members)
	slices.SortStableFunc(members, func(a, b launch.MemberOutcome) int {
		return cmp.Compare(boolInt(a.Role != proto.RoleServer), boolInt(b.Role != proto.RoleServer))
	})
	for _, m := range members {
		if m.Report == nil {
			if werr == nil {
				errs = append(errs, fmt.Errorf("launch: %s: %w", m.Name, m.ReportErr))
			}
			continue
		}
		n := m.Report.Node
		var r *Result
		if len(m.Report.Report) > 0 {
			r = new(Result)
			if err := m.Report.Decode(r); err != nil {
				errs = append(errs, fmt.Errorf("launch: %s: bad report: %w", m.Name, err))
				continue
			}
			n.Smoke = m.Report.Report
		}
		sum.Nodes = append(sum.Nodes, n)
		lastStart = max(lastStart, n.StartedUnixNano)
		sum.Inner = sum.Inner.Add(n.Stats.Inner)
		sum.Inter = sum.Inter.Add(n.Stats.Inter)
		if s := r; s != nil {
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
	err := errors.Join(errs...)
	if err != nil {
		sum.Error = err.Error()
	}
	return sum, err
}

// Job is the job of the smoke kind (Kind): the smoke job's
// keys, batch, rounds and seed (Config), the consistency model, the
// servers' update rule and the emulated links. Idle workers only join.
type Job struct {
	Keys   uint64 `json:"keys"`
	Batch  int    `json:"batch"`
	Rounds int    `json:"rounds"`
	Seed   uint64 `json:"seed"`
	// Consistency is bsp, async or bounded, Tau the delay bound of
	// bounded.
	Consistency string `json:"consistency"`
	Tau         int    `json:"tau"`
	// Rule is the servers' update rule (sum: the checked sums).
	Rule update.Config `json:"rule"`
	// LinkBandwidth and BandwidthMatrix emulate the links, as colo node's
	// --link-bandwidth and --bandwidth-matrix.
	LinkBandwidth   string `json:"link_bandwidth,omitempty"`
	BandwidthMatrix string `json:"bandwidth_matrix,omitempty"`
	// Idle workers run no job: they join and wait for the end.
	Idle bool `json:"idle,omitempty"`
}

// DefaultJob returns colo node's smoke job: 20 rounds of 10k keys
// out of 100k, BSP, summing servers.
func DefaultJob() Job {
	s := DefaultConfig()
	return Job{Keys: s.Keys, Batch: s.Batch, Rounds: s.Rounds, Seed: s.Seed, Consistency: "bsp", Rule: update.DefaultConfig()}
}

// config returns the job's Config.
func (j Job) config() Config {
	return Config{Keys: j.Keys, Batch: j.Batch, Rounds: j.Rounds, Seed: j.Seed}
}

// Kind is the kind of the built-in smoke job (package app/smoke),
// what colo launch runs and what a node started by hand without a job
// file runs.
//
// A scheduler that read the job refuses a node whose job is not its own
// (LocalFields says what each may set for itself): a worker of other
// rounds, keys or seed would push increments that worker 0 does not
// count, and the check would fail far from its cause; a server of
// another rule would not sum. A scheduler configured by its flags alone
// has no job and checks none.
type Kind struct{}

// LocalFields returns the fields of the smoke job that each node may set
// for itself, left out of the digest that the scheduler checks
// (launch.JobDigest): the path of the bandwidth matrix's file, which each
// host may mount elsewhere (its rates, which time the links without
// changing the sums, are the operator's to keep the same). Every other
// field must agree, idle among them: worker 0 checks the sums of every
// worker's pushes.
func LocalFields() []string { return []string{"bandwidth_matrix"} }

// digest is the launch.Digest of j without LocalFields. The link rate is
// digested as its value in bytes a second (launch.DigestRate), as the
// torch kind's is, not as written: 100mbit, 0.1gbit and 12.5mbps are one
// job, and so are an empty rate, 0 and unlimited. A rate that does not
// parse is an error naming the field.
func (j Job) digest() (launch.Digest, error) {
	rate, err := launch.DigestRate(j.LinkBandwidth)
	if err != nil {
		return launch.Digest{}, fmt.Errorf("job of kind %s: link_bandwidth: %w", Kind{}.Name(), err)
	}
	return launch.JobDigest(Kind{}.Name(), digestJob{Job: j, LinkBandwidth: rate}, LocalFields()...)
}

// digestJob is a Job as digested: its link rate as a number of bytes a
// second, in the place of the rate as written (encoding/json takes the
// outer field of a name).
type digestJob struct {
	Job
	LinkBandwidth *float64 `json:"link_bandwidth,omitempty"`
}

// Name returns "smoke".
func (Kind) Name() string { return "smoke" }

// decode reads a smoke job: defaults for what it leaves out.
func (Kind) decode(raw json.RawMessage) (Job, error) {
	j := DefaultJob()
	if err := launch.DecodeJob("smoke", raw, &j); err != nil {
		return j, err
	}
	return j, nil
}

// Scheduler sets the key space and the consistency model; the numbers of
// servers and workers and the width are the command line's.
func (k Kind) Scheduler(raw json.RawMessage, cfg *sched.Config) error {
	j, err := k.decode(raw)
	if err != nil {
		return err
	}
	mode, err := clock.ParseMode(j.Consistency)
	if err != nil {
		return fmt.Errorf("job of kind smoke: consistency: %w", err)
	}
	cfg.NumKeys, cfg.Clock = j.Keys, clock.Config{Mode: mode, Tau: j.Tau}
	d, err := j.digest() // every member must run this job
	if err != nil {
		return err
	}
	cfg.JobDigest, cfg.JobFields = d.Sum, d.Fields
	return nil
}

// Open returns the member: its server's rule and links, and on a worker
// the smoke job, whose report is a Result.
func (k Kind) Open(_ context.Context, raw json.RawMessage, at launch.Position) (*launch.Member, error) {
	j, err := k.decode(raw)
	if err != nil {
		return nil, err
	}
	d, err := j.digest()
	if err != nil {
		return nil, err
	}
	m := &launch.Member{JobDigest: d.Sum, JobFields: d.Fields}
	if m.Rule, err = update.New(j.Rule); err != nil {
		return nil, fmt.Errorf("job of kind smoke: rule: %w", err)
	}
	// Servers apart from the workers (--role server and worker, as
	// dmlc's variables give them): server r and worker r are two
	// machines, not one, and the link between them is emulated too.
	apart := (at.Role == proto.RoleServer || at.Role == proto.RoleWorker) && at.Servers > 0
	machines := max(at.Servers, at.Workers)
	if apart {
		machines = at.Servers + at.Workers
	}
	if m.Rates, err = node.ParseRates(j.LinkBandwidth, j.BandwidthMatrix, machines); err != nil {
		return nil, fmt.Errorf("job of kind smoke: %w", err)
	}
	if apart {
		m.Rates.Host = node.Apart(at.Servers)
	}
	if j.Idle || at.Role == proto.RoleServer {
		return m, nil
	}
	cfg := j.config()
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("job of kind smoke: %w", err)
	}
	m.Run = func(ctx context.Context, n *node.Node, sum *launch.NodeSummary) (any, error) {
		r, err := cfg.Run(ctx, n.Worker(), n.Assignment().NumWorkers)
		if b, merr := json.Marshal(r); merr == nil {
			sum.Smoke = b
		}
		line := fmt.Sprintf("pushed %d keys in %.3f s: %.2fM keys/s", r.KeysPushed, r.Seconds, r.KeysPerSec/1e6)
		if r.Checked {
			line += "; every value is the exact sum"
		}
		sum.Lines = append(sum.Lines, line)
		return r, err
	}
	return m, nil
}

// WriteText writes the summary of colo launch for people.
func (s *Summary) WriteText(w io.Writer) error {
	var b strings.Builder
	shape := fmt.Sprintf("%d machines", s.Machines)
	if s.Machines == 0 {
		shape = fmt.Sprintf("%d servers, %d workers", s.Servers, s.Workers)
	}
	fmt.Fprintf(&b, "cluster of %s (%s) on loopback: all nodes running %.3f s after launch\n", shape, s.Consistency, s.StartSeconds)
	fmt.Fprintf(&b, "smoke job: %d keys pushed in %.3f s: %.2fM keys/s", s.KeysPushed, s.Seconds, s.KeysPerSec/1e6)
	if s.Checked {
		b.WriteString("; every value is the exact sum")
	}
	b.WriteString("\n")
	fmt.Fprintf(&b, "traffic: inner-machine %d messages, %s; inter-machine %d messages, %s (sent)\n",
		s.Inner.MsgsSent, launch.BytesText(s.Inner.BytesSent), s.Inter.MsgsSent, launch.BytesText(s.Inter.BytesSent))
	for i, r := range s.Restarts {
		fmt.Fprintf(&b, "restart %d: after %s (%.3f s into that run); the new cluster running %.3f s later\n", i+1, r.Error, r.Seconds, r.RestartSeconds)
	}
	fmt.Fprintf(&b, "total %.3f s\n", s.TotalSeconds)
	_, err := io.WriteString(w, b.String())
	return err
}

// boolInt is 1 for true, 0 for false.
func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
