package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"colo/launch/netns"
)

// TestNamespaces runs a scheduler and two machines as processes in three
// network namespaces joined by shaped veth links (200 Mbit/s, 1 ms), the
// deployment of a real cluster on one host. It needs root and iproute2.
func TestNamespaces(t *testing.T) {
	if err := netns.Available(); err != nil {
		t.Skipf("network namespaces unavailable: %v", err)
	}
	netns.Sweep()
	n, err := netns.New(netns.Config{Machines: 3, Rate: "200mbit", Delay: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := n.Close(); err != nil {
			t.Error(err)
		}
	})
	t.Logf("links: %s", n.Shaping())
	addr := n.Addr(0) + ":7070"
	common := []string{"--token", "ns", "--num-servers", "2", "--num-workers", "2", "--keys", "20000"}
	type proc struct {
		name     string
		out, err bytes.Buffer
		done     chan error
	}
	start := func(i int, name string, args ...string) *proc {
		p := &proc{name: name, done: make(chan error, 1)}
		cmd := n.Command(i, coloBin, args...)
		cmd.Stdout, cmd.Stderr = &p.out, &p.err
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() { p.done <- cmd.Wait() }()
		t.Cleanup(func() { cmd.Process.Kill(); <-p.done })
		return p
	}
	sc := start(0, "scheduler", append([]string{"node", "--role", "scheduler", "--scheduler", addr}, common...)...)
	var ms []*proc
	for i := 1; i <= 2; i++ {
		ms = append(ms, start(i, fmt.Sprintf("machine %d", i-1), append([]string{"node", "--role", "machine", "--rank", fmt.Sprint(i - 1),
			"--scheduler", addr, "--host", n.Addr(i), "--json", "--rounds", "5", "--batch", "2000"}, common...)...))
	}
	checked := false
	for _, p := range append(ms, sc) {
		var err error
		select {
		case err = <-p.done:
			p.done <- err
		case <-time.After(15 * time.Second):
			t.Fatalf("%s still running\n%s", p.name, p.err.String())
		}
		if err != nil {
			t.Fatalf("%s: %v\n%s", p.name, err, p.err.String())
		}
		if p == sc {
			continue
		}
		var s nodeSummary
		if err := json.Unmarshal(p.out.Bytes(), &s); err != nil {
			t.Fatalf("%s: %v: %s", p.name, err, p.out.String())
		}
		if s.Stats.Inter.BytesSent == 0 || s.Stats.Inner.BytesSent == 0 {
			t.Fatalf("%s: traffic %+v", p.name, s.Stats)
		}
		checked = checked || (s.Smoke != nil && s.Smoke.Checked)
		t.Logf("%s: joined in %.3f s, %.2fM keys/s, inter-machine %s", p.name, s.StartSeconds, s.Smoke.KeysPerSec/1e6, bytesText(s.Stats.Inter.BytesSent))
	}
	if !checked {
		t.Fatal("no machine checked the sums")
	}
}
