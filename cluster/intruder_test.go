package cluster

import (
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"colo/ps/node"
	"colo/ps/proto"
	"colo/ps/worker"
	"colo/transport"
)

// joinWithToken tries to join c's scheduler as a worker with a token.
func joinWithToken(ctx context.Context, c *Cluster, token string) error {
	nc := node.DefaultConfig()
	nc.Role, nc.Token, nc.JoinTimeout = proto.RoleWorker, token, 5*time.Second
	if c.net != nil {
		nc.Network = node.Mem{Net: c.net}
	} else {
		nc.Network = node.TCP{Host: "127.0.0.1", Token: token}
		nc.Scheduler = c.schedAddr
	}
	n, err := node.Start(ctx, nc)
	if err == nil {
		n.Close()
	}
	return err
}

// hello encodes a dialer's handshake as package tcp documents it: magic,
// version, 'H', 0, from u32, to u32, token length u16, token.
func hello(from, to transport.NodeID, token string) []byte {
	b := []byte{transport.Magic, transport.Version, 'H', 0}
	b = binary.LittleEndian.AppendUint32(b, uint32(from))
	b = binary.LittleEndian.AppendUint32(b, uint32(to))
	b = binary.LittleEndian.AppendUint16(b, uint16(len(token)))
	return append(b, token...)
}

// knock connects to addr, writes each of msgs and reads until the other
// side closes the connection. It returns the first bytes it read.
func knock(t *testing.T, addr string, msgs ...[]byte) []byte {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	var got []byte
	for _, m := range msgs {
		nc.Write(m)
		if len(got) == 0 {
			// The answer to a hello: preamble, id, reason.
			buf := make([]byte, 10)
			if n, _ := io.ReadFull(nc, buf); n == 10 {
				got = buf
			}
		}
	}
	if _, err := io.Copy(io.Discard, nc); err != nil {
		t.Fatalf("%s did not close the connection: %v", addr, err)
	}
	return got
}

// TestStrangersCannotDisturb knocks at the scheduler's and every node's
// port of a running TCP cluster: handshakes that claim every node's id
// with a wrong token, an empty one and one of the token's length;
// garbage and an oversized hello before the handshake; and, from a peer
// that has the token but claims an id that is no member's, a malformed
// frame and an oversized one after it. Every stranger is refused and
// logged, the job then runs to its end, and no node is blamed.
func TestStrangersCannotDisturb(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Network = node.TCP{}
	var logs logBuffer
	cfg.Logf = logs.logf
	c, ctx := startTest(t, cfg, 30*time.Second)
	targets := map[transport.NodeID]string{proto.SchedulerID: c.SchedulerAddr()}
	for id, p := range c.Nodes()[0].Peers() {
		targets[id] = p.Addr
	}
	if len(targets) != 5 {
		t.Fatalf("targets %v, want the scheduler and 2 servers and 2 workers", targets)
	}
	oversizedHello := hello(9, 1, "")
	binary.LittleEndian.PutUint16(oversizedHello[12:], 0xffff)
	refusals := 0
	for to, addr := range targets {
		for claimed := range targets {
			for _, token := range []string{"wrong", "", strings.Repeat("x", len(cfg.Token))} {
				r := knock(t, addr, hello(claimed, to, token))
				if len(r) < 3 || r[2] != 'R' {
					t.Fatalf("%s claiming %s with token %q: answer %q, want a refusal", proto.Name(to), proto.Name(claimed), token, r)
				}
				refusals++
			}
		}
		knock(t, addr, []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"))
		knock(t, addr, oversizedHello)
		refusals += 2
	}
	// A peer with the token, under ids no member has: what it sends after
	// the handshake ends its own link only.
	badFrame := append(binary.LittleEndian.AppendUint32(nil, 16), bytes.Repeat([]byte{0xee}, 16)...)
	for i, frame := range [][]byte{badFrame, binary.LittleEndian.AppendUint32(nil, 1<<30)} {
		for to, addr := range targets {
			from := transport.NodeID(90 + i)
			if r := knock(t, addr, hello(from, to, cfg.Token), frame); len(r) < 3 || r[2] != 'A' {
				t.Fatalf("%s: answer %q to a hello with the token, want an acceptance", proto.Name(to), r)
			}
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for strings.Count(logs.String(), "refused a connection") < refusals {
		if time.Now().After(deadline) {
			t.Fatalf("%d refusals logged, want %d:\n%s", strings.Count(logs.String(), "refused a connection"), refusals, logs.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	// The job runs as if nobody had knocked.
	keys := []uint64{1, 2, 3}
	err := c.Run(ctx, func(ctx context.Context, w *worker.Worker) error {
		for range 5 {
			if err := w.Push(keys, []float32{1, 1, 1}).Wait(); err != nil {
				return err
			}
		}
		dst := make([]float32, len(keys))
		if err := w.Pull(keys, dst).Wait(); err != nil {
			return err
		}
		return nil
	})
	if err != nil {
		t.Fatalf("the job failed: %v\n%s", err, logs.String())
	}
	for _, n := range c.Nodes() {
		if err := n.Wait(); err != nil {
			t.Fatalf("node %v ended with %v", n.Machine(), err)
		}
	}
	if l := logs.String(); strings.Contains(l, "failed") {
		t.Fatalf("a node was blamed:\n%s", l)
	}
	t.Logf("%d strangers refused; the first log lines:\n%s", refusals, strings.Join(strings.SplitN(logs.String(), "\n", 4)[:3], "\n"))
}
