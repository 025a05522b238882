package sched

import (
	"bytes"
	"cmp"
	"crypto/subtle"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"colo/ps/proto"
	"colo/ps/replica"
	"colo/transport"
)

// # Takeover
//
// A scheduler's state while the job runs is small, and every part of it
// is also on the nodes: the membership (each node knows its ids, its
// addresses, its machine and its key), the epoch, the barriers (each
// node knows the arrivals it sent that were not released, and the last
// release of each group it had), and which workers are done. So a
// scheduler that dies can be taken over by another started at the same
// address, with the same identity and the same settings, and
// Config.Takeover (the launcher does it: launch.Cluster.Standby).
//
// With Config.Standby the job tells the nodes (proto.Job.Standby); a
// node whose link to the scheduler closes does not end the job but
// sends its report, proto.Rejoin, from a provisional id every
// heartbeat, for up to Timeout, until a scheduler answers it
// (proto.Rejoined; a scheduler that ran the job all along answers too:
// the node had lost a link to it, not the scheduler). The taking-over
// scheduler collects the reports; once every server, worker and
// evaluator is in one, it rebuilds its state (Rebuild, a pure function
// of the reports), answers every node, releases again the barriers
// whose release a node lost, and feeds the pending arrivals and ends to
// the barriers as they would have come. The job goes on where it was:
// no pause, no rollback, and under BSP the model is the one of a run
// without failure, bit for bit (the servers and the workers never
// stopped; only the barriers waited).
//
// Barrier and Done messages that reach it before its state is rebuilt
// are held and handled after; a report that comes after (a node that
// sent a barrier arrival in between, lost with no scheduler to take it)
// is handled as its arrivals and its end again, and so are those a node
// sends again once answered: an arrival at a released barrier gets the
// release again, and one at an older barrier is ignored (Core.barrier).
//
// A node that died with the scheduler sends no report. When its
// replacement registers (proto.Register.Recover) while the scheduler
// waits for the reports, the scheduler takes the job over from the
// reports it has (takeOverWithout) and pauses it for the replacement of
// every node that did not report, in one failure event: the survivors
// roll back to the last checkpoint with the replacement, as after the
// failure of that node alone (Recovery in the package documentation).
//
// A takeover cannot work, and the job ends with an error naming why
// (the launcher then restarts the whole job from its last checkpoint),
// when a node's report is missing after Timeout and no replacement of
// it registered, when a node reports a
// pause (the scheduler died while the job waited for a replacement),
// a failover of replicated key ranges, or an epoch other than the
// others', or when two reports contradict each other.

// takeover is the state of a takeover until the job runs again.
type takeover struct {
	// reports are the latest report of each node, by its first member's
	// id; by is the tick by which every node must have reported.
	reports map[transport.NodeID]proto.Rejoin
	by      int64
	// held are the Barrier and Done messages received before the state
	// was rebuilt, in their order.
	held []heldMsg
	// pending are the registrations of replacements waiting for the
	// reports to show that every node that did not report is replaced.
	pending []pendingReg
	// unsettled is set once the reports disagreed (logged once).
	unsettled bool
}

// pendingReg is a replacement's registration during a takeover, for
// the nodes ids.
type pendingReg struct {
	from transport.NodeID
	r    proto.Register
	ids  []transport.NodeID
}

// heldMsg is a control message held during a takeover.
type heldMsg struct {
	from transport.NodeID
	cmd  uint16
	body []byte
}

// Rebuilt is the state of a running job as its nodes' reports give it
// (Rebuild).
type Rebuilt struct {
	// Epoch is the membership epoch every node reported.
	Epoch uint64
	// Peers are the members reported, by id: the address book.
	Peers []proto.Peer
	// Done are the workers and evaluators that sent Done, with its
	// error ("" for none).
	Done map[transport.NodeID]string
	// Trained is set when an evaluator had Trained.
	Trained bool
	// Released is the last release of each barrier group (the highest
	// number any node had).
	Released map[string]proto.Barrier
	// Waiting are the arrivals not released, in node id order, then
	// group and number.
	Waiting []Arrival
	// Missing are the servers, workers and evaluators of the job that
	// no report names, in id order.
	Missing []transport.NodeID
	// With replicated key ranges (Config.Replicas): Failovers is the
	// number of failovers the job had (the last proto.Failover.Seq);
	// Holders[p] is the rank whose process serves server p's ranges
	// (p itself, or the backup that took them over; −1 when no report
	// names p); Copies[p] are the ranks whose processes hold a copy of
	// them that their server replicates to, in ring order
	// (replica.InRing); Rebuilding are the new copies asked for and not
	// in place yet (one a rank at most). Nil without replicas.
	Failovers  int
	Holders    []int
	Copies     [][]int
	Rebuilding []proto.Backup
}

// Arrival is a node's arrival at a barrier.
type Arrival struct {
	From    transport.NodeID
	Barrier proto.Barrier
}

// Rebuild returns the state of the running job of cfg's shape that the
// reports give, or an error naming the report that makes a takeover
// impossible: a pause, epochs that differ, a node id that is not the
// job's, or one id at two addresses, or two releases of a barrier with
// different sums; with replicated key ranges, a failover the dead
// scheduler was announcing (a node had its first announcement and not
// the second), failover counts that differ, a server served by two
// processes, or ranges replicated to a server whose process failed
// over or that does not exist (replicas). Reports of the same node (the
// latest counts) may repeat. It does not modify reports. O(n log n) in
// the number of members and arrivals, plus O(servers × copies).
func Rebuild(cfg Config, reports []proto.Rejoin) (*Rebuilt, error) {
	rb := &Rebuilt{Done: map[transport.NodeID]string{}, Released: map[string]proto.Barrier{}}
	expected := map[transport.NodeID]bool{}
	for i := range cfg.NumServers {
		expected[proto.ServerID(i)] = true
	}
	for i := range cfg.NumWorkers {
		expected[proto.WorkerID(i)] = true
	}
	for i := range cfg.NumEvaluators {
		expected[proto.EvaluatorID(i)] = true
	}
	peers := map[transport.NodeID]proto.Peer{}
	waiting := map[transport.NodeID][]proto.Barrier{}
	// first is the first report that names a member, whose epoch the
	// others must have.
	first := -1
	for i, r := range reports {
		if len(r.Members) == 0 {
			continue
		}
		who := proto.Name(r.Members[0].ID)
		switch {
		case r.Paused:
			return nil, fmt.Errorf("the node of %s was paused (epoch %d): the scheduler died while the job waited for a replacement", who, r.Epoch)
		case r.Failovers > 0 && cfg.Replicas == 0:
			return nil, fmt.Errorf("the node of %s was told of %d failovers of replicated key ranges, and the job replicates none", who, r.Failovers)
		case r.Announced > r.Failovers:
			return nil, unsettled{fmt.Errorf("the node of %s was told of failover %d of replicated key ranges without the address of the server taking over: the scheduler died while announcing it", who, r.Announced)}
		case first >= 0 && r.Failovers != rb.Failovers:
			return nil, unsettled{fmt.Errorf("the node of %s was told of %d failovers of replicated key ranges, the node of %s of %d", who, r.Failovers, proto.Name(reports[first].Members[0].ID), rb.Failovers)}
		case first >= 0 && r.Epoch != rb.Epoch:
			return nil, fmt.Errorf("the node of %s is in epoch %d, the node of %s in epoch %d", who, r.Epoch, proto.Name(reports[first].Members[0].ID), rb.Epoch)
		}
		if first < 0 {
			first = i
		}
		rb.Epoch, rb.Failovers = r.Epoch, r.Failovers
		for _, m := range r.Members {
			if !expected[m.ID] {
				return nil, fmt.Errorf("the node of %s reports node %d (%s), which is not a member of a job of %d servers, %d workers and %d evaluators",
					who, m.ID, proto.Name(m.ID), cfg.NumServers, cfg.NumWorkers, cfg.NumEvaluators)
			}
			if p, ok := peers[m.ID]; ok && p.Addr != m.Addr {
				return nil, fmt.Errorf("%s is reported at %s and at %s", proto.Name(m.ID), p.Addr, m.Addr)
			}
			machine := r.Machine
			if role, _ := proto.Identify(m.ID); role == proto.RoleEvaluator {
				machine = -1
			}
			peers[m.ID] = proto.Peer{ID: m.ID, Addr: m.Addr, Machine: machine, Host: r.Host, Key: bytes.Clone(r.Key)}
			delete(rb.Done, m.ID)
			if m.Done {
				rb.Done[m.ID] = m.Err
			}
			rb.Trained = rb.Trained || m.Trained
			waiting[m.ID] = nil
			for _, b := range m.Waiting {
				if b.Epoch == r.Epoch {
					waiting[m.ID] = append(waiting[m.ID], b)
				}
			}
		}
	}
	// The releases, once the epoch is known: those of earlier epochs
	// are of no barrier still pending.
	for _, r := range reports {
		if r.Epoch != rb.Epoch {
			continue
		}
		for _, b := range r.Released {
			if b.Epoch != rb.Epoch {
				continue
			}
			have, ok := rb.Released[b.Group]
			switch {
			case !ok || b.Seq > have.Seq:
				rb.Released[b.Group] = b
			case b.Seq == have.Seq && !slices.Equal(b.Bits, have.Bits):
				return nil, fmt.Errorf("release %d of barrier group %q is reported with two different sums", b.Seq, b.Group)
			}
		}
	}
	for _, id := range slices.Sorted(maps.Keys(peers)) {
		rb.Peers = append(rb.Peers, peers[id])
		w := slices.Clone(waiting[id])
		slices.SortFunc(w, func(a, b proto.Barrier) int { return cmp.Or(cmp.Compare(a.Group, b.Group), cmp.Compare(a.Seq, b.Seq)) })
		for _, b := range w {
			rb.Waiting = append(rb.Waiting, Arrival{From: id, Barrier: b})
		}
	}
	for _, id := range slices.Sorted(maps.Keys(expected)) {
		if _, ok := peers[id]; !ok {
			rb.Missing = append(rb.Missing, id)
		}
	}
	if cfg.Replicas > 0 {
		if err := rebuildReplicas(cfg, reports, rb); err != nil {
			return nil, err
		}
	}
	return rb, nil
}

// unsettled is an error of Rebuild that a node's next report may mend:
// the dead scheduler's last announcement of a failover, read by a node
// after its link failed, changes what the node reports. A takeover
// waits for the reports to agree until its deadline (tickTakeover).
type unsettled struct{ error }

func (u unsettled) Unwrap() error { return u.error }

// rebuildReplicas fills rb's Holders, Copies and Rebuilding from the
// reports (Rebuild): every server reported is served by one process; a
// copy counts when the process serving its ranges replicates to it and
// its holder reports it, is being made when only the first is so (or
// the copy waits for its server's quiet point), and is a copy its ranges
// left behind (dropped) otherwise.
func rebuildReplicas(cfg Config, reports []proto.Rejoin, rb *Rebuilt) error {
	n := cfg.NumServers
	rb.Holders, rb.Copies = make([]int, n), make([][]int, n)
	for p := range rb.Holders {
		rb.Holders[p] = -1
	}
	// The reports' server members: the ranges each serves, what they
	// are replicated to and the copies held, by rank.
	type served struct {
		m   proto.RejoinMember
		who string
	}
	serves := make([]*served, n)
	copies := make([][]int, n)
	for _, r := range reports {
		if len(r.Members) == 0 {
			continue
		}
		who := proto.Name(r.Members[0].ID)
		own := -1
		for _, m := range r.Members {
			if role, q := proto.Identify(m.ID); role == proto.RoleServer && !m.Moved {
				own = q
				copies[q] = m.Copies
			}
		}
		for _, m := range r.Members {
			role, q := proto.Identify(m.ID)
			if role != proto.RoleServer {
				if m.Moved {
					return fmt.Errorf("the node of %s reports %s as a server it took over", who, proto.Name(m.ID))
				}
				continue
			}
			h := q
			if m.Moved {
				if own < 0 {
					return fmt.Errorf("the node of %s reports serving %s with no server of its own", who, proto.Name(m.ID))
				}
				h = own
			}
			if prev := serves[q]; prev != nil && prev.who != who {
				return fmt.Errorf("%s is served by the node of %s and by the node of %s", proto.Name(m.ID), prev.who, who)
			}
			serves[q] = &served{m: m, who: who}
			rb.Holders[q] = h
		}
	}
	for p, s := range serves {
		if s == nil {
			continue // missing: replaced, or the takeover fails
		}
		h := rb.Holders[p]
		check := func(b int, what string) (bool, error) {
			switch {
			case b < 0 || b >= n || b == h:
				return false, fmt.Errorf("the node of %s replicates server %d's ranges to server %d, %s: not a backup of a job of %d servers", s.who, p, b, what, n)
			case rb.Holders[b] == -1:
				return false, nil // a server that did not report
			case rb.Holders[b] != b:
				return false, unsettled{fmt.Errorf("the node of %s replicates server %d's ranges to server %d (%s), whose process failed over to server %d's", s.who, p, b, what, rb.Holders[b])}
			}
			return true, nil
		}
		var making []int
		for _, b := range s.m.Backups {
			ok, err := check(b, "a backup")
			if err != nil {
				return err
			}
			switch {
			case !ok:
			case slices.Contains(copies[b], p):
				rb.Copies[p] = append(rb.Copies[p], b)
			default:
				making = append(making, b) // the copy on its way
			}
		}
		for _, b := range s.m.Joining {
			if ok, err := check(b, "a new backup"); err != nil {
				return err
			} else if ok && !slices.Contains(s.m.Backups, b) {
				making = append(making, b)
			}
		}
		replica.InRing(p, n, rb.Copies[p])
		if len(making) > 0 {
			rb.Rebuilding = append(rb.Rebuilding, proto.Backup{Server: p, Backup: making[0], Seq: rb.Failovers})
		}
	}
	return nil
}

// maxHeld bounds the messages held per node of the job during a
// takeover: a node has at most a few barriers in flight.
const maxHeld = 16

// hold keeps a Barrier or a Done received before the takeover rebuilt
// the state, to handle it after.
func (c *Core) hold(m *transport.Message) {
	if m.Cmd != proto.CmdBarrier && m.Cmd != proto.CmdDone || proto.IsProvisional(m.Sender) {
		return
	}
	if len(c.takeover.held) >= maxHeld*(c.cfg.NumServers+c.cfg.NumWorkers+c.cfg.NumEvaluators) {
		return
	}
	c.takeover.held = append(c.takeover.held, heldMsg{from: m.Sender, cmd: m.Cmd, body: bytes.Clone(m.Body)})
}

// rejoin handles a node's report (proto.Rejoin): a scheduler that
// takes over a job, before it rebuilt the state, to rebuild it; after,
// as the node's arrivals and end sent again. Once it runs the job, a
// scheduler answers the node with Rejoined.
func (c *Core) rejoin(from transport.NodeID, r proto.Rejoin) {
	if len(r.Members) == 0 {
		return
	}
	if !proto.IsProvisional(from) {
		c.logf("report from node %d, not a provisional id", from)
		return
	}
	if subtle.ConstantTimeCompare([]byte(r.Token), []byte(proto.TokenDigest(c.cfg.Token))) != 1 {
		c.refusedf("refused the report of %s: wrong cluster token", proto.Name(r.Members[0].ID))
		return
	}
	switch c.phase {
	case rejoining:
		c.takeover.reports[r.Members[0].ID] = r
		rb, err := c.rebuild()
		if errors.As(err, new(unsettled)) {
			if !c.takeover.unsettled {
				c.logf("the reports disagree, waiting for them to agree until the takeover's deadline: %v", err)
			}
			c.takeover.unsettled = true
			return
		}
		if err != nil {
			c.endTakeover(rb, err)
			return
		}
		pending := c.takeover.pending
		if len(rb.Missing) == 0 {
			c.takeover.pending = nil
			c.apply(rb)
		}
		// The replacements waiting: now taken (their nodes did not
		// report, and every other node did), or answered as any.
		for _, p := range pending {
			if c.phase == ended || len(rb.Missing) > 0 && c.phase != rejoining {
				break // taken over: the first answered the others
			}
			c.register(p.from, p.r)
		}
	case running, paused:
		// A scheduler that took the job over hears the node's arrivals
		// and end again; one that ran the job all along (the node lost
		// a link to it, not the scheduler) had them. Either answers, so
		// that the node stops reporting.
		again := c.cfg.Takeover && c.phase == running && r.Epoch == c.epoch
		var ids []transport.NodeID
		for _, m := range r.Members {
			mb := c.members[m.ID]
			if mb == nil || mb.addr != m.Addr {
				continue
			}
			ids = append(ids, m.ID)
			mb.lastSeen = c.tick
			if !again {
				continue
			}
			for _, b := range m.Waiting {
				c.barrier(m.ID, b)
			}
			if m.Done && !mb.done && c.phase == running {
				c.done(m.ID, proto.Done{Err: m.Err})
			}
		}
		for _, id := range ids {
			c.send(id, "", proto.CmdRejoined, proto.Rejoined{Epoch: c.epoch, TakenOver: c.cfg.Takeover})
		}
	}
}

// rebuild rebuilds the state from the reports so far, in the order of
// their nodes' first ids.
func (c *Core) rebuild() (*Rebuilt, error) {
	var reports []proto.Rejoin
	for _, id := range slices.Sorted(maps.Keys(c.takeover.reports)) {
		reports = append(reports, c.takeover.reports[id])
	}
	return Rebuild(c.cfg, reports)
}

// install makes the members of rb the scheduler's, and its replicated
// ranges' holders and copies: a server whose ranges another's process
// serves is a member moved there, as after its failover.
func (c *Core) install(rb *Rebuilt) {
	for _, p := range rb.Peers {
		c.members[p.ID] = &member{id: p.ID, addr: p.Addr, host: p.Host, machine: p.Machine, ready: true, lastSeen: c.tick, key: p.Key}
		c.learnKey(p.ID, p.Key)
		c.machines = max(c.machines, p.Machine+1)
	}
	if c.copies == nil || rb.Holders == nil {
		return
	}
	c.failedBefore = rb.Failovers
	clear(c.rebuilding)
	for p, h := range rb.Holders {
		if h < 0 {
			continue // no report: its replacement holds the copies of a start (recopy)
		}
		c.holders[p], c.copies[p] = h, slices.Clone(rb.Copies[p])
		if m := c.members[proto.ServerID(p)]; m != nil && h != p {
			m.moved, m.replacement = true, true
		}
	}
	for _, b := range rb.Rebuilding {
		c.rebuilding[b.Server] = rebuild{backup: b.Backup, holder: rb.Holders[b.Server]}
	}
	var short []string
	for p := range c.copies {
		if len(c.copies[p]) < c.job.Replicas {
			short = append(short, fmt.Sprintf("server %d's %d", p, len(c.copies[p])))
		}
	}
	c.logf("replicated ranges rebuilt from the reports: %d failovers before, served by %v, copies %v, %d new copies being made; below %d copies: %s",
		rb.Failovers, c.holders, c.copies, len(rb.Rebuilding), c.job.Replicas, cmp.Or(strings.Join(short, ", "), "none"))
}

// apply takes the job over with the state rb: every node hears the
// scheduler again, the releases lost are sent again, and the arrivals
// and ends pending (those of rb, then those held) are handled as if
// they had just come.
func (c *Core) apply(rb *Rebuilt) {
	c.install(rb)
	c.epoch, c.trained, c.phase = rb.Epoch, rb.Trained, running
	c.rel = maps.Clone(rb.Released)
	held := c.takeover.held
	c.takeover.held = nil
	c.logf("job taken over (epoch %d): %d nodes reported, %d barrier arrivals pending, %d done", c.epoch, len(rb.Peers), len(rb.Waiting), len(rb.Done))
	for _, p := range c.Peers() {
		c.send(p.ID, "", proto.CmdRejoined, proto.Rejoined{Epoch: c.epoch, TakenOver: true})
	}
	for _, a := range rb.Waiting {
		c.barrier(a.From, a.Barrier)
	}
	for _, id := range slices.Sorted(maps.Keys(rb.Done)) {
		if c.phase == running {
			c.done(id, proto.Done{Err: rb.Done[id]})
		}
	}
	defer c.rebackup() // the ranges short of copies get new ones, as after a failover
	for _, h := range held {
		if c.phase != running {
			break
		}
		m := &transport.Message{Header: transport.Header{Type: transport.TypeControl, Cmd: h.cmd, Sender: h.from}, Body: h.body}
		switch h.cmd {
		case proto.CmdBarrier:
			var b proto.Barrier
			if proto.Decode(m, &b) == nil {
				c.barrier(h.from, b)
			}
		case proto.CmdDone:
			var d proto.Done
			if mb := c.members[h.from]; proto.Decode(m, &d) == nil && mb != nil && !mb.done {
				c.done(h.from, d)
			}
		}
	}
}

// endTakeover ends the job whose takeover failed with err, telling the
// nodes that reported (rb's, when not nil, or every report's).
func (c *Core) endTakeover(rb *Rebuilt, err error) {
	if rb == nil {
		rb = &Rebuilt{}
		for _, r := range c.takeover.reports {
			for _, m := range r.Members {
				rb.Peers = append(rb.Peers, proto.Peer{ID: m.ID, Addr: m.Addr, Machine: r.Machine, Host: r.Host, Key: r.Key})
			}
		}
	}
	c.install(rb)
	cause := fmt.Errorf("the job cannot be taken over: %w", err)
	for _, p := range c.takeover.pending {
		c.send(p.from, p.r.Addr, proto.CmdRefuse, proto.Refuse{Reason: cause.Error()})
	}
	c.takeover.pending = nil
	if len(rb.Missing) > 0 {
		c.phase = running // for abort
		c.abort(rb.Missing[0], cause, false)
		return
	}
	c.phase, c.err = ended, fmt.Errorf("sched: %w", cause)
	c.logf("%v", c.err)
	for _, p := range c.Peers() {
		c.send(p.ID, "", proto.CmdAbort, proto.Abort{Reason: c.err.Error()})
	}
}

// tickTakeover ends a takeover that has not every node's report by its
// deadline.
func (c *Core) tickTakeover() {
	if c.tick <= c.takeover.by {
		return
	}
	rb, err := c.rebuild()
	if err == nil {
		err = fmt.Errorf("no report from %s within %v of the takeover", names(rb.Missing), c.cfg.Timeout)
	}
	c.endTakeover(rb, err)
}

// takeOverWithout answers the registration (from, r) of the
// replacement of the nodes ids during a takeover: ids must be nodes
// that did not report. Until the reports show that every node that did
// not report has a replacement registered, it keeps the registration
// and reports false. Then it takes the job over from the reports, and
// every node that did not report has failed (pause): the replacements
// take their places (the caller answers this one, it the others). The
// nodes that did not report get placeholder machine indices, the ones
// no report has (a server and a worker of one rank sharing one when
// the reports show machines); only the replacement's counts, and it is
// a machine index its predecessor had when one machine is missing.
func (c *Core) takeOverWithout(from transport.NodeID, r proto.Register, ids []transport.NodeID) (bool, error) {
	if !c.job.Recover {
		return false, errors.New("this job replaces no failed node (the scheduler has no recovery wait)")
	}
	rb, err := c.rebuild()
	if err != nil {
		return false, fmt.Errorf("the job cannot be taken over: %w", err)
	}
	for _, id := range ids {
		if !slices.Contains(rb.Missing, id) {
			return false, fmt.Errorf("%s has reported to the scheduler taking the job over: it has not failed", proto.Name(id))
		}
	}
	t := c.takeover
	t.pending = slices.DeleteFunc(t.pending, func(p pendingReg) bool { return p.from == from })
	t.pending = append(t.pending, pendingReg{from: from, r: r, ids: ids})
	covered := map[transport.NodeID]bool{}
	for _, p := range t.pending {
		for _, id := range p.ids {
			covered[id] = true
		}
	}
	for _, id := range rb.Missing {
		if !covered[id] {
			return false, nil // more reports, or replacements, to come
		}
	}
	if len(rb.Peers) == 0 {
		return false, nil
	}
	others := slices.DeleteFunc(slices.Clone(t.pending), func(p pendingReg) bool { return p.from == from })
	t.pending = nil
	// The state of the reports, but no barrier is released or job
	// ended from them: the pause fails the barriers that wait, and the
	// workers roll back.
	c.install(rb)
	c.epoch, c.trained, c.phase = rb.Epoch, rb.Trained, running
	c.rel = maps.Clone(rb.Released)
	c.takeover.held = nil
	for _, p := range c.Peers() {
		c.send(p.ID, "", proto.CmdRejoined, proto.Rejoined{Epoch: c.epoch, TakenOver: true})
	}
	c.logf("job taken over (epoch %d): %d nodes reported, %s did not", c.epoch, len(rb.Peers), names(rb.Missing))
	for _, id := range slices.Sorted(maps.Keys(rb.Done)) {
		if rb.Done[id] != "" {
			c.abort(id, errors.New(rb.Done[id]), false)
			return false, fmt.Errorf("the job ended: %s failed: %s", proto.Name(id), rb.Done[id])
		}
		c.members[id].done = true
	}
	// Placeholders for the nodes that did not report.
	used := map[int]bool{}
	machines := false
	for _, p := range rb.Peers {
		used[p.Machine] = true
	}
	for _, r := range c.takeover.reports {
		own := 0
		for _, m := range r.Members {
			if !m.Moved {
				own++
			}
		}
		machines = machines || own == 2
	}
	next := 0
	fresh := func() int {
		for used[next] {
			next++
		}
		used[next] = true
		return next
	}
	byRank := map[int]int{}
	for _, id := range rb.Missing {
		role, rank := proto.Identify(id)
		if role == proto.RoleEvaluator {
			return false, fmt.Errorf("%s did not report, and an evaluator is not replaced", proto.Name(id))
		}
		m, ok := byRank[rank]
		if !ok || !machines {
			m = fresh()
			byRank[rank] = m
		}
		c.members[id] = &member{id: id, machine: m, lastSeen: c.tick}
	}
	cause := errors.New("no report to the scheduler that took the job over: it died with the scheduler")
	for _, id := range rb.Missing {
		if c.members[id] != nil && c.phase != ended {
			c.pause(id, cause)
		}
	}
	if c.phase != paused {
		return false, fmt.Errorf("the job could not wait for the replacement: %v", c.err)
	}
	for _, p := range others {
		c.register(p.from, p.r)
	}
	return true, nil
}
