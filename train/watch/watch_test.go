package watch

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"colo/metrics"
	"colo/train"
)

// TestWatchers checks that Run chains the hooks after the caller's
// progress and that End writes the trace and the metrics file of a job
// that ended well, and no trace of one that failed, returning its error.
func TestWatchers(t *testing.T) {
	for _, failed := range []bool{false, true} {
		dir := t.TempDir()
		trace, mfile := filepath.Join(dir, "trace.json"), filepath.Join(dir, "metrics.txt")
		w, err := Start(metrics.Flags{File: mfile}, "", trace, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		w.Watch(nil)
		cfg := train.Config{Machines: 2}
		calls := 0
		w.Run(&cfg, "parsa", 4, nil, func(train.Pass) { calls++ })
		if cfg.Progress == nil || cfg.Checked == nil {
			t.Fatal("Run set no hooks")
		}
		cfg.Progress(train.Pass{})
		cfg.Checked(train.Check{})
		if calls != 1 {
			t.Fatalf("progress called %d times, want 1", calls)
		}
		var jobErr error
		if failed {
			jobErr = errors.New("machine 1 died")
		}
		if err := w.End(jobErr); !errors.Is(err, jobErr) {
			t.Fatalf("End(%v) = %v", jobErr, err)
		}
		if _, err := os.Stat(trace); (err == nil) == failed {
			t.Errorf("failed %v: trace written: %v", failed, err == nil)
		}
		if _, err := os.Stat(mfile); err != nil {
			t.Errorf("failed %v: metrics file: %v", failed, err)
		}
	}
}

// TestStartNothing checks that with nothing asked for every watcher is
// off and the hooks still call progress.
func TestStartNothing(t *testing.T) {
	w, err := Start(metrics.Flags{}, "", "", io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	cfg := train.Config{}
	calls := 0
	w.Run(&cfg, "random", 1, nil, func(train.Pass) { calls++ })
	cfg.Progress(train.Pass{})
	if calls != 1 || cfg.Trace != nil {
		t.Errorf("calls %d, trace %v", calls, cfg.Trace != nil)
	}
	if err := w.End(nil); err != nil {
		t.Error(err)
	}
}

// TestLogfOnDashboard: a deployment's log lines reach the log given and
// the dashboard's events; without a dashboard the log is the one given.
func TestLogfOnDashboard(t *testing.T) {
	w, err := Start(metrics.Flags{}, "127.0.0.1:0", "", io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	var logged []string
	logf := w.Logf(func(format string, args ...any) { logged = append(logged, fmt.Sprintf(format, args...)) })
	logf("replacement %d of %d after %s failed", 1, 2, "machine 1")
	if err := w.End(nil); err != nil {
		t.Fatal(err)
	}
	if len(logged) != 1 || logged[0] != "replacement 1 of 2 after machine 1 failed" {
		t.Errorf("logged %q", logged)
	}
	if f := string(w.dash.Frame()); !strings.Contains(f, `"text":"replacement 1 of 2 after machine 1 failed"`) {
		t.Errorf("the dashboard's last frame has no event: %s", f)
	}
	none, err := Start(metrics.Flags{}, "", "", io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if none.Logf(nil) != nil {
		t.Error("without a dashboard or a log, Logf returns a log")
	}
}
