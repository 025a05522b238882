package clib

import (
	"fmt"

	"colo/launch"
	"colo/ps/clock"
	"colo/ps/node"
	"colo/ps/proto"
	"colo/ps/replica"
	"colo/ps/route"
	"colo/ps/sched"
	"colo/ps/update"
)

// JobKind is the name of the kind of job whose workers are programs
// linked with this client (colo run): the envelope {"kind": "torch",
// "job": Job}.
const JobKind = "torch"

// Job is a job whose workers are programs linked with this client: what
// the scheduler and the servers need, and what the workers check. The
// servers run Rule for every key; Route, when set, is the routing table
// of a placement (route.Table's MarshalBinary, base64 in the JSON).
type Job struct {
	// Consistency is bsp, async or bounded; Tau bounded's delay.
	Consistency string `json:"consistency"`
	Tau         int    `json:"tau,omitempty"`
	// Rule is the servers' update rule.
	Rule update.Config `json:"rule"`
	// Route is the placement's routing table; empty splits the key space
	// evenly.
	Route []byte `json:"route,omitempty"`
	// LinkBandwidth (a rate such as 100mbit) and BandwidthMatrix (a file)
	// emulate the links between machines, as colo train's flags.
	LinkBandwidth   string `json:"link_bandwidth,omitempty"`
	BandwidthMatrix string `json:"bandwidth_matrix,omitempty"`
	// Machines is the number of machines (a server and a worker each), or
	// Servers and Workers the numbers of each apart.
	Machines int `json:"machines,omitempty"`
	Servers  int `json:"servers,omitempty"`
	Workers  int `json:"workers,omitempty"`
	// Replicas, with servers apart, keeps each server's keys and rule
	// states on that many other servers: a server process that dies is
	// taken over by its backup, and the workers go on (sched.Config.
	// Replicas; the client's worker sends again what it had not been
	// answered). 0: none.
	Replicas int `json:"replicas,omitempty"`
}

// Survive returns what tells a launcher whether the job goes on without
// a server process that died (launch.Cluster.Survive), nil without
// replicas: it does when a backup whose own process lives took its keys
// over, as the scheduler decides (replica.Holders); otherwise the job
// ends with the failure. It counts only the copies of the start: see
// Survivor for the new ones made after a failover.
func (j Job) Survive() func(name string, err error) bool {
	survive, _ := j.Survivor()
	return survive
}

// Survivor returns Survive's function and the one that tells it each
// new copy of a server's keys the scheduler reports in place after a
// failover (launch.Cluster.BackedUp), so that a second failure of the
// process serving keys taken over is survived as the scheduler survives
// it; both nil without replicas.
func (j Job) Survivor() (survive func(name string, err error) bool, backedUp func(server, backup int)) {
	if j.Replicas == 0 || j.Servers == 0 {
		return nil, nil
	}
	h := replica.NewHolders(j.Servers, j.Replicas)
	return func(name string, err error) bool {
		p, ok := launch.ServerRank(name)
		if !ok {
			return false
		}
		out, b := h.Decide(p)
		if out != replica.FailOver {
			return false
		}
		h.FailedOver(p, b)
		return true
	}, h.BackedUp
}

// LocalFields returns the fields of a Job that each process may set for
// itself, left out of the digest (Digest) by which the scheduler refuses
// a server or worker whose job is not its own: the path of the bandwidth
// matrix's file, which each host may mount elsewhere (its rates, which
// time the links without changing what is computed, are the operator's
// to keep the same). Every other field must agree: the consistency
// model, the servers' rule and its hyper-parameters, the routing table,
// the link rate and the cluster's shape.
func LocalFields() []string { return []string{"bandwidth_matrix"} }

// Digest returns the launch.Digest of j without LocalFields, which the
// scheduler, the servers and the workers that read the job carry
// (kind.Kind, Open). The link rate is digested as its value in bytes a
// second (launch.DigestRate), as the training kinds keep it, not as
// written: 100mbit, 0.1gbit and 12.5mbps are one job, and so are an
// empty rate, 0 and unlimited. A rate that does not parse is an error
// naming the field.
func (j Job) Digest() (launch.Digest, error) {
	rate, err := launch.DigestRate(j.LinkBandwidth)
	if err != nil {
		return launch.Digest{}, fmt.Errorf("job of kind %s: link_bandwidth: %w", JobKind, err)
	}
	return launch.JobDigest(JobKind, digestJob{Job: j, LinkBandwidth: rate}, LocalFields()...)
}

// digestJob is a Job as digested: its link rate as a number of bytes a
// second, in the place of the rate as written (encoding/json takes the
// outer field of a name).
type digestJob struct {
	Job
	LinkBandwidth *float64 `json:"link_bandwidth,omitempty"`
}

// DefaultJob returns a BSP job whose servers add what they are pushed.
func DefaultJob() Job {
	r := update.DefaultConfig()
	return Job{Consistency: "bsp", Rule: r}
}

// Validate checks j; errors name the field.
func (j Job) Validate() error {
	mode, err := clock.ParseMode(j.Consistency)
	if err != nil {
		return fmt.Errorf("consistency: %w", err)
	}
	if err := (clock.Config{Mode: mode, Tau: j.Tau}).Validate(); err != nil {
		return err
	}
	if err := j.Rule.Validate(); err != nil {
		return fmt.Errorf("rule: %w", err)
	}
	if j.Rule.L1 != 0 || j.Rule.L2 != 0 || j.Rule.Name == "ftrl" {
		return fmt.Errorf("rule %s with l1 %v, l2 %v: the servers hold displacements from the initial values, so weight decay and FTRL are not available", j.Rule.Name, j.Rule.L1, j.Rule.L2)
	}
	if len(j.Route) > 0 {
		if _, err := route.Unmarshal(j.Route); err != nil {
			return fmt.Errorf("route: %w", err)
		}
	}
	if j.Machines < 0 || j.Servers < 0 || j.Workers < 0 || (j.Machines > 0) == (j.Servers > 0 || j.Workers > 0) || (j.Machines == 0 && (j.Servers == 0 || j.Workers == 0)) {
		return fmt.Errorf("machines %d, servers %d, workers %d: want machines, or servers and workers apart", j.Machines, j.Servers, j.Workers)
	}
	if j.Replicas < 0 || j.Replicas > 0 && j.Replicas >= j.Servers {
		return fmt.Errorf("replicas %d: want 0, or fewer than the servers apart from the workers (servers %d): a machine that dies loses its worker too", j.Replicas, j.Servers)
	}
	return nil
}

// DecodeJob reads a job: DefaultJob for the fields it omits, unknown
// fields refused, then validated.
func DecodeJob(raw []byte) (Job, error) {
	j := DefaultJob()
	if err := launch.DecodeJob(JobKind, raw, &j); err != nil {
		return j, err
	}
	if err := j.Validate(); err != nil {
		return j, fmt.Errorf("job of kind %s: %w", JobKind, err)
	}
	return j, nil
}

// ReadJobFile reads the job of the envelope at path, which must be of
// kind JobKind.
func ReadJobFile(path string) (Job, error) {
	env, err := launch.ReadEnvelopeFile(path)
	if err != nil {
		return Job{}, err
	}
	if env.Kind != JobKind {
		return Job{}, fmt.Errorf("%s: a job of kind %q, want %q (a job colo run writes)", path, env.Kind, JobKind)
	}
	j, err := DecodeJob(env.Job)
	if err != nil {
		return j, fmt.Errorf("%s: %w", path, err)
	}
	return j, nil
}

// Scheduler configures the scheduler of j: per-key lengths, the
// consistency model and the placement's table.
func (j Job) Scheduler(cfg *sched.Config) error {
	mode, err := clock.ParseMode(j.Consistency)
	if err != nil {
		return err
	}
	cfg.Width, cfg.Clock, cfg.Replicas = 0, clock.Config{Mode: mode, Tau: j.Tau}, j.Replicas
	if len(j.Route) > 0 {
		t, err := route.Unmarshal(j.Route)
		if err != nil {
			return fmt.Errorf("route: %w", err)
		}
		if cfg.NumServers > 0 && t.Servers() != cfg.NumServers {
			return fmt.Errorf("the placement's table has %d servers, the job %d", t.Servers(), cfg.NumServers)
		}
		cfg.Table, cfg.NumKeys = t, t.NumKeys()
	}
	return nil
}

// Rates returns the emulated rates of j's links: between machines, or
// with servers apart from workers, between every two nodes (node.Apart).
func (j Job) Rates() (node.Rates, error) {
	apart := j.Machines == 0
	n := j.Machines
	if apart {
		n = j.Servers + j.Workers
	}
	r, err := node.ParseRates(j.LinkBandwidth, j.BandwidthMatrix, n)
	if err != nil {
		return r, err
	}
	if apart {
		r.Host = node.Apart(j.Servers)
	}
	return r, nil
}

// ServerRule returns the servers' rule.
func (j Job) ServerRule() (update.Rule, error) { return update.New(j.Rule) }

// roleOf reads a role for a session: worker or machine.
func roleOf(s string) (proto.Role, error) {
	r, err := proto.ParseRole(s)
	if err != nil {
		return 0, err
	}
	if r != proto.RoleWorker && r != proto.RoleMachine {
		return 0, fmt.Errorf("role %s: a program linked with colo is a worker or a machine (a server and a worker)", r)
	}
	return r, nil
}
