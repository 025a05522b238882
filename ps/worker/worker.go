package worker

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"colo/kv"
	"colo/ps/clock"
	"colo/ps/proto"
	"colo/ps/route"
	"colo/transport"
)

// Conn is how a worker's driver reaches the servers. The node runtime
// provides it.
type Conn interface {
	// Post queues m for the server of rank s and returns at once. The
	// message's arrays stay unchanged until the request completes;
	// failures of the link end the job through the node.
	Post(s int, m *transport.Message)
}

// Lander is implemented by a Conn whose transport can read the values of a
// server's answer straight into the caller's array (Out.Dst), saving the
// copy out of a receive buffer.
type Lander interface {
	// Land registers dst for the values of server s's answer to request
	// id. dst is not touched once Unland or UnlandAll has returned.
	Land(s int, id uint64, dst []float32)
	// Unland withdraws the registration of (s, id), if it is still there.
	Unland(s int, id uint64)
	// UnlandAll withdraws every registration; it may break links whose
	// answers are arriving.
	UnlandAll()
}

// RoomLander is implemented by a Lander that can have the values of an
// answer of per-key lengths written into an array from its start
// (Out.Room): an answer from a server in the same process.
type RoomLander interface {
	LandRoom(s int, id uint64, room []float32)
}

// Local is a server in the worker's own process that can serve a pull
// or a push on the caller's goroutine (Worker.SetLocal): no message, no
// hand-off to the worker's driver or the server's loop.
type Local interface {
	// Rank is the server's rank.
	Rank() int
	// PullLocal serves worker's sparse pull of keys (sorted, all the
	// server's by the worker's table) at round and membership epoch, as
	// the server serves the same request sent as a message: its values
	// in room when they fit (else in an array of their own), its
	// per-key lengths appended to lens[:0], or err, the error the server
	// answered. ok is false, with nothing done, when the server cannot
	// serve it so (its ranges are replicated, it is in another epoch):
	// the pull then goes as a message.
	PullLocal(worker int, id uint64, round int64, epoch uint64, keys []uint64, room []float32, lens []int32) (vals []float32, lensOut []int32, err error, ok bool)
	// PushLocal serves worker's sparse push of keys (sorted, all the
	// server's) with vals (lens values each, or len(vals)/len(keys)
	// when lens is nil) at round and epoch, as the server serves the
	// same request sent as a message, and sends the replies it releases
	// for other workers. answered tells that it answered this push, err
	// with the error; otherwise it answers it later with a message (a
	// BSP round others have not completed). The arrays are the caller's
	// again once it returns. ok is false, with nothing done, as for
	// PullLocal.
	PushLocal(worker int, id uint64, round int64, epoch uint64, keys []uint64, vals []float32, lens []int32) (answered bool, err error, ok bool)
}

// ErrStopped is returned by calls after the worker stopped without a
// more specific cause.
var ErrStopped = errors.New("worker stopped")

// Worker is the application's handle on the parameter server. Its methods
// are safe for concurrent use; operations of one goroutine are sent in
// call order.
type Worker struct {
	core *Core
	// own is held by whoever drives the core: the driver for each of
	// its turns, or a caller whose push or pull starts on its goroutine
	// (direct). inbox counts the operations submitted and not yet taken
	// by the driver: a direct call goes only when none is (an earlier
	// call of the same goroutine would be overtaken).
	own     sync.Mutex
	inbox   atomic.Int64
	local   Local
	ops     chan *Op
	stopped chan struct{}
	reduce  func(context.Context, []float64) ([]float64, error)
	sub     func(ctx context.Context, name string, vals []float64) ([]float64, error)
	rejoin  func(context.Context) (uint64, error)
	retake  func(server, round int, cause error)

	mu         sync.Mutex
	err        error // why the worker stopped
	submitting int   // calls between their check of err and their send
	stats      Stats
	round      int64
	table      *route.Table // the core's, as of the last operation
	// moves counts, per server, the announcements that a backup takes
	// its ranges over (Suspend, counted before any request can reach
	// the backup): a capture that one falls into starts again
	// (SaveSince).
	moves map[int]uint64

	// conn is Run's, set (under own) once it runs (a direct call sends
	// its other servers' parts on it); handled counts the messages it
	// took from its channel and handled (under own). See Offer.
	conn    Conn
	handled uint64
}

// New returns a worker; Run drives it. allReduce, when not nil,
// implements AllReduce (and Barrier, as an all-reduce of no values): it
// returns the element-wise sum of vals over every worker.
func New(cfg Config, allReduce func(ctx context.Context, vals []float64) ([]float64, error)) (*Worker, error) {
	core, err := NewCore(cfg)
	if err != nil {
		return nil, err
	}
	return &Worker{core: core, ops: make(chan *Op, 64), stopped: make(chan struct{}), reduce: allReduce, table: cfg.Table}, nil
}

// Rank returns the worker's rank.
func (w *Worker) Rank() int { return w.core.cfg.Rank }

// Servers returns the number of servers.
func (w *Worker) Servers() int { return w.core.servers }

// Width returns the number of values per key (0: per-key lengths).
func (w *Worker) Width() int { return w.core.cfg.Width }

// Clock returns the consistency model the worker was configured with.
func (w *Worker) Clock() clock.Config { return w.core.cfg.Clock }

// Round returns the number of rounds the worker has started pushing.
func (w *Worker) Round() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.round
}

// Stats returns the worker's counters, with the round trips per server.
func (w *Worker) Stats() Stats {
	w.mu.Lock()
	st := w.stats
	st.Links = slices.Clone(st.Links) // update reuses w.stats.Links
	w.mu.Unlock()
	st.Latency = w.core.Latency()
	return st
}

// SetLocal has the pushes and pulls started on the caller's goroutine
// when nothing of the worker is in flight, their part of local's keys
// (local is the server in the worker's process) served there, the
// others' sent from there (Core.Direct). The node runtime calls it
// before the worker runs.
func (w *Worker) SetLocal(local Local) { w.local = local }

// submit hands op to the driver, or starts it at once (direct).
func (w *Worker) submit(op *Op) *Future {
	op.fut = newFuture()
	if w.local != nil && (op.kind == opPull || op.kind == opPush) && w.direct(op) {
		return op.fut
	}
	if op.kind <= opPullRange && w.start(op) {
		return op.fut
	}
	w.mu.Lock()
	if err := w.err; err != nil {
		w.mu.Unlock()
		op.fut.complete(err)
		return op.fut
	}
	w.submitting++
	w.mu.Unlock()
	w.inbox.Add(1)
	select {
	case w.ops <- op:
	case <-w.stopped:
		w.inbox.Add(-1)
		w.mu.Lock()
		err := w.err
		w.mu.Unlock()
		op.fut.complete(err)
	}
	w.mu.Lock()
	w.submitting--
	w.mu.Unlock()
	return op.fut
}

// direct starts op on the caller's goroutine when the driver runs, no
// operation waits for it and the core allows it (Core.Direct), and
// reports whether it did.
func (w *Worker) direct(op *Op) bool {
	// What it posts are the other servers' parts.
	return w.onCaller(func() ([]Out, bool) { return w.core.Direct(op, w.local) })
}

// start starts op, a push or a pull, on the caller's goroutine as the
// driver would (Core.Submit, the requests posted on Run's conn), when
// the driver runs and no operation waits for it, and reports whether it
// did. The caller then costs no hand-off to the driver's goroutine (the
// wake-up of a thread for it, and on a machine whose cores are all busy
// a wait for one) before its requests are posted; the requests go out
// on the same outbox, in the same order, as the driver's would. It
// waits for own while the driver, or a link's reader (Offer), holds it
// for a message, as direct does.
func (w *Worker) start(op *Op) bool {
	return w.onCaller(func() ([]Out, bool) {
		select {
		case <-w.stopped:
			return nil, false
		default:
			return w.core.Submit(op), true
		}
	})
}

// onCaller runs f on the caller's goroutine holding own, when the driver
// runs and no operation waits for it (the driver's inbox is empty), and
// posts the requests f returns on Run's conn; it reports whether f ran
// and accepted the operation (direct and start).
func (w *Worker) onCaller(f func() ([]Out, bool)) bool {
	if w.inbox.Load() != 0 {
		return false
	}
	w.own.Lock()
	defer w.own.Unlock()
	if w.inbox.Load() != 0 || w.conn == nil {
		return false
	}
	outs, ok := f()
	if !ok {
		return false
	}
	w.post(w.conn, outs)
	w.update()
	return true
}

// Push adds vals, Width values per key, to sorted keys and ends the
// round.
func (w *Worker) Push(keys []uint64, vals []float32) *Future {
	return w.submit(&Op{kind: opPush, keys: keys, vals: vals})
}

// PushLens pushes keys with lens[i] values each and ends the round.
func (w *Worker) PushLens(keys []uint64, vals []float32, lens []int32) *Future {
	return w.submit(&Op{kind: opPush, keys: keys, vals: vals, lens: lens})
}

// Pull fills dst with the Width values of each of the sorted keys.
func (w *Worker) Pull(keys []uint64, dst []float32) *Future {
	return w.submit(&Op{kind: opPull, keys: keys, dst: dst})
}

// PullAhead is Pull for the next round: under asynchronous training an
// application may pull the values of its next round before it pushes
// the current one, and the servers then count the pull as the next
// round's (server.Staleness measures the push that follows it). Under
// BSP and bounded delay it fails: the next round's values must wait for
// the current round's push.
func (w *Worker) PullAhead(keys []uint64, dst []float32) *Future {
	return w.submit(&Op{kind: opPull, keys: keys, dst: dst, ahead: true})
}

// PullRangeAhead is PullRange for the next round, as PullAhead.
func (w *Worker) PullRangeAhead(begin, end uint64, dst []float32) *Future {
	return w.submit(&Op{kind: opPullRange, begin: begin, end: end, dst: dst, ahead: true})
}

// PullLens sets dst to the keys with their values and lengths, reusing
// dst's arrays.
func (w *Worker) PullLens(keys []uint64, dst *kv.Batch) *Future {
	return w.submit(&Op{kind: opPull, keys: keys, dstBatch: dst})
}

// PushRange adds vals to the keys [begin, begin+len(vals)/Width) and ends
// the round.
func (w *Worker) PushRange(begin uint64, vals []float32) *Future {
	n := uint64(0)
	if wd := w.Width(); wd > 0 {
		n = uint64(len(vals) / wd)
	}
	return w.submit(&Op{kind: opPushRange, begin: begin, end: begin + n, vals: vals})
}

// PullRange fills dst with the values of the keys [begin, end).
func (w *Worker) PullRange(begin, end uint64, dst []float32) *Future {
	return w.submit(&Op{kind: opPullRange, begin: begin, end: end, dst: dst})
}

// PullRangeSteps is PullRange for an evaluator (proto.RoleEvaluator): the
// servers answer at once, outside the clock, and *steps is set, by the
// time the future completes, to the smallest of their step counts: the
// pushes whose values each server's store held when it answered
// (server.Core.Steps), −1 when no server answered.
func (w *Worker) PullRangeSteps(begin, end uint64, dst []float32, steps *int64) *Future {
	return w.submit(&Op{kind: opPullRange, begin: begin, end: end, dst: dst, steps: steps})
}

// Barrier waits until every worker reached the same barrier.
func (w *Worker) Barrier(ctx context.Context) error {
	_, err := w.AllReduce(ctx, nil)
	return err
}

// AllReduce waits until every worker reached the same barrier and
// returns the element-wise sum of every worker's vals: a global loss or
// sample count, so that all workers agree on it (and stop at the same
// round). The sum is added in ascending worker rank order, so it is the
// same on every worker and every run, NaN and infinities included. Every
// worker must pass the same number of values, or the job fails. vals is
// not modified.
func (w *Worker) AllReduce(ctx context.Context, vals []float64) ([]float64, error) {
	if w.reduce == nil {
		return nil, errors.New("worker: no barrier in this deployment")
	}
	return w.reduce(ctx, vals)
}

// SetSubgroups sets the function AllReduceIn calls; the node runtime
// sets it before the worker runs.
func (w *Worker) SetSubgroups(f func(ctx context.Context, name string, vals []float64) ([]float64, error)) {
	w.sub = f
}

// AllReduceIn is AllReduce in the workers' subgroup name (barrier group
// "workers/"+name, proto.InGroup): the same members, with barrier
// numbers of its own, so that a goroutine beside the training loop (a
// checkpoint being written) can meet the other workers' without taking
// the loop's barriers. Every worker must call it the same number of
// times; after a pause (proto.ErrPaused) the numbers start again, as the
// loop's do.
func (w *Worker) AllReduceIn(ctx context.Context, name string, vals []float64) ([]float64, error) {
	if w.sub == nil || name == "" {
		return nil, fmt.Errorf("worker: no barrier subgroup %q in this deployment", name)
	}
	return w.sub(ctx, name, vals)
}

// Pause fails every call in flight, and every later call until Resume,
// with cause (which wraps proto.ErrPaused): the job was paused to
// replace a failed node (proto.Pause). The worker's rounds count from 0
// again, and its requests carry the membership epoch from now on, so
// that the servers drop the ones sent before. No answer to a failed
// call lands in its array. It returns once the worker has paused.
func (w *Worker) Pause(epoch uint64, cause error) error {
	return w.submit(&Op{kind: opPause, epoch: epoch, cause: cause}).Wait()
}

// Resume lets calls through again after Pause: the caller has rolled its
// application back to the checkpoint the job resumes from.
func (w *Worker) Resume() error { return w.submit(&Op{kind: opResume}).Wait() }

// Resend sends again every request that server s has not answered: s
// failed, and the backup that took over its ranges listens as s now
// (the node runtime calls it; the job has replicated key ranges,
// Config.Resend).
func (w *Worker) Resend(s int) error {
	return w.submit(&Op{kind: opResend, server: s}).Wait()
}

// Suspend keeps the requests to server s, which failed, from now on
// until Resend: they wait for the backup that takes over its ranges.
func (w *Worker) Suspend(s int) error {
	w.mu.Lock()
	if w.moves == nil {
		w.moves = map[int]uint64{}
	}
	w.moves[s]++
	w.mu.Unlock()
	return w.submit(&Op{kind: opSuspend, server: s}).Wait()
}

// moved returns how many times server s's ranges were announced taken
// over by a backup (Suspend).
func (w *Worker) moved(s int) uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.moves[s]
}

// SetRejoin sets the function Rejoin calls; the node runtime sets it
// before the worker runs.
func (w *Worker) SetRejoin(f func(ctx context.Context) (uint64, error)) { w.rejoin = f }

// SetRetake sets the function SaveSince calls each time it takes a
// capture again because a takeover of its server fell into it: the
// server's rank, the capture's round and the error of the try that
// failed. The node runtime sets it before the worker runs, and logs and
// counts the retakes as it does the failovers.
func (w *Worker) SetRetake(f func(server, round int, cause error)) { w.retake = f }

// Rejoin waits, after a call failed with proto.ErrPaused, until the
// failed node was replaced and the job resumes, and returns the
// membership epoch it resumes in; then the caller rolls back to the
// job's last checkpoint and calls Resume. It fails when the deployment
// replaces no node, or the job ended instead (no replacement came).
func (w *Worker) Rejoin(ctx context.Context) (uint64, error) {
	if w.rejoin == nil {
		return 0, errors.New("worker: this deployment replaces no failed node")
	}
	return w.rejoin(ctx)
}

// Run drives the worker until ctx ends: it takes the application's calls
// and the servers' answers from in (data messages whose Sender is a
// server) and posts requests on conn. When ctx ends, every operation in
// flight and every later call fails with context.Cause(ctx). Run returns
// that cause.
func (w *Worker) Run(ctx context.Context, in <-chan *transport.Message, conn Conn) error {
	lander, _ := conn.(Lander)
	post := func(outs []Out) { w.post(conn, outs) }
	w.own.Lock()
	w.conn = conn
	w.own.Unlock()
	for {
		select {
		case op := <-w.ops:
			w.own.Lock()
			w.inbox.Add(-1)
			if op.kind == opPause && lander != nil {
				// No answer may land in an array whose call failed.
				lander.UnlandAll()
			}
			if op.kind == opResend && lander != nil {
				// The answers come again, on a new link.
				for _, o := range w.core.Submit(op) {
					o.M.Flags |= proto.FlagResent
					lander.Unland(o.Server, o.M.ID)
					if o.Dst != nil {
						lander.Land(o.Server, o.M.ID, o.Dst)
					}
					conn.Post(o.Server, o.M)
				}
				w.update()
				w.own.Unlock()
				continue
			}
			post(w.core.Submit(op))
		case m, ok := <-in:
			if !ok {
				in = nil
				continue
			}
			w.own.Lock()
			w.handled++
			w.receive(conn, m)
		case <-ctx.Done():
			err := context.Cause(ctx)
			if err == nil || errors.Is(err, context.Canceled) {
				err = ErrStopped
			}
			w.own.Lock()
			w.mu.Lock()
			w.err = err
			w.mu.Unlock()
			close(w.stopped)
			if lander != nil {
				// No answer may land in an array whose call failed.
				lander.UnlandAll()
			}
			w.core.Fail(err)
			w.own.Unlock()
			// Fail what was sent; calls still between their check and
			// their send finish soon, as stopped is closed.
			for {
				select {
				case op := <-w.ops:
					w.inbox.Add(-1)
					op.fut.complete(err)
					continue
				default:
				}
				w.mu.Lock()
				n := w.submitting
				w.mu.Unlock()
				if n == 0 && len(w.ops) == 0 {
					w.own.Lock()
					w.update()
					w.own.Unlock()
					return err
				}
				runtime.Gosched()
			}
		}
		w.update()
		w.own.Unlock()
	}
}

// post sends the messages outs on conn, registering the arrays their
// answers land in.
func (w *Worker) post(conn Conn, outs []Out) {
	lander, _ := conn.(Lander)
	roomer, _ := conn.(RoomLander)
	for _, o := range outs {
		if w.core.Down(o.Server) {
			continue // kept for Resend
		}
		if w.core.Moved(o.Server) {
			o.M.Flags |= proto.FlagResent
		}
		if o.Dst != nil && lander != nil {
			lander.Land(o.Server, o.M.ID, o.Dst)
		} else if o.Room != nil && roomer != nil {
			roomer.LandRoom(o.Server, o.M.ID, o.Room)
		}
		conn.Post(o.Server, o.M)
	}
}

// receive hands the message m, a server's answer, to the core and sends
// what follows from it; the caller holds own.
func (w *Worker) receive(conn Conn, m *transport.Message) {
	role, rank := proto.Identify(m.Sender)
	if role != proto.RoleServer {
		m.Release()
		return
	}
	if lander, ok := conn.(Lander); ok {
		// The answer is here: an error answer left its registration
		// unused.
		lander.Unland(rank, m.ID)
	}
	w.post(conn, w.core.Receive(rank, m))
}

// Offer handles m, a server's answer, on the caller's goroutine, as Run
// would, when Run runs and has nothing to do with its channel: every
// message queued on it so far, queued() of them, was handled, and no
// operation holds the core. It reports whether it did; if not, the
// caller queues m for Run. A link's reader that offers each answer before
// it queues it completes the call, and sends what waited for the answer,
// without a hand-off to Run's goroutine and the wake-up of a thread for
// it. The requests that follow are queued on conn (Conn.Post never
// blocks), so the caller never waits on a peer.
func (w *Worker) Offer(m *transport.Message, queued func() uint64) bool {
	if !w.own.TryLock() {
		return false
	}
	defer w.own.Unlock()
	select {
	case <-w.stopped:
		return false
	default:
	}
	if w.conn == nil || queued() != w.handled {
		return false
	}
	w.receive(w.conn, m)
	w.update()
	return true
}

// update publishes the core's counters.
func (w *Worker) update() {
	w.mu.Lock()
	w.core.statsTo(&w.stats)
	w.round = w.core.Round()
	w.table = w.core.cfg.Table
	w.mu.Unlock()
}
