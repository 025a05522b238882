package smoke

import (
	"bufio"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"colo/internal/colotest"
	"colo/launch"
	"colo/launch/launchtest"
	"colo/ps/node"
	"colo/ps/proto"
	"colo/ps/sched"
)

// TestJoinAgreesOnJob checks that a machine whose smoke job is not the
// scheduler's (other rounds, keys, seed, rule, or an idle worker) is
// refused when it joins, naming the fields that differ, and that one
// whose job differs only in the path of its bandwidth matrix joins.
func TestJoinAgreesOnJob(t *testing.T) {
	dir := t.TempDir()
	paths := []string{filepath.Join(dir, "a.txt"), filepath.Join(dir, "b.txt")}
	for _, p := range paths {
		if err := os.WriteFile(p, []byte("0 1gbit\n1gbit 0\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	job := launchtest.Jobs(t, func() Job {
		j := DefaultJob()
		j.Keys, j.Batch, j.Rounds, j.BandwidthMatrix = 1000, 100, 5, paths[0]
		return j
	})
	launchtest.CheckJoin(t, Kind{}, job(nil), launch.Position{Role: proto.RoleMachine, Rank: 1, Servers: 2, Workers: 2}, []launchtest.Variant{
		{Name: "the same job", Job: job(nil)},
		{Name: "a default left out, spaced", Job: strings.Replace(job(nil), `"seed":1,`, "\n ", 1)},
		{Name: "the matrix elsewhere", Job: job(func(j *Job) { j.BandwidthMatrix = paths[1] })},
		{Name: "more rounds", Job: job(func(j *Job) { j.Rounds = 6 }), Differs: []string{"rounds"}},
		{Name: "other keys and seed", Job: job(func(j *Job) { j.Keys, j.Seed = 2000, 9 }), Differs: []string{"keys", "seed"}},
		{Name: "another rule", Job: job(func(j *Job) { j.Rule.Name, j.Rule.LR = "sgd", 0.5 }), Differs: []string{"rule.lr", "rule.name"}},
		{Name: "an idle worker", Job: job(func(j *Job) { j.Idle = true }), Differs: []string{"idle"}},
	})
}

// TestRunNodeOfAnotherJobRefused runs what colo node runs, in this
// process: a scheduler that read a smoke job, and a machine opened from
// a job of other rounds, which is refused when it joins, its error
// naming the field.
func TestRunNodeOfAnotherJobRefused(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), colotest.HangTimeout(t))
	defer cancel()
	j := DefaultJob()
	j.Keys, j.Batch, j.Rounds = 1000, 100, 5
	env, err := launch.NewEnvelope("smoke", j)
	if err != nil {
		t.Fatal(err)
	}
	sc := sched.DefaultConfig()
	sc.NumServers, sc.NumWorkers, sc.Token, sc.StartTimeout = 1, 1, "tok", colotest.HangTimeout(t)
	if err := (Kind{}).Scheduler(env.Job, &sc); err != nil {
		t.Fatal(err)
	}
	pr, pw := io.Pipe()
	// The scheduler logs to the test's log: it must have returned before
	// the test does.
	done := make(chan struct{})
	defer func() { cancel(); <-done }()
	go func() {
		defer close(done)
		launch.RunScheduler(ctx, launch.Scheduler{Config: sc, Addr: "127.0.0.1:0", Token: "tok", Out: pw, Log: testLog{t}})
		pw.Close()
	}()
	line, _ := bufio.NewReader(pr).ReadString('\n')
	go io.Copy(io.Discard, pr)
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "scheduler listening on ")
	if !ok {
		t.Fatalf("first line %q", line)
	}
	j.Rounds = 6
	if env, err = launch.NewEnvelope("smoke", j); err != nil {
		t.Fatal(err)
	}
	m, err := Kind{}.Open(ctx, env.Job, launch.Position{Role: proto.RoleMachine, Rank: 0})
	if err != nil {
		t.Fatal(err)
	}
	cfg := node.DefaultConfig()
	cfg.Role, cfg.Rank, cfg.Scheduler, cfg.Token, cfg.Rule = proto.RoleMachine, 0, addr, "tok", m.Rule
	cfg.Network, cfg.JoinTimeout = node.TCP{Token: "tok"}, colotest.HangTimeout(t)
	_, _, err = launch.RunNode(ctx, launch.Node{Config: cfg, Member: m})
	if want := "refused this node: its job differs from the scheduler's in rounds (job digest "; err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("a machine of another job: %v\nwant a refusal saying %q", err, want)
	}
}

// TestJobDigestLinkRate checks that the smoke job's digest takes the
// link rate by its value, as the torch kind's does (clib.Job.Digest):
// every spelling of 100 Mbit/s is one job, the spellings of no limit are
// another, and a rate that does not parse is refused naming the field.
func TestJobDigestLinkRate(t *testing.T) {
	launchtest.DigestsRate(t, "smoke", func(rate string) (string, error) {
		j := DefaultJob()
		j.LinkBandwidth = rate
		d, err := j.digest()
		return d.Sum, err
	})
}

// TestJoinAgreesOnLinkRate checks that the scheduler compares a smoke
// job's link rate as a rate: a machine that spells the scheduler's
// 100 Mbit/s otherwise joins, one of another rate or of no limit is
// refused naming link_bandwidth.
func TestJoinAgreesOnLinkRate(t *testing.T) {
	job := launchtest.Jobs(t, func() Job {
		j := DefaultJob()
		j.Keys, j.Batch, j.Rounds, j.LinkBandwidth = 1000, 100, 5, "100mbit"
		return j
	})
	rate := func(r string) string { return job(func(j *Job) { j.LinkBandwidth = r }) }
	at := launch.Position{Role: proto.RoleMachine, Rank: 1, Servers: 2, Workers: 2}
	launchtest.CheckJoin(t, Kind{}, job(nil), at, []launchtest.Variant{
		{Name: "in gbit", Job: rate("0.1gbit")},
		{Name: "in kbit", Job: rate("100000kbit")},
		{Name: "in bytes", Job: rate("12.5mbps")},
		{Name: "another rate", Job: rate("200mbit"), Differs: []string{"link_bandwidth"}},
		{Name: "no limit", Job: rate("0"), Differs: []string{"link_bandwidth"}},
	})
	launchtest.CheckJoin(t, Kind{}, rate(""), at, []launchtest.Variant{
		{Name: "zero", Job: rate("0")},
		{Name: "unlimited", Job: rate("unlimited")},
	})
}
