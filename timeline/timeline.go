// Package timeline records what each worker of a training job does,
// span after span (pull, compute, push, barrier), and writes the spans
// in the Chrome trace-event JSON format that chrome://tracing and
// Perfetto (ui.perfetto.dev) open: one process per training run, one
// thread per worker, so that a straggler, a slow link or a barrier that
// waits on the slowest machine shows as a gap on its row.
//
// A Recorder holds the tracks; a Track belongs to one goroutine, the
// worker's training loop, which appends to it without a lock. Recording
// a span reads the clock once and appends 24 bytes; a nil *Track records
// nothing and reads no clock, so that instrumented code costs a nil
// check when tracing is off:
//
//	rec := timeline.New()
//	cfg.Trace = rec.Workers("parsa")    // train.Config: a Track per worker
//	… train …
//	err := rec.WriteFile("trace.json")  // after the job
//
// and in a loop that owns a Track tr (nil when tracing is off):
//
//	t := tr.Start()
//	pull()
//	t = tr.Span(timeline.Pull, round, t) // the pull, from t to now
//	compute()
//	tr.Span(timeline.Compute, round, t)
//
// The format is the JSON object form of the trace-event format:
// {"traceEvents": [...]} with a complete event ("ph": "X") per span,
// its start "ts" and length "dur" in microseconds from the Recorder's
// creation, and metadata events ("ph": "M") naming the processes and
// threads. A track keeps at most MaxEvents spans; later ones are counted
// in "otherData" as dropped, never silently lost.
package timeline

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"sync"
	"time"

	"colo/internal/atomicfile"
)

// Kind is what a span is.
type Kind uint8

// The spans of a training round and pass.
const (
	// Pull is a pull of the round's keys, until the values arrived (and,
	// under a consistency model, until the gate let it through).
	Pull Kind = iota
	// Compute is the application's step on the pulled values.
	Compute
	// Push is a push of the gradient, until the servers acknowledged it.
	Push
	// Barrier is a wait for every worker: the sum of the loss after a
	// pass, or a barrier between phases.
	Barrier
	kinds
)

var kindNames = [kinds]string{"pull", "compute", "push", "barrier"}

// String returns the span's name: "pull", "compute", "push", "barrier".
func (k Kind) String() string {
	if k < kinds {
		return kindNames[k]
	}
	return "kind " + strconv.Itoa(int(k))
}

// MaxEvents is the number of spans a track keeps: 4M spans, 96 MiB, far
// more than a run of thousands of rounds needs; later spans are counted
// as dropped.
const MaxEvents = 1 << 22

// Recorder holds the tracks of a job. Its methods may be called from any
// goroutine; a nil *Recorder records nothing.
type Recorder struct {
	origin time.Time
	mu     sync.Mutex
	procs  []*process
}

type process struct {
	name   string
	tracks []*Track
}

// New returns a recorder whose time starts now.
func New() *Recorder { return &Recorder{origin: time.Now()} }

// Track is the spans of one worker, appended by the one goroutine that
// owns it. A nil *Track records nothing.
type Track struct {
	origin  time.Time
	name    string
	events  []event
	dropped int
}

// event is one span: nanoseconds from the origin.
type event struct {
	start, end int64
	round      int32
	kind       Kind
}

// process returns the process (a training run) called name, adding it
// if new; r.mu is held.
func (r *Recorder) process(name string) *process {
	for _, p := range r.procs {
		if p.name == name {
			return p
		}
	}
	p := &process{name: name}
	r.procs = append(r.procs, p)
	return p
}

// Track returns a new track, a thread called thread of the process
// called process ("parsa", "worker 0").
func (r *Recorder) Track(process, thread string) *Track {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	p := r.process(process)
	t := &Track{origin: r.origin, name: thread}
	p.tracks = append(p.tracks, t)
	return t
}

// Workers returns a function that gives worker rank of the run called
// process its track, "worker RANK" (what train.Config.Trace takes); nil
// on a nil Recorder.
func (r *Recorder) Workers(process string) func(rank int) *Track {
	if r == nil {
		return nil
	}
	return func(rank int) *Track { return r.Track(process, "worker "+strconv.Itoa(rank)) }
}

// Start returns the time a span starts, for Span; 0, without reading the
// clock, on a nil Track.
func (t *Track) Start() int64 {
	if t == nil {
		return 0
	}
	return int64(time.Since(t.origin))
}

// Span records a span of kind k in round (or pass) round from start (a
// Start or a previous Span) to now, and returns now: the start of the
// span that follows it. On a nil Track it does nothing and returns 0.
func (t *Track) Span(k Kind, round int, start int64) int64 {
	if t == nil {
		return 0
	}
	now := int64(time.Since(t.origin))
	if len(t.events) >= MaxEvents {
		t.dropped++
		return now
	}
	t.events = append(t.events, event{start: start, end: now, round: int32(round), kind: k})
	return now
}

// Len returns the number of spans recorded.
func (t *Track) Len() int {
	if t == nil {
		return 0
	}
	return len(t.events)
}

// WriteTo writes the trace in the trace-event JSON format. Call it once
// the goroutines that own the tracks have finished.
func (r *Recorder) WriteTo(w io.Writer) (int64, error) {
	cw := &countWriter{w: w}
	bw := bufio.NewWriter(cw)
	r.mu.Lock()
	defer r.mu.Unlock()
	var b []byte
	b = append(b, `{"displayTimeUnit":"ms","traceEvents":[`...)
	first := true
	sep := func() {
		if !first {
			b = append(b, ",\n"...)
		}
		first = false
	}
	dropped := 0
	for pid, p := range r.procs {
		sep()
		b = meta(b, "process_name", pid, 0, p.name)
		for tid, t := range p.tracks {
			sep()
			b = meta(b, "thread_name", pid, tid, t.name)
			dropped += t.dropped
			for _, e := range t.events {
				sep()
				b = append(b, `{"name":"`...)
				b = append(b, e.kind.String()...)
				b = append(b, `","cat":"train","ph":"X","ts":`...)
				b = micros(b, e.start)
				b = append(b, `,"dur":`...)
				b = micros(b, e.end-e.start)
				b = append(b, `,"pid":`...)
				b = strconv.AppendInt(b, int64(pid), 10)
				b = append(b, `,"tid":`...)
				b = strconv.AppendInt(b, int64(tid), 10)
				b = append(b, `,"args":{"round":`...)
				b = strconv.AppendInt(b, int64(e.round), 10)
				b = append(b, "}}"...)
				if len(b) > 64<<10 {
					bw.Write(b)
					b = b[:0]
				}
			}
		}
	}
	b = append(b, `],"otherData":{"dropped_spans":`...)
	b = strconv.AppendInt(b, int64(dropped), 10)
	b = append(b, "}}\n"...)
	bw.Write(b)
	err := bw.Flush()
	return cw.n, err
}

// meta appends a metadata event naming a process or a thread.
func meta(b []byte, what string, pid, tid int, name string) []byte {
	b = append(b, `{"name":"`...)
	b = append(b, what...)
	b = append(b, `","ph":"M","pid":`...)
	b = strconv.AppendInt(b, int64(pid), 10)
	b = append(b, `,"tid":`...)
	b = strconv.AppendInt(b, int64(tid), 10)
	b = append(b, `,"args":{"name":`...)
	q, _ := json.Marshal(name) // a string always marshals
	b = append(b, q...)
	return append(b, "}}"...)
}

// micros appends nanoseconds ns as microseconds with three decimals.
func micros(b []byte, ns int64) []byte {
	return strconv.AppendFloat(b, float64(ns)/1e3, 'f', 3, 64)
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// WriteFile writes the trace to path (--trace) through atomicfile: a
// regular file is replaced whole, a device or a FIFO written through.
func (r *Recorder) WriteFile(path string) error {
	if err := atomicfile.Write(path, func(w io.Writer) error { _, err := r.WriteTo(w); return err }); err != nil {
		return fmt.Errorf("--trace: %w", err)
	}
	return nil
}
