package sched

import (
	"fmt"
	"slices"

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
// way of Recovery, or ends the job.
//
// A takeover leaves the ranges taken over with no copy (the other
// backups drop theirs: they followed the failed server), and the ranges
// the failed process backed up with a copy fewer. Once the takeover is
// ready, the scheduler asks the server of each range with fewer than
// Replicas copies (rebackup) to make a new one on another live server
// process, the first after it in rank order that serves none of its
// ranges and holds no copy of them (proto.Backup), while the job goes on;
// the new backup reports once it holds the copy (proto.CmdBackedUp), and
// only then counts as one of the ranges' backups. So a second failure,
// of the process now serving the ranges taken over, fails over too, when
// it comes after the new copy is in place; before, it goes the way of a
// failure with no backup. Holders and copies are O(servers) each; a
// failure costs O(servers × Replicas).

// rebuild is a new backup being made: the process that is to hold the
// copy, and the one serving the ranges that sends it.
type rebuild struct{ backup, holder int }

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
	backup := -1
	for _, b := range c.copies[p] {
		if m := c.members[proto.ServerID(b)]; m != nil && m.ready && !m.moved && !m.takingOver && m.machine != mb.machine {
			backup = b
			break
		}
	}
	if backup < 0 {
		return false
	}
	// The process that served p's ranges died: its copies with it. The
	// backup's copy of p becomes p's server, whose other copies are
	// dropped (they followed the failed one).
	c.lose(c.holders[p])
	c.holders[p], c.copies[p] = backup, nil
	delete(c.rebuilding, p)
	bm := c.members[proto.ServerID(backup)]
	ne := &proto.NodeError{ID: id, Addr: mb.addr, Err: cause}
	machine := mb.machine
	c.logf("%v: server %d, its backup, serves its ranges", ne, backup)
	mb.ready, mb.takingOver, mb.moved, mb.replacement = false, true, true, true
	mb.machine, mb.host, mb.key, mb.lastSeen = bm.machine, bm.host, bm.key, c.tick
	c.learnKey(id, bm.key) // the backup's node dials as id with its own key
	c.failovers = append(c.failovers, Failover{Cause: ne, Backup: backup, Tick: c.tick})
	f := proto.Failover{Server: p, Backup: backup, Reason: cause.Error(), Seq: c.seq()}
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
			f.Backup, f.Seq = c.failovers[i].Backup, c.failedBefore+i+1
			break
		}
	}
	c.logf("%s is served by server %d at %s", proto.Name(id), f.Backup, mb.addr)
	for _, q := range c.Peers() {
		if m := c.members[q.ID]; m.ready {
			c.send(q.ID, q.Addr, proto.CmdFailover, f)
		}
	}
	c.rebackup()
}

// lose drops the copies held by server process q, which died, and the
// new copies it was making or receiving.
func (c *Core) lose(q int) {
	for p := range c.copies {
		c.copies[p] = slices.DeleteFunc(c.copies[p], func(b int) bool { return b == q })
	}
	for p, r := range c.rebuilding {
		if r.backup == q || r.holder == q {
			delete(c.rebuilding, p)
		}
	}
}

// recopy follows the replacement of server process q after a pause
// (a rollback): the replacement holds the copies of a start
// (replica.Chain) of the ranges still served by their own processes,
// and its ranges' copies are those of a start on the processes that
// still run their own rank (or will, once replaced): a server of its
// Chain whose process failed over before holds none, and the ranges
// get a new copy once the job resumes (rebackup), as after a failover.
// The servers that replicated to q's process (a new copy made after a
// failover, or being made) go on doing so to the replacement (a
// primary drops a backup only at its failover), which keeps copies of
// their ranges too, from an empty store as theirs after the rollback:
// those counted before count again, those being made are made once
// the replacement reports its copy's first update. The replacement is
// told all of it (proto.Assign.Moved, Held).
func (c *Core) recopy(q int) {
	if c.copies == nil {
		return
	}
	var counted, making []int
	for p := range c.copies {
		switch r, ok := c.rebuilding[p]; {
		case p == q || c.holders[p] == q:
		case slices.Contains(c.copies[p], q):
			counted = append(counted, p)
		case ok && r.backup == q:
			making = append(making, p)
		}
	}
	c.lose(q)
	own := func(b int) bool { return c.holders[b] == b }
	chain := slices.DeleteFunc(replica.Chain(q, c.cfg.NumServers, c.job.Replicas, nil), func(b int) bool { return !own(b) })
	if n := len(chain); n < c.job.Replicas {
		c.logf("server %d's ranges will have %d of %d copies once it is replaced: its chain's other servers failed over before", q, n, c.job.Replicas)
	}
	c.holders[q], c.copies[q] = q, chain
	c.held[q] = nil
	for p := range c.copies {
		chained := p != q && own(p) && slices.Contains(replica.Chain(p, c.cfg.NumServers, c.job.Replicas, nil), q)
		if !chained && (slices.Contains(counted, p) || slices.Contains(making, p)) {
			c.held[q] = append(c.held[q], p)
		}
		if (chained || slices.Contains(counted, p)) && !slices.Contains(c.copies[p], q) {
			c.copies[p] = replica.InRing(p, c.cfg.NumServers, append(c.copies[p], q))
		}
		if slices.Contains(counted, p) {
			c.told[[2]int{p, q}] = true // the driver counts it again too (Holders.Replaced): its report is not news
		}
	}
	for _, p := range making {
		if !slices.Contains(c.copies[p], q) {
			c.rebuilding[p] = rebuild{backup: q, holder: c.holders[p]}
		}
	}
}

// moved returns the server ranks served by another server's process
// (failed over), in rank order.
func (c *Core) moved() []int {
	var out []int
	for p, h := range c.holders {
		if h != p {
			out = append(out, p)
		}
	}
	return out
}

// seq returns the number of failovers of the job, those before a
// takeover included: the last proto.Failover.Seq.
func (c *Core) seq() int { return c.failedBefore + len(c.failovers) }

// alive reports whether server process q runs and serves its own rank.
func (c *Core) alive(q int) bool {
	m := c.members[proto.ServerID(q)]
	return m != nil && m.ready && !m.moved && !m.takingOver
}

// rebackup asks the server of every range with fewer than Replicas
// copies, and no new one being made, to make one on the first live
// server process after it in rank order that neither serves nor copies
// it, on another machine.
func (c *Core) rebackup() {
	if c.copies == nil || c.phase != running {
		return
	}
	n := c.cfg.NumServers
	for p, h := range c.holders {
		pm := c.members[proto.ServerID(p)]
		if _, ok := c.rebuilding[p]; ok || len(c.copies[p]) >= c.job.Replicas || pm == nil || !pm.ready || pm.takingOver || !c.alive(h) {
			continue
		}
		for _, q := range replica.Chain(p, n, n-1, nil) {
			if q == h || slices.Contains(c.copies[p], q) || !c.alive(q) || c.members[proto.ServerID(q)].machine == pm.machine {
				continue
			}
			c.rebuilding[p] = rebuild{backup: q, holder: h}
			c.logf("server %d's ranges have %d of %d copies: server %d makes a new one on server %d", p, len(c.copies[p]), c.job.Replicas, h, q)
			c.send(proto.ServerID(p), "", proto.CmdBackup, proto.Backup{Server: p, Backup: q, Seq: c.seq()})
			break
		}
	}
}

// backup records server from's report that it holds a new copy of
// b.Server's ranges (proto.CmdBackedUp): it is one of their backups
// from now on, when it is the copy asked for and the ranges are still
// served by the process that sent it.
//
// A scheduler that took the job over may have counted the copy from the
// reports already: a node tells a copy made while it reported again
// once answered, and the copy is then only told to the driver
// (BackedUp), once, as the dead scheduler did not.
func (c *Core) backup(from transport.NodeID, b proto.Backup) {
	r, ok := c.rebuilding[b.Server]
	if c.copies != nil && !ok && b.Server >= 0 && b.Server < len(c.copies) && from == proto.ServerID(b.Backup) && slices.Contains(c.copies[b.Server], b.Backup) {
		if k := [2]int{b.Server, b.Backup}; c.cfg.Takeover && !c.told[k] {
			c.told[k] = true
			c.backedUp = append(c.backedUp, b)
			c.logf("server %d holds a copy of server %d's ranges, made while no scheduler ran (%d of %d copies)", b.Backup, b.Server, len(c.copies[b.Server]), c.job.Replicas)
		}
		return
	}
	if c.copies == nil || !ok || from != proto.ServerID(b.Backup) || r.backup != b.Backup || c.holders[b.Server] != r.holder || !c.alive(b.Backup) {
		c.logf("%s reports a copy of server %d's ranges that was not asked for, or whose server failed since: ignored", proto.Name(from), b.Server)
		return
	}
	delete(c.rebuilding, b.Server)
	c.copies[b.Server] = replica.InRing(b.Server, c.cfg.NumServers, append(c.copies[b.Server], b.Backup))
	c.backedUp = append(c.backedUp, b)
	c.told[[2]int{b.Server, b.Backup}] = true
	c.logf("server %d holds a new copy of server %d's ranges (%d of %d copies)", b.Backup, b.Server, len(c.copies[b.Server]), c.job.Replicas)
	c.rebackup()
}

// BackedUp returns the new copies in place since the last BackedUp.
func (c *Core) BackedUp() []proto.Backup {
	out := c.backedUp
	c.backedUp = nil
	return out
}

// Copies returns the server processes (by their own rank) holding a
// live copy of server p's ranges, nil without Replicas.
func (c *Core) Copies(p int) []int {
	if c.copies == nil || p < 0 || p >= len(c.copies) {
		return nil
	}
	return slices.Clone(c.copies[p])
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
