package sched

import (
	"fmt"
	"testing"

	"colo/ps/proto"
)

// TestRankRefusals checks that a node refused a rank is told why, by
// hand: the rank it asked for is taken (and by the node that registered
// from which address), out of the job's range, or, asking for any, every
// rank of its role is taken.
func TestRankRefusals(t *testing.T) {
	c := newCore(t, 1, 2)
	join(t, c, 1, proto.RoleMachine, 0) // server 0 and worker 0, registered from "a"
	for _, tc := range []struct {
		role proto.Role
		rank int
		want string
	}{
		{proto.RoleMachine, 0, `server rank 0 is taken by the node that registered from "a": give every node a rank of its own (--rank)`},
		{proto.RoleWorker, 0, `worker rank 0 is taken by the node that registered from "a": give every node a rank of its own (--rank)`},
		{proto.RoleWorker, 2, `worker rank 2 is out of range: the job has 2 workers, ranks 0 to 1`},
		{proto.RoleServer, 1, `server rank 1 is out of range: the job has 1 server, rank 0`},
		{proto.RoleServer, -1, `every server rank is taken (1 of 1): a node too many`},
	} {
		outs := c.Handle(msg(proto.Provisional(7), proto.CmdRegister, proto.Register{Role: tc.role, Token: proto.TokenDigest("tok"), Addr: "b", Rank: tc.rank}))
		r := find(outs, proto.CmdRefuse)
		if len(r) != 1 {
			t.Fatalf("%s rank %d: not refused: %+v", tc.role, tc.rank, outs)
		}
		var got proto.Refuse
		proto.Decode(r[0].M, &got)
		if got.Reason != tc.want {
			t.Errorf("%s rank %d refused for %q, want %q", tc.role, tc.rank, got.Reason, tc.want)
		}
		if logs := c.Logs(); len(logs) != 1 || logs[0] != `refused `+tc.role.String()+` at "b": `+tc.want {
			t.Errorf("%s rank %d: logs %q", tc.role, tc.rank, logs)
		}
	}
}

// TestJobDigestRefusedNamesFields checks that a node whose job is not
// the scheduler's and who says what its fields are is told which differ
// (sorted, at most six, then how many more), and a node without them
// that its job is not the scheduler's.
func TestJobDigestRefusedNamesFields(t *testing.T) {
	job := func(lr, seed string, more int) (string, map[string]string) {
		b := []byte(`{"rule": {"lr": ` + lr + `}, "seed": ` + seed)
		for i := range more {
			b = fmt.Appendf(b, `, "f%d": %d`, i, i)
		}
		b = append(b, '}')
		return proto.JobDigest("k", b), proto.JobFields(b)
	}
	cfg := testConfig(1, 2)
	cfg.JobDigest, cfg.JobFields = job("0.1", "1", 0)
	for i, c := range []struct {
		lr, seed string
		more     int
		plain    bool // no fields
		want     string
	}{
		{"0.2", "1", 0, false, "its job differs from the scheduler's in rule.lr"},
		{"0.2", "2", 0, false, "its job differs from the scheduler's in rule.lr and seed"},
		{"0.1", "2", 2, false, "its job differs from the scheduler's in f0, f1 and seed"},
		{"0.2", "2", 7, false, "its job differs from the scheduler's in f0, f1, f2, f3, f4, f5 and 3 more"},
		{"0.2", "1", 0, true, "its job is not the scheduler's"},
	} {
		c1 := coreOf(t, cfg)
		r := proto.Register{Role: proto.RoleServer, Token: proto.TokenDigest("tok"), Addr: "b", Rank: -1}
		r.Job, r.JobFields = job(c.lr, c.seed, c.more)
		if c.plain {
			r.JobFields = nil
		}
		refused := find(c1.Handle(msg(proto.Provisional(uint32(7+i)), proto.CmdRegister, r)), proto.CmdRefuse)
		if len(refused) != 1 {
			t.Fatalf("case %d: not refused", i)
		}
		var got proto.Refuse
		proto.Decode(refused[0].M, &got)
		want := c.want + " (job digest " + r.Job[:12] + ", the scheduler's " + cfg.JobDigest[:12] + "): every process of a cluster must read the same job file"
		if got.Reason != want {
			t.Errorf("case %d: refused for %q\nwant %q", i, got.Reason, want)
		}
	}
}

// TestJobDigestRefused checks that a node whose job is not the
// scheduler's is refused naming both digests, a plain registration and
// a replacement alike, while the same job and a node that carries no
// digest (a job given by flags) join.
func TestJobDigestRefused(t *testing.T) {
	cfg := testConfig(1, 2)
	cfg.JobDigest = proto.JobDigest("train", []byte(`{"a": 1}`))
	c := coreOf(t, cfg)
	other := proto.JobDigest("train", []byte(`{"a": 2}`))
	want := "its job is not the scheduler's (job digest " + other[:12] + ", the scheduler's " + cfg.JobDigest[:12] + "): every process of a cluster must read the same job file"
	for i, r := range []proto.Register{
		{Role: proto.RoleServer, Token: proto.TokenDigest("tok"), Addr: "b", Rank: -1, Job: other},
		{Role: proto.RoleWorker, Token: proto.TokenDigest("tok"), Addr: "b", Rank: 0, Job: other, Recover: true},
	} {
		outs := c.Handle(msg(proto.Provisional(uint32(7+i)), proto.CmdRegister, r))
		refused := find(outs, proto.CmdRefuse)
		if len(refused) != 1 {
			t.Fatalf("registration %d with another job: not refused: %+v", i, outs)
		}
		var got proto.Refuse
		proto.Decode(refused[0].M, &got)
		if got.Reason != want {
			t.Errorf("registration %d refused for %q, want %q", i, got.Reason, want)
		}
		c.Logs()
	}
	same := proto.Register{Role: proto.RoleServer, Token: proto.TokenDigest("tok"), Addr: "a", Rank: -1, Job: proto.JobDigest("train", []byte("{\"a\":\n 1}"))}
	if outs := c.Handle(msg(proto.Provisional(1), proto.CmdRegister, same)); len(find(outs, proto.CmdAssign)) != 1 {
		t.Fatalf("the same job, indented otherwise: %+v", outs)
	}
	none := proto.Register{Role: proto.RoleWorker, Token: proto.TokenDigest("tok"), Addr: "c", Rank: -1}
	if outs := c.Handle(msg(proto.Provisional(2), proto.CmdRegister, none)); len(find(outs, proto.CmdAssign)) != 1 {
		t.Fatalf("no digest: %+v", outs)
	}
}
