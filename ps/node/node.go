// Package node is the runtime of a parameter-server process: it joins
// the cluster through the scheduler, runs a server, a worker or both (a
// machine) over the transport, and ends the job cleanly or with an error
// that names the node that failed.
//
// Start registers under a provisional id, receives the node's real ids,
// the routing table and the job's settings, opens one endpoint per role,
// starts the role's handlers, and only then reports Ready; it returns once
// the scheduler has sent everyone the address book. From then on each
// endpoint has a thin loop that forwards data messages to its role's
// driver (server.Server or worker.Worker), handles control messages,
// sends heartbeats and watches the scheduler's: a scheduler silent for the
// job's timeout fails the node, and one whose link closed (it exited, or
// was killed) within SchedulerGrace heartbeats. Failures of other nodes are the
// scheduler's to declare: it sees every link and tells every node with
// Abort, which fails every pending and later call with an error naming
// the dead node.
//
// The job ends cleanly with the scheduler's Shutdown. A machine starts
// on the first Start that either member gets, but ends only once each
// member has had its Shutdown (or the scheduler left after one of them):
// until then its endpoints stay open for what the scheduler still sends
// to the other member.
//
// Data messages (requests and replies) have no per-message deadline: a
// push on a slow, rate-limited link takes as long as its bytes need, and
// only the end of the job cancels it, so the heartbeats alone decide that
// a peer is dead. A data message that cannot be sent at all (the
// transport gave up on the link, the frame is over the limit) would leave
// a request unanswered for ever, so it ends the job: every pending and
// later call on the node fails at once with a *proto.NodeError naming the
// peer, and the node tells the scheduler, which aborts the job for
// everyone (see Node.lost). A pull answer over the frame limit is the
// exception: the server answers with an error instead, and only that
// pull fails.
//
// When the scheduler replaces failed nodes (sched.Config.RecoverWait),
// its Pause makes the node fail every barrier and every call of its
// worker with an error wrapping proto.ErrPaused until the worker's
// caller rejoins (worker.Worker.Rejoin, then Resume) after the
// scheduler's Resume, whose address book has the replacement's address;
// requests carry the membership epoch, and a server drops those of
// earlier epochs. A node started with Config.Recover is such a
// replacement.
//
// In a job whose scheduler has a standby (proto.Job.Standby) a node
// that loses the scheduler after the job started goes on for up to the
// job's timeout, reporting to the scheduler that takes the job over
// (see rejoin.go).
//
// With replicated key ranges (proto.Job.Replicas) a server's node also
// keeps copies of the servers it backs up (server.NewReplicated), and a
// failed server apart is taken over by its backup without a pause: the
// backup's node listens as the failed server on a new endpoint, and
// workers send it again what the failed one had not answered (see
// failover.go).
//
// Under BSP a machine orders what it sends: its server starts an answer
// to a pull only once the pushes its own worker posted have left, and
// an answer on its way goes on (reply.go). The pushes it yields to are
// of the round every server waits for, the answers of the round after;
// shared fairly, the interface slowed the round's last pushes (see
// docs/round.md, "A machine's answers after its own pushes").
//
// In a machine the worker reaches its co-located server without the
// network: requests go straight into the server's queue (the
// application's arrays are not copied, as they are stable until the call
// completes) and replies straight back (copied, as the store changes).
// These messages are still counted, at their frame size, as
// inner-machine traffic.
package node

import (
	"context"
	"crypto/ecdh"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"colo/ps/clock"
	"colo/ps/internal/mailbox"
	"colo/ps/proto"
	"colo/ps/replica"
	"colo/ps/route"
	"colo/ps/server"
	"colo/ps/update"
	"colo/ps/worker"
	"colo/transport"
	"colo/transport/tcp"
)

// Config configures a node.
type Config struct {
	// Role is server, worker or machine.
	Role proto.Role
	// JobDigest, when set, is the proto.JobDigest of the node's job,
	// which the scheduler checks against its own (proto.Register.Job).
	JobDigest string
	// JobFields, when set, are the proto.JobFields of that job, by which
	// a scheduler that refuses the node names the fields at fault
	// (proto.Register.JobFields).
	JobFields map[string]string
	// Scheduler is the scheduler's address (unused on a Mem network).
	Scheduler string
	// Token is the cluster token.
	Token string
	// NumServers and NumWorkers, when positive, are checked against the
	// scheduler's.
	NumServers, NumWorkers int
	// Rank asks for a rank; -1 for any.
	Rank int
	// Host names the machine in the address book and logs.
	Host string
	// Network opens the node's endpoints.
	Network Network
	// Rule is the servers' update rule; nil for update.Sum.
	Rule update.Rule
	// JoinTimeout bounds reaching the scheduler (retried while it is not
	// up yet) and waiting for the job to start. A replacement (Recover)
	// that finds nothing listening at the scheduler's address fails at
	// once: the scheduler it was to rejoin has left.
	JoinTimeout time.Duration
	// Recover joins a running job in the place of a failed node of the
	// role and Rank (any failed one for −1), which the scheduler must
	// be waiting for (sched.Config.RecoverWait).
	Recover bool
	// Standby says that the job's scheduler may be taken over by one
	// started at its address (colo node --standby): a replacement
	// (Recover) that finds nothing listening there retries within
	// JoinTimeout instead of failing at once.
	Standby bool
	// Logf, when not nil, receives the node's log lines.
	Logf func(format string, args ...any)
}

// DefaultConfig returns a machine that waits up to 60 s for its cluster.
func DefaultConfig() Config {
	return Config{Role: proto.RoleMachine, Rank: -1, JoinTimeout: 60 * time.Second}
}

// Validate checks c; errors name the field and the bound.
func (c Config) Validate() error {
	switch c.Role {
	case proto.RoleServer, proto.RoleWorker, proto.RoleMachine, proto.RoleEvaluator:
	default:
		return fmt.Errorf("node: Role %s is not server, worker, machine or evaluator", c.Role)
	}
	if c.Network == nil {
		return errors.New("node: Network is nil")
	}
	if c.NumServers < 0 || c.NumWorkers < 0 {
		return fmt.Errorf("node: NumServers %d and NumWorkers %d must not be negative", c.NumServers, c.NumWorkers)
	}
	if c.Rank < -1 || c.Rank >= proto.MaxRank {
		return fmt.Errorf("node: Rank %d out of range [-1, %d)", c.Rank, proto.MaxRank)
	}
	if c.JoinTimeout <= 0 {
		return fmt.Errorf("node: JoinTimeout %v must be positive", c.JoinTimeout)
	}
	if c.Recover && c.Role == proto.RoleEvaluator {
		return errors.New("node: Recover: an evaluator replaces no failed node")
	}
	return nil
}

// Node is a running server, worker or machine.
type Node struct {
	cfg     Config
	assign  proto.Assign
	table   *route.Table
	members []*member
	srv     *server.Server
	wrk     *worker.Worker
	ctx     context.Context // the roles'; cancelled with the job's end
	cancel  context.CancelCauseFunc
	started chan struct{}
	done    chan struct{}
	closing chan struct{}
	trained chan struct{} // closed by the scheduler's Trained
	wg      sync.WaitGroup
	// trainedOnce closes trained.
	trainedOnce sync.Once
	once        sync.Once
	pool        transport.Pool // local replies
	landing     landing        // the co-located worker's arrays for answers
	mute        atomic.Bool    // no more heartbeats: the node left the job or ended on a failure
	// stalled is how long (ns) a member loop last found this node had
	// not run, longer than the timeout, until the scheduler is heard
	// again; 0 otherwise.
	stalled atomic.Int64
	// awaiting is set once a peer closed a link this node sent on: the
	// node waits for the scheduler's abort (see lost).
	awaiting atomic.Bool
	// identity is the node's key, which the endpoints of the servers it
	// takes over (Failover) use too.
	identity *ecdh.PrivateKey

	mu       sync.Mutex
	book     map[transport.NodeID]proto.Peer
	ended    bool
	err      error
	seq      map[string]uint64
	barriers map[barrierKey]*release
	// Recovery (proto.Pause): epoch is the membership epoch, paused set
	// between a Pause and its Resume, resumed closed when not paused;
	// loopEpoch is the epoch the worker's caller rejoined in (Rejoin),
	// barriers refused until it is epoch; leave is the timer of lost.
	epoch     uint64
	paused    bool
	resumed   chan struct{}
	loopEpoch uint64
	leave     *time.Timer
	awaitPeer transport.NodeID // the peer whose closed link leave waits on
	// taken are the members of the servers the node took over from
	// failed ones (Failover); failovers the failovers whose address it
	// has (proto.Failover.Seq), and opened those whose step 2 pointed
	// the failed id at the backup (moveTo), after which the replies to
	// it are sent again.
	taken     []*member
	failovers map[int]bool
	opened    map[int]bool
	// failed are the servers the scheduler announced as failed, with the
	// address each had then, and failedSeq the failover that announced
	// it last: a server taken over may fail again, served by its backup.
	failed        map[transport.NodeID]string
	failedSeq     map[transport.NodeID]int
	failoverTimes []FailoverTimes
	retakes       []Retake // the worker's captures taken again (retake)
	// A takeover of the scheduler (rejoin.go): released is the last
	// release of each barrier group in the epoch, finished the worker's
	// Done once sent; rejoinStop, while the node reports to a new
	// scheduler, stops it; takeovers are their times; lateCopies are
	// the ranks whose new copies the node's server made while it
	// reported (backedUp).
	released   map[string]proto.Barrier
	finished   *proto.Done
	rejoinStop chan struct{}
	takeovers  []TakeoverTimes
	lateCopies []int
}

// release is the outcome of one barrier: closed ch, then the sum, or
// err when a pause failed it. sent are the values the node sent, in
// epoch.
type release struct {
	ch    chan struct{}
	vals  []float64
	err   error
	sent  []float64
	epoch uint64
}

type barrierKey struct {
	group string
	seq   uint64
}

// member is one endpoint of the node: its server's or its worker's.
type member struct {
	n     *Node
	id    transport.NodeID
	ep    Endpoint
	out   *mailbox.Outbox
	data  *mailbox.Box[*transport.Message]
	local localCounters // traffic with the co-located peer
	// replies queues a server's replies per destination (reply.go).
	replies replies
	// shut: the scheduler's Shutdown reached this member (under n.mu).
	shut bool
	// offer, once set, handles a data message from the network on the
	// link's reader instead of queueing it on data, when the role has
	// nothing queued (server.Server.Offer, worker.Worker.Offer).
	offer atomic.Pointer[func(*transport.Message) bool]
	// srv is the server of a member the node took over (Failover).
	srv *server.Server
}

// pushTimed is the endpoint a worker's outbox sends through. A data
// message carrying values (a push) to a node of another machine is timed
// in the egress of the machine's server (server.Server.Sending) from its
// send until the send returns, as the server's answers are: both leave
// through the machine's one interface, and the balancer's measure of the
// link (package balance, Aware) is of the bytes the interface carried
// over the time it was busy, whoever sent them.
type pushTimed struct {
	transport.Endpoint
	n *Node
}

func (e pushTimed) Send(ctx context.Context, to transport.NodeID, m *transport.Message) error {
	srv := e.n.srv
	if srv == nil || m.Type != transport.TypeData || len(m.KV.Vals) == 0 || to == proto.SchedulerID || e.n.member(to) != nil {
		return e.Endpoint.Send(ctx, to, m)
	}
	sent := srv.Sending(4 * uint64(len(m.KV.Vals)))
	defer sent()
	return e.Endpoint.Send(ctx, to, m)
}

// localCounters count the messages a member exchanged with its
// co-located peer without the network.
type localCounters struct {
	msgsSent, bytesSent, msgsRecv, bytesRecv atomic.Uint64
}

// Start joins the cluster and returns once the job runs, or fails with
// the scheduler's refusal, a timeout or ctx's error.
func Start(ctx context.Context, cfg Config) (*Node, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	ctx, cancelJoin := context.WithTimeout(ctx, cfg.JoinTimeout)
	defer cancelJoin()
	identity := tcp.NewIdentity()
	a, err := register(ctx, cfg, identity.PublicKey().Bytes())
	if err != nil {
		return nil, err
	}
	if len(a.SchedulerKey) == 0 {
		identity = nil // a scheduler that publishes no keys
	}
	n, err := newNode(cfg, a, identity)
	if err != nil {
		return nil, err
	}
	select {
	case <-n.started:
		return n, nil
	case <-n.done:
		err = n.Wait()
	case <-ctx.Done():
		err = fmt.Errorf("node: no start of the job from the scheduler at %s: %w", cfg.Scheduler, ctx.Err())
	}
	n.Close()
	return nil, err
}

// register obtains the node's ids from the scheduler through a
// provisional endpoint, retrying while the scheduler is not reachable.
func register(ctx context.Context, cfg Config, key []byte) (proto.Assign, error) {
	var ep Endpoint
	var err error
	for range 16 {
		if ep, err = cfg.Network.Listen(proto.Provisional(rand.Uint32()), nil); err == nil {
			break
		}
	}
	if err != nil {
		return proto.Assign{}, fmt.Errorf("node: provisional endpoint: %w", err)
	}
	defer ep.Close()
	ep.SetPeer(proto.SchedulerID, cfg.Scheduler)
	reg := proto.Control(proto.CmdRegister, proto.Register{
		Role: cfg.Role, Token: proto.TokenDigest(cfg.Token), Addr: ep.Addr(), Rank: cfg.Rank,
		NumServers: cfg.NumServers, NumWorkers: cfg.NumWorkers, Host: cfg.Host, Recover: cfg.Recover, Key: key,
		Job: cfg.JobDigest, JobFields: cfg.JobFields,
	})
	backoff := 10 * time.Millisecond
	for {
		err := ep.Send(ctx, proto.SchedulerID, reg)
		if err == nil {
			break
		}
		if errors.Is(err, transport.ErrRefused) {
			return proto.Assign{}, fmt.Errorf("node: the scheduler at %s refused this node: %w", cfg.Scheduler, err)
		}
		if pe := (*transport.PeerError)(nil); cfg.Recover && !cfg.Standby && errors.As(err, &pe) && pe.Op == "dial" && errors.Is(err, transport.ErrPeerClosed) {
			// A replacement joins a job whose scheduler is up: nothing
			// listening at its address means it left, its job ended.
			return proto.Assign{}, fmt.Errorf("node: the scheduler at %s has left (its job ended): no job to recover into: %w", cfg.Scheduler, err)
		}
		if ctx.Err() != nil {
			return proto.Assign{}, fmt.Errorf("node: cannot reach the scheduler at %s: %w", cfg.Scheduler, err)
		}
		select {
		case <-time.After(backoff):
			backoff = min(2*backoff, 500*time.Millisecond)
		case <-ctx.Done():
			return proto.Assign{}, fmt.Errorf("node: cannot reach the scheduler at %s: %w", cfg.Scheduler, err)
		}
	}
	for {
		select {
		case m, ok := <-ep.Recv():
			if !ok {
				return proto.Assign{}, errors.New("node: provisional endpoint closed")
			}
			switch {
			case m.Sender != proto.SchedulerID:
			case m.Cmd == proto.CmdAssign:
				var a proto.Assign
				if err := proto.Decode(m, &a); err != nil {
					return a, err
				}
				return a, nil
			case m.Cmd == proto.CmdRefuse:
				var r proto.Refuse
				proto.Decode(m, &r)
				return proto.Assign{}, fmt.Errorf("node: the scheduler at %s refused this node: %s", cfg.Scheduler, r.Reason)
			}
		case pe := <-ep.Down():
			if errors.Is(pe.Err, transport.ErrRefused) {
				return proto.Assign{}, fmt.Errorf("node: the scheduler at %s refused this node: %w", cfg.Scheduler, pe)
			}
			if pe.Peer == proto.SchedulerID && errors.Is(pe.Err, transport.ErrPeerClosed) {
				// It had taken the registration: it will not answer.
				return proto.Assign{}, fmt.Errorf("node: the scheduler at %s left before answering: %w", cfg.Scheduler, pe)
			}
		case <-ctx.Done():
			return proto.Assign{}, fmt.Errorf("node: no answer from the scheduler at %s: %w", cfg.Scheduler, ctx.Err())
		}
	}
}

// newNode opens the node's endpoints, starts its roles and reports ready.
func newNode(cfg Config, a proto.Assign, identity *ecdh.PrivateKey) (*Node, error) {
	table, err := route.Unmarshal(a.Job.Table)
	if err != nil {
		return nil, fmt.Errorf("node: routing table from the scheduler: %w", err)
	}
	mode, err := clock.ParseMode(a.Job.Mode)
	if err != nil {
		return nil, fmt.Errorf("node: job from the scheduler: %w", err)
	}
	ck := clock.Config{Mode: mode, Tau: a.Job.Tau}
	if a.Job.Heartbeat <= 0 || a.Job.Timeout < a.Job.Heartbeat {
		return nil, fmt.Errorf("node: job from the scheduler: heartbeat %v, timeout %v", a.Job.Heartbeat, a.Job.Timeout)
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	n := &Node{
		cfg: cfg, assign: a, table: table, ctx: ctx, cancel: cancel,
		started: make(chan struct{}), done: make(chan struct{}), closing: make(chan struct{}), trained: make(chan struct{}),
		seq: make(map[string]uint64), barriers: make(map[barrierKey]*release), released: make(map[string]proto.Barrier),
		epoch: a.Epoch, loopEpoch: a.Epoch, resumed: make(chan struct{}), identity: identity, failovers: make(map[int]bool), opened: make(map[int]bool), failed: make(map[transport.NodeID]string), failedSeq: make(map[transport.NodeID]int),
	}
	close(n.resumed)
	for seq := 1; seq <= a.Failovers; seq++ {
		n.failovers[seq], n.opened[seq] = true, true // before it joined
	}
	fail := func(err error) (*Node, error) {
		n.Close()
		return nil, err
	}
	for _, id := range []transport.NodeID{a.Server, a.Worker} {
		if id == 0 {
			continue
		}
		ep, err := cfg.Network.Listen(id, identity)
		if err != nil {
			return fail(fmt.Errorf("node: %s: %w", proto.Name(id), err))
		}
		ep.SetPeer(proto.SchedulerID, cfg.Scheduler)
		if identity != nil {
			if err := ep.SetPeerKey(proto.SchedulerID, a.SchedulerKey); err != nil {
				ep.Close()
				return fail(fmt.Errorf("node: the scheduler's key: %w", err))
			}
		}
		var out transport.Endpoint = ep
		if id == a.Worker {
			out = pushTimed{ep, n}
		}
		m := &member{n: n, id: id, ep: ep, out: mailbox.NewOutboxContext(out, ctx, a.Job.Timeout), data: mailbox.New[*transport.Message]()}
		if s, ok := ep.(transport.Sinker); ok {
			// Workers' requests and servers' answers go from the link's
			// reader straight to the role's queue, not through loop.
			s.SetSink(func(msg *transport.Message) bool {
				if msg.Type != transport.TypeData || msg.Sender == proto.SchedulerID {
					return false
				}
				if f := m.offer.Load(); f != nil && (*f)(msg) {
					return true
				}
				m.data.Push(msg)
				return true
			})
		}
		n.members = append(n.members, m)
	}
	if a.Server != 0 {
		_, rank := proto.Identify(a.Server)
		scfg := server.Config{Rank: rank, Workers: a.NumWorkers, Table: table, Width: a.Job.Width, Rule: cfg.Rule, Clock: ck}
		if r := a.Job.Replicas; r > 0 {
			// The copies of a start (replica.Chain), but for the servers
			// whose processes failed over before this one joined (a
			// replacement): they hold no copy, and their ranges'
			// process replicates to none of a start.
			moved := func(p int) bool { return slices.Contains(a.Moved, p) }
			rep := server.Replication{Backups: slices.DeleteFunc(replica.Chain(rank, a.NumServers, r, nil), moved), Takeover: n.takeover, BackedUp: n.backedUp}
			for p := range a.NumServers {
				if !moved(p) && slices.Contains(replica.Chain(p, a.NumServers, r, nil), rank) || slices.Contains(a.Held, p) {
					rep.Copies = append(rep.Copies, p)
				}
			}
			rep.Report = a.Held
			n.srv, err = server.NewReplicated(scfg, rep)
		} else {
			n.srv, err = server.NewServer(scfg)
		}
		if err != nil {
			return fail(err)
		}
		m := n.member(a.Server)
		srv := n.srv
		offer := func(msg *transport.Message) bool { return m.serveOnReader(ctx, srv, msg) }
		m.offer.Store(&offer)
		n.wg.Go(func() { srv.Run(ctx, m.data.C(), serverConn{m}) })
	}
	if a.Worker != 0 {
		role, rank := proto.Identify(a.Worker)
		reduce := func(ctx context.Context, vals []float64) ([]float64, error) { return n.AllReduce(ctx, "workers", vals) }
		if role == proto.RoleEvaluator {
			reduce = nil // an evaluator joins no barrier
		}
		n.wrk, err = worker.New(worker.Config{Rank: rank, Table: table, Width: a.Job.Width, Clock: ck, Epoch: a.Epoch, Resend: a.Job.Replicas > 0}, reduce)
		if err != nil {
			return fail(err)
		}
		if role == proto.RoleWorker {
			n.wrk.SetSubgroups(func(ctx context.Context, name string, vals []float64) ([]float64, error) {
				return n.AllReduce(ctx, "workers/"+name, vals)
			})
		}
		if a.Job.Recover {
			n.wrk.SetRejoin(n.rejoin)
		}
		n.wrk.SetRetake(n.retake)
		if role == proto.RoleWorker && n.srv != nil && a.Job.Replicas == 0 {
			// The machine's pushes and pulls start on the caller's
			// goroutine when nothing else is in flight, its own
			// server's part served there.
			n.wrk.SetLocal(direct{n.srv, n.member(a.Worker), n.member(a.Server)})
		}
		m := n.member(a.Worker)
		wrk := n.wrk
		offer := func(msg *transport.Message) bool { return wrk.Offer(msg, m.data.Pushed) }
		m.offer.Store(&offer)
		n.wg.Go(func() { wrk.Run(ctx, m.data.C(), workerConn{m}) })
	}
	// The handlers run: report ready.
	for _, m := range n.members {
		n.wg.Go(m.loop)
		m.out.Post(proto.SchedulerID, proto.Control(proto.CmdReady, proto.Ready{Addr: m.ep.Addr()}))
	}
	return n, nil
}

// replaced is the error of a node that did not run for stalled and has
// not heard the scheduler since.
func (n *Node) replaced(stalled time.Duration) error {
	return fmt.Errorf("%w: this process did not run for %v, longer than the scheduler's timeout %v, and has not heard the scheduler since: the scheduler has declared it failed, and another process takes its place or the job has ended without it", ErrReplaced, stalled.Round(time.Millisecond), n.assign.Job.Timeout)
}

// ErrReplaced is the error of a node that finds, when it runs again,
// that it was stopped for longer than the scheduler's timeout and then
// hears nothing more from the scheduler (a timeout of silence, or
// SchedulerGrace heartbeats when the scheduler's link closed): it was
// declared failed, and its rank was given to a replacement (or the job
// ended without it). It exits without blaming any other node. A node
// that hears the scheduler again goes on: the scheduler was stopped with
// it (the same process or machine) and declared nothing.
var ErrReplaced = errors.New("node: replaced")

// SchedulerGrace is how many heartbeats a node waits for the scheduler
// after the scheduler's link failed, before it ends the job naming the
// scheduler: time for a Shutdown or an Abort sent just before the
// scheduler left to arrive.
const SchedulerGrace = 2

// member returns the member of id, nil if none.
func (n *Node) member(id transport.NodeID) *member {
	for _, m := range n.members {
		if m.id == id {
			return m
		}
	}
	return nil
}

// loop handles one endpoint: control messages, data for the role,
// heartbeats and the scheduler's silence.
func (m *member) loop() {
	n := m.n
	hb := n.assign.Job.Heartbeat
	timeout := int64((n.assign.Job.Timeout + hb - 1) / hb)
	limit := timeout
	tick := time.NewTicker(hb)
	defer tick.Stop()
	silent := int64(0)
	// last is when the previous tick was handled: a node that finds
	// more than the timeout since then was itself stopped (SIGSTOP, a
	// frozen VM, a starved machine). stalled is how long, until the
	// scheduler is heard again, and sinceStall the ticks since it found
	// that. Either the scheduler declared it failed meanwhile and will
	// not send to it again, or the scheduler did not run either (the same
	// process, a machine stopped or starved whole) and declared nothing:
	// its heartbeats resume. Only what it sends after the node ran again
	// tells which; what it sent during the stall is read at once, within
	// SchedulerGrace ticks.
	last := time.Now()
	var stalled time.Duration
	var sinceStall int64
	// noticeStall runs first at every event, so that what the scheduler
	// sent during a stall is never taken for its voice after it.
	noticeStall := func() {
		if gap := time.Since(last); gap > n.assign.Job.Timeout && !n.shuttingDown() {
			// Silence from now on is the scheduler's verdict: a timeout
			// of it, or SchedulerGrace ticks once its link failed (a
			// scheduler that ended the job and left).
			stalled, sinceStall, silent, last = gap, 0, 0, time.Now()
			n.stalled.Store(int64(gap))
		}
	}
	// schedLost is the failure of the scheduler's link, until the
	// scheduler is heard again.
	var schedLost *transport.PeerError
	for {
		select {
		case msg, ok := <-m.ep.Recv():
			if !ok {
				return
			}
			noticeStall()
			if msg.Sender == proto.SchedulerID && (stalled == 0 || sinceStall >= SchedulerGrace) {
				silent, limit, schedLost, stalled = 0, timeout, nil, 0
				n.stalled.Store(0)
			}
			if msg.Type == transport.TypeData {
				m.data.Push(msg)
				continue
			}
			n.control(m, msg)
		case pe, ok := <-m.ep.Down():
			if !ok {
				return
			}
			noticeStall()
			// The scheduler declares failures; a link that fails at the
			// end of the job is a peer leaving.
			n.cfg.Logf("%s: link to %s: %v", proto.Name(m.id), proto.Name(pe.Peer), pe)
			if pe.Peer == proto.SchedulerID && n.shuttingDown() {
				// The scheduler left after the Shutdown of another
				// member: nothing more will come.
				n.end(nil)
				continue
			}
			if pe.Peer == proto.SchedulerID && schedLost == nil && stalled == 0 && n.assign.Job.Standby && n.hasStarted() {
				// A scheduler that takes the job over may come: the
				// node reports to it for up to the timeout (rejoin.go).
				schedLost, silent = pe, 0
				n.startRejoin()
				continue
			}
			if pe.Peer == proto.SchedulerID && schedLost == nil {
				// The scheduler's link failed: a scheduler that exited
				// closes it. Its last words (Shutdown or Abort) may
				// still be in flight on its own link, so it has
				// SchedulerGrace heartbeats to be heard before the node
				// ends naming it, instead of the whole timeout.
				schedLost, silent, limit = pe, 0, min(timeout, SchedulerGrace)
			}
		case e := <-m.out.Errors():
			noticeStall()
			if e.Data {
				n.lost(m, e.To, e.Err)
				continue
			}
			// The scheduler's silence fails the node if this lasts.
			n.cfg.Logf("%s: send to %s: %v", proto.Name(m.id), proto.Name(e.To), e.Err)
		case <-tick.C:
			noticeStall()
			last = time.Now()
			silent++
			sinceStall++
			if silent > limit && n.shuttingDown() {
				n.end(nil)
			} else if silent > limit && stalled > 0 {
				n.end(n.replaced(stalled))
			} else if silent > limit {
				err := fmt.Errorf("no heartbeat for %v", time.Duration(silent)*hb)
				if schedLost != nil {
					err = fmt.Errorf("link lost: %w", schedLost.Err)
				}
				n.end(&proto.NodeError{ID: proto.SchedulerID, Addr: n.cfg.Scheduler, Err: err})
			}
			if !n.mute.Load() {
				m.out.Post(proto.SchedulerID, proto.Control(proto.CmdHeartbeat, proto.Heartbeat{Addr: m.ep.Addr()}))
			}
		case <-n.closing:
			return
		}
	}
}

// control handles a control message.
func (n *Node) control(m *member, msg *transport.Message) {
	if msg.Sender != proto.SchedulerID {
		n.cfg.Logf("%s: control message %d from %s ignored", proto.Name(m.id), msg.Cmd, proto.Name(msg.Sender))
		return
	}
	switch msg.Cmd {
	case proto.CmdHeartbeat:
	case proto.CmdStart:
		var st proto.Start
		if err := proto.Decode(msg, &st); err != nil {
			n.end(err)
			return
		}
		n.start(st)
	case proto.CmdPause:
		var p proto.Pause
		if err := proto.Decode(msg, &p); err != nil {
			n.end(err)
			return
		}
		n.pause(p)
	case proto.CmdResume:
		var r proto.Resume
		if err := proto.Decode(msg, &r); err != nil {
			n.end(err)
			return
		}
		n.resume(r)
	case proto.CmdRelease:
		var b proto.Barrier
		if proto.Decode(msg, &b) == nil {
			n.mu.Lock()
			var r *release
			if b.Epoch == n.epoch {
				r = n.barriers[barrierKey{b.Group, b.Seq}]
				delete(n.barriers, barrierKey{b.Group, b.Seq})
			}
			n.mu.Unlock()
			if r != nil {
				r.vals = b.Values(nil)
				close(r.ch)
			}
			n.mu.Lock()
			if b.Epoch == n.epoch && b.Seq > n.released[b.Group].Seq {
				n.released[b.Group] = b
			}
			n.mu.Unlock()
		}
	case proto.CmdFailover:
		var f proto.Failover
		if err := proto.Decode(msg, &f); err != nil {
			n.end(err)
			return
		}
		n.failover(m, f, msg)
	case proto.CmdRejoined:
		var r proto.Rejoined
		if err := proto.Decode(msg, &r); err != nil {
			n.end(err)
			return
		}
		n.rejoined(r)
	case proto.CmdBackup:
		// To the server of the member's id, in the order of its data.
		m.data.Push(msg)
	case proto.CmdTrained:
		n.trainedOnce.Do(func() { close(n.trained) })
	case proto.CmdShutdown:
		n.shutdown(m)
	case proto.CmdAbort:
		var a proto.Abort
		proto.Decode(msg, &a)
		var err error = fmt.Errorf("%w by the scheduler: %s", proto.ErrAborted, a.Reason)
		if a.Node != 0 {
			err = &proto.NodeError{ID: a.Node, Addr: a.Addr, Err: errors.New(a.Reason)}
		}
		n.end(err)
	default:
		n.cfg.Logf("%s: unknown command %d from the scheduler", proto.Name(m.id), msg.Cmd)
	}
}

// start records the address book; the job runs.
func (n *Node) start(st proto.Start) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.book != nil {
		return
	}
	n.epoch, n.loopEpoch = st.Epoch, st.Epoch
	n.book = make(map[transport.NodeID]proto.Peer, len(st.Peers))
	for _, p := range st.Peers {
		n.book[p.ID] = p
		n.setPeer(p)
	}
	close(n.started)
}

// setPeer gives every endpoint of the node, those of the servers it
// took over (Failover) included, the address and the key of peer p: a
// server taken over replicates to, and answers, nodes that a rollback
// replaced too. A key that is not one (the scheduler checked its
// length) is logged: the links with p will be refused, naming it. n.mu
// is held.
func (n *Node) setPeer(p proto.Peer) {
	for _, m := range append(slices.Clip(n.members), n.taken...) {
		m.ep.SetPeer(p.ID, p.Addr)
		if len(p.Key) > 0 {
			if err := m.ep.SetPeerKey(p.ID, p.Key); err != nil {
				n.cfg.Logf("node: %v", err)
			}
		}
	}
}

// pause handles the scheduler's Pause: a node failed and the job waits
// for its replacement. The node enters the pause's epoch; every barrier
// waiting fails, and every call of its worker in flight and later until
// the caller rejoins (Rejoin, then worker.Worker.Resume), with an error
// that wraps proto.ErrPaused and names the failed node; a failed send
// no longer ends the node (see lost). The server's replies to the failed
// nodes are abandoned (replies.abandon): a failed worker whose process
// still holds its socket open (stopped, or cut off) takes nothing, and
// the server's next push would otherwise wait for ever for its answer
// that is a view of the store to leave. The server has nothing else to
// do: the first request of the new epoch rewinds it.
func (n *Node) pause(p proto.Pause) {
	cause := fmt.Errorf("%w: %w", proto.ErrPaused, &proto.NodeError{ID: p.Node, Addr: p.Addr, Err: errors.New(p.Reason)})
	n.mu.Lock()
	if n.ended || p.Epoch <= n.epoch {
		n.mu.Unlock()
		return // the other member of a machine had it
	}
	n.epoch, n.paused = p.Epoch, true
	n.resumed = make(chan struct{})
	for k, r := range n.barriers {
		r.err = cause
		close(r.ch)
		delete(n.barriers, k)
	}
	clear(n.released)
	if n.leave != nil {
		n.leave.Stop()
		n.leave = nil
	}
	n.awaiting.Store(false)
	members := append(slices.Clip(n.members), n.taken...)
	n.mu.Unlock()
	n.abandon(members, append([]transport.NodeID{p.Node}, p.Peers...), cause)
	n.cfg.Logf("node: %v (epoch %d)", cause, p.Epoch)
	if n.wrk != nil {
		n.wrk.Pause(p.Epoch, cause)
	}
}

// abandon abandons the replies of members to the nodes gone, with cause.
func (n *Node) abandon(members []*member, gone []transport.NodeID, cause error) {
	for _, m := range members {
		for _, id := range gone {
			m.replies.abandon(id, cause)
		}
	}
}

// resume handles the scheduler's Resume: the address book of the new
// epoch, with the replacements' addresses, which the endpoints dial from
// now on; the replies still going to the old address of a node replaced
// (queued during the pause) are abandoned. A replacement gets it as its
// Start.
func (n *Node) resume(r proto.Resume) {
	n.mu.Lock()
	if n.book == nil {
		n.mu.Unlock()
		n.start(proto.Start{Peers: r.Peers, Epoch: r.Epoch})
		return
	}
	defer n.mu.Unlock()
	if !n.paused || r.Epoch != n.epoch {
		return
	}
	n.paused = false
	var moved []transport.NodeID
	for _, p := range r.Peers {
		if old, ok := n.book[p.ID]; ok && old.Addr != p.Addr {
			moved = append(moved, p.ID)
		}
		n.book[p.ID] = p
		n.setPeer(p)
	}
	members := append(slices.Clip(n.members), n.taken...)
	if len(moved) > 0 {
		// Under n.mu: replies.mu is never held while n.mu is taken.
		cause := fmt.Errorf("%w: replaced (epoch %d)", transport.ErrPeerClosed, r.Epoch)
		n.abandon(members, moved, cause)
	}
	// The new epoch's book is where every node is now: a server whose
	// failover never reached its step 2 (its backup failed or went
	// silent while taking over, and the job paused to replace it) is
	// served at its address in the book, and the replies to it are sent
	// there again (replies.fail until now).
	for _, p := range r.Peers {
		for _, m := range members {
			m.replies.open(p.ID, math.MaxInt)
		}
	}
	close(n.resumed)
	n.cfg.Logf("node: job resumed (epoch %d)", r.Epoch)
}

// rejoin waits until the job resumes after a pause (worker.Rejoin) and
// lets the worker's caller into the barriers of the new epoch, whose
// sequence numbers start again at 1 on every node.
func (n *Node) rejoin(ctx context.Context) (uint64, error) {
	for {
		n.mu.Lock()
		ch := n.resumed
		n.mu.Unlock()
		select {
		case <-ch:
		case <-n.done:
			if err := n.Wait(); err != nil {
				return 0, err
			}
			return 0, proto.ErrShutdown
		case <-ctx.Done():
			return 0, ctx.Err()
		}
		n.mu.Lock()
		if !n.paused {
			n.loopEpoch = n.epoch
			clear(n.seq)
			e := n.epoch
			n.mu.Unlock()
			return e, nil
		}
		n.mu.Unlock() // paused again meanwhile
	}
}

// Epoch returns the membership epoch: the number of replacements of
// failed nodes so far.
func (n *Node) Epoch() uint64 {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.epoch
}

// shutdown handles the scheduler's Shutdown on member m. The job ends
// once every member has had its own. The scheduler sends one to each
// member, after everything else it sends to that member, and a machine
// gets the first on either: ending there would close the other member's
// endpoint while the scheduler's messages to it are still on their way
// (a Start still in the handshake of its link, when the job was short),
// and the scheduler's sends to it would fail, so that its counters would
// show nothing sent to that member. A member that does not get its own
// Shutdown ends the job when the scheduler's link fails or falls silent
// (see shuttingDown).
func (n *Node) shutdown(m *member) {
	n.mu.Lock()
	m.shut = true
	all := true
	for _, o := range n.members {
		all = all && o.shut
	}
	n.mu.Unlock()
	if all {
		n.end(nil)
	}
}

// shuttingDown reports whether a member had the scheduler's Shutdown:
// the job is over, and the others only wait for theirs.
func (n *Node) shuttingDown() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, m := range n.members {
		if m.shut {
			return true
		}
	}
	return false
}

// end ends the job: nil after a Shutdown, the failure otherwise. A node
// that ends on a failure stops its heartbeats, as a process that exits
// does: the scheduler that still hears it (one whose own heartbeats no
// longer reached it) then declares it dead within the timeout and ends
// the job for everyone, instead of waiting for ever on a node whose
// server and worker have stopped.
func (n *Node) end(err error) { n.endThen(err, nil) }

// endThen ends the job as end does and, when this call ended it, runs
// then once every pending call has failed with err but before Done
// closes: a message then sends is posted before a process that exits at
// Done can close the node.
func (n *Node) endThen(err error, then func()) {
	n.mu.Lock()
	if n.ended {
		n.mu.Unlock()
		return
	}
	n.ended, n.err = true, err
	if err != nil {
		n.mute.Store(true)
	}
	if err == nil {
		n.dropUnheard()
	}
	n.mu.Unlock()
	if err != nil {
		n.cfg.Logf("node: %v", err)
		n.cancel(err)
	} else {
		n.cancel(proto.ErrShutdown)
	}
	if then != nil {
		then()
	}
	close(n.done)
}

// lost ends the job after member m could not send a data message to
// peer: a request or a reply is gone, and waiting for its answer would
// hang. Every pending and later call on this node fails with a
// *proto.NodeError naming peer, and the node stops its heartbeats, so the
// scheduler declares it dead within the timeout unless the job ended
// first. Unless peer closed its link, a node with a worker also reports
// the failure in its Done, so the scheduler aborts the job for everyone at
// once; a server cannot (Done is a worker's), and its silence does.
// Failures after the end of the job are the end's.
//
// When peer closed its link it has left (a killed process closes all its
// links), and the scheduler sees its own link to peer close and aborts
// the job naming it. The node then waits for that abort for up to the
// timeout, heartbeats going on, and only then ends the job itself: leaving
// at once would close its own links too, and a scheduler slow to read
// could see this node's link close before the dead peer's and name the
// wrong node.
func (n *Node) lost(m *member, peer transport.NodeID, err error) {
	if n.ctx.Err() != nil {
		return
	}
	n.mu.Lock()
	addr, paused := n.book[peer].Addr, n.paused
	n.mu.Unlock()
	if paused {
		// The failed node, or a link the pause broke: the requests and
		// replies lost are of the epoch before the pause.
		return
	}
	replicated := false
	if role, _ := proto.Identify(peer); role == proto.RoleServer && n.assign.Job.Replicas > 0 {
		if n.failedOver(peer, err) {
			// A server the scheduler announced as failed: its backup
			// takes over, and the worker sends its requests again.
			return
		}
		replicated = true
	}
	if pe := (*transport.PeerError)(nil); n.assign.Job.Recover && errors.As(err, &pe) && pe.Addr != "" && addr != "" && pe.Addr != addr {
		return // a send to the node a replacement took the place of
	}
	ne := &proto.NodeError{ID: peer, Addr: addr, Err: fmt.Errorf("%s could not send to it: %w", proto.Name(m.id), err)}
	leaveThen := func(then func()) {
		n.mute.Store(true)
		if d := n.stalled.Load(); d > 0 {
			// Peers gone while this node did not run: they left a job
			// that went on, or ended, without it.
			n.endThen(n.replaced(time.Duration(d)), then)
			return
		}
		n.endThen(ne, then)
	}
	leave := func() { leaveThen(nil) }
	// A peer that closed its link, or a write that found the link closed
	// under it by the reader that saw the peer go: the scheduler decides
	// (a pause, or the end), and this node waits for it.
	// With replicated key ranges, a link to a server that failed may
	// also time out or be closed by this node: the scheduler announces
	// a failover (which stops the wait) or ends the job.
	if linkFailure(err) || replicated && errors.Is(err, context.DeadlineExceeded) {
		if n.awaiting.CompareAndSwap(false, true) {
			t := time.AfterFunc(n.assign.Job.Timeout, leave)
			context.AfterFunc(n.ctx, func() { t.Stop() })
			n.mu.Lock()
			n.leave, n.awaitPeer = t, peer // a pause, or peer's failover, stops it
			n.mu.Unlock()
		}
		return
	}
	w := n.member(n.assign.Worker)
	if w == nil {
		leave()
		return
	}
	d := proto.Done{Err: ne.Error()}
	n.mu.Lock()
	n.finished = &d
	n.mu.Unlock()
	// The node ends with its own error before the scheduler hears of
	// it: the scheduler's Abort, which can come back at once, would
	// otherwise fail the pending calls with its text alone (a push over
	// the frame limit no longer wrapping transport.ErrFrameTooLarge).
	leaveThen(func() { w.out.Post(proto.SchedulerID, proto.Control(proto.CmdDone, d)) })
}

// linkFailure reports whether err is a link that failed under a send:
// the peer closed it, or this node did.
func linkFailure(err error) bool {
	return errors.Is(err, transport.ErrPeerClosed) || errors.Is(err, net.ErrClosed) || errors.Is(err, transport.ErrClosed)
}

// failedOver reports whether a send to server peer that failed with err
// is one to ignore: the scheduler announced peer as failed (Failover),
// and the send went to its old address, or went before the backup's
// address came, or failed on the link. Any other failure (a message
// over the frame limit, a send to the backup serving peer now) ends the
// job as lost says.
func (n *Node) failedOver(peer transport.NodeID, err error) bool {
	n.mu.Lock()
	old, ok := n.failed[peer]
	moved := n.book[peer].Addr != old
	n.mu.Unlock()
	if !ok {
		return false
	}
	if pe := (*transport.PeerError)(nil); errors.As(err, &pe) && pe.Addr != "" && pe.Addr == old {
		return true
	}
	return !moved || linkFailure(err) || errors.Is(err, context.DeadlineExceeded)
}

// Worker returns the worker, nil for a server. An evaluator's worker
// pulls (answered at once, outside the clock) and may not push; its Rank
// is the evaluator's.
func (n *Node) Worker() *worker.Worker { return n.wrk }

// Server returns the server, nil for a worker.
func (n *Node) Server() *server.Server { return n.srv }

// IDs returns the node ids of the node's server and worker (0 for none).
func (n *Node) IDs() (srv, wrk transport.NodeID) { return n.assign.Server, n.assign.Worker }

// Machine returns the machine index the scheduler assigned.
func (n *Node) Machine() int { return n.assign.Machine }

// Table returns the routing table.
func (n *Node) Table() *route.Table { return n.table }

// Assignment returns the scheduler's answer to the registration.
func (n *Node) Assignment() proto.Assign { return n.assign }

// Peers returns the address book.
func (n *Node) Peers() map[transport.NodeID]proto.Peer {
	n.mu.Lock()
	defer n.mu.Unlock()
	return maps.Clone(n.book)
}

// Trained returns a channel closed when the scheduler tells an evaluator
// that every worker is done: the servers hold the final model, and the
// job ends once the evaluators are done too (Finish).
func (n *Node) Trained() <-chan struct{} { return n.trained }

// Done returns a channel closed when the job ended.
func (n *Node) Done() <-chan struct{} { return n.done }

// Wait blocks until the job ends: nil when every worker finished, the
// failure otherwise (a *proto.NodeError when a node failed).
func (n *Node) Wait() error {
	<-n.done
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.err
}

// Finish reports the worker's (or evaluator's) end to the scheduler: nil
// when its work is done, an error to fail the job. The job ends when
// every worker finished; Wait tells how.
func (n *Node) Finish(err error) {
	m := n.member(n.assign.Worker)
	if m == nil {
		return
	}
	d := proto.Done{}
	if err != nil {
		d.Err = err.Error()
	}
	n.mu.Lock()
	n.finished = &d
	n.mu.Unlock()
	m.out.Post(proto.SchedulerID, proto.Control(proto.CmdDone, d))
}

// Barrier waits until every member of group ("workers", "servers" or
// "all", or a subgroup "workers/NAME": proto.InGroup) reached the same
// barrier.
func (n *Node) Barrier(ctx context.Context, group string) error {
	_, err := n.AllReduce(ctx, group, nil)
	return err
}

// AllReduce is a barrier of group ("workers", "servers", "all" or
// "workers/NAME", see proto.InGroup) that
// also returns the element-wise sum of the vals of every member: every
// member gets the same sum, added by the scheduler in ascending node id
// order, so it is the same bit for bit on every run. Every member must
// pass the same number of values, or the job fails naming the node that
// differs. A machine is two members of group "all" but contributes vals
// once (its other member adds −0, the identity of floating-point
// addition). vals is not modified; the result is a new slice, nil for no
// values.
func (n *Node) AllReduce(ctx context.Context, group string, vals []float64) ([]float64, error) {
	if len(n.groupMembers(group)) == 0 {
		return nil, fmt.Errorf("node: not a member of barrier group %q", group)
	}
	n.mu.Lock()
	if n.paused || n.loopEpoch != n.epoch {
		err := fmt.Errorf("%w (epoch %d): rejoin before the barrier", proto.ErrPaused, n.epoch)
		n.mu.Unlock()
		return nil, err
	}
	n.seq[group]++
	key := barrierKey{group, n.seq[group]}
	r := &release{ch: make(chan struct{}), sent: slices.Clone(vals), epoch: n.epoch}
	n.barriers[key] = r
	n.mu.Unlock()
	for _, a := range n.arrivals(key, vals, r.epoch) {
		a.m.out.Post(proto.SchedulerID, proto.Control(proto.CmdBarrier, a.b))
	}
	select {
	case <-r.ch:
		if r.err != nil {
			return nil, r.err
		}
		return r.vals, nil
	case <-n.done:
		if err := n.Wait(); err != nil {
			return nil, err
		}
		return nil, proto.ErrShutdown
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Close stops the node: its roles, loops and endpoints. It is
// idempotent; a job still running sees the node leave.
func (n *Node) Close() error {
	n.once.Do(func() {
		n.cancel(worker.ErrStopped)
		for _, m := range n.members {
			m.out.Flush(100 * time.Millisecond)
		}
		close(n.closing)
		n.mu.Lock()
		taken := n.taken
		n.mu.Unlock()
		// The endpoints of the servers taken over first: their ids are
		// free once the scheduler hears of the node's end, and another
		// node may take them over again.
		for _, m := range append(slices.Clone(taken), n.members...) {
			m.out.Close()
			m.ep.Close()
			m.data.Close()
		}
		n.wg.Wait()
	})
	return nil
}

// localSize is the frame size counted for a message that did not travel:
// raw keys, O(1).
func localSize(m *transport.Message) int {
	return transport.FrameSize(m, transport.FrameOptions{RawKeys: true})
}

// landing holds the arrays the co-located worker registered for the
// values of its pulls' answers (workerConn.Land), keyed by the worker
// and the request id; the co-located server takes them (serverConn.Landing)
// and writes there while holding mu, so that a withdrawal (Unland) returns
// only once no write is in progress.
type landing struct {
	mu sync.Mutex
	m  map[landKey][]float32
}

type landKey struct {
	to transport.NodeID
	id uint64
}

func (l *landing) put(k landKey, dst []float32) {
	l.mu.Lock()
	if l.m == nil {
		l.m = make(map[landKey][]float32)
	}
	l.m[k] = dst
	l.mu.Unlock()
}

func (l *landing) drop(k landKey) {
	l.mu.Lock()
	delete(l.m, k)
	l.mu.Unlock()
}

func (l *landing) dropAll(to transport.NodeID) {
	l.mu.Lock()
	for k := range l.m {
		if k.to == to {
			delete(l.m, k)
		}
	}
	l.mu.Unlock()
}

// serverConn answers workers for a server member.
type serverConn struct{ m *member }

// Reply sends a reply to node to (a worker or an evaluator), through
// memory to the co-located worker. Over the network it queues a copy in
// order behind the earlier replies to the same node and returns (see
// replies): replies to different nodes share the wire. The send has no
// deadline (a reply on a slow link takes as long as it needs) and ends
// with the job, ctx. A reply over the frame limit is replaced by an
// error answer naming the server; any other failure ends the job
// (Node.lost), so the worker never waits for an answer that was lost.
func (c serverConn) Reply(ctx context.Context, to transport.NodeID, msg *transport.Message) error {
	return c.ReplyThen(ctx, to, msg, nil)
}

// readerConn is a server member's conn on a link's reader, which
// handles a request when the server is idle (server.Server.Offer): an
// acknowledgement (a reply of a header alone) to the link's peer, the
// request's sender, over the network, when no reply to that peer is
// queued or leaving, is held (held) and leaves on the reader's goroutine
// once the server is free again (flush), instead of through a queue
// emptied by a goroutine started for it (replies). An acknowledged push
// then costs no goroutine and no wake-up of a thread to run it, which
// on a machine whose cores are all busy waits for a core. The reader
// waits for the send of a few bytes into its own peer's socket, which
// the peer's reader drains: a peer that reads nothing more (its process
// stopped) holds its own link's reader, not the server, until its
// replies are abandoned (a pause) or the job ends. Any other reply is
// serverConn's.
type readerConn struct {
	serverConn
	peer transport.NodeID
	held *heldAck
}

// heldAck is the acknowledgement a readerConn holds for its link's
// peer while the server handles the request: its peer's queue is held
// as running meanwhile, so that replies posted by other goroutines go
// behind it.
type heldAck struct {
	q  *replyQueue
	it queuedReply // msg, and the queue's gone when it was held
}

// serveOnReader offers msg, which a link's reader just read, to srv
// (server.Server.Offer) and reports whether srv handled it; an
// acknowledgement to msg's sender that the handling held (readerConn)
// leaves after, the server free.
func (m *member) serveOnReader(ctx context.Context, srv *server.Server, msg *transport.Message) bool {
	c := readerConn{serverConn{m}, msg.Sender, new(heldAck)}
	ok := srv.Offer(ctx, msg, c, m.data.Pushed)
	c.flush()
	return ok
}

func (c readerConn) Reply(ctx context.Context, to transport.NodeID, msg *transport.Message) error {
	if len(msg.Body) != 0 || len(msg.KV.Keys) != 0 || len(msg.KV.Vals) != 0 || len(msg.KV.Lens) != 0 || to != c.peer || c.held.it.msg != nil {
		return c.serverConn.Reply(ctx, to, msg)
	}
	n := c.m.n
	select {
	case <-n.started:
	default:
		return c.serverConn.Reply(ctx, to, msg)
	}
	if n.member(to) != nil {
		return c.serverConn.Reply(ctx, to, msg)
	}
	r := &c.m.replies
	r.mu.Lock()
	q := r.queue(to)
	if q.running || q.gone.Err() != nil {
		r.mu.Unlock()
		return c.serverConn.Reply(ctx, to, msg)
	}
	if ts, ok := c.m.ep.(transport.TrySender); ok {
		// At once if the send cannot wait: the link is free and its
		// socket's queue empty. Under r.mu, so that nothing posted
		// meanwhile overtakes it.
		sent, err := ts.TrySend(to, msg)
		if sent || err != nil {
			r.mu.Unlock()
			if err != nil && ctx.Err() == nil {
				c.m.n.lost(c.m, to, err)
			}
			return err
		}
	}
	q.running = true
	c.held.q, c.held.it.ctx, c.held.it.gone, c.held.it.msg = q, ctx, q.gone, msg
	r.mu.Unlock()
	return nil
}

// flush sends the acknowledgement Reply held, if any, on the caller's
// goroutine, and then has a goroutine send what was queued behind it.
// The send ends when its peer's replies are abandoned, or with the job.
func (c readerConn) flush() {
	h := c.held
	if h.it.msg == nil {
		return
	}
	ctx, stop := sendContext(&h.it)
	if h.it.gone.Err() == nil {
		c.m.n.reply(ctx, c.m, c.peer, h.it.msg)
	}
	stop()
	h.it.msg = nil
	r := &c.m.replies
	r.mu.Lock()
	more := len(h.q.items) > 0
	h.q.running = more
	r.mu.Unlock()
	if more {
		go r.drain(c.m, c.peer, h.q)
	}
}

// ReplyThen is Reply, calling sent (when not nil) once the reply has
// left or failed (server.Queuer).
func (c serverConn) ReplyThen(ctx context.Context, to transport.NodeID, msg *transport.Message, sent func()) error {
	return c.reply(ctx, to, msg, sent, handCopy)
}

// ReplyOwned is ReplyThen for a message whose arrays nothing else holds:
// over the network they are queued without a copy (server.Handover).
func (c serverConn) ReplyOwned(ctx context.Context, to transport.NodeID, msg *transport.Message, sent func()) error {
	return c.reply(ctx, to, msg, sent, handTake)
}

// ReplyView is ReplyThen for a message whose arrays are a view of the
// server's store (server.Handover): over the network they are queued
// without a copy, and it returns once they have left or failed, or
// once Detach copied them.
func (c serverConn) ReplyView(ctx context.Context, to transport.NodeID, msg *transport.Message, sent func()) error {
	return c.reply(ctx, to, msg, sent, handLend)
}

// Detach copies the queued views that have not started leaving, so
// that their ReplyView calls return, and queues the views posted until
// attach is called as copies (server.Handover).
func (c serverConn) Detach() (attach func()) { return c.m.replies.detach(c.m) }

// reply is ReplyThen with the queue's hand h.
func (c serverConn) reply(ctx context.Context, to transport.NodeID, msg *transport.Message, sent func(), h hand) error {
	n := c.m.n
	select {
	case <-n.started:
	case <-ctx.Done():
		return context.Cause(ctx)
	}
	if peer := n.member(to); peer != nil {
		cp := n.pool.Clone(msg)
		cp.Sender, cp.Receiver = c.m.id, to
		size := uint64(localSize(cp))
		c.m.local.msgsSent.Add(1)
		c.m.local.bytesSent.Add(size)
		peer.local.msgsRecv.Add(1)
		peer.local.bytesRecv.Add(size)
		peer.data.Push(cp)
		if sent != nil {
			sent()
		}
		return nil
	}
	if role, _ := proto.Identify(to); h == handLend && (n.assign.Job.Mode != clock.BSP.String() || role != proto.RoleWorker) {
		// Without rounds, a push may come while the view leaves, at
		// any pace of the link: it would wait for the view's wire time
		// (seconds for megabytes on a slow link), and every other
		// push with it. A link that writes lent values in parts lets
		// the push take back what is not written yet, after at most
		// one part (handReclaim); any other gets a copy. Under BSP the
		// server's store changes only with the push that completes the
		// next round, which needs the answer's worker to have it, and
		// only that push waits for the views (server.Core.Changes); an
		// evaluator is in no round, and one that reads slowly or not
		// at all would hold that push.
		h = handCopy
		if _, ok := c.m.ep.(transport.LentSender); ok {
			h = handReclaim
		}
	}
	return c.m.replies.post(ctx, c.m, to, msg, sent, h)
}

// Landing returns the array the co-located worker to registered for the
// answer to request id, holding the registrations until done.
func (c serverConn) Landing(to transport.NodeID, id uint64) ([]float32, func()) {
	l := &c.m.n.landing
	l.mu.Lock()
	dst, ok := l.m[landKey{to, id}]
	if !ok {
		l.mu.Unlock()
		return nil, nil
	}
	delete(l.m, landKey{to, id})
	return dst, l.mu.Unlock
}

// ReplyLanded answers the co-located worker with values that are in its
// own array already: the message shares them (transport.Pool.CloneLanded).
func (c serverConn) ReplyLanded(ctx context.Context, to transport.NodeID, msg *transport.Message) error {
	n := c.m.n
	peer := n.member(to)
	if peer == nil {
		return c.Reply(ctx, to, msg)
	}
	select {
	case <-n.started:
	case <-ctx.Done():
		return context.Cause(ctx)
	}
	cp := n.pool.CloneLanded(msg)
	cp.Sender, cp.Receiver = c.m.id, to
	size := uint64(localSize(cp))
	c.m.local.msgsSent.Add(1)
	c.m.local.bytesSent.Add(size)
	peer.local.msgsRecv.Add(1)
	peer.local.bytesRecv.Add(size)
	peer.data.Push(cp)
	return nil
}

// Local reports whether to is on this node's machine: its answers
// travel through memory (server.Local).
func (c serverConn) Local(to transport.NodeID) bool { return c.m.n.member(to) != nil }

// workerConn posts requests for a worker member.
type workerConn struct{ m *member }

// berths returns the endpoint's registry of destinations for answers,
// nil when the transport has none.
func (c workerConn) berths() *transport.Berths {
	if b, ok := c.m.ep.(interface{ Berths() *transport.Berths }); ok {
		return b.Berths()
	}
	return nil
}

// Land has the values of server s's answer to request id read straight
// into dst, when the answer comes through a transport that can.
func (c workerConn) Land(s int, id uint64, dst []float32) {
	to := proto.ServerID(s)
	if c.m.n.member(to) != nil {
		// The co-located server writes there itself.
		c.m.n.landing.put(landKey{c.m.id, id}, dst)
		return
	}
	if b := c.berths(); b != nil {
		b.Expect(to, id, dst)
	}
}

// LandRoom registers room for the values of the co-located server's
// answer to request id, an answer of per-key lengths that fills room
// from its start; answers over a network are read as usual.
func (c workerConn) LandRoom(s int, id uint64, room []float32) {
	if c.m.n.member(proto.ServerID(s)) != nil {
		c.m.n.landing.put(landKey{c.m.id, id}, room)
	}
}

// Unland withdraws the registration of server s's answer to id.
func (c workerConn) Unland(s int, id uint64) {
	if c.m.n.member(proto.ServerID(s)) != nil {
		c.m.n.landing.drop(landKey{c.m.id, id})
		return
	}
	if b := c.berths(); b != nil {
		b.Cancel(proto.ServerID(s), id)
	}
}

// UnlandAll withdraws every registration.
func (c workerConn) UnlandAll() {
	c.m.n.landing.dropAll(c.m.id)
	if b := c.berths(); b != nil {
		b.CancelAll()
	}
}

// Post sends a request to server rank s, through memory to the
// co-located server.
func (c workerConn) Post(s int, msg *transport.Message) {
	n := c.m.n
	to := proto.ServerID(s)
	if peer := n.member(to); peer != nil {
		msg.Sender, msg.Receiver = c.m.id, to
		msg.Flags |= transport.FlagBorrowed // no early acknowledgement
		size := uint64(localSize(msg))
		c.m.local.msgsSent.Add(1)
		c.m.local.bytesSent.Add(size)
		peer.local.msgsRecv.Add(1)
		peer.local.bytesRecv.Add(size)
		peer.data.Push(msg)
		return
	}
	c.m.out.Post(to, msg)
}
