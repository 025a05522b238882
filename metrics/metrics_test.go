package metrics

import (
	"context"
	"flag"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"colo/ps/node"
	"colo/ps/proto"
	"colo/ps/server"
	"colo/ps/worker"
	"colo/train"
	"colo/transport"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// nodeStats is machine 0 of two: its worker talks to its own server
// through memory and to server 1 over the network.
func nodeStats() node.Stats {
	inner := transport.LinkStats{MsgsSent: 3, BytesSent: 300, MsgsRecv: 3, BytesRecv: 1200}
	inter := transport.LinkStats{MsgsSent: 2, BytesSent: 200, MsgsRecv: 2, BytesRecv: 800}
	sched := transport.LinkStats{MsgsSent: 1, BytesSent: 40, MsgsRecv: 1, BytesRecv: 64}
	return node.Stats{
		Machine: 0,
		Links: []node.LinkStats{
			{From: proto.WorkerID(0), To: proto.SchedulerID, LinkStats: sched},
			{From: proto.WorkerID(0), To: proto.ServerID(0), Inner: true, LinkStats: inner},
			{From: proto.WorkerID(0), To: proto.ServerID(1), LinkStats: inter},
			{From: proto.ServerID(0), To: proto.SchedulerID, LinkStats: sched},
		},
		Inner: inner,
		Inter: inter.Add(sched),
		Replies: []node.ReplyQueueStats{
			{From: proto.ServerID(0), To: proto.WorkerID(1), Replies: 2, Bytes: 8_000_120, MaxBytes: 12_000_180},
			{From: proto.ServerID(0), To: proto.EvaluatorID(0)},
		},
		Server: &server.Stats{Pushes: 5, Pulls: 4, KeysPushed: 50, KeysPulled: 40, Rounds: 2, MaxLead: 1, Keys: 100, KeyShare: 0.5,
			Staleness: server.Staleness{Pushes: 4, Sum: 3, Max: 2, Hist: [server.StalenessBuckets]uint64{2, 1, 1}}},
		Worker: &worker.Stats{Pushes: 5, Pulls: 5, KeysPushed: 50, KeysPulled: 50, Rounds: 3, Gated: 1, Latency: []worker.ServerLatency{
			// Server 0 (through memory): 5 pushes, 3 of at most 10 µs and 2 of 20 µs to 40 µs.
			{Push: worker.Latency{Count: 5, Nanos: 90_000, Hist: [worker.LatencyBuckets + 1]uint64{3, 0, 2}}},
			// Server 1: 5 pulls, one beyond the last bound.
			{Pull: worker.Latency{Count: 5, Nanos: 6_000_000_000 + 4_000_000, Hist: [worker.LatencyBuckets + 1]uint64{7: 4, worker.LatencyBuckets: 1}}},
		}},
	}
}

func endpointStats() transport.Stats {
	return transport.Stats{Links: map[transport.NodeID]transport.LinkStats{
		proto.WorkerID(1): {MsgsSent: 4, BytesSent: 400, MsgsRecv: 5, BytesRecv: 500},
		proto.ServerID(0): {MsgsSent: 1, BytesSent: 100, MsgsRecv: 2, BytesRecv: 200},
	}}
}

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("output differs from %s (rerun with -update after checking):\n%s", path, got)
	}
}

// gather writes what the collectors give in the text format.
func gather(t *testing.T, cs ...prometheus.Collector) string {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(cs...)
	var b strings.Builder
	if err := Write(&b, reg); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// parse parses text with the Prometheus text parser and checks every
// label value is free of spaces.
func parse(t *testing.T, text string) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatalf("the text parser refuses the metrics: %v\n%s", err, text)
	}
	for name, mf := range mfs {
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if strings.ContainsAny(l.GetValue(), " \t\n") {
					t.Errorf("%s{%s=%q}: a label value with a space", name, l.GetName(), l.GetValue())
				}
			}
		}
	}
	return mfs
}

// value returns the value of the sample of family name whose labels
// include want (name=value pairs), or NaN.
func value(mfs map[string]*dto.MetricFamily, name string, want ...string) float64 {
	mf := mfs[name]
	if mf == nil {
		return math.NaN()
	}
next:
	for _, m := range mf.GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		for i := 0; i+1 < len(want); i += 2 {
			if labels[want[i]] != want[i+1] {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue()
		case m.Gauge != nil:
			return m.Gauge.GetValue()
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount())
		}
	}
	return math.NaN()
}

func TestNodeCollectorGolden(t *testing.T) {
	st := nodeStats()
	text := gather(t, NewNodeCollector(func() node.Stats { return st }))
	golden(t, "node.prom", text)
	mfs := parse(t, text)
	// Values checked by hand against nodeStats.
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"colo_link_bytes_total", []string{"from", "worker_0", "to", "server_1", "scope", "inter", "dir", "recv"}, 800},
		{"colo_link_messages_total", []string{"from", "worker_0", "to", "server_0", "scope", "inner", "dir", "sent"}, 3},
		{"colo_traffic_bytes_total", []string{"machine", "0", "scope", "inter", "dir", "sent"}, 240},
		{"colo_server_pushes_total", []string{"server", "server_0"}, 5},
		{"colo_server_max_lead_rounds", []string{"server", "server_0"}, 1},
		{"colo_server_staleness_rounds", []string{"server", "server_0"}, 4},
		{"colo_worker_keys_pulled_total", []string{"worker", "worker_0"}, 50},
		{"colo_worker_round", []string{"worker", "worker_0"}, 3},
		{"colo_server_key_share", []string{"server", "server_0"}, 0.5},
		{"colo_server_reply_queue_bytes", []string{"server", "server_0", "to", "worker_1"}, 8_000_120},
		{"colo_server_reply_queue_max_bytes", []string{"server", "server_0", "to", "worker_1"}, 12_000_180},
		{"colo_server_reply_queue_bytes", []string{"server", "server_0", "to", "evaluator_0"}, 0},
		{"colo_worker_request_duration_seconds", []string{"worker", "worker_0", "server", "server_0", "op", "push"}, 5},
		{"colo_worker_request_duration_seconds", []string{"worker", "worker_0", "server", "server_1", "op", "pull"}, 5},
	} {
		if got := value(mfs, c.name, c.labels...); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	h := mfs["colo_server_staleness_rounds"].GetMetric()[0].GetHistogram()
	if b := h.GetBucket(); len(b) < server.StalenessBuckets-1 || b[0].GetCumulativeCount() != 2 || b[1].GetCumulativeCount() != 3 ||
		b[2].GetCumulativeCount() != 4 || h.GetSampleSum() != 3 {
		t.Errorf("staleness histogram %v", h)
	}
	// The round trips: cumulative buckets at 10 µs · 2^i, seconds summed;
	// none for a server the worker never asked.
	if got := value(mfs, "colo_worker_request_duration_seconds", "server", "server_1", "op", "push"); !math.IsNaN(got) {
		t.Errorf("a histogram of no push to server 1: %v", got)
	}
	for _, m := range mfs["colo_worker_request_duration_seconds"].GetMetric() {
		h := m.GetHistogram()
		b := h.GetBucket()
		if len(b) != worker.LatencyBuckets+1 || b[0].GetUpperBound() != 1e-5 || b[17].GetUpperBound() != 1.31072 || b[19].GetUpperBound() != 5.24288 || !math.IsInf(b[20].GetUpperBound(), 1) {
			t.Fatalf("round-trip buckets %v, want 20 from 10 µs to 5.24288 s and +Inf", b)
		}
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		switch labels["server"] + "/" + labels["op"] {
		case "server_0/push":
			if b[0].GetCumulativeCount() != 3 || b[1].GetCumulativeCount() != 3 || b[2].GetCumulativeCount() != 5 || math.Abs(h.GetSampleSum()-9e-5) > 1e-12 {
				t.Errorf("server 0's pushes: %v", h)
			}
		case "server_1/pull":
			if b[6].GetCumulativeCount() != 0 || b[7].GetCumulativeCount() != 4 || b[19].GetCumulativeCount() != 4 || h.GetSampleCount() != 5 || math.Abs(h.GetSampleSum()-6.004) > 1e-9 {
				t.Errorf("server 1's pulls: %v", h)
			}
		}
	}
}

func TestEndpointCollectorGolden(t *testing.T) {
	text := gather(t, NewEndpointCollector("scheduler", endpointStats))
	golden(t, "endpoint.prom", text)
	mfs := parse(t, text)
	if got := value(mfs, "colo_link_bytes_total", "from", "scheduler", "to", "worker_1", "dir", "recv"); got != 500 {
		t.Errorf("scheduler ← worker 1: %v bytes, want 500", got)
	}
}

// TestNodeCollectorWithoutLinks: a node with no link yet has no server or
// worker counters (their labels come from the links), and a nil source
// collects nothing until Set; Freeze keeps the last values.
func TestNodeCollectorWithoutLinks(t *testing.T) {
	text := gather(t, NewNodeCollector(func() node.Stats { return node.Stats{Server: &server.Stats{}, Worker: &worker.Stats{}} }))
	if strings.Contains(text, "colo_server_") || strings.Contains(text, "colo_worker_") {
		t.Errorf("server or worker metrics without links:\n%s", text)
	}
	c := NewNodesCollector(nil)
	if text := gather(t, c); text != "" {
		t.Errorf("nil source: %q", text)
	}
	st := nodeStats()
	c.Set(func() []node.Stats { return []node.Stats{st} })
	c.Freeze()
	st = node.Stats{}
	if got := value(parse(t, gather(t, c)), "colo_worker_round", "worker", "worker_0"); got != 3 {
		t.Errorf("frozen worker round %v, want 3", got)
	}
}

// TestTraining feeds three passes; the round time is the last pass's time
// over its rounds: (2.5 − 1.0) / (30 − 20) = 0.15 s.
func TestTraining(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	tr := NewTraining(reg)
	tr.Pass(train.Pass{Pass: 1, Rounds: 10, Seconds: 0.4, TrainLoss: 0.6, TrainAccuracy: 0.7})
	if _, err := reg.Gather(); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	Write(&b, reg)
	if strings.Contains(b.String(), "colo_validation") {
		t.Errorf("validation gauges before a validation:\n%s", b.String())
	}
	acc := 0.8
	tr.Pass(train.Pass{Pass: 2, Rounds: 20, Seconds: 1.0, TrainLoss: 0.5})
	tr.Check(train.Check{Step: 20, Validation: train.Eval{Accuracy: &acc}})
	tr.Pass(train.Pass{Pass: 3, Rounds: 30, Seconds: 2.5, TrainLoss: 0.4, TrainAccuracy: 0.9})
	b.Reset()
	if err := Write(&b, reg); err != nil {
		t.Fatal(err)
	}
	mfs := parse(t, b.String())
	for name, want := range map[string]float64{
		"colo_train_pass": 3, "colo_train_rounds": 30, "colo_train_loss": 0.4, "colo_train_accuracy": 0.9,
		"colo_train_seconds": 2.5, "colo_validation_accuracy": 0.8,
	} {
		if got := value(mfs, name); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	if got := value(mfs, "colo_train_round_seconds"); math.Abs(got-0.15) > 1e-12 {
		t.Errorf("round seconds %v, want 0.15", got)
	}
	if got := value(mfs, "colo_validation_log_loss"); !math.IsNaN(got) {
		t.Errorf("validation log loss %v, want NaN (not measured)", got)
	}
}

// get fetches url's body, failing t on a transport error.
func get(t *testing.T, url string) (*http.Response, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(body)
}

// syncBuilder is a strings.Builder safe for one writer and one reader.
type syncBuilder struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuilder) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuilder) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestFlags serves a registry with the runtime collectors, writes the
// final values to a file and keeps serving them for --linger; a done
// context cuts the linger short.
func TestFlags(t *testing.T) {
	reg := NewRegistry()
	st := nodeStats()
	reg.MustRegister(NewNodeCollector(func() node.Stats { return st }))
	file := filepath.Join(t.TempDir(), "final.prom")
	f := Flags{Addr: "127.0.0.1:0", File: file, Linger: 300 * time.Millisecond}
	var log syncBuilder
	end, err := f.Start(reg, &log)
	if err != nil {
		t.Fatal(err)
	}
	// The flag holds the requested address, port 0: Start says at once
	// where it serves, and the linger line says it again.
	serving := regexp.MustCompile(`^metrics: serving (http://127\.0\.0\.1:[1-9][0-9]*/metrics) \(--metrics 127\.0\.0\.1:0: a free port\)\n$`).FindStringSubmatch(log.String())
	if serving == nil {
		t.Fatalf("Start logged %q, not where it serves", log.String())
	}
	done := make(chan error)
	start := time.Now()
	go func() { done <- end(context.Background()) }()
	var url string
	for deadline := time.Now().Add(5 * time.Second); url == "" && time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if _, rest, ok := strings.Cut(log.String(), "stay at http://"); ok {
			url, _, _ = strings.Cut(rest, " ")
			url = "http://" + url
		}
	}
	if url != serving[1] {
		t.Fatalf("linger line at %q, Start's at %q: %q", url, serving[1], log.String())
	}
	resp, body := get(t, url)
	mfs := parse(t, body)
	if resp.StatusCode != http.StatusOK || mfs["go_goroutines"] == nil || mfs["process_cpu_seconds_total"] == nil ||
		value(mfs, "colo_server_pushes_total", "server", "server_0") != 5 {
		t.Errorf("GET %s while lingering: %s\n%s", url, resp.Status, body)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < f.Linger {
		t.Errorf("end returned after %v, before the linger of %v", d, f.Linger)
	}
	if _, err := http.Get(url); err == nil {
		t.Error("still serving after the linger")
	}
	text, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if value(parse(t, string(text)), "colo_worker_pushes_total", "worker", "worker_0") != 5 {
		t.Errorf("the metrics file lacks the worker's pushes:\n%s", text)
	}
	// A done context ends the linger at once.
	f.Linger, f.File = time.Hour, ""
	end, err = f.Start(reg, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := end(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestFlagsErrors(t *testing.T) {
	reg := NewRegistry()
	for _, c := range []struct {
		f    Flags
		want string
	}{
		{Flags{Addr: "127.0.0.1:-1"}, "--metrics"},
		{Flags{Addr: "127.0.0.1:0", Linger: -time.Second}, "--linger"},
	} {
		if _, err := c.f.Start(reg, nil); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want an error naming %s", c.f, err, c.want)
		}
	}
	// A file that cannot be written fails at Start, before the job.
	missing := filepath.Join(t.TempDir(), "no", "such", "dir.prom")
	if _, err := (&Flags{File: missing}).Start(reg, nil); err == nil || !strings.Contains(err.Error(), "--metrics-file: cannot write "+missing) {
		t.Errorf("a file in a missing directory: %v, want it refused at Start", err)
	}
	// One whose directory goes away during the job fails at its end.
	dir := filepath.Join(t.TempDir(), "gone")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	end, err := (&Flags{File: filepath.Join(dir, "m.prom")}).Start(reg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(dir); err != nil {
		t.Fatal(err)
	}
	if err := end(context.Background()); err == nil || !strings.Contains(err.Error(), "--metrics-file") {
		t.Errorf("a file in a directory removed during the job: %v", err)
	}
}

func TestServe(t *testing.T) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(NewEndpointCollector("scheduler", endpointStats))
	addr, stop, err := Serve("127.0.0.1:0", reg)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	resp, body := get(t, "http://"+addr+"/metrics")
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain; version=0.0.4") {
		t.Fatalf("GET /metrics: %s %q\n%s", resp.Status, resp.Header.Get("Content-Type"), body)
	}
	parse(t, body)
	if resp, _ := get(t, "http://"+addr+"/other"); resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET /other: %s, want 404", resp.Status)
	}
	stop()
	stop() // a second stop is harmless
	if _, err := http.Get("http://" + addr + "/metrics"); err == nil {
		t.Error("the server still answers after stop")
	}
}

// BenchmarkScrape is the cost of one scrape of a node (the registry of
// colo node --metrics: its counters, the Go runtime's and the process's)
// encoded in the text format: what metrics cost a node per scrape, the
// only cost they have (nothing is counted for them between scrapes).
func BenchmarkScrape(b *testing.B) {
	reg := NewRegistry()
	st := nodeStats()
	reg.MustRegister(NewNodeCollector(func() node.Stats { return st }))
	for b.Loop() {
		if err := Write(io.Discard, reg); err != nil {
			b.Fatal(err)
		}
	}
}
