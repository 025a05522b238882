package smoke

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"colo/internal/colotest"
	"colo/launch"
	"colo/launch/netns"
	"colo/metrics"
	"colo/ps/node"
	"colo/ps/proto"
	"colo/ps/sched"
	"colo/transport"
	"colo/transport/tcp/tcptest"
)

// coloBin is the colo binary TestMain builds for the tests that run a
// real cluster; empty when go is not on PATH.
var coloBin string

func TestMain(m *testing.M) { os.Exit(colotest.Main(m, &coloBin)) }

// testLog writes to the test's log.
type testLog struct{ t *testing.T }

func (w testLog) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// TestSmoke runs colo launch's cluster on loopback, machines and separate
// servers and workers: every worker pushes Rounds×Batch keys and one
// checks every value is the exact sum.
func TestSmoke(t *testing.T) {
	colotest.Need(t, coloBin)
	for _, c := range []struct {
		name                       string
		machines, servers, workers int
		consistency                string
		tau                        int
	}{
		{"2 machines", 2, 0, 0, "bsp", 0},
		{"2 servers 2 workers", 0, 2, 2, "bounded", 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := DefaultLaunchConfig()
			cfg.Machines, cfg.Servers, cfg.Workers = c.machines, c.servers, c.workers
			cfg.Consistency, cfg.Tau = c.consistency, c.tau
			cfg.Keys, cfg.Batch, cfg.Rounds, cfg.Bin = 20000, 2000, 5, coloBin
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			s, err := Launch(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			ns, nw := cfg.shape()
			if s.Servers != ns || s.Workers != nw || s.Machines != c.machines || s.Consistency != c.consistency {
				t.Errorf("shape: %d servers %d workers %d machines %s", s.Servers, s.Workers, s.Machines, s.Consistency)
			}
			nodes := ns + nw
			if c.machines > 0 {
				nodes = c.machines
			}
			if len(s.Nodes) != nodes {
				t.Errorf("%d node summaries, want %d", len(s.Nodes), nodes)
			}
			if want := uint64(nw * cfg.Rounds * cfg.Batch); !s.Checked || s.KeysPushed != want {
				t.Errorf("checked %v, %d keys pushed, want %d", s.Checked, s.KeysPushed, want)
			}
			if s.Inter.MsgsSent == 0 || (c.machines > 0) != (s.Inner.MsgsSent > 0) {
				t.Errorf("traffic inter %+v inner %+v", s.Inter, s.Inner)
			}
			if !(s.StartSeconds > 0 && s.StartSeconds < s.TotalSeconds && s.KeysPerSec > 0) || s.Error != "" {
				t.Errorf("start %v total %v rate %v error %q", s.StartSeconds, s.TotalSeconds, s.KeysPerSec, s.Error)
			}
			t.Logf("start %.3f s, %.2fM keys/s", s.StartSeconds, s.KeysPerSec/1e6)
		})
	}
}

// TestSmokeFails: a binary that is not colo fails at the scheduler; a
// cluster that cannot finish in time is stopped.
func TestSmokeFails(t *testing.T) {
	cfg := DefaultLaunchConfig()
	cfg.Bin = "/bin/false"
	if s, err := Launch(context.Background(), cfg); s != nil || err == nil || !strings.Contains(err.Error(), "launch: scheduler did not start: it ended (exit status 1)") {
		t.Errorf("/bin/false: %v, %v", s, err)
	}
	colotest.Need(t, coloBin)
	cfg = DefaultLaunchConfig()
	cfg.Bin, cfg.Rounds, cfg.Batch = coloBin, 1_000_000, 10
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	s, err := Launch(ctx, cfg)
	if err == nil || !strings.Contains(err.Error(), "the cluster was stopped") || s == nil || s.Error != err.Error() {
		t.Errorf("stopped: %v, %+v", err, s)
	}
}

func TestLaunchConfigValidate(t *testing.T) {
	if err := DefaultLaunchConfig().Validate(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		edit func(*LaunchConfig)
		want string
	}{
		{func(c *LaunchConfig) { c.Machines = 0 }, "Machines 0"},
		{func(c *LaunchConfig) { c.Servers = 2 }, "Workers 0"},
		{func(c *LaunchConfig) { c.Servers = -1 }, "Servers -1 and Workers 0: want 0"}, // was taken for machines
		{func(c *LaunchConfig) { c.Workers = -1 }, "Workers -1"},
		{func(c *LaunchConfig) { c.Consistency = "eventual" }, "Consistency"},
		{func(c *LaunchConfig) { c.Tau = -1 }, "Tau -1"},
		{func(c *LaunchConfig) { c.Restarts = -1 }, "launch: Restarts -1 is negative"},
		{func(c *LaunchConfig) { c.Batch = 0 }, "Batch 0"},
		{func(c *LaunchConfig) { c.Keys = 0 }, "Keys 0"},
		{func(c *LaunchConfig) { c.Rounds = 0 }, "Rounds 0"},
		{func(c *LaunchConfig) { c.Heartbeat = 0 }, "Heartbeat 0s"},
		{func(c *LaunchConfig) { c.Heartbeat, c.Timeout = time.Nanosecond, 2*time.Nanosecond }, "launch: Heartbeat 1ns, at least 1ms"},
		{func(c *LaunchConfig) { c.Timeout = c.Heartbeat }, "Timeout 100ms"},
		{func(c *LaunchConfig) { c.Machines = 100000 }, "launch: Machines 100000: 100000 processes on this host, at most 4096"},
		{func(c *LaunchConfig) { c.Machines = launch.MaxProcesses + 1 }, "Machines 4097: 4097 processes"},
		{func(c *LaunchConfig) { c.Servers, c.Workers = 100000, 1 }, "launch: Servers 100000 and Workers 1: 100001 processes on this host, at most 4096"},
		{func(c *LaunchConfig) { c.Servers, c.Workers = 3000, 3000 }, "Servers 3000 and Workers 3000: 6000 processes"},
	} {
		cfg := DefaultLaunchConfig()
		c.edit(&cfg)
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", cfg, err, c.want)
		}
	}
	// Servers and workers replace the machines.
	cfg := DefaultLaunchConfig()
	cfg.Machines, cfg.Servers, cfg.Workers = 0, 1, 3
	if err := cfg.Validate(); err != nil {
		t.Error(err)
	}
	// As many processes as one host may run.
	for _, shape := range [][3]int{{launch.MaxProcesses, 0, 0}, {0, 2048, 2048}, {100000, 1, 1}} {
		cfg := DefaultLaunchConfig()
		cfg.Machines, cfg.Servers, cfg.Workers = shape[0], shape[1], shape[2]
		if err := cfg.Validate(); err != nil {
			t.Errorf("machines %d, servers %d, workers %d: %v", shape[0], shape[1], shape[2], err)
		}
	}
}

// TestSmokeMetrics runs colo launch's cluster with --metrics-file: the
// final values of every process, each labelled with its process, parse
// with the Prometheus text parser and add up to the job.
func TestSmokeMetrics(t *testing.T) {
	colotest.Need(t, coloBin)
	cfg := DefaultLaunchConfig()
	cfg.Keys, cfg.Batch, cfg.Rounds, cfg.Bin = 20000, 2000, 5, coloBin
	mf := metrics.Flags{Addr: "127.0.0.1:0", File: filepath.Join(t.TempDir(), "launch.prom")}
	cm, err := metrics.NewCluster()
	if err != nil {
		t.Fatal(err)
	}
	defer cm.Close()
	end, err := mf.Start(cm, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Flags = cm.Args
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := Launch(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	if err := end(ctx); err != nil {
		t.Fatal(err)
	}
	text, err := os.ReadFile(mf.File)
	if err != nil {
		t.Fatal(err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := parser.TextToMetricFamilies(bytes.NewReader(text))
	if err != nil {
		t.Fatalf("the text parser refuses the file: %v\n%s", err, text)
	}
	procs := map[string]bool{}
	for _, m := range mfs["go_goroutines"].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "process" {
				procs[l.GetValue()] = true
			}
		}
	}
	for _, p := range []string{"launch", "scheduler", "machine_0", "machine_1"} {
		if !procs[p] {
			t.Errorf("no go_goroutines of process %s (have %v)", p, procs)
		}
	}
	var pushed float64
	for _, m := range mfs["colo_worker_keys_pushed_total"].GetMetric() {
		pushed += m.GetCounter().GetValue()
	}
	if want := float64(2 * cfg.Rounds * cfg.Batch); pushed != want {
		t.Errorf("workers pushed %v keys, want %v", pushed, want)
	}
	if mfs["colo_link_bytes_total"] == nil || mfs["colo_server_pushes_total"] == nil {
		t.Errorf("link or server families missing:\n%s", text)
	}
}

// TestNamespaces runs the smoke cluster, a scheduler and two machines, in
// three network namespaces joined by shaped veth links (200 Mbit/s,
// 1 ms), the deployment of a real cluster on one host. It needs root and
// iproute2.
func TestNamespaces(t *testing.T) {
	if err := launch.CheckNetns(); err != nil {
		t.Skipf("network namespaces unavailable: %v", err)
	}
	colotest.Need(t, coloBin)
	n, err := launch.NewNetnsConfig(netns.Config{Machines: 3, Rate: "200mbit", Delay: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := n.Close(); err != nil {
			t.Error(err)
		}
	})
	t.Logf("links: %s", n.Net().Shaping())
	if a := n.SchedulerAddr(); a != n.Addr(0)+":7070" || n.Addr(1) == n.Addr(2) {
		t.Fatalf("addresses: scheduler %s, hosts %s %s", a, n.Addr(1), n.Addr(2))
	}
	cfg := DefaultLaunchConfig()
	cfg.Bin, cfg.Starter, cfg.Keys, cfg.Batch, cfg.Rounds = coloBin, n, 20000, 2000, 5
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := Launch(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, ns := range s.Nodes {
		if ns.Stats.Inter.BytesSent == 0 || ns.Stats.Inner.BytesSent == 0 {
			t.Fatalf("machine %d: traffic %+v", ns.Machine, ns.Stats)
		}
	}
	if len(s.Nodes) != 2 || !s.Checked {
		t.Fatalf("%d nodes, checked %v", len(s.Nodes), s.Checked)
	}
	t.Logf("joined in %.3f s, %.2fM keys/s, inter-machine %d bytes", s.StartSeconds, s.KeysPerSec/1e6, s.Inter.BytesSent)

	// A host the network does not have fails to start, naming it.
	sup := launch.NewSupervisor(coloBin, n)
	p := sup.Start(ctx, launch.Spec{Name: "machine 5", Host: 6})
	if err := sup.Wait(ctx); err == nil || p.Err() == nil || !strings.Contains(err.Error(), "host 6 out of range [0, 3)") {
		t.Errorf("host 6: %v", err)
	}
}

// recorder is a launch.Loopback starter that records the specs it starts.
type recorder struct {
	launch.Loopback
	mu    sync.Mutex
	specs []launch.Spec
}

func (r *recorder) Command(ctx context.Context, bin string, s launch.Spec) *exec.Cmd {
	r.mu.Lock()
	r.specs = append(r.specs, s)
	r.mu.Unlock()
	return r.Loopback.Command(ctx, bin, s)
}

// TestSmokeTLS runs colo launch's cluster with every link over mutual TLS:
// the sums are exact, every process gets the certificate files and the
// token in its environment, and no command line holds the token.
func TestSmokeTLS(t *testing.T) {
	colotest.Need(t, coloBin)
	ca, err := tcptest.NewCA("cluster")
	if err != nil {
		t.Fatal(err)
	}
	f, err := ca.WriteNode(t.TempDir(), "node")
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	cfg := DefaultLaunchConfig()
	cfg.Keys, cfg.Batch, cfg.Rounds, cfg.Bin = 20000, 2000, 5, coloBin
	cfg.Token, cfg.TLS, cfg.Starter = "a-token-for-the-environment-only", launch.TLSFlags{Cert: f.Cert, Key: f.Key, CA: f.CA}, rec
	// Not the default 2 s: a send, its link's TLS handshake included, is
	// bounded by the timeout, and the scheduler's first send to worker 0
	// took longer on two loaded cores (load 42).
	cfg.Timeout = 10 * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := Launch(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if want := uint64(cfg.Machines * cfg.Rounds * cfg.Batch); !s.Checked || s.KeysPushed != want {
		t.Fatalf("checked %v, %d keys pushed, want %d", s.Checked, s.KeysPushed, want)
	}
	if len(rec.specs) != 1+cfg.Machines {
		t.Fatalf("%d processes started", len(rec.specs))
	}
	for _, sp := range rec.specs {
		for _, a := range sp.Args {
			if strings.Contains(a, cfg.Token) {
				t.Fatalf("%s: the token on the command line: %q", sp.Name, sp.Args)
			}
		}
		for _, want := range []string{"COLO_TOKEN=" + cfg.Token, "COLO_TLS_CERT=" + f.Cert, "COLO_TLS_KEY=" + f.Key, "COLO_TLS_CA=" + f.CA} {
			if !slices.Contains(sp.Env, want) {
				t.Fatalf("%s: environment %q lacks %s", sp.Name, sp.Env, want)
			}
		}
	}
	t.Logf("start %.3f s, %.2fM keys/s", s.StartSeconds, s.KeysPerSec/1e6)
}

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
		schedErr <- launch.RunScheduler(ctx, launch.Scheduler{Config: sc, Addr: "127.0.0.1:0", Token: "tok", Out: pw, Log: testLog{t}})
		pw.Close()
	}()
	rd := bufio.NewReader(pr)
	line, err := rd.ReadString('\n')
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "scheduler listening on ")
	if err != nil || !ok {
		t.Fatalf("first line %q: %v", line, err)
	}
	rest := make(chan string, 1)
	go func() {
		b, _ := io.ReadAll(rd)
		rest <- string(b)
	}()
	var wg sync.WaitGroup
	sums := make([]*launch.NodeSummary, 2)
	errs := make([]error, 2)
	for r := range 2 {
		wg.Go(func() {
			cfg := node.DefaultConfig()
			cfg.Role, cfg.Rank, cfg.Scheduler, cfg.Token = proto.RoleMachine, r, addr, "tok"
			cfg.Network = node.TCP{Token: "tok"}
			j := DefaultJob()
			j.Keys, j.Batch, j.Rounds, j.Seed = 1000, 100, 5, 3
			env, err := launch.NewEnvelope("smoke", j)
			if err != nil {
				t.Error(err)
				return
			}
			m, err := Kind{}.Open(ctx, env.Job, launch.Position{Role: proto.RoleMachine, Rank: r})
			if err != nil {
				t.Error(err)
				return
			}
			cfg.Rule = m.Rule
			sums[r], _, errs[r] = launch.RunNode(ctx, launch.Node{Config: cfg, Member: m})
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
		var res Result
		if errs[r] != nil || s == nil || json.Unmarshal(s.Smoke, &res) != nil {
			t.Fatalf("machine %d: %+v %v", r, s, errs[r])
		}
		checked = checked || res.Checked
		if len(s.Nodes) != 2 || s.Role != "machine" || res.KeysPushed != 500 || s.Error != "" {
			t.Errorf("machine %d: summary %+v", r, s)
		}
	}
	if !checked {
		t.Error("no worker checked the sums")
	}
}

func TestSummaryText(t *testing.T) {
	var b strings.Builder
	(&Summary{Servers: 2, Workers: 3, Consistency: "async", KeysPushed: 10, Inner: transport.LinkStats{BytesSent: 512}}).WriteText(&b)
	if !strings.Contains(b.String(), "cluster of 2 servers, 3 workers (async)") || !strings.Contains(b.String(), "512 B") {
		t.Errorf("smoke summary:\n%s", b.String())
	}

}
