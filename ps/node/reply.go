package node

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"colo/ps/clock"
	"colo/ps/proto"
	"colo/transport"
)

// ReplyBuffer is the bytes of replies a server member holds for one
// destination before Reply blocks: a socket's send buffer (Linux's
// largest default, tcp_wmem's 4 MiB). A reply larger than it is taken
// alone.
const ReplyBuffer = 4 << 20

// replies sends a server member's replies over the network: one queue per
// destination, in order, each emptied by a goroutine of its own while it
// holds a reply. Replies to different workers are then on the wire at
// once, as writes into per-connection socket buffers are, instead of the
// reply to one worker waiting for the wire time of the reply to another;
// the replies to one destination keep their order. Under BSP an answer
// to a pull starts only once the co-located worker's pushes have left
// (afterPushes). A queue holds at most ReplyBuffer bytes, so memory is
// bounded by the destinations times ReplyBuffer (and one message each).
// The zero value is ready.
type replies struct {
	mu sync.Mutex
	qs map[transport.NodeID]*replyQueue
}

// replyQueue is one destination's queue; its fields are under
// replies.mu.
type replyQueue struct {
	items   []queuedReply
	bytes   int
	running bool
	space   chan struct{} // closed, and made anew, when bytes go
}

type queuedReply struct {
	ctx  context.Context
	msg  *transport.Message
	size int
	sent func()
}

// post queues a copy of msg for node to, blocking while the queue holds
// ReplyBuffer bytes, until ctx ends (its error is returned). sent, when
// not nil, is called once the copy has left or failed. Failures are
// m.n.reply's.
func (r *replies) post(ctx context.Context, m *member, to transport.NodeID, msg *transport.Message, sent func()) error {
	cp := m.n.pool.Clone(msg)
	size := localSize(cp)
	r.mu.Lock()
	if r.qs == nil {
		r.qs = make(map[transport.NodeID]*replyQueue)
	}
	q := r.qs[to]
	if q == nil {
		q = &replyQueue{space: make(chan struct{})}
		r.qs[to] = q
	}
	for q.bytes > 0 && q.bytes+size > ReplyBuffer {
		space := q.space
		r.mu.Unlock()
		select {
		case <-space:
		case <-ctx.Done():
			cp.Release()
			return context.Cause(ctx)
		}
		r.mu.Lock()
	}
	q.items = append(q.items, queuedReply{ctx: ctx, msg: cp, size: size, sent: sent})
	q.bytes += size
	start := !q.running
	q.running = true
	r.mu.Unlock()
	if start {
		go r.drain(m, to, q)
	}
	return nil
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
		r.mu.Unlock()
		if it.msg.Flags&transport.FlagPull != 0 {
			m.n.afterPushes(it.ctx)
		}
		m.n.reply(it.ctx, m, to, it.msg)
		it.msg.Release()
		r.mu.Lock()
		q.items[0] = queuedReply{}
		q.items = q.items[1:]
		q.bytes -= it.size
		close(q.space)
		q.space = make(chan struct{})
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
	err := m.ep.Send(ctx, to, msg)
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
