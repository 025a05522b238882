package sched

import (
	"fmt"

	"colo/ps/proto"
	"colo/ps/replica"
	"colo/transport"
)

// # Failover
//
// With Config.Replicas, each server's key ranges are kept on the
// servers of its replica.Chain, which apply its updates as it does. A
// server that fails while the job runs, in a process that runs no
// worker, is not replaced: its first live backup that still holds its
// copy takes its ranges over, and the job goes on in the same epoch,
// with no pause and no rollback. The scheduler keeps the failed
// server's id in the membership, served by the backup's node, and tells
// every node with proto.Failover twice: at once (the backup takes its
// copy over and listens as the failed server; the servers the failed
// one backed up stop waiting for it), and once the backup's new
// endpoint is ready, with its address (the workers send it again what
// the failed server had not answered). A failure that no backup can
// take over (no live one, or a worker died with the server) goes the
// way of Recovery, or ends the job. A server taken over has no backup
// left among the servers that still hold copies: a second failure of
// its ranges ends the job (no new backup is made while the job runs).

// failover hands the ranges of failed server id to a live backup and
// reports whether it did.
func (c *Core) failover(id transport.NodeID, cause error) bool {
	role, p := proto.Identify(id)
	mb := c.members[id]
	if c.job.Replicas == 0 || role != proto.RoleServer || c.phase != running || mb == nil || mb.takingOver {
		return false
	}
	for wid, m := range c.members {
		if r, _ := proto.Identify(wid); r != proto.RoleServer && m.machine == mb.machine && mb.machine >= 0 {
			return false // a worker died with it: a replacement
		}
	}
	if mb.moved {
		return false // its copies went with its first process
	}
	backup := -1
	for _, b := range replica.Chain(p, c.cfg.NumServers, c.job.Replicas, nil) {
		if m := c.members[proto.ServerID(b)]; m != nil && m.ready && !m.moved && !m.takingOver && m.machine != mb.machine {
			backup = b
			break
		}
	}
	if backup < 0 {
		return false
	}
	bm := c.members[proto.ServerID(backup)]
	ne := &proto.NodeError{ID: id, Addr: mb.addr, Err: cause}
	machine := mb.machine
	c.logf("%v: server %d, its backup, serves its ranges", ne, backup)
	mb.ready, mb.takingOver, mb.moved, mb.replacement = false, true, true, true
	mb.machine, mb.host, mb.key, mb.lastSeen = bm.machine, bm.host, bm.key, c.tick
	c.learnKey(id, bm.key) // the backup's node dials as id with its own key
	c.failovers = append(c.failovers, Failover{Cause: ne, Backup: backup, Tick: c.tick})
	f := proto.Failover{Server: p, Backup: backup, Reason: cause.Error(), Seq: len(c.failovers)}
	for _, q := range c.Peers() {
		if m := c.members[q.ID]; m.ready {
			c.send(q.ID, "", proto.CmdFailover, f)
		}
	}
	// The servers this process had taken over failed with it.
	for oid, m := range c.members {
		if m.moved && m.machine == machine && c.phase == running {
			c.fail(oid, fmt.Errorf("%w, on the process of %s", cause, proto.Name(id)))
		}
	}
	return true
}

// tookOver ends the failover of server id, whose backup's endpoint
// mb is ready: every node gets its address.
func (c *Core) tookOver(id transport.NodeID, mb *member) {
	mb.takingOver = false
	_, p := proto.Identify(id)
	f := proto.Failover{Server: p, Addr: mb.addr, Key: mb.key}
	for i := len(c.failovers) - 1; i >= 0; i-- {
		if c.failovers[i].Cause.ID == id {
			f.Backup, f.Seq = c.failovers[i].Backup, i+1
			break
		}
	}
	c.logf("%s is served by server %d at %s", proto.Name(id), f.Backup, mb.addr)
	for _, q := range c.Peers() {
		if m := c.members[q.ID]; m.ready {
			c.send(q.ID, q.Addr, proto.CmdFailover, f)
		}
	}
}

// Failover is the takeover of a failed server's ranges by its backup.
type Failover struct {
	// Cause is the failure: the server, and why.
	Cause *proto.NodeError
	// Backup is the rank of the server that took the ranges over.
	Backup int
	// Tick is the scheduler's tick of the failure.
	Tick int64
}

// Failovers returns the failovers of the job so far.
func (c *Core) Failovers() []Failover { return append([]Failover(nil), c.failovers...) }

// String describes f.
func (f Failover) String() string {
	return fmt.Sprintf("%v: server %d took its ranges over", f.Cause, f.Backup)
}
