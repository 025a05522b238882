package sched

import (
	"errors"
	"strings"
	"testing"
	"time"

	"colo/ps/proto"
	"colo/transport"
)

// recovering returns a running core of two machines that waits 3
// heartbeats for replacements.
func recovering(t *testing.T) *Core {
	t.Helper()
	cfg := testConfig(2, 2)
	cfg.RecoverWait = 3 * time.Second
	c := coreOf(t, cfg)
	join(t, c, 1, proto.RoleMachine, 0)
	if _, outs := join(t, c, 2, proto.RoleMachine, 1); len(find(outs, proto.CmdStart)) != 4 {
		t.Fatalf("no start: %+v", outs)
	}
	return c
}

// decoded returns the bodies of the outs of cmd, by destination.
func decoded[T any](t *testing.T, outs []Out, cmd uint16) map[transport.NodeID]T {
	t.Helper()
	r := make(map[transport.NodeID]T)
	for _, o := range find(outs, cmd) {
		var v T
		if err := proto.Decode(o.M, &v); err != nil {
			t.Fatal(err)
		}
		r[o.To] = v
	}
	return r
}

// TestRecoverMachine walks the replacement of a machine by hand: its
// link fails, the job pauses in epoch 1 (the survivors told, the
// machine's server and worker out of the membership, barriers of epoch
// 0 ignored), a new machine that asks to recover gets the same ids and
// machine, and once it is ready everyone gets the address book of
// epoch 1, where barriers work again.
func TestRecoverMachine(t *testing.T) {
	c := recovering(t)
	// Worker 0 is waiting at a barrier when machine 1 dies.
	c.Handle(msg(proto.WorkerID(0), proto.CmdBarrier, proto.Barrier{Group: "workers", Seq: 5}))
	outs := c.Down(&transport.PeerError{Peer: proto.WorkerID(1), Err: transport.ErrPeerClosed})
	if ended, _ := c.Ended(); ended {
		t.Fatal("the job ended instead of pausing")
	}
	if p, id := c.Paused(); !p || id != proto.WorkerID(1) || c.Epoch() != 1 {
		t.Fatalf("paused %v for %v in epoch %d", p, id, c.Epoch())
	}
	pauses := decoded[proto.Pause](t, outs, proto.CmdPause)
	if len(pauses) != 2 || len(outs) != 2 {
		t.Fatalf("pause sent as %+v", outs)
	}
	for _, id := range []transport.NodeID{proto.ServerID(0), proto.WorkerID(0)} {
		p := pauses[id]
		if p.Epoch != 1 || p.Node != proto.WorkerID(1) || len(p.Peers) != 2 || p.Peers[0] != proto.ServerID(1) || p.Peers[1] != proto.WorkerID(1) {
			t.Fatalf("pause to %s: %+v", proto.Name(id), p)
		}
	}
	if l := c.Logs(); len(l) != 1 || !strings.Contains(l[0], "worker 1 (node 5 at real) failed: link lost") || !strings.Contains(l[0], "server 1 and worker 1") {
		t.Fatalf("logs %q", l)
	}
	// The other link of the dead machine adds nothing.
	if outs := c.Down(&transport.PeerError{Peer: proto.ServerID(1), Err: transport.ErrPeerClosed}); len(outs) != 0 {
		t.Fatalf("second link: %+v", outs)
	}
	// A plain registration is refused; so is a replacement of a live rank
	// while paused.
	outs = c.Handle(msg(proto.Provisional(7), proto.CmdRegister, proto.Register{Role: proto.RoleMachine, Token: proto.TokenDigest("tok"), Addr: "n", Rank: 1}))
	if r := find(outs, proto.CmdRefuse); len(r) != 1 || !strings.Contains(string(r[0].M.Body), "the job has started") {
		t.Fatalf("plain registration while paused: %+v", outs)
	}
	outs = c.Handle(msg(proto.Provisional(8), proto.CmdRegister, proto.Register{Role: proto.RoleMachine, Token: proto.TokenDigest("tok"), Addr: "n", Rank: 0, Recover: true}))
	if r := find(outs, proto.CmdRefuse); len(r) != 1 || !strings.Contains(string(r[0].M.Body), "server 0 has not failed") {
		t.Fatalf("replacement of a live rank: %+v", outs)
	}
	c.Logs()
	// A stale barrier arrival is ignored.
	if outs := c.Handle(msg(proto.WorkerID(0), proto.CmdBarrier, proto.Barrier{Group: "workers", Seq: 6})); len(outs) != 0 {
		t.Fatalf("barrier while paused: %+v", outs)
	}
	// The replacement: any machine rank asks for the failed one.
	outs = c.Handle(msg(proto.Provisional(9), proto.CmdRegister, proto.Register{Role: proto.RoleMachine, Token: proto.TokenDigest("tok"), Addr: "new", Rank: -1, Recover: true}))
	as := decoded[proto.Assign](t, outs, proto.CmdAssign)
	a := as[proto.Provisional(9)]
	if len(as) != 1 || a.Server != proto.ServerID(1) || a.Worker != proto.WorkerID(1) || a.Machine != 1 || a.Epoch != 1 || !a.Job.Recover {
		t.Fatalf("replacement assigned %+v", outs)
	}
	if outs := c.Handle(msg(proto.ServerID(1), proto.CmdReady, proto.Ready{Addr: "new1"})); len(outs) != 0 {
		t.Fatalf("half ready: %+v", outs)
	}
	outs = c.Handle(msg(proto.WorkerID(1), proto.CmdReady, proto.Ready{Addr: "new1"}))
	res := decoded[proto.Resume](t, outs, proto.CmdResume)
	if len(res) != 4 {
		t.Fatalf("resume sent as %+v", outs)
	}
	for id, r := range res {
		if r.Epoch != 1 || len(r.Peers) != 4 || r.Peers[2].Addr != "new1" {
			t.Fatalf("resume to %s: %+v", proto.Name(id), r)
		}
	}
	if p, _ := c.Paused(); p || !c.Running() || c.Replaced() != 2 {
		t.Fatalf("paused %v, running %v, replaced %d after the resume", p, c.Running(), c.Replaced())
	}
	// A send to the failed node that fails only now is not the
	// replacement's failure; one to the replacement's address is.
	if outs := c.SendFailed(proto.ServerID(1), &transport.PeerError{Peer: proto.ServerID(1), Addr: "real", Op: "send", Err: transport.ErrPeerClosed}); len(outs) != 0 {
		t.Fatalf("late failure of a send to the failed node: %+v", outs)
	}
	if p, _ := c.Paused(); p {
		t.Fatal("a late failure of a send to the failed node paused the job")
	}
	// Barriers: epoch 0 ignored, epoch 1 released with the epoch.
	if outs := c.Handle(msg(proto.WorkerID(0), proto.CmdBarrier, proto.Barrier{Group: "workers", Seq: 1})); len(outs) != 0 {
		t.Fatalf("stale barrier: %+v", outs)
	}
	c.Handle(msg(proto.WorkerID(0), proto.CmdBarrier, proto.Barrier{Group: "workers", Seq: 1, Epoch: 1}))
	outs = c.Handle(msg(proto.WorkerID(1), proto.CmdBarrier, proto.Barrier{Group: "workers", Seq: 1, Epoch: 1}))
	rel := decoded[proto.Barrier](t, outs, proto.CmdRelease)
	if len(rel) != 2 || rel[proto.WorkerID(1)].Epoch != 1 {
		t.Fatalf("release: %+v", outs)
	}
	// The job ends normally.
	c.Handle(msg(proto.WorkerID(0), proto.CmdDone, proto.Done{}))
	c.Handle(msg(proto.WorkerID(1), proto.CmdDone, proto.Done{}))
	if ended, err := c.Ended(); !ended || err != nil {
		t.Fatalf("ended %v, %v", ended, err)
	}
}

// TestRecoverSendToReplacementFails: a failed send to the replacement's
// own address pauses the job again, in epoch 2.
func TestRecoverSendToReplacementFails(t *testing.T) {
	c := recovering(t)
	c.Down(&transport.PeerError{Peer: proto.ServerID(1), Err: transport.ErrPeerClosed})
	c.Handle(msg(proto.Provisional(9), proto.CmdRegister, proto.Register{Role: proto.RoleMachine, Token: proto.TokenDigest("tok"), Addr: "new", Rank: 1, Recover: true}))
	c.Handle(msg(proto.ServerID(1), proto.CmdReady, proto.Ready{Addr: "new1"}))
	c.Handle(msg(proto.WorkerID(1), proto.CmdReady, proto.Ready{Addr: "new1"}))
	c.SendFailed(proto.WorkerID(1), &transport.PeerError{Peer: proto.WorkerID(1), Addr: "new1", Op: "send", Err: transport.ErrPeerClosed})
	if p, id := c.Paused(); !p || id != proto.WorkerID(1) || c.Epoch() != 2 {
		t.Fatalf("paused %v for %v in epoch %d, want worker 1 in epoch 2", p, id, c.Epoch())
	}
}

// TestRecoverLateLinkFailure: the links of the node a replacement took
// the place of may be reported failed only after the replacement is
// ready, here as on TCP: the scheduler's link to the old node's address
// and the old node's link to the scheduler, which names its port. They
// neither end the job while the replacement gets ready nor pause it
// again after the resume; a failure of the link to the replacement's
// address does.
func TestRecoverLateLinkFailure(t *testing.T) {
	c := recovering(t)
	// The replacement registers before the scheduler noticed machine 1
	// go: it declares the old node failed.
	c.Handle(msg(proto.Provisional(9), proto.CmdRegister, proto.Register{Role: proto.RoleMachine, Token: proto.TokenDigest("tok"), Addr: "new", Rank: 1, Recover: true}))
	c.Handle(msg(proto.ServerID(1), proto.CmdReady, proto.Ready{Addr: "new1"}))
	late := []*transport.PeerError{
		{Peer: proto.ServerID(1), Addr: "real", Op: "send", Err: transport.ErrPeerClosed},
		{Peer: proto.WorkerID(1), Addr: "real", Op: "send", Err: transport.ErrPeerClosed},
		{Peer: proto.ServerID(1), Addr: "port1", Op: "recv", Err: transport.ErrPeerClosed},
		{Peer: proto.WorkerID(1), Addr: "port2", Op: "recv", Err: transport.ErrPeerClosed},
	}
	for _, pe := range late {
		if outs := c.Down(pe); len(outs) != 0 {
			t.Fatalf("late failure %v while the replacement gets ready: %+v", pe, outs)
		}
	}
	if ended, err := c.Ended(); ended {
		t.Fatalf("a late failure of the old node ended the job: %v", err)
	}
	if res := decoded[proto.Resume](t, c.Handle(msg(proto.WorkerID(1), proto.CmdReady, proto.Ready{Addr: "new1"})), proto.CmdResume); len(res) != 4 {
		t.Fatalf("resume sent to %d nodes", len(res))
	}
	for _, pe := range late {
		if outs := c.Down(pe); len(outs) != 0 {
			t.Fatalf("late failure %v after the resume: %+v", pe, outs)
		}
	}
	if p, _ := c.Paused(); p || c.Epoch() != 1 {
		t.Fatalf("paused %v in epoch %d after late failures of the old node", p, c.Epoch())
	}
	// The replacement's own link.
	c.Down(&transport.PeerError{Peer: proto.WorkerID(1), Addr: "new1", Op: "send", Err: transport.ErrPeerClosed})
	if p, id := c.Paused(); !p || id != proto.WorkerID(1) || c.Epoch() != 2 {
		t.Fatalf("paused %v for %v in epoch %d, want worker 1 in epoch 2", p, id, c.Epoch())
	}
}

// TestRecoverGivesUp: a pause that no replacement ends within the
// recovery wait ends the job with an error naming the failed ranks and
// the cause, sent to every survivor.
func TestRecoverGivesUp(t *testing.T) {
	c := recovering(t)
	c.Down(&transport.PeerError{Peer: proto.ServerID(1), Err: transport.ErrPeerClosed})
	for i := range 3 {
		outs := c.Tick()
		if ended, _ := c.Ended(); ended {
			t.Fatalf("ended after %d ticks of a 3-tick wait", i+1)
		}
		for _, o := range outs {
			if o.To == proto.ServerID(1) || o.To == proto.WorkerID(1) {
				t.Fatalf("heartbeat to a failed node: %+v", o)
			}
		}
	}
	outs := c.Tick()
	ended, err := c.Ended()
	want := "server 1 (node 4 at real) failed: no replacement for server 1 and worker 1 ready within 3s (after link lost: peer closed the link)"
	if !ended || err == nil || err.Error() != want {
		t.Fatalf("ended %v with %v, want %q", ended, err, want)
	}
	var ne *proto.NodeError
	if !errors.As(err, &ne) || ne.ID != proto.ServerID(1) {
		t.Fatalf("error %#v does not name server 1", err)
	}
	aborts := decoded[proto.Abort](t, outs, proto.CmdAbort)
	if len(aborts) != 2 || aborts[proto.WorkerID(0)].Node != proto.ServerID(1) || !strings.Contains(aborts[proto.WorkerID(0)].Reason, "no replacement for server 1") {
		t.Fatalf("aborts %+v", outs)
	}
}

// TestRecoverSecondFailure: a failure while paused, a finished worker,
// or a replacement that is not ready in time end the job; a replacement
// that arrives before the scheduler noticed the failure declares the old
// node failed.
func TestRecoverSecondFailure(t *testing.T) {
	// A second failure noticed after the detection window (the timeout)
	// since the first is a second event: it ends the job.
	c := recovering(t)
	c.cfg.RecoverWait = 10 * time.Second
	c.Down(&transport.PeerError{Peer: proto.ServerID(1), Err: transport.ErrPeerClosed})
	for range c.timeout + 1 {
		c.Handle(msg(proto.ServerID(0), proto.CmdHeartbeat, nil))
		c.Handle(msg(proto.WorkerID(0), proto.CmdHeartbeat, nil))
		if c.Tick(); !c.Running() {
			t.Fatal("the job ended while paused")
		}
	}
	c.Down(&transport.PeerError{Peer: proto.WorkerID(0), Err: transport.ErrPeerClosed})
	if ended, err := c.Ended(); !ended || err == nil || !strings.Contains(err.Error(), "worker 0 (node 3 at real) failed: link lost: peer closed the link, while the job waited for the replacement of server 1") {
		t.Fatalf("second failure: ended %v, %v", ended, err)
	}

	c = recovering(t)
	c.Handle(msg(proto.WorkerID(0), proto.CmdDone, proto.Done{}))
	c.Down(&transport.PeerError{Peer: proto.ServerID(1), Err: transport.ErrPeerClosed})
	if ended, err := c.Ended(); !ended || err == nil || !strings.Contains(err.Error(), "after worker 0 finished") {
		t.Fatalf("failure after a worker finished: ended %v, %v", ended, err)
	}

	// A worker that reports an error while paused (its application
	// does not roll back) ends the job with the pause's failure.
	c = recovering(t)
	c.Down(&transport.PeerError{Peer: proto.ServerID(1), Err: transport.ErrPeerClosed})
	c.Handle(msg(proto.WorkerID(0), proto.CmdDone, proto.Done{Err: "smoke: push: job paused"}))
	if ended, err := c.Ended(); !ended || err == nil || !strings.HasPrefix(err.Error(), "server 1 (node 4 at real) failed: link lost: peer closed the link; worker 0 could not wait for a replacement: smoke") {
		t.Fatalf("error while paused: ended %v, %v", ended, err)
	}

	c = recovering(t)
	outs := c.Handle(msg(proto.Provisional(9), proto.CmdRegister, proto.Register{Role: proto.RoleMachine, Token: proto.TokenDigest("tok"), Addr: "new", Rank: 1, Recover: true}))
	if len(decoded[proto.Pause](t, outs, proto.CmdPause)) != 2 || len(decoded[proto.Assign](t, outs, proto.CmdAssign)) != 1 {
		t.Fatalf("early replacement: %+v", outs)
	}
	if l := c.Logs(); len(l) != 2 || !strings.Contains(l[0], "server 1 (node 4 at real) failed: replaced by a new node at new") {
		t.Fatalf("logs %q", l)
	}

	// Without a recovery wait a failure ends the job, and a replacement
	// is refused.
	c = started(t)
	outs = c.Handle(msg(proto.Provisional(9), proto.CmdRegister, proto.Register{Role: proto.RoleMachine, Token: proto.TokenDigest("tok"), Addr: "new", Rank: 1, Recover: true}))
	if r := find(outs, proto.CmdRefuse); len(r) != 1 || !strings.Contains(string(r[0].M.Body), "replaces no failed node") {
		t.Fatalf("replacement without recovery: %+v", outs)
	}
}

// TestRecoverOneEvent: both machines fail within one detection window
// (links lost 0 ticks apart, then silence noticed in one tick): one
// pause, epoch 1, both replaced in it; each failure is reported as a
// Pause of the same epoch, the first naming the cause.
func TestRecoverOneEvent(t *testing.T) {
	for _, how := range []string{"links", "silence"} {
		c := recovering(t)
		c.Logs()
		if how == "links" {
			c.Down(&transport.PeerError{Peer: proto.WorkerID(1), Err: transport.ErrPeerClosed})
			c.Tick()
			c.Down(&transport.PeerError{Peer: proto.ServerID(0), Err: transport.ErrPeerClosed})
		} else {
			for range c.timeout + 1 {
				c.Tick()
			}
		}
		if ended, err := c.Ended(); ended {
			t.Fatalf("%s: two failures in one window ended the job: %v", how, err)
		}
		if p, _ := c.Paused(); !p || c.Epoch() != 1 || len(c.lost) != 4 {
			t.Fatalf("%s: paused %v in epoch %d, lost %v", how, p, c.Epoch(), c.lost)
		}
		ps := c.Pauses()
		if len(ps) != 2 || ps[0].Epoch != 1 || ps[1].Epoch != 1 || len(ps[0].Lost) != 2 || len(ps[1].Lost) != 2 || ps[0].Lost[0] == ps[1].Lost[0] {
			t.Fatalf("%s: pauses %+v", how, ps)
		}
		if l := c.Logs(); len(l) != 2 || !strings.Contains(l[1], "one event") {
			t.Fatalf("%s: logs %q", how, l)
		}
		for i, rank := range []int{1, 0} {
			outs := c.Handle(msg(proto.Provisional(uint32(20+i)), proto.CmdRegister, proto.Register{Role: proto.RoleMachine, Token: proto.TokenDigest("tok"), Addr: "new", Rank: rank, Recover: true}))
			a := decoded[proto.Assign](t, outs, proto.CmdAssign)[proto.Provisional(uint32(20+i))]
			if a.Server != proto.ServerID(rank) || a.Epoch != 1 {
				t.Fatalf("%s: replacement of machine %d: %+v", how, rank, outs)
			}
		}
		var res map[transport.NodeID]proto.Resume
		for _, id := range []transport.NodeID{proto.ServerID(0), proto.WorkerID(0), proto.ServerID(1), proto.WorkerID(1)} {
			res = decoded[proto.Resume](t, c.Handle(msg(id, proto.CmdReady, proto.Ready{Addr: "new"})), proto.CmdResume)
		}
		if len(res) != 4 || c.Replaced() != 4 || !c.Running() {
			t.Fatalf("%s: resume %+v, replaced %d", how, res, c.Replaced())
		}
	}
}

// TestStaleHeartbeatsIgnored: a machine declared dead after a stall is
// replaced; the stalled one wakes up and goes on sending heartbeats from
// its old address, while the replacement falls silent: those heartbeats
// do not keep the replacement alive, and its silence is noticed after
// the timeout. Heartbeats from the replacement's address (and ones
// naming no address) still count.
func TestStaleHeartbeatsIgnored(t *testing.T) {
	c := recovering(t)
	c.Down(&transport.PeerError{Peer: proto.WorkerID(1), Err: transport.ErrPeerClosed})
	c.Handle(msg(proto.Provisional(9), proto.CmdRegister, proto.Register{Role: proto.RoleMachine, Token: proto.TokenDigest("tok"), Addr: "new", Rank: 1, Recover: true}))
	c.Handle(msg(proto.ServerID(1), proto.CmdReady, proto.Ready{Addr: "new1"}))
	c.Handle(msg(proto.WorkerID(1), proto.CmdReady, proto.Ready{Addr: "new2"}))
	if p, _ := c.Paused(); p || !c.Running() {
		t.Fatal("not resumed")
	}
	beat := func(id transport.NodeID, addr string) {
		c.Handle(msg(id, proto.CmdHeartbeat, proto.Heartbeat{Addr: addr}))
	}
	for range 2 {
		c.Tick()
		beat(proto.ServerID(0), "real")
		beat(proto.WorkerID(0), "real")
		beat(proto.ServerID(1), "new1") // the replacement's own
		beat(proto.WorkerID(1), "new2")
	}
	if ended, err := c.Ended(); ended {
		t.Fatalf("ended: %v", err)
	}
	// The replacement falls silent; the stalled node sends from "real".
	for range 6 {
		c.Tick()
		beat(proto.ServerID(0), "real")
		beat(proto.WorkerID(0), "real")
		beat(proto.ServerID(1), "real")
		beat(proto.WorkerID(1), "real")
		if p, _ := c.Paused(); p {
			break
		}
	}
	if p, id := c.Paused(); !p || (id != proto.ServerID(1) && id != proto.WorkerID(1)) {
		ended, err := c.Ended()
		t.Fatalf("paused %v for %s (ended %v, %v): the replacement's silence went unnoticed", p, proto.Name(id), ended, err)
	}
}
