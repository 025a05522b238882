package node

import (
	"os"
	"strings"
	"testing"

	"colo/ps/proto"
	"colo/transport"
	"colo/transport/tcp"
)

// TestRates checks the rate of the path between two nodes: the smaller
// of the link rate and the matrix's entry between their machines; none
// within a machine, with the scheduler or a provisional node.
func TestRates(t *testing.T) {
	matrix := &transport.Bandwidth{K: 2, Rates: []float64{0, 1e6 / 8, 8e6 / 8, 0}}
	r := Rates{Link: 4e6 / 8, Matrix: matrix}
	for _, c := range []struct {
		self, peer transport.NodeID
		want       float64
	}{
		{proto.WorkerID(0), proto.ServerID(1), 1e6 / 8},
		{proto.ServerID(1), proto.WorkerID(0), 4e6 / 8},
		{proto.ServerID(0), proto.WorkerID(1), 1e6 / 8},
		{proto.WorkerID(1), proto.ServerID(0), 4e6 / 8},
		{proto.WorkerID(0), proto.ServerID(0), 0}, // one machine
		{proto.WorkerID(0), proto.SchedulerID, 0},
		{proto.Provisional(7), proto.SchedulerID, 0},
	} {
		if got := r.Rate(c.self, c.peer); got != c.want {
			t.Errorf("%s → %s: %v bytes/s, want %v", proto.Name(c.self), proto.Name(c.peer), got, c.want)
		}
	}
	// With a Host function, nodes it puts on one machine talk freely.
	host := func(id transport.NodeID) (int, bool) {
		role, rank := proto.Identify(id)
		switch role {
		case proto.RoleServer:
			return rank, true
		case proto.RoleWorker:
			return 0, true // every worker on machine 0 with server 0
		}
		return 0, false
	}
	hr := Rates{Link: 50, Host: host}
	if got := hr.Rate(proto.WorkerID(3), proto.ServerID(0)); got != 0 {
		t.Errorf("same machine: %v, want unlimited", got)
	}
	if got := hr.Rate(proto.WorkerID(3), proto.ServerID(1)); got != 50 {
		t.Errorf("other machine: %v, want 50", got)
	}
	if (Rates{}).Tune(nil) != nil {
		t.Error("no rates: a tuning")
	}
}

// TestRatesInterfaces checks the wires a tuning gives its endpoints:
// a machine's egress and ingress are one wire each, whichever of its
// nodes sends or receives and to whichever other machine; the path to a
// machine is one wire per ordered pair; nothing within a machine or
// with the scheduler; another tuning (another process) has its own.
func TestRatesInterfaces(t *testing.T) {
	matrix := &transport.Bandwidth{K: 3, Rates: []float64{0, 1e6, 0, 2e6, 0, 2e6, 3e6, 3e6, 0}}
	r := Rates{Link: 4e6, Matrix: matrix}
	tune := r.Tune(func(tc *tcp.Config) { tc.Burst = 4096 })
	shared := func(tune func(*tcp.Config), self, peer transport.NodeID) (out, in []*transport.Wire) {
		tc := tcp.DefaultConfig()
		tc.ID = self
		tune(&tc)
		return tc.Shared(peer)
	}
	w0s1o, w0s1i := shared(tune, proto.WorkerID(0), proto.ServerID(1))
	s0w2o, s0w2i := shared(tune, proto.ServerID(0), proto.WorkerID(2))
	w0s2o, _ := shared(tune, proto.WorkerID(0), proto.ServerID(2))
	s1w0o, s1w0i := shared(tune, proto.ServerID(1), proto.WorkerID(0))
	if len(w0s1o) != 2 || len(w0s1i) != 1 || len(w0s2o) != 1 {
		t.Fatalf("worker 0 → server 1: %d out, %d in, want 2 and 1; → server 2: %d out, want 1 (no path rate)", len(w0s1o), len(w0s1i), len(w0s2o))
	}
	egress, ingress, path := w0s1o[0], w0s1i[0], w0s1o[1]
	for _, c := range []struct {
		name      string
		got, want *transport.Wire
	}{
		{"server 0 → worker 2 leaves by machine 0's egress", s0w2o[0], egress},
		{"server 0 ← worker 2 arrives by machine 0's ingress", s0w2i[0], ingress},
		{"worker 0 → server 2 leaves by machine 0's egress", w0s2o[0], egress},
	} {
		if c.got != c.want {
			t.Errorf("%s: another wire", c.name)
		}
	}
	if egress == ingress || s1w0o[0] == egress || s1w0i[0] == ingress || s1w0o[1] == path {
		t.Error("machine 1's wires, or machine 0's two directions, are shared")
	}
	if egress.Rate() != 4e6 || ingress.Rate() != 4e6 || path.Rate() != 1e6 || s1w0o[1].Rate() != 2e6 {
		t.Errorf("rates: egress %v, ingress %v, path 0→1 %v, path 1→0 %v", egress.Rate(), ingress.Rate(), path.Rate(), s1w0o[1].Rate())
	}
	for _, c := range [][2]transport.NodeID{
		{proto.WorkerID(0), proto.ServerID(0)},
		{proto.WorkerID(0), proto.SchedulerID},
		{proto.Provisional(7), proto.SchedulerID},
	} {
		if out, in := shared(tune, c[0], c[1]); out != nil || in != nil {
			t.Errorf("%s → %s: %d and %d wires, want none", proto.Name(c[0]), proto.Name(c[1]), len(out), len(in))
		}
	}
	if o, _ := shared(r.Tune(nil), proto.WorkerID(0), proto.ServerID(1)); o[0] == egress {
		t.Error("two tunings share machine 0's egress")
	}
	// A tuning before this one keeps its wires, in front.
	own := transport.NewWire(1, transport.DefaultQuantum)
	prev := func(tc *tcp.Config) {
		tc.Shared = func(transport.NodeID) ([]*transport.Wire, []*transport.Wire) {
			return []*transport.Wire{own}, nil
		}
	}
	if o, i := shared(r.Tune(prev), proto.WorkerID(0), proto.ServerID(1)); len(o) != 3 || o[0] != own || len(i) != 1 {
		t.Errorf("after an earlier tuning: %d out (first ours: %v), %d in", len(o), o[0] == own, len(i))
	}
}

func TestParseRates(t *testing.T) {
	path := t.TempDir() + "/bw"
	if err := os.WriteFile(path, []byte("0 1mbit\n8mbit 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := ParseRates("4mbit", path, 2)
	if err != nil || r.Link != 4e6/8 || r.Matrix == nil || r.Matrix.K != 2 {
		t.Fatalf("4mbit and a 2×2 matrix: %+v %v", r, err)
	}
	if _, err := ParseRates("fast", "", 2); err == nil || !strings.Contains(err.Error(), "link bandwidth") {
		t.Errorf("rate fast: %v", err)
	}
	if _, err := ParseRates("", path, 3); err == nil || !strings.Contains(err.Error(), "is for 2 machines, the cluster has 3") {
		t.Errorf("a 2×2 matrix for 3 machines: %v", err)
	}
	if r, err := ParseRates("", "", 2); err != nil || !r.Zero() {
		t.Errorf("nothing: %+v %v", r, err)
	}
}

// TestListenOnMachine: the endpoint a backup opens for a failed server's
// id on its own machine (TCP.ListenOn) crosses its own machine's
// interface, the same wires as the backup's own endpoint, not a second interface
// of the failed machine; its traffic with its machine's worker is free.
func TestListenOnMachine(t *testing.T) {
	n := TCP{Tune: Rates{Link: 1e6}.Tune(nil)}
	taken, _ := n.config(proto.ServerID(1), proto.ServerID(0), nil)
	own, _ := n.config(proto.ServerID(0), proto.ServerID(0), nil)
	failed, _ := n.config(proto.ServerID(1), proto.ServerID(1), nil)
	if taken.ID != proto.ServerID(1) {
		t.Fatalf("the endpoint has id %s, want server 1's", proto.Name(taken.ID))
	}
	out, in := taken.Shared(proto.WorkerID(2))
	ownOut, ownIn := own.Shared(proto.WorkerID(2))
	failedOut, _ := failed.Shared(proto.WorkerID(2))
	if len(out) != 1 || len(in) != 1 || out[0] != ownOut[0] || in[0] != ownIn[0] {
		t.Fatalf("server 1 on machine 0 pays %v %v, machine 0's interface is %v %v", out, in, ownOut, ownIn)
	}
	if out[0] == failedOut[0] {
		t.Fatal("server 1 on machine 0 pays machine 1's interface")
	}
	if out, in := taken.Shared(proto.WorkerID(0)); len(out)+len(in) != 0 {
		t.Fatalf("server 1 on machine 0 pays %v %v to talk to worker 0 on its machine", out, in)
	}
}
