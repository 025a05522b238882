package node

import (
	"os"
	"strings"
	"testing"

	"colo/ps/proto"
	"colo/transport"
	"colo/transport/tcp"
)

// TestRates checks the rates a node gives its TCP links: every link to
// another machine's node is limited, by the smaller of the link rate and
// the matrix's entry between the two ranks; the scheduler's and a
// provisional node's are not; with a Host function, nodes of one machine
// are not limited.
func TestRates(t *testing.T) {
	matrix := &transport.Bandwidth{K: 2, Rates: []float64{0, 1e6 / 8, 8e6 / 8, 0}}
	r := Rates{Link: 4e6 / 8, Matrix: matrix}
	tune := r.Tune(nil)
	rate := func(self, peer transport.NodeID) float64 {
		tc := tcp.DefaultConfig()
		tc.ID = self
		tune(&tc)
		return tc.Rate(peer)
	}
	for _, c := range []struct {
		self, peer transport.NodeID
		want       float64
	}{
		{proto.WorkerID(0), proto.ServerID(1), 1e6 / 8},
		{proto.ServerID(1), proto.WorkerID(0), 4e6 / 8},
		{proto.ServerID(0), proto.WorkerID(1), 1e6 / 8},
		{proto.WorkerID(1), proto.ServerID(0), 4e6 / 8},
		{proto.WorkerID(0), proto.ServerID(0), 4e6 / 8}, // separate processes of rank 0
		{proto.WorkerID(0), proto.SchedulerID, 0},
		{proto.Provisional(7), proto.SchedulerID, 0},
	} {
		if got := rate(c.self, c.peer); got != c.want {
			t.Errorf("%s → %s: %v bytes/s, want %v", proto.Name(c.self), proto.Name(c.peer), got, c.want)
		}
	}
	// A rate set before (by another tuning) still bounds the link.
	prev := func(tc *tcp.Config) { tc.Rate = func(transport.NodeID) float64 { return 100 } }
	tc := tcp.DefaultConfig()
	tc.ID = proto.ServerID(1)
	r.Tune(prev)(&tc)
	if got := tc.Rate(proto.WorkerID(0)); got != 100 {
		t.Errorf("with an earlier rate of 100: %v", got)
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
