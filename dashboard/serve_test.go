package dashboard

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"colo/train"
)

// event is one server-sent event.
type event struct{ name, data string }

// readEvent reads the next event from r, skipping fields other than
// event and data.
func readEvent(t *testing.T, r *bufio.Reader) (event, error) {
	t.Helper()
	var e event
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return e, err
		}
		line = strings.TrimRight(line, "\n")
		switch {
		case line == "":
			if e.name != "" || e.data != "" {
				return e, nil
			}
		case strings.HasPrefix(line, "event: "):
			e.name = line[len("event: "):]
		case strings.HasPrefix(line, "data: "):
			e.data += line[len("data: "):]
		}
	}
}

type frameHead struct {
	Seq    int    `json:"seq"`
	Status string `json:"status"`
	Ended  bool   `json:"ended"`
	Runs   []struct {
		Passes []Point `json:"passes"`
	} `json:"runs"`
}

// TestEventStream follows /events: the last frame at once, a frame per
// sample, and the final frame, after which the server ends the stream.
func TestEventStream(t *testing.T) {
	b := newIdle(t)
	srv := httptest.NewServer(b.Handler())
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type %q", ct)
	}
	r := bufio.NewReader(resp.Body)
	next := func() frameHead {
		t.Helper()
		e, err := readEvent(t, r)
		if err != nil {
			t.Fatal(err)
		}
		var f frameHead
		if e.name != "frame" {
			t.Fatalf("event %q, want frame", e.name)
		}
		if err := json.Unmarshal([]byte(e.data), &f); err != nil {
			t.Fatalf("frame %q: %v", e.data, err)
		}
		return f
	}
	if f := next(); f.Seq != 1 || f.Status != "starting" {
		t.Fatalf("first frame %+v, want New's sample", f)
	}
	b.Run(RunInfo{Name: "random"})
	b.Pass(train.Pass{Pass: 1, Rounds: 1, Seconds: 0.1, TrainLoss: 0.69})
	b.sample()
	if f := next(); f.Seq != 2 || f.Status != "training random" || len(f.Runs) != 1 || len(f.Runs[0].Passes) != 1 {
		t.Fatalf("second frame %+v, want the pass", f)
	}
	b.Close()
	if f := next(); !f.Ended || f.Status != "finished" {
		t.Fatalf("last frame %+v, want ended, finished", f)
	}
	if _, err := readEvent(t, r); err != io.EOF {
		t.Fatalf("after the last frame: %v, want the end of the stream", err)
	}
}

// TestSlowClientGetsNewest checks that a client that does not read
// meanwhile receives the newest frame, not a backlog.
func TestSlowClientGetsNewest(t *testing.T) {
	b := newIdle(t)
	srv := httptest.NewServer(b.Handler())
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	r := bufio.NewReader(resp.Body)
	if _, err := readEvent(t, r); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		b.sample()
	}
	var last frameHead
	for last.Seq < 6 {
		e, err := readEvent(t, r)
		if err != nil {
			t.Fatal(err)
		}
		var f frameHead
		json.Unmarshal([]byte(e.data), &f)
		if f.Seq <= last.Seq {
			t.Fatalf("frame %d after %d", f.Seq, last.Seq)
		}
		last = f
	}
}

// TestPageAndAssets checks that the page, its script and style, and the
// last frame are served, and that the page loads nothing from elsewhere.
func TestPageAndAssets(t *testing.T) {
	b := newIdle(t)
	srv := httptest.NewServer(b.Handler())
	defer srv.Close()
	get := func(path string) (string, string) {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("GET %s: %s", path, resp.Status)
		}
		return string(body), resp.Header.Get("Content-Type")
	}
	page, ct := get("/")
	if !strings.HasPrefix(ct, "text/html") || !strings.Contains(page, `src="app.js"`) || !strings.Contains(page, `href="style.css"`) {
		t.Errorf("page (%s) does not load app.js and style.css", ct)
	}
	for _, asset := range []string{page, get1(get, "/app.js"), get1(get, "/style.css")} {
		if strings.Contains(asset, "http://") || strings.Contains(asset, "https://") || strings.Contains(asset, "//cdn") {
			t.Error("an asset refers to another site")
		}
	}
	frame, ct := get("/frame.json")
	var f frameHead
	if ct != "application/json" || json.Unmarshal([]byte(frame), &f) != nil || f.Seq != 1 {
		t.Errorf("frame.json (%s): %q", ct, frame)
	}
}

func get1(get func(string) (string, string), path string) string {
	s, _ := get(path)
	return s
}

// TestStart serves a board on a free port, then refuses the same
// address with an error naming the flag.
func TestStart(t *testing.T) {
	if b, err := Start("", DefaultConfig(), nil); b != nil || err != nil {
		t.Fatalf("Start without an address: %v, %v", b, err)
	}
	var log strings.Builder
	cfg := DefaultConfig()
	cfg.Interval = 10 * time.Millisecond
	b, err := Start("127.0.0.1:0", cfg, &log)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if !strings.Contains(log.String(), b.URL()) || !strings.HasPrefix(b.URL(), "http://127.0.0.1:") {
		t.Errorf("log %q, URL %q", log.String(), b.URL())
	}
	resp, err := http.Get(b.URL() + "frame.json")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	addr := strings.TrimSuffix(strings.TrimPrefix(b.URL(), "http://"), "/")
	_, err = Start(addr, cfg, nil)
	if err == nil || !strings.Contains(err.Error(), "--dashboard "+addr) || !strings.Contains(err.Error(), "already in use") {
		t.Errorf("a second board on %s: %v, want an error naming --dashboard and the address in use", addr, err)
	}
	if _, err := Start("no-such-host.invalid:x", cfg, nil); err == nil || !strings.Contains(err.Error(), "--dashboard") {
		t.Errorf("a bad address: %v", err)
	}
	b.Close()
	if _, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		t.Error("the server still listens after Close")
	}
}

func TestBrowsable(t *testing.T) {
	for in, want := range map[string]string{"[::]:8080": "localhost:8080", "0.0.0.0:80": "localhost:80", "127.0.0.1:9": "127.0.0.1:9", "host:1": "host:1"} {
		if got := browsable(in); got != want {
			t.Errorf("browsable(%q) = %q, want %q", in, got, want)
		}
	}
}
