package launch

import (
	"bufio"
	"context"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"colo/ps/node"
	"colo/ps/proto"
	"colo/ps/sched"
)

// TestRunNodeAndScheduler runs what colo node runs, in this process: a
// scheduler that prints its address, and two machines running the smoke
// job against it; the job succeeds, one worker checks the sums, and the
// summaries name the nodes.
func TestRunNodeAndScheduler(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	sc := sched.DefaultConfig()
	sc.NumServers, sc.NumWorkers, sc.NumKeys, sc.Token = 2, 2, 1000, "tok"
	pr, pw := io.Pipe()
	schedErr := make(chan error, 1)
	go func() {
		schedErr <- RunScheduler(ctx, Scheduler{Config: sc, Addr: "127.0.0.1:0", Token: "tok", Out: pw, Log: testWriter{t}})
		pw.Close()
	}()
	rd := bufio.NewReader(pr)
	line, err := rd.ReadString('\n')
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), schedulerPrefix)
	if err != nil || !ok {
		t.Fatalf("first line %q: %v", line, err)
	}
	rest := make(chan string, 1)
	go func() {
		b, _ := io.ReadAll(rd)
		rest <- string(b)
	}()
	var wg sync.WaitGroup
	sums := make([]*NodeSummary, 2)
	errs := make([]error, 2)
	for r := range 2 {
		wg.Go(func() {
			cfg := node.DefaultConfig()
			cfg.Role, cfg.Rank, cfg.Scheduler, cfg.Token = proto.RoleMachine, r, addr, "tok"
			cfg.Network = node.TCP{Token: "tok"}
			j := DefaultSmokeJob()
			j.Keys, j.Batch, j.Rounds, j.Seed = 1000, 100, 5, 3
			env, err := NewEnvelope("smoke", j)
			if err != nil {
				t.Error(err)
				return
			}
			m, err := SmokeKind{}.Open(ctx, env.Job, Position{Role: proto.RoleMachine, Rank: r})
			if err != nil {
				t.Error(err)
				return
			}
			cfg.Rule = m.Rule
			sums[r], _, errs[r] = RunNode(ctx, Node{Config: cfg, Member: m})
		})
	}
	wg.Wait()
	if err := <-schedErr; err != nil {
		t.Fatal(err)
	}
	if out := <-rest; !strings.Contains(out, "job finished: 2 servers, 2 workers") {
		t.Errorf("scheduler printed %q", out)
	}
	checked := false
	for r, s := range sums {
		if errs[r] != nil || s == nil || s.Smoke == nil {
			t.Fatalf("machine %d: %+v %v", r, s, errs[r])
		}
		checked = checked || s.Smoke.Checked
		if len(s.Nodes) != 2 || s.Role != "machine" || s.Smoke.KeysPushed != 500 || s.Error != "" {
			t.Errorf("machine %d: summary %+v", r, s)
		}
	}
	if !checked {
		t.Error("no worker checked the sums")
	}
}

// TestRunNodeRefused: a node with the wrong token is refused and says so.
func TestRunNodeRefused(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	sc := sched.DefaultConfig()
	sc.NumServers, sc.NumWorkers, sc.Token, sc.StartTimeout = 1, 1, "right", 2*time.Second
	pr, pw := io.Pipe()
	go func() {
		RunScheduler(ctx, Scheduler{Config: sc, Addr: "127.0.0.1:0", Token: "right", Out: pw, Log: testWriter{t}})
		pw.Close()
	}()
	line, _ := bufio.NewReader(pr).ReadString('\n')
	go io.Copy(io.Discard, pr)
	addr := strings.TrimPrefix(strings.TrimSpace(line), schedulerPrefix)
	cfg := node.DefaultConfig()
	cfg.Scheduler, cfg.Token, cfg.Network, cfg.JoinTimeout = addr, "wrong", node.TCP{Token: "wrong"}, 3*time.Second
	if _, _, err := RunNode(ctx, Node{Config: cfg}); err == nil {
		t.Fatal("a node with the wrong token joined")
	}
}

// testWriter writes to the test's log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// TestSchedulerWithoutToken: a scheduler without a token refuses to
// start, unless Insecure, and then says on its log that the cluster is
// open.
func TestSchedulerWithoutToken(t *testing.T) {
	sc := sched.DefaultConfig()
	err := RunScheduler(context.Background(), Scheduler{Config: sc, Addr: "127.0.0.1:0", Out: io.Discard, Log: io.Discard})
	const want = "launch: the scheduler has no cluster token, so any process that reaches its port could join the job or end it: set one (colo node --token or COLO_TOKEN; colo launch and colo train --processes make a random one), or run an open cluster with --insecure"
	if err == nil || err.Error() != want {
		t.Fatalf("without a token: %v\nwant %s", err, want)
	}
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	var log strings.Builder
	done := make(chan error, 1)
	go func() {
		done <- RunScheduler(ctx, Scheduler{Config: sc, Addr: "127.0.0.1:0", Insecure: true, Out: pw, Log: &log})
		pw.Close()
	}()
	line, _ := bufio.NewReader(pr).ReadString('\n')
	go io.Copy(io.Discard, pr)
	cancel()
	<-done
	addr := strings.TrimPrefix(strings.TrimSpace(line), schedulerPrefix)
	if w := "scheduler: WARNING: no cluster token (insecure): any process that reaches " + addr + " can join this job or end it\n"; log.String() != w {
		t.Fatalf("insecure scheduler logged %q, want %q", log.String(), w)
	}
}
