package metrics

import (
	"bytes"
	"errors"
	"flag"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"colo/ps/node"
	"colo/ps/proto"
	"colo/ps/server"
	"colo/ps/worker"
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
		},
		Inner:  inner,
		Inter:  inter.Add(sched),
		Server: &server.Stats{Pushes: 5, Pulls: 4, KeysPushed: 50, KeysPulled: 40, Rounds: 2, MaxLead: 1, Keys: 100},
		Worker: &worker.Stats{Pushes: 5, Pulls: 5, KeysPushed: 50, KeysPulled: 50, Rounds: 3, Gated: 1},
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

func TestWriteNodeGolden(t *testing.T) {
	var b strings.Builder
	if err := WriteNode(&b, nodeStats()); err != nil {
		t.Fatal(err)
	}
	golden(t, "node.prom", b.String())
	checkFormat(t, b.String())
}

func TestWriteEndpointGolden(t *testing.T) {
	var b strings.Builder
	if err := WriteEndpoint(&b, "scheduler", endpointStats()); err != nil {
		t.Fatal(err)
	}
	golden(t, "endpoint.prom", b.String())
	checkFormat(t, b.String())
}

func TestWriteNodeWithoutServerOrWorker(t *testing.T) {
	var b strings.Builder
	if err := WriteNode(&b, node.Stats{}); err != nil {
		t.Fatal(err)
	}
	checkFormat(t, b.String())
	if strings.Contains(b.String(), "colo_server_") || strings.Contains(b.String(), "colo_worker_") {
		t.Errorf("server or worker metrics without a server or worker:\n%s", b.String())
	}
}

// checkFormat checks the text format: every family has exactly one HELP
// and one TYPE line, both before its samples, and its samples are
// contiguous; every sample line is NAME{LABELS} VALUE or NAME VALUE.
func checkFormat(t *testing.T, text string) {
	t.Helper()
	help, typ := map[string]int{}, map[string]int{}
	done := map[string]bool{} // families whose samples have ended
	current := ""
	for _, l := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		if rest, ok := strings.CutPrefix(l, "# HELP "); ok {
			name, _, _ := strings.Cut(rest, " ")
			help[name]++
			continue
		}
		if rest, ok := strings.CutPrefix(l, "# TYPE "); ok {
			name, kind, _ := strings.Cut(rest, " ")
			if kind != "counter" && kind != "gauge" {
				t.Errorf("%q: type %q", l, kind)
			}
			typ[name]++
			continue
		}
		name, _, _ := strings.Cut(l, "{")
		name, _, _ = strings.Cut(name, " ")
		if help[name] != 1 || typ[name] != 1 {
			t.Errorf("sample %q: its family has %d HELP and %d TYPE lines before it, want one of each", l, help[name], typ[name])
		}
		if name != current {
			if done[name] {
				t.Errorf("sample %q: its family's samples are not contiguous", l)
			}
			done[current], current = true, name
		}
		want := 1
		if !strings.Contains(l, "}") {
			want = 2
		}
		if f := strings.Fields(l[strings.LastIndexByte(l, '}')+1:]); len(f) != want {
			t.Errorf("bad sample line %q", l)
		}
	}
	for name, n := range help {
		if n != 1 || typ[name] != 1 {
			t.Errorf("%s: %d HELP and %d TYPE lines, want one of each", name, n, typ[name])
		}
	}
}

// TestOneHelpPerFamily checks that a family written by both writers has
// the same HELP and TYPE lines in both.
func TestOneHelpPerFamily(t *testing.T) {
	var n, e strings.Builder
	WriteNode(&n, nodeStats())
	WriteEndpoint(&e, "scheduler", endpointStats())
	lines := map[string]bool{}
	for _, l := range strings.Split(n.String(), "\n") {
		if strings.HasPrefix(l, "# ") {
			lines[l] = true
		}
	}
	for _, l := range strings.Split(e.String(), "\n") {
		if strings.HasPrefix(l, "# ") && !lines[l] {
			t.Errorf("WriteEndpoint writes %q, WriteNode does not", l)
		}
	}
}

func TestLabelEscaping(t *testing.T) {
	var b strings.Builder
	st := transport.Stats{Links: map[transport.NodeID]transport.LinkStats{proto.ServerID(0): {}}}
	if err := WriteEndpoint(&b, "a \"b\" \\c\nd", st); err != nil {
		t.Fatal(err)
	}
	if want := `from="a \"b\" \\c\nd",to="server 0"`; !strings.Contains(b.String(), want) {
		t.Errorf("output lacks %s:\n%s", want, b.String())
	}
}

// failWriter fails after n bytes.
type failWriter struct{ n int }

var errFull = errors.New("full")

func (w *failWriter) Write(p []byte) (int, error) {
	if len(p) > w.n {
		return 0, errFull
	}
	w.n -= len(p)
	return len(p), nil
}

func TestWriteErrors(t *testing.T) {
	for _, n := range []int{0, 100, 400} {
		if err := WriteNode(&failWriter{n}, nodeStats()); !errors.Is(err, errFull) {
			t.Errorf("WriteNode after %d bytes: %v, want the writer's error", n, err)
		}
		if err := WriteEndpoint(&failWriter{n}, "scheduler", endpointStats()); !errors.Is(err, errFull) {
			t.Errorf("WriteEndpoint after %d bytes: %v, want the writer's error", n, err)
		}
	}
}

func TestServe(t *testing.T) {
	fail := false
	addr, stop, err := Serve("127.0.0.1:0", func(w io.Writer) error {
		if fail {
			return errors.New("no stats")
		}
		return WriteNode(w, nodeStats())
	})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	get := func(path string) (*http.Response, string) {
		t.Helper()
		resp, err := http.Get("http://" + addr + path)
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
	var want bytes.Buffer
	WriteNode(&want, nodeStats())
	resp, body := get("/metrics")
	if resp.StatusCode != http.StatusOK || body != want.String() || resp.Header.Get("Content-Type") != ContentType {
		t.Fatalf("GET /metrics: %s %q\n%s", resp.Status, resp.Header.Get("Content-Type"), body)
	}
	if resp, _ := get("/other"); resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET /other: %s, want 404", resp.Status)
	}
	fail = true
	if resp, body := get("/metrics"); resp.StatusCode != http.StatusInternalServerError || !strings.Contains(body, "no stats") {
		t.Errorf("GET /metrics with a failing writer: %s %q, want 500 and the error", resp.Status, body)
	}
	stop()
	stop() // a second stop is harmless
	if _, err := http.Get("http://" + addr + "/metrics"); err == nil {
		t.Error("the server still answers after stop")
	}
}

func TestServeBadAddress(t *testing.T) {
	if _, _, err := Serve("127.0.0.1:-1", func(io.Writer) error { return nil }); err == nil || !strings.Contains(err.Error(), "127.0.0.1:-1") {
		t.Errorf("Serve on a bad address: %v, want an error naming it", err)
	}
}
