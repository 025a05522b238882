package launch

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"colo/launch/netns"
)

// TestNamespaces runs the smoke cluster, a scheduler and two machines, in
// three network namespaces joined by shaped veth links (200 Mbit/s,
// 1 ms), the deployment of a real cluster on one host. It needs root and
// iproute2.
func TestNamespaces(t *testing.T) {
	if err := CheckNetns(); err != nil {
		t.Skipf("network namespaces unavailable: %v", err)
	}
	needColo(t)
	n, err := NewNetnsConfig(netns.Config{Machines: 3, Rate: "200mbit", Delay: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := n.Close(); err != nil {
			t.Error(err)
		}
	})
	t.Logf("links: %s", n.Net().Shaping())
	if a := n.SchedulerAddr(); a != n.Addr(0)+":7070" || n.Addr(1) == n.Addr(2) {
		t.Fatalf("addresses: scheduler %s, hosts %s %s", a, n.Addr(1), n.Addr(2))
	}
	cfg := DefaultSmokeConfig()
	cfg.Bin, cfg.Starter, cfg.Keys, cfg.Batch, cfg.Rounds = coloBin, n, 20000, 2000, 5
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := Smoke(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, ns := range s.Nodes {
		if ns.Stats.Inter.BytesSent == 0 || ns.Stats.Inner.BytesSent == 0 {
			t.Fatalf("machine %d: traffic %+v", ns.Machine, ns.Stats)
		}
	}
	if len(s.Nodes) != 2 || !s.Checked {
		t.Fatalf("%d nodes, checked %v", len(s.Nodes), s.Checked)
	}
	t.Logf("joined in %.3f s, %.2fM keys/s, inter-machine %d bytes", s.StartSeconds, s.KeysPerSec/1e6, s.Inter.BytesSent)

	// A host the network does not have fails to start, naming it.
	sup := NewSupervisor(coloBin, n)
	p := sup.Start(ctx, Spec{Name: "machine 5", Host: 6})
	if err := sup.Wait(ctx); err == nil || p.Err() == nil || !strings.Contains(err.Error(), "host 6 out of range [0, 3)") {
		t.Errorf("host 6: %v", err)
	}
}

// TestCheckNetns: without root, the check says so.
func TestCheckNetns(t *testing.T) {
	err := CheckNetns()
	if os.Geteuid() != 0 && (err == nil || !strings.Contains(err.Error(), "root (running as uid")) {
		t.Errorf("uid %d: %v", os.Geteuid(), err)
	}
	t.Logf("CheckNetns: %v", err)
}
