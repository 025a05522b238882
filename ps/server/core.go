// Package server is the server of colo's parameter server: it stores the
// values of the keys the routing table gives it and applies the gradients
// that workers push with the update rule the application chose (seed 001
// §2.3: workers "push local results … to the servers, and … pull recent
// parameters").
//
// Core is the apply path as a pure, single-threaded state machine:
// requests in, replies out, no goroutines, no clock but the consistency
// clock's rounds. In BSP it holds a round's pushes from all workers until
// the last one arrives, then sums them in the Store in worker rank order
// (so the sum does not depend on the order they arrived in, see bsp.go),
// applies the sum and acknowledges every push of the round; in
// bounded-delay and asynchronous training it applies each push as it
// arrives and acknowledges it once the clock allows (see package clock).
// Server is the thin driver that feeds a Core the messages of one node
// and sends its replies.
//
// A push of n keys costs O(n) (one slot lookup and one rule application
// per key, a run of keys at once for ranges; in BSP also a copy of the
// push until its round completes, in buffers reused from round to round);
// a pull of n keys O(n) and a range pull of a range the server owns
// nothing, as the reply is a view of the store.
package server

import (
	"fmt"

	"colo/kv"
	"colo/ps/clock"
	"colo/ps/proto"
	"colo/ps/route"
	"colo/ps/update"
)

// Config configures a server.
type Config struct {
	// Rank is the server's rank, in [0, Table.Servers()).
	Rank int
	// Workers is the number of workers.
	Workers int
	// Table is the routing table.
	Table *route.Table
	// Width is the number of values per key, 0 for per-key lengths.
	Width int
	// Rule is the update rule; nil means update.Sum.
	Rule update.Rule
	// Clock is the consistency model.
	Clock clock.Config
}

// Validate checks c; errors name the field and the bound.
func (c Config) Validate() error {
	if c.Table == nil {
		return fmt.Errorf("server: Table is nil")
	}
	if c.Rank < 0 || c.Rank >= c.Table.Servers() {
		return fmt.Errorf("server: Rank %d out of range [0, %d)", c.Rank, c.Table.Servers())
	}
	if c.Workers < 1 {
		return fmt.Errorf("server: Workers %d, at least 1", c.Workers)
	}
	if c.Width < 0 {
		return fmt.Errorf("server: Width %d is negative", c.Width)
	}
	return c.Clock.Validate()
}

// Request is a push or pull from a worker.
type Request struct {
	Worker int // worker rank (the evaluator's, for an evaluator)
	// Evaluator marks a request of evaluator rank Worker: a pull answered
	// at once with the store's current values, outside the clock (no
	// staleness, no round); a push is refused.
	Evaluator bool
	ID        uint64
	// Cmd is the data command: proto.DataSparse or DataRange (Range is
	// set), or one of the commands that move keys between servers
	// (proto.DataTable, DataTake, DataPut; see move.go), or of the
	// snapshots of checkpoints (DataSave, DataLoad; see snapshot.go).
	Cmd   uint16
	Round int64
	Push  bool
	// Dst, when not nil, is where a sparse pull's values may be written
	// (the co-located worker's own array, see Lander): the answer's Vals
	// are then a part of it when they fit.
	Dst []float32
	// Range marks a range request: KV.Keys is {begin, end}.
	Range bool
	KV    kv.Batch
	// Ascending says that KV.Keys are known to be strictly increasing
	// (transport.Message.KeysAscending): the checks of the request skip
	// their order.
	Ascending bool
}

// validKV checks the request's batch (kv.Batch.Validate), without the
// keys' order when it is known.
func (r Request) validKV() error {
	if r.Ascending {
		return r.KV.ValidateSizes()
	}
	return r.KV.Validate()
}

// Reply answers a request: an empty acknowledgement of a push, the values
// of a pull, or an error.
type Reply struct {
	Worker int
	// Evaluator marks the answer to an evaluator's request; Steps is then
	// the number of pushes whose values the store holds (see
	// Core.Steps).
	Evaluator bool
	Steps     int64
	ID        uint64
	Pull      bool
	// Keys are the keys of a snapshot (DataSave); other answers have
	// none.
	Keys []uint64
	Vals []float32
	Lens []int32
	Err  error
	// View marks Vals as the store's own memory, not a copy: they stay
	// valid until the store next changes, that is until the next push is
	// handled.
	View bool
	// landed marks Vals as the array a Lander gave (Server.handle).
	landed bool
	// own marks Vals as an array of the answer's own, held by nothing
	// else (a snapshot's copy): a co-located worker may keep it, as it
	// keeps a landed answer's, instead of receiving a copy.
	own bool
	// tell marks the acknowledgement of a push of a server that
	// replicates its rounds' sums: it tells the worker replicated, the
	// number of rounds every live backup has (see replicate.go).
	tell       bool
	replicated int64
}

// Stats counts a server's work.
type Stats struct {
	Pushes, Pulls uint64
	// KeysPushed and KeysPulled count keys (a range counts its length).
	KeysPushed, KeysPulled uint64
	// Rounds is the number of rounds every worker has pushed.
	Rounds int64
	// MaxLead is the largest number of rounds a request's worker was
	// ahead of the slowest worker when the request arrived.
	MaxLead int64
	// Errors counts requests answered with an error.
	Errors uint64
	// EvaluatorPulls and EvaluatorKeys count the evaluators' pulls and
	// the keys they read; they are not in Pulls and KeysPulled.
	EvaluatorPulls, EvaluatorKeys uint64
	// Moves counts the routing tables the server switched to while the
	// job ran, KeysMoved the keys it handed to other servers.
	Moves     int
	KeysMoved uint64
	// Egress times the answers to range pulls that left the machine
	// (the driver's, Server.Stats).
	Egress Egress
	// Keys is the number of keys stored.
	Keys int
	// KeyShare is the fraction of the placed keys that the routing table
	// gives the server (route.Table.Share): its share of the model's
	// load, which changes when keys move (Retable).
	KeyShare float64
	// Staleness measures the pushes applied (see Staleness).
	Staleness Staleness
	// Replication counts the updates sent to the server's backups and
	// the acknowledgements' waits for them (the driver's,
	// Server.Stats; zero without backups).
	Replication ReplicaStats
}

// StalenessBuckets is the number of buckets of Staleness.Hist.
const StalenessBuckets = 17

// Staleness measures how old the model was that the pushes a server
// applied were computed on. A push of round r from worker w follows w's
// pull of round r; its staleness is r minus the number of rounds every
// worker had pushed to this server when the server answered that pull:
// how many rounds of some worker's updates the pulled values may lack.
// BSP gives 0; bounded delay τ at most τ (the clock holds a worker back
// until the slowest is within τ rounds); asynchronous training has no
// bound. Pushes with no pull of their round (a sparse worker whose batch
// reads none of this server's keys) are not counted.
type Staleness struct {
	// Pushes is the number of pushes measured, Sum their summed
	// staleness and Max the largest.
	Pushes uint64 `json:"pushes"`
	Sum    uint64 `json:"sum"`
	Max    int64  `json:"max"`
	// Hist[s] counts the pushes of staleness s; the last bucket those of
	// StalenessBuckets−1 or more.
	Hist [StalenessBuckets]uint64 `json:"histogram"`
}

// Mean returns Sum/Pushes (0 without pushes).
func (s Staleness) Mean() float64 {
	if s.Pushes == 0 {
		return 0
	}
	return float64(s.Sum) / float64(s.Pushes)
}

// Add adds the pushes of o to s.
func (s *Staleness) Add(o Staleness) {
	s.Pushes, s.Sum, s.Max = s.Pushes+o.Pushes, s.Sum+o.Sum, max(s.Max, o.Max)
	for i, n := range o.Hist {
		s.Hist[i] += n
	}
}

// record counts a push of staleness d.
func (s *Staleness) record(d int64) {
	d = max(d, 0)
	s.Pushes++
	s.Sum += uint64(d)
	s.Max = max(s.Max, d)
	s.Hist[min(d, StalenessBuckets-1)]++
}

// pullMark is what a server noted of a worker's last pull: its round,
// the rounds every worker had pushed when it was answered and the pushes
// the server had handled then (the staleness of update.AsyncStaleness).
//
// A server keeps the marks of a worker's last pullMarks pulls: under
// asynchronous training a worker sends the next round's pull ahead of
// its push (train.Schedule.PullAhead), and on a loaded machine the pull
// of the round after can reach a server before that push too.
const pullMarks = 4

type pullMark struct {
	round, min int64
	pushes     uint64
	ok         bool
}

// Core is a server's state machine. It is not safe for concurrent use.
type Core struct {
	cfg   Config
	store *Store
	clock *clock.Clock
	sync  bool // aggregate rounds (BSP)
	// async is how the step of a push applied alone is scaled
	// (update.Scaled; AsyncNone under BSP and for the other rules).
	async update.Async
	stats Stats
	out   []Reply
	// ids holds, per worker, the pushes not yet acknowledged in round
	// order: their request ids, whether they were answered already, and
	// any error found when their round was summed.
	ids [][]pending
	// held holds, per worker, the valid pushes of rounds not yet
	// complete (BSP), in round order; the elements beyond the length
	// keep their buffers for reuse.
	held [][]held
	buf  kv.Batch  // pull replies
	rbuf []float32 // range pull replies
	// pulls holds each worker's last pullMarks pulls, newest first, for
	// the staleness of its pushes (a worker that pulls its next round
	// before it pushes the current one, worker.Worker.PullAhead, has two
	// rounds' pulls outstanding, or more as its messages arrive).
	pulls [][pullMarks]pullMark
	// table is the routing table since the last move, version its
	// version (0: the job's first table), old the store of the table
	// before it, whose keys moved away are taken from it.
	table   *route.Table
	version uint64
	old     *Store
	// fams are the key families workers declared (family.go), installed
	// again on a rewound store.
	fams []famDecl
	// capture makes sumRound copy the round's sum into sum, and summed
	// its round (−1: none since TakeSum); see bsp.go.
	capture bool
	sum     kv.Batch
	summed  int64
	// since is 1 + the round of the last capture of an incremental
	// checkpoint, whose marks the store cleared (0: none, or the store
	// changed otherwise since: a load, a move); open is the capture under
	// way (0: none, 1: a full snapshot, 2: the changed slots). See
	// snapshot.go.
	since int64
	open  int8
}

// New returns a server core with an empty store.
func New(cfg Config) (*Core, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Rule == nil {
		cfg.Rule = update.Sum{}
	}
	ck, err := clock.New(cfg.Workers, cfg.Clock)
	if err != nil {
		return nil, err
	}
	async := update.AsyncNone
	if sc, ok := cfg.Rule.(update.Scaled); ok && cfg.Clock.Mode != clock.BSP {
		async = sc.AsyncStep()
	}
	return &Core{
		cfg:    cfg,
		store:  NewStore(cfg.Table.Index(cfg.Rank), cfg.Width, cfg.Rule),
		clock:  ck,
		sync:   cfg.Clock.Mode == clock.BSP,
		async:  async,
		ids:    make([][]pending, cfg.Workers),
		held:   make([][]held, cfg.Workers),
		pulls:  make([][pullMarks]pullMark, cfg.Workers),
		stats:  Stats{KeyShare: cfg.Table.Share(cfg.Rank)},
		summed: -1,
	}, nil
}

// Rewind returns the core to the state of a new one: an empty store, a
// clock at round 0, no held pushes or pending acknowledgements, no
// pulls noted. The counters are kept. A job rolled back to a checkpoint
// rewinds every server and loads the checkpoint's snapshots into it.
func (c *Core) Rewind() {
	ck, err := clock.New(c.cfg.Workers, c.cfg.Clock)
	if err != nil {
		panic(fmt.Sprintf("server: the clock of a validated config: %v", err)) // checked by New
	}
	c.store = NewStore(c.cfg.Table.Index(c.cfg.Rank), c.cfg.Width, c.cfg.Rule)
	c.clock, c.table, c.version, c.old, c.summed = ck, nil, 0, nil, -1
	c.since, c.open = 0, 0
	for _, d := range c.fams {
		c.install(c.store, d) // installed once on the same table: cannot fail
	}
	for w := range c.cfg.Workers {
		c.ids[w] = c.ids[w][:0]
		c.held[w] = c.held[w][:0]
		c.pulls[w] = [pullMarks]pullMark{}
	}
}

// pending is a push awaiting its acknowledgement.
type pending struct {
	id       uint64
	answered bool
	err      error // found when the round was summed (BSP)
}

// Holds reports whether the core holds the acknowledgement of worker
// w's push id: counted by the clock, not answered yet.
func (c *Core) Holds(w int, id uint64) bool {
	if w < 0 || w >= len(c.ids) {
		return false
	}
	for _, p := range c.ids[w] {
		if p.id == id && !p.answered {
			return true
		}
	}
	return false
}

// Store returns the store.
func (c *Core) Store() *Store { return c.store }

// Stats returns the counters.
func (c *Core) Stats() Stats {
	s := c.stats
	s.Rounds = c.clock.Min()
	s.Keys = c.store.Keys()
	return s
}

// Ack returns the acknowledgement of a push that may be sent before the
// push is applied: in asynchronous training with a uniform width, once the
// request is known to be well formed. The server handles requests in
// order, so the worker's later requests still see the push; sending the
// acknowledgement first lets the worker's next request travel while the
// server applies this one. Handle must then be called with acked set.
func (c *Core) Ack(r Request) (Reply, bool) {
	if !r.Push || r.Evaluator || r.Cmd > proto.DataRange || c.cfg.Clock.Mode != clock.Async || c.cfg.Width == 0 || r.Worker < 0 || r.Worker >= c.cfg.Workers {
		return Reply{}, false
	}
	if r.Range {
		if len(r.KV.Keys) != 2 || r.KV.Keys[1] < r.KV.Keys[0] || uint64(len(r.KV.Vals)) != (r.KV.Keys[1]-r.KV.Keys[0])*uint64(c.cfg.Width) {
			return Reply{}, false
		}
	} else if r.KV.Lens != nil || len(r.KV.Vals) != len(r.KV.Keys)*c.cfg.Width || r.validKV() != nil {
		return Reply{}, false
	}
	if r.Round < c.clock.Done(r.Worker) {
		return Reply{}, false
	}
	return Reply{Worker: r.Worker, ID: r.ID}, true
}

// Handle processes one request and returns the replies it releases: the
// pull's values, or the acknowledgements of this and possibly earlier
// pushes. The replies and their arrays are valid until the next call.
// acked tells that Ack answered the request already.
func (c *Core) Handle(r Request, acked bool) []Reply {
	return c.handle(r, acked, false)
}

// Changes reports whether handling r may change the store, so that the
// replies in flight that read it must have left, or been copied, before
// (Server.unview). Only pushes do (a worker's, and the tables, keys,
// snapshots and families pushed to it), and of a worker's sparse and
// range pushes under BSP only the one that completes its round
// (Clock.Completes): pushBSP holds the others, as copies, until then.
// So a BSP worker's push never waits for an answer leaving to another
// worker, which needs that answer before it pushes the round that
// changes the store; one that reads nothing (its process stopped) holds
// no other request. O(1).
func (c *Core) Changes(r Request) bool {
	if !r.Push || !c.sync || r.Evaluator || r.Cmd > proto.DataRange || r.Worker < 0 || r.Worker >= c.cfg.Workers || r.Round != c.clock.Done(r.Worker) {
		return r.Push
	}
	return c.clock.Completes(r.Worker, r.Round)
}

// Arriving is how HandleArriving follows the values of a push that are
// still being read into the request's KV.Vals, first to last.
type Arriving interface {
	// Arrived returns how many values are there, without waiting.
	Arrived() (int, error)
	// Await waits until more than have values are there, or all of
	// them, and returns how many are.
	Await(have int) (int, error)
}

// ApplyStep is the most values HandleArriving applies between two looks
// at the values' arrival: 64 KiB of float32.
const ApplyStep = 16 << 10

// HandleArriving handles r as Handle does when r is a dense range push
// whose values are still arriving (see Arriving) and can be applied
// as they come: not under BSP, with a uniform width, on keys that are one
// run of the store's slots. It applies the values in order as they
// arrive, so each part is applied while it is still in cache, calls ack
// with the push's acknowledgement as soon as all the values are there
// when Ack would have answered the push (before the last parts are
// applied), and returns the replies once the push is applied. ok is
// false, with nothing done, when r is not such a push: its values must
// then all arrive before Handle. When the values stop arriving the ones
// applied stay applied, the push is not counted and err tells why: its
// link broke, and its worker gets no answer.
func (c *Core) HandleArriving(r Request, vals Arriving, ack func(Reply)) (replies []Reply, ok bool, err error) {
	if !r.Push || !r.Range || r.Evaluator || r.Cmd > proto.DataRange || c.sync || c.cfg.Width == 0 || r.Worker < 0 || r.Worker >= c.cfg.Workers || len(r.KV.Keys) != 2 {
		return nil, false, nil
	}
	begin, end := r.KV.Keys[0], r.KV.Keys[1]
	n := len(r.KV.Vals)
	if end < begin || uint64(n) != (end-begin)*uint64(c.cfg.Width) {
		return nil, false, nil
	}
	j, in := c.store.rangeSlots(begin, end)
	if !in {
		return nil, false, nil
	}
	a, early := c.Ack(r)
	acked := false
	// Marked for an incremental capture before any part is applied: a
	// push cut off midway leaves the slots it reached marked.
	c.store.touchRange(j, j+n/c.cfg.Width)
	o := j * c.cfg.Width
	f := c.step(r)
	applied, got := 0, 0
	for applied < n {
		if applied == got {
			if got, err = vals.Await(applied); err != nil {
				return nil, true, fmt.Errorf("server %d: push %d of worker %d: %w", c.cfg.Rank, r.ID, r.Worker, err)
			}
		} else if got, err = vals.Arrived(); err != nil {
			return nil, true, fmt.Errorf("server %d: push %d of worker %d: %w", c.cfg.Rank, r.ID, r.Worker, err)
		}
		if early && !acked && got == n {
			ack(a)
			acked = true
		}
		e := min(got, applied+ApplyStep)
		c.store.apply(o+applied, r.KV.Vals[applied:e], f)
		applied = e
	}
	return c.handle(r, acked, true), true, nil
}

// handle is Handle; applied tells that HandleArriving applied the values
// of the push already.
func (c *Core) handle(r Request, acked, applied bool) []Reply {
	c.out = c.out[:0]
	if r.Evaluator {
		return c.evaluate(r)
	}
	switch r.Cmd {
	case proto.DataTable:
		return c.retable(r)
	case proto.DataTake:
		return c.take(r)
	case proto.DataPut:
		return c.put(r)
	case proto.DataSave:
		return c.save(r)
	case proto.DataLoad:
		return c.load(r)
	case proto.DataFamily:
		return c.family(r)
	}
	if r.Worker < 0 || r.Worker >= c.cfg.Workers {
		return append(c.out, Reply{Worker: r.Worker, ID: r.ID, Pull: !r.Push, Err: fmt.Errorf("request from worker %d of %d", r.Worker, c.cfg.Workers)})
	}
	fail := func(err error) []Reply {
		c.stats.Errors++
		return append(c.out, Reply{Worker: r.Worker, ID: r.ID, Pull: !r.Push, Err: fmt.Errorf("server %d: %w", c.cfg.Rank, err)})
	}
	if lead := c.clock.Lead(r.Round); lead > c.stats.MaxLead {
		c.stats.MaxLead = lead
	}
	var begin, end uint64
	if r.Range {
		if len(r.KV.Keys) != 2 || r.KV.Keys[1] < r.KV.Keys[0] {
			return fail(fmt.Errorf("range request with keys %v", r.KV.Keys))
		}
		begin, end = r.KV.Keys[0], r.KV.Keys[1]
	} else if !acked {
		// Ack validated an acknowledged push already: one pass over
		// the keys, not two.
		if err := r.validKV(); err != nil {
			return fail(err)
		}
	}
	if c.version > 0 {
		lo, hi := begin, end
		if !r.Range && len(r.KV.Keys) > 0 {
			lo, hi = r.KV.Keys[0], r.KV.Keys[len(r.KV.Keys)-1]+1
		}
		if err := c.misrouted(lo, hi); err != nil {
			return fail(err)
		}
	}
	if !r.Push {
		c.stats.Pulls++
		m := &c.pulls[r.Worker]
		copy(m[1:], m[:len(m)-1])
		m[0] = pullMark{round: r.Round, min: c.clock.Min(), pushes: c.stats.Pushes, ok: true}
		if r.Range {
			c.stats.KeysPulled += end - begin
			v, view, err := c.store.PullRange(begin, end, c.rbuf)
			if err != nil {
				return fail(err)
			}
			if !view {
				c.rbuf = v
			}
			return append(c.out, Reply{Worker: r.Worker, ID: r.ID, Pull: true, Vals: v, View: view})
		}
		c.stats.KeysPulled += uint64(len(r.KV.Keys))
		if r.Dst != nil {
			b := c.store.Pull(kv.Batch{Vals: r.Dst[:0], Lens: c.buf.Lens}, r.KV.Keys)
			c.buf.Lens = b.Lens
			return append(c.out, Reply{Worker: r.Worker, ID: r.ID, Pull: true, Vals: b.Vals, Lens: b.Lens})
		}
		c.buf = c.store.Pull(c.buf, r.KV.Keys)
		return append(c.out, Reply{Worker: r.Worker, ID: r.ID, Pull: true, Vals: c.buf.Vals, Lens: c.buf.Lens})
	}
	f := c.step(r)
	c.stats.Pushes++
	for i := range c.pulls[r.Worker] {
		if m := &c.pulls[r.Worker][i]; m.ok && m.round == r.Round {
			c.stats.Staleness.record(r.Round - m.min)
			m.ok = false
			break
		}
	}
	if c.sync {
		return c.pushBSP(r, begin, end)
	}
	var err error
	if r.Range {
		if n := uint64(len(r.KV.Vals)); c.cfg.Width > 0 && n != (end-begin)*uint64(c.cfg.Width) {
			return fail(fmt.Errorf("range [%d, %d) pushed with %d values of width %d", begin, end, n, c.cfg.Width))
		}
		c.stats.KeysPushed += end - begin
		if !applied {
			err = c.store.pushRange(begin, r.KV.Vals, false, f)
		}
	} else {
		c.stats.KeysPushed += uint64(len(r.KV.Keys))
		err = c.store.push(r.KV, false, f)
	}
	if err != nil {
		// The clock still counts the round, so that others do not wait
		// for a push that will never come; the worker gets the error.
		c.out = append(c.out, Reply{Worker: r.Worker, ID: r.ID, Err: fmt.Errorf("server %d: %w", c.cfg.Rank, err)})
		c.stats.Errors++
	}
	acks, cerr := c.clock.Push(r.Worker, r.Round)
	if cerr != nil {
		if err != nil {
			return c.out
		}
		return fail(cerr)
	}
	c.ids[r.Worker] = append(c.ids[r.Worker], pending{id: r.ID, answered: err != nil || acked})
	return c.release(acks)
}

// step returns the factor by which the rule's step is multiplied for
// push r, applied alone (update.Async): 1 without scaling, 1/W for
// AsyncWorkers, 1/max(1, τ) for AsyncStaleness, τ the pushes handled
// since the server answered the worker's pull of r's round (W when it
// answered none). It is called before the push is counted.
func (c *Core) step(r Request) float32 {
	switch c.async {
	case update.AsyncWorkers:
		return 1 / float32(c.cfg.Workers)
	case update.AsyncStaleness:
		tau := uint64(c.cfg.Workers)
		for _, m := range c.pulls[r.Worker] {
			if m.ok && m.round == r.Round {
				tau = c.stats.Pushes - m.pushes
				break
			}
		}
		return 1 / float32(max(tau, 1))
	}
	return 1
}

// Steps returns the number of pushes whose values the store holds: every
// push the clock counted, but under BSP only those of the rounds that
// every worker completed (the others wait, unapplied, for their round).
func (c *Core) Steps() int64 {
	if c.sync {
		return c.clock.Min() * int64(c.cfg.Workers)
	}
	return int64(c.stats.Pushes)
}

// evaluate answers an evaluator's request: a pull reads the store as it
// is, with the step count (Steps) beside the values; a push is refused.
func (c *Core) evaluate(r Request) []Reply {
	reply := Reply{Worker: r.Worker, Evaluator: true, ID: r.ID, Pull: !r.Push, Steps: c.Steps()}
	fail := func(err error) []Reply {
		c.stats.Errors++
		reply.Err = fmt.Errorf("server %d: %w", c.cfg.Rank, err)
		return append(c.out, reply)
	}
	if r.Push {
		return fail(fmt.Errorf("evaluator %d pushed: evaluators only read the model", r.Worker))
	}
	c.stats.EvaluatorPulls++
	if r.Range {
		if len(r.KV.Keys) != 2 || r.KV.Keys[1] < r.KV.Keys[0] {
			return fail(fmt.Errorf("range request with keys %v", r.KV.Keys))
		}
		begin, end := r.KV.Keys[0], r.KV.Keys[1]
		c.stats.EvaluatorKeys += end - begin
		v, view, err := c.store.PullRange(begin, end, c.rbuf)
		if err != nil {
			return fail(err)
		}
		if !view {
			c.rbuf = v
		}
		reply.Vals, reply.View = v, view
		return append(c.out, reply)
	}
	if err := r.validKV(); err != nil {
		return fail(err)
	}
	c.stats.EvaluatorKeys += uint64(len(r.KV.Keys))
	c.buf = c.store.Pull(c.buf, r.KV.Keys)
	reply.Vals, reply.Lens = c.buf.Vals, c.buf.Lens
	return append(c.out, reply)
}

// release appends the replies of the acknowledged pushes to c.out: an
// acknowledgement, or the error found when the push was summed.
func (c *Core) release(acks []clock.Ack) []Reply {
	for _, a := range acks {
		q := c.ids[a.Worker]
		p := q[0]
		if len(q) == 1 {
			c.ids[a.Worker] = q[:0] // keep the memory: no append reallocates
		} else {
			c.ids[a.Worker] = q[1:]
		}
		switch {
		case p.err != nil:
			c.out = append(c.out, Reply{Worker: a.Worker, ID: p.id, Err: fmt.Errorf("server %d: %w", c.cfg.Rank, p.err)})
			c.stats.Errors++
		case !p.answered:
			c.out = append(c.out, Reply{Worker: a.Worker, ID: p.id})
		}
	}
	return c.out
}
