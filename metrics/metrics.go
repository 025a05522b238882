// Package metrics turns colo's counters into Prometheus metrics: it writes
// the Stats structs of a node (ps/node.Stats) and of a transport endpoint
// (transport.Stats) in the Prometheus text exposition format, version
// 0.0.4, and serves them over HTTP at /metrics. The components only count
// (in plain Stats structs, with no metrics dependency); this package, used
// by cmd/colo, is the one place that names and describes the metrics.
//
// Every metric family is described once, in one table, and written with
// one HELP and one TYPE line followed by its samples. The families:
//
//	colo_link_messages_total{from,to,scope,dir}  counter  messages per link and direction
//	colo_link_bytes_total{from,to,scope,dir}     counter  frame bytes per link and direction
//	colo_traffic_bytes_total{scope,dir}          counter  frame bytes summed by scope (node only)
//	colo_server_*                                         a server's Stats (node with a server)
//	colo_worker_*                                         a worker's Stats (node with a worker)
//
// from and to are node names as ps/proto.Name gives them ("worker 0",
// "server 1", "scheduler"); scope is inner (a peer on the same machine,
// reached through memory) or inter (the network); dir is sent or recv.
// Writing is O(links) and allocates little; it does no I/O besides w.
//
// Example, a node's counters on :9100:
//
//	addr, stop, err := metrics.Serve(":9100", func(w io.Writer) error {
//		return metrics.WriteNode(w, n.Stats())
//	})
//	if err != nil {
//		return err
//	}
//	defer stop()
//	// curl http://<addr>/metrics
package metrics

import (
	"fmt"
	"io"
	"strings"

	"colo/ps/node"
	"colo/ps/proto"
	"colo/transport"
)

// family describes one metric family.
type family struct {
	name, typ, help string
}

// The metric families, each described once.
var (
	linkMessages   = family{"colo_link_messages_total", "counter", "Messages per link and direction; scope is inner (same machine, through memory) or inter (the network)."}
	linkBytes      = family{"colo_link_bytes_total", "counter", "Frame bytes per link and direction."}
	trafficBytes   = family{"colo_traffic_bytes_total", "counter", "Frame bytes summed by scope and direction."}
	serverPushes   = family{"colo_server_pushes_total", "counter", "Push requests applied."}
	serverPulls    = family{"colo_server_pulls_total", "counter", "Pull requests answered."}
	serverKeysPush = family{"colo_server_keys_pushed_total", "counter", "Keys pushed."}
	serverKeysPull = family{"colo_server_keys_pulled_total", "counter", "Keys pulled."}
	serverErrors   = family{"colo_server_errors_total", "counter", "Requests answered with an error."}
	serverRounds   = family{"colo_server_rounds", "gauge", "Rounds every worker has pushed."}
	serverMaxLead  = family{"colo_server_max_lead_rounds", "gauge", "Largest lead of a worker over the slowest seen."}
	serverKeys     = family{"colo_server_keys", "gauge", "Keys stored."}
	workerPushes   = family{"colo_worker_pushes_total", "counter", "Pushes started."}
	workerPulls    = family{"colo_worker_pulls_total", "counter", "Pulls started."}
	workerKeysPush = family{"colo_worker_keys_pushed_total", "counter", "Keys pushed."}
	workerKeysPull = family{"colo_worker_keys_pulled_total", "counter", "Keys pulled."}
	workerGated    = family{"colo_worker_gated_total", "counter", "Calls that waited for the consistency gate."}
	workerErrors   = family{"colo_worker_errors_total", "counter", "Failed calls."}
	workerRound    = family{"colo_worker_round", "gauge", "The worker's round."}
)

// printer writes to w and keeps the first error.
type printer struct {
	w   io.Writer
	err error
}

func (p *printer) printf(format string, a ...any) {
	if p.err == nil {
		_, p.err = fmt.Fprintf(p.w, format, a...)
	}
}

// header writes the HELP and TYPE lines of f.
func (p *printer) header(f family) {
	p.printf("# HELP %s %s\n# TYPE %s %s\n", f.name, f.help, f.name, f.typ)
}

// link is the labels and counters of one link.
type link struct {
	from, to, scope string
	transport.LinkStats
}

// links writes the messages and bytes families over ls.
func (p *printer) links(ls []link) {
	p.header(linkMessages)
	for _, l := range ls {
		lbl := labels(l.from, l.to, l.scope)
		p.printf("%s{%s,dir=\"sent\"} %d\n", linkMessages.name, lbl, l.MsgsSent)
		p.printf("%s{%s,dir=\"recv\"} %d\n", linkMessages.name, lbl, l.MsgsRecv)
	}
	p.header(linkBytes)
	for _, l := range ls {
		lbl := labels(l.from, l.to, l.scope)
		p.printf("%s{%s,dir=\"sent\"} %d\n", linkBytes.name, lbl, l.BytesSent)
		p.printf("%s{%s,dir=\"recv\"} %d\n", linkBytes.name, lbl, l.BytesRecv)
	}
}

// single writes a family of one unlabelled sample.
func (p *printer) single(f family, v int64) {
	p.header(f)
	p.printf("%s %d\n", f.name, v)
}

// labels returns the from, to and scope labels of a link.
func labels(from, to, scope string) string {
	return `from="` + escape(from) + `",to="` + escape(to) + `",scope="` + escape(scope) + `"`
}

// escaper escapes a label value as the text format requires.
var escaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)

func escape(s string) string { return escaper.Replace(s) }

func scope(inner bool) string {
	if inner {
		return "inner"
	}
	return "inter"
}

// WriteNode writes a node's counters: its links (each endpoint to each
// peer), the traffic summed by scope, and the counters of its server and
// worker when it has them. It returns the first error of w.
func WriteNode(w io.Writer, st node.Stats) error {
	p := &printer{w: w}
	ls := make([]link, len(st.Links))
	for i, l := range st.Links {
		ls[i] = link{proto.Name(l.From), proto.Name(l.To), scope(l.Inner), l.LinkStats}
	}
	p.links(ls)
	p.header(trafficBytes)
	for _, s := range []struct {
		scope string
		ls    transport.LinkStats
	}{{"inner", st.Inner}, {"inter", st.Inter}} {
		p.printf("%s{scope=\"%s\",dir=\"sent\"} %d\n", trafficBytes.name, s.scope, s.ls.BytesSent)
		p.printf("%s{scope=\"%s\",dir=\"recv\"} %d\n", trafficBytes.name, s.scope, s.ls.BytesRecv)
	}
	if s := st.Server; s != nil {
		p.single(serverPushes, int64(s.Pushes))
		p.single(serverPulls, int64(s.Pulls))
		p.single(serverKeysPush, int64(s.KeysPushed))
		p.single(serverKeysPull, int64(s.KeysPulled))
		p.single(serverErrors, int64(s.Errors))
		p.single(serverRounds, s.Rounds)
		p.single(serverMaxLead, s.MaxLead)
		p.single(serverKeys, int64(s.Keys))
	}
	if s := st.Worker; s != nil {
		p.single(workerPushes, int64(s.Pushes))
		p.single(workerPulls, int64(s.Pulls))
		p.single(workerKeysPush, int64(s.KeysPushed))
		p.single(workerKeysPull, int64(s.KeysPulled))
		p.single(workerGated, int64(s.Gated))
		p.single(workerErrors, int64(s.Errors))
		p.single(workerRound, s.Rounds)
	}
	return p.err
}

// WriteEndpoint writes the per-peer counters of one endpoint named from
// (such as "scheduler"), peers in increasing id order. Every link is
// scope inter: an endpoint alone does not know which peers share its
// machine. It returns the first error of w.
func WriteEndpoint(w io.Writer, from string, st transport.Stats) error {
	p := &printer{w: w}
	peers := st.Peers()
	ls := make([]link, len(peers))
	for i, peer := range peers {
		ls[i] = link{from, proto.Name(peer), "inter", st.Links[peer]}
	}
	p.links(ls)
	return p.err
}
