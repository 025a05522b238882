package tcp

import (
	"context"
	"crypto/tls"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"colo/internal/colotest"
	"colo/kv"
	"colo/transport"
	"colo/transport/tcp/tcptest"
	"colo/transport/transporttest"
)

// tlsConfig issues a certificate for name from ca and loads it with the
// CA's certificate as a Config.TLS.
func tlsConfig(t testing.TB, ca *tcptest.CA, name string) *tls.Config {
	t.Helper()
	files, err := ca.WriteNode(t.TempDir(), name)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := LoadTLS(files.Cert, files.Key, files.CA)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// newCA makes a CA or fails the test.
func newCA(t testing.TB, name string) *tcptest.CA {
	t.Helper()
	ca, err := tcptest.NewCA(name)
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

// overTLS returns a tune for newEndpoints that gives every endpoint a
// certificate of ca.
func overTLS(t testing.TB, ca *tcptest.CA) func(*Config) {
	return func(c *Config) { c.TLS = tlsConfig(t, ca, "node") }
}

// TestConformanceTLS runs the transport's conformance suite over TLS.
func TestConformanceTLS(t *testing.T) {
	ca := newCA(t, "cluster")
	transporttest.Run(t, conformance(newEndpoints, func(tb testing.TB) func(*Config) { return overTLS(tb, ca) }))
}

// TestConformanceTLSNIC runs the conformance suite over TLS with every
// endpoint behind an interface fast enough not to slow it (1 GB/s each
// way): the length prefix that goes first, alone, and the ingress's
// wait for a frame's last byte work inside TLS's records.
func TestConformanceTLSNIC(t *testing.T) {
	ca := newCA(t, "cluster")
	transporttest.Run(t, conformance(newEndpoints, func(tb testing.TB) func(*Config) {
		nics, tls := newInterfaces(1e9), overTLS(tb, ca)
		return func(c *Config) {
			tls(c)
			nics.tune(c)
		}
	}))
}

// TestTLSLinks sends messages both ways between two endpoints over TLS,
// checks them bit for bit, and checks that the links are TLS 1.3 with the
// peer's certificate.
func TestTLSLinks(t *testing.T) {
	ca := newCA(t, "cluster")
	eps := newEndpoints(t, 2, overTLS(t, ca))
	ctx := context.Background()
	keys := []uint64{1, 5, 9, 1 << 40}
	vals := []float32{0.5, -1, 3, 1e-9}
	for i := range 50 {
		from, to := eps[i%2], eps[1-i%2]
		if err := from.Send(ctx, to.ID(), &transport.Message{Header: transport.Header{ID: uint64(i)}, Body: []byte("hello"), KV: kv.Batch{Keys: keys, Vals: vals}}); err != nil {
			t.Fatal(err)
		}
		m := <-to.Recv()
		if m.ID != uint64(i) || m.Sender != from.ID() || string(m.Body) != "hello" || len(m.KV.Vals) != len(vals) {
			t.Fatalf("message %d: %+v", i, m)
		}
		for j := range keys {
			if m.KV.Keys[j] != keys[j] || m.KV.Vals[j] != vals[j] {
				t.Fatalf("message %d: %v %v", i, m.KV.Keys, m.KV.Vals)
			}
		}
	}
	for _, e := range eps {
		e.mu.Lock()
		for c := range e.conns {
			if c.tls == nil {
				t.Fatalf("node %d: a connection to %d without TLS", e.ID(), c.peer)
			}
			st := c.tls.ConnectionState()
			if st.Version != tls.VersionTLS13 || len(st.PeerCertificates) == 0 {
				t.Fatalf("node %d: version %#x, %d peer certificates", e.ID(), st.Version, len(st.PeerCertificates))
			}
		}
		e.mu.Unlock()
	}
	noDown(t, eps[0])
	noDown(t, eps[1])
}

// TestTLSRateLimit: a rate-limited link paces its writes over TLS too:
// never faster than the limit past the burst. No floor: TLS under -race
// on two loaded cores fell to 2.7 MB/s of the 20 (load 23).
func TestTLSRateLimit(t *testing.T) {
	ca := newCA(t, "cluster")
	const limit = 20e6 // bytes per second
	eps := newEndpoints(t, 2, func(c *Config) {
		overTLS(t, ca)(c)
		c.Rate = func(transport.NodeID) float64 { return limit }
	})
	go func() {
		for m := range eps[1].Recv() {
			m.Release()
		}
	}()
	msg := &transport.Message{KV: kv.Batch{Vals: make([]float32, 512<<10)}} // 2 MB
	size := transport.FrameSize(msg, transport.FrameOptions{})
	start := time.Now()
	const n = 3
	for range n {
		if err := eps[0].Send(context.Background(), 1, msg); err != nil {
			t.Fatal(err)
		}
	}
	elapsed := time.Since(start)
	rate := float64(n*size-DefaultConfig().Burst) / elapsed.Seconds()
	t.Logf("%d bytes in %v: %.1f MB/s, limit %.1f MB/s", n*size, elapsed, rate/1e6, limit/1e6)
	if rate > 1.1*limit {
		t.Fatalf("achieved %.1f MB/s on a %.1f MB/s link", rate/1e6, limit/1e6)
	}
}

// TestTLSWriteTimeout: a peer that stops reading is declared dead over
// TLS as over plain TCP.
func TestTLSWriteTimeout(t *testing.T) {
	ca := newCA(t, "cluster")
	eps := newEndpoints(t, 2, func(c *Config) {
		overTLS(t, ca)(c)
		c.WriteTimeout = 200 * time.Millisecond
		c.InboxSize = 1
		c.SocketBuffer = 64 << 10
	})
	m := &transport.Message{KV: kv.Batch{Vals: make([]float32, 256<<10)}}
	deadline := time.Now().Add(colotest.HangTimeout(t))
	var err error
	for err == nil && time.Now().Before(deadline) {
		err = eps[0].Send(context.Background(), 1, m) // node 1 never reads
	}
	if err == nil || !strings.Contains(err.Error(), "peer 1") || !strings.Contains(err.Error(), "timeout") {
		t.Fatalf("Send to a stalled peer: %v", err)
	}
	if pe := waitDown(t, eps[0]); pe.Peer != 1 {
		t.Fatalf("reported %v", pe)
	}
}

// TestTLSStrangers: peers that cannot show a certificate of the cluster's
// CA, or that do not trust it, or that speak plain TCP, are refused with
// the reason on both sides, before their claimed id means anything; and
// a peer with a certificate of the CA but the wrong token is refused at
// the handshake inside TLS. Nobody is reported on Down, and the real
// link keeps working.
func TestTLSStrangers(t *testing.T) {
	ca, other := newCA(t, "cluster"), newCA(t, "another")
	var refused <-chan refusal
	eps := newEndpoints(t, 2, func(c *Config) {
		overTLS(t, ca)(c)
		if c.ID == 1 {
			refused = recordRefusals(c)
		}
	})
	ctx := context.Background()
	if err := eps[0].Send(ctx, 1, &transport.Message{}); err != nil {
		t.Fatal(err)
	}
	<-eps[1].Recv()
	// A certificate from another CA, trusting the cluster's.
	foreign := tlsConfig(t, other, "foreign")
	foreign.RootCAs = tlsConfig(t, ca, "x").RootCAs
	// A certificate from the cluster's CA, trusting another CA only.
	distrust := tlsConfig(t, ca, "distrust")
	distrust.RootCAs = foreign.ClientCAs
	for _, c := range []struct {
		name     string
		tune     func(*Config)
		dialer   string // in the dialer's error
		acceptor string // in the acceptor's refusal
	}{
		{"another CA", func(c *Config) { c.TLS = foreign }, "refused: remote error: tls: unknown certificate authority", "TLS handshake: tls: failed to verify certificate: x509: certificate signed by unknown authority"},
		{"distrusts the CA", func(c *Config) { c.TLS = distrust }, "refused: TLS handshake: tls: failed to verify certificate: x509: certificate signed by unknown authority", "TLS handshake: remote error: tls: bad certificate"},
		{"no TLS", func(c *Config) {}, `refused: "this node runs TLS and the dialer does not (--tls-cert, --tls-key, --tls-ca)"`, "TLS handshake: tls: first record does not look like a TLS handshake (a colo node without TLS)"},
		{"wrong token", func(c *Config) { c.TLS, c.Token = tlsConfig(t, ca, "member"), "wrong" }, "wrong cluster token", `refused by the dialer: "wrong cluster token`},
	} {
		st := newEndpoints(t, 1, func(cfg *Config) {
			cfg.ID = 0 // claims to be node 0, whose link is up
			c.tune(cfg)
		})[0]
		st.SetPeer(1, eps[1].Addr().String())
		err := st.Send(ctx, 1, &transport.Message{})
		var pe *transport.PeerError
		if !errors.As(err, &pe) || pe.Peer != 1 || !errors.Is(err, transport.ErrRefused) || !strings.Contains(err.Error(), c.dialer) {
			t.Errorf("%s: dialer: %v, want an error naming peer 1: %s", c.name, err, c.dialer)
		}
		r := nextRefusal(t, refused)
		if !strings.Contains(r.err.Error(), c.acceptor) {
			t.Errorf("%s: acceptor: refused %v, want %s", c.name, r.err, c.acceptor)
		}
		if c.name != "wrong token" && r.claimed != 0 {
			t.Errorf("%s: acceptor took the claim of node %d before TLS", c.name, r.claimed)
		}
		t.Logf("%s:\n  dialer: %v\n  acceptor: %v", c.name, err, r.err)
		noDown(t, eps[1])
		noDown(t, st)
	}
	// A TLS node that dials a plain one is refused too, and the plain
	// one says why.
	var plainRefused <-chan refusal
	plain := newEndpoints(t, 1, func(c *Config) { c.ID, plainRefused = 5, recordRefusals(c) })[0]
	eps[0].SetPeer(5, plain.Addr().String())
	if err := eps[0].Send(ctx, 5, &transport.Message{}); !errors.Is(err, transport.ErrRefused) || !strings.Contains(err.Error(), "peer 5") || !strings.Contains(err.Error(), "remote error: tls: handshake failure (the peer runs without TLS?)") {
		t.Errorf("TLS to plain: %v", err)
	} else {
		t.Logf("TLS to plain: %v", err)
	}
	if r := nextRefusal(t, plainRefused); r.claimed != 0 || r.err.Error() != "not a colo node: a TLS client (this node runs without TLS)" {
		t.Errorf("plain acceptor: %+v", r)
	}
	// The real node 0 is still connected and heard.
	if err := eps[0].Send(ctx, 1, &transport.Message{Header: transport.Header{ID: 42}}); err != nil {
		t.Fatal(err)
	}
	if m := <-eps[1].Recv(); m.Sender != 0 || m.ID != 42 {
		t.Fatalf("after the strangers: %+v", m.Header)
	}
	noDown(t, eps[1])
}

// TestLoadTLSErrors: every mistake in the files is named with the file.
func TestLoadTLSErrors(t *testing.T) {
	dir := t.TempDir()
	ca, other := newCA(t, "cluster"), newCA(t, "another")
	good, err := ca.WriteNode(dir, "good")
	if err != nil {
		t.Fatal(err)
	}
	alien, err := other.WriteNode(dir, "alien")
	if err != nil {
		t.Fatal(err)
	}
	garbage := filepath.Join(dir, "garbage.pem")
	os.WriteFile(garbage, []byte("not a PEM file"), 0o600)
	missing := filepath.Join(dir, "missing.pem")
	if _, err := LoadTLS(good.Cert, good.Key, good.CA); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name          string
		cert, key, ca string
		want          string
	}{
		{"missing certificate", missing, good.Key, good.CA, "tls certificate: open " + missing + ": no such file"},
		{"missing key", good.Cert, missing, good.CA, "tls key: open " + missing},
		{"missing CA", good.Cert, good.Key, missing, "tls CA: open " + missing},
		{"garbage certificate", garbage, good.Key, good.CA, "tls certificate " + garbage + ": no PEM certificate in it"},
		{"garbage CA", good.Cert, good.Key, garbage, "tls CA " + garbage + ": no PEM certificate in it"},
		{"key as the certificate", good.Key, good.Key, good.CA, "tls certificate " + good.Key + `: a PEM block of type "EC PRIVATE KEY", want CERTIFICATE`},
		{"garbage key", good.Cert, garbage, good.CA, "tls key " + garbage + " for certificate " + good.Cert},
		{"another node's key", good.Cert, alien.Key, good.CA, "tls key " + alien.Key + " for certificate " + good.Cert + ": tls: private key does not match public key"},
		{"another CA", alien.Cert, alien.Key, good.CA, "tls certificate " + alien.Cert + " against the CA " + good.CA + ": x509: certificate signed by unknown authority"},
	} {
		_, err := LoadTLS(c.cert, c.key, c.ca)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %s", c.name, err, c.want)
		}
	}
	// Validate names what a hand-made configuration lacks.
	for want, cfg := range map[string]*tls.Config{
		"TLS has no Certificates": {},
		"TLS.RootCAs is nil":      {Certificates: []tls.Certificate{{}}},
	} {
		c := DefaultConfig()
		c.TLS = cfg
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate: %v, want %s", err, want)
		}
	}
}
