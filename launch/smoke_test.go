package launch

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// TestSmoke runs colo launch's cluster on loopback, machines and separate
// servers and workers: every worker pushes Rounds×Batch keys and one
// checks every value is the exact sum.
func TestSmoke(t *testing.T) {
	needColo(t)
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
			cfg := DefaultSmokeConfig()
			cfg.Machines, cfg.Servers, cfg.Workers = c.machines, c.servers, c.workers
			cfg.Consistency, cfg.Tau = c.consistency, c.tau
			cfg.Keys, cfg.Batch, cfg.Rounds, cfg.Bin = 20000, 2000, 5, coloBin
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			s, err := Smoke(ctx, cfg)
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
	cfg := DefaultSmokeConfig()
	cfg.Bin = "/bin/false"
	if s, err := Smoke(context.Background(), cfg); s != nil || err == nil || !strings.Contains(err.Error(), "launch: scheduler did not start: it ended (exit status 1)") {
		t.Errorf("/bin/false: %v, %v", s, err)
	}
	needColo(t)
	cfg = DefaultSmokeConfig()
	cfg.Bin, cfg.Rounds, cfg.Batch = coloBin, 1_000_000, 10
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	s, err := Smoke(ctx, cfg)
	if err == nil || !strings.Contains(err.Error(), "the cluster was stopped") || s == nil || s.Error != err.Error() {
		t.Errorf("stopped: %v, %+v", err, s)
	}
}

func TestSmokeConfigValidate(t *testing.T) {
	if err := DefaultSmokeConfig().Validate(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		edit func(*SmokeConfig)
		want string
	}{
		{func(c *SmokeConfig) { c.Machines = 0 }, "Machines 0"},
		{func(c *SmokeConfig) { c.Servers = 2 }, "Workers 0"},
		{func(c *SmokeConfig) { c.Consistency = "eventual" }, "Consistency"},
		{func(c *SmokeConfig) { c.Tau = -1 }, "Tau -1"},
		{func(c *SmokeConfig) { c.Restarts = -1 }, "launch: Restarts -1 is negative"},
		{func(c *SmokeConfig) { c.Batch = 0 }, "Batch 0"},
		{func(c *SmokeConfig) { c.Keys = 0 }, "Keys 0"},
		{func(c *SmokeConfig) { c.Rounds = 0 }, "Rounds 0"},
		{func(c *SmokeConfig) { c.Heartbeat = 0 }, "Heartbeat 0s"},
		{func(c *SmokeConfig) { c.Heartbeat, c.Timeout = time.Nanosecond, 2*time.Nanosecond }, "launch: Heartbeat 1ns, at least 1ms"},
		{func(c *SmokeConfig) { c.Timeout = c.Heartbeat }, "Timeout 100ms"},
	} {
		cfg := DefaultSmokeConfig()
		c.edit(&cfg)
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", cfg, err, c.want)
		}
	}
	// Servers and workers replace the machines.
	cfg := DefaultSmokeConfig()
	cfg.Machines, cfg.Servers, cfg.Workers = 0, 1, 3
	if err := cfg.Validate(); err != nil {
		t.Error(err)
	}
}

// TestNodeSummaryJSON: the summary colo node --json prints keeps its
// field names; a training result passes through as it was written.
func TestNodeSummaryJSON(t *testing.T) {
	in := `{"role":"machine","nodes":["server 0","worker 0"],"machine":0,"start_s":0.5,"started_unix_ns":7,` +
		`"train":{"passes":[{"pass":1}]},"error":"x","stats":{}}`
	var s NodeSummary
	if err := json.Unmarshal([]byte(in), &s); err != nil {
		t.Fatal(err)
	}
	if s.Role != "machine" || len(s.Nodes) != 2 || s.StartSeconds != 0.5 || s.StartedUnixNano != 7 || s.Error != "x" ||
		string(s.Train) != `{"passes":[{"pass":1}]}` {
		t.Errorf("%+v", s)
	}
	out, err := json.Marshal(NodeSummary{Role: "server"})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), `"train"`) || strings.Contains(string(out), `"smoke"`) {
		t.Errorf("empty jobs marshalled: %s", out)
	}
}

// TestSmokeMetrics runs colo launch's cluster with --metrics-file: the
// final values of every process, each labelled with its process, parse
// with the Prometheus text parser and add up to the job.
func TestSmokeMetrics(t *testing.T) {
	needColo(t)
	cfg := DefaultSmokeConfig()
	cfg.Keys, cfg.Batch, cfg.Rounds, cfg.Bin = 20000, 2000, 5, coloBin
	cfg.Metrics.Addr = "127.0.0.1:0"
	cfg.Metrics.File = filepath.Join(t.TempDir(), "launch.prom")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := Smoke(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	text, err := os.ReadFile(cfg.Metrics.File)
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
