// Package dashboard is a live web page of a running job: the traffic
// matrix between machines as a heat map, the bytes per second of every
// link, the load of each server, the round times, the training loss and
// the validation scores over time, and the placement's cost-model
// figures (T_max, T_sum, the per-machine traffic T_i of placement.Cost)
// beside the measured traffic.
//
// A Board is fed the same counters the Prometheus collectors of package
// metrics read: the nodes' Stats (Watch, as deploy.InProcess.Watch
// calls it, or WatchEndpoint for the scheduler's own links), the passes
// of machine 0 (Pass, a train.Progress) and the evaluator's scores
// (Check, train.Config.Checked); Run starts a new training run with its
// placement's cost. Every Config.Interval it reads the counters once,
// O(links), turns them into a Frame and sends the frame's JSON to every
// page as a server-sent event; the training loop itself is not touched,
// so a board costs the job one read of its counters per interval.
//
// The page (Handler) is a single HTML file with its script and style,
// embedded in the binary: no CDN, no network, it works offline. Its
// charts are SVG drawn by a few hundred lines of plain JavaScript. The
// endpoints:
//
//	GET /             the page
//	GET /events       the frames as server-sent events (event: frame)
//	GET /frame.json   the last frame
//
// Example, colo train --dashboard :8080:
//
//	b, err := dashboard.Start(":8080", dashboard.DefaultConfig(), os.Stderr)
//	if err != nil {
//		return err // names --dashboard
//	}
//	defer b.Close()
//	b.Run(dashboard.RunInfo{Name: "parsa", Machines: 4, Width: 20, Cost: cost})
//	cfg.Progress, cfg.Checked = b.Pass, b.Check
//	res, err := train.Run(ctx, job, app, p, deploy.InProcess{Watch: b.Watch})
//
// All the methods of a nil *Board do nothing, so a command without
// --dashboard passes nil.
package dashboard

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"colo/placement"
	"colo/ps/node"
	"colo/train"
	"colo/transport"
)

// Config is a board's settings.
type Config struct {
	// Interval is how often the board reads the counters and sends a
	// frame.
	Interval time.Duration
	// History bounds the points kept per series of a run (passes,
	// scores, rates); older points are thinned, every other one dropped.
	History int
}

// DefaultConfig returns a frame every half second and 2000 points per
// series.
func DefaultConfig() Config { return Config{Interval: 500 * time.Millisecond, History: 2000} }

// Validate checks c; errors name the field and the bound.
func (c Config) Validate() error {
	if c.Interval < time.Millisecond {
		return fmt.Errorf("dashboard: interval %v, want at least 1ms", c.Interval)
	}
	if c.History < 2 {
		return fmt.Errorf("dashboard: history %d, want at least 2 points", c.History)
	}
	return nil
}

// RunInfo describes a training run: its placement, the job's machines
// and values per key, and the placement's cost-model evaluation (nil:
// none, as for a dense model's sharding).
type RunInfo struct {
	Name     string `json:"name"`
	Machines int    `json:"machines"`
	Width    int    `json:"width"`
	// Cost is the placement's cost; the page shows T_max, T_sum and the
	// per-machine traffic T_i beside the measured traffic.
	Cost *placement.Cost `json:"cost,omitempty"`
}

// Board gathers what the page shows and sends it to the pages that
// listen. Its methods may be called from any goroutine.
type Board struct {
	cfg   Config
	start time.Time

	mu     sync.Mutex
	source func() []node.Stats
	status string
	runs   []*Run
	events []Event
	prev   traffic // the previous sample of the current source
	prevAt time.Duration
	frame  []byte // the last frame's JSON
	seq    int
	ended  bool
	subs   map[chan struct{}]struct{}

	stop     chan struct{}
	stopped  chan struct{}
	stopOnce sync.Once

	// url and stopServe are set by Start.
	url       string
	stopServe func()
}

// New returns a board that samples every cfg.Interval until Close.
func New(cfg Config) (*Board, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	b := &Board{cfg: cfg, start: time.Now(), status: "starting", subs: map[chan struct{}]struct{}{},
		stop: make(chan struct{}), stopped: make(chan struct{})}
	b.sample()
	go b.loop()
	return b, nil
}

func (b *Board) loop() {
	defer close(b.stopped)
	t := time.NewTicker(b.cfg.Interval)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			b.sample()
		case <-b.stop:
			return
		}
	}
}

// Close takes a last sample, sends it as the final frame (Ended) and
// stops sampling; the pages keep what they show. A board from Start
// then stops its server; otherwise the handler still answers. Close may
// be called more than once.
func (b *Board) Close() {
	if b == nil {
		return
	}
	b.stopOnce.Do(func() {
		close(b.stop)
		<-b.stopped
		b.mu.Lock()
		b.ended = true
		if b.status == "starting" || strings.HasPrefix(b.status, "training") {
			b.status = "finished"
		}
		b.mu.Unlock()
		b.sample()
		if b.stopServe != nil {
			b.stopServe()
		}
	})
}

// Watch makes stats the source of the nodes' counters, read at every
// sample (deploy.InProcess.Watch calls it when the cluster starts and
// again with the final counters before it closes).
func (b *Board) Watch(stats func() []node.Stats) {
	if b == nil {
		return
	}
	b.mu.Lock()
	b.source = stats
	b.mu.Unlock()
}

// WatchEndpoint makes the links of the endpoint id (the scheduler's)
// the source: what a scheduler knows of the job, the control traffic to
// and from each node.
func (b *Board) WatchEndpoint(id transport.NodeID, stats func() transport.Stats) {
	b.Watch(func() []node.Stats { return []node.Stats{EndpointStats(id, stats())} })
}

// EndpointStats returns the links of endpoint id as a node's Stats on
// machine -1 (unknown).
func EndpointStats(id transport.NodeID, es transport.Stats) node.Stats {
	st := node.Stats{Machine: -1}
	for _, p := range es.Peers() {
		st.Links = append(st.Links, node.LinkStats{From: id, To: p, LinkStats: es.Links[p]})
		st.Inter = st.Inter.Add(es.Links[p])
	}
	return st
}

// Status sets the line the page shows at the top ("waiting for 4
// nodes", "failed: …").
func (b *Board) Status(s string) {
	if b == nil {
		return
	}
	b.mu.Lock()
	b.status = s
	b.mu.Unlock()
}

// Event records a line of what happened to the job's processes ("machine
// 2 failed: …", "training resumed 0.48 s after the failure"), which the
// page lists with its time.
func (b *Board) Event(text string) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.events = append(b.events, Event{Seconds: time.Since(b.start).Seconds(), Text: text})
	if n := len(b.events) - b.cfg.History; n > 0 {
		b.events = append(b.events[:0], b.events[n:]...)
	}
}

// Run starts a training run: the passes, scores and traffic that follow
// are its own, and the status says "training NAME". It forgets the
// source of counters, the previous run's cluster, until Watch gives the
// new one.
func (b *Board) Run(info RunInfo) {
	if b == nil {
		return
	}
	b.mu.Lock()
	src := b.source
	b.mu.Unlock()
	var final traffic
	if src != nil {
		final = arrange(src()) // the previous run's last counters
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.runs) > 0 && src != nil {
		b.measure(b.runs[len(b.runs)-1], final)
	}
	b.runs = append(b.runs, &Run{RunInfo: info, Started: time.Since(b.start).Seconds()})
	b.status = "training " + info.Name
	b.source, b.prev = nil, traffic{}
}

// current returns the current run, adding an unnamed one if there is
// none; b.mu is held.
func (b *Board) current() *Run {
	if len(b.runs) == 0 {
		b.runs = append(b.runs, &Run{RunInfo: RunInfo{Name: "job"}, Started: time.Since(b.start).Seconds()})
	}
	return b.runs[len(b.runs)-1]
}

// Pass records a pass of the current run (a train.Progress).
func (b *Board) Pass(p train.Pass) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	r := b.current()
	pt := Point{Pass: p.Pass, Rounds: p.Rounds, Seconds: p.Seconds, TrainLoss: Float(p.TrainLoss), TrainAccuracy: Float(p.TrainAccuracy)}
	var last Point
	if n := len(r.Passes); n > 0 {
		last = r.Passes[n-1]
	}
	if dr := p.Rounds - last.Rounds; dr > 0 {
		pt.RoundSeconds = Float((p.Seconds - last.Seconds) / float64(dr))
	}
	r.Passes = thin(append(r.Passes, pt), b.cfg.History)
}

// Check records a score of the evaluator (train.Config.Checked).
func (b *Board) Check(c train.Check) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	r := b.current()
	v := c.Validation
	r.Checks = thin(append(r.Checks, Score{Seconds: c.Seconds, Step: c.Step, Epoch: c.Epoch,
		Accuracy: finite(v.Accuracy), LogLoss: finite(v.LogLoss), RMSE: finite(v.RMSE), Final: c.Final}), b.cfg.History)
}

// thin halves s when it is longer than limit, keeping its first and
// last points.
func thin[T any](s []T, limit int) []T {
	if len(s) <= limit {
		return s
	}
	out := s[:0]
	for i := range s {
		if i%2 == 0 || i == len(s)-1 {
			out = append(out, s[i])
		}
	}
	return out
}

// sample reads the counters, builds the frame and wakes the pages.
func (b *Board) sample() {
	b.mu.Lock()
	src := b.source
	b.mu.Unlock()
	var tr traffic
	if src != nil {
		tr = arrange(src()) // outside the lock: it reads every node
	}
	b.mu.Lock()
	now := time.Since(b.start)
	f := b.build(tr, now)
	data, err := json.Marshal(f)
	if err != nil { // cannot happen: a Frame's floats are Floats, finite or null
		data = []byte(fmt.Sprintf(`{"seq":%d,"status":%q}`, f.Seq, err.Error()))
	}
	b.frame = data
	subs := make([]chan struct{}, 0, len(b.subs))
	for c := range b.subs {
		subs = append(subs, c)
	}
	b.mu.Unlock()
	for _, c := range subs {
		select {
		case c <- struct{}{}:
		default: // the page has a wake-up pending: it reads the latest frame
		}
	}
}

// build returns the frame of sample tr at time now; b.mu is held.
func (b *Board) build(tr traffic, now time.Duration) *Frame {
	b.seq++
	f := &Frame{Seq: b.seq, Seconds: now.Seconds(), Status: b.status, Ended: b.ended, Events: slices.Clone(b.events),
		Nodes: tr.nodes, Bytes: tr.bytes, Servers: tr.servers, Workers: tr.workers}
	dt := (now - b.prevAt).Seconds()
	f.Rates = make([][]float64, len(tr.nodes))
	var inter, inner float64
	for i, row := range tr.bytes {
		f.Rates[i] = make([]float64, len(row))
		for j, v := range row {
			var r float64
			if tr.same(b.prev) && dt > 0 && v >= b.prev.bytes[i][j] {
				r = float64(v-b.prev.bytes[i][j]) / dt
			}
			f.Rates[i][j] = r
			if v > 0 {
				f.Links = append(f.Links, Link{From: tr.nodes[i], To: tr.nodes[j], Bytes: v, Rate: r})
			}
			switch mi, mj := tr.machine[i], tr.machine[j]; {
			case mi < 0 || mj < 0:
			case mi == mj:
				inner += r
			default:
				inter += r
			}
		}
	}
	slices.SortStableFunc(f.Links, func(a, b Link) int {
		return cmp.Or(cmp.Compare(b.Rate, a.Rate), cmp.Compare(b.Bytes, a.Bytes))
	})
	if len(tr.nodes) > 0 {
		r := b.current()
		b.measure(r, tr)
		if tr.same(b.prev) && dt > 0 {
			r.Traffic = thin(append(r.Traffic, Rate{Seconds: now.Seconds() - r.Started, Inter: inter, Inner: inner}), b.cfg.History)
		}
	}
	b.prev, b.prevAt = tr, now
	f.Runs = b.runs
	return f
}

// measure sets r's measured traffic from tr and its passes; b.mu is
// held.
func (b *Board) measure(r *Run, tr traffic) {
	r.Measured = tr.measure()
	if n := len(r.Passes); n > 0 {
		r.Measured.Rounds = r.Passes[n-1].Rounds
	}
	if r.Cost != nil {
		r.Measured.PredictedValues = r.Cost.TSum * int64(r.Width) * int64(r.Measured.Rounds)
	}
}

// Frame returns the last frame's JSON.
func (b *Board) Frame() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.frame
}

// subscribe returns a channel that is sent a value after every new
// frame, and the function that ends the subscription.
func (b *Board) subscribe() (<-chan struct{}, func()) {
	c := make(chan struct{}, 1)
	b.mu.Lock()
	b.subs[c] = struct{}{}
	b.mu.Unlock()
	return c, func() {
		b.mu.Lock()
		delete(b.subs, c)
		b.mu.Unlock()
	}
}
