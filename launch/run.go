package launch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"colo/internal/tempdir"
	"colo/ps/proto"
)

// Cluster is one job of a Kind on a cluster of processes, started by
// this process: a scheduler, then the job's machines (a server and a
// worker each), or its servers and workers apart, and its evaluators.
// Run writes the job's Envelope to a temporary directory, starts every
// process through a Supervisor (colo node --job-file, the cluster token
// in their environment, never on their command lines), replaces a failed
// member when Replace says so, waits for them all and reads every
// member's Report. It is the one place that spells colo node's command
// line: every other launcher (mpirun, srun, dmlc-submit, Kubernetes)
// starts the same `colo node --job-file F` with the environment
// docs/deploy.md gives.
//
//	env, _ := launch.NewEnvelope("smoke", job)
//	out, err := (&launch.Cluster{Envelope: env, Machines: 2}).Run(ctx)
//	for _, m := range out.Members { … m.Report.Decode(&r) … }
//
// A worker may be another program than colo (Worker): it is started with
// the environment of WorkerEnv and joins through the same scheduler.
type Cluster struct {
	// Envelope is the job every process reads (colo node --job-file).
	Envelope Envelope
	// Machines is the number of machines, when Servers and Workers are 0;
	// otherwise Servers servers run apart from Workers workers.
	Machines, Servers, Workers int
	// Evaluators is the number of evaluator nodes (0 or 1).
	Evaluators int
	// Heartbeat, Timeout, JoinTimeout and RecoverWait are the scheduler's
	// (colo node --heartbeat, --timeout, --join-timeout, --recover-wait);
	// 0 leaves colo node's default. JoinTimeout also bounds each node's
	// wait for the job to start (its --join-timeout, or for a Worker
	// command COLO_JOIN_TIMEOUT): how long the cluster may take to form.
	Heartbeat, Timeout, JoinTimeout, RecoverWait time.Duration
	// Bin is the colo binary; "" is this executable.
	Bin string
	// Starter places the processes on hosts (Hosts gives how many); nil
	// for Loopback.
	Starter Starter
	// Token is the cluster token; "" for a random one (NewToken).
	Token string
	// Env holds extra KEY=VALUE pairs of every process (TLSFlags.Env).
	Env []string
	// Flags, when set, returns extra flags of the colo process named name
	// ("scheduler", "machine 0", …), such as where it serves its metrics.
	Flags func(name string) []string
	// Worker, when set, runs every worker (every machine's, or the
	// workers apart) as this program instead of colo node.
	Worker *Command
	// Grace is the Supervisor's grace period; 0 keeps its default.
	Grace time.Duration
	// Replace, when set, is asked whether a member that died of a signal
	// while the job ran (or that the scheduler declared failed, hung or
	// stopped, and the supervisor killed: see Supervisor.ProcessOf)
	// should be started again in its rank (colo node
	// --recover; COLO_RECOVER=1 for a Worker program) instead of failing
	// the job; the scheduler must wait for it (RecoverWait). It is never
	// asked for an evaluator, and for the scheduler only with Standby.
	Replace func(name string, err error) bool
	// Standby starts the scheduler with a standby (colo node --standby,
	// StandbyFlags): when it dies of a signal while the job runs (and
	// Replace, if set, agrees for "scheduler"), a scheduler is started
	// again at its address with --takeover and its identity, and takes
	// the job over from the nodes' reports, with no restart and no
	// rollback (see docs/ps.md). One that hangs or stops (SIGSTOP) and
	// prints no line for two thirds of its timeout is killed, and taken
	// over alike (Supervisor.KillHung).
	Standby bool
	// Survive, when set, is asked whether the cluster goes on without a
	// server apart that died as for Replace and was not replaced: its
	// backup took its key ranges over (sched.Config.Replicas, which the
	// job's kind sets). Its MemberOutcome is then Survived.
	Survive func(name string, err error) bool
	// BackedUp, when set, is told each new copy of a server's ranges
	// that the scheduler reports in place after a failover, before
	// Survive or Replace is asked about a server that died after the
	// report (Supervisor.BackedUp; replica.Holders.BackedUp).
	BackedUp func(server, backup int)
	// OnStart, when set, is called with the scheduler's address once it
	// listens, before the members start.
	OnStart func(addr string)
}

// ServerRank returns the rank of the server apart a Cluster names name
// ("server 1"), false for another member.
func ServerRank(name string) (int, bool) {
	var p int
	if n, err := fmt.Sscanf(name, "server %d", &p); err != nil || n != 1 || p < 0 || name != fmt.Sprintf("server %d", p) {
		return 0, false
	}
	return p, true
}

// Command is a program that a Cluster runs as a worker.
type Command struct {
	// Path is the program; Args its arguments; Env extra KEY=VALUE pairs,
	// after WorkerEnv's.
	Path string
	Args []string
	Env  []string
	// Output, when set, returns where the standard output and standard
	// error of worker rank go as well (Spec.Output), such as the
	// launcher's own output with the rank as a prefix; a replacement of
	// the worker asks again.
	Output func(rank int) io.Writer
}

// MemberOutcome is how one member of a Cluster ended.
type MemberOutcome struct {
	// Name names the member in errors: "machine 0", "server 1", ….
	Name string
	Role proto.Role
	Rank int
	// Pid is the process id of its last process (a replacement's when it
	// was replaced).
	Pid int
	// Report is what it wrote when its job ended; nil, with ReportErr,
	// when it wrote none or an unreadable one.
	Report    *Report
	ReportErr error
	// Survived: it died, and the cluster went on without it
	// (Cluster.Survive); it has no report.
	Survived bool
}

// Outcome is what a Cluster's Run returns.
type Outcome struct {
	// Started is when the scheduler was started.
	Started time.Time
	// Members are the machines (or the workers apart), then the servers
	// apart, then the evaluators, in rank order.
	Members []MemberOutcome
}

// shape returns the numbers of servers and workers.
func (c *Cluster) shape() (servers, workers int) {
	if c.Servers > 0 || c.Workers > 0 {
		return c.Servers, c.Workers
	}
	return c.Machines, c.Machines
}

// apart reports whether the servers run apart from the workers.
func (c *Cluster) apart() bool { return c.Servers > 0 || c.Workers > 0 }

// Hosts returns the number of hosts the cluster uses: host 0 for the
// scheduler, then machine (or server) i on host 1+i, worker i apart on
// host 1+Servers+i, and the evaluators after them.
func (c *Cluster) Hosts() int {
	s, w := c.shape()
	if !c.apart() {
		return 1 + s + c.Evaluators
	}
	return 1 + s + w + c.Evaluators
}

// Validate checks the shape of c; errors name the field and the bound.
// Its members are at most MaxProcesses, the scheduler aside.
func (c *Cluster) Validate() error {
	switch {
	case c.Envelope.Kind == "" || len(c.Envelope.Job) == 0:
		return errors.New("launch: Cluster.Envelope has no kind or no job")
	case c.apart() && (c.Servers < 1 || c.Workers < 1):
		return fmt.Errorf("launch: Servers %d and Workers %d must both be at least 1", c.Servers, c.Workers)
	case !c.apart() && c.Machines < 1:
		return fmt.Errorf("launch: Machines %d, at least 1", c.Machines)
	case c.Evaluators < 0:
		return fmt.Errorf("launch: Evaluators %d is negative", c.Evaluators)
	case c.Worker != nil && c.Worker.Path == "":
		return errors.New("launch: Worker has no Path")
	}
	what := fmt.Sprintf("Machines %d", c.Machines)
	if c.apart() {
		what = fmt.Sprintf("Servers %d and Workers %d", c.Servers, c.Workers)
	}
	if c.Evaluators > 0 {
		what += fmt.Sprintf(" and Evaluators %d", c.Evaluators)
	}
	s, w := c.shape()
	if !c.apart() {
		w = 0
	}
	if err := CheckProcesses(what, s, w, c.Evaluators); err != nil {
		return fmt.Errorf("launch: %w", err)
	}
	return nil
}

// seat is one member to start.
type seat struct {
	name string
	role proto.Role
	rank int
	host int
}

// seats returns the members of c in the order of Outcome.Members.
func (c *Cluster) seats() []seat {
	s, w := c.shape()
	var out []seat
	if !c.apart() {
		for i := range s {
			out = append(out, seat{fmt.Sprintf("machine %d", i), proto.RoleMachine, i, 1 + i})
		}
	} else {
		for i := range w {
			out = append(out, seat{fmt.Sprintf("worker %d", i), proto.RoleWorker, i, 1 + s + i})
		}
		for i := range s {
			out = append(out, seat{fmt.Sprintf("server %d", i), proto.RoleServer, i, 1 + i})
		}
	}
	next := out[len(out)-1].host + 1
	if c.apart() {
		next = 1 + s + w
	}
	for i := range c.Evaluators {
		name := "evaluator"
		if c.Evaluators > 1 {
			name = fmt.Sprintf("evaluator %d", i)
		}
		out = append(out, seat{name, proto.RoleEvaluator, i, next + i})
	}
	return out
}

// WorkerEnv returns the environment of a Worker program of rank rank:
// the COLO_* variables colo node would read for the same flags (role,
// rank, scheduler, host, numbers of servers and workers, job file and
// where to write its report). The cluster token comes with it as
// COLO_TOKEN.
func WorkerEnv(rank int, scheduler, host, jobFile, result string, servers, workers int) []string {
	return []string{
		EnvName("role") + "=worker", EnvName("rank") + "=" + strconv.Itoa(rank),
		EnvName("scheduler") + "=" + scheduler, EnvName("host") + "=" + host,
		EnvName("num-servers") + "=" + strconv.Itoa(servers), EnvName("num-workers") + "=" + strconv.Itoa(workers),
		EnvName("job-file") + "=" + jobFile, EnvName("result") + "=" + result,
	}
}

// Run runs the cluster until its job ends and removes every file it made.
// It returns the outcome whenever the scheduler started, with the error of
// the first member to fail (a *Failure naming it, with the last lines of
// its standard error) when one did, as Supervisor.Wait returns it; the other processes are killed after
// the grace period, and none outlives Run. ctx done stops the cluster.
func (c *Cluster) Run(ctx context.Context) (_ *Outcome, err error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	st := c.Starter
	if st == nil {
		st = Loopback{}
	}
	dir, err := tempdir.Make("colo-job-")
	if err != nil {
		return nil, fmt.Errorf("launch: %w", err)
	}
	defer tempdir.Remove(dir, &err)
	jobFile := filepath.Join(dir, "job.json")
	if err := c.Envelope.WriteFile(jobFile); err != nil {
		return nil, fmt.Errorf("launch: %w", err)
	}
	token := c.Token
	if token == "" {
		token = NewToken()
	}
	env := append([]string{EnvName("token") + "=" + token}, c.Env...)
	flags := func(name string) []string {
		if c.Flags == nil {
			return nil
		}
		return c.Flags(name)
	}
	ns, nw := c.shape()
	sup := NewSupervisor(c.Bin, st)
	if c.Grace > 0 {
		sup.Grace = c.Grace
	}
	size := []string{"--num-servers", strconv.Itoa(ns), "--num-workers", strconv.Itoa(nw)}
	schedArgs := func(addr string) []string {
		args := append([]string{"node", "--role", "scheduler", "--scheduler", addr, "--job-file", jobFile}, size...)
		if c.Evaluators > 0 {
			args = append(args, "--num-evaluators", strconv.Itoa(c.Evaluators))
		}
		for _, d := range []struct {
			flag string
			d    time.Duration
		}{{"--heartbeat", c.Heartbeat}, {"--timeout", c.Timeout}, {"--join-timeout", c.JoinTimeout}, {"--recover-wait", c.RecoverWait}} {
			if d.d > 0 {
				args = append(args, d.flag, d.d.String())
			}
		}
		return append(args, flags("scheduler")...)
	}
	schedEnv, sargs := env, schedArgs(st.SchedulerAddr())
	if c.Standby {
		// The scheduler and the one that takes its job over share an
		// identity, which the nodes' links to the scheduler prove.
		schedEnv = append(slices.Clip(env), EnvName("scheduler-identity")+"="+NewSchedulerIdentity())
		sargs = append(sargs, "--standby")
	}
	out := &Outcome{Started: time.Now()}
	addr, err := sup.StartScheduler(ctx, Spec{Name: "scheduler", Host: 0, Env: schedEnv, Args: sargs})
	if err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("%w (%v)", err, context.Cause(ctx))
		}
		return nil, err
	}
	if c.OnStart != nil {
		c.OnStart(addr)
	}
	seats := c.seats()
	results := make([]string, len(seats))
	byName := make(map[string]int, len(seats))
	procs := make([]*Proc, len(seats))
	specOf := func(i int, recover bool) Spec {
		s := seats[i]
		results[i] = filepath.Join(dir, fmt.Sprintf("%s-%d.json", s.role, s.rank))
		spec := Spec{Name: s.name, Host: s.host, Env: env}
		if c.Worker != nil && (s.role == proto.RoleWorker || s.role == proto.RoleMachine) {
			w := *c.Worker
			spec.Bin, spec.Args = w.Path, slices.Clone(w.Args)
			spec.Env = slices.Concat(env, WorkerEnv(s.rank, addr, st.Addr(s.host), jobFile, results[i], ns, nw), w.Env)
			if c.JoinTimeout > 0 {
				spec.Env = append(spec.Env, EnvName("join-timeout")+"="+c.JoinTimeout.String())
			}
			if s.role == proto.RoleMachine {
				spec.Env = append(spec.Env, EnvName("role")+"=machine")
			}
			if recover {
				spec.Env = append(spec.Env, EnvName("recover")+"=1")
			}
			if w.Output != nil {
				spec.Output = w.Output(s.rank)
			}
			return spec
		}
		spec.Args = append([]string{"node", "--role", s.role.String(), "--scheduler", addr, "--rank", strconv.Itoa(s.rank),
			"--host", st.Addr(s.host), "--job-file", jobFile, "--result", results[i]}, size...)
		if c.JoinTimeout > 0 {
			spec.Args = append(spec.Args, "--join-timeout", c.JoinTimeout.String())
		}
		spec.Args = append(spec.Args, flags(s.name)...)
		if recover {
			spec.Args = append(spec.Args, "--recover")
			if c.Standby {
				// Its scheduler may be one taking the job over, not
				// listening yet.
				spec.Args = append(spec.Args, "--standby")
			}
		}
		return spec
	}
	// The scheduler names the nodes of a failed process; the seat that
	// runs them is a machine (server i and worker i), a worker or a
	// server apart.
	nodeSeat := make(map[string]string)
	for _, s := range seats {
		switch s.role {
		case proto.RoleMachine:
			nodeSeat[proto.RoleServer.String()+" "+strconv.Itoa(s.rank)] = s.name
			nodeSeat[proto.RoleWorker.String()+" "+strconv.Itoa(s.rank)] = s.name
		case proto.RoleServer, proto.RoleWorker:
			nodeSeat[s.name] = s.name
		}
	}
	sup.ProcessOf = func(nodes []string) string {
		for _, n := range nodes {
			if name, ok := nodeSeat[n]; ok {
				return name
			}
		}
		return ""
	}
	if c.Replace != nil || c.Standby {
		sup.Replace = func(p *Proc) (Spec, bool) {
			if p.Name() == "scheduler" {
				if !c.Standby || c.Replace != nil && !c.Replace(p.Name(), p.Err()) {
					return Spec{}, false
				}
				return Spec{Name: "scheduler", Host: 0, Env: schedEnv, Args: append(schedArgs(addr), "--takeover")}, true
			}
			if c.Replace == nil {
				return Spec{}, false
			}
			i, ok := byName[p.Name()]
			if !ok || seats[i].role == proto.RoleEvaluator || !c.Replace(p.Name(), p.Err()) {
				return Spec{}, false
			}
			return specOf(i, true), true
		}
	}
	sup.BackedUp = c.BackedUp
	// A scheduler with a standby that hangs is killed and taken over
	// like one that died.
	sup.KillHung = c.Standby
	if c.Survive != nil {
		sup.Survive = func(p *Proc) bool {
			i, ok := byName[p.Name()]
			return ok && seats[i].role == proto.RoleServer && c.Survive(p.Name(), p.Err())
		}
	}
	for i := range seats {
		byName[seats[i].name] = i
		procs[i] = sup.Start(ctx, specOf(i, false))
	}
	werr := sup.Wait(ctx)
	// The last process of each name: a replacement's, when there was one.
	for _, p := range sup.Procs() {
		if i, ok := byName[p.Name()]; ok {
			procs[i] = p
		}
	}
	for i, s := range seats {
		m := MemberOutcome{Name: s.name, Role: s.role, Rank: s.rank, Pid: procs[i].Pid(), Survived: procs[i].Survived()}
		m.Report, m.ReportErr = ReadReportFile(results[i])
		if m.Survived && m.Report == nil {
			m.ReportErr = fmt.Errorf("it died, and the job went on without it (its backup served its keys): %w", m.ReportErr)
		}
		out.Members = append(out.Members, m)
	}
	return out, werr
}
