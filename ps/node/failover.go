package node

import (
	"fmt"
	"slices"
	"time"

	"colo/ps/internal/mailbox"
	"colo/ps/proto"
	"colo/ps/server"
	"colo/transport"
)

// Failover: a job with replicated key ranges (proto.Job.Replicas, package
// ps/replica) goes on when a server fails, without a pause. The
// scheduler tells every node twice (proto.Failover):
//
//  1. without an address: the failed server's backup takes over its
//     copy of the ranges (server.Server, in the order of the updates it
//     received before) and listens as the failed server on a new
//     endpoint of its node, which reports Ready to the scheduler; a
//     server the failed one backed up stops waiting for it;
//  2. with the new endpoint's address: every node dials the failed
//     server's id there, and a worker sends again every request that
//     server had not answered (worker.Worker.Resend).
//
// Meanwhile the sends to the failed server fail without ending the job
// (lost): its requests are sent again in step 2. Step 1 abandons the
// sends to it in progress (mailbox.Outbox.Abandon), so that a write
// blocked on a stopped process ends at once, and the server's replies
// to it, those queued and those posted until step 2 (replies.fail), so
// that none waits on the stopped process or reaches the backup later;
// step 2 runs off the member loop, which keeps sending heartbeats.

// failover handles the scheduler's Failover f on member m. A machine
// has it on both members, and handles each step once.
func (n *Node) failover(m *member, f proto.Failover, msg *transport.Message) {
	id := proto.ServerID(f.Server)
	if f.Addr == "" {
		n.mu.Lock()
		if f.Seq > n.failedSeq[id] {
			n.failed[id], n.failedSeq[id] = n.book[id].Addr, f.Seq
		}
		if n.leave != nil && n.awaitPeer == id {
			// The sends to it that failed are sent again.
			n.leave.Stop()
			n.leave = nil
			n.awaiting.Store(false)
		}
		n.mu.Unlock()
		if m.id == n.assign.Server && n.srv != nil {
			n.cfg.Logf("node: server %d failed (%s); server %d serves its ranges", f.Server, f.Reason, f.Backup)
			m.data.Push(msg) // after the updates received before
		}
		if n.isTaken(m) {
			// A server taken over whose new backup failed stops
			// waiting for it.
			m.data.Push(msg)
		}
		if m.id == n.assign.Worker && n.wrk != nil {
			n.wrk.Suspend(f.Server)
			n.mu.Lock()
			n.failoverTimes = append(n.failoverTimes, FailoverTimes{Server: f.Server, ToldUnixNano: time.Now().UnixNano()})
			n.mu.Unlock()
		}
		// A send blocked on the failed server (a process stopped, whose
		// link takes nothing) returns at once, and the ones queued are
		// dropped: the worker sends its requests again in step 2. So
		// are the server's replies queued to it (updates of the
		// ranges it backed up, acknowledgements), as its process's
		// death would have them fail: they do not wait for ever on a
		// stopped process, holding their memory for the rest of the
		// job. So do the replies posted to it until step 2 points id
		// at the backup (replies.fail; moveTo opens them): its address
		// is still the stopped process's. Under n.mu, so that step 2's
		// moveTo, on the other member, either opens them after this or
		// opened them before (n.opened), and then they are abandoned
		// alone.
		m.out.Abandon(id)
		cause := fmt.Errorf("%w: %s failed (failover %d)", transport.ErrPeerClosed, proto.Name(id), f.Seq)
		n.mu.Lock()
		if n.opened[f.Seq] {
			m.replies.abandon(id, cause)
		} else {
			m.replies.fail(id, f.Seq, cause)
		}
		n.mu.Unlock()
		return
	}
	n.mu.Lock()
	if n.failovers[f.Seq] {
		n.mu.Unlock()
		return
	}
	n.failovers[f.Seq] = true
	p := n.book[id]
	p.ID, p.Addr, p.Key = id, f.Addr, f.Key
	if n.book != nil {
		n.book[id] = p
	}
	n.mu.Unlock()
	// Off the member loop, whose heartbeats go on while the sends to
	// the failed server end.
	n.wg.Go(func() { n.moveTo(f, p) })
}

// flushBound bounds the wait, at a failover, for the sends to the failed
// server to end, as a fraction of the job's timeout: well below it, so
// that the node is never silent for the timeout. The sends were
// abandoned at the first announcement, so they end at once but for a
// transport slow to give up a write.
const flushBound = 4

// moveTo ends the failover f: the failed server's id is served at
// p.Addr, and the worker sends there what it had not answered.
func (n *Node) moveTo(f proto.Failover, p proto.Peer) {
	id := p.ID
	w := n.member(n.assign.Worker)
	if w != nil && n.wrk != nil {
		// Requests posted to the failed server before the worker
		// suspended its sends fail on its old address first: none
		// reaches the backup after the ones sent again.
		n.wrk.Suspend(f.Server)
		w.out.Abandon(id)
		if bound := n.assign.Job.Timeout / flushBound; !w.out.FlushPeer(id, bound) {
			n.cfg.Logf("node: the sends to the failed %s did not end within %v", proto.Name(id), bound)
		}
	}
	n.mu.Lock()
	n.setPeer(p)
	for _, m := range append(slices.Clip(n.members), n.taken...) {
		m.replies.open(id, f.Seq) // the replies go to the backup now
	}
	n.opened[f.Seq] = true
	n.mu.Unlock()
	if sm := n.member(n.assign.Server); sm != nil && n.srv != nil {
		// The server acknowledges again what it holds of the failed
		// server's new copy, at the new address (server.Server).
		sm.data.Push(proto.Control(proto.CmdFailover, f))
	}
	if w != nil && n.wrk != nil {
		n.cfg.Logf("node: server %d is served at %s; requests it did not answer are sent again", f.Server, f.Addr)
		n.wrk.Resend(f.Server)
		now := time.Now().UnixNano()
		n.mu.Lock()
		for i := len(n.failoverTimes) - 1; i >= 0; i-- {
			if t := &n.failoverTimes[i]; t.Server == f.Server && t.ResentUnixNano == 0 {
				t.ResentUnixNano = now
				break
			}
		}
		n.mu.Unlock()
	}
}

// retake logs and counts a capture of an incremental checkpoint that the
// node's worker takes again (worker.Worker.SetRetake): a takeover of the
// server fell into the try that failed with cause, and the worker takes
// the capture again, whole, of the backup that holds the server's ranges
// now (Stats.Retakes).
func (n *Node) retake(server, round int, cause error) {
	n.cfg.Logf("node: worker %d takes its capture of server %d after round %d again, whole, of the server that took its ranges over: %v", n.wrk.Rank(), server, round, cause)
	now := time.Now().UnixNano()
	n.mu.Lock()
	n.retakes = append(n.retakes, Retake{Server: server, Round: round, UnixNano: now})
	n.mu.Unlock()
}

// takeover runs srv, the server of rank the node's server took over, on
// an endpoint of that rank's id on this node's machine (its emulated
// network interface, not the failed machine's): a member with its own
// loop, which reports Ready to the scheduler.
func (n *Node) takeover(rank int, srv *server.Server) {
	id := proto.ServerID(rank)
	ep, err := listenOn(n.cfg.Network, id, n.assign.Server, n.identity)
	if err != nil {
		n.end(fmt.Errorf("node: taking over %s: %w", proto.Name(id), err))
		return
	}
	ep.SetPeer(proto.SchedulerID, n.cfg.Scheduler)
	if n.identity != nil {
		if err := ep.SetPeerKey(proto.SchedulerID, n.assign.SchedulerKey); err != nil {
			ep.Close()
			n.end(fmt.Errorf("node: taking over %s: the scheduler's key: %w", proto.Name(id), err))
			return
		}
	}
	m := &member{n: n, id: id, ep: ep, out: mailbox.NewOutboxContext(ep, n.ctx, n.assign.Job.Timeout), data: mailbox.New[*transport.Message](), srv: srv}
	n.mu.Lock()
	select {
	case <-n.closing:
		n.mu.Unlock()
		m.out.Close()
		ep.Close()
		return
	default:
	}
	for _, p := range n.book {
		m.ep.SetPeer(p.ID, p.Addr)
		if len(p.Key) > 0 {
			m.ep.SetPeerKey(p.ID, p.Key)
		}
	}
	n.taken = append(n.taken, m)
	n.wg.Go(func() { srv.Run(n.ctx, m.data.C(), serverConn{m}) })
	n.wg.Go(m.loop)
	n.mu.Unlock()
	m.out.Post(proto.SchedulerID, proto.Control(proto.CmdReady, proto.Ready{Addr: ep.Addr()}))
}

// isTaken reports whether m is the member of a server the node took
// over.
func (n *Node) isTaken(m *member) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return slices.Contains(n.taken, m)
}

// backedUp tells the scheduler that the node's server holds a new copy
// of server rank's ranges (proto.Backup), sent whole by that server: it
// is one of rank's backups from now on.
//
// A copy made while the node reports to a scheduler that takes the job
// over (rejoin.go) is told again once that scheduler answered: the
// report may have gone to the dead scheduler's link, and the launcher
// learns of new copies from the scheduler alone.
func (n *Node) backedUp(rank int) {
	_, self := proto.Identify(n.assign.Server)
	n.cfg.Logf("node: server %d holds a new copy of server %d's ranges", self, rank)
	n.mu.Lock()
	if n.rejoinStop != nil {
		n.lateCopies = append(n.lateCopies, rank)
	}
	n.mu.Unlock()
	if m := n.member(n.assign.Server); m != nil {
		m.out.Post(proto.SchedulerID, proto.Control(proto.CmdBackedUp, proto.Backup{Server: rank, Backup: self}))
	}
}
