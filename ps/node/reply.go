package node

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"

	"colo/ps/clock"
	"colo/ps/proto"
	"colo/transport"
)

// replies sends a server member's replies over the network: one queue per
// destination, in order, each emptied by a goroutine of its own while it
// holds a reply. Replies to different workers are then on the wire at
// once, as writes into per-connection socket buffers are, instead of the
// reply to one worker waiting for the wire time of the reply to another;
// the replies to one destination keep their order. Under BSP an answer
// to a pull starts only once the co-located worker's pushes have left
// (afterPushes).
//
// A reply is queued at once, however many bytes wait for its
// destination: the poster (the server's loop, a link's reader serving
// a request, a view's goroutine) never waits for the replies to one
// worker, so a worker that reads slowly or not at all (its process
// stopped, its link's reader stuck, a link that takes nothing) holds
// its own answers, never those of the others. (A queue bounded at a
// socket's 4 MiB, whose poster waited for room, held the server's loop
// behind such a worker, and every other worker with it, until the
// scheduler declared it failed; for ever when it never did.) A queue
// holds the answers to requests its destination sent and has not had
// answered: a pull's answer has room in the worker's array it lands in,
// so a queue's memory is bounded by what its worker asks for, as a
// worker's requests in flight are by its caller's: under BSP and bounded
// delay a round's (the worker sends nothing of the next round before
// every server acknowledged its push), under asynchronous training as
// many as the caller started and has not waited for (package train's
// loop has two rounds' pulls and pushes in flight at most, one per slot;
// an acknowledgement queued costs about 250 bytes of heap). Two pulls in
// flight into one array have an answer each queued. A destination that
// takes nothing is the failure detector's: the scheduler declares it
// failed after the job's timeout without its heartbeats and its replies
// are abandoned (a pause) or the job ends; a process that exits closes
// its links, and the sends to it fail at once (Node.lost).
//
// A reply is queued as a copy (the server reuses its arrays), as itself
// (its arrays are held by nothing else: handTake), or lent (its arrays
// are a view of the server's store: handLend): the poster of a lent
// reply waits until it has left, and the queue copies it only when the
// server is about to change the store before then (detach). An answer
// to a dense pull on an idle link thus goes from the store to the wire
// without a copy, and the store is still never written under a reply
// that reads it. Under BSP views to workers are lent whole
// (serverConn.reply): there the store changes only with the push that
// completes the next round, which needs the answer's worker to have it,
// and only that push waits for the views leaving (server.Core.Changes),
// so that a worker that reads nothing holds no other request (an
// evaluator's views, in no round, are not lent). Without rounds a push
// waiting for the wire time of the views leaving would wait 3.3 s for a
// 4 MB answer at 10 Mbit/s, 13.4 s for four at once: there a view is
// lent only to a link that writes it through a transport.Lent
// (handReclaim), and detach takes a leaving one back after at most one
// writev, copying what the socket has not taken; any other link gets a
// copy.
//
// A send has no deadline (a slow link takes as long as it needs), but
// the replies to a destination the scheduler declared failed, or that a
// replacement took the place of, are abandoned (abandon): the one
// leaving fails at once, however stuck its write (a process stopped
// with its socket open takes nothing), and so do those queued. A server
// announced as failed by a failover stays so (fail) until the
// failover's second step points its id at the backup (open): a reply
// posted to it in between fails at once too, without a send to the
// failed process. A push waiting for a view to leave (detach) thus
// never waits for a peer that is gone. The zero value is ready.
type replies struct {
	mu sync.Mutex
	qs map[transport.NodeID]*replyQueue
	// lent counts the queued replies that are lent and not leaving.
	lent int
	// detached counts the detaches whose server still waits for its
	// views' goroutines: a view queued meanwhile (its goroutine was late)
	// is queued as a copy, as detach would have made it.
	detached int
	// reclaimable counts the lent replies leaving in parts that detach
	// can take back (queuedReply.lend).
	reclaimable int
}

// replyQueue is one destination's queue; its fields are under
// replies.mu.
type replyQueue struct {
	items   []*queuedReply
	running bool
	// bytes is the frame size of items, maxBytes the most it held.
	bytes, maxBytes int
	// gone ends when the destination's replies queued so far are
	// abandoned; it is made anew for the later ones, but while failed
	// (fail): failed is the failover that failed the destination, whose
	// later replies then fail at once too until open.
	gone   context.Context
	cancel context.CancelCauseFunc
	failed int
}

// stats appends to dst the queues of member from, by destination.
func (r *replies) stats(dst []ReplyQueueStats, from transport.NodeID) []ReplyQueueStats {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, to := range slices.Sorted(maps.Keys(r.qs)) {
		q := r.qs[to]
		dst = append(dst, ReplyQueueStats{From: from, To: to, Replies: len(q.items), Bytes: uint64(q.bytes), MaxBytes: uint64(q.maxBytes)})
	}
	return dst
}

// queue returns the queue of destination to, making it. r.mu is held.
func (r *replies) queue(to transport.NodeID) *replyQueue {
	if r.qs == nil {
		r.qs = make(map[transport.NodeID]*replyQueue)
	}
	q := r.qs[to]
	if q == nil {
		q = &replyQueue{}
		q.gone, q.cancel = context.WithCancelCause(context.Background())
		r.qs[to] = q
	}
	return q
}

// abandon fails the replies to node to queued so far, the one leaving
// included (its send returns at once, as at the end of the job: its
// link is closed when the frame was begun), with cause. Later replies
// to to are sent, unless to is failed (fail).
func (r *replies) abandon(to transport.NodeID, cause error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	q := r.qs[to]
	if q == nil {
		return
	}
	q.cancel(cause)
	if q.failed == 0 {
		q.gone, q.cancel = context.WithCancelCause(context.Background())
	}
}

// fail is abandon for a server that failover seq (proto.Failover's
// step 1) announced as failed, and it holds: a reply posted to to later
// fails at once as well, with cause and without a send, until open
// with seq or a later failover (step 2, which points to at the backup's
// endpoint). Before step 2 to's address is still the failed process's,
// whose link may take nothing (a process stopped): a reply sent there
// would wait for ever, and every reply to to behind it, the backup's
// too.
func (r *replies) fail(to transport.NodeID, seq int, cause error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	q := r.queue(to)
	q.cancel(cause)
	q.failed = max(q.failed, seq)
}

// open ends fail for failover seq: the replies posted to to from now on
// are sent. A later failover's fail holds.
func (r *replies) open(to transport.NodeID, seq int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	q := r.qs[to]
	if q == nil || q.failed == 0 || q.failed > seq {
		return
	}
	q.failed = 0
	q.gone, q.cancel = context.WithCancelCause(context.Background())
}

// sendContext returns the context of the send of it: it.ctx's, ended
// too when it is abandoned; stop releases it.
func sendContext(it *queuedReply) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancelCause(it.ctx)
	unhook := context.AfterFunc(it.gone, func() { cancel(context.Cause(it.gone)) })
	return ctx, func() {
		unhook()
		cancel(nil)
	}
}

// queuedReply is one reply in a queue; its fields are under replies.mu.
type queuedReply struct {
	ctx  context.Context
	gone context.Context // its queue's when it was queued (abandon)
	msg  *transport.Message
	size int
	sent func()
	// lent marks msg's arrays as its poster's, which waits on done:
	// closed once they are no longer msg's (it left or failed, or
	// detach replaced msg with a copy). leaving marks msg as being
	// sent: it is not copied from then on.
	lent, leaving bool
	done          chan struct{}
	// lend, when not nil, lends msg's values to a link that writes them
	// in parts (handReclaim): detach takes them back from a reply that
	// is leaving, instead of waiting for it to have left.
	lend *transport.Lent
	free sync.Once // closes done
}

// release frees the poster of a lent reply, once.
func (it *queuedReply) release() { it.free.Do(func() { close(it.done) }) }

// hand is how a reply's arrays go into a queue.
type hand int

const (
	handCopy hand = iota // a copy is queued; the caller reuses the arrays
	handTake             // the message is queued; nothing else holds its arrays
	handLend             // the message is queued; post returns once its arrays are free
	// handReclaim is handLend over a link that writes the values in
	// parts (transport.LentSender): detach copies the part of a leaving
	// reply not yet written, after at most one part's write, instead of
	// waiting for the reply to have left.
	handReclaim
)

// post queues msg for node to as h says and returns at once: it never
// waits for the replies queued before it (see replies), only, for a lent
// msg, for its own (below). A ctx that has ended queues nothing and
// returns its cause. A lent msg's arrays are the caller's again when post
// returns: it waits until msg has left or failed, or was copied (detach,
// or ctx ending). sent, when not nil, is called once the reply has left
// or failed. Failures are m.n.reply's.
func (r *replies) post(ctx context.Context, m *member, to transport.NodeID, msg *transport.Message, sent func(), h hand) error {
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	it := &queuedReply{ctx: ctx, msg: msg, sent: sent}
	switch h {
	case handCopy:
		it.msg = m.n.pool.Clone(msg)
	case handLend:
		it.lent, it.done = true, make(chan struct{})
	case handReclaim:
		it.lent, it.done = true, make(chan struct{})
		it.lend = transport.NewLent(msg.KV.Vals, &m.n.pool)
	}
	it.size = localSize(it.msg)
	r.mu.Lock()
	q := r.queue(to)
	if it.lent && r.detached > 0 {
		// A detach waits for the views: this one, late, goes as a copy.
		it.msg, it.lent, it.lend = m.n.pool.Clone(it.msg), false, nil
	}
	lent := it.lent
	it.gone = q.gone
	q.items = append(q.items, it)
	q.bytes += it.size
	q.maxBytes = max(q.maxBytes, q.bytes)
	if lent {
		r.lent++
	}
	start := !q.running
	q.running = true
	r.mu.Unlock()
	if start {
		go r.drain(m, to, q)
	}
	if !lent {
		return nil
	}
	select {
	case <-it.done:
	case <-ctx.Done():
		// The job ended: the reply goes on as a copy (its send fails
		// at once), or its send ends with ctx.
		r.mu.Lock()
		r.copyLent(m, it)
		r.mu.Unlock()
		<-it.done
	}
	return nil
}

// detach replaces every lent reply that is not leaving with a copy, so
// that its poster returns and the arrays it lent may change; posters
// whose replies are leaving return once those have left or failed. The
// server calls it before it waits for its views' goroutines and changes
// the store they read, and attach once that wait is over: views queued
// in between, by goroutines that had not queued them yet, are queued as
// copies, so the server never waits for one's turn or wire time.
func (r *replies) detach(m *member) (attach func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.detached++
	var once sync.Once
	attach = func() {
		once.Do(func() {
			r.mu.Lock()
			r.detached--
			r.mu.Unlock()
		})
	}
	if r.lent == 0 && r.reclaimable == 0 {
		return attach
	}
	var leaving []*queuedReply
	for _, q := range r.qs {
		for _, it := range q.items {
			if it.lent && it.leaving && it.lend != nil {
				leaving = append(leaving, it)
			}
			r.copyLent(m, it)
		}
	}
	if len(leaving) > 0 {
		// Outside the lock: each waits for at most the part of its
		// reply being written.
		r.mu.Unlock()
		for _, it := range leaving {
			it.lend.Reclaim()
			it.release()
		}
		r.mu.Lock()
	}
	return attach
}

// copyLent replaces it's msg with a copy when it is lent and not
// leaving, and frees its poster. r.mu is held.
func (r *replies) copyLent(m *member, it *queuedReply) {
	if !it.lent || it.leaving {
		return
	}
	it.msg, it.lent, it.lend = m.n.pool.Clone(it.msg), false, nil
	r.lent--
	it.release()
}

// drain sends q's replies in order until it is empty.
func (r *replies) drain(m *member, to transport.NodeID, q *replyQueue) {
	for {
		r.mu.Lock()
		if len(q.items) == 0 {
			q.running = false
			r.mu.Unlock()
			return
		}
		it := q.items[0]
		pull := it.msg.Flags&transport.FlagPull != 0
		r.mu.Unlock()
		ctx, stop := sendContext(it)
		if pull {
			m.n.afterPushes(ctx)
		}
		r.mu.Lock()
		it.leaving = true
		msg, lent, lend := it.msg, it.lent, it.lend
		if lent {
			r.lent--
		}
		if lend != nil {
			r.reclaimable++
		}
		r.mu.Unlock()
		if it.gone.Err() == nil {
			// Abandoned before it left, or posted to a failed
			// destination (fail): it fails without a send.
			m.n.replyLent(ctx, m, to, msg, lend)
		}
		stop()
		if lend != nil {
			r.mu.Lock()
			r.reclaimable--
			r.mu.Unlock()
			lend.Release()
		}
		if lent {
			it.release()
		} else {
			msg.Release()
		}
		r.mu.Lock()
		q.items[0] = nil
		q.items = q.items[1:]
		q.bytes -= it.size
		r.mu.Unlock()
		if it.sent != nil {
			it.sent()
		}
	}
}

// reply sends msg to node to from member m. A reply over the frame limit
// is replaced by an error answer naming the server; any other failure
// ends the job (Node.lost), so the worker never waits for an answer that
// was lost.
func (n *Node) reply(ctx context.Context, m *member, to transport.NodeID, msg *transport.Message) error {
	return n.replyLent(ctx, m, to, msg, nil)
}

// replyLent is reply for a message whose values lend lends, when not nil
// (transport.LentSender).
func (n *Node) replyLent(ctx context.Context, m *member, to transport.NodeID, msg *transport.Message, lend *transport.Lent) error {
	var err error
	if ls, ok := m.ep.(transport.LentSender); ok && lend != nil {
		err = ls.SendLent(ctx, to, msg, lend)
	} else {
		err = m.ep.Send(ctx, to, msg)
	}
	if err != nil && ctx.Err() == nil && errors.Is(err, transport.ErrFrameTooLarge) {
		// The worker's request was well formed; the answer does not fit.
		err = m.ep.Send(ctx, to, &transport.Message{
			Header: transport.Header{Type: transport.TypeData, Flags: msg.Flags, Cmd: proto.DataError, ID: msg.ID},
			Body:   []byte(fmt.Sprintf("answer not sent: %v", err)),
		})
	}
	if err != nil && ctx.Err() == nil {
		n.lost(m, to, err)
	}
	return err
}

// afterPushes returns once the co-located worker's requests posted so
// far have been sent (or ctx ended): a machine's answers to pulls start
// on its interface only while its own worker sends no push, and an
// answer already on its way goes on. Under BSP the pushes it yields to
// are of the round before the answers' (the answers exist because the
// server applied that round, the worker's pushes of it to other servers
// may still be under way), so the round that every server waits for
// leaves first, and the answers to the pulls of the next one then share
// the interface with nothing of this machine's but each other.
func (n *Node) afterPushes(ctx context.Context) {
	w := n.member(n.assign.Worker)
	if w == nil || n.assign.Job.Mode != clock.BSP.String() {
		return
	}
	select {
	case <-w.out.Idle():
	case <-ctx.Done():
	}
}
