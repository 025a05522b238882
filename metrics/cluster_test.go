package metrics_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"colo/cluster"
	"colo/metrics"
	"colo/ps/clock"
)

// TestMetrics scrapes the endpoint of an in-process cluster's nodes while
// it runs, and parses it with the Prometheus text parser.
func TestMetrics(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cfg := cluster.DefaultConfig()
	cfg.NumKeys, cfg.Clock = 100, clock.Config{Mode: clock.Async}
	c, err := cluster.Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Worker(0).Push([]uint64{1, 99}, []float32{1, 2}).Wait(); err != nil {
		t.Fatal(err)
	}
	if err := c.Worker(0).Pull([]uint64{1, 99}, make([]float32, 2)).Wait(); err != nil {
		t.Fatal(err)
	}
	reg := metrics.NewRegistry()
	reg.MustRegister(metrics.NewNodesCollector(c.Stats))
	addr, stop, err := metrics.Serve("127.0.0.1:0", reg)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	parser := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := parser.TextToMetricFamilies(strings.NewReader(string(body)))
	if err != nil {
		t.Fatalf("the text parser refuses the endpoint: %v\n%s", err, body)
	}
	for _, name := range []string{"colo_link_bytes_total", "colo_link_messages_total", "colo_traffic_bytes_total",
		"colo_server_pushes_total", "colo_worker_keys_pushed_total", "colo_server_staleness_rounds", "colo_server_key_share", "colo_worker_request_duration_seconds", "go_goroutines", "process_cpu_seconds_total"} {
		if mfs[name] == nil {
			t.Errorf("no family %s:\n%s", name, body)
		}
	}
	text := string(body)
	for _, want := range []string{
		`colo_link_messages_total{dir="sent",from="worker_0",scope="inner",to="server_0"} 2`,
		`colo_link_messages_total{dir="sent",from="worker_0",scope="inter",to="server_1"} 2`,
		`colo_worker_keys_pushed_total{worker="worker_0"} 2`,
		`colo_server_pushes_total{server="server_0"} 1`,
		`colo_server_pushes_total{server="server_1"} 1`,
		`colo_server_key_share{server="server_0"} 0.5`,
		`colo_server_key_share{server="server_1"} 0.5`,
		`colo_worker_request_duration_seconds_count{op="push",server="server_0",worker="worker_0"} 1`,
		`colo_worker_request_duration_seconds_count{op="push",server="server_1",worker="worker_0"} 1`,
		`colo_worker_request_duration_seconds_count{op="pull",server="server_0",worker="worker_0"} 1`,
		`colo_worker_request_duration_seconds_count{op="pull",server="server_1",worker="worker_0"} 1`,
		`colo_worker_request_duration_seconds_bucket{op="pull",server="server_1",worker="worker_0",le="+Inf"} 1`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("metrics lack %q:\n%s", want, text)
		}
	}
	// Worker 1 asked nothing: no round trips.
	if strings.Contains(text, `colo_worker_request_duration_seconds_count{op="push",server="server_0",worker="worker_1"}`) {
		t.Errorf("round trips of worker 1, which sent nothing:\n%s", text)
	}
}
