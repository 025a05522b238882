package sched

import (
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"colo/ps/proto"
	"colo/transport"
)

// bar returns an arrival or a release of group "workers" in epoch with
// vals.
func bar(seq, epoch uint64, vals ...float64) proto.Barrier {
	b := proto.Barrier{Group: "workers", Seq: seq, Epoch: epoch}
	b.SetValues(vals)
	return b
}

// machineReport returns the report of machine rank: its server and
// worker at addresses "sR" and "wR", in epoch.
func machineReport(rank int, epoch uint64) proto.Rejoin {
	return proto.Rejoin{Token: proto.TokenDigest("tok"), Host: "h", Machine: rank, Epoch: epoch, Members: []proto.RejoinMember{
		{ID: proto.ServerID(rank), Addr: "s" + string(rune('0'+rank))},
		{ID: proto.WorkerID(rank), Addr: "w" + string(rune('0'+rank))},
	}}
}

// TestRebuild checks the state a takeover rebuilds from reports, and
// the reports it refuses, on a job of 2 machines.
func TestRebuild(t *testing.T) {
	cfg := DefaultConfig()
	cfg.NumServers, cfg.NumWorkers = 2, 2
	with := func(r proto.Rejoin, f func(*proto.Rejoin)) proto.Rejoin {
		r.Members = slices.Clone(r.Members)
		f(&r)
		return r
	}
	m0, m1 := machineReport(0, 2), machineReport(1, 2)
	for _, tc := range []struct {
		name    string
		reports []proto.Rejoin
		err     string
		check   func(t *testing.T, rb *Rebuilt)
	}{
		{name: "every node, two arrivals", reports: []proto.Rejoin{
			with(m1, func(r *proto.Rejoin) { r.Members[1].Waiting = []proto.Barrier{bar(3, 2, 1)} }),
			with(m0, func(r *proto.Rejoin) {
				r.Members[1].Waiting = []proto.Barrier{bar(3, 2, 2), bar(1, 1, 9)} // one of an old epoch
				r.Released = []proto.Barrier{bar(2, 2, 5)}
			}),
		}, check: func(t *testing.T, rb *Rebuilt) {
			if rb.Epoch != 2 || len(rb.Missing) != 0 || len(rb.Peers) != 4 || rb.Peers[0].ID != proto.ServerID(0) || rb.Peers[3].Addr != "w1" || rb.Peers[3].Machine != 1 {
				t.Fatalf("%+v", rb)
			}
			want := []Arrival{{proto.WorkerID(0), bar(3, 2, 2)}, {proto.WorkerID(1), bar(3, 2, 1)}}
			if len(rb.Waiting) != 2 || rb.Waiting[0].From != want[0].From || rb.Waiting[1].From != want[1].From ||
				!slices.Equal(rb.Waiting[0].Barrier.Bits, want[0].Barrier.Bits) {
				t.Fatalf("waiting %+v, want %+v", rb.Waiting, want)
			}
			if r := rb.Released["workers"]; r.Seq != 2 || r.Values(nil)[0] != 5 {
				t.Fatalf("released %+v", rb.Released)
			}
		}},
		{name: "the latest release", reports: []proto.Rejoin{
			with(m0, func(r *proto.Rejoin) { r.Released = []proto.Barrier{bar(4, 2, 7)} }),
			with(m1, func(r *proto.Rejoin) { r.Released = []proto.Barrier{bar(3, 2, 6)} }),
		}, check: func(t *testing.T, rb *Rebuilt) {
			if r := rb.Released["workers"]; r.Seq != 4 {
				t.Fatalf("released %+v, want the 4th", rb.Released)
			}
		}},
		{name: "done and trained", reports: []proto.Rejoin{
			with(m0, func(r *proto.Rejoin) { r.Members[1].Done = true }),
			with(m1, func(r *proto.Rejoin) { r.Members[1].Done, r.Members[1].Err = true, "boom" }),
		}, check: func(t *testing.T, rb *Rebuilt) {
			if len(rb.Done) != 2 || rb.Done[proto.WorkerID(0)] != "" || rb.Done[proto.WorkerID(1)] != "boom" || rb.Trained {
				t.Fatalf("done %+v trained %v", rb.Done, rb.Trained)
			}
		}},
		{name: "a repeated report, the latest counts", reports: []proto.Rejoin{
			with(m0, func(r *proto.Rejoin) { r.Members[1].Waiting = []proto.Barrier{bar(3, 2, 1)} }), m0,
		}, check: func(t *testing.T, rb *Rebuilt) {
			if len(rb.Waiting) != 0 || !slices.Equal(rb.Missing, []transport.NodeID{proto.ServerID(1), proto.WorkerID(1)}) {
				t.Fatalf("waiting %+v, missing %v", rb.Waiting, rb.Missing)
			}
		}},
		{name: "a report that names no member first", reports: []proto.Rejoin{{Token: m0.Token}, m0, m1}, check: func(t *testing.T, rb *Rebuilt) {
			if rb.Epoch != 2 || len(rb.Peers) != 4 || len(rb.Missing) != 0 {
				t.Fatalf("%+v", rb)
			}
		}},
		{name: "epochs after a report that names no member", reports: []proto.Rejoin{{Token: m0.Token, Epoch: 3}, m0, machineReport(1, 3)},
			err: "the node of server 1 is in epoch 3, the node of server 0 in epoch 2"},
		{name: "paused", reports: []proto.Rejoin{m0, with(m1, func(r *proto.Rejoin) { r.Paused = true })}, err: "was paused"},
		{name: "failover", reports: []proto.Rejoin{with(m0, func(r *proto.Rejoin) { r.Failovers = 1 }), m1}, err: "failovers"},
		{name: "epochs", reports: []proto.Rejoin{m0, machineReport(1, 3)}, err: "in epoch 3"},
		{name: "not a member", reports: []proto.Rejoin{m0, machineReport(2, 2)}, err: "not a member"},
		{name: "two addresses", reports: []proto.Rejoin{m0, with(m1, func(r *proto.Rejoin) { r.Members[0].ID = proto.ServerID(0) })}, err: "reported at s0 and at s1"},
		{name: "two sums", reports: []proto.Rejoin{
			with(m0, func(r *proto.Rejoin) { r.Released = []proto.Barrier{bar(4, 2, 7)} }),
			with(m1, func(r *proto.Rejoin) { r.Released = []proto.Barrier{bar(4, 2, 8)} }),
		}, err: "two different sums"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := slices.Clone(tc.reports)
			rb := rebuilt(t, cfg, tc.reports, tc.err)
			if rb == nil {
				return
			}
			for i := range in {
				if len(in[i].Members) != len(tc.reports[i].Members) {
					t.Fatal("Rebuild modified its input")
				}
			}
			tc.check(t, rb)
		})
	}
}

// rebuilt returns what Rebuild makes of the reports, failing the test
// if it refuses them, or, when want is not "", nil once it refused them
// with an error saying want (failing the test otherwise).
func rebuilt(t *testing.T, cfg Config, reports []proto.Rejoin, want string) *Rebuilt {
	t.Helper()
	rb, err := Rebuild(cfg, reports)
	if want == "" {
		if err != nil {
			t.Fatal(err)
		}
		return rb
	}
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("error %v, want one saying %q", err, want)
	}
	return nil
}

// takeoverCore returns a core that takes over a job of 2 machines.
func takeoverCore(t *testing.T) *Core {
	t.Helper()
	cfg := testConfig(2, 2)
	cfg.Takeover = true
	return coreOf(t, cfg)
}

// TestTakeoverByHand walks a takeover: the old scheduler released
// barrier 1 of the workers to worker 0 only and died; worker 0 waits at
// barrier 2 and worker 1, which lost its release, at barrier 1. The new
// scheduler answers the nodes once both reported, sends worker 1
// its release, holds a barrier arrival that came before, releases
// barrier 2 with the sum in node id order, and ends the job when both
// workers are done.
func TestTakeoverByHand(t *testing.T) {
	c := takeoverCore(t)
	if !c.job.Standby {
		t.Fatal("a takeover's job has no standby")
	}
	// Nothing before the reports: no heartbeats to nodes it does not
	// know, a barrier arrival held.
	if outs := c.Tick(); len(outs) != 0 {
		t.Fatalf("tick before the reports: %+v", outs)
	}
	r0 := machineReport(0, 0)
	r0.Released = []proto.Barrier{bar(1, 0, 3)}
	r0.Members[1].Waiting = []proto.Barrier{bar(2, 0, 0.25)}
	r1 := machineReport(1, 0)
	r1.Members[1].Waiting = []proto.Barrier{bar(1, 0, 2)}
	if outs := c.Handle(msg(proto.Provisional(7), proto.CmdRejoin, r0)); len(outs) != 0 || c.Running() {
		t.Fatalf("first report: %+v, running %v", outs, c.Running())
	}
	// A report with a wrong token counts for nothing.
	bad := r1
	bad.Token = "x"
	if outs := c.Handle(msg(proto.Provisional(8), proto.CmdRejoin, bad)); len(outs) != 0 || c.Running() {
		t.Fatalf("wrong token: %+v", outs)
	}
	// Worker 1's arrival at barrier 2 reaches the scheduler before its
	// report says it left barrier 1: held.
	c.Handle(msg(proto.WorkerID(1), proto.CmdBarrier, bar(2, 0, 0.5)))
	outs := c.Handle(msg(proto.Provisional(9), proto.CmdRejoin, r1))
	if !c.Running() {
		t.Fatalf("not running after every report: %v", c.Logs())
	}
	if an := find(outs, proto.CmdRejoined); len(an) != 4 || an[0].Addr != "s0" || !strings.Contains(string(an[0].M.Body), `"TakenOver":true`) {
		t.Fatalf("answers %+v", an)
	}
	rels := find(outs, proto.CmdRelease)
	// Barrier 1 again to worker 1; barrier 2 to both, once the held
	// arrival came.
	if len(rels) != 3 || rels[0].To != proto.WorkerID(1) {
		t.Fatalf("releases %+v", rels)
	}
	var b proto.Barrier
	proto.Decode(rels[0].M, &b)
	if b.Seq != 1 || b.Values(nil)[0] != 3 {
		t.Fatalf("release again %+v", b)
	}
	proto.Decode(rels[1].M, &b)
	if b.Seq != 2 || b.Values(nil)[0] != 0.75 {
		t.Fatalf("release %+v, want barrier 2 with 0.75", b)
	}
	// A late report (the node had not heard the scheduler yet) changes
	// nothing: barrier 2 is released, its arrival gets the release again.
	r1.Members[1].Waiting = []proto.Barrier{bar(2, 0, 0.5)}
	outs = c.Handle(msg(proto.Provisional(9), proto.CmdRejoin, r1))
	if rels := find(outs, proto.CmdRelease); len(rels) != 1 || rels[0].To != proto.WorkerID(1) || len(find(outs, proto.CmdRejoined)) != 2 {
		t.Fatalf("late report: %+v", outs)
	}
	// An arrival at an older barrier is ignored.
	if outs := c.Handle(msg(proto.WorkerID(0), proto.CmdBarrier, bar(1, 0, 1))); len(outs) != 0 {
		t.Fatalf("old arrival: %+v", outs)
	}
	// Heartbeats and silence as before the takeover.
	if outs := c.Tick(); len(find(outs, proto.CmdHeartbeat)) != 4 {
		t.Fatalf("tick: %+v", outs)
	}
	c.Handle(msg(proto.WorkerID(0), proto.CmdDone, proto.Done{}))
	outs = c.Handle(msg(proto.WorkerID(1), proto.CmdDone, proto.Done{}))
	if len(find(outs, proto.CmdShutdown)) != 4 {
		t.Fatalf("end: %+v", outs)
	}
	if ended, err := c.Ended(); !ended || err != nil {
		t.Fatalf("ended %v, %v", ended, err)
	}
}

// TestTakeoverDoneInReport: a worker whose Done was lost with the old
// scheduler is done by its report, and the job ends once the other is.
func TestTakeoverDoneInReport(t *testing.T) {
	c := takeoverCore(t)
	r0, r1 := machineReport(0, 0), machineReport(1, 0)
	r0.Members[1].Done = true
	c.Handle(msg(proto.Provisional(7), proto.CmdRejoin, r0))
	outs := c.Handle(msg(proto.Provisional(9), proto.CmdRejoin, r1))
	if len(find(outs, proto.CmdShutdown)) != 0 || !c.Running() {
		t.Fatalf("ended with a worker not done: %+v", outs)
	}
	outs = c.Handle(msg(proto.WorkerID(1), proto.CmdDone, proto.Done{}))
	if len(find(outs, proto.CmdShutdown)) != 4 {
		t.Fatalf("end: %+v", outs)
	}
}

// TestTakeoverFails: a node that does not report within the timeout,
// or reports a pause, ends the job, telling the nodes that reported.
func TestTakeoverFails(t *testing.T) {
	c := takeoverCore(t)
	c.Handle(msg(proto.Provisional(7), proto.CmdRejoin, machineReport(0, 0)))
	var outs []Out
	for range 4 {
		outs = c.Tick()
	}
	ended, err := c.Ended()
	if !ended || err == nil || !strings.Contains(err.Error(), "no report from server 1 and worker 1 within 3s") {
		t.Fatalf("ended %v: %v", ended, err)
	}
	if ab := find(outs, proto.CmdAbort); len(ab) != 2 || ab[0].Addr != "s0" {
		t.Fatalf("aborts %+v", outs)
	}

	c = takeoverCore(t)
	c.Handle(msg(proto.Provisional(7), proto.CmdRejoin, machineReport(0, 1)))
	p := machineReport(1, 1)
	p.Paused = true
	outs = c.Handle(msg(proto.Provisional(9), proto.CmdRejoin, p))
	if ended, err := c.Ended(); !ended || err == nil || !strings.Contains(err.Error(), "cannot be taken over") || len(find(outs, proto.CmdAbort)) != 4 {
		t.Fatalf("paused report: ended %v, %v, %+v", ended, err, outs)
	}
}

// TestReleaseAgain: a node that sends its arrival again at a barrier
// released already (its release lost) gets the release again, with the
// same sum, from a scheduler that did not die; an arrival at an older
// one is ignored.
func TestReleaseAgain(t *testing.T) {
	c := started(t)
	w1, w2 := proto.WorkerID(0), proto.WorkerID(1)
	c.Handle(msg(w1, proto.CmdBarrier, bar(1, 0, 1)))
	c.Handle(msg(w2, proto.CmdBarrier, bar(1, 0, 2)))
	outs := c.Handle(msg(w2, proto.CmdBarrier, bar(1, 0, 2)))
	rels := find(outs, proto.CmdRelease)
	if len(rels) != 1 || rels[0].To != w2 {
		t.Fatalf("again: %+v", outs)
	}
	var b proto.Barrier
	proto.Decode(rels[0].M, &b)
	if v := b.Values(nil); len(v) != 1 || v[0] != 3 || math.Signbit(v[0]) {
		t.Fatalf("release again %+v", b)
	}
	c.Handle(msg(w1, proto.CmdBarrier, bar(2, 0)))
	c.Handle(msg(w2, proto.CmdBarrier, bar(2, 0)))
	if outs := c.Handle(msg(w1, proto.CmdBarrier, bar(1, 0, 1))); len(outs) != 0 {
		t.Fatalf("older arrival: %+v", outs)
	}
}

// FuzzRejoin feeds a scheduler that takes a job of 2 machines over a
// report of any bytes (a proto.Rejoin's JSON) from a provisional id,
// before or after the good reports of both machines rebuilt the job, and
// then ticks past the takeover's timeout: it never panics, and a job it
// runs has its 4 members.
func FuzzRejoin(f *testing.F) {
	report := func(r proto.Rejoin) []byte {
		b, err := json.Marshal(r)
		if err != nil {
			f.Fatal(err)
		}
		return b
	}
	r0 := machineReport(0, 0)
	r0.Released = []proto.Barrier{bar(1, 0, 3)}
	r0.Members[1].Waiting = []proto.Barrier{bar(2, 0, 0.25), {Group: "all", Seq: 1}}
	r0.Members[1].Done, r0.Members[1].Err = true, "boom"
	for _, after := range []bool{false, true} {
		f.Add(report(r0), after)
		f.Add(report(machineReport(1, 4)), after)
		f.Add(report(proto.Rejoin{Token: r0.Token}), after)
		f.Add([]byte(`{"Token":"x","Members":[{"ID":1}]}`), after)
		f.Add([]byte(`{`), after)
	}
	f.Fuzz(func(t *testing.T, body []byte, after bool) {
		c := takeoverCore(t)
		if after {
			c.Handle(msg(proto.Provisional(7), proto.CmdRejoin, machineReport(0, 0)))
			c.Handle(msg(proto.Provisional(9), proto.CmdRejoin, machineReport(1, 0)))
			if !c.Running() {
				t.Fatalf("not running after both reports: %v", c.Logs())
			}
		}
		m := &transport.Message{Header: transport.Header{Type: transport.TypeControl, Cmd: proto.CmdRejoin, Sender: proto.Provisional(5)}, Body: body}
		c.Handle(m)
		for range 5 {
			c.Tick()
			if c.Running() && len(c.Peers()) != 4 {
				t.Fatalf("a job runs with the members %+v", c.Peers())
			}
		}
	})
}

// TestReportToLiveScheduler: a scheduler that ran the job all along
// answers a node's report (the node lost a link to it) without taking
// anything from it, and ignores one of a node it does not know.
func TestReportToLiveScheduler(t *testing.T) {
	c := started(t)
	r := proto.Rejoin{Token: proto.TokenDigest("tok"), Members: []proto.RejoinMember{
		{ID: proto.WorkerID(1), Addr: "real", Done: true, Waiting: []proto.Barrier{bar(1, 0, 5)}},
	}}
	outs := c.Handle(msg(proto.Provisional(9), proto.CmdRejoin, r))
	if an := find(outs, proto.CmdRejoined); len(outs) != 1 || len(an) != 1 || an[0].To != proto.WorkerID(1) || strings.Contains(string(an[0].M.Body), "TakenOver") {
		t.Fatalf("answer %+v", outs)
	}
	if ended, _ := c.Ended(); ended || c.members[proto.WorkerID(1)].done {
		t.Fatal("the report of a live scheduler's node was taken for its Done")
	}
	r.Members[0].Addr = "elsewhere"
	if outs := c.Handle(msg(proto.Provisional(9), proto.CmdRejoin, r)); len(outs) != 0 {
		t.Fatalf("a report of another address: %+v", outs)
	}
}

// TestTakeoverWithReplacement: machine 1 died with the scheduler and
// sends no report; its replacement registers while the new scheduler
// waits for the reports, before machine 0 reported. Once it did, the
// scheduler takes the job over from machine 0's report, answers it, pauses the job for machine 1 (epoch 1, the
// barrier machine 0 waited at failed by the pause, not released), gives
// the replacement machine 1's ids and the machine index no report has,
// and resumes the job once it is ready.
func TestTakeoverWithReplacement(t *testing.T) {
	cfg := testConfig(2, 2)
	cfg.Takeover, cfg.RecoverWait = true, 10*time.Second
	c := coreOf(t, cfg)
	// The replacement registers before machine 0 reports: no answer
	// yet.
	reg := proto.Register{Role: proto.RoleMachine, Token: proto.TokenDigest("tok"), Addr: "new", Rank: 1, Recover: true}
	if outs := c.Handle(msg(proto.Provisional(11), proto.CmdRegister, reg)); len(outs) != 0 {
		t.Fatalf("a replacement answered before any report: %+v", outs)
	}
	r0 := machineReport(0, 0)
	r0.Members[1].Waiting = []proto.Barrier{bar(4, 0, 1)}
	outs := c.Handle(msg(proto.Provisional(7), proto.CmdRejoin, r0))
	if len(find(outs, proto.CmdRelease)) != 0 {
		t.Fatalf("a barrier released without machine 1: %+v", outs)
	}
	if an := find(outs, proto.CmdRejoined); len(an) != 2 || an[0].To != proto.ServerID(0) {
		t.Fatalf("answers %+v", outs)
	}
	ps := find(outs, proto.CmdPause)
	if len(ps) != 2 || ps[1].To != proto.WorkerID(0) {
		t.Fatalf("pauses %+v", outs)
	}
	var p proto.Pause
	proto.Decode(ps[0].M, &p)
	if p.Epoch != 1 || !slices.Equal(p.Peers, []transport.NodeID{proto.ServerID(1), proto.WorkerID(1)}) {
		t.Fatalf("pause %+v", p)
	}
	as := find(outs, proto.CmdAssign)
	if len(as) != 1 || as[0].Addr != "new" {
		t.Fatalf("assign %+v", outs)
	}
	var a proto.Assign
	proto.Decode(as[0].M, &a)
	if a.Server != proto.ServerID(1) || a.Worker != proto.WorkerID(1) || a.Machine != 1 || a.Epoch != 1 {
		t.Fatalf("assign %+v", a)
	}
	c.Handle(msg(a.Server, proto.CmdReady, proto.Ready{Addr: "s1"}))
	outs = c.Handle(msg(a.Worker, proto.CmdReady, proto.Ready{Addr: "w1"}))
	if rs := find(outs, proto.CmdResume); len(rs) != 4 || c.Epoch() != 1 {
		t.Fatalf("resume %+v, epoch %d", outs, c.Epoch())
	}
	// A replacement for a node that reported is refused.
	c2 := takeoverCore(t)
	c2.cfg.RecoverWait, c2.job.Recover = 10*time.Second, true
	c2.Handle(msg(proto.Provisional(7), proto.CmdRejoin, machineReport(0, 0)))
	reg.Rank = 0
	outs = c2.Handle(msg(proto.Provisional(12), proto.CmdRegister, reg))
	if r := find(outs, proto.CmdRefuse); len(r) != 1 || !strings.Contains(string(r[0].M.Body), "has reported") {
		t.Fatalf("replacement of a node that reported: %+v", outs)
	}
}

// TestTakeoverReplacementRefusedAtDeadline: a replacement kept while
// a node that did not die never reports is refused when the takeover
// gives up.
func TestTakeoverReplacementRefusedAtDeadline(t *testing.T) {
	cfg := testConfig(3, 3)
	cfg.Takeover, cfg.RecoverWait = true, 10*time.Second
	c := coreOf(t, cfg)
	reg := proto.Register{Role: proto.RoleMachine, Token: proto.TokenDigest("tok"), Addr: "new", Rank: 1, Recover: true}
	c.Handle(msg(proto.Provisional(11), proto.CmdRegister, reg))
	if outs := c.Handle(msg(proto.Provisional(7), proto.CmdRejoin, machineReport(0, 0))); len(outs) != 0 {
		t.Fatalf("taken over with machine 2 silent: %+v", outs)
	}
	var outs []Out
	for range 4 {
		outs = append(outs, c.Tick()...)
	}
	if r := find(outs, proto.CmdRefuse); len(r) != 1 || r[0].Addr != "new" || !strings.Contains(string(r[0].M.Body), "no report from") {
		t.Fatalf("refusal %+v", outs)
	}
}
