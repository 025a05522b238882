// Package metrics turns colo's counters into Prometheus metrics with the
// Prometheus client library: collectors that read the Stats structs of
// nodes (ps/node.Stats) and endpoints (transport.Stats) when scraped, a
// training collector fed after every pass, the Go runtime and process
// collectors, and an HTTP server that keeps the final values readable
// after the job (Flags). The components only count, in plain Stats
// structs with no metrics dependency; this package is the one place that
// names and describes the metrics. Collecting costs nothing between
// scrapes: a scrape reads the counters once, O(links).
//
// The families (label values never hold spaces: nodes are named
// scheduler, server_0, worker_1):
//
//	colo_link_messages_total{from,to,scope,dir}       counter    messages per link and direction
//	colo_link_bytes_total{from,to,scope,dir}          counter    frame bytes per link and direction
//	colo_traffic_bytes_total{machine,scope,dir}       counter    a machine's frame bytes by scope
//	colo_server_pushes_total{server}                  counter    pushes applied
//	colo_server_pulls_total{server}                   counter    pulls answered
//	colo_server_keys_pushed_total{server}             counter    keys pushed (a range counts its length)
//	colo_server_keys_pulled_total{server}             counter    keys pulled
//	colo_server_errors_total{server}                  counter    requests answered with an error
//	colo_server_rounds{server}                        gauge      rounds every worker has pushed
//	colo_server_max_lead_rounds{server}               gauge      largest lead of a worker over the slowest
//	colo_server_keys{server}                          gauge      keys stored
//	colo_server_key_share{server}                     gauge      fraction of the placed keys the routing table gives it
//	colo_server_staleness_rounds{server}              histogram  staleness of the pushes applied (server.Staleness)
//	colo_server_reply_queue_bytes{server,to}          gauge      frame bytes of answers queued for a destination (node.ReplyQueueStats)
//	colo_server_reply_queue_max_bytes{server,to}      gauge      the most bytes that queue held at once
//	colo_worker_pushes_total{worker}                  counter    pushes started
//	colo_worker_pulls_total{worker}                   counter    pulls started
//	colo_worker_keys_pushed_total{worker}             counter    keys pushed
//	colo_worker_keys_pulled_total{worker}             counter    keys pulled
//	colo_worker_gated_total{worker}                   counter    calls that waited for the consistency gate
//	colo_worker_direct_total{worker}                  counter    pulls its machine's server served on the caller's thread
//	colo_worker_errors_total{worker}                  counter    failed calls
//	colo_worker_round{worker}                         gauge      the worker's round
//	colo_worker_request_duration_seconds{worker,server,op} histogram round trip of a push or pull, per server
//	colo_train_pass, colo_train_rounds                gauge      passes and rounds done (training)
//	colo_train_loss, colo_train_accuracy              gauge      the last pass's training loss and accuracy
//	colo_train_round_seconds                          gauge      mean time of a round in the last pass
//	colo_train_seconds                                gauge      time from the start of training
//	colo_validation_accuracy, colo_validation_log_loss gauge     the last validation, where the job validates
//	go_*, process_*                                              the Go runtime and the process
//
// from and to are nodes; scope is inner (a peer on the same machine,
// reached through memory) or inter (the network); dir is sent or recv;
// op is push or pull. A request's round trip runs from the call to the
// server's answer (worker.Latency), in buckets of 10 µs · 2^i up to 5.24 s.
//
// Example, a node's metrics on :9100, still served for a minute after
// the job:
//
//	reg := metrics.NewRegistry()
//	reg.MustRegister(metrics.NewNodeCollector(n.Stats))
//	end, err := (&metrics.Flags{Addr: ":9100", Linger: time.Minute}).Start(reg, os.Stderr)
//	if err != nil {
//		return err
//	}
//	defer end(ctx)
//	// curl http://host:9100/metrics
package metrics

import (
	"math"
	"strconv"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"colo/ps/node"
	"colo/ps/proto"
	"colo/ps/server"
	"colo/ps/worker"
	"colo/train"
	"colo/transport"
)

// NewRegistry returns a registry with the Go runtime and process
// collectors.
func NewRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// Label returns the label value of a node id: "scheduler", "server_0",
// "worker_1".
func Label(id transport.NodeID) string { return strings.ReplaceAll(proto.Name(id), " ", "_") }

func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(name, help, labels, nil)
}

// The families, each described once.
var (
	linkLabels       = []string{"from", "to", "scope", "dir"}
	linkMessages     = desc("colo_link_messages_total", "Messages per link and direction; scope is inner (same machine, through memory) or inter (the network).", linkLabels...)
	linkBytes        = desc("colo_link_bytes_total", "Frame bytes per link and direction.", linkLabels...)
	trafficBytes     = desc("colo_traffic_bytes_total", "A machine's frame bytes summed by scope and direction.", "machine", "scope", "dir")
	serverPushes     = desc("colo_server_pushes_total", "Push requests applied.", "server")
	serverPulls      = desc("colo_server_pulls_total", "Pull requests answered.", "server")
	serverKeysPush   = desc("colo_server_keys_pushed_total", "Keys pushed (a range counts its length).", "server")
	serverKeysPull   = desc("colo_server_keys_pulled_total", "Keys pulled.", "server")
	serverErrors     = desc("colo_server_errors_total", "Requests answered with an error.", "server")
	serverRounds     = desc("colo_server_rounds", "Rounds every worker has pushed.", "server")
	serverMaxLead    = desc("colo_server_max_lead_rounds", "Largest lead of a worker over the slowest seen.", "server")
	serverKeys       = desc("colo_server_keys", "Keys stored.", "server")
	serverShare      = desc("colo_server_key_share", "Fraction of the placed keys that the routing table gives the server: its share of the model's load; it changes when keys move.", "server")
	serverStale      = desc("colo_server_staleness_rounds", "Staleness of the pushes applied: rounds of updates the model they were computed on may lack.", "server")
	serverQueued     = desc("colo_server_reply_queue_bytes", "Frame bytes of the server's answers queued for a destination over the network, the one leaving included: a destination that reads slowly or not at all holds them (no one else's).", "server", "to")
	serverQueuedMax  = desc("colo_server_reply_queue_max_bytes", "The most bytes of answers the server's queue for a destination held at once.", "server", "to")
	workerPushes     = desc("colo_worker_pushes_total", "Pushes started.", "worker")
	workerPulls      = desc("colo_worker_pulls_total", "Pulls started.", "worker")
	workerKeysPush   = desc("colo_worker_keys_pushed_total", "Keys pushed.", "worker")
	workerKeysPull   = desc("colo_worker_keys_pulled_total", "Keys pulled.", "worker")
	workerGated      = desc("colo_worker_gated_total", "Calls that waited for the consistency gate.", "worker")
	workerDirect     = desc("colo_worker_direct_total", "Pulls the machine's own server served on the caller's thread, whole or their part of its keys, without messages (also in colo_worker_pulls_total).", "worker")
	workerDirectPush = desc("colo_worker_direct_pushes_total", "Pushes the machine's own server took on the caller's thread, whole or their part of its keys, without messages (also in colo_worker_pushes_total).", "worker")
	workerErrors     = desc("colo_worker_errors_total", "Failed calls.", "worker")
	workerRound      = desc("colo_worker_round", "The worker's round.", "worker")
	workerLatency    = desc("colo_worker_request_duration_seconds", "Round trip of the worker's pushes and pulls to each server, from the call to the server's answer (a push under BSP or bounded delay waits for the slower workers there).", "worker", "server", "op")
)

// latencyBounds are the upper bounds of the round-trip buckets, in
// seconds.
var latencyBounds = func() []float64 {
	b := make([]float64, worker.LatencyBuckets)
	for i := range b {
		b[i] = float64(worker.LatencyBound(i)) / 1e9 // 1.31072, not 1.3107199999999999
	}
	return b
}()

func scope(inner bool) string {
	if inner {
		return "inner"
	}
	return "inter"
}

// emit sends the samples of one metric.
func emit(ch chan<- prometheus.Metric, d *prometheus.Desc, t prometheus.ValueType, v float64, labels ...string) {
	ch <- prometheus.MustNewConstMetric(d, t, v, labels...)
}

// link sends the message and byte counters of one link.
func link(ch chan<- prometheus.Metric, from, to, sc string, l transport.LinkStats) {
	c := prometheus.CounterValue
	emit(ch, linkMessages, c, float64(l.MsgsSent), from, to, sc, "sent")
	emit(ch, linkMessages, c, float64(l.MsgsRecv), from, to, sc, "recv")
	emit(ch, linkBytes, c, float64(l.BytesSent), from, to, sc, "sent")
	emit(ch, linkBytes, c, float64(l.BytesRecv), from, to, sc, "recv")
}

// NodeCollector collects the counters of nodes: their links, their
// machines' traffic, and their servers' and workers' Stats, read from its
// source at every scrape.
type NodeCollector struct {
	mu     sync.Mutex
	source func() []node.Stats
}

// NewNodeCollector returns a collector of one node's counters, read from
// stats (such as (*node.Node).Stats).
func NewNodeCollector(stats func() node.Stats) *NodeCollector {
	return NewNodesCollector(func() []node.Stats { return []node.Stats{stats()} })
}

// NewNodesCollector returns a collector of the counters of several nodes
// (an in-process cluster's, cluster.Cluster.Stats). stats may be nil:
// nothing is collected until Set.
func NewNodesCollector(stats func() []node.Stats) *NodeCollector {
	return &NodeCollector{source: stats}
}

// Set makes stats the source of later scrapes.
func (c *NodeCollector) Set(stats func() []node.Stats) {
	c.mu.Lock()
	c.source = stats
	c.mu.Unlock()
}

// Freeze reads the source once more and serves that snapshot from then
// on: the final values, after the nodes have closed.
func (c *NodeCollector) Freeze() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.source == nil {
		return
	}
	final := c.source()
	c.source = func() []node.Stats { return final }
}

// Describe sends nothing: the collector is unchecked, since which
// families it has depends on the nodes' roles.
func (c *NodeCollector) Describe(chan<- *prometheus.Desc) {}

// Collect sends the nodes' counters.
func (c *NodeCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	src := c.source
	c.mu.Unlock()
	if src == nil {
		return
	}
	for _, st := range src() {
		collectNode(ch, st)
	}
}

func collectNode(ch chan<- prometheus.Metric, st node.Stats) {
	for _, l := range st.Links {
		link(ch, Label(l.From), Label(l.To), scope(l.Inner), l.LinkStats)
	}
	m := strconv.Itoa(st.Machine)
	cv, gv := prometheus.CounterValue, prometheus.GaugeValue
	for _, s := range []struct {
		scope string
		ls    transport.LinkStats
	}{{"inner", st.Inner}, {"inter", st.Inter}} {
		emit(ch, trafficBytes, cv, float64(s.ls.BytesSent), m, s.scope, "sent")
		emit(ch, trafficBytes, cv, float64(s.ls.BytesRecv), m, s.scope, "recv")
	}
	var srv, wrk string
	for _, l := range st.Links {
		switch role, _ := proto.Identify(l.From); role {
		case proto.RoleServer:
			srv = Label(l.From)
		case proto.RoleWorker:
			wrk = Label(l.From)
		}
	}
	// A server's and a worker's counters are labelled by their ids, which
	// the links name: they appear with the first link (to the scheduler),
	// before which they are all 0.
	if s := st.Server; s != nil && srv != "" {
		emit(ch, serverPushes, cv, float64(s.Pushes), srv)
		emit(ch, serverPulls, cv, float64(s.Pulls), srv)
		emit(ch, serverKeysPush, cv, float64(s.KeysPushed), srv)
		emit(ch, serverKeysPull, cv, float64(s.KeysPulled), srv)
		emit(ch, serverErrors, cv, float64(s.Errors), srv)
		emit(ch, serverRounds, gv, float64(s.Rounds), srv)
		emit(ch, serverMaxLead, gv, float64(s.MaxLead), srv)
		emit(ch, serverKeys, gv, float64(s.Keys), srv)
		emit(ch, serverShare, gv, s.KeyShare, srv)
		ch <- staleness(s.Staleness, srv)
	}
	for _, q := range st.Replies {
		emit(ch, serverQueued, gv, float64(q.Bytes), Label(q.From), Label(q.To))
		emit(ch, serverQueuedMax, gv, float64(q.MaxBytes), Label(q.From), Label(q.To))
	}
	if s := st.Worker; s != nil && wrk != "" {
		emit(ch, workerPushes, cv, float64(s.Pushes), wrk)
		emit(ch, workerPulls, cv, float64(s.Pulls), wrk)
		emit(ch, workerKeysPush, cv, float64(s.KeysPushed), wrk)
		emit(ch, workerKeysPull, cv, float64(s.KeysPulled), wrk)
		emit(ch, workerGated, cv, float64(s.Gated), wrk)
		emit(ch, workerDirect, cv, float64(s.Direct), wrk)
		emit(ch, workerDirectPush, cv, float64(s.DirectPushes), wrk)
		emit(ch, workerErrors, cv, float64(s.Errors), wrk)
		emit(ch, workerRound, gv, float64(s.Rounds), wrk)
		for sv, l := range s.Latency {
			to := Label(proto.ServerID(sv))
			for _, op := range []struct {
				name string
				l    worker.Latency
			}{{"push", l.Push}, {"pull", l.Pull}} {
				if op.l.Count > 0 { // a server the worker never asked has none
					ch <- latency(op.l, wrk, to, op.name)
				}
			}
		}
	}
}

// latency is a worker's histogram of the round trips to one server; the
// last of worker.Latency's buckets (beyond the last bound) is only in
// +Inf.
func latency(l worker.Latency, wrk, srv, op string) prometheus.Metric {
	buckets := make(map[float64]uint64, len(latencyBounds))
	var cum uint64
	for i, b := range latencyBounds {
		cum += l.Hist[i]
		buckets[b] = cum
	}
	return prometheus.MustNewConstHistogram(workerLatency, l.Count, float64(l.Nanos)/1e9, buckets, wrk, srv, op)
}

// staleness is a server's staleness histogram: bucket le=s counts the
// pushes of staleness at most s; the last of server.Staleness's buckets
// (that many rounds or more) is only in +Inf.
func staleness(s server.Staleness, srv string) prometheus.Metric {
	buckets := make(map[float64]uint64, server.StalenessBuckets-1)
	var cum uint64
	for i := range server.StalenessBuckets - 1 {
		cum += s.Hist[i]
		buckets[float64(i)] = cum
	}
	return prometheus.MustNewConstHistogram(serverStale, s.Pushes, float64(s.Sum), buckets, srv)
}

// EndpointCollector collects the per-peer counters of one endpoint, such
// as the scheduler's. Every link is scope inter: an endpoint alone does
// not know which peers share its machine.
type EndpointCollector struct {
	from  string
	stats func() transport.Stats
}

// NewEndpointCollector returns a collector of the links of the endpoint
// named from ("scheduler"), read from stats at every scrape.
func NewEndpointCollector(from string, stats func() transport.Stats) *EndpointCollector {
	return &EndpointCollector{from: strings.ReplaceAll(from, " ", "_"), stats: stats}
}

// Describe sends the link families.
func (c *EndpointCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- linkMessages
	ch <- linkBytes
}

// Collect sends the links' counters, peers in increasing id order.
func (c *EndpointCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.stats()
	for _, peer := range st.Peers() {
		link(ch, c.from, Label(peer), "inter", st.Links[peer])
	}
}

// Training is what training has reached, pass after pass: gauges that
// Pass updates (a train.Progress) and a scrape reads.
type Training struct {
	pass, rounds, loss, accuracy, round, seconds prometheus.Gauge
	valAccuracy, valLogLoss                      prometheus.Gauge
	reg                                          prometheus.Registerer
	mu                                           sync.Mutex
	last                                         train.Pass
	validated                                    bool
}

// NewTraining registers the training gauges on reg. The validation
// gauges appear with the first pass that has a validation.
func NewTraining(reg prometheus.Registerer) *Training {
	g := func(name, help string) prometheus.Gauge {
		return prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: help})
	}
	t := &Training{
		pass:        g("colo_train_pass", "Passes over the data done."),
		rounds:      g("colo_train_rounds", "Rounds (pull, compute, push) done."),
		loss:        g("colo_train_loss", "Mean training loss of the last pass (log loss, or squared error for matrix factorisation)."),
		accuracy:    g("colo_train_accuracy", "Fraction of the last pass's samples predicted right (classifiers)."),
		round:       g("colo_train_round_seconds", "Mean time of a round in the last pass."),
		seconds:     g("colo_train_seconds", "Time from the start of training to the end of the last pass."),
		valAccuracy: g("colo_validation_accuracy", "Accuracy on the validation set of the evaluator's last score."),
		valLogLoss:  g("colo_validation_log_loss", "Log loss on the validation set of the evaluator's last score."),
		reg:         reg,
	}
	reg.MustRegister(t.pass, t.rounds, t.loss, t.accuracy, t.round, t.seconds)
	return t
}

// Pass records a pass: machine 0's train.Progress.
func (t *Training) Pass(p train.Pass) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.pass.Set(float64(p.Pass))
	t.rounds.Set(float64(p.Rounds))
	t.loss.Set(p.TrainLoss)
	t.accuracy.Set(p.TrainAccuracy)
	t.seconds.Set(p.Seconds)
	if dr := p.Rounds - t.last.Rounds; dr > 0 {
		t.round.Set((p.Seconds - t.last.Seconds) / float64(dr))
	}
	t.last = p
}

// Check records a score of the evaluator: the validation gauges, which
// appear with the first.
func (t *Training) Check(c train.Check) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.validated {
		t.validated = true
		t.reg.MustRegister(t.valAccuracy, t.valLogLoss)
	}
	t.valAccuracy.Set(nanOr(c.Validation.Accuracy))
	t.valLogLoss.Set(nanOr(c.Validation.LogLoss))
}

func nanOr(p *float64) float64 {
	if p == nil {
		return math.NaN()
	}
	return *p
}
