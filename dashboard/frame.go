package dashboard

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"

	"colo/ps/node"
	"colo/ps/proto"
	"colo/transport"
)

// Frame is what the page receives at every sample, as JSON: the traffic
// of the current run, the load of its servers, and the series of every
// run so far.
type Frame struct {
	// Seq counts the frames, from 1.
	Seq int `json:"seq"`
	// Seconds is the time since the dashboard started.
	Seconds float64 `json:"seconds"`
	// Status says what the process is doing ("training parsa",
	// "finished"); Ended marks the last frame: the page stops listening.
	Status string `json:"status"`
	Ended  bool   `json:"ended,omitempty"`
	// Nodes name the rows and columns of Bytes and Rates: "machine 0", …
	// for the servers and workers whose machine is known, then the
	// others by name ("scheduler", "evaluator 0"; "server 1" where the
	// machine is not known, as at the scheduler).
	Nodes []string `json:"nodes"`
	// Bytes[i][j] is the frame bytes Nodes[i] sent to Nodes[j] in the
	// current run, Rates[i][j] the bytes per second over the last
	// sampling period.
	Bytes [][]uint64  `json:"bytes"`
	Rates [][]float64 `json:"rates"`
	// Links are the non-zero cells of Bytes, fastest first.
	Links []Link `json:"links"`
	// Servers and Workers are the nodes' counters (node.Stats), by rank.
	Servers []Server `json:"servers"`
	Workers []Worker `json:"workers"`
	// Runs are the training runs, in order; the last is the current one.
	Runs []*Run `json:"runs"`
	// Events are what happened to the job's processes (Board.Event): a
	// failure, the node that failed and how the job recovered, oldest
	// first; the newest Config.History are kept.
	Events []Event `json:"events,omitempty"`
}

// Event is a line of what happened to the job, at a time since the board
// started.
type Event struct {
	Seconds float64 `json:"seconds"`
	Text    string  `json:"text"`
}

// Link is the traffic from one node (or machine) to another.
type Link struct {
	From  string  `json:"from"`
	To    string  `json:"to"`
	Bytes uint64  `json:"bytes"`
	Rate  float64 `json:"rate"`
}

// Server is a server's load.
type Server struct {
	Name       string `json:"name"`
	Keys       int    `json:"keys"`
	Pushes     uint64 `json:"pushes"`
	Pulls      uint64 `json:"pulls"`
	KeysPushed uint64 `json:"keys_pushed"`
	KeysPulled uint64 `json:"keys_pulled"`
	Rounds     int64  `json:"rounds"`
}

// Worker is a worker's progress.
type Worker struct {
	Name   string `json:"name"`
	Rounds int64  `json:"rounds"`
	Pushes uint64 `json:"pushes"`
	Pulls  uint64 `json:"pulls"`
	Gated  uint64 `json:"gated"`
}

// Run is one training run: what the cost model predicted for its
// placement, what was measured, and its series.
type Run struct {
	RunInfo
	// Started is the dashboard time the run started at.
	Started float64 `json:"started"`
	// Measured is the run's traffic so far.
	Measured Measured `json:"measured"`
	// Passes are the passes (train.Pass) with their mean round time.
	Passes []Point `json:"passes"`
	// Checks are the evaluator's validation scores (train.Check).
	Checks []Score `json:"checks"`
	// Traffic is the data rate between and within machines, per sample.
	Traffic []Rate `json:"traffic"`
}

// Measured is a run's traffic between the workers and servers (the
// scheduler's and evaluators' left out, as in train.Result).
type Measured struct {
	// InterBytes crossed machines, InnerBytes stayed within one.
	InterBytes uint64 `json:"inter_bytes"`
	InnerBytes uint64 `json:"inner_bytes"`
	// Machines are the bytes each machine sent to and received from
	// others, by machine; beside the cost model's per-machine traffic
	// T_i.
	Machines []uint64 `json:"machines"`
	// Rounds is the rounds of the last pass; with Cost, the cost model
	// predicts T_sum · width · Rounds values between machines
	// (PredictedValues).
	Rounds          int   `json:"rounds"`
	PredictedValues int64 `json:"predicted_values,omitempty"`
}

// Point is a pass.
type Point struct {
	Pass          int     `json:"pass"`
	Rounds        int     `json:"rounds"`
	Seconds       float64 `json:"seconds"`
	TrainLoss     Float   `json:"train_loss"`
	TrainAccuracy Float   `json:"train_accuracy,omitempty"`
	// RoundSeconds is the mean time of the pass's rounds.
	RoundSeconds Float `json:"round_seconds"`
}

// Score is a validation score (nil fields: not measured).
type Score struct {
	Seconds  float64  `json:"seconds"`
	Step     int64    `json:"step"`
	Epoch    float64  `json:"epoch"`
	Accuracy *float64 `json:"accuracy,omitempty"`
	LogLoss  *float64 `json:"log_loss,omitempty"`
	RMSE     *float64 `json:"rmse,omitempty"`
	Final    bool     `json:"final,omitempty"`
}

// Rate is the data rate at a sample, in bytes per second.
type Rate struct {
	Seconds float64 `json:"seconds"`
	Inter   float64 `json:"inter"`
	Inner   float64 `json:"inner"`
}

// Float is a number that is written null in JSON when it is not finite
// (a diverged loss), which JSON cannot hold.
type Float float64

// MarshalJSON writes f, or null when f is NaN or infinite.
func (f Float) MarshalJSON() ([]byte, error) {
	v := float64(f)
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return []byte("null"), nil
	}
	return strconv.AppendFloat(nil, v, 'g', -1, 64), nil
}

// finite returns p, or nil when *p is not finite.
func finite(p *float64) *float64 {
	if p == nil || math.IsNaN(*p) || math.IsInf(*p, 0) {
		return nil
	}
	return p
}

// traffic is the counters of a sample arranged by node: the matrix and
// the nodes' labels, with what the nodes are.
type traffic struct {
	nodes []string
	bytes [][]uint64
	// machine[i] is the machine of row i, -1 for the scheduler, the
	// evaluators and the nodes whose machine is not known.
	machine []int
	servers []Server
	workers []Worker
}

// arrange turns the nodes' counters into the traffic between their
// machines. A link's bytes are counted at its sender; the bytes received
// from a peer that is not among stats (the nodes of a scheduler's
// endpoint) are counted as that peer's sending. O(links + rows²).
func arrange(stats []node.Stats) traffic {
	machineOf := map[transport.NodeID]int{}
	own := map[transport.NodeID]bool{}
	for _, st := range stats {
		for _, l := range st.Links {
			own[l.From] = true
			switch role, _ := proto.Identify(l.From); role {
			case proto.RoleServer, proto.RoleWorker:
				machineOf[l.From] = st.Machine
			}
		}
	}
	type key struct {
		kind, rank int // 0 machine, 1 scheduler, 2 evaluator, 3 other node
		name       string
	}
	keyOf := func(id transport.NodeID) key {
		if m, ok := machineOf[id]; ok {
			return key{0, m, fmt.Sprintf("machine %d", m)}
		}
		role, rank := proto.Identify(id)
		switch role {
		case proto.RoleScheduler:
			return key{1, 0, proto.Name(id)}
		case proto.RoleEvaluator:
			return key{2, rank, proto.Name(id)}
		}
		return key{3, int(id), proto.Name(id)}
	}
	type edge struct{ from, to key }
	sums := map[edge]uint64{}
	keys := map[key]bool{}
	add := func(from, to transport.NodeID, b uint64) {
		e := edge{keyOf(from), keyOf(to)}
		keys[e.from], keys[e.to] = true, true
		sums[e] += b
	}
	var tr traffic
	for _, st := range stats {
		for _, l := range st.Links {
			if proto.IsProvisional(l.From) || proto.IsProvisional(l.To) {
				continue // a node before it registered: a few bytes, under an id it no longer has
			}
			add(l.From, l.To, l.BytesSent)
			if !own[l.To] {
				add(l.To, l.From, l.BytesRecv)
			}
		}
		var srv, wrk transport.NodeID
		for _, l := range st.Links {
			switch role, _ := proto.Identify(l.From); role {
			case proto.RoleServer:
				srv = l.From
			case proto.RoleWorker:
				wrk = l.From
			}
		}
		if s := st.Server; s != nil && srv != 0 {
			tr.servers = append(tr.servers, Server{Name: proto.Name(srv), Keys: s.Keys, Pushes: s.Pushes, Pulls: s.Pulls,
				KeysPushed: s.KeysPushed, KeysPulled: s.KeysPulled, Rounds: s.Rounds})
		}
		if s := st.Worker; s != nil && wrk != 0 {
			tr.workers = append(tr.workers, Worker{Name: proto.Name(wrk), Rounds: s.Rounds, Pushes: s.Pushes, Pulls: s.Pulls, Gated: s.Gated})
		}
	}
	order := make([]key, 0, len(keys))
	for k := range keys {
		order = append(order, k)
	}
	slices.SortFunc(order, func(a, b key) int {
		return cmp.Or(cmp.Compare(a.kind, b.kind), cmp.Compare(a.rank, b.rank), cmp.Compare(a.name, b.name))
	})
	index := make(map[key]int, len(order))
	tr.bytes = make([][]uint64, len(order))
	for i, k := range order {
		index[k] = i
		tr.nodes = append(tr.nodes, k.name)
		m := -1
		if k.kind == 0 {
			m = k.rank
		}
		tr.machine = append(tr.machine, m)
		tr.bytes[i] = make([]uint64, len(order))
	}
	for e, b := range sums {
		tr.bytes[index[e.from]][index[e.to]] += b
	}
	byName := func(a, b string) int { return compareNames(a, b) }
	slices.SortFunc(tr.servers, func(a, b Server) int { return byName(a.Name, b.Name) })
	slices.SortFunc(tr.workers, func(a, b Worker) int { return byName(a.Name, b.Name) })
	return tr
}

// compareNames orders "server 2" before "server 10".
func compareNames(a, b string) int {
	if len(a) != len(b) {
		return cmp.Compare(len(a), len(b))
	}
	return cmp.Compare(a, b)
}

// measure returns the traffic between and within machines.
func (tr traffic) measure() Measured {
	var m Measured
	k := 0
	for _, mi := range tr.machine {
		k = max(k, mi+1)
	}
	m.Machines = make([]uint64, k)
	for i, row := range tr.bytes {
		for j, b := range row {
			mi, mj := tr.machine[i], tr.machine[j]
			switch {
			case mi < 0 || mj < 0:
			case mi == mj:
				m.InnerBytes += b
			default:
				m.InterBytes += b
				m.Machines[mi] += b
				m.Machines[mj] += b
			}
		}
	}
	return m
}

// same reports whether a and b have the same rows.
func (tr traffic) same(o traffic) bool { return slices.Equal(tr.nodes, o.nodes) }
