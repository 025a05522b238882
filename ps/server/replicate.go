package server

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"colo/kv"
	"colo/ps/clock"
	"colo/ps/proto"
	"colo/ps/replica"
	"colo/ps/update"
	"colo/transport"
)

// Replication: the driver's side of package replica (OSDI'14 §4.3).
//
// A server of a job with backups (Replication) sends every update of
// its store to each live backup (proto.DataReplicate), and holds the
// acknowledgements of the pushes (replica.Primary) until the backups
// have what they need. A backup keeps, for each server it backs up, a
// copy: a Core of that server's rank, fed the same updates in the same
// order, so that it holds the same values and update rule states bit
// for bit.
//
// Under BSP with a uniform width the update is the round's sum
// (replication after aggregation, the paper's "the server replicates
// the aggregated update instead of each push"): when a round completes,
// the primary sends the sum its rule is applied to (Core.TakeSum), one
// push's worth of values instead of the W pushes, and the copy applies
// it with the same rule (Core.ApplySum). The round's acknowledgements go
// once the backups have the round before (replica.Primary.ApplyAhead),
// not this one, so that the sum crosses to the backups while the
// workers compute the next round; each acknowledgement tells its worker
// how many rounds the backups have (Reply.replicated), and the worker
// keeps its pushes of the later rounds to send them again if the server
// fails (package worker, Config.Resend). The sums, and every other
// update of such a server, are sent by a goroutine of their own
// (sender), in order, so that the server's loop goes on serving pulls
// while a sum is on the wire. Under bounded delay and asynchronous
// training, and at width 0, the update is each request as the server
// applied it (the worker's push itself), sent from the server's loop,
// and a push is acknowledged once every live backup has it; the copy
// applies it with the same code.
//
// When the primary fails, its first live backup takes its copy over
// (Failover): the copy becomes a server of the failed rank, on a new
// endpoint of the backup's node, and the workers send it again every
// request the failed server had not answered, and the pushes they kept.
// A push the copy holds already (replica.Replica.Has) is acknowledged,
// not applied again: once its round is summed, or at once under
// asynchronous training; the others are applied as on the primary. So
// no acknowledged push is lost, none is applied twice, and under BSP
// the rounds go on bit for bit as without the failure: the copy sums
// the rounds it lacks from the same pushes in the same order.
//
// The acknowledgements the server sends before the push is applied
// (Core.Ack, HandleArriving) are off with backups: an acknowledgement
// waits for the backups.

// Replication is what a server of a job with backups is told at its
// start: the ranks of its backups and of the servers it backs up.
type Replication struct {
	// Backups are the ranks of the server's backups (replica.Chain).
	Backups []int
	// Copies are the ranks of the servers it backs up.
	Copies []int
	// Takeover, when not nil, is called on the server's goroutine when
	// the server takes over the ranges of a failed server (Failover):
	// it should run srv, a server of the failed rank, on an endpoint of
	// that rank.
	Takeover func(rank int, srv *Server)
	// BackedUp, when not nil, is called on the server's goroutine once
	// the server holds a new copy of server rank's ranges, sent whole by
	// that server (proto.Backup): it should tell the scheduler, which
	// then counts the server among rank's backups.
	BackedUp func(rank int)
	// Report are ranks among Copies whose copies are reported with
	// BackedUp once their first update arrives: a replacement's copies
	// of ranges whose server replicated to the failed process (a new
	// copy made after a failover), which the server goes on doing after
	// the rollback, from an empty store as the copy.
	Report []int
}

// replication is a server's state of its replication.
type replication struct {
	primary  *replica.Primary[Reply]
	copies   map[int]*copyOf
	takeover func(int, *Server)
	// taken is the record of the copy a server took over, nil for a
	// server that started as its rank.
	taken *replica.Replica
	// takenEpoch is the membership epoch the server was taken over in:
	// the workers of a later epoch (a replacement after a pause among
	// them) know its new address from the start.
	takenEpoch uint64
	// sums is set when the server replicates its rounds' sums (BSP, a
	// uniform width); out then sends its updates, rounds holds the
	// sequence numbers of the sums not yet on every live backup, and
	// replicated is the number of rounds every live backup has.
	sums       bool
	out        *sender
	rounds     []sumSeq
	replicated int64
	// parked holds the requests a server taken over got before the
	// pushes of the round before theirs were summed (park).
	parked []*transport.Message
	// refused holds the refusals of pushes of the round not summed yet,
	// when the server replicates sums: they go with the round
	// (replicateSum).
	refused []Reply
	// joining are the new backups the server is to send a copy of its
	// ranges to at its next quiet point (join); backedUp is
	// Replication.BackedUp.
	joining  []proto.Backup
	backedUp func(int)
	// stats counts the updates; applied holds when each update still in
	// the primary's queue was applied, oldest first.
	stats   ReplicaStats
	applied []time.Time
}

// ReplicaStats counts what a primary sent its backups and how long the
// acknowledgements of its pushes waited for them (Stats.Replication).
type ReplicaStats struct {
	// Updates is the number of updates sent to the backups, Sums those
	// of them that were rounds' sums, and Values the values they
	// carried, each counted once whatever the number of backups.
	Updates uint64 `json:"updates"`
	Sums    uint64 `json:"sums"`
	Values  uint64 `json:"values"`
	// Held is the number of updates whose acknowledgements waited for
	// the backups, HeldNanos the time they waited, summed.
	Held      uint64 `json:"held"`
	HeldNanos int64  `json:"held_nanos"`
	// Copies is the number of whole copies of the server's ranges sent
	// to new backups (proto.Backup), CopyValues the values and rule
	// states they carried; Refused counts the requests for one the
	// server could not serve (a store with key families or keys moved
	// in, whose copy would not apply the updates as the server does).
	// Rebuilt is the number of copies of other servers' ranges the
	// server received whole and holds.
	Copies     uint64 `json:"copies,omitempty"`
	CopyValues uint64 `json:"copy_values,omitempty"`
	Refused    uint64 `json:"copies_refused,omitempty"`
	Rebuilt    uint64 `json:"rebuilt,omitempty"`
}

// Add adds o's counts to r.
func (r *ReplicaStats) Add(o ReplicaStats) {
	r.Updates, r.Sums, r.Values = r.Updates+o.Updates, r.Sums+o.Sums, r.Values+o.Values
	r.Held, r.HeldNanos = r.Held+o.Held, r.HeldNanos+o.HeldNanos
	r.Copies, r.CopyValues, r.Refused, r.Rebuilt = r.Copies+o.Copies, r.CopyValues+o.CopyValues, r.Refused+o.Refused, r.Rebuilt+o.Rebuilt
}

// track notes that an update was applied at now, when apply is set,
// and counts the waits of the updates the primary released since.
func (r *replication) track(apply bool, now time.Time) {
	if apply {
		r.applied = append(r.applied, now)
	}
	n := len(r.applied) - r.primary.Pending()
	for _, t := range r.applied[:max(n, 0)] {
		if d := now.Sub(t); d > 0 {
			r.stats.Held++
			r.stats.HeldNanos += int64(d)
		}
	}
	if n > 0 {
		r.applied = r.applied[:copy(r.applied, r.applied[n:])]
	}
}

// park keeps request req of message m for later when the server took
// over a primary that replicated sums and the round before req's is not
// summed yet under BSP: the failed primary had acknowledged that round
// before its backups had it, the worker went on and sent req again here
// behind the pushes it kept, and the other workers' pushes of the round
// are still to come. Such a request (a pull of the next round, or what a
// worker asks between rounds once every push is acknowledged: a
// checkpoint's snapshot, a move's table, take or put) is served once the
// round is summed (unpark), on the state the primary served it on; a
// snapshot or a new table would otherwise find the round's pushes held
// and be refused. The workers' pushes of the round are not parked: they
// complete it. Elsewhere a worker sends a request of a round only after
// every server acknowledged the round before, and nothing is parked.
func (r *replication) park(c *Core, req Request, m *transport.Message) bool {
	if r.taken == nil || !c.sync || req.Evaluator || req.Push && req.Cmd <= proto.DataRange || req.Round <= c.clock.Min() {
		return false
	}
	r.parked = append(r.parked, m)
	return true
}

// unpark returns the parked requests whose rounds before are summed, in
// the order they came, and keeps the others.
func (r *replication) unpark(c *Core) []*transport.Message {
	var out []*transport.Message
	keep := r.parked[:0]
	for _, m := range r.parked {
		if round, err := proto.ParseMeta(m); err == nil && round > c.clock.Min() {
			keep = append(keep, m)
		} else {
			out = append(out, m)
		}
	}
	clear(r.parked[len(keep):])
	r.parked = keep
	return out
}

// sumSeq is the sequence number of a round's sum.
type sumSeq struct {
	seq   uint64
	round int64
}

// advance drops from rounds the sums every live backup has, counting
// them in replicated.
func (r *replication) advance() {
	upto := r.primary.Replicated()
	n := 0
	for n < len(r.rounds) && r.rounds[n].seq <= upto {
		r.replicated = r.rounds[n].round + 1
		n++
	}
	r.rounds = r.rounds[:copy(r.rounds, r.rounds[n:])]
}

// stamp tells each acknowledgement of a push in rs how many rounds the
// backups have, when the server replicates sums: the worker keeps its
// pushes of the later rounds.
func (r *replication) stamp(rs []Reply) []Reply {
	if !r.sums {
		return rs
	}
	for i := range rs {
		if !rs[i].Pull && rs[i].Err == nil && !rs[i].Evaluator {
			rs[i].tell, rs[i].replicated = true, r.replicated
		}
	}
	return rs
}

// rewind starts the replication again with the job's new epoch (a
// rollback to a checkpoint): the updates are numbered from 1 again, and
// the backups' copies start again from an empty store at the first
// update of the epoch. The acknowledgements held and the requests parked
// are dropped: their calls failed with the pause.
func (r *replication) rewind() {
	r.primary = replica.NewPrimary[Reply](r.primary.Backups())
	r.rounds, r.replicated, r.applied, r.refused = r.rounds[:0], 0, r.applied[:0], r.refused[:0]
	// The requests parked were of the epoch before: their calls failed with
	// the pause, and their rounds count from 0 again.
	for _, m := range r.parked {
		m.Release()
	}
	clear(r.parked)
	r.parked = r.parked[:0]
	if r.taken != nil {
		r.taken.Reset()
	}
}

// later reports whether request m is of a membership epoch after the
// one the server was taken over in: its worker joined or rejoined after
// the failover and sent it to this server's address, so it is served
// without proto.FlagResent.
func (r *replication) later(m *transport.Message) bool {
	_, epoch, err := proto.ParseMetaEpoch(m)
	return err == nil && epoch > r.takenEpoch
}

// copyOf is a backup's copy of one server's ranges.
type copyOf struct {
	core  *Core
	rec   *replica.Replica
	epoch uint64
	// gen is the number of failovers of the job when the copy was made
	// (proto.Backup.Seq): 0 for a copy from the start.
	gen int
	// report is set until the copy's first update is reported
	// (Replication.Report).
	report bool
}

// NewReplicated returns a server with an empty store, the primary of its
// ranges for backups r.Backups and a backup of the servers r.Copies.
func NewReplicated(cfg Config, r Replication) (*Server, error) {
	if sc, ok := cfg.Rule.(update.Scaled); ok && sc.AsyncStep() == update.AsyncStaleness && cfg.Clock.Mode != clock.BSP {
		// A copy sees the pushes, not the pulls their staleness counts
		// from: it would apply other steps than its primary.
		return nil, fmt.Errorf("server %d: rule %s with async step scaling staleness cannot be replicated (a backup does not see the pulls; want workers or none)", cfg.Rank, sc.Name())
	}
	s, err := NewServer(cfg)
	if err != nil {
		return nil, err
	}
	rep := &replication{primary: replica.NewPrimary[Reply](r.Backups), copies: make(map[int]*copyOf), takeover: r.Takeover, backedUp: r.BackedUp}
	if rep.sums = len(r.Backups) > 0 && s.core.CaptureSums(); rep.sums {
		rep.out = newSender()
	}
	for _, p := range r.Copies {
		if p == cfg.Rank {
			return nil, fmt.Errorf("server %d: a backup of itself", cfg.Rank)
		}
		c := cfg
		c.Rank = p
		core, err := New(c)
		if err != nil {
			return nil, fmt.Errorf("server %d: the copy of server %d: %w", cfg.Rank, p, err)
		}
		rep.copies[p] = &copyOf{core: core, rec: replica.NewReplica(cfg.Workers), report: slices.Contains(r.Report, p)}
	}
	s.rep = rep
	s.publishHolding()
	return s, nil
}

// Copy returns the store of the server's copy of server rank p's
// ranges, nil when it holds none. It is not safe to call while the
// server runs.
func (s *Server) Copy(p int) *Store {
	if s.rep == nil || s.rep.copies[p] == nil {
		return nil
	}
	return s.rep.copies[p].core.Store()
}

// Core returns the server's core. It is not safe to use while the
// server runs.
func (s *Server) Core() *Core { return s.core }

// replicated reports whether the server forwards its updates, or serves
// the ranges it took over: its acknowledgements wait.
func (s *Server) replicated() bool { return s.rep != nil }

// Holding is what a replicated server holds of the job's replicated
// key ranges, for its node's report to a scheduler that takes the job
// over (proto.RejoinMember).
type Holding struct {
	// Backups are the server ranks its updates are replicated to
	// (replica.Primary.Backups): its live backups, a new one whose copy
	// was sent included. Joining are the new backups asked for whose
	// copy waits for the server's next quiet point.
	Backups, Joining []int
	// Copies are the ranks of the servers whose ranges it holds a copy
	// of, in rank order.
	Copies []int
}

// Holding returns what the server holds of the replicated key ranges
// as of its last change; the zero Holding without replication. It is
// safe to call while the server runs.
func (s *Server) Holding() Holding {
	s.mu.Lock()
	defer s.mu.Unlock()
	return Holding{Backups: slices.Clone(s.holding.Backups), Joining: slices.Clone(s.holding.Joining), Copies: slices.Clone(s.holding.Copies)}
}

// publishHolding publishes what the server holds for Holding, after a
// change: O(backups + copies), never on a push's path.
func (s *Server) publishHolding() {
	if s.rep == nil {
		return
	}
	h := Holding{Backups: s.rep.primary.Backups(), Copies: slices.Sorted(maps.Keys(s.rep.copies))}
	for _, j := range s.rep.joining {
		h.Joining = append(h.Joining, j.Backup)
	}
	s.mu.Lock()
	s.holding = h
	s.mu.Unlock()
}

// publishReplication publishes the replication's counters for Stats.
func (s *Server) publishReplication() {
	if s.rep == nil {
		return
	}
	s.mu.Lock()
	s.repStats = s.rep.stats
	s.mu.Unlock()
}

// fromServer handles a data message of another server: an update to a
// copy (on a backup), or an acknowledgement of one (on a primary).
func (s *Server) fromServer(ctx context.Context, m *transport.Message, conn Conn) {
	defer m.Release()
	defer s.publishReplication()
	if m.Early() {
		if err := m.Complete(ctx); err != nil {
			return
		}
	}
	_, p := proto.Identify(m.Sender)
	if s.rep == nil {
		return
	}
	switch m.Cmd {
	case proto.DataReplicaAck:
		if _, epoch, err := proto.ParseMetaEpoch(m); err != nil || epoch != s.epoch {
			// Of updates numbered in another epoch (before a rollback,
			// the sequence numbers start again at 1): it acknowledges
			// none of this epoch's.
			return
		}
		rel, err := s.rep.primary.Acked(p, m.ID)
		if err != nil {
			return // a backup given up (Failover)
		}
		s.rep.track(false, time.Now())
		s.rep.advance()
		s.sendAll(ctx, conn, s.rep.stamp(rel))
	case proto.DataReplicate:
		round, epoch, seq, w, cmd, err := proto.ParseReplica(m)
		if err != nil {
			return
		}
		if cmd == proto.DataCopy {
			s.copied(ctx, p, m, epoch, seq, conn)
			return
		}
		c := s.rep.copies[p]
		if c == nil {
			return // a copy given up (Failover), or none
		}
		if epoch != c.epoch {
			if epoch < c.epoch {
				return
			}
			c.core.Rewind()
			c.rec = replica.NewReplica(len(c.core.ids))
			c.epoch = epoch
		}
		req := Request{Worker: w, ID: m.ID, Cmd: cmd, Round: round, Push: m.Flags&transport.FlagPush != 0, Range: cmd == proto.DataRange, KV: m.KV, Ascending: m.KeysAscending()}
		var pushes []replica.Push
		switch {
		case cmd == proto.DataRound:
			pushes = make([]replica.Push, c.core.cfg.Workers)
			for w := range pushes {
				pushes[w] = replica.Push{Worker: w, Round: round}
			}
		case req.Push && cmd <= proto.DataRange:
			pushes = []replica.Push{{Worker: w, Round: round}}
		}
		if cmd == proto.DataRound && seq == c.rec.Applied()+1 && c.core.CheckSum(round, m.KV) != nil {
			// A sum the copy cannot apply is not acknowledged (the
			// acknowledgement goes before the apply): the primary's
			// acknowledgements wait, and its failure ends the job.
			return
		}
		apply, err := c.rec.Update(seq, pushes)
		if err != nil {
			return // not acknowledged: the primary's pushes wait, and its failure ends the job
		}
		// Acknowledged on receipt, before it is applied: the copy applies
		// it before anything after it, the takeover included, and were
		// this server to die the copy would be lost with or without it.
		// So the backup's apply is off the round's critical path.
		ack := &transport.Message{Header: transport.Header{Type: transport.TypeData, Cmd: proto.DataReplicaAck, ID: c.rec.Applied()},
			Body: proto.AppendMetaEpoch(nil, 0, c.epoch)}
		conn.Reply(ctx, m.Sender, ack)
		if c.report {
			c.report = false
			if s.rep.backedUp != nil {
				s.rep.backedUp(p)
			}
		}
		switch {
		case !apply:
		case cmd == proto.DataRound:
			c.core.ApplySum(round, m.KV) // fails only on a sum of a copy that does not sum rounds, which its primary never sends
		default:
			c.core.Handle(req, false)
		}
	}
}

// sendAll sends replies that own no store memory.
func (s *Server) sendAll(ctx context.Context, conn Conn, rs []Reply) {
	for _, r := range rs {
		conn.Reply(ctx, r.To(), r.Message())
	}
}

// replicate applies request req of message m, which changes the store,
// as an update: it sends it to every live backup, applies it and
// returns the replies that may be sent now. A push's replies wait for
// the backups (replica.Primary); a Take's are sent at once. A push of a
// server that replicates sums is applied, and its round's sum sent when
// it completes one (replicateSum).
func (s *Server) replicate(ctx context.Context, req Request, m *transport.Message, conn Conn) []Reply {
	if s.rep.sums && req.Push && req.Cmd <= proto.DataRange {
		return s.replicateSum(ctx, req, conn)
	}
	// Sent before it is applied here, so that the backups apply it
	// meanwhile; their acknowledgements are read after this request.
	s.forward(ctx, s.rep.primary.Next(), req, m, conn)
	replies := s.core.Handle(req, false)
	var held []Reply
	if req.Push {
		held, replies = slices.Clone(replies), replies[:0]
	}
	_, rel := s.rep.primary.Apply(held)
	s.rep.track(true, time.Now())
	rel = append(rel, s.join(ctx, conn)...)
	return s.rep.stamp(append(replies, rel...))
}

// replicateSum applies a push under BSP, and when it completes its
// round sends the round's sum to the backups and holds the round's
// acknowledgements until the backups have the round before
// (replica.Primary.ApplyAhead). The other replies (errors of pushes of
// a round not complete) go at once: nothing was applied.
func (s *Server) replicateSum(ctx context.Context, req Request, conn Conn) []Reply {
	replies := s.core.Handle(req, false)
	round, sum, ok := s.core.TakeSum()
	if !ok {
		// A refusal of a push of the round waits for the round: the
		// worker does not keep a refused push, and a backup that takes
		// over before it has the round would wait for it for ever.
		counted := req.Worker >= 0 && req.Worker < s.core.cfg.Workers && s.core.clock.Done(req.Worker) == req.Round+1
		n := 0
		for _, r := range replies {
			if r.Err != nil && counted && r.Worker == req.Worker && r.ID == req.ID {
				s.rep.refused = append(s.rep.refused, r)
			} else {
				replies[n] = r
				n++
			}
		}
		return replies[:n]
	}
	var refused []Reply
	n := 0
	for _, r := range replies {
		if r.Err != nil && !r.Pull {
			refused = append(refused, r)
		} else {
			replies[n] = r
			n++
		}
	}
	replies = replies[:n]
	refused = append(refused, s.rep.refused...)
	s.rep.refused = s.rep.refused[:0]
	seq := s.rep.primary.Next()
	if b := s.rep.primary.Backups(); len(b) > 0 {
		f := s.rep.out.get()
		f.Keys, f.Vals = append(f.Keys[:0], sum.Keys...), append(f.Vals[:0], sum.Vals...)
		s.rep.out.send(ctx, conn, b, &transport.Message{
			Header: transport.Header{Type: transport.TypeData, Flags: transport.FlagPush, Cmd: proto.DataReplicate},
			Body:   proto.AppendReplica(proto.AppendMetaEpoch(nil, round, s.epoch), seq, 0, proto.DataRound),
			KV:     f,
		}, true)
		s.rep.stats.Updates++
		s.rep.stats.Sums++
		s.rep.stats.Values += uint64(len(f.Vals))
	}
	s.rep.rounds = append(s.rep.rounds, sumSeq{seq: seq, round: round})
	_, rel := s.rep.primary.ApplyAhead(slices.Clone(replies))
	rel = append(rel, s.rep.primary.Hold(refused)...)
	s.rep.track(true, time.Now())
	s.rep.advance()
	rel = append(rel, s.join(ctx, conn)...)
	return s.rep.stamp(rel)
}

// forward sends request m, applied as update seq, to every live backup.
// A backup that cannot be reached is left to the scheduler, which
// reports its failure (Failover). A server that replicates sums sends it
// through its sender, in order with the sums, in arrays of its own.
func (s *Server) forward(ctx context.Context, seq uint64, req Request, m *transport.Message, conn Conn) {
	b := s.rep.primary.Backups()
	if len(b) == 0 {
		return
	}
	s.rep.stats.Updates++
	s.rep.stats.Values += uint64(len(req.KV.Vals))
	f := &transport.Message{
		Header: transport.Header{Type: transport.TypeData, Flags: m.Flags &^ transport.FlagBorrowed, Cmd: proto.DataReplicate, ID: req.ID},
		Body:   proto.AppendReplica(slices.Clip(m.Body[:proto.MetaSize:proto.MetaSize]), seq, req.Worker, req.Cmd),
		KV:     req.KV,
	}
	if s.rep.sums {
		f.Body, f.KV = slices.Clone(f.Body), f.KV.Clone()
		s.rep.out.send(ctx, conn, b, f, false)
		return
	}
	for _, to := range b {
		g := *f
		conn.Reply(ctx, proto.ServerID(to), &g)
	}
}

// sender sends a primary's updates to its backups, in order, on a
// goroutine of its own: the server's loop goes on while they are on
// the wire. Sums travel in arrays reused from round to round (free); at
// most two are in flight, as a round's acknowledgements wait for the
// sum of the round before (replica.Primary.ApplyAhead).
type sender struct {
	q    chan outgoing
	free chan kv.Batch
	done chan struct{}
}

// outgoing is a message for the backups to.
type outgoing struct {
	m   *transport.Message
	to  []int
	sum bool // its KV goes back to free
}

func newSender() *sender {
	return &sender{q: make(chan outgoing, 64), free: make(chan kv.Batch, 4)}
}

// get returns arrays for a sum.
func (o *sender) get() kv.Batch {
	select {
	case b := <-o.free:
		return b
	default:
		return kv.Batch{}
	}
}

// send queues m for the backups to, starting the goroutine on the first
// call. It blocks only while 64 updates wait.
func (o *sender) send(ctx context.Context, conn Conn, to []int, m *transport.Message, sum bool) {
	if o.done == nil {
		o.done = make(chan struct{})
		go o.run(ctx, conn)
	}
	select {
	case o.q <- outgoing{m: m, to: to, sum: sum}:
	case <-ctx.Done():
	}
}

func (o *sender) run(ctx context.Context, conn Conn) {
	defer close(o.done)
	for u := range o.q {
		for _, to := range u.to {
			g := *u.m
			conn.Reply(ctx, proto.ServerID(to), &g)
		}
		if u.sum {
			select {
			case o.free <- u.m.KV:
			default:
			}
		}
	}
}

// stop ends the goroutine once the updates queued are sent (or ctx
// ended).
func (o *sender) stop() {
	if o == nil || o.done == nil {
		return
	}
	close(o.q)
	<-o.done
}

// changes reports whether req changes the store, and is forwarded to
// the backups.
func changes(req Request) bool {
	return !req.Evaluator && (req.Push || req.Cmd == proto.DataTake)
}

// failover handles the scheduler's Failover f (phase one, no address):
// a server backed up by the failed one stops waiting for it; the failed
// one's backup takes its copy over, and the other backups drop theirs.
func (s *Server) failover(ctx context.Context, f proto.Failover, conn Conn) {
	if s.rep == nil {
		return
	}
	if f.Addr != "" {
		// Phase two: the failed server's id is served at f.Addr from
		// now on. A backup of that server acknowledges again what it
		// has: its acknowledgements sent before its node knew the
		// address went to the failed server's and were lost, and the
		// primary, whose next update waits for them under BSP
		// (replica.Primary.ApplyAhead), would wait for ever.
		if c := s.rep.copies[f.Server]; c != nil {
			ack := &transport.Message{Header: transport.Header{Type: transport.TypeData, Cmd: proto.DataReplicaAck, ID: c.rec.Applied()},
				Body: proto.AppendMetaEpoch(nil, 0, c.epoch)}
			conn.Reply(ctx, proto.ServerID(f.Server), ack)
		}
		return
	}
	rel := s.rep.primary.Down(f.Server)
	s.rep.joining = slices.DeleteFunc(s.rep.joining, func(j proto.Backup) bool { return j.Backup == f.Server })
	s.rep.track(false, time.Now())
	s.rep.advance()
	s.sendAll(ctx, conn, s.rep.stamp(rel))
	defer s.publishHolding()
	c := s.rep.copies[f.Server]
	if c == nil || c.gen >= f.Seq {
		// None, or a new copy of the ranges' server that took them
		// over in failover f or after, whose update came before f's
		// announcement: it is kept.
		return
	}
	delete(s.rep.copies, f.Server)
	if f.Backup != s.core.cfg.Rank || s.rep.takeover == nil {
		return
	}
	srv := &Server{core: c.core, epoch: c.epoch, rep: &replication{primary: replica.NewPrimary[Reply](nil), copies: make(map[int]*copyOf), taken: c.rec, takenEpoch: c.epoch}}
	srv.publishHolding()
	s.rep.takeover(f.Server, srv)
}

// again answers a push sent again after a failover when the copy the
// server took over holds it already: it reports whether req was such a
// push, and acknowledges it unless the core still holds its
// acknowledgement (its round is not summed yet). A push not in the copy
// is recorded, so that a third sending of it is known too.
func (s *Server) again(ctx context.Context, req Request, conn Conn) bool {
	t := s.rep.taken
	if t == nil || !req.Push || req.Evaluator || req.Cmd > proto.DataRange {
		return false
	}
	if t.Has(req.Worker, req.Round) {
		if !s.core.Holds(req.Worker, req.ID) {
			a := Reply{Worker: req.Worker, ID: req.ID}
			conn.Reply(ctx, a.To(), a.Message())
		}
		return true
	}
	t.Update(t.Applied()+1, []replica.Push{{Worker: req.Worker, Round: req.Round}})
	return false
}

// A new backup (proto.Backup). After a failover the ranges taken over,
// and those the failed server backed up, have a copy fewer; the
// scheduler asks the server of such ranges to make a new one on another
// live server, while the job goes on. The server sends its copy at its
// next quiet point (Core.Quiet: no push held, under BSP between two
// rounds, at once otherwise), in order on the link with its updates: a
// snapshot of its store (values and update rule states, Store.Snapshot)
// and of its clock, numbered as its last update applied (have). From
// then on the new backup is a live backup (replica.Primary.Join): the
// acknowledgements of the updates after have wait for it too, those up
// to have do not (the copy holds them all once it arrives), so the copy
// crosses while the next round is computed. The new backup restores the
// copy as one it had from the start (copied) and tells the scheduler
// (Replication.BackedUp), which counts it among the ranges' backups only
// then: a failure before takes it for a server with a copy fewer, as
// before.

// backup handles the scheduler's Backup b: the server is to send a copy
// of its ranges to server b.Backup, at its next quiet point.
func (s *Server) backup(ctx context.Context, b proto.Backup, conn Conn) []Reply {
	r := s.rep
	if r == nil || b.Server != s.core.cfg.Rank || b.Backup == b.Server || slices.Contains(r.primary.Backups(), b.Backup) || slices.ContainsFunc(r.joining, func(j proto.Backup) bool { return j.Backup == b.Backup }) {
		return nil
	}
	if !r.sums && s.core.CaptureSums() {
		// A server taken over, with no backup left: its rounds' sums
		// are replicated from now on.
		r.sums = true
		if r.out == nil {
			r.out = newSender()
		}
	}
	r.joining = append(r.joining, b)
	defer s.publishHolding()
	return s.join(ctx, conn)
}

// join sends a copy of the server's ranges to the backups joining when
// the core is quiet, and returns the acknowledgements this releases.
func (s *Server) join(ctx context.Context, conn Conn) []Reply {
	r := s.rep
	if len(r.joining) == 0 || !s.core.Quiet() {
		return nil
	}
	joining := r.joining
	r.joining = nil
	if !s.core.Copyable() {
		r.stats.Refused += uint64(len(joining))
		return nil
	}
	have := r.primary.Next() - 1
	snap := s.core.store.Snapshot(0, s.core.store.Keys())
	done := make([]int64, s.core.cfg.Workers)
	for w := range done {
		done[w] = s.core.clock.Done(w)
	}
	meta := proto.AppendReplica(proto.AppendMetaEpoch(nil, s.core.clock.Min(), s.epoch), have, 0, proto.DataCopy)
	var rel []Reply
	for _, j := range joining {
		b := j.Backup
		body := proto.AppendCopyState(slices.Clip(meta), j.Seq, s.core.stats.Pushes, done)
		more, err := r.primary.Join(b, have)
		if err != nil {
			continue // cannot happen: checked in backup
		}
		rel = append(rel, more...)
		m := &transport.Message{Header: transport.Header{Type: transport.TypeData, Cmd: proto.DataReplicate}, Body: body, KV: snap}
		if r.sums {
			r.out.send(ctx, conn, []int{b}, m, false)
		} else {
			conn.Reply(ctx, proto.ServerID(b), m)
		}
		r.stats.Copies++
		r.stats.CopyValues += uint64(len(snap.Vals))
	}
	r.track(false, time.Now())
	r.advance()
	s.publishHolding()
	return rel
}

// copied installs a whole copy of server p's ranges, the update seq of
// the membership epoch epoch, sent by p to make this server its new
// backup (join), in place of any copy of p it held, acknowledges it and
// reports it (Replication.BackedUp). A malformed copy is dropped
// unacknowledged: the scheduler never counts this server as p's backup.
func (s *Server) copied(ctx context.Context, p int, m *transport.Message, epoch, seq uint64, conn Conn) {
	cfg := s.core.cfg
	cfg.Rank = p
	core, err := New(cfg)
	if err != nil || p == s.core.cfg.Rank {
		return
	}
	gen, pushes, done, err := proto.ParseCopyState(m, cfg.Workers)
	// Under BSP and bounded delay τ the copied server is at most τ + 1
	// rounds ahead of this one (one more for safety).
	limit := s.core.clock.Min() + int64(max(cfg.Clock.Delay(), 0)) + 2
	if err != nil || core.restoreCopy(m.KV, pushes, done, limit) != nil {
		return
	}
	rounds := make([]int64, len(done))
	for w, d := range done {
		rounds[w] = d - 1
	}
	s.rep.copies[p] = &copyOf{core: core, rec: replica.NewReplicaAt(seq, rounds), epoch: epoch, gen: gen}
	s.rep.stats.Rebuilt++
	s.publishHolding()
	ack := &transport.Message{Header: transport.Header{Type: transport.TypeData, Cmd: proto.DataReplicaAck, ID: seq},
		Body: proto.AppendMetaEpoch(nil, 0, epoch)}
	conn.Reply(ctx, m.Sender, ack)
	if s.rep.backedUp != nil {
		s.rep.backedUp(p)
	}
}
