package server

import (
	"context"
	"fmt"
	"slices"

	"colo/ps/proto"
	"colo/ps/replica"
	"colo/transport"
)

// Replication: the driver's side of package replica (OSDI'14 §4.3).
//
// A server of a job with backups (Replication) forwards every request
// that changes its store (pushes, and the moves and loads of keys) to
// each live backup as it applies it (proto.DataReplicate), and holds
// the acknowledgements of the pushes (replica.Primary) until every live
// backup acknowledged the update (proto.DataReplicaAck): a push
// acknowledged to a worker is on every live backup. A backup keeps, for
// each server it backs up, a copy: a Core of that server's rank, fed
// the same requests in the same order, so that it holds the same values
// and update rule states bit for bit (under BSP it sums a round's
// pushes in worker rank order as the primary does). The forwarded
// request is the worker's push itself, not the round's sum: W pushes a
// round instead of one, but the copy computes what the primary computed
// with the same code.
//
// When the primary fails, its first live backup takes its copy over
// (Failover): the copy becomes a server of the failed rank, on a new
// endpoint of the backup's node, and the workers send it again every
// request the failed server had not answered. A push the copy holds
// already (replica.Replica.Has) is acknowledged, not applied again: once
// its round is summed, or at once under asynchronous training; the
// others are applied as on the primary. So no acknowledged push is
// lost, none is applied twice, and under BSP the rounds go on bit for
// bit as without the failure.
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
}

// rewind starts the replication again with the job's new epoch (a
// rollback to a checkpoint): the updates are numbered from 1 again, and
// the backups' copies start again from an empty store at the first
// update of the epoch. The acknowledgements held are dropped: their
// pushes failed with the pause.
func (r *replication) rewind() {
	r.primary = replica.NewPrimary[Reply](r.primary.Backups())
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
}

// NewReplicated returns a server with an empty store, the primary of its
// ranges for backups r.Backups and a backup of the servers r.Copies.
func NewReplicated(cfg Config, r Replication) (*Server, error) {
	s, err := NewServer(cfg)
	if err != nil {
		return nil, err
	}
	rep := &replication{primary: replica.NewPrimary[Reply](r.Backups), copies: make(map[int]*copyOf), takeover: r.Takeover}
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
		rep.copies[p] = &copyOf{core: core, rec: replica.NewReplica(cfg.Workers)}
	}
	s.rep = rep
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

// fromServer handles a data message of another server: an update to a
// copy (on a backup), or an acknowledgement of one (on a primary).
func (s *Server) fromServer(ctx context.Context, m *transport.Message, conn Conn) {
	defer m.Release()
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
		s.sendAll(ctx, conn, rel)
	case proto.DataReplicate:
		c := s.rep.copies[p]
		if c == nil {
			return // a copy given up (Failover), or none
		}
		round, epoch, seq, w, cmd, err := proto.ParseReplica(m)
		if err != nil {
			return
		}
		if epoch != c.epoch {
			if epoch < c.epoch {
				return
			}
			c.core.Rewind()
			c.rec = replica.NewReplica(len(c.core.ids))
			c.epoch = epoch
		}
		req := Request{Worker: w, ID: m.ID, Cmd: cmd, Round: round, Push: m.Flags&transport.FlagPush != 0, Range: cmd == proto.DataRange, KV: m.KV}
		var pushes []replica.Push
		if req.Push && cmd <= proto.DataRange {
			pushes = []replica.Push{{Worker: w, Round: round}}
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
		if apply {
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
// as an update: it forwards it to every live backup, applies it and
// returns the replies that may be sent now. A push's replies wait for
// the backups (replica.Primary); a Take's are sent at once.
func (s *Server) replicate(ctx context.Context, req Request, m *transport.Message, conn Conn) []Reply {
	// Sent before it is applied here, so that the backups apply it
	// meanwhile; their acknowledgements are read after this request.
	s.forward(ctx, s.rep.primary.Next(), req, m, conn)
	replies := s.core.Handle(req, false)
	var held []Reply
	if req.Push {
		held, replies = slices.Clone(replies), replies[:0]
	}
	_, rel := s.rep.primary.Apply(held)
	return append(replies, rel...)
}

// forward sends request m, applied as update seq, to every live backup.
// A backup that cannot be reached is left to the scheduler, which
// reports its failure (Failover).
func (s *Server) forward(ctx context.Context, seq uint64, req Request, m *transport.Message, conn Conn) {
	b := s.rep.primary.Backups()
	if len(b) == 0 {
		return
	}
	f := &transport.Message{
		Header: transport.Header{Type: transport.TypeData, Flags: m.Flags &^ transport.FlagBorrowed, Cmd: proto.DataReplicate, ID: req.ID},
		Body:   proto.AppendReplica(slices.Clip(m.Body[:proto.MetaSize:proto.MetaSize]), seq, req.Worker, req.Cmd),
		KV:     req.KV,
	}
	for _, to := range b {
		g := *f
		conn.Reply(ctx, proto.ServerID(to), &g)
	}
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
	s.sendAll(ctx, conn, s.rep.primary.Down(f.Server))
	c := s.rep.copies[f.Server]
	if c == nil {
		return
	}
	delete(s.rep.copies, f.Server)
	if f.Backup != s.core.cfg.Rank || s.rep.takeover == nil {
		return
	}
	srv := &Server{core: c.core, epoch: c.epoch, rep: &replication{primary: replica.NewPrimary[Reply](nil), taken: c.rec, takenEpoch: c.epoch}}
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
