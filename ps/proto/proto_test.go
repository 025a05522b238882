package proto

import (
	"errors"
	"math"
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

// TestBarrierValues sends values through a control message's JSON body:
// NaN (with its payload), infinities and negative zero come back bit for
// bit, and a plain barrier carries no Bits field.
func TestBarrierValues(t *testing.T) {
	vals := []float64{1.5, math.Inf(1), math.Inf(-1), math.Copysign(0, -1), math.Float64frombits(0x7ff8_0000_dead_beef), 1e-310}
	var b Barrier
	b.Group, b.Seq = "workers", 3
	b.SetValues(vals)
	var got Barrier
	if err := Decode(Control(CmdBarrier, b), &got); err != nil {
		t.Fatal(err)
	}
	out := got.Values(nil)
	if len(out) != len(vals) || got.Seq != 3 || got.Group != "workers" {
		t.Fatalf("decoded %+v", got)
	}
	for i := range vals {
		if math.Float64bits(out[i]) != math.Float64bits(vals[i]) {
			t.Errorf("value %d: %x, want %x", i, math.Float64bits(out[i]), math.Float64bits(vals[i]))
		}
	}
	b.SetValues(nil)
	if m := Control(CmdBarrier, b); strings.Contains(string(m.Body), "Bits") {
		t.Errorf("plain barrier body %s", m.Body)
	}
}

// TestInGroup checks the members of each barrier group.
func TestInGroup(t *testing.T) {
	for _, c := range []struct {
		group                     string
		server, worker, evaluator bool
	}{
		{"workers", false, true, false},
		{"servers", true, false, false},
		{"all", true, true, false},
		{"workers/checkpoint", false, true, false},
		{"workers/", false, false, false},
		{"servers/x", false, false, false},
		{"", false, false, false},
		{"worker", false, false, false},
	} {
		for _, r := range []struct {
			role Role
			want bool
		}{{RoleServer, c.server}, {RoleWorker, c.worker}, {RoleEvaluator, c.evaluator}} {
			if got := InGroup(c.group, r.role); got != r.want {
				t.Errorf("InGroup(%q, %v) = %v, want %v", c.group, r.role, got, r.want)
			}
		}
	}
}
