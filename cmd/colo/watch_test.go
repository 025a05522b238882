package main

import (
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTrainTraceAndDashboard trains two machines for two passes with
// --dashboard and --trace: the dashboard's address is printed, and the
// trace is trace-event JSON with the spans of both workers.
func TestTrainTraceAndDashboard(t *testing.T) {
	data := news20(t)
	trace := filepath.Join(t.TempDir(), "trace.json")
	code, _, errOut := colo(t, "train", data, "--machines", "2", "--max-passes", "2", "--placement", "random",
		"--dashboard", "127.0.0.1:0", "--trace", trace)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(errOut, "dashboard: http://127.0.0.1:") {
		t.Errorf("the dashboard's address is not printed:\n%s", errOut)
	}
	b, err := os.ReadFile(trace)
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		TraceEvents []struct {
			Name, Ph string
			Tid      int
			Args     map[string]any
		} `json:"traceEvents"`
	}
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatalf("the trace is not JSON: %v", err)
	}
	threads := map[int]string{}
	spans := map[int]map[string]int{}
	for _, e := range f.TraceEvents {
		switch e.Ph {
		case "M":
			if e.Name == "thread_name" {
				threads[e.Tid], _ = e.Args["name"].(string)
			}
		case "X":
			if spans[e.Tid] == nil {
				spans[e.Tid] = map[string]int{}
			}
			spans[e.Tid][e.Name]++
		}
	}
	for w, name := range []string{"worker 0", "worker 1"} {
		if threads[w] != name {
			t.Errorf("thread %d is %q, want %q", w, threads[w], name)
		}
		if s := spans[w]; s["pull"] != 2 || s["compute"] != 2 || s["push"] != 2 || s["barrier"] != 2 {
			t.Errorf("%s: spans %v, want 2 of each (2 full-batch rounds)", name, s)
		}
	}
}

// TestDashboardAddressInUse asks train and the scheduler for a dashboard
// on an address that is taken: a usage error naming the flag, before
// any work.
func TestDashboardAddressInUse(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	addr := ln.Addr().String()
	data := news20(t)
	for _, args := range [][]string{
		{"train", data, "--machines", "2", "--max-passes", "1", "--dashboard", addr},
		{"demo", "--dashboard", addr},
		{"node", "--role", "scheduler", "--scheduler", "127.0.0.1:0", "--insecure", "--num-servers", "1", "--num-workers", "1", "--dashboard", addr},
	} {
		code, _, errOut := colo(t, args...)
		if code != 2 || !strings.Contains(errOut, "--dashboard "+addr) || !strings.Contains(errOut, "already in use") {
			t.Errorf("colo %s: exit %d, %q; want 2 and an error naming --dashboard and the address in use", args[0], code, errOut)
		}
	}
}

// TestTraceNeedsInProcess refuses --trace with --processes: the spans
// are recorded by this process's workers.
func TestTraceNeedsInProcess(t *testing.T) {
	code, _, errOut := colo(t, "train", news20(t), "--processes", "--trace", filepath.Join(t.TempDir(), "t.json"))
	if code != 2 || !strings.Contains(errOut, "--trace") {
		t.Errorf("exit %d, %q; want 2 and an error naming --trace", code, errOut)
	}
}
