package proto

import (
	"errors"
	"strings"
	"testing"

	"colo/transport"
)

func TestIDs(t *testing.T) {
	for r := range 5 {
		if role, rank := Identify(ServerID(r)); role != RoleServer || rank != r {
			t.Errorf("server %d: %v %d", r, role, rank)
		}
		if role, rank := Identify(WorkerID(r)); role != RoleWorker || rank != r {
			t.Errorf("worker %d: %v %d", r, role, rank)
		}
	}
	if role, _ := Identify(SchedulerID); role != RoleScheduler {
		t.Error("scheduler")
	}
	p := Provisional(7)
	if !IsProvisional(p) || IsProvisional(WorkerID(100)) {
		t.Error("provisional ids")
	}
	if role, rank := Identify(p); role != 0 || rank != -1 {
		t.Errorf("provisional identified as %v %d", role, rank)
	}
	if Name(WorkerID(2)) != "worker 2" || Name(SchedulerID) != "scheduler" || Name(0) != "node 0" {
		t.Errorf("names %q %q %q", Name(WorkerID(2)), Name(SchedulerID), Name(0))
	}
	for _, r := range []Role{RoleScheduler, RoleServer, RoleWorker, RoleMachine} {
		if got, err := ParseRole(r.String()); err != nil || got != r {
			t.Errorf("ParseRole(%q) = %v, %v", r, got, err)
		}
	}
	if _, err := ParseRole("boss"); err == nil {
		t.Error("ParseRole(boss)")
	}
}

func TestMessages(t *testing.T) {
	m := Control(CmdRegister, Register{Role: RoleMachine, Token: "x", Rank: -1})
	m.Sender = Provisional(1)
	var r Register
	if err := Decode(m, &r); err != nil || r.Role != RoleMachine || r.Token != "x" || r.Rank != -1 {
		t.Fatalf("%+v %v", r, err)
	}
	m.Body = []byte("{")
	if err := Decode(m, &r); err == nil {
		t.Fatal("bad JSON decoded")
	}
	d := &transport.Message{Body: AppendMeta(nil, 42)}
	if round, err := ParseMeta(d); err != nil || round != 42 {
		t.Fatalf("meta: %d %v", round, err)
	}
	d.Body = d.Body[:3]
	if _, err := ParseMeta(d); err == nil {
		t.Fatal("short meta parsed")
	}
	e := &NodeError{ID: ServerID(1), Addr: "h:1", Err: errors.New("gone")}
	if !strings.HasPrefix(e.Error(), "server 1 (node 4 at h:1) failed: gone") {
		t.Fatalf("%q", e.Error())
	}
}
