package sched

import (
	"slices"
	"strings"
	"testing"
	"time"

	"colo/ps/proto"
	"colo/transport"
)

// replicated starts a job of 3 servers and 2 workers in processes of
// their own, with one backup per server, and the machines given.
func replicated(t *testing.T, recoverWait time.Duration) *Core {
	t.Helper()
	cfg := testConfig(3, 2)
	cfg.Replicas, cfg.RecoverWait = 1, recoverWait
	c := coreOf(t, cfg)
	for i := range 3 {
		join(t, c, uint32(10+i), proto.RoleServer, i)
	}
	join(t, c, 20, proto.RoleWorker, 0)
	if _, outs := join(t, c, 21, proto.RoleWorker, 1); len(find(outs, proto.CmdStart)) != 5 {
		t.Fatalf("no start: %+v", outs)
	}
	return c
}

// TestFailoverByHand walks a server's failover: its link fails, every
// other node is told that server 2 takes its ranges over, the job is not
// paused; once server 2's new endpoint for server 1 is ready everyone
// gets its address; a late failure of the old link is ignored; server 2
// failing then has its ranges taken over by server 0, but server 1's,
// now on server 2's process, are in no copy: the job ends.
func TestFailoverByHand(t *testing.T) {
	c := replicated(t, 0)
	outs := c.Down(&transport.PeerError{Peer: proto.ServerID(1), Addr: "real", Err: transport.ErrPeerClosed})
	fs := decoded[proto.Failover](t, outs, proto.CmdFailover)
	if _, told := fs[proto.ServerID(1)]; len(fs) != 4 || told {
		t.Fatalf("failover told to %v, want the 4 others", fs)
	}
	if f := fs[proto.WorkerID(0)]; f.Server != 1 || f.Backup != 2 || f.Addr != "" || f.Seq != 1 {
		t.Fatalf("failover %+v", f)
	}
	if p, _ := c.Paused(); p || !c.Running() {
		t.Fatal("the job paused")
	}
	outs = c.Handle(msg(proto.ServerID(1), proto.CmdReady, proto.Ready{Addr: "taken"}))
	fs = decoded[proto.Failover](t, outs, proto.CmdFailover)
	if len(fs) != 5 {
		t.Fatalf("new address told to %v, want all 5", fs)
	}
	if f := fs[proto.WorkerID(1)]; f.Server != 1 || f.Backup != 2 || f.Addr != "taken" || f.Seq != 1 {
		t.Fatalf("failover %+v", f)
	}
	if outs := c.Down(&transport.PeerError{Peer: proto.ServerID(1), Addr: "real", Err: transport.ErrPeerClosed}); len(outs) != 0 {
		t.Fatalf("late link failure: %+v", outs)
	}
	if ended, _ := c.Ended(); ended {
		t.Fatal("ended")
	}
	// Server 2's process dies: server 2's ranges go to server 0, server
	// 1's have no copy left.
	outs = c.Down(&transport.PeerError{Peer: proto.ServerID(2), Addr: "real", Err: transport.ErrPeerClosed})
	if fs := decoded[proto.Failover](t, outs, proto.CmdFailover); fs[proto.WorkerID(0)].Backup != 0 {
		t.Fatalf("second failover %v", fs)
	}
	if ended, err := c.Ended(); !ended || !strings.Contains(err.Error(), "server 1") {
		t.Fatalf("ended %v, %v: want the end naming server 1", ended, err)
	}
	if n := len(c.Failovers()); n != 2 {
		t.Errorf("%d failovers, want 2", n)
	}
}

// TestBackupByHand walks the making of new copies after a failover:
// once server 2's process serves server 1's ranges, the scheduler asks
// it for a copy of them on server 0, and server 0 for a copy of its own
// on server 2 (its backup was server 1's process); a report of a copy
// not asked for is ignored; once server 0 reports server 1's copy in
// place, server 2's process dying fails both its ranks over to server
// 0, with no pause and no end.
func TestBackupByHand(t *testing.T) {
	c := replicated(t, 0)
	c.Down(&transport.PeerError{Peer: proto.ServerID(1), Addr: "real", Err: transport.ErrPeerClosed})
	outs := c.Handle(msg(proto.ServerID(1), proto.CmdReady, proto.Ready{Addr: "taken"}))
	bs := decoded[proto.Backup](t, outs, proto.CmdBackup)
	want := map[transport.NodeID]proto.Backup{proto.ServerID(0): {Server: 0, Backup: 2, Seq: 1}, proto.ServerID(1): {Server: 1, Backup: 0, Seq: 1}}
	if len(bs) != len(want) || bs[proto.ServerID(0)] != want[proto.ServerID(0)] || bs[proto.ServerID(1)] != want[proto.ServerID(1)] {
		t.Fatalf("backups asked %v, want %v", bs, want)
	}
	if cp := c.Copies(1); len(cp) != 0 {
		t.Fatalf("server 1's copies %v before any is in place", cp)
	}
	c.Handle(msg(proto.ServerID(2), proto.CmdBackedUp, proto.Backup{Server: 1, Backup: 0}))
	if b := c.BackedUp(); len(b) != 0 {
		t.Fatalf("a copy reported by another server than the one asked counted: %v", b)
	}
	c.Handle(msg(proto.ServerID(0), proto.CmdBackedUp, proto.Backup{Server: 1, Backup: 0}))
	if b := c.BackedUp(); len(b) != 1 || b[0] != (proto.Backup{Server: 1, Backup: 0}) {
		t.Fatalf("backed up %v", b)
	}
	if cp := c.Copies(1); len(cp) != 1 || cp[0] != 0 {
		t.Fatalf("server 1's copies %v, want [0]", cp)
	}
	outs = c.Down(&transport.PeerError{Peer: proto.ServerID(2), Addr: "real", Err: transport.ErrPeerClosed})
	got := map[int]int{}
	for _, o := range outs {
		var f proto.Failover
		if o.To == proto.WorkerID(0) && o.M.Cmd == proto.CmdFailover && proto.Decode(o.M, &f) == nil {
			got[f.Server] = f.Backup
		}
	}
	if len(got) != 2 || got[1] != 0 || got[2] != 0 {
		t.Fatalf("failovers told to worker 0: %v, want servers 1 and 2 to server 0", got)
	}
	if ended, err := c.Ended(); ended {
		t.Fatalf("ended: %v", err)
	}
	if p, _ := c.Paused(); p {
		t.Fatal("paused")
	}
	if n := len(c.Failovers()); n != 3 {
		t.Errorf("%d failovers, want 3", n)
	}
}

// TestFailoverNeedsAServerAlone: a server that fails with a worker (a
// machine) is replaced (a pause), or ends the job without recovery.
func TestFailoverNeedsAServerAlone(t *testing.T) {
	cfg := testConfig(2, 2)
	cfg.Replicas = 1
	c := coreOf(t, cfg)
	join(t, c, 1, proto.RoleMachine, 0)
	join(t, c, 2, proto.RoleMachine, 1)
	outs := c.Down(&transport.PeerError{Peer: proto.ServerID(1), Addr: "real", Err: transport.ErrPeerClosed})
	if len(find(outs, proto.CmdFailover)) != 0 || len(find(outs, proto.CmdAbort)) == 0 {
		t.Fatalf("machine's server failed: %+v", outs)
	}
}

func TestValidateReplicas(t *testing.T) {
	cfg := DefaultConfig()
	cfg.NumServers, cfg.Replicas = 2, 2
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "Replicas 2 out of range [0, 1]") {
		t.Errorf("Replicas 2 of 2 servers: %v", err)
	}
	cfg.Replicas = 1
	if err := cfg.Validate(); err != nil {
		t.Error(err)
	}
}

// TestRollbackRecopiesLive walks a rollback after a failover: server 0's
// process dies and server 1 takes its ranges over; before the new copies
// asked then are in place (of server 0's ranges on server 2, of server
// 2's on server 1), server 2's process dies with no copy of its own
// ranges left, and the job pauses for its replacement. Server 2's chain
// is server 0's rank, whose process is gone: the replacement is told so
// (Assign.Moved, the failovers so far), its ranges count no copy, and
// once the job resumes the scheduler asks for one on server 1. The copy
// of server 0's ranges that server 1's process was making on server 2
// goes on being made on the replacement (Assign.Held), counted once the
// replacement reports it. With the copies in place, server 2's process
// dying again fails over to server 1, with no pause.
func TestRollbackRecopiesLive(t *testing.T) {
	c := replicated(t, 10*time.Second)
	c.Down(&transport.PeerError{Peer: proto.ServerID(0), Addr: "real", Err: transport.ErrPeerClosed})
	c.Handle(msg(proto.ServerID(0), proto.CmdReady, proto.Ready{Addr: "taken"}))
	c.Down(&transport.PeerError{Peer: proto.ServerID(2), Addr: "real", Err: transport.ErrPeerClosed})
	if p, _ := c.Paused(); !p {
		t.Fatalf("server 2 with no copy left: not paused: %q", c.Logs())
	}
	outs := c.Handle(msg(proto.Provisional(50), proto.CmdRegister, proto.Register{Role: proto.RoleServer, Token: proto.TokenDigest("tok"), Addr: "new", Rank: 2, Recover: true}))
	as := decoded[proto.Assign](t, outs, proto.CmdAssign)
	a, ok := as[proto.Provisional(50)]
	if !ok || a.Failovers != 1 || !slices.Equal(a.Moved, []int{0}) || !slices.Equal(a.Held, []int{0}) {
		t.Fatalf("the replacement's assignment %+v (ok %v), want 1 failover, server 0 moved, a copy of server 0 held", a, ok)
	}
	if cp := c.Copies(2); len(cp) != 0 {
		t.Fatalf("server 2's copies %v after its replacement, want none: server 0's process failed over", cp)
	}
	outs = c.Handle(msg(proto.ServerID(2), proto.CmdReady, proto.Ready{Addr: "new"}))
	if p, _ := c.Paused(); p {
		t.Fatal("not resumed")
	}
	bs := decoded[proto.Backup](t, outs, proto.CmdBackup)
	if want := (proto.Backup{Server: 2, Backup: 1, Seq: 1}); len(bs) != 1 || bs[proto.ServerID(2)] != want {
		t.Fatalf("copies asked at the resume %v, want %v alone", bs, want)
	}
	c.Handle(msg(proto.ServerID(2), proto.CmdBackedUp, proto.Backup{Server: 0, Backup: 2}))
	c.Handle(msg(proto.ServerID(1), proto.CmdBackedUp, proto.Backup{Server: 2, Backup: 1}))
	if b := c.BackedUp(); len(b) != 2 {
		t.Fatalf("copies told %v, want 2", b)
	}
	if cp0, cp2 := c.Copies(0), c.Copies(2); !slices.Equal(cp0, []int{2}) || !slices.Equal(cp2, []int{1}) {
		t.Fatalf("copies of server 0's ranges %v, of server 2's %v: want [2] and [1]", cp0, cp2)
	}
	outs = c.Down(&transport.PeerError{Peer: proto.ServerID(2), Addr: "new", Err: transport.ErrPeerClosed})
	if fs := decoded[proto.Failover](t, outs, proto.CmdFailover); fs[proto.WorkerID(0)].Server != 2 || fs[proto.WorkerID(0)].Backup != 1 || fs[proto.WorkerID(0)].Seq != 2 {
		t.Fatalf("server 2's process dies again: failovers %v, want server 2 to server 1 (the second)", fs)
	}
	if p, _ := c.Paused(); p {
		t.Fatal("paused")
	}
	if ended, err := c.Ended(); ended {
		t.Fatalf("ended: %v", err)
	}
}
