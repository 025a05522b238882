package metrics_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"colo/cluster"
	"colo/metrics"
	"colo/ps/clock"
)

// TestMetrics scrapes the Prometheus endpoint of an in-process node.
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
	n := c.WorkerNode(0)
	addr, stop, err := metrics.Serve("127.0.0.1:0", func(w io.Writer) error { return metrics.WriteNode(w, n.Stats()) })
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	var b strings.Builder
	if err := metrics.WriteNode(&b, n.Stats()); err != nil {
		t.Fatal(err)
	}
	text := b.String()
	for _, want := range []string{
		"# TYPE colo_link_bytes_total counter",
		`colo_link_messages_total{from="worker 0",to="server 0",scope="inner",dir="sent"} 1`,
		`colo_link_messages_total{from="worker 0",to="server 1",scope="inter",dir="sent"} 1`,
		`colo_traffic_bytes_total{scope="inner",dir="sent"}`,
		"colo_worker_keys_pushed_total 2",
		"colo_server_pushes_total 1",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("metrics lack %q:\n%s", want, text)
		}
	}
	// Every sample line is NAME{LABELS} VALUE or NAME VALUE.
	for _, l := range strings.Split(strings.TrimSpace(text), "\n") {
		if strings.HasPrefix(l, "#") {
			continue
		}
		want := 1
		if !strings.Contains(l, "}") {
			want = 2
		}
		if f := strings.Fields(l[strings.LastIndexByte(l, '}')+1:]); len(f) != want {
			t.Errorf("bad sample line %q", l)
		}
	}
	// And the endpoint serves it.
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || !strings.Contains(string(body), "colo_worker_keys_pushed_total 2") ||
		!strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain; version=0.0.4") {
		t.Fatalf("GET /metrics: %s %q\n%s", resp.Status, resp.Header.Get("Content-Type"), body)
	}
}
