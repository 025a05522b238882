package kv

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"colo/internal/workload"
	"colo/ps/node"
	"colo/ps/proto"
	"colo/ps/worker"
	"colo/transport"
)

func TestRun(t *testing.T) {
	cfg := Config{Shapes: [][2]int{{1, 1}, {2, 2}}, Duration: 30 * time.Millisecond, SparseKeys: 1000, DenseVals: 2000}
	recs, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 8 {
		t.Fatalf("%d records, want 2 shapes × 4 kinds", len(recs))
	}
	for _, r := range recs {
		if r.Requests == 0 || r.KeysPerS <= 0 || r.MBPerS <= 0 || r.P50us <= 0 || r.P99us < r.P50us || r.PlainMBPerS <= 0 || r.CPUus <= 0 {
			t.Errorf("implausible record %+v", r)
		}
		if (r.Mode == "sparse") == (r.MBPerS != r.KeysPerS*12/1e6) {
			t.Errorf("%+v: MB/s does not follow from keys/s", r)
		}
	}
	if recs[0].Mode != "sparse" || recs[0].Op != "push" || recs[7].Servers != 2 || recs[7].Op != "pull" {
		t.Errorf("order: first %+v last %+v", recs[0], recs[7])
	}
}

func TestConfig(t *testing.T) {
	for _, tc := range []struct {
		mut  func(*Config)
		want string
	}{
		{func(c *Config) { c.Shapes = nil }, "shapes"},
		{func(c *Config) { c.Shapes = [][2]int{{0, 1}} }, "shape 0 × 1"},
		{func(c *Config) { c.Duration = 0 }, "duration"},
		{func(c *Config) { c.SparseKeys = 0 }, "sparse keys 0"},
		{func(c *Config) { c.DenseVals = -1 }, "dense values -1"},
	} {
		c := DefaultConfig()
		tc.mut(&c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("err = %v, want %q", err, tc.want)
		}
	}
}

// TestPlainSizes checks that the plain TCP baseline carries the frames
// colo does: each request kind is made once on 1 × 1 and 2 × 2 clusters
// set up as Run sets them up, with sparse keys that split evenly over
// two servers, and every worker-to-server link's traffic is compared with
// plainSizes. A dense request must reach every server.
func TestPlainSizes(t *testing.T) {
	const n = 1000
	keys := make([]uint64, 0, n)
	for i := range uint64(n / 2) {
		keys = append(keys, 3*i, workload.SparseSpace/2+5*i)
	}
	slices.Sort(keys)
	vals := make([]float32, n)
	calls := map[kvKind]func(w *worker.Worker) error{
		{"sparse", "push"}: func(w *worker.Worker) error { return w.Push(keys, vals).Wait() },
		{"sparse", "pull"}: func(w *worker.Worker) error { return w.Pull(keys, vals).Wait() },
		{"dense", "push"}:  func(w *worker.Worker) error { return w.PushRange(0, vals).Wait() },
		{"dense", "pull"}:  func(w *worker.Worker) error { return w.PullRange(0, n, vals).Wait() },
	}
	for _, shape := range [][2]int{{1, 1}, {2, 2}} {
		for _, k := range kvKinds {
			c := benchCluster(t, shape[0], shape[1], k.space(n), true)
			before := serverLinks(c.WorkerNode(0).Stats())
			if err := calls[k](c.Worker(0)); err != nil {
				t.Fatalf("%v: %v", k, err)
			}
			after := serverLinks(c.WorkerNode(0).Stats())
			req, resp := k.plainSizes(n, shape[0])
			if len(after) != shape[0] {
				t.Fatalf("%d × %d %v: links to %d servers", shape[0], shape[1], k, len(after))
			}
			for to, a := range after {
				b := before[to]
				msgs := a.MsgsSent - b.MsgsSent
				if msgs != 1 || a.MsgsRecv-b.MsgsRecv != 1 {
					t.Fatalf("%d × %d %v: %d requests and %d answers on the link to %v, want 1", shape[0], shape[1], k, msgs, a.MsgsRecv-b.MsgsRecv, to)
				}
				if got := int(a.BytesSent - b.BytesSent); got != req {
					t.Errorf("%d × %d %v: request of %d bytes to %v, plainSizes says %d", shape[0], shape[1], k, got, to, req)
				}
				if got := int(a.BytesRecv - b.BytesRecv); got != resp {
					t.Errorf("%d × %d %v: answer of %d bytes from %v, plainSizes says %d", shape[0], shape[1], k, got, to, resp)
				}
			}
		}
	}
}

// serverLinks returns a worker node's links to servers by peer.
func serverLinks(st node.Stats) map[transport.NodeID]transport.LinkStats {
	out := map[transport.NodeID]transport.LinkStats{}
	for _, l := range st.Links {
		if role, _ := proto.Identify(l.To); role == proto.RoleServer {
			out[l.To] = l.LinkStats
		}
	}
	return out
}
