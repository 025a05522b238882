package dashboard_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"colo/app/smoke"
	"colo/dashboard"
	"colo/launch"
	"colo/ps/node"
	"colo/ps/proto"
	"colo/ps/sched"
	"colo/transport"
)

// TestSchedulerBoard runs a scheduler as colo node --role scheduler
// --dashboard does, with one machine running the smoke job: the board's
// last frame shows the scheduler's traffic with the machine's server and
// worker, both ways.
func TestSchedulerBoard(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cfg := dashboard.DefaultConfig()
	cfg.Interval = time.Hour // the final frame only
	board, err := dashboard.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	sc := sched.DefaultConfig()
	sc.NumServers, sc.NumWorkers, sc.NumKeys, sc.Token = 1, 1, 100, "tok"
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- launch.RunScheduler(ctx, launch.Scheduler{Config: sc, Addr: "127.0.0.1:0", Token: "tok", Out: pw, Log: io.Discard,
			Watch: func(stats func() transport.Stats) { board.WatchEndpoint(proto.SchedulerID, stats) }})
		pw.Close()
	}()
	rd := bufio.NewReader(pr)
	line, err := rd.ReadString('\n')
	addr := strings.TrimSpace(line[strings.LastIndex(line, " ")+1:])
	if err != nil || !strings.Contains(line, "listening") {
		t.Fatalf("first line %q: %v", line, err)
	}
	go io.Copy(io.Discard, rd)
	nc := node.DefaultConfig()
	nc.Role, nc.Rank, nc.Scheduler, nc.Token = proto.RoleMachine, 0, addr, "tok"
	nc.Network = node.TCP{Token: "tok"}
	job := &launch.Member{Run: func(ctx context.Context, n *node.Node, _ *launch.NodeSummary) (any, error) {
		return smoke.Config{Keys: 100, Batch: 10, Rounds: 2, Seed: 1}.Run(ctx, n.Worker(), 1)
	}}
	if _, _, err := launch.RunNode(ctx, launch.Node{Config: nc, Member: job}); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	board.Close()
	var f dashboard.Frame
	if err := json.Unmarshal(board.Frame(), &f); err != nil {
		t.Fatal(err)
	}
	if want := []string{"scheduler", "server 0", "worker 0"}; !slices.Equal(f.Nodes, want) {
		t.Fatalf("nodes %v, want %v", f.Nodes, want)
	}
	for j := 1; j < 3; j++ {
		if f.Bytes[0][j] == 0 || f.Bytes[j][0] == 0 {
			t.Errorf("scheduler and %s: %d bytes sent, %d received", f.Nodes[j], f.Bytes[0][j], f.Bytes[j][0])
		}
	}
	if !f.Ended {
		t.Error("the last frame is not marked ended")
	}
}
