package train_test

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"colo/timeline"
	"colo/train"
	"colo/train/deploy"
)

// TestTraceSpansEveryWorker trains 3 machines for 4 passes of 2 rounds
// with Config.Trace set: the trace is trace-event JSON with, for every
// worker, a pull, a compute and a push span per round and a barrier per
// pass, each round's in that order, none overlapping; with the rounds
// overlapped the wait for a pass's last push may follow its barrier (the
// all-reduce runs while the push is acknowledged).
func TestTraceSpansEveryWorker(t *testing.T) {
	for _, seq := range []bool{true, false} {
		t.Run(map[bool]string{true: "sequential", false: "overlapped"}[seq], func(t *testing.T) { traceSpans(t, seq) })
	}
}

func traceSpans(t *testing.T, sequential bool) {
	const k, passes, batches = 3, 4, 2
	a := newLinear(60, 6, 3)
	job := linearJob(k, passes, 30)
	job.Config.Sequential = sequential
	rec := timeline.New()
	job.Config.Trace = rec.Workers("spread")
	if _, err := train.Run(context.Background(), job, a, spread(len(a.X), a.Dim, k), deploy.InProcess{}); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := rec.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	var f struct {
		TraceEvents []struct {
			Name, Ph string
			Ts, Dur  float64
			Tid      int
			Args     map[string]any
		} `json:"traceEvents"`
	}
	if err := json.Unmarshal(buf.Bytes(), &f); err != nil {
		t.Fatalf("the trace is not JSON: %v", err)
	}
	counts := make([]map[string]int, k)
	last := make([]string, k)
	end := make([]float64, k)
	threads := 0
	for _, e := range f.TraceEvents {
		if e.Ph == "M" {
			if e.Name == "thread_name" {
				threads++
			}
			continue
		}
		if e.Ph != "X" || e.Tid < 0 || e.Tid >= k {
			t.Fatalf("event %+v", e)
		}
		w := e.Tid
		if counts[w] == nil {
			counts[w] = map[string]int{}
		}
		counts[w][e.Name]++
		if want := map[string]string{"compute": "pull", "push": "compute"}[e.Name]; want != "" && last[w] != want && !(e.Name == "push" && last[w] == "barrier" && !sequential) {
			t.Errorf("worker %d: %s after %s", w, e.Name, last[w])
		}
		if e.Ts+1e-3 < end[w] {
			t.Errorf("worker %d: %s starts at %v µs, before the previous span's end %v", w, e.Name, e.Ts, end[w])
		}
		last[w], end[w] = e.Name, e.Ts+e.Dur
	}
	if threads != k {
		t.Errorf("%d threads named, want %d", threads, k)
	}
	rounds := passes * batches
	for w, c := range counts {
		if c["pull"] != rounds || c["compute"] != rounds || c["push"] != rounds || c["barrier"] != passes {
			t.Errorf("worker %d: spans %v, want %d of pull, compute, push and %d barriers", w, c, rounds, passes)
		}
	}
}
