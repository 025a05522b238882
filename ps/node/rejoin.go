package node

import (
	"cmp"
	"context"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"colo/ps/proto"
)

// Rejoin: in a job whose scheduler has a standby (proto.Job.Standby), a
// node that loses the scheduler after the job started does not end the
// job after SchedulerGrace heartbeats: it waits up to the job's timeout
// for a scheduler started at the same address to take the job over
// (sched.Config.Takeover), and reports to it. From a provisional
// endpoint, which proves the cluster token as a registration does, it
// sends every heartbeat a proto.Rejoin: its ids, addresses, machine,
// key and epoch, each member's barrier arrivals not released and
// whether its worker is done, and the last release of each barrier
// group. It stops once a scheduler answers (proto.Rejoined), not at
// the first message from the scheduler, which may be the dead one's
// last, read after its link's failure. The servers
// and workers never stop meanwhile: a worker trains on until its next
// barrier, which the new scheduler releases once every node has
// reported (sched.Rebuild). Heartbeats go on being sent to the
// scheduler's address, so that the new scheduler's links to the
// members come up as soon as it listens.

// TakeoverTimes is what a node saw of a takeover of its scheduler: when
// it lost the scheduler and started reporting (LostUnixNano), and when
// the scheduler that took the job over answered (HeardUnixNano; 0 if
// none did).
type TakeoverTimes struct {
	LostUnixNano  int64 `json:"lost_unix_nano"`
	HeardUnixNano int64 `json:"heard_unix_nano"`
}

// startRejoin starts reporting to a scheduler that takes the job over,
// unless the node reports already, the job has no standby scheduler or
// has not started, or the node is ending.
func (n *Node) startRejoin() {
	if !n.assign.Job.Standby {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.rejoinStop != nil || n.book == nil || n.ended {
		return
	}
	select {
	case <-n.closing:
		return
	default:
	}
	stop := make(chan struct{})
	n.rejoinStop = stop
	n.takeovers = append(n.takeovers, TakeoverTimes{LostUnixNano: time.Now().UnixNano()})
	n.cfg.Logf("node: lost the scheduler at %s: reporting to the scheduler that takes the job over", n.cfg.Scheduler)
	n.wg.Go(func() { n.report(stop) })
}

// rejoined handles a scheduler's answer to the node's report: the
// reports stop, and a takeover is recorded as heard. The node then
// sends the scheduler again its barrier arrivals not released and its
// worker's Done: one sent after the report that was answered was built
// may have gone to the dead scheduler's link, and a scheduler takes an
// arrival or a Done again without harm (Core.barrier).
func (n *Node) rejoined(r proto.Rejoined) {
	n.mu.Lock()
	if n.rejoinStop == nil {
		n.mu.Unlock()
		return // the other member of a machine had it
	}
	close(n.rejoinStop)
	n.rejoinStop = nil
	k := len(n.takeovers) - 1
	if !r.TakenOver {
		// The scheduler ran the job all along: a link to it had failed.
		n.takeovers = n.takeovers[:k]
		n.cfg.Logf("node: the scheduler at %s runs the job: its link had failed", n.cfg.Scheduler)
	} else {
		n.takeovers[k].HeardUnixNano = time.Now().UnixNano()
		n.cfg.Logf("node: the scheduler at %s took the job over (epoch %d)", n.cfg.Scheduler, r.Epoch)
	}
	var again []arrival
	for key, rel := range n.barriers {
		if rel.epoch == n.epoch {
			again = append(again, n.arrivals(key, rel.sent, rel.epoch)...)
		}
	}
	done := n.finished
	late := n.lateCopies
	n.lateCopies = nil
	n.mu.Unlock()
	for _, a := range again {
		a.m.out.Post(proto.SchedulerID, proto.Control(proto.CmdBarrier, a.b))
	}
	if w := n.member(n.assign.Worker); w != nil && done != nil {
		w.out.Post(proto.SchedulerID, proto.Control(proto.CmdDone, *done))
	}
	if s := n.member(n.assign.Server); s != nil {
		_, self := proto.Identify(n.assign.Server)
		for _, p := range late {
			s.out.Post(proto.SchedulerID, proto.Control(proto.CmdBackedUp, proto.Backup{Server: p, Backup: self}))
		}
	}
}

// dropUnheard forgets a loss of the scheduler that no scheduler
// answered when the job ends well: the scheduler's link closed at the
// end of the job before its Shutdown was read. n.mu is held.
func (n *Node) dropUnheard() {
	if k := len(n.takeovers) - 1; k >= 0 && n.takeovers[k].HeardUnixNano == 0 {
		n.takeovers = n.takeovers[:k]
	}
}

// report sends the node's report every heartbeat until stop is closed
// or the node ends.
func (n *Node) report(stop <-chan struct{}) {
	var ep Endpoint
	var err error
	for range 16 {
		if ep, err = n.cfg.Network.Listen(proto.Provisional(rand.Uint32()), nil); err == nil {
			break
		}
	}
	if err != nil {
		n.cfg.Logf("node: no endpoint to report to the scheduler: %v", err)
		return
	}
	defer ep.Close()
	ep.SetPeer(proto.SchedulerID, n.cfg.Scheduler)
	hb := n.assign.Job.Heartbeat
	// Until a scheduler listens at the address, the report is sent
	// again after 10 ms, doubling up to a heartbeat: a new scheduler
	// hears it soon after it starts. Once sent, every heartbeat.
	backoff := min(10*time.Millisecond, hb)
	timer := time.NewTimer(0)
	defer timer.Stop()
	<-timer.C
	for {
		ctx, cancel := context.WithTimeout(n.ctx, hb)
		err := ep.Send(ctx, proto.SchedulerID, proto.Control(proto.CmdRejoin, n.rejoinReport()))
		cancel()
		wait := hb
		if err != nil {
			wait, backoff = backoff, min(2*backoff, hb)
		}
		timer.Reset(wait)
		for waiting := true; waiting; {
			select {
			case m, ok := <-ep.Recv():
				if ok {
					m.Release()
				}
			case <-ep.Down():
			case <-timer.C:
				waiting = false
			case <-stop:
				return
			case <-n.ctx.Done():
				return
			}
		}
	}
}

// rejoinReport returns the node's report.
func (n *Node) rejoinReport() proto.Rejoin {
	n.mu.Lock()
	defer n.mu.Unlock()
	r := proto.Rejoin{Token: proto.TokenDigest(n.cfg.Token), Host: n.cfg.Host, Machine: n.assign.Machine,
		Epoch: n.epoch, Paused: n.paused}
	for seq := range n.failovers {
		r.Failovers = max(r.Failovers, seq)
	}
	r.Announced = r.Failovers
	for _, seq := range n.failedSeq {
		r.Announced = max(r.Announced, seq)
	}
	if n.identity != nil {
		r.Key = n.identity.PublicKey().Bytes()
	}
	for _, g := range slices.Sorted(maps.Keys(n.released)) {
		r.Released = append(r.Released, n.released[g])
	}
	trained := false
	select {
	case <-n.trained:
		trained = true
	default:
	}
	keys := slices.SortedFunc(maps.Keys(n.barriers), func(a, b barrierKey) int {
		return cmp.Or(cmp.Compare(a.group, b.group), cmp.Compare(a.seq, b.seq))
	})
	for _, m := range n.members {
		rm := proto.RejoinMember{ID: m.id, Addr: m.ep.Addr()}
		if m.id == n.assign.Worker {
			if n.finished != nil {
				rm.Done, rm.Err = true, n.finished.Err
			}
			rm.Trained = trained
		}
		if m.id == n.assign.Server && n.srv != nil && n.assign.Job.Replicas > 0 {
			h := n.srv.Holding()
			rm.Backups, rm.Joining, rm.Copies = h.Backups, h.Joining, h.Copies
		}
		for _, k := range keys {
			rel := n.barriers[k]
			for _, a := range n.arrivals(k, rel.sent, rel.epoch) {
				if a.m == m {
					rm.Waiting = append(rm.Waiting, a.b)
				}
			}
		}
		r.Members = append(r.Members, rm)
	}
	// The servers taken over: their ranges served here, replicated to
	// the new backups made since.
	for _, m := range n.taken {
		rm := proto.RejoinMember{ID: m.id, Addr: m.ep.Addr(), Moved: true}
		if m.srv != nil {
			h := m.srv.Holding()
			rm.Backups, rm.Joining = h.Backups, h.Joining
		}
		r.Members = append(r.Members, rm)
	}
	return r
}

// groupMembers returns the node's members in barrier group group.
func (n *Node) groupMembers(group string) []*member {
	var ms []*member
	for _, m := range n.members {
		r, _ := proto.Identify(m.id)
		if proto.InGroup(group, r) {
			ms = append(ms, m)
		}
	}
	return ms
}

// arrival is what member m sends for a barrier.
type arrival struct {
	m *member
	b proto.Barrier
}

// arrivals returns what each member of group k.group sends for barrier
// k with vals, in member order: the first member the values, the
// others as many −0 (the identity of floating-point addition), so that
// a machine contributes its values once.
func (n *Node) arrivals(k barrierKey, vals []float64, epoch uint64) []arrival {
	var out []arrival
	for i, m := range n.groupMembers(k.group) {
		b := proto.Barrier{Group: k.group, Seq: k.seq, Epoch: epoch}
		if i == 0 {
			b.SetValues(vals)
		} else if len(vals) > 0 {
			b.Bits = make([]uint64, len(vals))
			for j := range b.Bits {
				b.Bits[j] = math.Float64bits(math.Copysign(0, -1))
			}
		}
		out = append(out, arrival{m, b})
	}
	return out
}

// hasStarted reports whether the job started (the node has its address
// book).
func (n *Node) hasStarted() bool {
	select {
	case <-n.started:
		return true
	default:
		return false
	}
}

// Takeovers returns what the node saw of the takeovers of its
// scheduler.
func (n *Node) Takeovers() []TakeoverTimes {
	n.mu.Lock()
	defer n.mu.Unlock()
	return slices.Clone(n.takeovers)
}
