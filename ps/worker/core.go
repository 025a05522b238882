// Package worker is the worker side of colo's parameter server: the
// key–value API an application trains with, and the request tracking
// behind it.
//
// Push(keys, vals) and Pull(keys, dst) return a *Future at once; Wait on
// it for the outcome (ps-lite's timestamps). Keys are sorted uint64s,
// values float32s, width values per key or per-key lengths; PushRange and
// PullRange address a dense range of keys with two numbers. The worker
// splits each request by server through the routing table (seed 000 §3.2:
// the assignment "is known to all machines"): a range-owned table costs S
// binary searches and no copy, any other table one lookup per key. Pull
// answers are merged back into dst in the order of the request's keys;
// with a range-owned table each server's answer fills one part of dst,
// and over TCP it is read from the socket straight into that part
// (Out.Dst, Lander), with no copy at all.
//
// Every Push ends the worker's round (pull, compute, push). Under BSP and
// bounded delay a push goes to every server, empty or not, so that each
// server's clock counts it, and nothing of the next round leaves the
// worker before every server acknowledged the push: servers hold the
// acknowledgement until the slowest worker is close enough (package
// clock). Asynchronous training sends only non-empty parts and never
// waits.
//
// Core is the single-threaded state machine; Worker is its driver, one
// goroutine that owns the Core and serves the application's calls, which
// are safe for concurrent use.
//
// A machine (a server beside the worker in one process) starts a push
// or pull on the caller's goroutine when nothing of the worker is in
// flight (Worker.SetLocal, Core.Direct): the caller holds the worker's
// core and then the server's (each loop holds its core's lock for a
// turn), so the part of its own server's keys is checked, counted,
// aggregated, applied and answered as its message would be, without the
// four hand-offs between goroutines (the caller's to the driver, to the
// server's loop, back to the driver and to the caller), and the other
// servers' parts are sent from there as messages. A call that must wait
// (the round gate closed, an earlier request unanswered) goes to the
// driver; a push that the server holds for its round (BSP, other
// workers to come) is acknowledged by a message. Arrays passed to Push,
// Pull and their variants must not be modified (Push) or read (Pull)
// until the Future is done.
package worker

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"colo/kv"
	"colo/ps/clock"
	"colo/ps/proto"
	"colo/ps/route"
	"colo/transport"
)

// Config configures a worker.
type Config struct {
	// Rank is the worker's rank.
	Rank int
	// Table is the routing table.
	Table *route.Table
	// Width is the number of values per key, 0 for per-key lengths.
	Width int
	// Clock is the consistency model.
	Clock clock.Config
	// Now, when not nil, is the clock of the pull timings (Stats.Links);
	// time.Now otherwise.
	Now func() time.Time
	// Epoch is the membership epoch the worker starts in (proto.Assign):
	// a node that replaces a failed one joins a job paused since.
	Epoch uint64
	// Resend keeps each request's messages until their servers answer,
	// so that the requests a failed server did not answer are sent again
	// to the backup that took over its ranges (Core.Resend; the job has
	// replicated key ranges, proto.Job.Replicas), and a second answer
	// from one server is dropped.
	Resend bool
}

// Validate checks c; errors name the field and the bound.
func (c Config) Validate() error {
	if c.Table == nil {
		return errors.New("worker: Table is nil")
	}
	if c.Rank < 0 || c.Rank >= proto.MaxRank {
		return fmt.Errorf("worker: Rank %d out of range [0, %d)", c.Rank, proto.MaxRank)
	}
	if c.Width < 0 {
		return fmt.Errorf("worker: Width %d is negative", c.Width)
	}
	return c.Clock.Validate()
}

// Future is the outcome of an asynchronous call.
type Future struct {
	done   chan struct{}
	err    error
	direct bool
}

func newFuture() *Future { return &Future{done: make(chan struct{})} }

// complete ends f with err; later calls do nothing.
func (f *Future) complete(err error) {
	select {
	case <-f.done:
	default:
		f.err = err
		close(f.done)
	}
}

// Wait blocks until the call is done and returns its error.
func (f *Future) Wait() error {
	<-f.done
	return f.err
}

// Direct reports whether the call was served on the caller's goroutine
// before it returned (Core.Direct): no request of it was queued, so its
// arrays are the caller's again.
func (f *Future) Direct() bool { return f.direct }

// Done returns a channel closed when the call is done.
func (f *Future) Done() <-chan struct{} { return f.done }

// Err returns the call's error once Done is closed, nil before.
func (f *Future) Err() error {
	select {
	case <-f.done:
		return f.err
	default:
		return nil
	}
}

// opKind is the kind of an operation.
type opKind uint8

const (
	opPush opKind = iota
	opPull
	opPushRange
	opPullRange
	// Moving keys between servers (see Worker.Retable): requests to one
	// server, and the switch of the worker's own table.
	opTable
	opTake
	opPut
	opSetTable
	// Checkpoints (see Worker.Save and Load): a snapshot of slots of one
	// server's store, and the installation of one.
	opSave
	opLoad
	// A key family's declaration to one server (see Worker.Family).
	opFamily
	// Recovery (see Worker.Pause and Resume, and Worker.Resend).
	opPause
	opResume
	opResend
	opSuspend
)

// Op is one call of the application.
type Op struct {
	kind       opKind
	keys       []uint64
	vals       []float32
	lens       []int32
	begin, end uint64
	dst        []float32
	dstBatch   *kv.Batch // PullLens
	// steps, when not nil, receives the smallest step count of the
	// servers' answers (an evaluator's pull; −1 without one).
	steps *int64
	// ahead marks a pull for the round after the current one, sent
	// before the current round's push (asynchronous training only).
	ahead bool
	// The moves' operations: the server asked, the new table and its
	// version, and where a Take's answer goes.
	server  int
	table   *route.Table
	version uint64
	take    *[]float32
	// snap is where a Save's answer goes, and a Load's snapshot.
	snap *kv.Batch
	// count is a Family's number of keys (begin its base, end its
	// stride).
	count uint64
	// epoch and cause are a Pause's.
	epoch uint64
	cause error
	fut   *Future
}

// Out is a message for the server of rank Server.
type Out struct {
	Server int
	M      *transport.Message
	// Dst, when not nil, is where the values of the answer to a pull go:
	// a part of the caller's array, exactly as long as the answer. A
	// driver whose transport can read the values straight there registers
	// it (transport.Berths); Receive then finds them in place and copies
	// nothing.
	Dst []float32
	// Room, when not nil, is where the values of an answer of per-key
	// lengths (width 0) go from its start, when the pull asked one server
	// only: a driver whose server is in the same process registers it
	// (RoomLander), and the answer is found in place.
	Room []float32
}

// request is an operation in flight.
type request struct {
	op    *Op
	round int64
	push  bool
	gate  bool // its completion opens the round gate
	// acked marks, for a gate push, the servers that answered it: a pull
	// waiting behind the gate may go to them (Core.held).
	acked     []bool
	remaining int
	err       error
	// Pull answers: the offset in dst of each server's values (range
	// tables), or the answers to merge (other tables).
	offs  []int
	want  []int // values expected from each server (range tables)
	parts []kv.Batch
	msgs  []*transport.Message
	keys  []uint64 // the keys asked, for Merge
	// cut, when not nil, splits keys by server (a range-owned table):
	// the answers are joined in server order, not merged key by key.
	cut []int
	// sent is when a range pull was sent, for Stats.Links.
	sent time.Time
	// start is when a push or pull started, for Stats.Latency.
	start time.Time
	// With Config.Resend: copies holds a copy of each server's message
	// (M nil for none), answered the servers that answered.
	copies   []Out
	answered []bool
	// served tells that a part was answered on the caller's goroutine
	// (Direct).
	served bool
}

// Stats counts a worker's requests.
type Stats struct {
	Pushes, Pulls          uint64
	KeysPushed, KeysPulled uint64
	// Rounds is the number of rounds the worker has ended (pushes).
	Rounds int64
	// Gated counts operations that waited for the round gate.
	Gated uint64
	// Direct counts the pulls the co-located server served on the
	// caller's goroutine (Worker.SetLocal), whole or their part of its
	// keys; they are in Pulls too. DirectPushes counts the pushes it
	// took so (in Pushes too).
	Direct       uint64
	DirectPushes uint64
	// Errors counts failed requests.
	Errors uint64
	// Links has, per server, the bytes of the range pulls' answers and
	// the nanoseconds from sending each pull to its answer: a measure of
	// the throughput from the server to this worker, taken on ordinary
	// data messages (seed 002 §3.2).
	Links []LinkTiming
	// Latency has, per server, the round trips of the pushes and the
	// pulls (Worker.Stats; Core.Stats leaves it out, Core.Latency has
	// it). It stays out of JSON: a summary line of colo node grows with
	// it by a histogram per server, past what a pipe (and mpirun's
	// merged output) writes in one piece; the metrics carry it
	// (colo_worker_request_duration_seconds).
	Latency []ServerLatency `json:"-"`
}

// LinkTiming is what a worker measured of the answers of one server.
type LinkTiming struct {
	Bytes uint64 `json:"bytes"`
	Nanos int64  `json:"nanos"`
}

// Core is the worker's state machine. It is not safe for concurrent use.
type Core struct {
	cfg     Config
	servers int
	ranges  bool
	sync    bool // gate rounds (BSP, bounded delay)
	split   *kv.Splitter
	nextID  uint64
	round   int64
	gated   bool
	queue   []*Op
	pending map[uint64]*request
	out     []Out
	cut     []int
	stats   Stats
	links   []LinkTiming
	lat     latencies
	failed  error
	// gateReq is the push holding the round gate; held the messages of a
	// pull started behind it, per server, sent as each server answers
	// the push (a server that answered has applied the round, so its
	// values are the ones the pull would get after the gate).
	gateReq *request
	held    [][]Out
	// epoch is the membership epoch of the requests (proto.Pause);
	// paused, while set, fails every operation (between Pause and
	// Resume).
	epoch  uint64
	paused error
	// down marks the servers whose requests are kept, not sent, until
	// Resend (a failed server, while its backup takes over); moved the
	// servers whose requests carry proto.FlagResent since.
	down, moved []bool
	// kept holds, per server, the pushes it acknowledged before its
	// backups had their rounds (Config.Resend, a server that replicates
	// its rounds' sums): sent again with the unanswered requests should
	// the server fail. spare holds the arrays of dropped ones, reused.
	kept  [][]keptPush
	spare []kv.Batch
	// local, during Direct, serves the parts of server localRank;
	// localVals and localLens hold the values of such a part of a pull
	// of several servers until the pull completes.
	local     Local
	localRank int
	localVals []float32
	localLens []int32
}

// keptPush is a copy of a push acknowledged by a server whose backups
// do not have its round yet.
type keptPush struct {
	id    uint64
	round int64
	out   Out
}

// NewCore returns a worker core.
func NewCore(cfg Config) (*Core, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Core{
		cfg:     cfg,
		servers: cfg.Table.Servers(),
		ranges:  cfg.Table.Kind() == route.Ranges,
		sync:    cfg.Clock.Mode != clock.Async,
		split:   kv.NewSplitter(cfg.Table.Servers(), cfg.Table.Router()),
		pending: make(map[uint64]*request),
		links:   make([]LinkTiming, cfg.Table.Servers()),
		lat:     make(latencies, cfg.Table.Servers()),
		epoch:   cfg.Epoch,
		nextID:  firstID(cfg.Epoch),
	}, nil
}

// now returns the time of the pull timings.
func (c *Core) now() time.Time {
	if c.cfg.Now != nil {
		return c.cfg.Now()
	}
	return time.Now()
}

// Round returns the worker's current round: the number of pushes so far.
func (c *Core) Round() int64 { return c.round }

// Stats returns the counters.
func (c *Core) Stats() Stats {
	var s Stats
	c.statsTo(&s)
	return s
}

// statsTo sets *s to the counters, reusing the memory of s.Links: the
// driver publishes them after every turn of its loop.
func (c *Core) statsTo(s *Stats) {
	links := s.Links[:0]
	*s = c.stats
	s.Rounds = c.round
	s.Links = append(links, c.links...)
}

// Latency returns the round trips of the pushes and pulls per server. It
// is safe to call from any goroutine, concurrently with the other
// methods.
func (c *Core) Latency() []ServerLatency { return c.lat.load() }

// InFlight returns the number of requests awaiting answers and of
// operations waiting for the gate.
func (c *Core) InFlight() int { return len(c.pending) + len(c.queue) }

// Submit starts op and returns the messages to send, valid until the next
// call. While the previous round's push is unacknowledged (BSP, bounded
// delay) op waits and nothing is sent.
func (c *Core) Submit(op *Op) []Out {
	c.out = c.out[:0]
	if c.failed != nil {
		op.fut.complete(c.failed)
		return c.out
	}
	switch {
	case op.kind == opPause:
		c.pause(op.epoch, op.cause)
		op.fut.complete(nil)
		return c.out
	case op.kind == opResume:
		c.paused = nil
		op.fut.complete(nil)
		return c.out
	case op.kind == opResend:
		c.resend(op.server)
		op.fut.complete(nil)
		return c.out
	case op.kind == opSuspend:
		if op.server >= 0 && op.server < c.servers {
			if c.down == nil {
				c.down = make([]bool, c.servers)
			}
			c.down[op.server] = true
		}
		op.fut.complete(nil)
		return c.out
	case c.paused != nil:
		op.fut.complete(c.paused)
		return c.out
	}
	if c.gated {
		c.stats.Gated++
		if len(c.queue) == 0 && c.gateReq != nil && (op.kind == opPull || op.kind == opPullRange) && op.steps == nil {
			c.startBehindGate(op)
			return c.out
		}
		c.queue = append(c.queue, op)
		return c.out
	}
	c.start(op)
	return c.out
}

// startBehindGate starts a pull while the round gate is closed: its
// messages to the servers that answered the gate push go now, the others
// as those servers answer (Receive).
func (c *Core) startBehindGate(op *Op) {
	c.start(op)
	if c.held == nil {
		c.held = make([][]Out, c.servers)
	}
	keep := c.out[:0]
	for _, o := range c.out {
		if c.gateReq.acked[o.Server] {
			keep = append(keep, o)
		} else {
			c.held[o.Server] = append(c.held[o.Server], o)
		}
	}
	c.out = keep
}

// Fail ends every operation in flight or waiting with err, and every later
// one.
func (c *Core) Fail(err error) {
	if c.failed == nil {
		c.failed = err
	}
	for id, r := range c.pending {
		delete(c.pending, id)
		for _, m := range r.msgs {
			if m != nil {
				m.Release()
			}
		}
		r.op.fut.complete(err)
	}
	for _, op := range c.queue {
		op.fut.complete(err)
	}
	c.queue = nil
	c.gateReq, c.held = nil, nil // their requests failed above
}

// pause fails every operation in flight or waiting with cause, and
// every later one until Resume, and starts epoch: rounds count from 0
// again, and requests carry the new epoch, so that the servers tell
// them from the ones sent before (server.Server). Answers to the failed
// requests are dropped when they come (Receive); request ids go on
// increasing, from the epoch's first id on (firstID), so that none is
// taken for a later request's.
func (c *Core) pause(epoch uint64, cause error) {
	for id, r := range c.pending {
		delete(c.pending, id)
		for _, m := range r.msgs {
			if m != nil {
				m.Release()
			}
		}
		c.stats.Errors++
		r.op.fut.complete(cause)
	}
	for _, op := range c.queue {
		op.fut.complete(cause)
	}
	c.queue = nil
	c.gateReq, c.held, c.gated = nil, nil, false
	c.kept = nil // of rounds the job rolls back
	c.round, c.epoch, c.paused = 0, epoch, cause
	c.nextID = max(c.nextID, firstID(epoch))
}

// firstID returns the request id before the first of membership epoch e:
// each epoch numbers its requests from e·2^40 on, so that a late answer
// to a request of an earlier epoch (sent to the node this one replaced)
// is never taken for a request of a replacement.
func firstID(e uint64) uint64 { return e << 40 }

// start splits op by server and appends its messages to c.out.
func (c *Core) start(op *Op) {
	if err := c.check(op); err != nil {
		c.stats.Errors++
		op.fut.complete(err)
		return
	}
	if op.kind >= opTable {
		c.startMove(op)
		return
	}
	c.nextID++
	r := &request{op: op, round: c.round, push: op.kind == opPush || op.kind == opPushRange, start: c.now()}
	flags := transport.FlagRequest | transport.FlagPull
	if r.push {
		flags = transport.FlagRequest | transport.FlagPush
	}
	round := c.round
	if op.ahead {
		round++
	}
	meta := proto.AppendMetaEpoch(nil, round, c.epoch)
	all := r.push && c.sync // every server hears of the round
	if r.push && c.sync {
		r.acked = make([]bool, c.servers)
	}
	send := func(s int, cmd uint16, b kv.Batch) {
		if len(b.Keys) == 0 && !all {
			return
		}
		if cmd == proto.DataRange && b.Keys[0] == b.Keys[1] && !all {
			return
		}
		if c.local != nil && s == c.localRank && cmd == proto.DataSparse && c.serve(r, s, b, round) {
			return
		}
		o := Out{Server: s, M: &transport.Message{
			Header: transport.Header{Type: transport.TypeData, Flags: flags, Cmd: cmd, ID: c.nextID},
			Body:   meta,
			KV:     b,
		}}
		if r.offs != nil && r.want[s] > 0 {
			o.Dst = op.dst[r.offs[s] : r.offs[s]+r.want[s] : r.offs[s]+r.want[s]]
		}
		c.keep(r, o)
		c.out = append(c.out, o)
		r.remaining++
	}
	switch op.kind {
	case opPush, opPull:
		c.splitSparse(r, op, send)
	default:
		c.splitRange(r, op, send)
	}
	if r.push {
		c.stats.Pushes++
		c.round++
		if c.sync {
			r.gate = true
			c.gated = true
			c.gateReq = r
		}
	} else {
		c.stats.Pulls++
	}
	if op.steps != nil {
		*op.steps = -1
	}
	if r.remaining == 0 {
		if r.served {
			// Every part was answered on the caller's goroutine.
			if r.err == nil && r.parts != nil {
				r.err = c.merge(r)
			}
			op.fut.direct = true
		}
		c.finish(r)
		return
	}
	c.pending[c.nextID] = r
}

// serve serves part b of request r, the part of server s (the
// co-located one, c.local), through c.local on the caller's goroutine
// (Direct), as Receive takes its answer, and reports whether it did;
// when it did not, the part goes as a message. A push the server holds
// (the round incomplete) counts as a message sent: its acknowledgement
// comes as one.
func (c *Core) serve(r *request, s int, b kv.Batch, round int64) bool {
	start := c.now()
	if r.push {
		answered, err, ok := c.local.PushLocal(c.cfg.Rank, c.nextID, round, c.epoch, b.Keys, b.Vals, b.Lens)
		if !ok {
			return false
		}
		c.stats.DirectPushes++
		if !answered {
			r.remaining++
			return true
		}
		r.served = true
		c.lat[s].push.observe(c.now().Sub(start))
		if err != nil && r.err == nil {
			r.err = &proto.NodeError{ID: proto.ServerID(s), Err: err}
		}
		if r.acked != nil {
			r.acked[s] = true
		}
		return true
	}
	op := r.op
	room, lens, own := c.localVals[:cap(c.localVals)], c.localLens[:0], true
	switch {
	case r.offs != nil:
		room, own = op.dst[r.offs[s]:r.offs[s]+r.want[s]:r.offs[s]+r.want[s]], false
	case r.cut != nil && len(b.Keys) == len(op.keys):
		// The whole pull: its values and lengths in the caller's arrays
		// (join finds them in place).
		room, lens, own = op.dstBatch.Vals[:cap(op.dstBatch.Vals)], op.dstBatch.Lens[:0], false
	}
	vals, lensOut, err, ok := c.local.PullLocal(c.cfg.Rank, c.nextID, round, c.epoch, b.Keys, room, lens)
	if !ok {
		return false
	}
	r.served = true
	c.stats.Direct++
	c.lat[s].pull.observe(c.now().Sub(start))
	if err != nil {
		if r.err == nil {
			r.err = &proto.NodeError{ID: proto.ServerID(s), Err: err}
		}
		return true
	}
	if err := checkPart(s, len(b.Keys), kv.Batch{Vals: vals, Lens: lensOut}); err != nil {
		if r.err == nil {
			r.err = fmt.Errorf("worker %d: answer of server %d: %w", c.cfg.Rank, s, err)
		}
		return true
	}
	if r.offs != nil {
		if len(vals) != r.want[s] {
			if r.err == nil {
				r.err = fmt.Errorf("worker %d: answer of server %d: %d values answered for %d", c.cfg.Rank, s, len(vals), r.want[s])
			}
		} else if len(vals) > 0 && &vals[0] != &room[0] {
			copy(room, vals)
		}
		return true
	}
	if own {
		// The core's arrays, kept (grown) for the next direct part: the
		// request reads them until it completes, and nothing is direct
		// while a request is in flight.
		c.localVals, c.localLens = vals[:0], lensOut[:0]
	}
	r.parts[s] = kv.Batch{Vals: vals, Lens: lensOut}
	return true
}

// startMove starts an operation of the moves: a request to one server,
// or the switch to a new table.
func (c *Core) startMove(op *Op) {
	if op.kind == opSetTable {
		c.cfg.Table = op.table
		c.ranges = op.table.Kind() == route.Ranges
		c.split = kv.NewSplitter(op.table.Servers(), op.table.Router())
		op.fut.complete(nil)
		return
	}
	c.nextID++
	r := &request{op: op, round: c.round, push: op.kind != opTake && op.kind != opSave, remaining: 1}
	m := &transport.Message{Header: transport.Header{Type: transport.TypeData, Flags: transport.FlagRequest | transport.FlagPush, ID: c.nextID},
		Body: proto.AppendMetaEpoch(nil, c.round, c.epoch)}
	switch op.kind {
	case opTable:
		m.Cmd = proto.DataTable
		m.KV.Keys = append([]uint64{op.version, op.table.NumKeys()}, op.table.Starts()...)
	case opTake:
		m.Cmd, m.Flags = proto.DataTake, transport.FlagRequest|transport.FlagPull
		m.KV.Keys = []uint64{op.begin, op.end}
	case opPut:
		m.Cmd = proto.DataPut
		m.KV.Keys, m.KV.Vals = []uint64{op.begin, op.end}, op.vals
	case opSave:
		m.Cmd, m.Flags = proto.DataSave, transport.FlagRequest|transport.FlagPull
		m.KV.Keys = []uint64{op.begin, op.end}
		if op.keys != nil {
			m.KV.Keys = op.keys // a request of an incremental capture
		}
	case opLoad:
		m.Cmd = proto.DataLoad
		m.KV = *op.snap
	case opFamily:
		m.Cmd = proto.DataFamily
		m.KV.Keys = []uint64{op.begin, op.end, op.count}
	}
	c.keep(r, Out{Server: op.server, M: m})
	c.out = append(c.out, Out{Server: op.server, M: m})
	c.pending[c.nextID] = r
}

// keep keeps a copy of o, a message of request r, with Config.Resend.
func (c *Core) keep(r *request, o Out) {
	if !c.cfg.Resend {
		return
	}
	if r.copies == nil {
		r.copies, r.answered = make([]Out, c.servers), make([]bool, c.servers)
	}
	m := *o.M
	o.M = &m
	r.copies[o.Server] = o
}

// Down reports whether the requests to server s are kept, not sent:
// s failed, and its backup takes over (Worker.Suspend). The driver
// drops such messages; Resend sends them.
func (c *Core) Down(s int) bool { return s >= 0 && s < len(c.down) && c.down[s] }

// Moved reports whether server s's ranges were taken over by a backup
// (Resend): the driver marks the requests to s with proto.FlagResent.
func (c *Core) Moved(s int) bool { return s >= 0 && s < len(c.moved) && c.moved[s] }

// Resend appends to the messages to send every request that server s
// has not answered, in the order they were first sent: s failed, and
// the backup that took over its ranges now listens as s. The backup
// drops a push it holds already, and a second answer of s is dropped
// here (Receive). It needs Config.Resend.
func (c *Core) resend(s int) {
	if s < 0 || s >= c.servers {
		return
	}
	if c.down == nil {
		c.down = make([]bool, c.servers)
	}
	if c.moved == nil {
		c.moved = make([]bool, c.servers)
	}
	c.down[s], c.moved[s] = false, true
	// A pull held behind the round gate for s goes when s answers the
	// gate's push (Receive), not before.
	var held map[uint64]bool
	if s < len(c.held) && len(c.held[s]) > 0 {
		held = make(map[uint64]bool, len(c.held[s]))
		for _, o := range c.held[s] {
			held[o.M.ID] = true
		}
	}
	ids := make([]uint64, 0, len(c.pending))
	for id, r := range c.pending {
		if r.copies != nil && r.copies[s].M != nil && !r.answered[s] && !held[id] {
			ids = append(ids, id)
		}
	}
	if s < len(c.kept) {
		for _, k := range c.kept[s] {
			ids = append(ids, k.id)
		}
	}
	slices.Sort(ids)
	for _, id := range ids {
		var o Out
		if r := c.pending[id]; r != nil {
			o = r.copies[s]
		} else {
			o = c.keptOut(s, id)
		}
		m := *o.M
		o.M = &m
		c.out = append(c.out, o)
	}
}

// keptOut returns the kept push id to server s.
func (c *Core) keptOut(s int, id uint64) Out {
	for _, k := range c.kept[s] {
		if k.id == id {
			return k.out
		}
	}
	panic(fmt.Sprintf("worker: kept push %d to server %d not found", id, s)) // ids were taken from kept
}

// replicated takes what push acknowledgement m of server s says of its
// backups: the number of rounds they have (a server that replicates its
// rounds' sums, proto.DataRound), or everything it acknowledged (no
// count). It drops the kept pushes the backups have, and keeps the
// acknowledged push when they do not have its round: its answer is
// in, but the server may fail before its backups have the round, and
// the backup that takes over then needs it again.
func (c *Core) replicated(s int, m *transport.Message) {
	have := int64(-1) // every round
	if len(m.Body) > 0 {
		n, err := proto.ParseMeta(m)
		if err != nil {
			return
		}
		have = n
	}
	if s < len(c.kept) {
		q := c.kept[s]
		n := 0
		for n < len(q) && (have < 0 || q[n].round < have) {
			c.spare = append(c.spare, q[n].out.M.KV)
			q[n] = keptPush{}
			n++
		}
		c.kept[s] = q[:copy(q, q[n:])]
	}
	r := c.pending[m.ID]
	if have < 0 || r == nil || !r.push || r.op.kind > opPushRange || r.round < have || r.copies == nil || r.copies[s].M == nil || r.answered[s] {
		return
	}
	if c.kept == nil {
		c.kept = make([][]keptPush, c.servers)
	}
	// The caller's arrays are its own once the push is done: a copy.
	var b kv.Batch
	if n := len(c.spare); n > 0 {
		b, c.spare = c.spare[n-1], c.spare[:n-1]
	}
	o := r.copies[s]
	k := o.M.KV
	b.Keys, b.Vals = append(b.Keys[:0], k.Keys...), append(b.Vals[:0], k.Vals...)
	if k.Lens != nil {
		b.Lens = append(b.Lens[:0], k.Lens...)
	} else {
		b.Lens = nil
	}
	cm := *o.M
	cm.KV = b
	o.M = &cm
	c.kept[s] = append(c.kept[s], keptPush{id: m.ID, round: r.round, out: o})
}

// check validates an operation's arrays.
func (c *Core) check(op *Op) error {
	w := c.cfg.Width
	if op.kind >= opTable {
		switch {
		case op.kind != opSetTable && (op.server < 0 || op.server >= c.servers):
			return fmt.Errorf("worker %d: server %d of %d", c.cfg.Rank, op.server, c.servers)
		case (op.kind == opTable || op.kind == opSetTable) && (op.table == nil || op.table.Servers() != c.servers || op.table.Kind() != route.Ranges):
			return fmt.Errorf("worker %d: a new routing table must be a Ranges table of %d servers", c.cfg.Rank, c.servers)
		case op.kind == opSetTable && len(c.pending) > 0:
			return fmt.Errorf("worker %d: %d requests in flight: the routing table changes between rounds", c.cfg.Rank, len(c.pending))
		case (op.kind == opTake || op.kind == opPut || op.kind == opSave) && op.end < op.begin:
			return fmt.Errorf("worker %d: range [%d, %d) is reversed", c.cfg.Rank, op.begin, op.end)
		}
		return nil
	}
	if op.ahead && c.sync {
		return fmt.Errorf("worker %d: a pull ahead of its round needs asynchronous training, not %s", c.cfg.Rank, c.cfg.Clock.Name())
	}
	switch op.kind {
	case opPush, opPull:
		b := kv.Batch{Keys: op.keys, Vals: op.vals, Lens: op.lens}
		if op.kind == opPull {
			b.Vals, b.Lens = nil, nil
			if len(op.keys) > 1 {
				// The previous key in a register, as kv.Batch.Validate.
				prev := op.keys[0]
				for i, k := range op.keys[1:] {
					if k <= prev {
						return fmt.Errorf("worker %d: pull key %d (%d) is not greater than the previous (%d)", c.cfg.Rank, i+1, k, prev)
					}
					prev = k
				}
			}
			if op.dstBatch == nil && w > 0 && len(op.dst) < w*len(op.keys) {
				return fmt.Errorf("worker %d: pull of %d keys of width %d into %d values", c.cfg.Rank, len(op.keys), w, len(op.dst))
			}
			if op.dstBatch == nil && w == 0 {
				return fmt.Errorf("worker %d: keys have per-key lengths: use PullLens", c.cfg.Rank)
			}
			return nil
		}
		if err := b.Validate(); err != nil {
			return fmt.Errorf("worker %d: push: %w", c.cfg.Rank, err)
		}
		if w > 0 && len(op.vals) != w*len(op.keys) {
			return fmt.Errorf("worker %d: push of %d values for %d keys of width %d", c.cfg.Rank, len(op.vals), len(op.keys), w)
		}
	default:
		if w == 0 {
			return fmt.Errorf("worker %d: range requests need a uniform width", c.cfg.Rank)
		}
		if op.end < op.begin {
			return fmt.Errorf("worker %d: range [%d, %d) is reversed", c.cfg.Rank, op.begin, op.end)
		}
		n := op.end - op.begin
		if n > uint64(route.MaxIndex) {
			return fmt.Errorf("worker %d: range of %d keys, at most %d", c.cfg.Rank, n, route.MaxIndex)
		}
		have := len(op.vals)
		if op.kind == opPullRange {
			have = len(op.dst)
		}
		if uint64(have) != n*uint64(w) {
			return fmt.Errorf("worker %d: range of %d keys of width %d with %d values", c.cfg.Rank, n, w, have)
		}
	}
	return nil
}

// Direct starts op, a sparse push or pull, on the caller's goroutine,
// the part of local's keys (local is the server in the worker's
// process) served through local as its message would be, and returns
// the messages of the other servers' parts, to be sent as Submit's; it
// reports whether it did, and when it did not, nothing changed and op
// goes to the driver as usual. It does only when the message path
// would start op at once: nothing of the worker in flight or waiting
// (so no earlier push unanswered, and the round gate open: local holds
// the values a pull gets), local's server neither down nor taken over,
// and no replicated ranges (Config.Resend). A pull's part is answered
// in place (in the caller's array when it is the whole pull); a push's
// part is answered at once unless local holds it (a BSP round that
// other workers have not completed), and then its acknowledgement
// comes as a message. The counters, errors and timings are those of
// the message path; Stats.Direct and DirectPushes count the parts
// served so. op's future is Direct when every part was.
func (c *Core) Direct(op *Op, local Local) ([]Out, bool) {
	if op.kind != opPull && op.kind != opPush || op.steps != nil || op.kind == opPull && len(op.keys) == 0 {
		return nil, false
	}
	if c.failed != nil || c.paused != nil || c.gated || len(c.queue) > 0 || len(c.pending) > 0 || c.cfg.Resend {
		return nil, false
	}
	s := local.Rank()
	if s < 0 || s >= c.servers || c.Down(s) || c.Moved(s) {
		return nil, false
	}
	if c.ranges && len(op.keys) > 0 && (op.kind == opPull && op.dstBatch != nil || op.kind == opPush && (!c.sync || c.servers == 1)) {
		lo, hi, _ := c.cfg.Table.Range(s)
		if op.keys[0] >= lo && (s == c.servers-1 || op.keys[len(op.keys)-1] < hi) {
			// One part, local's: served without a request's tracking.
			return nil, c.directOne(op, local, s)
		}
	}
	c.out = c.out[:0]
	c.local, c.localRank = local, s
	c.start(op)
	c.local = nil
	return c.out, true
}

// directOne is Direct for op whose keys are all local's (server s's)
// and that goes to no other server: a pull of per-key lengths, or a
// push that does not gate the round on several servers. A push that
// local holds (a bounded delay's wait) becomes a request in flight, as
// a message's.
func (c *Core) directOne(op *Op, local Local, s int) bool {
	if err := c.check(op); err != nil {
		c.stats.Errors++
		op.fut.complete(err) // as start fails it
		return true
	}
	round := c.round
	if op.ahead {
		round++
	}
	start := c.now()
	var err error
	if op.kind == opPull {
		b := op.dstBatch
		vals, lens, perr, ok := local.PullLocal(c.cfg.Rank, c.nextID+1, round, c.epoch, op.keys, b.Vals[:cap(b.Vals)], b.Lens)
		if !ok {
			return false
		}
		c.nextID++
		c.stats.Pulls++
		c.stats.Direct++
		c.stats.KeysPulled += uint64(len(op.keys))
		c.lat[s].pull.observe(c.now().Sub(start))
		if err = perr; err != nil {
			err = &proto.NodeError{ID: proto.ServerID(s), Err: err}
		} else if err = checkPart(s, len(op.keys), kv.Batch{Vals: vals, Lens: lens}); err != nil {
			err = fmt.Errorf("worker %d: answer of server %d: %w", c.cfg.Rank, s, err)
		} else {
			if lens == nil {
				// A server of a uniform width answers no lengths.
				w := int32(len(vals) / len(op.keys))
				lens = b.Lens[:0]
				for range op.keys {
					lens = append(lens, w)
				}
			}
			b.Keys, b.Vals, b.Lens = op.keys, vals, lens
		}
	} else {
		answered, perr, ok := local.PushLocal(c.cfg.Rank, c.nextID+1, round, c.epoch, op.keys, op.vals, op.lens)
		if !ok {
			return false
		}
		c.nextID++
		c.stats.Pushes++
		c.stats.DirectPushes++
		c.stats.KeysPushed += uint64(len(op.keys))
		c.round++
		if !answered {
			r := &request{op: op, round: round, push: true, start: start, remaining: 1}
			if c.sync {
				r.gate, r.acked, c.gated, c.gateReq = true, make([]bool, c.servers), true, r
			}
			c.pending[c.nextID] = r
			return true
		}
		c.lat[s].push.observe(c.now().Sub(start))
		if perr != nil {
			err = &proto.NodeError{ID: proto.ServerID(s), Err: perr}
		}
	}
	op.fut.direct = true
	if err != nil {
		c.stats.Errors++
	}
	op.fut.complete(err)
	return true
}

// splitSparse splits a sparse push or pull.
func (c *Core) splitSparse(r *request, op *Op, send func(int, uint16, kv.Batch)) {
	b := kv.Batch{Keys: op.keys, Vals: op.vals, Lens: op.lens}
	if r.push {
		c.stats.KeysPushed += uint64(len(op.keys))
	} else {
		c.stats.KeysPulled += uint64(len(op.keys))
		b.Vals, b.Lens = nil, nil
	}
	w := c.cfg.Width
	if w == 0 && r.push && op.lens == nil && len(op.keys) > 0 {
		w = len(op.vals) / len(op.keys)
	}
	if c.ranges && !r.push && op.dstBatch != nil {
		// S binary searches; each server's keys are a run of the keys,
		// its answer a run of the values.
		c.cut = c.cfg.Table.SplitSorted(c.cut, op.keys)
		r.keys, r.cut = op.keys, slices.Clone(c.cut)
		r.parts = make([]kv.Batch, c.servers)
		r.msgs = make([]*transport.Message, c.servers)
		one := -1
		for s := range c.servers {
			k0, k1 := r.cut[s], r.cut[s+1]
			if k1 > k0 {
				if one == -1 && k1-k0 == len(op.keys) {
					one = len(c.out)
				}
			}
			send(s, proto.DataSparse, kv.Batch{Keys: op.keys[k0:k1:k1]})
		}
		if one >= 0 && one < len(c.out) {
			c.out[one].Room = op.dstBatch.Vals[:cap(op.dstBatch.Vals)]
		}
		return
	}
	if c.ranges && (op.lens == nil || !r.push) && (w > 0 || r.push) && op.dstBatch == nil {
		// S binary searches, parts share the caller's arrays.
		c.cut = c.cfg.Table.SplitSorted(c.cut, op.keys)
		if !r.push {
			r.offs, r.want = make([]int, c.servers), make([]int, c.servers)
		}
		for s := range c.servers {
			k0, k1 := c.cut[s], c.cut[s+1]
			p := kv.Batch{Keys: op.keys[k0:k1:k1]}
			if r.push {
				p.Vals = op.vals[k0*w : k1*w : k1*w]
			} else {
				r.offs[s], r.want[s] = k0*w, (k1-k0)*w
			}
			send(s, proto.DataSparse, p)
		}
		return
	}
	parts, err := c.split.Split(nil, b)
	if err != nil {
		// Routing errors are programming errors of the table.
		panic(err)
	}
	if !r.push {
		r.keys = op.keys
		r.parts = make([]kv.Batch, c.servers)
		r.msgs = make([]*transport.Message, c.servers)
	}
	for s, p := range parts {
		// The splitter's buffers are reused: copy.
		send(s, proto.DataSparse, p.Clone())
	}
}

// splitRange splits a range push or pull.
func (c *Core) splitRange(r *request, op *Op, send func(int, uint16, kv.Batch)) {
	w := c.cfg.Width
	n := op.end - op.begin
	if r.push {
		c.stats.KeysPushed += n
	} else {
		c.stats.KeysPulled += n
	}
	if !c.ranges {
		// No ranges in the table: the keys one by one.
		keys := make([]uint64, n)
		for i := range keys {
			keys[i] = op.begin + uint64(i)
		}
		sub := &Op{kind: opPush, keys: keys, vals: op.vals, dst: op.dst}
		if !r.push {
			sub.kind, sub.vals = opPull, nil
		}
		r.op = &Op{kind: op.kind, fut: op.fut, dst: op.dst, keys: keys}
		c.splitSparse(r, sub, send)
		if r.push {
			c.stats.KeysPushed -= n
		} else {
			c.stats.KeysPulled -= n
		}
		return
	}
	if !r.push {
		r.offs, r.want = make([]int, c.servers), make([]int, c.servers)
		r.sent = r.start
	}
	for s := range c.servers {
		lo, hi, _ := c.cfg.Table.Range(s)
		if s == c.servers-1 {
			hi = ^uint64(0) // the last server owns everything beyond
		}
		b, e := max(lo, op.begin), min(hi, op.end)
		if e < b {
			e = b
		}
		i0, i1 := int(b-op.begin)*w, int(e-op.begin)*w
		if e == b {
			i0, i1 = 0, 0
		}
		p := kv.Batch{Keys: []uint64{b, e}}
		if r.push {
			p.Vals = op.vals[i0:i1:i1]
		} else {
			r.offs[s], r.want[s] = i0, i1-i0
		}
		send(s, proto.DataRange, p)
	}
}

// Receive processes an answer from server rank s and returns the messages
// it lets go (operations that waited for the round gate). The message is
// released once its values are copied out (or found in place).
func (c *Core) Receive(s int, m *transport.Message) []Out {
	c.out = c.out[:0]
	if c.cfg.Resend && m.Flags&transport.FlagPush != 0 && m.Cmd != proto.DataError && s >= 0 && s < c.servers {
		c.replicated(s, m)
	}
	r := c.pending[m.ID]
	if r == nil || s < 0 || s >= c.servers {
		// An answer to a request that already failed.
		m.Release()
		return c.out
	}
	if r.answered != nil {
		if r.answered[s] {
			m.Release() // sent again to a backup that had answered
			return c.out
		}
		r.answered[s] = true
	}
	if m.Cmd == proto.DataError {
		if r.err == nil {
			r.err = &proto.NodeError{ID: proto.ServerID(s), Err: errors.New(string(m.Body))}
		}
		m.Release()
	} else if !r.push && r.err == nil {
		if err := c.answer(r, s, m); err != nil {
			r.err = fmt.Errorf("worker %d: answer of server %d: %w", c.cfg.Rank, s, err)
		}
	} else {
		m.Release()
	}
	if !r.start.IsZero() {
		l := &c.lat[s].pull
		if r.push {
			l = &c.lat[s].push
		}
		l.observe(c.now().Sub(r.start))
	}
	if r.acked != nil && !r.acked[s] {
		r.acked[s] = true
		if c.held != nil {
			c.out = append(c.out, c.held[s]...)
			clear(c.held[s])
			c.held[s] = c.held[s][:0]
		}
	}
	r.remaining--
	if r.remaining > 0 {
		return c.out
	}
	delete(c.pending, m.ID)
	if r.err == nil && r.parts != nil {
		r.err = c.merge(r)
	}
	for _, pm := range r.msgs {
		if pm != nil {
			pm.Release()
		}
	}
	c.finish(r)
	return c.out
}

// answer takes a pull answer from server s.
func (c *Core) answer(r *request, s int, m *transport.Message) error {
	if r.op.kind == opTake {
		*r.op.take = append((*r.op.take)[:0], m.KV.Vals...)
		m.Release()
		return nil
	}
	if r.op.kind == opSave {
		if m.Early() {
			*r.op.snap = kv.Batch{Keys: slices.Clone(m.KV.Keys), Vals: slices.Clone(m.KV.Vals), Lens: slices.Clone(m.KV.Lens)}
			m.Release()
			return nil
		}
		// The snapshot keeps the answer's arrays, which the message owns
		// alone, instead of a copy of its size: not released, they are
		// left to the garbage collector.
		*r.op.snap = kv.Batch{Keys: m.KV.Keys, Vals: m.KV.Vals, Lens: m.KV.Lens}
		return nil
	}
	if p := r.op.steps; p != nil {
		v, err := proto.ParseMeta(m)
		if err != nil {
			m.Release()
			return fmt.Errorf("the step count of an evaluator's pull: %w", err)
		}
		if *p < 0 || v < *p {
			*p = v
		}
	}
	if r.offs != nil {
		defer m.Release()
		o := r.offs[s]
		dst := r.op.dst
		n := len(m.KV.Vals)
		if n != r.want[s] || o+n > len(dst) {
			return fmt.Errorf("%d values answered for %d", n, r.want[s])
		}
		if !r.sent.IsZero() && n > 0 {
			c.links[s].Bytes += 4 * uint64(n)
			c.links[s].Nanos += int64(c.now().Sub(r.sent))
		}
		if n > 0 && &m.KV.Vals[0] == &dst[o] {
			return nil // read in place (Out.Dst)
		}
		copy(dst[o:], m.KV.Vals)
		return nil
	}
	if r.msgs[s] != nil {
		m.Release()
		return fmt.Errorf("two answers")
	}
	r.msgs[s] = m
	r.parts[s] = kv.Batch{Vals: m.KV.Vals, Lens: m.KV.Lens}
	return nil
}

// merge puts the answers of a general-table pull into the destination.
func (c *Core) merge(r *request) error {
	op := r.op
	if op.dstBatch != nil && r.cut != nil {
		return c.join(r)
	}
	if op.dstBatch != nil {
		out, err := c.split.Merge(kv.Batch{Vals: op.dstBatch.Vals, Lens: op.dstBatch.Lens}, r.keys, r.parts)
		if err != nil {
			return err
		}
		op.dstBatch.Keys, op.dstBatch.Vals, op.dstBatch.Lens = r.keys, out.Vals, out.Lens
		return nil
	}
	out, err := c.split.Merge(kv.Batch{Vals: op.dst[:0]}, r.keys, r.parts)
	if err != nil {
		return err
	}
	if len(out.Vals) > len(op.dst) {
		return fmt.Errorf("%d values answered for %d", len(out.Vals), len(op.dst))
	}
	if len(out.Vals) > 0 && &out.Vals[0] != &op.dst[0] {
		copy(op.dst, out.Vals)
	}
	return nil
}

// join puts the answers of a pull into the caller's batch when each
// server's keys are a run of the keys (r.cut): the servers' values and
// lengths one after the other. An answer the co-located server wrote in
// place is not copied.
func (c *Core) join(r *request) error {
	b := r.op.dstBatch
	n := 0
	for s, p := range r.parts {
		if err := checkPart(s, r.cut[s+1]-r.cut[s], p); err != nil {
			return err
		}
		n += len(p.Vals)
	}
	vals := b.Vals[:0]
	if cap(vals) < n {
		vals = make([]float32, 0, n)
	}
	lens := b.Lens[:0]
	if cap(lens) < len(r.keys) {
		lens = make([]int32, 0, len(r.keys))
	}
	for s, p := range r.parts {
		keys := r.cut[s+1] - r.cut[s]
		if keys == 0 {
			continue
		}
		at := len(vals)
		vals = vals[:at+len(p.Vals)]
		if len(p.Vals) > 0 && &vals[at] != &p.Vals[0] {
			copy(vals[at:], p.Vals)
		}
		if p.Lens != nil {
			lens = append(lens, p.Lens...)
		} else {
			w := int32(len(p.Vals) / keys)
			for range keys {
				lens = append(lens, w)
			}
		}
	}
	b.Keys, b.Vals, b.Lens = r.keys, vals, lens
	return nil
}

// checkPart checks server s's answer p to a pull of keys keys: values
// and lengths that agree.
func checkPart(s, keys int, p kv.Batch) error {
	if keys == 0 {
		if len(p.Vals) != 0 || len(p.Lens) != 0 {
			return fmt.Errorf("server %d answered %d values for no keys", s, len(p.Vals))
		}
		return nil
	}
	if p.Lens == nil {
		if len(p.Vals)%keys != 0 {
			return fmt.Errorf("server %d answered %d values for %d keys", s, len(p.Vals), keys)
		}
		return nil
	}
	if len(p.Lens) != keys {
		return fmt.Errorf("server %d answered %d lengths for %d keys", s, len(p.Lens), keys)
	}
	sum := 0
	for _, l := range p.Lens {
		if l < 0 {
			return fmt.Errorf("server %d answered negative length %d", s, l)
		}
		sum += int(l)
	}
	if sum != len(p.Vals) {
		return fmt.Errorf("server %d lengths sum to %d for %d values", s, sum, len(p.Vals))
	}
	return nil
}

// finish completes r and, when it opens the round gate, starts the
// operations that waited.
func (c *Core) finish(r *request) {
	if r.err != nil {
		c.stats.Errors++
	}
	r.op.fut.complete(r.err)
	if !r.gate {
		return
	}
	if c.gateReq == r {
		c.gateReq = nil
		for sv := range c.held { // servers that never answered: the push failed
			c.out = append(c.out, c.held[sv]...)
			clear(c.held[sv])
			c.held[sv] = c.held[sv][:0]
		}
	}
	c.gated = false
	for len(c.queue) > 0 && !c.gated {
		op := c.queue[0]
		c.queue[0] = nil
		c.queue = c.queue[1:]
		c.start(op)
	}
	if len(c.queue) == 0 {
		c.queue = slices.Clip(c.queue[:0])
	}
}
