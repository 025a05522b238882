package smoke

import (
	"context"
	"encoding/json"
	"testing"

	"colo/launch"
	"colo/ps/proto"
)

// TestOpenRatesApart: a smoke job's --link-bandwidth emulates every link
// between two machines. With servers apart from the workers, server r
// and worker r are two machines (before, they were taken for one by their
// rank, and the link between worker 0 and server 0 was not limited); on
// a machine of its own server and worker, it limits nothing within.
func TestOpenRatesApart(t *testing.T) {
	j := DefaultJob()
	j.LinkBandwidth = "2mbit"
	raw, err := json.Marshal(j)
	if err != nil {
		t.Fatal(err)
	}
	const rate = 2e6 / 8
	for _, c := range []struct {
		at       launch.Position
		from, to int // worker from, server to
		want     float64
	}{
		{launch.Position{Role: proto.RoleWorker, Rank: 0, Servers: 1, Workers: 2}, 0, 0, rate},
		{launch.Position{Role: proto.RoleWorker, Rank: 1, Servers: 1, Workers: 2}, 1, 0, rate},
		{launch.Position{Role: proto.RoleServer, Rank: 0, Servers: 2, Workers: 2}, 1, 1, rate},
		{launch.Position{Role: proto.RoleMachine, Rank: 0, Servers: 2, Workers: 2}, 0, 0, 0},
		{launch.Position{Role: proto.RoleMachine, Rank: 0, Servers: 2, Workers: 2}, 0, 1, rate},
	} {
		m, err := Kind{}.Open(context.Background(), raw, c.at)
		if err != nil {
			t.Fatalf("%+v: %v", c.at, err)
		}
		if got := m.Rates.Rate(proto.WorkerID(c.from), proto.ServerID(c.to)); got != c.want {
			t.Errorf("%v %d: worker %d to server %d at %v B/s, want %v", c.at.Role, c.at.Rank, c.from, c.to, got, c.want)
		}
	}
}
