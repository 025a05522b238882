// Package sched is the scheduler of colo's parameter server: membership,
// the address book and the routing table, barriers, and failure
// detection (seed 001 §4.3: "the scheduler issues … tasks to workers and
// monitors their progress"; seed 000 §3.2: it assigns data and
// parameters "before the actual training starts").
//
// # Protocol
//
// A node opens a provisional endpoint under a random provisional id and
// sends Register with the cluster token and its role. The scheduler
// checks the token and the cluster's size, assigns ranks and node ids and
// answers Assign, with the routing table and the job's settings (or
// Refuse, with the reason). The node then opens its
// real endpoint under the assigned id, starts its handlers and only then
// sends Ready; once every server and worker is ready, the scheduler sends
// everyone Start: the address book. No request can reach a node whose handlers are not running,
// which removes ps-lite's start-up race.
//
// While the job runs, the scheduler and every node exchange heartbeats.
// A node silent for Timeout, or whose link fails (a killed process closes
// its sockets and is noticed at once), is declared dead: the scheduler
// sends Abort naming it to every other node and ends with a
// *proto.NodeError. An evaluator (proto.RoleEvaluator) reads the model
// while the workers train; when every worker is done the scheduler sends
// the evaluators Trained, and the job ends once they are done too. A
// worker's or evaluator's Done with an error aborts the job the same
// way; when every worker (and evaluator) is done, the scheduler sends
// Shutdown and ends with nil. Barriers collect one Barrier message per member of a group
// and release them all together; each may carry float64 values, and the
// release carries their element-wise sum over the group (an all-reduce),
// added in ascending node id order so the result is the same bit for bit
// whatever order the members arrive in.
//
// # Recovery
//
// With Config.RecoverWait, the failure of a server, worker or machine
// while the job runs pauses the job instead of ending it: the failed
// process's ids (a machine's server and worker) leave the membership,
// the membership epoch advances, pending barriers are dropped and every
// other node gets Pause (proto.Pause). A node that registers with
// proto.Register.Recover takes the failed ids and machine index; once
// every failed id is replaced and ready, everyone gets Resume, the
// address book of the new epoch. Barrier arrivals of earlier epochs are
// ignored. A failure noticed while paused, within Timeout of the one
// that paused the job, is the same failure event: its process's ids are
// lost too, in the same epoch, and the job resumes once all are
// replaced. No replacement ready within RecoverWait, a failure noticed
// later while paused, a worker that had finished or that reports an
// error while paused end the job with an error naming the failed node. What
// the nodes roll back is theirs (package node, train.Loop).
//
// # Failover
//
// With Config.Replicas, a server apart from the workers that fails while
// the job runs is not replaced: its first live backup (package
// ps/replica) takes its ranges over in the same epoch, with no pause and
// no rollback, and every node is told twice with proto.Failover (see
// failover.go). Failovers lists them. The ranges left with fewer copies
// get new ones while the job runs (proto.Backup), so that a later
// failure of the process now serving them fails over too.
//
// # Takeover
//
// With Config.Standby a scheduler that dies is taken over by another
// started at its address with Config.Takeover: the nodes report what
// they know (proto.Rejoin), the new scheduler rebuilds the membership,
// the epoch and the pending barriers from the reports (Rebuild, a pure
// function) and the job goes on, with no pause and no rollback (see
// takeover.go).
//
// Core is the protocol as a pure state machine: messages, link failures
// and ticks in, messages out. Time is counted in ticks of Heartbeat, so
// the tests need no sleeps. Scheduler is its driver.
package sched

import (
	"bytes"
	"cmp"
	"crypto/subtle"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"colo/internal/ratelog"
	"colo/ps/clock"
	"colo/ps/proto"
	"colo/ps/replica"
	"colo/ps/route"
	"colo/transport"
)

// Config configures a scheduler.
type Config struct {
	// NumServers and NumWorkers are the size of the cluster. A machine
	// counts as one of each.
	NumServers, NumWorkers int
	// NumEvaluators is the number of evaluators (0 to
	// proto.MaxEvaluators): nodes that read the model while the workers
	// train, in no barrier and no clock. The job starts when they are
	// ready too, and ends when the workers are done, whatever the
	// evaluators do.
	NumEvaluators int
	// Token is the cluster token: a Register must carry its
	// proto.TokenDigest.
	Token string
	// JobDigest, when set, is the proto.JobDigest of the job the
	// scheduler read: a node whose Register carries another is refused,
	// naming both (one that carries none is not checked).
	JobDigest string
	// JobFields, when set, are the proto.JobFields of that job: a node
	// refused for its job whose Register carries its own is told the
	// fields in which the two differ.
	JobFields map[string]string
	// Table is the routing table; nil splits [0, NumKeys) (or the whole
	// key space when NumKeys is 0) evenly among the servers.
	Table *route.Table
	// NumKeys sizes the default table.
	NumKeys uint64
	// Width is the number of values per key, 0 for per-key lengths.
	Width int
	// Clock is the consistency model.
	Clock clock.Config
	// Heartbeat is the period of heartbeats and of the scheduler's tick.
	Heartbeat time.Duration
	// Timeout declares a silent node dead.
	Timeout time.Duration
	// StartTimeout bounds the time for every node to register and be
	// ready.
	StartTimeout time.Duration
	// RecoverWait, when positive, replaces a server, worker or machine
	// that fails while the job runs instead of ending the job: the
	// scheduler pauses the job and waits this long for a node that
	// registers with proto.Register.Recover for the failed rank (see
	// Recovery in the package documentation). 0 ends the job at the
	// first failure. An evaluator that fails ends the job.
	RecoverWait time.Duration
	// Replicas is the number of backups of each server's key ranges
	// (package ps/replica), at most NumServers − 1: a server that fails
	// while the job runs is taken over by its first live backup, without
	// a pause or a rollback (see Failover in the package documentation).
	// 0: none.
	Replicas int
	// Standby tells the nodes that a scheduler that dies is taken over
	// by another started at the same address with Takeover: a node that
	// loses the scheduler then reports to it (proto.Rejoin) for up to
	// Timeout instead of ending the job (see takeover.go).
	Standby bool
	// Takeover starts the scheduler as that other one: instead of
	// registrations it waits up to Timeout for every node's report of a
	// running job, rebuilds the membership and the barriers from them
	// (Rebuild) and goes on with the job. It implies Standby.
	Takeover bool
	// OnPause, when set, is called by the driver (Scheduler), from its
	// goroutine, each time the job pauses for a failed node, so that
	// whoever started that node can kill it, if it still runs (hung,
	// or cut off), and start its replacement. The Core ignores it.
	OnPause func(Pause)
	// OnBackedUp, when set, is called by the driver, from its
	// goroutine, each time a server holds a new copy of another's
	// ranges (BackedUp), so that a launcher deciding about server
	// processes that die knows it (replica.Holders.BackedUp). The Core
	// ignores it.
	OnBackedUp func(proto.Backup)
	// OnTick, when set, is called by the driver, from its goroutine,
	// after each tick is handled: a sign that the scheduler's loop runs,
	// which a launcher watching for a hung scheduler reads (launch
	// prints a line of life from it). The Core ignores it.
	OnTick func()
	// OnEnd, when set, is called by the driver, from its goroutine, once
	// the job ended, with its result (nil: every worker finished), before
	// the last words (Shutdown or Abort) are sent: a launcher that reads
	// it knows the job ended before any node can end on them. The Core
	// ignores it.
	OnEnd func(error)
}

// Pause is a pause of the job for the replacement of a failed process.
type Pause struct {
	// Epoch is the membership epoch the pause started.
	Epoch uint64
	// Cause is the failure that paused the job: the node declared
	// failed, and why (a lost link, no heartbeat for Timeout).
	Cause *proto.NodeError
	// Lost are the node ids of the failed process (a machine's server
	// and worker), in ascending order, which its replacement takes.
	Lost []transport.NodeID
}

// DefaultConfig returns a scheduler for one server and one worker with
// BSP, a 100 ms heartbeat and a 2 s timeout.
func DefaultConfig() Config {
	return Config{
		NumServers: 1, NumWorkers: 1, Width: 1,
		Clock:     clock.DefaultConfig(),
		Heartbeat: 100 * time.Millisecond, Timeout: 2 * time.Second, StartTimeout: 60 * time.Second,
	}
}

// MinHeartbeat is the shortest heartbeat: a scheduler that ticks faster
// spends its time on ticks, and a timeout of a few of them is shorter
// than a send takes.
const MinHeartbeat = time.Millisecond

// Validate checks c; errors name the field and the bound.
func (c Config) Validate() error {
	if c.NumServers < 1 || c.NumServers > route.MaxServers {
		return fmt.Errorf("sched: NumServers %d out of range [1, %d]", c.NumServers, route.MaxServers)
	}
	if c.NumWorkers < 1 || c.NumWorkers > proto.MaxRank {
		return fmt.Errorf("sched: NumWorkers %d out of range [1, %d]", c.NumWorkers, proto.MaxRank)
	}
	if c.NumEvaluators < 0 || c.NumEvaluators > proto.MaxEvaluators {
		return fmt.Errorf("sched: NumEvaluators %d out of range [0, %d]", c.NumEvaluators, proto.MaxEvaluators)
	}
	if c.Table != nil && c.Table.Servers() != c.NumServers {
		return fmt.Errorf("sched: Table has %d servers, NumServers is %d", c.Table.Servers(), c.NumServers)
	}
	if c.Width < 0 {
		return fmt.Errorf("sched: Width %d is negative", c.Width)
	}
	if err := c.Clock.Validate(); err != nil {
		return fmt.Errorf("sched: Clock: %w", err)
	}
	if c.Heartbeat < MinHeartbeat {
		return fmt.Errorf("sched: Heartbeat %v, at least %v", c.Heartbeat, MinHeartbeat)
	}
	if c.Timeout < 2*c.Heartbeat {
		return fmt.Errorf("sched: Timeout %v must be at least 2 heartbeats (%v)", c.Timeout, 2*c.Heartbeat)
	}
	if c.StartTimeout < c.Heartbeat {
		return fmt.Errorf("sched: StartTimeout %v must be at least one heartbeat (%v)", c.StartTimeout, c.Heartbeat)
	}
	if c.Replicas < 0 || c.Replicas > 0 && c.Replicas >= c.NumServers {
		return fmt.Errorf("sched: Replicas %d out of range [0, %d] (NumServers − 1)", c.Replicas, c.NumServers-1)
	}
	if c.RecoverWait < 0 || (c.RecoverWait > 0 && c.RecoverWait < c.Heartbeat) {
		return fmt.Errorf("sched: RecoverWait %v must be 0 (no recovery) or at least one heartbeat (%v)", c.RecoverWait, c.Heartbeat)
	}
	return nil
}

// Ticks returns the number of heartbeats in d, at least 1.
func (c Config) Ticks(d time.Duration) int64 {
	return max(1, int64((d+c.Heartbeat-1)/c.Heartbeat))
}

// Out is a message for node To; Addr, when set, is To's address, for the
// driver to record before sending.
type Out struct {
	To   transport.NodeID
	Addr string
	M    *transport.Message
}

// member is a registered node.
type member struct {
	id       transport.NodeID
	addr     string
	host     string
	machine  int
	ready    bool
	done     bool
	lastSeen int64
	key      []byte // Register.Key
	// replacement: the member took the place of a failed node
	// (replace), whose links may fail only now (see Down).
	replacement bool
	// moved marks a server whose ranges a backup took over (failover):
	// it runs on the backup's node, which holds no copy of the ranges
	// the server backed up. takingOver is set until the backup's new
	// endpoint is ready.
	moved, takingOver bool
}

// phase of the job.
type phase uint8

const (
	registering phase = iota
	running
	paused // a node failed; waiting for its replacement
	ended
	rejoining // a takeover: waiting for the nodes' reports
)

// registration remembers the answer to a provisional id, for retries.
type registration struct {
	addr   string
	assign proto.Assign
}

// Core is the scheduler's state machine. It is not safe for concurrent
// use.
type Core struct {
	cfg      Config
	job      proto.Job
	timeout  int64
	startBy  int64
	tick     int64
	phase    phase
	err      error
	trained  bool // the evaluators were told the workers are done
	members  map[transport.NodeID]*member
	regs     map[transport.NodeID]registration
	machines int
	barriers map[string]map[transport.NodeID]proto.Barrier
	logs     []string
	refusals ratelog.Limiter // of the refusals logged
	out      []Out
	// epoch counts the pauses; while paused, lost holds the failed
	// nodes' machine index by id, cause the failure and resumeBy the
	// tick by which the replacements must be ready.
	epoch    uint64
	lost     map[transport.NodeID]int
	cause    *proto.NodeError
	resumeBy int64
	// pausedAt is the tick the pause started: a failure noticed within
	// the timeout after it joins the pause (one failure event).
	pausedAt int64
	// replaced counts the nodes replaced.
	replaced int
	// pauses are the pauses since the last Pauses.
	pauses []Pause
	// failovers are the servers taken over by their backups;
	// failedBefore the failovers before this scheduler took the job
	// over (Rebuilt.Failovers): they number the next ones.
	failovers    []Failover
	failedBefore int
	// holders, copies, rebuilding and backedUp follow the replicated
	// ranges (failover.go); nil without Replicas.
	holders    []int
	copies     [][]int
	rebuilding map[int]rebuild
	backedUp   []proto.Backup
	// told are the new copies told to the driver (BackedUp), by server
	// and backup rank; held are, by failed server process, the copies
	// its replacement keeps beyond its chain's (recopy, Assign.Held).
	told map[[2]int]bool
	held map[int][]int
	// key is the scheduler's public key, nil when its endpoint has no
	// identity (SetKey); keys are the members' keys learnt since the last
	// Keys.
	key  []byte
	keys map[transport.NodeID][]byte
	// rel is the last release of each barrier group in the epoch: an
	// arrival at it again (a node that lost its release with the
	// scheduler that sent it) gets it again. takeover is the state of a
	// takeover (Config.Takeover).
	rel      map[string]proto.Barrier
	takeover *takeover
}

// NewCore returns a scheduler core waiting for registrations.
func NewCore(cfg Config) (*Core, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	tb := cfg.Table
	if tb == nil {
		var err error
		if tb, err = route.Uniform(cfg.NumServers, cfg.NumKeys); err != nil {
			return nil, err
		}
	}
	table, _ := tb.MarshalBinary()
	var holders []int
	var copies [][]int
	if cfg.Replicas > 0 {
		holders, copies = make([]int, cfg.NumServers), make([][]int, cfg.NumServers)
		for p := range holders {
			holders[p], copies[p] = p, replica.Chain(p, cfg.NumServers, cfg.Replicas, nil)
		}
	}
	c := &Core{
		holders: holders, copies: copies, rebuilding: make(map[int]rebuild), told: make(map[[2]int]bool), held: make(map[int][]int),
		cfg: cfg,
		job: proto.Job{Table: table, Width: cfg.Width, Mode: cfg.Clock.Mode.String(), Tau: cfg.Clock.Tau,
			Heartbeat: cfg.Heartbeat, Timeout: cfg.Timeout, Recover: cfg.RecoverWait > 0, Replicas: cfg.Replicas,
			Standby: cfg.Standby || cfg.Takeover},
		timeout:  cfg.Ticks(cfg.Timeout),
		startBy:  cfg.Ticks(cfg.StartTimeout),
		members:  make(map[transport.NodeID]*member),
		regs:     make(map[transport.NodeID]registration),
		barriers: make(map[string]map[transport.NodeID]proto.Barrier),
		rel:      make(map[string]proto.Barrier),
	}
	if cfg.Takeover {
		c.phase = rejoining
		c.takeover = &takeover{reports: make(map[transport.NodeID]proto.Rejoin), by: c.timeout}
	}
	return c, nil
}

// Ended reports whether the job ended, and how: nil after every worker
// finished, the failure otherwise.
func (c *Core) Ended() (bool, error) { return c.phase == ended, c.err }

// Running reports whether every node is ready and the job started (it
// may be paused since).
func (c *Core) Running() bool { return c.phase == running || c.phase == paused }

// Paused reports whether the job waits for the replacement of a failed
// node, and which: its id (the server's for a machine).
func (c *Core) Paused() (bool, transport.NodeID) {
	if c.phase != paused || c.cause == nil {
		return false, 0
	}
	return true, c.cause.ID
}

// Epoch returns the membership epoch: the number of pauses so far.
func (c *Core) Epoch() uint64 { return c.epoch }

// Replaced returns the number of failed nodes replaced so far.
func (c *Core) Replaced() int { return c.replaced }

// Pauses returns and clears the pauses of the job since the last call.
func (c *Core) Pauses() []Pause {
	p := c.pauses
	c.pauses = nil
	return p
}

// Logs returns and clears the core's log lines: refusals and failures.
func (c *Core) Logs() []string {
	l := c.logs
	c.logs = nil
	return l
}

// SetKey gives the scheduler's public key, when its endpoint
// authenticates members with link keys (tcp.Config.Identity): every
// registration must then carry the node's key (proto.Register.Key), which
// the address book publishes, and every Assign carries the scheduler's.
func (c *Core) SetKey(pub []byte) { c.key = bytes.Clone(pub) }

// Keys returns the public keys of members learnt since the last call, by
// node id: the driver gives them to its endpoint (tcp.Endpoint.SetPeerKey)
// before it sends what the same input produced.
func (c *Core) Keys() map[transport.NodeID][]byte {
	k := c.keys
	c.keys = nil
	return k
}

// learnKey records the key of member id.
func (c *Core) learnKey(id transport.NodeID, key []byte) {
	if len(key) == 0 {
		return
	}
	if c.keys == nil {
		c.keys = map[transport.NodeID][]byte{}
	}
	c.keys[id] = key
}

// Peers returns the address book: every registered node by id.
func (c *Core) Peers() []proto.Peer {
	var ps []proto.Peer
	for _, m := range c.members {
		ps = append(ps, proto.Peer{ID: m.id, Addr: m.addr, Machine: m.machine, Host: m.host, Key: m.key})
	}
	slices.SortFunc(ps, func(a, b proto.Peer) int { return cmp.Compare(a.ID, b.ID) })
	return ps
}

func (c *Core) logf(format string, args ...any) {
	c.logs = append(c.logs, fmt.Sprintf(format, args...))
}

// refusedf logs a refusal through the core's limiter: proto.RefusalBurst
// lines per proto.RefusalPeriod, the others counted and the count logged
// with the next refusal let through or at the first tick after the
// period.
func (c *Core) refusedf(format string, args ...any) {
	if c.refusals.Period == 0 {
		c.refusals = ratelog.Limiter{Burst: proto.RefusalBurst, Period: c.cfg.Ticks(proto.RefusalPeriod)}
	}
	ok, suppressed := c.refusals.Allow(c.tick)
	if suppressed > 0 {
		c.logf("suppressed %d more refusals in %v", suppressed, proto.RefusalPeriod)
	}
	if ok {
		c.logf(format, args...)
	}
}

// send queues a message, with the address of a member that has one.
func (c *Core) send(to transport.NodeID, addr string, cmd uint16, v any) {
	if mb := c.members[to]; addr == "" && mb != nil {
		addr = mb.addr
	}
	c.out = append(c.out, Out{To: to, Addr: addr, M: proto.Control(cmd, v)})
}

// Handle processes a message and returns the messages to send, valid
// until the next call.
func (c *Core) Handle(m *transport.Message) []Out {
	c.out = c.out[:0]
	if mb := c.members[m.Sender]; mb != nil && !c.stale(mb, m) {
		mb.lastSeen = c.tick
	}
	if m.Type != transport.TypeControl {
		c.logf("%s sent a data message to the scheduler", proto.Name(m.Sender))
		return c.out
	}
	if c.phase == rejoining && m.Cmd != proto.CmdRejoin && m.Cmd != proto.CmdRegister {
		c.hold(m)
		return c.out
	}
	switch m.Cmd {
	case proto.CmdRegister:
		var r proto.Register
		if err := proto.Decode(m, &r); err != nil {
			c.logf("%v", err)
			return c.out
		}
		c.register(m.Sender, r)
	case proto.CmdReady:
		var r proto.Ready
		if err := proto.Decode(m, &r); err != nil {
			c.logf("%v", err)
			return c.out
		}
		c.ready(m.Sender, r)
	case proto.CmdHeartbeat:
	case proto.CmdBarrier:
		var b proto.Barrier
		if err := proto.Decode(m, &b); err != nil {
			c.logf("%v", err)
			return c.out
		}
		c.barrier(m.Sender, b)
	case proto.CmdDone:
		var d proto.Done
		if err := proto.Decode(m, &d); err != nil {
			c.logf("%v", err)
			return c.out
		}
		c.done(m.Sender, d)
	case proto.CmdRejoin:
		var r proto.Rejoin
		if err := proto.Decode(m, &r); err != nil {
			c.logf("%v", err)
			return c.out
		}
		c.rejoin(m.Sender, r)
	case proto.CmdBackedUp:
		var b proto.Backup
		if err := proto.Decode(m, &b); err != nil {
			c.logf("%v", err)
			return c.out
		}
		c.backup(m.Sender, b)
	default:
		c.logf("%s sent unknown command %d", proto.Name(m.Sender), m.Cmd)
	}
	return c.out
}

// stale reports whether m is a heartbeat of another endpoint than the
// one member mb is at: a node replaced after a stall (SIGSTOP, a frozen
// machine) that wakes up and sends its own. Counted, it kept the
// replacement alive in the scheduler's eyes when the replacement fell
// silent, and its failure was never noticed.
func (c *Core) stale(mb *member, m *transport.Message) bool {
	if m.Type != transport.TypeControl || m.Cmd != proto.CmdHeartbeat || len(m.Body) == 0 || mb.addr == "" {
		return false
	}
	var h proto.Heartbeat
	return proto.Decode(m, &h) == nil && h.Addr != "" && h.Addr != mb.addr
}

// register answers a registration.
func (c *Core) register(from transport.NodeID, r proto.Register) {
	refuse := func(format string, args ...any) {
		reason := fmt.Sprintf(format, args...)
		c.refusedf("refused %s at %q: %s", r.Role, r.Addr, reason)
		c.send(from, r.Addr, proto.CmdRefuse, proto.Refuse{Reason: reason})
	}
	if !proto.IsProvisional(from) {
		refuse("registration from node %d, not a provisional id", from)
		return
	}
	if prev, ok := c.regs[from]; ok {
		if prev.addr == r.Addr {
			c.send(from, r.Addr, proto.CmdAssign, prev.assign)
		} else {
			refuse("provisional id %d is taken; retry with another", from)
		}
		return
	}
	if subtle.ConstantTimeCompare([]byte(r.Token), []byte(proto.TokenDigest(c.cfg.Token))) != 1 {
		refuse("wrong cluster token")
		return
	}
	switch {
	case c.key != nil && len(r.Key) == 0:
		refuse("no public key: this scheduler authenticates members with link keys (a colo node of another version?)")
		return
	case len(r.Key) != 0 && len(r.Key) != 32:
		refuse("public key of %d bytes, want 32 (X25519)", len(r.Key))
		return
	}
	if r.Job != "" && c.cfg.JobDigest != "" && r.Job != c.cfg.JobDigest {
		what := "its job is not the scheduler's"
		if in := jobDifference(r.JobFields, c.cfg.JobFields); in != "" {
			what = "its job differs from the scheduler's in " + in
		}
		refuse("%s (job digest %.12s, the scheduler's %.12s): every process of a cluster must read the same job file", what, r.Job, c.cfg.JobDigest)
		return
	}
	if r.Recover {
		c.replace(from, r, refuse)
		return
	}
	if c.phase != registering {
		refuse("the job has started")
		return
	}
	if (r.NumServers > 0 && r.NumServers != c.cfg.NumServers) || (r.NumWorkers > 0 && r.NumWorkers != c.cfg.NumWorkers) {
		refuse("node expects %d servers and %d workers, the scheduler %d and %d", r.NumServers, r.NumWorkers, c.cfg.NumServers, c.cfg.NumWorkers)
		return
	}
	wantServer := r.Role == proto.RoleServer || r.Role == proto.RoleMachine
	wantWorker := r.Role == proto.RoleWorker || r.Role == proto.RoleMachine
	if r.Role == proto.RoleEvaluator {
		e := -1
		for i := range c.cfg.NumEvaluators {
			if c.members[proto.EvaluatorID(i)] == nil && (r.Rank < 0 || r.Rank == i) {
				e = i
				break
			}
		}
		if e < 0 {
			refuse("no free evaluator rank (asked for %d of %d)", r.Rank, c.cfg.NumEvaluators)
			return
		}
		a := proto.Assign{Worker: proto.EvaluatorID(e), Machine: -1, NumServers: c.cfg.NumServers, NumWorkers: c.cfg.NumWorkers, Job: c.job, SchedulerKey: c.key}
		c.members[a.Worker] = &member{id: a.Worker, machine: -1, host: r.Host, lastSeen: c.tick, key: r.Key}
		c.learnKey(a.Worker, r.Key)
		c.regs[from] = registration{addr: r.Addr, assign: a}
		c.send(from, r.Addr, proto.CmdAssign, a)
		return
	}
	if !wantServer && !wantWorker {
		refuse("role %s cannot register", r.Role)
		return
	}
	free := func(id func(int) transport.NodeID, n, rank int) int {
		if rank >= 0 {
			if rank >= n || c.members[id(rank)] != nil {
				return -1
			}
			return rank
		}
		for i := range n {
			if c.members[id(i)] == nil {
				return i
			}
		}
		return -1
	}
	a := proto.Assign{Machine: c.machines, NumServers: c.cfg.NumServers, NumWorkers: c.cfg.NumWorkers, Job: c.job, SchedulerKey: c.key}
	if r.Role == proto.RoleMachine && r.Rank < 0 {
		// The lowest rank free on both sides, so that server i and
		// worker i share machine i.
		for i := range min(c.cfg.NumServers, c.cfg.NumWorkers) {
			if c.members[proto.ServerID(i)] == nil && c.members[proto.WorkerID(i)] == nil {
				r.Rank = i
				break
			}
		}
		if r.Rank < 0 {
			refuse("no free rank for a machine (%d servers, %d workers registered)", c.count(proto.RoleServer), c.count(proto.RoleWorker))
			return
		}
	}
	if wantServer {
		s := free(proto.ServerID, c.cfg.NumServers, r.Rank)
		if s < 0 {
			refuse("%s", c.rankRefusal("server", proto.ServerID, c.cfg.NumServers, r.Rank))
			return
		}
		a.Server = proto.ServerID(s)
	}
	if wantWorker {
		w := free(proto.WorkerID, c.cfg.NumWorkers, r.Rank)
		if w < 0 {
			refuse("%s", c.rankRefusal("worker", proto.WorkerID, c.cfg.NumWorkers, r.Rank))
			return
		}
		a.Worker = proto.WorkerID(w)
	}
	c.machines++
	for _, id := range []transport.NodeID{a.Server, a.Worker} {
		if id != 0 {
			c.members[id] = &member{id: id, machine: a.Machine, host: r.Host, lastSeen: c.tick, key: r.Key}
			c.learnKey(id, r.Key)
		}
	}
	c.regs[from] = registration{addr: r.Addr, assign: a}
	c.send(from, r.Addr, proto.CmdAssign, a)
}

// maxJobFields is how many of the fields in which a node's job differs
// from the scheduler's a refusal names.
const maxJobFields = 6

// jobDifference names the fields in which a node's job (its JobFields)
// differs from the scheduler's ("config.rule.lr and config.seed"); ""
// when either side has none or they name none.
func jobDifference(node, sched map[string]string) string {
	if len(node) == 0 || len(sched) == 0 {
		return ""
	}
	diff := proto.JobFieldsDiffer(node, sched)
	if len(diff) == 0 {
		return ""
	}
	more := ""
	if len(diff) > maxJobFields {
		more = fmt.Sprintf(" and %d more", len(diff)-maxJobFields)
		diff = diff[:maxJobFields]
	} else if n := len(diff); n > 1 {
		more = " and " + diff[n-1]
		diff = diff[:n-1]
	}
	return strings.Join(diff, ", ") + more
}

// rankRefusal says why a node that asked for rank of the n ranks of a
// role (numbered by id) gets none: the rank is out of range, or taken
// (naming the address the holder registered from), or, asking for any
// rank, every one is taken.
func (c *Core) rankRefusal(role string, id func(int) transport.NodeID, n, rank int) string {
	switch {
	case rank >= n && n == 0:
		return fmt.Sprintf("%s rank %d: the job has no %ss", role, rank, role)
	case rank >= n && n == 1:
		return fmt.Sprintf("%s rank %d is out of range: the job has 1 %s, rank 0", role, rank, role)
	case rank >= n:
		return fmt.Sprintf("%s rank %d is out of range: the job has %d %ss, ranks 0 to %d", role, rank, n, role, n-1)
	case rank >= 0:
		by := ""
		for _, reg := range c.regs {
			if reg.assign.Server == id(rank) || reg.assign.Worker == id(rank) {
				by = fmt.Sprintf(" by the node that registered from %q", reg.addr)
			}
		}
		return fmt.Sprintf("%s rank %d is taken%s: give every node a rank of its own (--rank)", role, rank, by)
	}
	return fmt.Sprintf("every %s rank is taken (%d of %d): a node too many", role, n, n)
}

// count returns the number of registered members of a role.
func (c *Core) count(role proto.Role) int {
	n := 0
	for id := range c.members {
		if r, _ := proto.Identify(id); r == role {
			n++
		}
	}
	return n
}

// ready records a node's readiness and starts the job when all are.
func (c *Core) ready(from transport.NodeID, r proto.Ready) {
	mb := c.members[from]
	if mb == nil {
		c.logf("Ready from unregistered node %d at %s", from, r.Addr)
		return
	}
	mb.ready, mb.addr = true, r.Addr
	if mb.takingOver {
		c.tookOver(from, mb)
		return
	}
	if (c.phase != registering && c.phase != paused) || len(c.members) < c.cfg.NumServers+c.cfg.NumWorkers+c.cfg.NumEvaluators {
		return
	}
	for _, m := range c.members {
		if !m.ready {
			return
		}
	}
	if c.phase == paused {
		c.resume()
		return
	}
	c.phase = running
	start := proto.Start{Peers: c.Peers()}
	for _, p := range start.Peers {
		c.send(p.ID, p.Addr, proto.CmdStart, start)
	}
}

// barrier records an arrival and releases the group when complete, with
// the element-wise sum of the members' values added in ascending node id
// order, so the floating-point result does not depend on arrival order.
// Members that sent different numbers of values fail the job.
func (c *Core) barrier(from transport.NodeID, b proto.Barrier) {
	role, _ := proto.Identify(from)
	if !proto.InGroup(b.Group, role) || c.members[from] == nil {
		c.logf("%s cannot join barrier group %q", proto.Name(from), b.Group)
		return
	}
	if b.Epoch != c.epoch || c.phase == paused {
		// An arrival from before a pause: its caller failed with
		// proto.ErrPaused, and the group starts again after the
		// resume.
		return
	}
	if r, ok := c.rel[b.Group]; ok && b.Seq <= r.Seq {
		// Released already: an arrival again (Rejoin), whose release
		// was lost with the scheduler that sent it, gets it again.
		if b.Seq == r.Seq {
			c.send(from, "", proto.CmdRelease, r)
		}
		return
	}
	g := c.barriers[b.Group]
	if g == nil {
		g = make(map[transport.NodeID]proto.Barrier)
		c.barriers[b.Group] = g
	}
	g[from] = b
	var members []transport.NodeID
	for id := range c.members {
		r, _ := proto.Identify(id)
		if proto.InGroup(b.Group, r) {
			members = append(members, id)
		}
	}
	for _, id := range members {
		if a, ok := g[id]; !ok || a.Seq != b.Seq {
			return
		}
	}
	delete(c.barriers, b.Group)
	slices.Sort(members)
	first := g[members[0]]
	sum := first.Values(nil)
	for _, id := range members[1:] {
		a := g[id]
		if len(a.Bits) != len(sum) {
			c.abort(id, fmt.Errorf("all-reduce %d of group %q: %s sent %d values, %s sent %d",
				b.Seq, b.Group, proto.Name(id), len(a.Bits), proto.Name(members[0]), len(sum)), true)
			return
		}
		for i, x := range a.Bits {
			sum[i] += math.Float64frombits(x)
		}
	}
	rel := proto.Barrier{Group: b.Group, Seq: b.Seq, Epoch: c.epoch}
	rel.SetValues(sum)
	c.rel[b.Group] = rel
	for _, id := range members {
		c.send(id, "", proto.CmdRelease, rel)
	}
}

// done records a worker's or an evaluator's end.
func (c *Core) done(from transport.NodeID, d proto.Done) {
	mb := c.members[from]
	if role, _ := proto.Identify(from); mb == nil || (role != proto.RoleWorker && role != proto.RoleEvaluator) {
		c.logf("Done from %s, not a worker", proto.Name(from))
		return
	}
	if d.Err != "" {
		if c.phase == paused {
			// A worker that cannot wait for the replacement (its
			// application does not roll back): the pause's failure
			// ends the job.
			c.abort(c.cause.ID, fmt.Errorf("%w; %s could not wait for a replacement: %s", c.cause.Err, proto.Name(from), d.Err), false)
			return
		}
		// The node is alive and reports an error: nothing to replace.
		c.abort(from, errors.New(d.Err), false)
		return
	}
	mb.done = true
	if c.phase == paused {
		c.abort(c.cause.ID, fmt.Errorf("%w; %s finished meanwhile, and its work cannot be rolled back to the checkpoint the others resume from", c.cause.Err, proto.Name(from)), false)
		return
	}
	if c.phase != running {
		return
	}
	evaluating := false
	for id, m := range c.members {
		switch r, _ := proto.Identify(id); {
		case r == proto.RoleWorker && !m.done:
			return
		case r == proto.RoleEvaluator && !m.done:
			evaluating = true
		}
	}
	if evaluating {
		// The workers are done: the evaluators score the final model,
		// and the job ends when they are done too.
		if !c.trained {
			c.trained = true
			for _, p := range c.Peers() {
				if r, _ := proto.Identify(p.ID); r == proto.RoleEvaluator && !c.members[p.ID].done {
					c.send(p.ID, "", proto.CmdTrained, nil)
				}
			}
		}
		return
	}
	c.phase = ended
	for _, p := range c.Peers() {
		c.send(p.ID, "", proto.CmdShutdown, nil)
	}
}

// fail ends the job with the failure of node id, telling every other
// ready node; or, when the job recovers, pauses it to wait for a
// replacement (pause).
func (c *Core) fail(id transport.NodeID, cause error) {
	if c.failover(id, cause) {
		return
	}
	if role, _ := proto.Identify(id); c.job.Recover && (c.phase == running || c.phase == paused) && (role == proto.RoleServer || role == proto.RoleWorker) {
		c.pause(id, cause)
		return
	}
	c.abort(id, cause, false)
}

// pause records the failure of node id and pauses the job: the nodes of
// id's process (a machine's server and worker) leave the membership,
// the epoch advances, pending barriers are dropped and every other
// ready node is told with Pause. A failure while paused joins the pause
// when noticed within the timeout of the one that started it (one
// failure event: no new epoch, no second Pause); noticed later, or after
// a worker finished, it ends the job.
func (c *Core) pause(id transport.NodeID, cause error) {
	mb := c.members[id]
	if mb == nil {
		return
	}
	joining := c.phase == paused
	if joining && c.tick-c.pausedAt > c.timeout {
		c.abort(id, fmt.Errorf("%w, while the job waited for the replacement of %s", cause, proto.Name(c.cause.ID)), false)
		return
	}
	for wid, m := range c.members {
		if r, _ := proto.Identify(wid); r == proto.RoleWorker && m.done {
			c.abort(id, fmt.Errorf("%w, after %s finished: its work cannot be rolled back", cause, proto.Name(wid)), false)
			return
		}
	}
	if !joining && c.epoch >= proto.MaxEpoch {
		c.abort(id, fmt.Errorf("%w, after %d replacements, the most a job makes", cause, c.epoch), false)
		return
	}
	ne := &proto.NodeError{ID: id, Addr: mb.addr, Err: cause}
	if !joining {
		c.phase, c.epoch = paused, c.epoch+1
		c.cause, c.pausedAt = ne, c.tick
		c.lost = make(map[transport.NodeID]int)
	}
	c.resumeBy = c.tick + c.cfg.Ticks(c.cfg.RecoverWait)
	var gone []transport.NodeID
	for mid, m := range c.members {
		if m.machine == mb.machine {
			gone = append(gone, mid)
		}
	}
	slices.Sort(gone)
	for _, g := range gone {
		c.lost[g] = c.members[g].machine
		if r, q := proto.Identify(g); r == proto.RoleServer && !c.members[g].moved {
			c.recopy(q)
		}
		delete(c.members, g)
	}
	c.pauses = append(c.pauses, Pause{Epoch: c.epoch, Cause: ne, Lost: gone})
	if joining {
		// Noticed within one detection window of the failure that
		// paused the job: the same event (two processes of a host that
		// died together), replaced in the same pause. The survivors
		// were told already.
		c.logf("%v: in the pause of epoch %d (the failure of %s, %v before: one event), waiting up to %v for the replacement of %s too",
			ne, c.epoch, proto.Name(c.cause.ID), time.Duration(c.tick-c.pausedAt)*c.cfg.Heartbeat, c.cfg.RecoverWait, names(gone))
		return
	}
	clear(c.barriers)
	clear(c.rel)
	c.logf("%v: job paused (epoch %d), waiting up to %v for the replacement of %s", c.cause, c.epoch, c.cfg.RecoverWait, names(gone))
	p := proto.Pause{Node: id, Addr: mb.addr, Reason: cause.Error(), Epoch: c.epoch, Peers: gone}
	for _, q := range c.Peers() {
		if c.members[q.ID].ready {
			c.send(q.ID, "", proto.CmdPause, p)
		}
	}
}

// names joins the names of ids with "and".
func names(ids []transport.NodeID) string {
	var s []string
	for _, id := range ids {
		s = append(s, proto.Name(id))
	}
	return strings.Join(s, " and ")
}

// replace answers the registration of a node that asks to replace a
// failed one (proto.Register.Recover): it takes the failed node's ids
// and machine. A replacement for a rank whose node the scheduler still
// counts as alive declares that node failed first (whoever restarts a
// node knows its old process is gone before the scheduler may).
func (c *Core) replace(from transport.NodeID, r proto.Register, refuse func(format string, args ...any)) {
	switch {
	case !c.job.Recover:
		refuse("this job replaces no failed node (the scheduler has no recovery wait)")
		return
	case c.phase == registering:
		refuse("nothing to replace: the job has not started")
		return
	case c.phase == ended:
		refuse("the job has ended")
		return
	}
	var ids []transport.NodeID
	rank := r.Rank
	switch r.Role {
	case proto.RoleServer, proto.RoleWorker, proto.RoleMachine:
	default:
		refuse("role %s cannot replace a failed node", r.Role)
		return
	}
	if rank < 0 {
		// The lowest failed rank of the role.
		for _, id := range slices.Sorted(maps.Keys(c.lost)) {
			role, k := proto.Identify(id)
			if role == proto.RoleServer && r.Role != proto.RoleWorker || role == proto.RoleWorker && r.Role == proto.RoleWorker {
				rank = k
				break
			}
		}
		if rank < 0 {
			refuse("no failed %s to replace", r.Role)
			return
		}
	}
	if (r.Role != proto.RoleWorker && rank >= c.cfg.NumServers) || (r.Role != proto.RoleServer && rank >= c.cfg.NumWorkers) {
		refuse("no %s rank %d to replace (%d servers, %d workers)", r.Role, rank, c.cfg.NumServers, c.cfg.NumWorkers)
		return
	}
	if r.Role != proto.RoleWorker {
		ids = append(ids, proto.ServerID(rank))
	}
	if r.Role != proto.RoleServer {
		ids = append(ids, proto.WorkerID(rank))
	}
	if c.phase == rejoining {
		// A node that died with the scheduler: the takeover goes on
		// without it, as a pause for its replacement.
		taken, err := c.takeOverWithout(from, r, ids)
		if err != nil {
			refuse("%v", err)
			return
		}
		if !taken {
			return // answered once the reports show that it can be
		}
	}
	if c.phase == running {
		if c.members[ids[0]] == nil {
			refuse("%s is not a member of the job", proto.Name(ids[0]))
			return
		}
		c.pause(ids[0], fmt.Errorf("replaced by a new node at %s", r.Addr))
		if c.phase != paused {
			return
		}
	}
	machine := -1
	for _, id := range ids {
		m, ok := c.lost[id]
		if !ok {
			refuse("%s has not failed: the job waits for the replacement of %s", proto.Name(id), names(slices.Sorted(maps.Keys(c.lost))))
			return
		}
		if machine >= 0 && m != machine {
			refuse("%s and %s ran in different processes: replace them one by one", proto.Name(ids[0]), proto.Name(id))
			return
		}
		machine = m
	}
	a := proto.Assign{Machine: machine, NumServers: c.cfg.NumServers, NumWorkers: c.cfg.NumWorkers, Job: c.job, Epoch: c.epoch, SchedulerKey: c.key,
		Failovers: c.seq(), Moved: c.moved()}
	if r.Role != proto.RoleWorker {
		a.Held = c.held[rank]
	}
	for _, id := range ids {
		if role, _ := proto.Identify(id); role == proto.RoleServer {
			a.Server = id
		} else {
			a.Worker = id
		}
		delete(c.lost, id)
		c.members[id] = &member{id: id, machine: machine, host: r.Host, lastSeen: c.tick, key: r.Key, replacement: true}
		c.learnKey(id, r.Key)
		c.replaced++
	}
	c.logf("%s at %s replaces %s (epoch %d)", r.Role, r.Addr, names(ids), c.epoch)
	c.regs[from] = registration{addr: r.Addr, assign: a}
	c.send(from, r.Addr, proto.CmdAssign, a)
}

// resume ends a pause once every failed node was replaced and is ready:
// every node gets the address book of the new epoch.
func (c *Core) resume() {
	c.phase, c.lost, c.cause = running, nil, nil
	res := proto.Resume{Epoch: c.epoch, Peers: c.Peers()}
	c.logf("job resumed (epoch %d)", c.epoch)
	for _, p := range res.Peers {
		c.send(p.ID, p.Addr, proto.CmdResume, res)
	}
	// The ranges left with fewer copies (a replacement whose chain
	// failed over before, or the copies the failed process held) get
	// new ones, as after a failover.
	c.rebackup()
}

// abort ends the job with the failure of node id and tells every other
// ready node, and id too when tellFailed (a node that is alive but sent
// something wrong).
func (c *Core) abort(id transport.NodeID, cause error, tellFailed bool) {
	if c.phase == ended {
		return
	}
	mb := c.members[id]
	ne := &proto.NodeError{ID: id, Err: cause}
	if mb != nil {
		ne.Addr = mb.addr
	} else if c.cause != nil && c.cause.ID == id {
		ne.Addr = c.cause.Addr
	}
	c.phase, c.err = ended, ne
	c.logf("%v", ne)
	for _, p := range c.Peers() {
		if (p.ID != id || tellFailed) && c.members[p.ID].ready {
			c.send(p.ID, "", proto.CmdAbort, proto.Abort{Node: id, Addr: ne.Addr, Reason: cause.Error()})
		}
	}
}

// Down processes the failure of the link to a peer.
//
// A replacement has its predecessor's node ids, and the predecessor's
// links may be reported failed only after the replacement is ready: the
// transport notices each closed link in its own goroutine and reports
// it once per peer until a new link with that id comes up, and the
// driver reads Down and Recv in no set order. Counted against the
// replacement, such a failure paused the job again and dropped the
// replacement, which got no more heartbeats and gave up, while the
// others waited for a replacement that never came. So for a replacement
// a failure that names another address than the one it listens on is
// ignored: the scheduler's link to the predecessor names the
// predecessor's address, and a link the node dialed names its port,
// which cannot tell the two apart. The replacement's own failure still
// counts: the scheduler's link to it, and the heartbeat sends over it
// (SendFailed), name its address; or it falls silent for Timeout.
func (c *Core) Down(pe *transport.PeerError) []Out {
	c.out = c.out[:0]
	if proto.IsProvisional(pe.Peer) {
		if errors.Is(pe.Err, transport.ErrRefused) {
			c.refusedf("refused a node at %s: %v", pe.Addr, pe.Err)
		}
		return c.out
	}
	mb := c.members[pe.Peer]
	if mb == nil {
		if errors.Is(pe.Err, transport.ErrRefused) {
			c.refusedf("refused node %d at %s: %v", pe.Peer, pe.Addr, pe.Err)
		}
		return c.out
	}
	if c.phase == ended || !mb.ready {
		return c.out
	}
	if mb.replacement && pe.Addr != "" && pe.Addr != mb.addr {
		return c.out
	}
	if mb.moved {
		// A server served by its backup's node (failover): a late
		// failure of the failed process's links may name the same
		// address (an in-memory network's), so its heartbeats decide.
		return c.out
	}
	c.fail(pe.Peer, fmt.Errorf("link lost: %w", pe.Err))
	return c.out
}

// SendFailed processes a failed send to a peer, like a link failure. A
// send to another address than the member's was to the node a
// replacement took the place of (its failure may be reported after the
// replacement joined), and is ignored.
func (c *Core) SendFailed(to transport.NodeID, err error) []Out {
	pe, ok := err.(*transport.PeerError)
	if !ok {
		pe = &transport.PeerError{Peer: to, Op: "send", Err: err}
	}
	if mb := c.members[to]; mb != nil && c.job.Recover && pe.Addr != "" && mb.addr != "" && pe.Addr != mb.addr {
		c.out = c.out[:0]
		return c.out
	}
	return c.Down(pe)
}

// Tick advances time by one heartbeat: it sends heartbeats, declares
// silent nodes dead and enforces the start timeout.
func (c *Core) Tick() []Out {
	c.out = c.out[:0]
	c.tick++
	if n := c.refusals.Due(c.tick); n > 0 {
		c.logf("suppressed %d more refusals in %v", n, proto.RefusalPeriod)
	}
	if c.phase == ended {
		return c.out
	}
	if c.phase == registering && c.tick > c.startBy {
		need := c.cfg.NumServers + c.cfg.NumWorkers + c.cfg.NumEvaluators
		ready := 0
		for _, m := range c.members {
			if m.ready {
				ready++
			}
		}
		c.phase = ended
		c.err = fmt.Errorf("sched: %d of %d nodes registered and %d ready after %v (%d servers, %d workers expected)",
			len(c.members), need, ready, c.cfg.StartTimeout, c.cfg.NumServers, c.cfg.NumWorkers)
		c.logf("%v", c.err)
		for _, p := range c.Peers() {
			if c.members[p.ID].ready {
				c.send(p.ID, "", proto.CmdAbort, proto.Abort{Reason: c.err.Error()})
			}
		}
		return c.out
	}
	if c.phase == rejoining {
		c.tickTakeover()
		return c.out
	}
	if c.phase == paused && c.tick > c.resumeBy {
		var waiting []transport.NodeID
		for id := range c.lost {
			waiting = append(waiting, id)
		}
		slices.Sort(waiting)
		c.abort(c.cause.ID, fmt.Errorf("no replacement for %s ready within %v (after %v)", names(waiting), c.cfg.RecoverWait, c.cause.Err), false)
		return c.out
	}
	var dead []transport.NodeID
	for id, m := range c.members {
		if (m.ready || m.takingOver) && c.tick-m.lastSeen > c.timeout {
			dead = append(dead, id)
		}
	}
	if len(dead) > 0 {
		// Every silent process in one tick: with recovery, one event.
		slices.Sort(dead)
		for _, id := range dead {
			if m := c.members[id]; m != nil {
				c.fail(id, fmt.Errorf("no heartbeat for %v", time.Duration(c.tick-m.lastSeen)*c.cfg.Heartbeat))
			}
		}
		return c.out
	}
	for _, p := range c.Peers() {
		if c.members[p.ID].ready {
			c.send(p.ID, "", proto.CmdHeartbeat, nil)
		}
	}
	return c.out
}
