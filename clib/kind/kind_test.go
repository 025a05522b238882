package kind

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"colo/clib"
	"colo/internal/colotest"
	"colo/launch"
	"colo/launch/launchtest"
	"colo/ps/clock"
	"colo/ps/node"
	"colo/ps/proto"
	"colo/ps/route"
	"colo/ps/sched"
	"colo/transport/tcp"
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

// TestJoinAgreesOnJob checks that a server whose torch job is not the
// scheduler's (another rule, learning rate, consistency model, link
// rate, routing table) is refused when it joins, naming the fields that
// differ, and that one whose job differs only in the path of its
// bandwidth matrix joins.
func TestJoinAgreesOnJob(t *testing.T) {
	dir := t.TempDir()
	matrix := []byte("0 1gbit 1gbit 1gbit\n1gbit 0 1gbit 1gbit\n1gbit 1gbit 0 1gbit\n1gbit 1gbit 1gbit 0\n")
	paths := []string{filepath.Join(dir, "a.txt"), filepath.Join(dir, "b.txt")}
	for _, p := range paths {
		if err := os.WriteFile(p, matrix, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	table := func(keys int) []byte {
		tb, err := route.FromPlacement(make([]int32, keys), 2)
		if err != nil {
			t.Fatal(err)
		}
		b, err := tb.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	job := launchtest.Jobs(t, func() clib.Job {
		j := clib.DefaultJob()
		j.Servers, j.Workers, j.Route, j.BandwidthMatrix = 2, 2, table(4), paths[0]
		j.Rule.Name, j.Rule.LR = "adagrad", 0.1
		return j
	})
	launchtest.CheckJoin(t, Kind{}, job(nil), launch.Position{Role: proto.RoleServer, Rank: 1, Servers: 2, Workers: 2}, []launchtest.Variant{
		{Name: "the same job", Job: job(nil)},
		{Name: "the matrix elsewhere", Job: job(func(j *clib.Job) { j.BandwidthMatrix = paths[1] })},
		{Name: "another lr", Job: job(func(j *clib.Job) { j.Rule.LR = 0.2 }), Differs: []string{"rule.lr"}},
		{Name: "another rule", Job: job(func(j *clib.Job) { j.Rule.Name = "sgd" }), Differs: []string{"rule.name"}},
		{Name: "async", Job: job(func(j *clib.Job) { j.Consistency = "async" }), Differs: []string{"consistency"}},
		{Name: "another link rate", Job: job(func(j *clib.Job) { j.LinkBandwidth = "100mbit" }), Differs: []string{"link_bandwidth"}},
		{Name: "another table", Job: job(func(j *clib.Job) { j.Route = table(6) }), Differs: []string{"route"}},
	})
}

// TestWorkerOfAnotherJobRefused checks that a program's worker that read
// another job than its scheduler's (clib.Open with a job file) is
// refused when it joins, naming the field, over TCP.
func TestWorkerOfAnotherJobRefused(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), colotest.HangTimeout(t))
	defer cancel()
	j := clib.DefaultJob()
	j.Servers, j.Workers = 1, 1
	env, err := launch.NewEnvelope(clib.JobKind, j)
	if err != nil {
		t.Fatal(err)
	}
	const token = "torch-test"
	sc := sched.DefaultConfig()
	sc.NumServers, sc.NumWorkers, sc.Token, sc.StartTimeout = 1, 1, token, colotest.HangTimeout(t)
	if err := (Kind{}).Scheduler(env.Job, &sc); err != nil {
		t.Fatal(err)
	}
	ep, err := node.TCP{Token: token}.Listen(proto.SchedulerID, tcp.NewIdentity())
	if err != nil {
		t.Fatal(err)
	}
	s, err := sched.Start(sc, ep, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	j.Rule.LR = 0.5
	if env, err = launch.NewEnvelope(clib.JobKind, j); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "job.json")
	if err := env.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	cfg := clib.DefaultConfig()
	cfg.Scheduler, cfg.Token, cfg.Rank, cfg.Role, cfg.JobFile = ep.Addr(), token, 0, "worker", path
	cfg.Timeout = colotest.HangTimeout(t).Seconds()
	sess, err := clib.Open(ctx, cfg)
	if err == nil {
		sess.Close()
		t.Fatal("a worker of another job joined")
	}
	if want := "its job differs from the scheduler's in rule.lr"; !strings.Contains(err.Error(), want) {
		t.Fatalf("a worker of another job: %v\nwant a refusal saying %q", err, want)
	}
}

// TestJoinAgreesOnLinkRate checks that the link rate is compared as a
// rate, not as written: every spelling of the scheduler's 100 Mbit/s
// joins, another rate is refused naming link_bandwidth, and the spellings
// of no limit ("", 0, unlimited) agree with each other.
func TestJoinAgreesOnLinkRate(t *testing.T) {
	jobs := launchtest.Jobs(t, func() clib.Job {
		j := clib.DefaultJob()
		j.Servers, j.Workers = 2, 2
		return j
	})
	job := func(rate string) string { return jobs(func(j *clib.Job) { j.LinkBandwidth = rate }) }
	at := launch.Position{Role: proto.RoleServer, Rank: 1, Servers: 2, Workers: 2}
	launchtest.CheckJoin(t, Kind{}, job("100mbit"), at, []launchtest.Variant{
		{Name: "as written", Job: job("100mbit")},
		{Name: "in gbit", Job: job("0.1gbit")},
		{Name: "in kbit", Job: job("100000kbit")},
		{Name: "in capitals", Job: job("100Mbit")},
		{Name: "in bytes", Job: job("12.5mbps")},
		{Name: "another rate", Job: job("200mbit"), Differs: []string{"link_bandwidth"}},
		{Name: "a rate just above", Job: job("100.001mbit"), Differs: []string{"link_bandwidth"}},
		{Name: "no limit", Job: job(""), Differs: []string{"link_bandwidth"}},
	})
	launchtest.CheckJoin(t, Kind{}, job("1.001mbit"), at, []launchtest.Variant{
		{Name: "in kbit", Job: job("1001kbit")}, // 1.001 × 125000 rounds to 125124.99999999999 in float64
		{Name: "in bit", Job: job("1001000bit")},
	})
	launchtest.CheckJoin(t, Kind{}, job(""), at, []launchtest.Variant{
		{Name: "zero", Job: job("0")},
		{Name: "unlimited", Job: job("unlimited")},
		{Name: "a rate", Job: job("1gbit"), Differs: []string{"link_bandwidth"}},
	})
}
