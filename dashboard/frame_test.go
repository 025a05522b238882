package dashboard

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"colo/placement"
	"colo/ps/node"
	"colo/ps/proto"
	"colo/ps/server"
	"colo/ps/worker"
	"colo/train"
	"colo/transport"
)

func link(from, to transport.NodeID, inner bool, sent, recv uint64) node.LinkStats {
	return node.LinkStats{From: from, To: to, Inner: inner, LinkStats: transport.LinkStats{BytesSent: sent, BytesRecv: recv, MsgsSent: 1}}
}

// twoMachines is a co-located cluster of 2 machines, a server and a
// worker each, counted by hand: scale multiplies every counter.
func twoMachines(scale uint64) []node.Stats {
	s0, w0, s1, w1 := proto.ServerID(0), proto.WorkerID(0), proto.ServerID(1), proto.WorkerID(1)
	sched := proto.SchedulerID
	return []node.Stats{
		{Machine: 0, Links: []node.LinkStats{
			link(w0, s0, true, 100*scale, 0),
			link(w0, s1, false, 300*scale, 0),
			link(s0, w1, false, 50*scale, 0),
			link(w0, sched, false, 7*scale, 9*scale),
		}, Server: &server.Stats{Pushes: 3, KeysPushed: 30 * scale, Keys: 10}, Worker: &worker.Stats{Rounds: 3}},
		{Machine: 1, Links: []node.LinkStats{
			link(w1, s0, false, 40*scale, 0),
			link(w1, s1, true, 200*scale, 0),
			link(s1, w0, false, 60*scale, 0),
		}, Server: &server.Stats{Pushes: 3, KeysPushed: 20 * scale, Keys: 12}, Worker: &worker.Stats{Rounds: 3}},
	}
}

// TestArrangeByHand checks the matrix of twoMachines against sums done
// by hand: a link's bytes at its sender, the scheduler's sending from
// what the worker received (the scheduler's own counters are not in
// the stats).
func TestArrangeByHand(t *testing.T) {
	tr := arrange(twoMachines(1))
	if want := []string{"machine 0", "machine 1", "scheduler"}; !slices.Equal(tr.nodes, want) {
		t.Fatalf("nodes %v, want %v", tr.nodes, want)
	}
	want := [][]uint64{
		{100, 300 + 50, 7},
		{40 + 60, 200, 0},
		{9, 0, 0},
	}
	for i := range want {
		if !slices.Equal(tr.bytes[i], want[i]) {
			t.Errorf("row %s: %v, want %v", tr.nodes[i], tr.bytes[i], want[i])
		}
	}
	m := tr.measure()
	if m.InterBytes != 450 || m.InnerBytes != 300 || !slices.Equal(m.Machines, []uint64{450, 450}) {
		t.Errorf("measured %+v, want 450 inter, 300 inner, 450 per machine", m)
	}
	if len(tr.servers) != 2 || tr.servers[0].Name != "server 0" || tr.servers[1].KeysPushed != 20 || tr.servers[1].Keys != 12 {
		t.Errorf("servers %+v", tr.servers)
	}
	if len(tr.workers) != 2 || tr.workers[1].Name != "worker 1" || tr.workers[1].Rounds != 3 {
		t.Errorf("workers %+v", tr.workers)
	}
}

// TestEndpointStats arranges what a scheduler knows: its own links, the
// nodes named as such since their machines are unknown.
func TestEndpointStats(t *testing.T) {
	es := transport.Stats{Links: map[transport.NodeID]transport.LinkStats{
		proto.WorkerID(0): {BytesSent: 5, BytesRecv: 8},
		proto.ServerID(0): {BytesSent: 6, BytesRecv: 9},
	}}
	tr := arrange([]node.Stats{EndpointStats(proto.SchedulerID, es)})
	if want := []string{"scheduler", "server 0", "worker 0"}; !slices.Equal(tr.nodes, want) {
		t.Fatalf("nodes %v, want %v", tr.nodes, want)
	}
	want := [][]uint64{{0, 6, 5}, {9, 0, 0}, {8, 0, 0}}
	for i := range want {
		if !slices.Equal(tr.bytes[i], want[i]) {
			t.Errorf("row %s: %v, want %v", tr.nodes[i], tr.bytes[i], want[i])
		}
	}
	if m := tr.measure(); m.InterBytes != 0 || m.InnerBytes != 0 {
		t.Errorf("measured %+v: control traffic is neither", m)
	}
}

// newIdle returns a board whose ticker never fires in a test: samples
// are taken by hand.
func newIdle(t *testing.T) *Board {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Interval = time.Hour
	b, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	return b
}

// TestFrameJSON builds two frames a second apart from counters that
// double, and checks the JSON the page reads: names, rates, the cost
// model's prediction, round times, a diverged loss written null.
func TestFrameJSON(t *testing.T) {
	b := newIdle(t)
	cost := &placement.Cost{K: 2, TMax: 40, TSum: 70, Traffic: []int64{30, 40}}
	b.Run(RunInfo{Name: "parsa", Machines: 2, Width: 3, Cost: cost})
	b.Pass(train.Pass{Pass: 1, Rounds: 2, Seconds: 1, TrainLoss: 0.7, TrainAccuracy: 0.5})
	b.Pass(train.Pass{Pass: 2, Rounds: 4, Seconds: 1.5, TrainLoss: math.NaN()})
	acc := 0.8
	b.Check(train.Check{Step: 8, Seconds: 1.2, Validation: train.Eval{Accuracy: &acc}})
	b.mu.Lock()
	b.build(arrange(twoMachines(1)), 1*time.Second)
	f := b.build(arrange(twoMachines(2)), 2*time.Second)
	data, err := json.Marshal(f)
	b.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Seq    int         `json:"seq"`
		Status string      `json:"status"`
		Nodes  []string    `json:"nodes"`
		Bytes  [][]uint64  `json:"bytes"`
		Rates  [][]float64 `json:"rates"`
		Links  []Link      `json:"links"`
		Srv    []Server    `json:"servers"`
		Runs   []struct {
			Name     string          `json:"name"`
			Cost     *placement.Cost `json:"cost"`
			Measured Measured        `json:"measured"`
			Passes   []map[string]any
			Checks   []Score
			Traffic  []Rate
		} `json:"runs"`
	}
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatalf("%v\n%s", err, data)
	}
	if got.Status != "training parsa" || len(got.Nodes) != 3 || got.Bytes[0][1] != 700 {
		t.Errorf("status %q, nodes %v, bytes %v", got.Status, got.Nodes, got.Bytes)
	}
	// The counters doubled in a second: each rate is the first sample.
	if got.Rates[0][1] != 350 || got.Rates[1][1] != 200 || got.Rates[2][0] != 9 {
		t.Errorf("rates %v, want the first sample's bytes per second", got.Rates)
	}
	if l := got.Links[0]; l.From != "machine 0" || l.To != "machine 1" || l.Rate != 350 || l.Bytes != 700 {
		t.Errorf("fastest link %+v, want machine 0 → machine 1 at 350 B/s", l)
	}
	if len(got.Srv) != 2 || got.Srv[0].KeysPushed != 60 {
		t.Errorf("servers %+v", got.Srv)
	}
	r := got.Runs[0]
	if r.Name != "parsa" || r.Cost == nil || r.Cost.TMax != 40 {
		t.Errorf("run %+v", r)
	}
	if m := r.Measured; m.InterBytes != 900 || m.InnerBytes != 600 || m.Rounds != 4 || m.PredictedValues != 70*3*4 {
		t.Errorf("measured %+v, want 900 inter, 600 inner bytes, 4 rounds, %d values predicted", m, 70*3*4)
	}
	if len(r.Traffic) != 1 || r.Traffic[0].Inter != 450 || r.Traffic[0].Inner != 300 {
		t.Errorf("traffic %+v, want one point of 450 B/s between and 300 within machines", r.Traffic)
	}
	if len(r.Passes) != 2 || r.Passes[0]["round_seconds"] != 0.5 || r.Passes[1]["round_seconds"] != 0.25 {
		t.Errorf("passes %v, want round times 0.5 and 0.25 s", r.Passes)
	}
	if v, ok := r.Passes[1]["train_loss"]; !ok || v != nil {
		t.Errorf("a NaN loss is %v, want null", v)
	}
	if len(r.Checks) != 1 || *r.Checks[0].Accuracy != 0.8 {
		t.Errorf("checks %+v", r.Checks)
	}
	if strings.Contains(string(data), "NaN") {
		t.Error("the JSON holds NaN")
	}
}

// TestNewSourceResetsRates checks that counters that fall (a new
// cluster, the next run) give no negative or huge rates.
func TestNewSourceResetsRates(t *testing.T) {
	b := newIdle(t)
	b.mu.Lock()
	defer b.mu.Unlock()
	b.build(arrange(twoMachines(5)), time.Second)
	f := b.build(arrange(twoMachines(1)), 2*time.Second)
	for _, row := range f.Rates {
		for _, r := range row {
			if r != 0 {
				t.Fatalf("rates %v after the counters fell, want 0", f.Rates)
			}
		}
	}
}

func TestThin(t *testing.T) {
	s := []int{0, 1, 2, 3, 4, 5}
	if got := thin(s, 6); len(got) != 6 {
		t.Errorf("thin within the limit: %v", got)
	}
	if got := thin([]int{0, 1, 2, 3, 4, 5, 6}, 6); !slices.Equal(got, []int{0, 2, 4, 6}) {
		t.Errorf("thin = %v, want 0 2 4 6", got)
	}
	if got := thin([]int{0, 1, 2, 3, 4, 5, 6, 7}, 6); !slices.Equal(got, []int{0, 2, 4, 6, 7}) {
		t.Errorf("thin = %v, want 0 2 4 6 7", got)
	}
}

func TestConfigValidate(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []Config{{Interval: 0, History: 10}, {Interval: time.Second, History: 1}} {
		if _, err := New(c); err == nil {
			t.Errorf("New(%+v) accepted", c)
		}
	}
}

func TestNilBoard(t *testing.T) {
	var b *Board
	b.Watch(nil)
	b.WatchEndpoint(proto.SchedulerID, nil)
	b.Run(RunInfo{Name: "x"})
	b.Pass(train.Pass{})
	b.Check(train.Check{})
	b.Status("x")
	b.Event("x")
	b.Close()
	if b.URL() != "" {
		t.Error("a nil board has a URL")
	}
}

// machines returns the counters of a co-located cluster of k machines
// in which every worker talks to every server.
func machines(k int) []node.Stats {
	stats := make([]node.Stats, k)
	for m := range k {
		st := node.Stats{Machine: m, Server: &server.Stats{Pushes: 10, Keys: 100}, Worker: &worker.Stats{Rounds: 10}}
		for s := range k {
			st.Links = append(st.Links, link(proto.WorkerID(m), proto.ServerID(s), s == m, 1000, 1000))
			st.Links = append(st.Links, link(proto.ServerID(m), proto.WorkerID(s), s == m, 1000, 1000))
		}
		st.Links = append(st.Links, link(proto.WorkerID(m), proto.SchedulerID, false, 10, 10))
		stats[m] = st
	}
	return stats
}

// BenchmarkSample measures a board's work per frame, what it costs the
// job at every interval: arranging the counters of 16 machines (512
// links), building the frame of a run of 200 passes and encoding it.
func BenchmarkSample(b *testing.B) {
	cfg := DefaultConfig()
	cfg.Interval = time.Hour
	board, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer board.Close()
	stats := machines(16)
	board.Watch(func() []node.Stats { return stats })
	board.Run(RunInfo{Name: "parsa", Machines: 16, Width: 20, Cost: &placement.Cost{TSum: 1, Traffic: make([]int64, 16)}})
	for p := range 200 {
		board.Pass(train.Pass{Pass: p + 1, Rounds: p + 1, Seconds: float64(p), TrainLoss: 1 / float64(p+1)})
	}
	b.ReportAllocs()
	for b.Loop() {
		board.sample()
	}
	b.ReportMetric(float64(len(board.Frame())), "frame-bytes")
}

// TestRunKeepsPreviousMeasure checks that a new run first measures the
// previous one at its cluster's last counters.
func TestRunKeepsPreviousMeasure(t *testing.T) {
	b := newIdle(t)
	b.Run(RunInfo{Name: "random"})
	stats := twoMachines(1)
	b.Watch(func() []node.Stats { return stats })
	b.sample()
	stats = twoMachines(3) // the run went on after the last sample
	b.Run(RunInfo{Name: "parsa"})
	b.mu.Lock()
	defer b.mu.Unlock()
	if m := b.runs[0].Measured; m.InterBytes != 3*450 {
		t.Errorf("the first run's inter-machine bytes %d, want its last counters' %d", m.InterBytes, 3*450)
	}
	if b.source != nil {
		t.Error("the new run kept the previous cluster's counters")
	}
}

// TestEvents: the events recorded appear in the frames in order, the
// newest History of them, each with its time.
func TestEvents(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Interval, cfg.History = time.Hour, 3
	b, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for i := range 5 {
		b.Event(fmt.Sprintf("machine %d failed", i))
	}
	b.sample()
	var f Frame
	if err := json.Unmarshal(b.Frame(), &f); err != nil {
		t.Fatal(err)
	}
	if len(f.Events) != 3 || f.Events[0].Text != "machine 2 failed" || f.Events[2].Text != "machine 4 failed" {
		t.Fatalf("events %+v, want machines 2 to 4", f.Events)
	}
	for i := 1; i < len(f.Events); i++ {
		if f.Events[i].Seconds < f.Events[i-1].Seconds || f.Events[i].Seconds > f.Seconds {
			t.Errorf("event times %+v, frame at %v", f.Events, f.Seconds)
		}
	}
}
