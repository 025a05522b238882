// Package clib is colo's worker client for programs that are not written
// in Go: a session that joins a running cluster as a worker (or starts a
// one-machine cluster in process), named tables of rows laid out on the
// servers' key space, and pulls and pushes of rows by index into the
// caller's float32 arrays. cmd/libcolo exports it as a C library, and the
// Python package python/colo drives that library.
//
// # The servers' side
//
// A Python worker is an ordinary colo worker (package ps/node): routing by
// the scheduler's table (a placement's, or a uniform split), link keys and
// TLS, the consistency model (BSP, bounded delay, asynchronous) and the
// servers' update rule (package ps/update) are those of the cluster it
// joins. The job must have per-key lengths (scheduler width 0), so that
// tables of different widths share the servers. The servers run one rule
// for every key; a table that asks for a rule checks it against the
// cluster's, when the session knows it (Config.Rule, COLO_RULE).
//
// # Launchers
//
// Config.FromEnv reads colo run's environment (COLO_*), ps-lite's
// (DMLC_*), and, when neither places the process, mpirun's or srun's:
// then every rank is a machine whose server runs the program's rule
// (Config.Expect), and rank 0 hosts the scheduler in its own process.
//
// # Tables and keys
//
// A table is rows × dim float32 values; a dense table is one vector of
// Size values, cut into chunks of at most DenseChunk values (its rows).
// Workers declare the same tables in the same order (Declare checks it
// with an all-reduce): table t is the t-th. Row r of a table of R rows has
// key lo + r·stride + t, with stride = ⌊(2^64 − lo)/R⌋ rounded down to a
// multiple of 256: the rows of every table spread evenly over the key
// space, so a uniform split of the key space gives each server a
// contiguous block of each table's rows, keys stay sorted when rows are,
// and no two tables share a key (key − lo ≡ t mod 256). lo is the routing
// table's NumKeys: keys below it are the placement's parameters, and a
// table declared Placed uses them directly (key = row), so that its rows
// live where colo's partitioner put them, beside the samples that touch
// them; its rows past the placement's keys (features the placed data
// never has) get keys lo + (r − lo)·256 + t. One table of a session may
// be placed.
//
// # Values and initial values
//
// The servers start every key at zero and hold each row's displacement
// from its initial value, as app/embed does: a sparse table's rows start
// at a seeded function of (seed, table, row, column) that the client adds
// to what it pulls (Init), a dense table's at values the caller keeps.
// The update rules without weight decay (sum, SGD, momentum, AdaGrad,
// Adam) move a displacement exactly as they move a weight, so no initial
// value ever travels.
//
// # Cost
//
// A pull or push of n rows costs O(n) on the caller's thread (checking
// the rows, computing their keys) and the worker's own path (one message
// per server). Declare tells the servers each table's keys (a key family,
// server/family.go), so that a server finds a row's slot by arithmetic,
// O(1), instead of in a hash map. Pulled values land in the caller's
// array: a co-located server writes them there itself, once, and a
// remote server's answers are copied there in server order; missing
// rows (never pushed) are zero-filled in place, and a sparse table's
// initial values are added once the pull is waited for.
package clib

import (
	"cmp"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"colo/ps/clock"
	"colo/ps/node"
	"colo/ps/proto"
	"colo/ps/sched"
	"colo/ps/update"
	"colo/ps/worker"
	"colo/transport"
	"colo/transport/mem"
	"colo/transport/tcp"
)

// DenseChunk is the number of values per key of a dense table.
const DenseChunk = 16384

// MaxTables bounds the tables of a session (the low byte of a key).
const MaxTables = 256

// Config says how a session joins its cluster.
type Config struct {
	// Scheduler is the scheduler's host:port.
	Scheduler string `json:"scheduler,omitempty"`
	// Token is the cluster token.
	Token string `json:"token,omitempty"`
	// Rank asks for a worker rank; −1 for any.
	Rank int `json:"rank"`
	// NumServers and NumWorkers, when positive, are checked against the
	// scheduler's.
	NumServers int `json:"num_servers,omitempty"`
	NumWorkers int `json:"num_workers,omitempty"`
	// Host is the address the worker binds and advertises; empty for
	// 127.0.0.1.
	Host string `json:"host,omitempty"`
	// TLSCert, TLSKey and TLSCA run every link over mutual TLS (all three
	// or none), as colo node's --tls-cert, --tls-key and --tls-ca.
	TLSCert string `json:"tls_cert,omitempty"`
	TLSKey  string `json:"tls_key,omitempty"`
	TLSCA   string `json:"tls_ca,omitempty"`
	// Timeout bounds joining the cluster, in seconds; 0 takes
	// COLO_JOIN_TIMEOUT (FromEnv), or else DefaultTimeout.
	Timeout float64 `json:"timeout"`
	// Rule is the servers' update rule when the caller knows it (colo
	// run sets COLO_RULE); Declare checks tables' rules against it.
	Rule *update.Config `json:"rule,omitempty"`
	// Local, when not nil, starts a cluster in this process: a scheduler
	// and one machine (a server and this worker) on an in-memory network.
	Local *Local `json:"local,omitempty"`
	// Role is worker (the default) or machine: a server beside the
	// worker in this process, which runs the rule of JobFile's job.
	Role string `json:"role,omitempty"`
	// JobFile is the job's envelope (colo run writes it): the servers'
	// rule and the emulated links.
	JobFile string `json:"job_file,omitempty"`
	// Result is where Close writes the member's report (launch.Report's
	// JSON: kind, rank, the node's counters).
	Result string `json:"result,omitempty"`
	// Expect is the rule the program expects of the servers
	// (colo.init(optimizer=…)): Open fails when the servers' known rule
	// differs; under mpirun or srun, where each rank hosts a server, it
	// is the servers' rule.
	Expect *update.Config `json:"expect,omitempty"`
	// Consistency and Tau are the consistency model of a scheduler this
	// process hosts (rank 0 under mpirun or srun).
	Consistency string `json:"consistency,omitempty"`
	Tau         int    `json:"tau,omitempty"`
	// HostScheduler, set by FromEnv under mpirun or srun on rank 0, runs
	// the scheduler in this process at Scheduler.
	HostScheduler bool `json:"-"`
	// Launcher names the MPI or Slurm launcher FromEnv found, for errors.
	Launcher string `json:"-"`
}

// Local is a one-machine cluster in process.
type Local struct {
	// Consistency is bsp, async or bounded; Tau bounded's delay.
	Consistency string `json:"consistency"`
	Tau         int    `json:"tau"`
	// Rule is the server's update rule.
	Rule update.Config `json:"rule"`
}

// DefaultTimeout is the seconds a session waits to join the cluster
// when neither Config.Timeout nor COLO_JOIN_TIMEOUT says.
const DefaultTimeout = 60

// DefaultConfig returns a session that joins any rank of the cluster and
// waits up to COLO_JOIN_TIMEOUT, or DefaultTimeout, for it.
func DefaultConfig() Config { return Config{Rank: -1} }

// joinTimeout returns how long the session waits to join the cluster.
func (c Config) joinTimeout() time.Duration {
	return time.Duration(cmp.Or(c.Timeout, DefaultTimeout) * float64(time.Second))
}

// Validate checks c; errors name the field and the bound.
func (c Config) Validate() error {
	if c.Local == nil && c.Scheduler == "" {
		return errors.New("no scheduler: COLO_SCHEDULER (or DMLC_PS_ROOT_URI and DMLC_PS_ROOT_PORT) is not set; start the program with colo run, pass the scheduler's address, or start a local cluster")
	}
	if c.Rank < -1 || c.Rank >= proto.MaxRank {
		return fmt.Errorf("rank %d out of range [-1, %d)", c.Rank, proto.MaxRank)
	}
	if !(c.Timeout >= 0) || math.IsInf(c.Timeout, 0) {
		return fmt.Errorf("timeout %v s must be a positive number of seconds (0: COLO_JOIN_TIMEOUT, or %d s)", c.Timeout, DefaultTimeout)
	}
	tlsSet := 0
	for _, v := range []string{c.TLSCert, c.TLSKey, c.TLSCA} {
		if v != "" {
			tlsSet++
		}
	}
	if tlsSet != 0 && tlsSet != 3 {
		return errors.New("tls_cert, tls_key and tls_ca (COLO_TLS_CERT, COLO_TLS_KEY, COLO_TLS_CA) go together: all three or none")
	}
	if c.Rule != nil {
		if err := c.Rule.Validate(); err != nil {
			return fmt.Errorf("rule: %w", err)
		}
	}
	if c.Role != "" {
		if _, err := roleOf(c.Role); err != nil {
			return err
		}
		if r, _ := roleOf(c.Role); r == proto.RoleMachine && c.JobFile == "" && c.Local == nil && c.Expect == nil {
			if c.Launcher != "" {
				return fmt.Errorf("under %s every rank hosts a server, whose rule is the program's: pass colo.init(optimizer=…)", c.Launcher)
			}
			return errors.New("role machine runs a server, whose rule comes from the job: set job_file (COLO_JOB_FILE)")
		}
	}
	if c.Expect != nil {
		if err := c.Expect.Validate(); err != nil {
			return fmt.Errorf("expect: %w", err)
		}
	}
	if c.Consistency != "" {
		if _, err := clock.ParseMode(c.Consistency); err != nil {
			return fmt.Errorf("consistency: %w", err)
		}
	}
	if c.Local != nil {
		if _, err := clock.ParseMode(c.Local.Consistency); err != nil {
			return fmt.Errorf("local.consistency: %w", err)
		}
		if err := c.Local.Rule.Validate(); err != nil {
			return fmt.Errorf("local.rule: %w", err)
		}
	}
	return nil
}

// FromEnv fills the fields of c that are unset from the environment:
// COLO_SCHEDULER, COLO_TOKEN, COLO_RANK, COLO_NUM_SERVERS,
// COLO_NUM_WORKERS, COLO_HOST, COLO_TLS_CERT, COLO_TLS_KEY, COLO_TLS_CA,
// COLO_JOIN_TIMEOUT (a Go duration) and COLO_RULE (update.Config as
// JSON), or ps-lite's DMLC_PS_ROOT_URI and DMLC_PS_ROOT_PORT,
// DMLC_NUM_SERVER, DMLC_NUM_WORKER and DMLC_TASK_ID (the rank) when no
// COLO_SCHEDULER is set. An error names the variable and what it wanted.
func (c *Config) FromEnv(getenv func(string) string) error {
	str := func(dst *string, names ...string) {
		for _, n := range names {
			if *dst == "" && getenv(n) != "" {
				*dst = getenv(n)
			}
		}
	}
	num := func(dst *int, unset int, names ...string) error {
		for _, n := range names {
			v := getenv(n)
			if *dst != unset || v == "" {
				continue
			}
			i, err := strconv.Atoi(v)
			if err != nil || i < 0 {
				return fmt.Errorf("environment variable %s=%q: want a number ≥ 0", n, v)
			}
			*dst = i
		}
		return nil
	}
	str(&c.Scheduler, "COLO_SCHEDULER")
	str(&c.Role, "COLO_ROLE")
	str(&c.JobFile, "COLO_JOB_FILE")
	str(&c.Result, "COLO_RESULT")
	if c.Scheduler == "" && getenv("DMLC_PS_ROOT_URI") != "" {
		p := getenv("DMLC_PS_ROOT_PORT")
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return fmt.Errorf("environment variable DMLC_PS_ROOT_PORT=%q: want a port in [1, 65535]", p)
		}
		c.Scheduler = getenv("DMLC_PS_ROOT_URI") + ":" + p
	}
	if r := getenv("DMLC_ROLE"); r != "" && r != "worker" {
		return fmt.Errorf("environment variable DMLC_ROLE=%q: a Python program joins as a worker; start servers and the scheduler with colo node", r)
	}
	str(&c.Token, "COLO_TOKEN")
	str(&c.Host, "COLO_HOST", "DMLC_NODE_HOST")
	str(&c.TLSCert, "COLO_TLS_CERT")
	str(&c.TLSKey, "COLO_TLS_KEY")
	str(&c.TLSCA, "COLO_TLS_CA")
	if err := num(&c.Rank, -1, "COLO_RANK", "DMLC_TASK_ID"); err != nil {
		return err
	}
	if err := num(&c.NumServers, 0, "COLO_NUM_SERVERS", "DMLC_NUM_SERVER"); err != nil {
		return err
	}
	if err := num(&c.NumWorkers, 0, "COLO_NUM_WORKERS", "DMLC_NUM_WORKER"); err != nil {
		return err
	}
	if v := getenv("COLO_JOIN_TIMEOUT"); v != "" && c.Timeout == 0 {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return fmt.Errorf("environment variable COLO_JOIN_TIMEOUT=%q: want a positive duration such as 30s", v)
		}
		c.Timeout = d.Seconds()
	}
	if v := getenv("COLO_RULE"); v != "" && c.Rule == nil {
		r, err := ParseRule(v)
		if err != nil {
			return fmt.Errorf("environment variable COLO_RULE: %w", err)
		}
		c.Rule = &r
	}
	if c.Role == "" && getenv("DMLC_PS_ROOT_URI") == "" && (c.Scheduler == "" || getenv("COLO_SCHEDULER") != "") {
		return c.fromLauncher(getenv)
	}
	return nil
}

// DefaultSchedulerPort is the port of the scheduler that rank 0 of an
// MPI or Slurm job hosts when COLO_SCHEDULER names none.
const DefaultSchedulerPort = 7070

// fromLauncher fills c under mpirun (Open MPI, or any PMI launcher) or
// srun, when neither COLO_ROLE nor DMLC variables place the process:
// every rank is a machine (a server beside its worker), and rank 0 also
// hosts the scheduler, at COLO_SCHEDULER or, when every rank is on one
// host, 127.0.0.1:7070.
func (c *Config) fromLauncher(getenv func(string) string) error {
	for _, l := range []struct{ name, rank, size, local string }{
		{"Open MPI", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_SIZE"},
		{"PMI", "PMI_RANK", "PMI_SIZE", "MPI_LOCALNRANKS"},
		{"Slurm", "SLURM_PROCID", "SLURM_NTASKS", ""},
	} {
		r, sz := getenv(l.rank), getenv(l.size)
		if r == "" && sz == "" {
			continue
		}
		rank, err1 := strconv.Atoi(r)
		size, err2 := strconv.Atoi(sz)
		if err1 != nil || err2 != nil || size < 1 || rank < 0 || rank >= size {
			return fmt.Errorf("%s=%q, %s=%q: want a rank in [0, size) (%s sets them)", l.rank, r, l.size, sz, l.name)
		}
		oneHost := l.local != "" && getenv(l.local) == sz || l.local == "" && (getenv("SLURM_NNODES") == "1" || getenv("SLURM_STEP_NUM_NODES") == "1")
		if c.Scheduler == "" {
			if !oneHost {
				return fmt.Errorf("%s runs these %d ranks on several hosts: set COLO_SCHEDULER to rank 0's host:port (rank 0 hosts the scheduler there)", l.name, size)
			}
			c.Scheduler = fmt.Sprintf("127.0.0.1:%d", DefaultSchedulerPort)
		}
		c.Launcher, c.Rank, c.NumServers, c.NumWorkers, c.Role = l.name, rank, size, size, "machine"
		c.HostScheduler = rank == 0
		return nil
	}
	return nil
}

// Session is one worker's membership of a cluster. Its methods are safe
// for concurrent use.
type Session struct {
	n      *node.Node
	w      *worker.Worker
	rule   *update.Config
	local  *sched.Scheduler
	net    *mem.Network
	lo     uint64 // keys below are the placement's
	result string // the report's file
	start  time.Time

	pushed atomic.Bool // a push was sent (Load refuses)
	// unacked are the pushes sent and maybe not yet acknowledged, oldest
	// first (Save waits for them).
	unackedMu sync.Mutex
	unacked   []*worker.Future

	mu     sync.Mutex
	tables []*Table
	byName map[string]*Table
	closed bool
}

// Open joins the cluster cfg describes, or starts the local one, and
// returns once the job runs.
func Open(ctx context.Context, cfg Config) (*Session, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Session{byName: map[string]*Table{}, rule: cfg.Rule, result: cfg.Result}
	nc := node.DefaultConfig()
	nc.Role, nc.Rank, nc.Token = proto.RoleWorker, cfg.Rank, cfg.Token
	nc.NumServers, nc.NumWorkers, nc.Host = cfg.NumServers, cfg.NumWorkers, cfg.Host
	nc.JoinTimeout = cfg.joinTimeout()
	if cfg.Local != nil {
		if err := s.startLocal(cfg, &nc); err != nil {
			return nil, err
		}
	} else {
		var tc *tls.Config
		var err error
		if cfg.TLSCert != "" {
			if tc, err = tcp.LoadTLS(cfg.TLSCert, cfg.TLSKey, cfg.TLSCA); err != nil {
				return nil, err
			}
		}
		nc.Scheduler = cfg.Scheduler
		var tune func(*tcp.Config)
		if cfg.Role != "" {
			nc.Role, _ = roleOf(cfg.Role)
		}
		if cfg.JobFile != "" {
			job, err := ReadJobFile(cfg.JobFile)
			if err != nil {
				return nil, err
			}
			d, err := job.Digest() // the scheduler's, or it refuses this worker
			if err != nil {
				return nil, err
			}
			nc.JobDigest, nc.JobFields = d.Sum, d.Fields
			if s.rule == nil {
				r := job.Rule
				s.rule = &r
			}
			if nc.Role == proto.RoleMachine {
				if nc.Rule, err = job.ServerRule(); err != nil {
					return nil, err
				}
			}
			rates, err := job.Rates()
			if err != nil {
				return nil, err
			}
			tune = rates.Tune(nil)
		}
		if cfg.JobFile == "" && nc.Role == proto.RoleMachine && cfg.Expect != nil {
			// Under mpirun or srun: the rank's server runs the program's rule.
			r := *cfg.Expect
			s.rule = &r
			if nc.Rule, err = update.New(r); err != nil {
				return nil, err
			}
		}
		nc.Network = node.TCP{Host: cfg.Host, Token: cfg.Token, TLS: tc, Tune: tune}
		if cfg.HostScheduler {
			if err := s.hostScheduler(cfg, tc); err != nil {
				return nil, err
			}
		}
	}
	if cfg.Expect != nil && s.rule != nil && !sameRule(*cfg.Expect, *s.rule) {
		s.closeLocal()
		return nil, &SpecError{fmt.Sprintf("the program expects optimizer %s, but the servers run %s (%s)", ruleString(*cfg.Expect), ruleString(*s.rule), startWith(*cfg.Expect))}
	}
	n, err := node.Start(ctx, nc)
	if err != nil {
		s.closeLocal()
		return nil, err
	}
	s.n, s.w, s.start = n, n.Worker(), time.Now()
	if wd := n.Assignment().Job.Width; wd != 0 {
		s.Close()
		return nil, fmt.Errorf("the job at %s has width %d: tables of a Python worker need per-key lengths (start the scheduler with --width 0, as colo run does)", cfg.Scheduler, wd)
	}
	s.lo = n.Table().NumKeys()
	return s, nil
}

// startLocal starts the scheduler and the server of a local cluster; nc
// becomes the configuration of the machine that holds the worker.
func (s *Session) startLocal(cfg Config, nc *node.Config) error {
	mode, _ := clock.ParseMode(cfg.Local.Consistency)
	rule, err := update.New(cfg.Local.Rule)
	if err != nil {
		return err
	}
	r := cfg.Local.Rule
	s.rule = &r
	net, err := mem.New(mem.DefaultConfig())
	if err != nil {
		return err
	}
	sc := sched.DefaultConfig()
	sc.Width, sc.Clock = 0, clock.Config{Mode: mode, Tau: cfg.Local.Tau}
	if err := sc.Validate(); err != nil {
		net.Close()
		return err
	}
	ep, err := node.Mem{Net: net}.Listen(proto.SchedulerID, nil)
	if err != nil {
		net.Close()
		return err
	}
	sch, err := sched.Start(sc, ep, nil)
	if err != nil {
		ep.Close()
		net.Close()
		return err
	}
	s.local, s.net = sch, net
	nc.Role, nc.Rank, nc.Network, nc.Rule = proto.RoleMachine, 0, node.Mem{Net: net}, rule
	return nil
}

// hostScheduler starts the scheduler of an MPI or Slurm job in this
// process (rank 0), listening at cfg.Scheduler.
func (s *Session) hostScheduler(cfg Config, tc *tls.Config) error {
	mode, err := clock.ParseMode(cmp.Or(cfg.Consistency, "bsp"))
	if err != nil {
		return err
	}
	sc := sched.DefaultConfig()
	sc.NumServers, sc.NumWorkers, sc.Token, sc.Width = cfg.NumServers, cfg.NumWorkers, cfg.Token, 0
	sc.Clock = clock.Config{Mode: mode, Tau: cfg.Tau}
	sc.StartTimeout = cfg.joinTimeout()
	if err := sc.Validate(); err != nil {
		return err
	}
	tcfg := tcp.DefaultConfig()
	tcfg.ID, tcfg.Addr, tcfg.Token, tcfg.TLS = proto.SchedulerID, cfg.Scheduler, cfg.Token, tc
	tcfg.Identity = tcp.NewIdentity()
	tcfg.Keyed = func(peer transport.NodeID) bool { return !proto.IsProvisional(peer) }
	ep, err := tcp.Listen(tcfg)
	if err != nil {
		return fmt.Errorf("%s rank 0 hosts the scheduler at %s (COLO_SCHEDULER): %w", cfg.Launcher, cfg.Scheduler, err)
	}
	sch, err := sched.Start(sc, ep, nil)
	if err != nil {
		ep.Close()
		return err
	}
	s.local = sch
	return nil
}

func (s *Session) closeLocal() {
	if s.local != nil {
		s.local.Close()
		s.local = nil
	}
	if s.net != nil {
		s.net.Close()
		s.net = nil
	}
}

// Rank returns the worker's rank.
func (s *Session) Rank() int { return s.w.Rank() }

// Size returns the number of workers.
func (s *Session) Size() int { return s.n.Assignment().NumWorkers }

// Servers returns the number of servers.
func (s *Session) Servers() int { return s.w.Servers() }

// Consistency returns the job's consistency model: bsp, async or
// bounded:τ.
func (s *Session) Consistency() string { return s.w.Clock().Name() }

// Rule returns the servers' update rule when the session knows it.
func (s *Session) Rule() *update.Config { return s.rule }

// sent records push fut, which Save waits for: the done ones at the
// front are dropped (pushes are acknowledged about in the order sent).
func (s *Session) sent(fut *worker.Future) {
	s.pushed.Store(true)
	s.unackedMu.Lock()
	defer s.unackedMu.Unlock()
	i := 0
	for i < len(s.unacked) && isDone(s.unacked[i]) {
		i++
	}
	s.unacked = append(s.unacked[:0], s.unacked[i:]...)
	s.unacked = append(s.unacked, fut)
}

// flushPushes waits until every push this session sent is answered,
// and returns the first failure.
func (s *Session) flushPushes() error {
	s.unackedMu.Lock()
	fs := s.unacked
	s.unacked = nil
	s.unackedMu.Unlock()
	var first error
	for _, f := range fs {
		if err := f.Wait(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

func isDone(f *worker.Future) bool {
	select {
	case <-f.Done():
		return true
	default:
		return false
	}
}

// Barrier waits until every worker reached it.
func (s *Session) Barrier(ctx context.Context) error { return s.w.Barrier(ctx) }

// AllReduce replaces vals by their element-wise sum over the workers,
// added in rank order (the same bits on every worker).
func (s *Session) AllReduce(ctx context.Context, vals []float64) error {
	sum, err := s.w.AllReduce(ctx, vals)
	if err != nil {
		return err
	}
	if len(sum) != len(vals) {
		return fmt.Errorf("all-reduce of %d values answered %d", len(vals), len(sum))
	}
	copy(vals, sum)
	return nil
}

// Close reports the worker done and waits, up to timeout, for the job's
// end (every worker done); then it leaves. It returns the job's outcome.
func (s *Session) Close() error { return s.CloseWait(0) }

// CloseWait is Close with a bound on the wait for the other workers; 0
// waits as long as they train.
func (s *Session) CloseWait(timeout time.Duration) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	defer s.closeLocal()
	if s.n == nil {
		return nil
	}
	s.n.Finish(nil)
	var after <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		after = t.C
	}
	var err error
	select {
	case <-s.n.Done():
		err = s.n.Wait()
	case <-after:
		err = fmt.Errorf("the job did not end within %v of this worker's close: other workers still train", timeout)
	}
	s.n.Close()
	if s.result != "" {
		if werr := s.writeReport(err); werr != nil && err == nil {
			err = werr
		}
	}
	return err
}

// writeReport writes the member's report, as launch.Report spells it.
func (s *Session) writeReport(jobErr error) error {
	st := s.n.Stats()
	var nodes []string
	srv, wrk := s.n.IDs()
	for _, id := range []transport.NodeID{srv, wrk} {
		if id != 0 {
			nodes = append(nodes, proto.Name(id))
		}
	}
	role := "worker"
	if srv != 0 {
		role = "machine"
	}
	sum := map[string]any{"role": role, "nodes": nodes, "machine": st.Machine, "stats": st,
		"started_unix_ns": s.start.UnixNano()}
	if jobErr != nil {
		sum["error"] = jobErr.Error()
	}
	b, err := json.Marshal(map[string]any{"kind": JobKind, "rank": s.Rank(), "node": sum})
	if err != nil {
		return err
	}
	return os.WriteFile(s.result, append(b, '\n'), 0o600)
}

// ParseRule reads an update.Config from JSON, with update.DefaultConfig
// for the fields it omits.
func ParseRule(text string) (update.Config, error) {
	r := update.DefaultConfig()
	if err := decodeStrict([]byte(text), &r); err != nil {
		return r, fmt.Errorf("rule %s: %w", text, err)
	}
	return r, r.Validate()
}

// sameRule reports whether a and b update alike.
func sameRule(a, b update.Config) bool {
	if a.Name != b.Name {
		return false
	}
	f := func(x, y float64) bool { return float32(x) == float32(y) }
	switch a.Name {
	case "sum":
		return true
	case "sgd":
		return f(a.LR, b.LR) && f(a.L1, b.L1) && f(a.L2, b.L2)
	case "momentum":
		return f(a.LR, b.LR) && f(a.Momentum, b.Momentum) && f(a.L1, b.L1) && f(a.L2, b.L2)
	case "adagrad":
		return f(a.LR, b.LR) && f(a.Eps, b.Eps) && f(a.L1, b.L1) && f(a.L2, b.L2)
	case "adam":
		return f(a.LR, b.LR) && f(a.Eps, b.Eps) && a.Beta1 == b.Beta1 && a.Beta2 == b.Beta2 && f(a.L1, b.L1) && f(a.L2, b.L2)
	}
	return a == b
}

// ruleString names a rule for errors.
func ruleString(r update.Config) string {
	switch r.Name {
	case "sum":
		return "sum"
	case "adagrad":
		return fmt.Sprintf("adagrad(lr=%g, eps=%g)", r.LR, r.Eps)
	case "adam":
		return fmt.Sprintf("adam(lr=%g, betas=(%g, %g), eps=%g)", r.LR, r.Beta1, r.Beta2, r.Eps)
	case "momentum":
		return fmt.Sprintf("momentum(lr=%g, momentum=%g)", r.LR, r.Momentum)
	}
	return fmt.Sprintf("%s(lr=%g)", r.Name, r.LR)
}

// RunFlags returns the flags of colo run whose servers run r, such as
// "--rule adagrad --lr 0.5 --eps 1e-10": what the error of a program that
// expects r of servers running another rule tells its user to start. ok
// is false when colo run cannot start such servers: its --rule is sgd,
// momentum, adagrad, adam or sum, without L1 or L2 (which a job file's
// rule, or colo node's servers, can have).
func RunFlags(r update.Config) (flags string, ok bool) {
	switch {
	case r.L1 != 0 || r.L2 != 0:
		return "", false
	case r.Name == "sum":
		return "--rule sum", true
	case r.Name != "sgd" && r.Name != "momentum" && r.Name != "adagrad" && r.Name != "adam":
		return "", false
	}
	f := "--rule " + r.Name
	f += fmt.Sprintf(" --lr %g", r.LR)
	switch r.Name {
	case "adagrad":
		f += fmt.Sprintf(" --eps %g", r.Eps)
	case "adam":
		f += fmt.Sprintf(" --beta1 %g --beta2 %g --eps %g", r.Beta1, r.Beta2, r.Eps)
	case "momentum":
		f += fmt.Sprintf(" --momentum %g", r.Momentum)
	}
	return f, true
}

// startWith says how to start servers that run r, for the errors of a
// program or table that expects r of servers running another rule.
func startWith(r update.Config) string {
	if f, ok := RunFlags(r); ok {
		return "start them with it: colo run " + f
	}
	return "colo run cannot start servers with it: its --rule is sgd, momentum, adagrad, adam or sum, without L1 or L2"
}

// fingerprint returns a number that differs, most likely, between
// different specs: the all-reduce of Declare compares them.
func fingerprint(spec TableSpec) float64 {
	h := fnv.New32a()
	fmt.Fprintf(h, "%s\x00%d\x00%d\x00%d\x00%v\x00%v", spec.Name, spec.Rows, spec.Dim, spec.Size, spec.Dense, spec.Placed)
	return float64(h.Sum32() >> 4) // small enough for exact sums of many workers
}

// Getenv is os.Getenv, for FromEnv.
func Getenv(k string) string { return os.Getenv(k) }

// ErrClosed is returned by calls on a closed session.
var ErrClosed = errors.New("the session is closed (colo.shutdown was called)")
