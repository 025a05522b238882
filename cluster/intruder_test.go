package cluster

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"colo/internal/colotest"
	"colo/ps/node"
	"colo/ps/proto"
	"colo/ps/worker"
	"colo/transport"
	"colo/transport/tcp"
)

// joinWithToken tries to join c's scheduler as a worker with a token,
// waiting for the answer up to colotest.HangTimeout.
func joinWithToken(ctx context.Context, t *testing.T, c *Cluster, token string) error {
	nc := node.DefaultConfig()
	nc.Role, nc.Token, nc.JoinTimeout = proto.RoleWorker, token, colotest.HangTimeout(t)
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

// hello encodes a dialer's first handshake message as package tcp
// documents it: magic, version 3, 'H', flags (1: has a token), from u32,
// to u32, a 32-byte nonce.
func hello(from, to transport.NodeID, hasToken bool) []byte {
	flags := byte(0)
	if hasToken {
		flags = 1
	}
	b := []byte{transport.Magic, 3, 'H', flags}
	b = binary.LittleEndian.AppendUint32(b, uint32(from))
	b = binary.LittleEndian.AppendUint32(b, uint32(to))
	nonce := make([]byte, 32)
	rand.Read(nonce)
	return append(b, nonce...)
}

// dial connects to addr, with colotest.HangTimeout for everything that
// follows: a node that keeps a stranger's connection open fails the test
// (knock, member) only when it would hang.
func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	nc.SetDeadline(time.Now().Add(colotest.HangTimeout(t)))
	return nc
}

// handshakeAs connects to addr and runs the dialer's half of the
// handshake as node claimed to node to with token, and returns its error.
func handshakeAs(t *testing.T, addr string, claimed, to transport.NodeID, token string) error {
	t.Helper()
	nc := dial(t, addr)
	defer nc.Close()
	return tcp.Handshake(nc, claimed, to, token)
}

// knock connects to addr and writes first. When answer is not nil, it
// reads the node's answer (a challenge: 72 bytes; a refusal: at least 10)
// and writes what answer returns for it. It then reads until the node
// closes the connection, and returns the kind of the node's first answer
// ('C', 'R', 'A'), or 0.
func knock(t *testing.T, addr string, first []byte, answer func(kind byte) []byte) byte {
	t.Helper()
	nc := dial(t, addr)
	defer nc.Close()
	nc.Write(first)
	var kind byte
	if answer != nil {
		buf := make([]byte, 10)
		if n, _ := io.ReadFull(nc, buf); n == 10 {
			kind = buf[2]
		}
		if kind == 'C' {
			io.ReadFull(nc, make([]byte, 72-10))
		}
		nc.Write(answer(kind))
	}
	// The node closes the connection; a reset (what was sent not read to
	// its end) closes it too.
	var ne net.Error
	if _, err := io.Copy(io.Discard, nc); errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("%s did not close the connection: %v", addr, err)
	}
	return kind
}

// member connects to addr and completes the handshake as node from with
// the token, then writes frame; it reads until the node closes the
// connection.
func member(t *testing.T, addr string, from, to transport.NodeID, token string, frame []byte) {
	t.Helper()
	nc := dial(t, addr)
	defer nc.Close()
	if err := tcp.Handshake(nc, from, to, token); err != nil {
		t.Fatalf("%s: the handshake with the token: %v", proto.Name(to), err)
	}
	nc.Write(frame)
	// The node closes the connection; a reset (the frame not read to its
	// end) closes it too.
	var ne net.Error
	if _, err := io.Copy(io.Discard, nc); errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("%s did not close the connection: %v", addr, err)
	}
}

// TestStrangersCannotDisturb knocks at the scheduler's and every node's
// port of a running TCP cluster: handshakes that claim every node's id
// with a wrong token, an empty one and one of the token's length, with
// the token itself but no link key (what a member of the cluster could
// try, posing as another), and without a key but with a proof of random
// bytes; garbage, the previous version's hello (which carried the token)
// and an oversized refusal during the handshake; and, from a peer that
// has the token and registers under a provisional id, a malformed frame
// and an oversized one after the handshake. Every stranger is refused
// and logged, the job then runs to its end, and no node is blamed.
func TestStrangersCannotDisturb(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Network, cfg.Timeout = node.TCP{}, loadedTimeout
	var logs logBuffer
	cfg.Logf = logs.logf
	c, ctx := startTest(t, cfg, colotest.HangTimeout(t))
	targets := map[transport.NodeID]string{proto.SchedulerID: c.SchedulerAddr()}
	for id, p := range c.Nodes()[0].Peers() {
		targets[id] = p.Addr
	}
	if len(targets) != 5 {
		t.Fatalf("targets %v, want the scheduler and 2 servers and 2 workers", targets)
	}
	forged := func(kind byte) []byte {
		mac := make([]byte, 32)
		rand.Read(mac)
		return append([]byte{transport.Magic, 3, 'P', 0}, mac...)
	}
	oversized := func(kind byte) []byte {
		return []byte{transport.Magic, 3, 'R', 0, 0, 0, 0, 0, 0xff, 0xff}
	}
	v1 := append([]byte{transport.Magic, 1, 'H', 0, 9, 0, 0, 0, 1, 0, 0, 0, byte(len(cfg.Token)), 0}, cfg.Token...)
	refusals := 0
	for to, addr := range targets {
		for claimed := range targets {
			// No token: refused at once.
			if k := knock(t, addr, hello(claimed, to, false), func(byte) []byte { return nil }); k != 'R' {
				t.Fatalf("%s claiming %s without a token: answer %q, want a refusal", proto.Name(to), proto.Name(claimed), k)
			}
			// A wrong token: the node's proof does not match it, and the
			// stranger learns nothing it could use.
			for _, token := range []string{"wrong", strings.Repeat("x", len(cfg.Token))} {
				err := handshakeAs(t, addr, claimed, to, token)
				if !errors.Is(err, transport.ErrRefused) || !strings.Contains(err.Error(), "wrong cluster token") && !strings.Contains(err.Error(), "link key") {
					t.Fatalf("%s claiming %s with token %q: %v, want a refusal", proto.Name(to), proto.Name(claimed), token, err)
				}
			}
			// A member's id needs its link key: a hello without one is
			// refused before any proof.
			if k := knock(t, addr, hello(claimed, to, true), forged); k != 'R' {
				t.Fatalf("%s claiming %s: answer %q, want a refusal", proto.Name(to), proto.Name(claimed), k)
			}
			// So is a peer that has the token, a member of the cluster
			// itself, claiming another member's id.
			err := handshakeAs(t, addr, claimed, to, cfg.Token)
			if !errors.Is(err, transport.ErrRefused) || !strings.Contains(err.Error(), "has to prove the link key") {
				t.Fatalf("%s claiming %s with the token: %v, want a refusal", proto.Name(to), proto.Name(claimed), err)
			}
			refusals += 5
		}
		knock(t, addr, []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"), nil)
		knock(t, addr, v1, nil)
		knock(t, addr, hello(proto.Provisional(9), to, true), oversized)
		// A provisional id proves the token: a proof of random bytes.
		if k := knock(t, addr, hello(proto.Provisional(8), to, true), forged); k != 'C' {
			t.Fatalf("%s: answer %q to a provisional id, want a challenge", proto.Name(to), k)
		}
		refusals += 4
	}
	// A peer with the token, under provisional ids (which need no link
	// key): what it sends after the handshake ends its own link only.
	badFrame := append(binary.LittleEndian.AppendUint32(nil, 16), bytes.Repeat([]byte{0xee}, 16)...)
	for i, frame := range [][]byte{badFrame, binary.LittleEndian.AppendUint32(nil, 1<<30)} {
		for to, addr := range targets {
			member(t, addr, proto.Provisional(uint32(90+i)), to, cfg.Token, frame)
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
