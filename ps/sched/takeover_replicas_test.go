package sched

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"colo/ps/proto"
	"colo/transport"
)

// failedOverReports are the reports of a job of 3 servers and 2 workers
// in processes of their own, one copy each, after server 1's process
// failed over to server 2's and the new copies are in place (server 0
// holds server 1's, served by server 2's process, and server 2 holds
// server 0's, whose backup died), then its scheduler died.
func failedOverReports() []proto.Rejoin {
	rep := func(machine int, ms ...proto.RejoinMember) proto.Rejoin {
		return proto.Rejoin{Token: proto.TokenDigest("tok"), Host: "h", Machine: machine, Failovers: 1, Announced: 1, Members: ms}
	}
	return []proto.Rejoin{
		rep(0, proto.RejoinMember{ID: proto.ServerID(0), Addr: "s0", Backups: []int{2}, Copies: []int{1, 2}}),
		rep(2, proto.RejoinMember{ID: proto.ServerID(2), Addr: "s2", Backups: []int{0}, Copies: []int{0}},
			proto.RejoinMember{ID: proto.ServerID(1), Addr: "taken1", Moved: true, Backups: []int{0}}),
		rep(3, proto.RejoinMember{ID: proto.WorkerID(0), Addr: "w0"}),
		rep(4, proto.RejoinMember{ID: proto.WorkerID(1), Addr: "w1"}),
	}
}

// TestRebuildReplicas checks the replicated ranges a takeover rebuilds
// from the reports of a job whose server failed over, and the reports
// it refuses (checked by hand against the failover's protocol).
func TestRebuildReplicas(t *testing.T) {
	cfg := DefaultConfig()
	cfg.NumServers, cfg.NumWorkers, cfg.Replicas = 3, 2, 1
	with := func(f func(rs []proto.Rejoin)) []proto.Rejoin {
		rs := failedOverReports()
		f(rs)
		return rs
	}
	for _, tc := range []struct {
		name    string
		reports []proto.Rejoin
		err     string
		holders []int
		copies  [][]int
		making  []proto.Backup
	}{
		{name: "copies in place", reports: failedOverReports(),
			holders: []int{0, 2, 2}, copies: [][]int{{2}, {0}, {0}}},
		{name: "a copy on its way", reports: with(func(rs []proto.Rejoin) { rs[0].Members[0].Copies = []int{2} }),
			holders: []int{0, 2, 2}, copies: [][]int{{2}, nil, {0}}, making: []proto.Backup{{Server: 1, Backup: 0, Seq: 1}}},
		{name: "a copy asked for, not sent", reports: with(func(rs []proto.Rejoin) {
			rs[0].Members[0].Copies = []int{2}
			rs[1].Members[1].Backups, rs[1].Members[1].Joining = nil, []int{0}
		}), holders: []int{0, 2, 2}, copies: [][]int{{2}, nil, {0}}, making: []proto.Backup{{Server: 1, Backup: 0, Seq: 1}}},
		{name: "a copy left behind does not count", reports: with(func(rs []proto.Rejoin) { rs[1].Members[0].Copies = []int{0, 1} }),
			holders: []int{0, 2, 2}, copies: [][]int{{2}, {0}, {0}}},
		{name: "a failover half announced", reports: with(func(rs []proto.Rejoin) { rs[3].Announced = 2 }),
			err: "the node of worker 1 was told of failover 2 of replicated key ranges without the address of the server taking over: the scheduler died while announcing it"},
		{name: "failover counts differ", reports: with(func(rs []proto.Rejoin) { rs[2].Failovers, rs[2].Announced = 0, 0 }),
			err: "the node of worker 0 was told of 0 failovers of replicated key ranges, the node of server 0 of 1"},
		{name: "served twice", reports: with(func(rs []proto.Rejoin) {
			rs[0].Members = append(rs[0].Members, proto.RejoinMember{ID: proto.ServerID(1), Addr: "taken1", Moved: true})
		}), err: "server 1 is served by the node of server 0 and by the node of server 2"},
		{name: "replicated to a server failed over", reports: with(func(rs []proto.Rejoin) { rs[0].Members[0].Backups = []int{1} }),
			err: "the node of server 0 replicates server 0's ranges to server 1 (a backup), whose process failed over to server 2's"},
		{name: "replicated to no server", reports: with(func(rs []proto.Rejoin) { rs[0].Members[0].Backups = []int{7} }),
			err: "not a backup of a job of 3 servers"},
		{name: "a worker taken over", reports: with(func(rs []proto.Rejoin) { rs[2].Members[0].Moved = true }),
			err: "reports worker 0 as a server it took over"},
		{name: "taken over by a node with no server", reports: with(func(rs []proto.Rejoin) {
			rs[2].Members = append(rs[2].Members, proto.RejoinMember{ID: proto.ServerID(1), Addr: "taken1", Moved: true})
			rs[1].Members = rs[1].Members[:1]
		}), err: "reports serving server 1 with no server of its own"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rb := rebuilt(t, cfg, tc.reports, tc.err)
			if rb == nil {
				return
			}
			if rb.Failovers != 1 || !slices.Equal(rb.Holders, tc.holders) || !slices.Equal(rb.Rebuilding, tc.making) || len(rb.Missing) != 0 {
				t.Fatalf("failovers %d, holders %v, making %v, missing %v; want 1, %v, %v, none", rb.Failovers, rb.Holders, rb.Rebuilding, rb.Missing, tc.holders, tc.making)
			}
			for p := range tc.copies {
				if !slices.Equal(rb.Copies[p], tc.copies[p]) {
					t.Fatalf("copies %v, want %v", rb.Copies, tc.copies)
				}
			}
		})
	}
}

// takeoverReplicated returns a core that takes over the job of
// failedOverReports (one copy a server, a recovery wait).
func takeoverReplicated(t *testing.T) *Core {
	t.Helper()
	cfg := testConfig(3, 2)
	cfg.Takeover, cfg.Replicas, cfg.RecoverWait = true, 1, 10*time.Second
	return coreOf(t, cfg)
}

// TestTakeoverAfterFailover walks a takeover of a job whose server 1
// failed over to server 2's process, the new copy of server 1's ranges
// on its way to server 0: the job goes on with server 1 served by
// server 2's process, the copy counts once server 0 reports it, is
// told to the driver once however often the node tells it, and the
// death of server 2's process then fails both its ranks over to server
// 0, numbered after the failover before the takeover, with no pause.
func TestTakeoverAfterFailover(t *testing.T) {
	c := takeoverReplicated(t)
	rs := failedOverReports()
	rs[0].Members[0].Copies = []int{2}
	var outs []Out
	for i, r := range rs {
		outs = c.Handle(msg(proto.Provisional(uint32(70+i)), proto.CmdRejoin, r))
	}
	if !c.Running() {
		t.Fatalf("not taken over: %q", c.Logs())
	}
	if an := find(outs, proto.CmdRejoined); len(an) != 5 {
		t.Fatalf("answers %+v, want 5 (server 1 at its new address)", an)
	}
	if len(find(outs, proto.CmdBackup)) != 0 {
		t.Fatalf("a copy asked again while one is on its way: %+v", outs)
	}
	if cp := c.Copies(1); len(cp) != 0 {
		t.Fatalf("server 1's copies %v before the copy is in place", cp)
	}
	c.Handle(msg(proto.ServerID(0), proto.CmdBackedUp, proto.Backup{Server: 1, Backup: 0}))
	if cp, b := c.Copies(1), c.BackedUp(); !slices.Equal(cp, []int{0}) || len(b) != 1 {
		t.Fatalf("server 1's copies %v, told %v: want [0], once", cp, b)
	}
	c.Handle(msg(proto.ServerID(0), proto.CmdBackedUp, proto.Backup{Server: 1, Backup: 0}))
	if b := c.BackedUp(); len(b) != 0 {
		t.Fatalf("a copy told twice: %v", b)
	}
	outs = c.Down(&transport.PeerError{Peer: proto.ServerID(2), Addr: "s2", Err: transport.ErrPeerClosed})
	got := map[int][2]int{}
	for _, o := range outs {
		var f proto.Failover
		if o.To == proto.WorkerID(0) && o.M.Cmd == proto.CmdFailover && proto.Decode(o.M, &f) == nil {
			got[f.Server] = [2]int{f.Backup, f.Seq}
		}
	}
	if len(got) != 2 || got[2] != [2]int{0, 2} || got[1] != [2]int{0, 3} {
		t.Fatalf("failovers told to worker 0: %v, want servers 2 and 1 to server 0, numbered 2 and 3", got)
	}
	if p, _ := c.Paused(); p {
		t.Fatal("paused")
	}
	if ended, err := c.Ended(); ended {
		t.Fatalf("ended: %v", err)
	}
}

// TestTakeoverAfterFailoverUnsettled: a node that had the first
// announcement of a failover and not the second (the dead scheduler's
// last message, read after its link failed, may come later) makes the
// reports disagree: the takeover waits for its next report, and takes
// the job over once it agrees; when no report mends it by the
// takeover's deadline, the job ends naming why, for the launcher's
// whole-job restart.
func TestTakeoverAfterFailoverUnsettled(t *testing.T) {
	for _, mended := range []bool{true, false} {
		c := takeoverReplicated(t)
		rs := failedOverReports()
		late := rs[3]
		rs[3].Failovers = 0
		for i, r := range rs {
			c.Handle(msg(proto.Provisional(uint32(70+i)), proto.CmdRejoin, r))
		}
		if ended, _ := c.Ended(); ended || c.Running() {
			t.Fatalf("the reports disagree: ended %v, running %v, want waiting", ended, c.Running())
		}
		if mended {
			c.Handle(msg(proto.Provisional(73), proto.CmdRejoin, late))
			if !c.Running() {
				t.Fatalf("the report mended: not taken over: %q", c.Logs())
			}
			continue
		}
		var outs []Out
		for range 5 {
			outs = append(outs, c.Tick()...)
		}
		ended, err := c.Ended()
		if !ended || err == nil || !strings.Contains(err.Error(), "cannot be taken over") || !strings.Contains(err.Error(), "died while announcing") {
			t.Fatalf("ended %v, %v: want the end naming the half-announced failover", ended, err)
		}
		if len(find(outs, proto.CmdAbort)) != 5 {
			t.Fatalf("aborts %+v, want one to each of the 5 members", find(outs, proto.CmdAbort))
		}
	}
}

// FuzzRejoinReplicas feeds a takeover of the job of failedOverReports
// the reports with one replaced by arbitrary bytes: no panic, and a job
// taken over has every server served by a live process of its own rank
// and no copy on the process serving the ranges.
func FuzzRejoinReplicas(f *testing.F) {
	for i, r := range failedOverReports() {
		b, err := json.Marshal(r)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, uint8(i))
	}
	f.Add([]byte(`{"Token":"x","Members":[{"ID":1,"Moved":true,"Backups":[-1,99]}]}`), uint8(1))
	f.Fuzz(func(t *testing.T, body []byte, which uint8) {
		c := takeoverReplicated(t)
		rs := failedOverReports()
		for i, r := range rs {
			m := msg(proto.Provisional(uint32(70+i)), proto.CmdRejoin, r)
			if i == int(which)%len(rs) {
				m.Body = body
			}
			c.Handle(m)
		}
		if c.Running() {
			checkServed(t, c)
		}
		for range 5 {
			c.Tick() // the members fall silent: failovers, or the end
		}
	})
}

// checkServed fails unless every server of c is served by a live process of
// its own rank, with no copy on that process.
func checkServed(t *testing.T, c *Core) {
	t.Helper()
	for p, h := range c.holders {
		if m := c.members[proto.ServerID(h)]; h < 0 || h >= len(c.holders) || c.holders[h] != h || m == nil || m.moved {
			t.Fatalf("server %d's ranges served by server %d's process, which does not run its own rank: holders %v", p, h, c.holders)
		}
		if slices.Contains(c.copies[p], h) {
			t.Fatalf("server %d's ranges copied on the process serving them: %v", p, c.copies)
		}
	}
}
