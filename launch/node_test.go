package launch

import (
	"bufio"
	"context"
	"io"
	"strings"
	"testing"

	"colo/internal/colotest"
	"colo/ps/node"
	"colo/ps/sched"
)

// TestRunNodeRefused: a node with the wrong token is refused and says so.
// The scheduler waits for its job, and the node for its answer, as long
// as a test waits for anything, so that on a loaded machine the node is
// refused for its token, not left to time out.
func TestRunNodeRefused(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), colotest.HangTimeout(t))
	defer cancel()
	sc := sched.DefaultConfig()
	sc.NumServers, sc.NumWorkers, sc.Token, sc.StartTimeout = 1, 1, "right", colotest.HangTimeout(t)
	pr, pw := io.Pipe()
	// The scheduler logs to the test's log (the refused node among
	// others): it must have returned before the test does.
	done := make(chan struct{})
	defer func() { cancel(); <-done }()
	go func() {
		defer close(done)
		RunScheduler(ctx, Scheduler{Config: sc, Addr: "127.0.0.1:0", Token: "right", Out: pw, Log: testWriter{t}})
		pw.Close()
	}()
	line, _ := bufio.NewReader(pr).ReadString('\n')
	go io.Copy(io.Discard, pr)
	addr := strings.TrimPrefix(strings.TrimSpace(line), schedulerPrefix)
	cfg := node.DefaultConfig()
	cfg.Scheduler, cfg.Token, cfg.Network, cfg.JoinTimeout = addr, "wrong", node.TCP{Token: "wrong"}, colotest.HangTimeout(t)
	if _, _, err := RunNode(ctx, Node{Config: cfg}); err == nil || !strings.Contains(err.Error(), "wrong cluster token") {
		t.Fatalf("a node with the wrong token: %v, want a refusal for the token", err)
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
