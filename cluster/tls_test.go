package cluster

import (
	"context"
	"crypto/tls"
	"fmt"
	"strings"
	"testing"

	"colo/internal/colotest"
	"colo/ps/clock"
	"colo/ps/node"
	"colo/ps/proto"
	"colo/ps/worker"
	"colo/transport"
	"colo/transport/tcp"
	"colo/transport/tcp/tcptest"
)

// loadTLS issues a certificate for name from ca and loads it.
func loadTLS(t *testing.T, ca *tcptest.CA, name string) *tls.Config {
	t.Helper()
	files, err := ca.WriteNode(t.TempDir(), name)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := tcp.LoadTLS(files.Cert, files.Key, files.CA)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// TestTLSConformance runs the conformance suite on a cluster whose links,
// the scheduler's included, are all mutual TLS: machines under BSP, and
// separate servers and workers under bounded delay on links limited to
// 50 MB/s. The final values are the exact sums.
func TestTLSConformance(t *testing.T) {
	ca, err := tcptest.NewCA("cluster")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		tune func(*Config)
	}{
		{"machines/bsp", func(cfg *Config) { cfg.Machines = 3 }},
		{"separate/bounded/limited", func(cfg *Config) {
			cfg.Machines, cfg.Servers, cfg.Workers = 0, 2, 3
			cfg.Clock = clock.Config{Mode: clock.Bounded, Tau: 1}
			cfg.LinkBandwidth = 50e6
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Network, cfg.NumKeys, cfg.Timeout = node.TCP{TLS: loadTLS(t, ca, "node")}, numKeys, loadedTimeout
			c.tune(&cfg)
			conformance(t, cfg, 7)
		})
	}
}

// TestTLSStrangersCannotDisturb knocks at every port of a cluster over
// TLS: a node with the token but a certificate of another CA claiming
// every member's id, and one with the token but no TLS. Each is refused
// at the TLS handshake, before its claim means anything, and logged;
// the job then runs to its end and no node is blamed.
func TestTLSStrangersCannotDisturb(t *testing.T) {
	ca, err := tcptest.NewCA("cluster")
	if err != nil {
		t.Fatal(err)
	}
	other, err := tcptest.NewCA("another")
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.Network, cfg.Timeout = node.TCP{TLS: loadTLS(t, ca, "node")}, loadedTimeout
	var logs logBuffer
	cfg.Logf = logs.logf
	c, ctx := startTest(t, cfg, colotest.HangTimeout(t))
	targets := map[transport.NodeID]string{proto.SchedulerID: c.SchedulerAddr()}
	for id, p := range c.Nodes()[0].Peers() {
		targets[id] = p.Addr
	}
	foreign := loadTLS(t, other, "foreign")
	foreign.RootCAs = loadTLS(t, ca, "x").RootCAs // it trusts the cluster's CA
	refusals := 0
	for to, addr := range targets {
		for claimed := range targets {
			if claimed == to {
				// An endpoint sends to its own id without a link.
				claimed = 99
			}
			tc := tcp.DefaultConfig()
			tc.ID, tc.Token, tc.TLS = claimed, cfg.Token, foreign
			ep, err := tcp.Listen(tc)
			if err != nil {
				t.Fatal(err)
			}
			ep.SetPeer(to, addr)
			err = ep.Send(ctx, to, &transport.Message{})
			ep.Close()
			if err == nil || !strings.Contains(err.Error(), "unknown certificate authority") {
				t.Fatalf("%s claiming %s with another CA's certificate: %v", proto.Name(to), proto.Name(claimed), err)
			}
			// The token over plain TCP.
			if err := handshakeAs(t, addr, claimed, to, cfg.Token); err == nil {
				t.Fatalf("%s claiming %s over plain TCP: accepted", proto.Name(to), proto.Name(claimed))
			}
			refusals += 2
		}
	}
	// Every node refuses more than proto.RefusalBurst strangers and logs
	// that many of them; the others are counted, not logged.
	if refusals < len(targets)*(proto.RefusalBurst+1) {
		t.Fatalf("%d refusals over %d nodes: too few to reach the limit of %d logged lines each", refusals, len(targets), proto.RefusalBurst)
	}
	logged := len(targets) * proto.RefusalBurst
	logs.await(t, fmt.Sprintf("%d refusals (%d per node)", logged, proto.RefusalBurst), func(log string) bool {
		return strings.Count(log, "refused a connection") >= logged
	})
	for id := range targets {
		if n := strings.Count(logs.String(), proto.Name(id)+": refused a connection"); n > proto.RefusalBurst {
			t.Errorf("%s logged %d refusals, more than the limit of %d", proto.Name(id), n, proto.RefusalBurst)
		}
	}
	if l := logs.String(); !strings.Contains(l, "certificate signed by unknown authority") || !strings.Contains(l, "first record does not look like a TLS handshake") {
		t.Fatalf("the refusals do not say why:\n%s", l)
	}
	keys := []uint64{1, 2, 3}
	err = c.Run(ctx, func(ctx context.Context, w *worker.Worker) error {
		for range 5 {
			if err := w.Push(keys, []float32{1, 1, 1}).Wait(); err != nil {
				return err
			}
		}
		return w.Pull(keys, make([]float32, len(keys))).Wait()
	})
	if err != nil {
		t.Fatalf("the job failed: %v\n%s", err, logs.String())
	}
	for _, n := range c.Nodes() {
		if err := n.Wait(); err != nil {
			t.Fatalf("node %v ended with %v", n.Machine(), err)
		}
	}
	for _, l := range strings.Split(logs.String(), "\n") {
		// A refusal's reason may say "failed to verify certificate".
		if strings.Contains(l, "failed") && !strings.Contains(l, "refused a connection") {
			t.Fatalf("a node was blamed: %s\n%s", l, logs.String())
		}
	}
	t.Logf("%d strangers refused; the first log lines:\n%s", refusals, strings.Join(strings.SplitN(logs.String(), "\n", 4)[:3], "\n"))
}
