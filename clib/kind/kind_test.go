package kind

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"colo/clib"
	"colo/launch"
	"colo/ps/clock"
	"colo/ps/proto"
	"colo/ps/route"
	"colo/ps/sched"
)

// TestKind checks the scheduler's configuration and the members a node
// may be, and that a bad job is refused naming the field.
func TestKind(t *testing.T) {
	table, err := route.FromPlacement([]int32{1, 0, 1, 0}, 2)
	if err != nil {
		t.Fatal(err)
	}
	rt, _ := table.MarshalBinary()
	j := clib.DefaultJob()
	j.Consistency, j.Machines, j.Route = "async", 2, rt
	j.Rule.Name, j.Rule.LR = "adagrad", 0.1
	env, err := launch.NewEnvelope(clib.JobKind, j)
	if err != nil {
		t.Fatal(err)
	}
	cfg := sched.DefaultConfig()
	cfg.NumServers, cfg.NumWorkers = 2, 2
	if err := (Kind{}).Scheduler(env.Job, &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.Width != 0 || cfg.Clock.Mode != clock.Async || cfg.Table == nil || cfg.Table.Owner(0) != 1 || cfg.NumKeys != 4 {
		t.Fatalf("scheduler: width %d, clock %v, table %v, keys %d", cfg.Width, cfg.Clock, cfg.Table, cfg.NumKeys)
	}
	m, err := (Kind{}).Open(context.Background(), env.Job, launch.Position{Role: proto.RoleServer, Rank: 1})
	if err != nil || m.Rule == nil || m.Rule.Name() != "adagrad" {
		t.Fatalf("server: %+v, %v", m, err)
	}
	if _, err := (Kind{}).Open(context.Background(), env.Job, launch.Position{Role: proto.RoleMachine}); err == nil || !strings.Contains(err.Error(), "programs linked with colo") {
		t.Fatalf("a colo node machine: %v", err)
	}
	for field, raw := range map[string]string{
		"consistency": `{"consistency":"eventual","machines":1}`,
		"rule":        `{"rule":{"name":"sgd","lr":0.1,"l2":0.1},"machines":1}`,
		"unknown":     `{"machines":1,"colour":"red"}`,
		"machines":    `{"servers":2}`,
	} {
		if err := (Kind{}).Scheduler(json.RawMessage(raw), &cfg); err == nil || !strings.Contains(err.Error(), "torch") {
			t.Errorf("%s: %v", field, err)
		}
	}
}
