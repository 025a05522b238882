package server

import (
	"context"
	"fmt"
	"sync"
	"time"

	"colo/kv"
	"colo/ps/proto"
	"colo/transport"
)

// Conn is how a server's driver answers workers. The node runtime
// provides it. Reply may be called from several goroutines at once.
type Conn interface {
	// Reply sends m to node to (a worker, or an evaluator) and returns
	// once m's arrays may be reused: the store's memory goes on the wire
	// without a copy.
	Reply(ctx context.Context, to transport.NodeID, m *transport.Message) error
}

// Server drives a Core: it decodes requests and applies them one at a
// time. Replies that are views of the store (dense range pulls) are sent
// on their own goroutines, so that one server answers several workers at
// once and handles the next pull meanwhile; a push waits until those
// replies are written (or, through a Handover, copied, if they have not
// started leaving) before it changes the store. The loop holds the
// core's lock for each message, so that the worker in the same process
// can have a pull served on its own goroutine between two (PullLocal),
// and a link's reader can serve a request on its own goroutine when the
// loop has nothing queued (Offer).
type Server struct {
	core *Core
	// serve is held by whoever uses the core: the loop for each message
	// (Run), or a co-located worker's caller whose pull it serves on its
	// own goroutine (PullLocal).
	serve sync.Mutex
	// views counts replies in flight that alias the store.
	views sync.WaitGroup
	// ctx and conn are Run's, for the replies PushLocal releases.
	ctx  context.Context
	conn Conn
	// epoch is the membership epoch of the requests served (see
	// handle).
	epoch uint64
	// handled counts the messages Run took from its channel and
	// handled (under serve); see Offer. stopped is set (under serve)
	// once Run returns: Offer declines from then on.
	handled uint64
	stopped bool

	// rep is the replication of the server's ranges, nil without
	// backups (see replicate.go).
	rep *replication

	mu    sync.Mutex
	stats Stats
	// The egress timing (Stats.Egress): replies being sent, and since
	// when the server has been sending.
	sending int
	since   time.Time
	egress  Egress
	// repStats is the replication's counters as of the last message,
	// holding what it holds as of its last change (Holding).
	repStats ReplicaStats
	holding  Holding
}

// Egress is what a server measured of its answers to range pulls that
// went over the network, and of the values its machine's worker pushed
// to other machines (Sending): their bytes, and the time at least one of
// them was being sent (the union of the sends' intervals). Bytes over time
// is the rate its link gives it: the speed of sending of seed 002 §3.2,
// timed where the data leaves.
type Egress struct {
	Bytes uint64 `json:"bytes"`
	Nanos int64  `json:"nanos"`
}

// Queuer is implemented by a Conn whose Reply may return before the
// message has left (it queues a copy): ReplyThen is Reply, calling sent
// once m has left or failed, so that the server times its egress from
// the call to the message's departure.
type Queuer interface {
	ReplyThen(ctx context.Context, to transport.NodeID, m *transport.Message, sent func()) error
}

// Handover is implemented by a Queuer that can queue a reply's own
// arrays instead of a copy of them. ReplyOwned queues m itself: its
// arrays are held by nothing else (a snapshot's copy). ReplyView queues
// m, whose arrays are a view of the store, and returns once they are no
// longer used: m has left or failed, or Detach, which the server calls
// before it changes the store, copied it. The server waits for its
// views in flight after Detach and then calls attach; a view posted in
// between (its goroutine was late) is queued as a copy. So only the
// views already leaving are waited for: a push is not held behind an
// answer that waits for its turn on the link.
type Handover interface {
	Queuer
	ReplyOwned(ctx context.Context, to transport.NodeID, m *transport.Message, sent func()) error
	ReplyView(ctx context.Context, to transport.NodeID, m *transport.Message, sent func()) error
	Detach() (attach func())
}

// Local is implemented by a Conn that knows which workers are on the
// server's own machine: answers to them do not travel, and are not
// timed.
type Local interface {
	Local(to transport.NodeID) bool
}

// Lander is implemented by a Conn that can hand the server the array a
// co-located worker registered for the values of its pull's answer (the
// caller's own memory, as transport.Berths are over a network): the
// store's values are then copied once, straight there, instead of out
// of the store, into a message and into the caller's array.
type Lander interface {
	// Landing returns the array registered for the answer to request id
	// of node to, or nil, and done, which the server calls once it wrote
	// there: until then the registration cannot be withdrawn.
	Landing(to transport.NodeID, id uint64) (dst []float32, done func())
	// ReplyLanded is Reply for an answer whose Vals are in that array.
	ReplyLanded(ctx context.Context, to transport.NodeID, m *transport.Message) error
}

// send replies r on conn, timing it when it is a range pull's answer
// that travels.
func (s *Server) send(ctx context.Context, conn Conn, r Reply) {
	timed := r.Pull && !r.Evaluator && r.Err == nil && len(r.Vals) > 0
	if l, ok := conn.(Local); timed && ok && l.Local(r.To()) {
		timed = false
	}
	h, hands := conn.(Handover)
	if !timed {
		l, lands := conn.(Lander)
		switch {
		case r.landed || r.own && lands:
			l.ReplyLanded(ctx, r.To(), r.Message())
		case r.View && hands:
			h.ReplyView(ctx, r.To(), r.Message(), nil)
		case r.own && hands:
			h.ReplyOwned(ctx, r.To(), r.Message(), nil)
		default:
			conn.Reply(ctx, r.To(), r.Message())
		}
		return
	}
	sent := s.Sending(4 * uint64(len(r.Vals)))
	var err error
	q, queues := conn.(Queuer)
	switch {
	case r.View && hands:
		err = h.ReplyView(ctx, r.To(), r.Message(), sent)
	case r.own && hands:
		err = h.ReplyOwned(ctx, r.To(), r.Message(), sent)
	case queues:
		err = q.ReplyThen(ctx, r.To(), r.Message(), sent)
	default:
		conn.Reply(ctx, r.To(), r.Message())
	}
	if err != nil || !hands && !queues {
		sent() // not queued, or sent
	}
}

// unview returns once no reply in flight reads the store: the views
// queued on conn that have not started leaving, or queued while it
// waits, are copied (Handover), and those leaving are waited for. The
// store may change after it.
func (s *Server) unview(conn Conn) {
	if h, ok := conn.(Handover); ok {
		attach := h.Detach()
		defer attach()
	}
	s.views.Wait()
}

// Sending times bytes of values leaving the server's machine from now
// until sent is called, in its egress timing (Stats.Egress) as its own
// answers to range pulls are: the node that runs the server calls it
// for what its co-located worker pushes to other machines, which shares
// the machine's interface with the answers. Timed alone, the answers
// would read the link's speed low by the share the pushes took of it
// whenever the two overlap, as they do on a fair interface (a real NIC,
// transport/mem's): Eq. 8's speed is the wire's, not the answers'.
func (s *Server) Sending(bytes uint64) (sent func()) {
	s.mu.Lock()
	if s.sending == 0 {
		s.since = time.Now()
	}
	s.sending++
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		s.sending--
		s.egress.Bytes += bytes
		if s.sending == 0 {
			s.egress.Nanos += int64(time.Since(s.since))
		}
		s.mu.Unlock()
	}
}

// NewServer returns a server with an empty store; Run drives it.
func NewServer(cfg Config) (*Server, error) {
	core, err := New(cfg)
	if err != nil {
		return nil, err
	}
	return &Server{core: core}, nil
}

// Rank returns the server's rank.
func (s *Server) Rank() int { return s.core.cfg.Rank }

// Stats returns the server's counters.
func (s *Server) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.stats
	st.Egress = s.egress
	st.Replication = s.repStats
	return st
}

// Decode reads the request of a data message from a worker or an
// evaluator.
func Decode(m *transport.Message) (Request, error) {
	role, rank := proto.Identify(m.Sender)
	if role != proto.RoleWorker && role != proto.RoleEvaluator {
		return Request{}, fmt.Errorf("data message from %s, not a worker", proto.Name(m.Sender))
	}
	if m.Type != transport.TypeData || m.Flags&transport.FlagRequest == 0 {
		return Request{}, fmt.Errorf("%s sent a message that is not a request: %v", proto.Name(m.Sender), m)
	}
	round, err := proto.ParseMeta(m)
	if err != nil {
		return Request{}, err
	}
	push := m.Flags&transport.FlagPush != 0
	if push == (m.Flags&transport.FlagPull != 0) {
		return Request{}, fmt.Errorf("%s sent a request that is not one of push and pull", proto.Name(m.Sender))
	}
	switch m.Cmd {
	case proto.DataSparse, proto.DataRange:
	case proto.DataTable, proto.DataPut, proto.DataTake, proto.DataSave, proto.DataLoad, proto.DataFamily:
		if role != proto.RoleWorker || push == (m.Cmd == proto.DataTake || m.Cmd == proto.DataSave) {
			return Request{}, fmt.Errorf("%s sent data command %d as a %s", proto.Name(m.Sender), m.Cmd, map[bool]string{true: "push", false: "pull"}[push])
		}
	default:
		return Request{}, fmt.Errorf("%s sent data command %d", proto.Name(m.Sender), m.Cmd)
	}
	return Request{Worker: rank, Evaluator: role == proto.RoleEvaluator, ID: m.ID, Cmd: m.Cmd, Round: round, Push: push, Range: m.Cmd == proto.DataRange, KV: m.KV, Ascending: m.KeysAscending()}, nil
}

// To returns the node the reply goes to.
func (r Reply) To() transport.NodeID {
	if r.Evaluator {
		return proto.EvaluatorID(r.Worker)
	}
	return proto.WorkerID(r.Worker)
}

// Message returns the answer r as a message. Its arrays are the reply's.
func (r Reply) Message() *transport.Message {
	m := &transport.Message{Header: transport.Header{Type: transport.TypeData, ID: r.ID}}
	switch {
	case r.Err != nil:
		m.Cmd = proto.DataError
		m.Body = []byte(r.Err.Error())
	case r.Pull:
		m.Flags = transport.FlagPull
		m.KV.Keys, m.KV.Vals, m.KV.Lens = r.Keys, r.Vals, r.Lens
		if r.Evaluator {
			m.Body = proto.AppendMeta(nil, r.Steps)
		}
	default:
		m.Flags = transport.FlagPush
		if r.tell {
			m.Body = proto.AppendMeta(nil, r.replicated)
		}
	}
	return m
}

// Run serves the requests of in until ctx ends or in is closed, and
// returns ctx's cause (nil when in was closed) once every reply it started
// has returned. A reply that cannot be sent is dropped: the node's failure
// detection ends the job.
func (s *Server) Run(ctx context.Context, in <-chan *transport.Message, conn Conn) error {
	defer s.views.Wait()
	if s.rep != nil {
		defer func() { s.rep.out.stop() }()
	}
	// Before the wait for the replies in flight: an offer handled after
	// it would start replies nobody waits for.
	defer func() {
		s.serve.Lock()
		s.stopped = true
		s.serve.Unlock()
	}()
	s.serve.Lock()
	s.ctx, s.conn = ctx, conn
	s.serve.Unlock()
	for {
		select {
		case m, ok := <-in:
			if !ok {
				return nil
			}
			s.serve.Lock()
			s.handle(ctx, m, conn)
			s.handled++
			s.serve.Unlock()
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
}

// Offer handles m on the caller's goroutine, as Run would (ctx and conn
// are Run's), when Run has nothing to do: every message queued on its
// channel so far, queued() of them, was handled, and the core is free. It
// reports whether it did; if not, the caller queues m for Run. A link's
// reader that offers each request before it queues it saves the hand-off
// to Run's goroutine, and the wake-up of a thread for it, per request.
//
// It declines everything once Run returned, and what Run must do on
// its own goroutine: a message whose values are still arriving (the
// caller reads them), and everything of a server whose ranges are
// replicated (a message of another server, and
// the sends to backups, would make two links' readers wait on each
// other). The caller blocks while the message is handled (the core's
// work and the sends of its replies, but not of the answers that go out
// on their own goroutines): a reader does so only when the peers it
// answers never wait for it to read.
func (s *Server) Offer(ctx context.Context, m *transport.Message, conn Conn, queued func() uint64) bool {
	if s.rep != nil || m.Early() || m.Type != transport.TypeData || ctx.Err() != nil {
		return false
	}
	if role, _ := proto.Identify(m.Sender); role != proto.RoleWorker && role != proto.RoleEvaluator {
		return false
	}
	if !s.serve.TryLock() {
		return false
	}
	defer s.serve.Unlock()
	if s.stopped || queued() != s.handled {
		return false
	}
	s.handle(ctx, m, conn)
	return true
}

// handle serves one message. A dense push whose values are still
// arriving (transport.Message.Early) is applied part by part as they
// arrive when the core can (Core.HandleArriving), on this goroutine,
// while the link's reader reads the next parts; any other early message
// waits for its values first. Only pushes change the store, so only they
// wait for the views in flight, and under BSP only the push that
// completes its round (Core.Changes); pulls read the store or fill the
// core's own buffers, which no view uses.
//
// Requests carry the membership epoch of their worker (proto.Pause): a
// request of an earlier epoch than the server's was sent before the
// job was paused and rolled back, and is dropped unanswered (its worker
// failed the call already); the first request of a later epoch rewinds
// the core (Core.Rewind) before it is served, so that the job goes on
// from the checkpoint the workers load, as on a new server.
func (s *Server) handle(ctx context.Context, m *transport.Message, conn Conn) {
	if m.Type == transport.TypeControl {
		// The node's Failover, in the order of the data before it.
		var f proto.Failover
		var b proto.Backup
		switch {
		case m.Cmd == proto.CmdFailover && proto.Decode(m, &f) == nil:
			s.failover(ctx, f, conn)
		case m.Cmd == proto.CmdBackup && proto.Decode(m, &b) == nil:
			s.sendAll(ctx, conn, s.rep.stamp(s.backup(ctx, b, conn)))
			s.publishReplication()
		}
		return
	}
	if role, _ := proto.Identify(m.Sender); role == proto.RoleServer {
		s.fromServer(ctx, m, conn)
		return
	}
	if s.rep != nil && s.rep.taken != nil && m.Flags&proto.FlagResent == 0 && !s.rep.later(m) {
		// Sent before the worker knew of the failover: it sends it
		// again, in order with the others.
		if m.Early() {
			m.Complete(ctx)
		}
		m.Release()
		return
	}
	if _, epoch, err := proto.ParseMetaEpoch(m); err == nil && epoch != s.epoch {
		if epoch < s.epoch {
			if m.Early() {
				m.Complete(ctx)
			}
			m.Release()
			return
		}
		s.unview(conn)
		s.core.Rewind()
		if s.rep != nil {
			s.rep.rewind()
		}
		s.epoch = epoch
	}
	req, err := Decode(m)
	if err == nil && s.core.Changes(req) {
		s.unview(conn)
	}
	var replies []Reply
	if err != nil {
		role, rank := proto.Identify(m.Sender)
		replies = []Reply{{Worker: rank, Evaluator: role == proto.RoleEvaluator, ID: m.ID, Err: err}}
		if rank < 0 {
			replies = nil
		}
	} else if s.rep != nil {
		if m.Early() && m.Complete(ctx) != nil {
			m.Release()
			return
		}
		if s.rep.park(s.core, req, m) {
			return
		}
		switch {
		case s.again(ctx, req, conn):
		case changes(req):
			replies = s.replicate(ctx, req, m, conn)
		default:
			replies = s.core.Handle(req, false)
		}
	} else if done, out := s.early(ctx, req, m, conn); done {
		replies = out
	} else {
		acked := false
		// A borrowed push's values are the worker's until it is answered:
		// no acknowledgement before they are applied.
		if ack, ok := s.core.Ack(req); ok && m.Flags&transport.FlagBorrowed == 0 {
			conn.Reply(ctx, ack.To(), ack.Message())
			acked = true
		}
		var dst []float32
		var done func()
		if l, ok := conn.(Lander); ok && !req.Push && !req.Evaluator && req.Cmd <= proto.DataRange {
			dst, done = l.Landing(m.Sender, m.ID)
		}
		if !req.Range {
			req.Dst = dst
		}
		replies = s.core.Handle(req, acked)
		if done != nil {
			land(replies, dst)
			done()
		}
	}
	for _, r := range replies {
		if r.View {
			s.views.Go(func() { s.send(ctx, conn, r) })
		} else {
			s.send(ctx, conn, r)
		}
	}
	m.Release()
	st := s.core.Stats()
	s.mu.Lock()
	s.stats = st
	s.mu.Unlock()
	s.publishReplication()
	if s.rep != nil && len(s.rep.parked) > 0 && err == nil && req.Push {
		for _, p := range s.rep.unpark(s.core) {
			s.handle(ctx, p, conn)
		}
	}
}

// PullLocal serves the sparse pull of worker (the one in the server's
// process) on the caller's goroutine, as the loop serves the same
// request sent as a message (id, round and membership epoch in its
// header): the same checks (the worker's rank, the keys' order, keys
// moved away by a new routing table), the same counters and pull marks.
// Its values are written to room when they fit (else to an array of
// their own), its per-key lengths appended to lens[:0]; err is the
// error the server would answer. ok is false, with nothing done, when
// the message path does more than serve the request: the server's
// ranges are replicated, or the request is of another epoch (an older
// one is dropped, a newer one rewinds the core first).
//
// It holds the core while it reads the store: it waits for the message
// the loop is serving, and the loop for it. The store changes only in
// the loop, so the values are those of the pushes the loop handled
// before; the caller sees that its own pushes were (their answers came).
func (s *Server) PullLocal(worker int, id uint64, round int64, epoch uint64, keys []uint64, room []float32, lens []int32) (vals []float32, lensOut []int32, err error, ok bool) {
	if s.rep != nil {
		return nil, nil, nil, false
	}
	s.serve.Lock()
	defer s.serve.Unlock()
	if epoch != s.epoch {
		return nil, nil, nil, false
	}
	replies := s.core.Handle(Request{Worker: worker, ID: id, Cmd: proto.DataSparse, Round: round, KV: kv.Batch{Keys: keys}, Dst: room}, false)
	st := s.core.Stats()
	s.mu.Lock()
	s.stats = st
	s.mu.Unlock()
	if len(replies) != 1 || replies[0].ID != id || !replies[0].Pull {
		return nil, nil, fmt.Errorf("server %d: %d replies to a pull", s.core.cfg.Rank, len(replies)), true
	}
	r := replies[0]
	if r.Err != nil {
		return nil, nil, r.Err, true
	}
	if r.Lens != nil {
		lensOut = append(lens[:0], r.Lens...)
	}
	if r.View || len(r.Vals) > 0 && (cap(room) < len(r.Vals) || &room[:1][0] != &r.Vals[0]) {
		// Not in room: a copy, as the store's memory changes after.
		r.Vals = append(room[:0:0], r.Vals...)
	}
	return r.Vals, lensOut, nil, true
}

// land puts the values of a pull's answer in dst, the array its
// co-located worker registered, unless they are there already or do not
// fit: one copy out of the store (a sparse pull writes there itself,
// Request.Dst; a range pull's answer is a view of the store).
func land(replies []Reply, dst []float32) {
	for i := range replies {
		r := &replies[i]
		if !r.Pull || r.Err != nil || len(r.Vals) == 0 || len(r.Vals) > cap(dst) {
			continue
		}
		if &r.Vals[0] != &dst[:1][0] {
			copy(dst[:len(r.Vals)], r.Vals)
			r.Vals, r.View = dst[:len(r.Vals)], false
		}
		r.landed = true
	}
}

// early handles a request whose values may still be arriving: it applies
// a dense push as its values arrive, or waits for them. done tells that
// the request was handled, with the replies out: applied, or lost with
// its link (no reply: the worker's node sees the failure).
func (s *Server) early(ctx context.Context, req Request, m *transport.Message, conn Conn) (done bool, out []Reply) {
	if !m.Early() {
		return false, nil
	}
	out, ok, err := s.core.HandleArriving(req, arriving{ctx, m}, func(a Reply) { conn.Reply(ctx, a.To(), a.Message()) })
	if ok {
		if err != nil {
			return true, nil
		}
		return true, out
	}
	if err := m.Complete(ctx); err != nil {
		return true, nil
	}
	return false, nil
}

// arriving follows the values of an early message for
// Core.HandleArriving, until ctx ends.
type arriving struct {
	ctx context.Context
	m   *transport.Message
}

// Arrived returns how many values are there.
func (a arriving) Arrived() (int, error) { return a.m.Arrived() }

// Await waits for more than have values: for AwaitBatch more, or all of
// them, so that the reader of the link wakes the server once per batch,
// not once per read.
func (a arriving) Await(have int) (int, error) { return a.m.AwaitAtLeast(a.ctx, have+AwaitBatch) }

// AwaitBatch is how many more values the server waits for when it has
// applied all the values of a dense push that have arrived: 512 KiB of
// float32, a few reads of the link, small enough to be added while they
// are still in the core's cache.
const AwaitBatch = 8 * ApplyStep
