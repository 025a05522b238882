package sched

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"colo/ps/proto"
	"colo/transport"
)

func msg(from transport.NodeID, cmd uint16, v any) *transport.Message {
	m := proto.Control(cmd, v)
	m.Sender = from
	return m
}

// find returns the outs of a command.
func find(outs []Out, cmd uint16) []Out {
	var r []Out
	for _, o := range outs {
		if o.M.Cmd == cmd {
			r = append(r, o)
		}
	}
	return r
}

// testConfig is the job of s servers and w workers that the tests walk
// by hand: token "tok", a heartbeat (a tick) of a second, a timeout of 3
// ticks and 10 ticks to start.
func testConfig(s, w int) Config {
	cfg := DefaultConfig()
	cfg.NumServers, cfg.NumWorkers, cfg.Token = s, w, "tok"
	cfg.Heartbeat, cfg.Timeout, cfg.StartTimeout = time.Second, 3*time.Second, 10*time.Second
	return cfg
}

// coreOf returns a new core of cfg, failing the test if cfg is refused.
func coreOf(t *testing.T, cfg Config) *Core {
	t.Helper()
	c, err := NewCore(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// newCore returns a new core of testConfig(s, w).
func newCore(t *testing.T, s, w int) *Core {
	t.Helper()
	return coreOf(t, testConfig(s, w))
}

// join registers and readies a machine, returning its server and worker
// ids and the outs of its Ready.
func join(t *testing.T, c *Core, prov uint32, role proto.Role, rank int) (proto.Assign, []Out) {
	t.Helper()
	outs := c.Handle(msg(proto.Provisional(prov), proto.CmdRegister, proto.Register{Role: role, Token: proto.TokenDigest("tok"), Addr: "a", Rank: rank}))
	as := find(outs, proto.CmdAssign)
	if len(as) != 1 || as[0].Addr != "a" || as[0].To != proto.Provisional(prov) {
		t.Fatalf("register: %+v", outs)
	}
	var a proto.Assign
	proto.Decode(as[0].M, &a)
	var all []Out
	for _, id := range []transport.NodeID{a.Server, a.Worker} {
		if id != 0 {
			all = append(all, c.Handle(msg(id, proto.CmdReady, proto.Ready{Addr: "real"}))...)
		}
	}
	return a, all
}

func TestRegistration(t *testing.T) {
	c := newCore(t, 2, 2)
	a0, outs := join(t, c, 1, proto.RoleMachine, -1)
	if a0.Server != proto.ServerID(0) || a0.Worker != proto.WorkerID(0) || len(outs) != 0 {
		t.Fatalf("first machine: %+v, outs %v", a0, outs)
	}
	if len(a0.Job.Table) == 0 || a0.Job.Mode != "bsp" {
		t.Fatalf("job missing from Assign: %+v", a0.Job)
	}
	// A wrong token is refused with the reason; so is a third machine.
	outs = c.Handle(msg(proto.Provisional(2), proto.CmdRegister, proto.Register{Role: proto.RoleMachine, Token: "bad", Addr: "b", Rank: -1}))
	if r := find(outs, proto.CmdRefuse); len(r) != 1 || !strings.Contains(string(r[0].M.Body), "wrong cluster token") {
		t.Fatalf("wrong token: %+v", outs)
	}
	if logs := c.Logs(); len(logs) != 1 || !strings.Contains(logs[0], "wrong cluster token") {
		t.Fatalf("logs %q", logs)
	}
	// Asking for a taken rank is refused.
	outs = c.Handle(msg(proto.Provisional(3), proto.CmdRegister, proto.Register{Role: proto.RoleServer, Token: proto.TokenDigest("tok"), Addr: "c", Rank: 0}))
	if len(find(outs, proto.CmdRefuse)) != 1 {
		t.Fatalf("taken rank: %+v", outs)
	}
	a1, outs := join(t, c, 4, proto.RoleMachine, -1)
	if a1.Server != proto.ServerID(1) || a1.Machine == a0.Machine {
		t.Fatalf("second machine: %+v", a1)
	}
	starts := find(outs, proto.CmdStart)
	if len(starts) != 4 || !c.Running() {
		t.Fatalf("start: %d messages, running %v", len(starts), c.Running())
	}
	var st proto.Start
	proto.Decode(starts[0].M, &st)
	if len(st.Peers) != 4 || st.Peers[0].ID != proto.ServerID(0) || st.Peers[0].Addr != "real" {
		t.Fatalf("address book %+v", st.Peers)
	}
	// Too late to join.
	outs = c.Handle(msg(proto.Provisional(5), proto.CmdRegister, proto.Register{Role: proto.RoleWorker, Token: proto.TokenDigest("tok"), Addr: "d", Rank: -1}))
	if len(find(outs, proto.CmdRefuse)) != 1 {
		t.Fatalf("late registration: %+v", outs)
	}
	// A retried registration gets the same answer.
	outs = c.Handle(msg(proto.Provisional(1), proto.CmdRegister, proto.Register{Role: proto.RoleMachine, Token: proto.TokenDigest("tok"), Addr: "a", Rank: -1}))
	if len(find(outs, proto.CmdAssign)) != 1 {
		t.Fatalf("retry: %+v", outs)
	}
}

func started(t *testing.T) *Core {
	c := newCore(t, 1, 2)
	join(t, c, 1, proto.RoleServer, -1)
	join(t, c, 2, proto.RoleWorker, -1)
	_, outs := join(t, c, 3, proto.RoleWorker, -1)
	if len(find(outs, proto.CmdStart)) != 3 {
		t.Fatalf("not started: %+v", outs)
	}
	return c
}

// TestHeartbeatTimeout counts ticks: a node silent for the timeout is
// declared dead by name, and the others are told.
func TestHeartbeatTimeout(t *testing.T) {
	c := started(t)
	for range 3 {
		outs := c.Tick()
		if len(find(outs, proto.CmdHeartbeat)) != 3 {
			t.Fatalf("heartbeats: %+v", outs)
		}
		c.Handle(msg(proto.ServerID(0), proto.CmdHeartbeat, nil))
		c.Handle(msg(proto.WorkerID(0), proto.CmdHeartbeat, nil))
	}
	outs := c.Tick() // worker 1 silent for 4 ticks > 3
	aborts := find(outs, proto.CmdAbort)
	if len(aborts) != 2 {
		t.Fatalf("aborts: %+v", outs)
	}
	var a proto.Abort
	proto.Decode(aborts[0].M, &a)
	if a.Node != proto.WorkerID(1) {
		t.Fatalf("abort names %d", a.Node)
	}
	ended, err := c.Ended()
	var ne *proto.NodeError
	if !ended || !errors.As(err, &ne) || ne.ID != proto.WorkerID(1) || !strings.Contains(err.Error(), "worker 1") {
		t.Fatalf("ended %v err %v", ended, err)
	}
}

func TestLinkDownAndDone(t *testing.T) {
	c := started(t)
	outs := c.Down(&transport.PeerError{Peer: proto.ServerID(0), Op: "recv", Err: transport.ErrPeerClosed})
	if len(find(outs, proto.CmdAbort)) != 2 {
		t.Fatalf("down: %+v", outs)
	}
	if _, err := c.Ended(); !strings.Contains(err.Error(), "server 0") {
		t.Fatalf("err %v", err)
	}

	c = started(t)
	c.Handle(msg(proto.WorkerID(0), proto.CmdDone, proto.Done{}))
	if ended, _ := c.Ended(); ended {
		t.Fatal("ended with a worker still running")
	}
	outs = c.Handle(msg(proto.WorkerID(1), proto.CmdDone, proto.Done{}))
	if ended, err := c.Ended(); !ended || err != nil || len(find(outs, proto.CmdShutdown)) != 3 {
		t.Fatalf("ended %v err %v outs %+v", ended, err, outs)
	}
	// Link failures after the end are the nodes leaving.
	if outs := c.Down(&transport.PeerError{Peer: proto.ServerID(0), Err: transport.ErrPeerClosed}); len(outs) != 0 {
		t.Fatalf("down after the end: %+v", outs)
	}

	c = started(t)
	outs = c.Handle(msg(proto.WorkerID(1), proto.CmdDone, proto.Done{Err: "diverged"}))
	if _, err := c.Ended(); err == nil || !strings.Contains(err.Error(), "worker 1") || !strings.Contains(err.Error(), "diverged") {
		t.Fatalf("failed worker: %v", err)
	}
}

func TestBarrier(t *testing.T) {
	c := started(t)
	if outs := c.Handle(msg(proto.WorkerID(0), proto.CmdBarrier, proto.Barrier{Group: "workers", Seq: 1})); len(outs) != 0 {
		t.Fatalf("released early: %+v", outs)
	}
	outs := c.Handle(msg(proto.WorkerID(1), proto.CmdBarrier, proto.Barrier{Group: "workers", Seq: 1}))
	if r := find(outs, proto.CmdRelease); len(r) != 2 {
		t.Fatalf("release: %+v", outs)
	}
	c.Handle(msg(proto.ServerID(0), proto.CmdBarrier, proto.Barrier{Group: "workers", Seq: 1}))
	if logs := c.Logs(); len(logs) != 1 {
		t.Fatalf("a server joined the workers' barrier: %q", logs)
	}
}

// TestBarrierSubgroup interleaves the workers' barriers with those of
// their subgroup "workers/checkpoint": each group counts its own numbers
// and is released on its own, and a server may not join the subgroup.
func TestBarrierSubgroup(t *testing.T) {
	c := started(t)
	sub := "workers/checkpoint"
	c.Handle(msg(proto.WorkerID(0), proto.CmdBarrier, barrierVals(sub, 1, 2)))
	c.Handle(msg(proto.WorkerID(0), proto.CmdBarrier, proto.Barrier{Group: "workers", Seq: 1}))
	outs := c.Handle(msg(proto.WorkerID(1), proto.CmdBarrier, proto.Barrier{Group: "workers", Seq: 1}))
	if r := find(outs, proto.CmdRelease); len(r) != 2 {
		t.Fatalf("the workers' barrier, while the subgroup's waits: %+v", outs)
	}
	outs = c.Handle(msg(proto.WorkerID(1), proto.CmdBarrier, barrierVals(sub, 1, 3)))
	rel := find(outs, proto.CmdRelease)
	if len(rel) != 2 {
		t.Fatalf("the subgroup's barrier: %+v", outs)
	}
	for _, o := range rel {
		var b proto.Barrier
		proto.Decode(o.M, &b)
		if got := b.Values(nil); b.Group != sub || b.Seq != 1 || len(got) != 1 || got[0] != 5 {
			t.Fatalf("%s got %+v (values %v), want group %s barrier 1 summing to 5", proto.Name(o.To), b, got, sub)
		}
	}
	c.Handle(msg(proto.ServerID(0), proto.CmdBarrier, proto.Barrier{Group: sub, Seq: 2}))
	if logs := c.Logs(); len(logs) != 1 || !strings.Contains(logs[0], `cannot join barrier group "workers/checkpoint"`) {
		t.Fatalf("a server joined the workers' subgroup: %q", logs)
	}
}

func TestStartTimeout(t *testing.T) {
	c := newCore(t, 1, 1)
	join(t, c, 1, proto.RoleServer, -1)
	for range 10 {
		c.Tick()
		c.Handle(msg(proto.ServerID(0), proto.CmdHeartbeat, nil))
	}
	outs := c.Tick()
	if ended, err := c.Ended(); !ended || !strings.Contains(err.Error(), "1 of 2 nodes registered") {
		t.Fatalf("ended %v err %v", ended, err)
	}
	if len(find(outs, proto.CmdAbort)) != 1 {
		t.Fatalf("the ready server was not told: %+v", outs)
	}
}

func TestValidate(t *testing.T) {
	for _, f := range []func(*Config){
		func(c *Config) { c.NumServers = 0 },
		func(c *Config) { c.NumWorkers = -1 },
		func(c *Config) { c.Heartbeat = 0 },
		func(c *Config) { c.Timeout = c.Heartbeat },
		func(c *Config) { c.Width = -1 },
	} {
		c := DefaultConfig()
		f(&c)
		if err := c.Validate(); err == nil {
			t.Errorf("%+v valid", c)
		}
	}
}

// barrierVals returns a Barrier message body carrying vals.
func barrierVals(group string, seq uint64, vals ...float64) proto.Barrier {
	b := proto.Barrier{Group: group, Seq: seq}
	b.SetValues(vals)
	return b
}

// TestAllReduce checks that the release carries the sum added in
// ascending node id order whatever the arrival order: 1e16 + 1 − 1e16 is
// 0 in that order and would be 1 in another. It also checks NaN and
// infinities pass, and that every member gets the same sum.
func TestAllReduce(t *testing.T) {
	c := newCore(t, 1, 3)
	join(t, c, 1, proto.RoleServer, -1)
	for i := range 3 {
		join(t, c, uint32(2+i), proto.RoleWorker, -1)
	}
	vals := map[transport.NodeID][]float64{
		proto.WorkerID(0): {1e16, math.Inf(1), 1},
		proto.WorkerID(1): {1, 2, math.NaN()},
		proto.WorkerID(2): {-1e16, 3, 2},
	}
	for seq, order := range [][]int{{2, 0, 1}, {1, 2, 0}} {
		var outs []Out
		for _, w := range order {
			id := proto.WorkerID(w)
			outs = c.Handle(msg(id, proto.CmdBarrier, barrierVals("workers", uint64(seq+1), vals[id]...)))
		}
		rel := find(outs, proto.CmdRelease)
		if len(rel) != 3 {
			t.Fatalf("release: %+v", outs)
		}
		for _, o := range rel {
			var b proto.Barrier
			proto.Decode(o.M, &b)
			got := b.Values(nil)
			// ((1e16 + 1) + −1e16) = 0 in float64; +Inf; NaN.
			if b.Seq != uint64(seq+1) || len(got) != 3 || got[0] != 0 || !math.IsInf(got[1], 1) || !math.IsNaN(got[2]) {
				t.Fatalf("order %v: %s got %v", order, proto.Name(o.To), got)
			}
		}
	}
	// A plain barrier still releases with no values.
	var outs []Out
	for w := range 3 {
		outs = c.Handle(msg(proto.WorkerID(w), proto.CmdBarrier, proto.Barrier{Group: "workers", Seq: 3}))
	}
	if rel := find(outs, proto.CmdRelease); len(rel) != 3 || strings.Contains(string(rel[0].M.Body), "Bits") {
		t.Fatalf("plain release: %+v", outs)
	}
}

// TestAllReduceLengthMismatch checks that members sending different
// numbers of values end the job with an Abort to every node, the
// offending one included, naming it and both lengths.
func TestAllReduceLengthMismatch(t *testing.T) {
	c := started(t)
	c.Handle(msg(proto.WorkerID(1), proto.CmdBarrier, barrierVals("workers", 1, 1, 2, 3)))
	outs := c.Handle(msg(proto.WorkerID(0), proto.CmdBarrier, barrierVals("workers", 1, 1, 2)))
	if len(find(outs, proto.CmdRelease)) != 0 {
		t.Fatalf("released: %+v", outs)
	}
	aborts := find(outs, proto.CmdAbort)
	if len(aborts) != 3 {
		t.Fatalf("aborts: %+v", outs)
	}
	var a proto.Abort
	proto.Decode(aborts[0].M, &a)
	want := `all-reduce 1 of group "workers": worker 1 sent 3 values, worker 0 sent 2`
	if a.Node != proto.WorkerID(1) || a.Reason != want {
		t.Fatalf("abort %+v, want node %d and %q", a, proto.WorkerID(1), want)
	}
	if ended, err := c.Ended(); !ended || !strings.Contains(err.Error(), want) {
		t.Fatalf("ended %v err %v", ended, err)
	}
}

// TestEvaluator: an evaluator is part of the start (the job waits for
// it) but of no barrier; when the workers are done it alone is told so,
// and the job ends when it is done too.
func TestEvaluator(t *testing.T) {
	cfg := DefaultConfig()
	cfg.NumServers, cfg.NumWorkers, cfg.NumEvaluators, cfg.Token = 1, 2, 1, "tok"
	c, err := NewCore(cfg)
	if err != nil {
		t.Fatal(err)
	}
	join(t, c, 1, proto.RoleServer, -1)
	join(t, c, 2, proto.RoleWorker, -1)
	_, outs := join(t, c, 3, proto.RoleWorker, -1)
	if len(find(outs, proto.CmdStart)) != 0 || c.Running() {
		t.Fatal("the job started without its evaluator")
	}
	ev, outs := join(t, c, 4, proto.RoleEvaluator, -1)
	if ev.Worker != proto.EvaluatorID(0) || ev.Server != 0 || len(find(outs, proto.CmdStart)) != 4 {
		t.Fatalf("evaluator %+v, %d starts", ev, len(find(outs, proto.CmdStart)))
	}
	if role, rank := proto.Identify(ev.Worker); role != proto.RoleEvaluator || rank != 0 || proto.Name(ev.Worker) != "evaluator 0" {
		t.Fatalf("evaluator id %d is %v %d", ev.Worker, role, rank)
	}
	// A second evaluator has no rank.
	outs = c.Handle(msg(proto.Provisional(5), proto.CmdRegister, proto.Register{Role: proto.RoleEvaluator, Token: proto.TokenDigest("tok"), Addr: "e", Rank: -1}))
	if len(find(outs, proto.CmdRefuse)) != 1 {
		t.Fatalf("second evaluator: %+v", outs)
	}
	// The workers' barrier is theirs alone.
	outs = c.Handle(msg(ev.Worker, proto.CmdBarrier, proto.Barrier{Group: "workers", Seq: 1}))
	if len(outs) != 0 {
		t.Fatalf("evaluator at a barrier: %+v", outs)
	}
	c.Handle(msg(proto.WorkerID(0), proto.CmdBarrier, proto.Barrier{Group: "workers", Seq: 1}))
	if outs = c.Handle(msg(proto.WorkerID(1), proto.CmdBarrier, proto.Barrier{Group: "workers", Seq: 1})); len(find(outs, proto.CmdRelease)) != 2 {
		t.Fatalf("workers' barrier: %+v", outs)
	}
	c.Handle(msg(proto.WorkerID(0), proto.CmdDone, proto.Done{}))
	outs = c.Handle(msg(proto.WorkerID(1), proto.CmdDone, proto.Done{}))
	tr := find(outs, proto.CmdTrained)
	if len(tr) != 1 || tr[0].To != ev.Worker || len(find(outs, proto.CmdShutdown)) != 0 {
		t.Fatalf("workers done: %+v", outs)
	}
	if ended, _ := c.Ended(); ended {
		t.Fatal("the job ended before its evaluator")
	}
	outs = c.Handle(msg(ev.Worker, proto.CmdDone, proto.Done{}))
	if len(find(outs, proto.CmdShutdown)) != 4 {
		t.Fatalf("evaluator done: %+v", outs)
	}
	if ended, err := c.Ended(); !ended || err != nil {
		t.Fatalf("ended %v, %v", ended, err)
	}
}

// TestEvaluatorFails: an evaluator's Done with an error fails the job,
// naming it.
func TestEvaluatorFails(t *testing.T) {
	cfg := DefaultConfig()
	cfg.NumServers, cfg.NumWorkers, cfg.NumEvaluators, cfg.Token = 1, 1, 1, "tok"
	c, err := NewCore(cfg)
	if err != nil {
		t.Fatal(err)
	}
	join(t, c, 1, proto.RoleMachine, -1)
	ev, _ := join(t, c, 2, proto.RoleEvaluator, -1)
	outs := c.Handle(msg(ev.Worker, proto.CmdDone, proto.Done{Err: "scoring: NaN"}))
	if len(find(outs, proto.CmdAbort)) != 2 {
		t.Fatalf("outs %+v", outs)
	}
	_, err = c.Ended()
	var ne *proto.NodeError
	if !errors.As(err, &ne) || ne.ID != ev.Worker || !strings.Contains(err.Error(), "evaluator 0") {
		t.Fatalf("err %v", err)
	}
}

// TestValidateHeartbeat: a heartbeat below MinHeartbeat is refused with
// the bound (1 ns used to make a scheduler that could send nothing).
func TestValidateHeartbeat(t *testing.T) {
	c := DefaultConfig()
	c.Heartbeat, c.Timeout = time.Nanosecond, 2*time.Nanosecond
	if err := c.Validate(); err == nil || err.Error() != "sched: Heartbeat 1ns, at least 1ms" {
		t.Fatalf("Validate: %v", err)
	}
	c.Heartbeat, c.Timeout = MinHeartbeat, 2*MinHeartbeat
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
}

// TestRefusalsRateLimited: a flood of bad registrations logs
// proto.RefusalBurst refusals, quoting the stranger's address, and one
// count of the rest at the first tick after proto.RefusalPeriod; every
// registration is still refused.
func TestRefusalsRateLimited(t *testing.T) {
	cfg := testConfig(1, 1)
	cfg.StartTimeout = time.Hour
	c := coreOf(t, cfg)
	const flood = 100
	forged := "b\nscheduler: worker 0 failed"
	for i := range flood {
		outs := c.Handle(msg(proto.Provisional(uint32(2+i)), proto.CmdRegister, proto.Register{Role: proto.RoleMachine, Token: "bad", Addr: forged, Rank: -1}))
		if len(find(outs, proto.CmdRefuse)) != 1 {
			t.Fatalf("registration %d not refused: %+v", i, outs)
		}
	}
	logs := c.Logs()
	if len(logs) != proto.RefusalBurst {
		t.Fatalf("%d lines for %d refusals, want %d: %q", len(logs), flood, proto.RefusalBurst, logs)
	}
	if want := `refused machine at "b\nscheduler: worker 0 failed": `; !strings.HasPrefix(logs[0], want) {
		t.Errorf("log %q, want it to start %q", logs[0], want)
	}
	period := c.cfg.Ticks(proto.RefusalPeriod)
	for range period - 1 {
		c.Tick()
	}
	if logs := c.Logs(); len(logs) != 0 {
		t.Fatalf("before the period ended: %q", logs)
	}
	c.Tick()
	want := fmt.Sprintf("suppressed %d more refusals in %v", flood-proto.RefusalBurst, proto.RefusalPeriod)
	if logs := c.Logs(); !slices.Contains(logs, want) {
		t.Fatalf("after the period: %q, want %q", logs, want)
	}
}
