package timeline

import (
	"bytes"
	"encoding/json"
	"testing"
)

// traceFile is the part of the trace-event JSON object format the tests
// read.
type traceFile struct {
	TraceEvents []struct {
		Name string         `json:"name"`
		Ph   string         `json:"ph"`
		Ts   float64        `json:"ts"`
		Dur  float64        `json:"dur"`
		Pid  int            `json:"pid"`
		Tid  int            `json:"tid"`
		Args map[string]any `json:"args"`
	} `json:"traceEvents"`
	OtherData map[string]any `json:"otherData"`
}

func TestWriteIsTraceEventJSON(t *testing.T) {
	rec := New()
	workers := rec.Workers("parsa \"quoted\" \x01")
	w0, w1 := workers(0), workers(1)
	for round := range 3 {
		for _, tr := range []*Track{w0, w1} {
			s := tr.Start()
			s = tr.Span(Pull, round, s)
			s = tr.Span(Compute, round, s)
			tr.Span(Push, round, s)
		}
	}
	w1.Span(Barrier, 0, w1.Start())
	var buf bytes.Buffer
	n, err := rec.WriteTo(&buf)
	if err != nil || n != int64(buf.Len()) {
		t.Fatalf("WriteTo = %d, %v; wrote %d bytes", n, err, buf.Len())
	}
	var f traceFile
	if err := json.Unmarshal(buf.Bytes(), &f); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, buf.String())
	}
	spans := map[int]map[string]int{}
	threads := map[int]string{}
	var procName string
	for _, e := range f.TraceEvents {
		switch e.Ph {
		case "M":
			name, _ := e.Args["name"].(string)
			if e.Name == "process_name" {
				procName = name
			} else {
				threads[e.Tid] = name
			}
		case "X":
			if e.Dur < 0 || e.Ts < 0 {
				t.Errorf("span %+v: negative time", e)
			}
			if spans[e.Tid] == nil {
				spans[e.Tid] = map[string]int{}
			}
			spans[e.Tid][e.Name]++
		default:
			t.Errorf("event phase %q", e.Ph)
		}
	}
	if procName != "parsa \"quoted\" \x01" {
		t.Errorf("process name %q", procName)
	}
	if threads[0] != "worker 0" || threads[1] != "worker 1" {
		t.Errorf("threads %v", threads)
	}
	for tid, want := range []map[string]int{
		{"pull": 3, "compute": 3, "push": 3},
		{"pull": 3, "compute": 3, "push": 3, "barrier": 1},
	} {
		if len(spans[tid]) != len(want) {
			t.Errorf("worker %d: spans %v, want %v", tid, spans[tid], want)
		}
		for k, n := range want {
			if spans[tid][k] != n {
				t.Errorf("worker %d: %d %s spans, want %d", tid, spans[tid][k], k, n)
			}
		}
	}
	if f.OtherData["dropped_spans"] != 0.0 {
		t.Errorf("otherData %v", f.OtherData)
	}
}

// TestSpansChain checks that a span starts where the previous one ended
// and that the times grow.
func TestSpansChain(t *testing.T) {
	tr := New().Track("run", "worker 0")
	s0 := tr.Start()
	s1 := tr.Span(Pull, 0, s0)
	s2 := tr.Span(Compute, 0, s1)
	if !(s0 <= s1 && s1 <= s2) || tr.Len() != 2 {
		t.Fatalf("times %d %d %d, %d spans", s0, s1, s2, tr.Len())
	}
	if e := tr.events[1]; e.start != s1 || e.end != s2 || e.kind != Compute {
		t.Errorf("second span %+v, want compute from %d to %d", e, s1, s2)
	}
}

func TestNilRecordsNothing(t *testing.T) {
	var rec *Recorder
	if rec.Workers("x") != nil || rec.Track("x", "y") != nil {
		t.Fatal("a nil recorder gave tracks")
	}
	var tr *Track
	if tr.Start() != 0 || tr.Span(Pull, 1, 0) != 0 || tr.Len() != 0 {
		t.Error("a nil track recorded")
	}
	if n := testing.AllocsPerRun(100, func() { tr.Span(Push, 1, tr.Start()) }); n != 0 {
		t.Errorf("a nil track allocates %v times", n)
	}
}

func TestDropsPastMaxEvents(t *testing.T) {
	rec := New()
	tr := rec.Track("run", "worker 0")
	tr.events = make([]event, MaxEvents) // full
	tr.Span(Pull, 0, 0)
	tr.Span(Pull, 0, 0)
	if tr.Len() != MaxEvents || tr.dropped != 2 {
		t.Fatalf("%d spans, %d dropped", tr.Len(), tr.dropped)
	}
	tr.events = tr.events[:1]
	var buf bytes.Buffer
	if _, err := rec.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	var f traceFile
	if err := json.Unmarshal(buf.Bytes(), &f); err != nil {
		t.Fatal(err)
	}
	if f.OtherData["dropped_spans"] != 2.0 {
		t.Errorf("otherData %v, want 2 dropped", f.OtherData)
	}
}

func TestKindNames(t *testing.T) {
	for k, want := range map[Kind]string{Pull: "pull", Compute: "compute", Push: "push", Barrier: "barrier", 9: "kind 9"} {
		if k.String() != want {
			t.Errorf("%d: %q, want %q", k, k.String(), want)
		}
	}
}
