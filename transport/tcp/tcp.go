// Package tcp is the TCP implementation of transport.Endpoint: the one
// that colo's processes use to talk across machines.
//
// Each node listens on one address. A link from node A to node B is one
// TCP connection that A dials on its first Send to B and that carries
// frames from A to B only; B's messages to A travel on B's own connection.
// So every link has one writer and one reader, ordering per link is the
// connection's, and two nodes never race to dial each other.
//
// # Handshake
//
// The two ends of a new connection prove to each other that they know the
// cluster token, without sending it: a challenge–response with
// HMAC-SHA256 keyed by the token over both node ids and a fresh random
// nonce from each side (handshake.go). The dialer sends its id, the id it
// expects to reach and its nonce; the acceptor answers with its id, its
// nonce and its proof; the dialer checks it (so a stranger at a peer's
// address cannot pose as the peer) and sends its own proof, which the
// acceptor checks before the dialer's id means anything; then the
// acceptor accepts. The messages, little-endian, with flags bit 0 set when
// the sender has a token and bit 1 when it proves a link key (below) and
// its public key follows:
//
//	hello     (dialer)    0xC6 3 'H' flags  from u32, to u32, nonce_d [32], [pub_d [32]]
//	challenge (acceptor)  0xC6 3 'C' flags  id u32, nonce_a [32], mac_a [32], [pub_a [32]]
//	proof     (dialer)    0xC6 3 'P' 0      mac_d [32]
//	accept    (acceptor)  0xC6 3 'A' 0      id u32, 0 u16
//	refusal   (either)    0xC6 3 'R' 0      id u32, reason length u16, reason
//
//	mac_a = HMAC-SHA256(key, "colo acceptor\x00" ‖ 3 ‖ from ‖ to ‖ nonce_d ‖ nonce_a)
//	mac_d = HMAC-SHA256(key, "colo dialer\x00"   ‖ 3 ‖ from ‖ to ‖ nonce_d ‖ nonce_a)
//
// where key is the token, or the link key.
//
// Either side refuses with a reason: a wrong token ("wrong cluster token:
// the dialer's proof did not match", or that one side has a token and the
// other none), a wrong node id. A recorded handshake replayed to a node
// fails on its fresh nonce. An empty token on both sides is an open
// cluster: the same exchange, with a key anyone knows.
//
// The dialer reports a refusal from Send, as a *transport.PeerError
// wrapping transport.ErrRefused. The acceptor does not report it on Down:
// until the proof is checked, the id in a hello is only a claim, and a
// stranger that claims the id of a running node must not make that node
// look failed. It passes the refusal, like a connection that is not a
// colo node at all, to Config.Refused (a log line) and closes the
// connection; the links of the cluster are untouched. Every read of the
// handshake is bounded (fixed sizes, a reason of at most 1 KiB) and one
// deadline, Config.HandshakeTimeout, bounds all its steps on each side.
//
// # Link keys
//
// The token proves membership: it keeps stray, misconfigured or hostile
// processes out. On its own it does not prove an id: every member knows
// it. An endpoint with an identity (Config.Identity, an X25519 key)
// proves its id too: each node's public key is published by whoever
// vouches for the cluster's members (colo's scheduler, which learns it at
// registration over a link that proved the token, and lists it in the
// address book), and the links between two such nodes prove the link key
// of the pair, HMAC-SHA256 keyed by the X25519 agreement of the two keys
// over both ids and the token, which only the two can compute. A peer
// claiming a member's id (Config.Keyed) with the token alone, or with a
// key other than the one published, is refused before its claim means
// anything. A node replaced by a new process has a new key; either side
// of a handshake waits for the other's published key within
// HandshakeTimeout, since the scheduler's news of it and the new
// process's first message race.
//
// After the handshake the frames of a plain connection are neither
// encrypted nor authenticated (a man in the middle could alter them).
// Config.TLS adds both.
//
// # TLS
//
// With Config.TLS every link runs over TLS 1.3 with a certificate on each
// side, verified against the cluster's CA (LoadTLS reads them from PEM
// files), and the same handshake inside it. A peer without such a
// certificate is refused, and told to Config.Refused, before its hello is
// read. A node with TLS and one without refuse each other with a reason
// that says so. Frames go through a buffer into TLS records and the
// records of a frame leave in a few large writes; rate limits, timeouts
// and the rest work as on plain TCP. Connections are closed without
// close_notify, so that closing never waits on a peer that does not read.
//
// # Writing and reading
//
// Send frames a message with a per-link transport.Encoder and writes the
// header and the raw key, value and length arrays with one vectored write
// (writev), without copying them. Sends on one link are serialised by a
// one-slot semaphore that honours the caller's context; a context that
// ends in the middle of a frame breaks the link (the frame cannot be taken
// back), and the next Send dials again. The link's Encoder keeps the key
// slots of its connection (transport key caching, Config.Frame.KeyCache,
// on by default): a frame written to a connection dialled since the last
// one is encoded with empty slots, and a frame that did not go out whole
// stores nothing, so a frame never names a slot its connection's reader
// does not hold; each reader has its own. A reader goroutine per inbound
// connection decodes frames through a buffered reader, reading the arrays
// straight into memory from the endpoint's transport.Pool (a receiver that
// calls Message.Release makes steady traffic allocation-free), and
// delivers them on Recv; a frame over the limit is refused from its length
// prefix, before it is allocated. Values for which the receiver registered
// a destination in Endpoint.Berths (a worker's pull answers) are read
// straight into it instead. Frames that Config.Early chooses (large dense
// pushes, say) are delivered as soon as their keys are read, and their
// values are read into the message while the receiver works on the first
// ones (see transport.Message.Await). Sockets have TCP_NODELAY and
// keep-alives; a connection to a peer on the same host has a send buffer
// of Config.LocalSendBuffer (256 KiB, capped by the kernel at
// net.core.wmem_max) instead of the kernel's autotuned one, which lets a
// writer of a large frame run megabytes ahead of its reader.
//
// # Failures
//
// A closed or reset connection, a malformed or oversized frame, a read
// idle longer than Config.IdleTimeout and a write longer than
// Config.WriteTimeout each end the link and are reported once on Down as a
// *transport.PeerError naming the peer; Send to a peer whose process is
// gone fails with the dial error, also naming it. Heartbeats belong to the
// layer above: it sends them more often than IdleTimeout, and any node
// that stops is reported within IdleTimeout even when its machine vanished
// without closing its sockets.
//
// # Emulated bandwidth
//
// Config.Rate gives each outgoing link a rate of its own in bytes per
// second, and Config.Shared the wires (transport.Wire) it shares with
// other links and endpoints: a host's network interface, each way, and
// the path between two hosts (ps/node.Rates builds them from a link rate
// and a transport.Bandwidth matrix). They are the wires of
// transport/mem's hosts: the connections with bytes on a wire take turns
// of one Ethernet frame (a deficit round robin), so a small message waits
// for one frame of each other busy connection, not for the others'
// messages.
//
// A frame to a peer enters the link's outgoing wires whole when Send
// begins, as parts of Config.Burst bytes in the link's flow (one stream:
// its turns are those of the whole frame), and each part is written once
// every outgoing wire has carried it (and the link's own rate allows):
// Send returns once the sender's side has carried the frame, as
// transport/mem's does. The first part is the 4-byte length prefix, so
// the receiver learns of a frame, and its size, as its first bytes come.
// A connection whose peer's bytes pass an ingress puts each frame on the
// ingress wires when its prefix arrives and reads the rest as it comes,
// all but the frame's last byte, which it reads only once the ingress has
// carried the frame: the message is delivered when both sides have
// carried it, and a busy receiver delays its own input, not the sender
// (its bytes wait in the reader, as in a switch's buffer, not in the
// socket's). A cluster on one host or on a uniform network so behaves
// like one of machines with interfaces of the emulated rates, the same
// network as transport/mem's, without privileges. It differs from it in
// the hops: the ingress begins with the frame's first byte rather than
// with its Send, and a connection's next frame joins the ingress when
// the reader reaches its prefix, after the frame before it was
// delivered.
//
//	cfg := tcp.DefaultConfig()
//	cfg.ID, cfg.Token = 1, "secret"
//	ep, err := tcp.Listen(cfg)
//	…
//	ep.SetPeer(2, "10.0.0.2:7000")
//	err = ep.Send(ctx, 2, &transport.Message{KV: batch})
package tcp

import (
	"bufio"
	"context"
	"crypto/ecdh"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"colo/transport"
	"colo/transport/internal/peers"
)

// Config configures an endpoint.
type Config struct {
	// ID is this node's id.
	ID transport.NodeID
	// Addr is the address to listen on, such as ":7000" or
	// "127.0.0.1:0" (any free port).
	Addr string
	// Listener, when not nil, is used instead of listening on Addr; the
	// endpoint closes it.
	Listener net.Listener
	// Token is the cluster token. Both ends of a link prove that they
	// know it without sending it (see the package doc); empty runs an
	// open cluster, whose peers must have no token either.
	Token string
	// Identity, when not nil, is this node's X25519 key (NewIdentity).
	// Links with the peers that Keyed chooses then prove the link key of
	// the pair, derived from both nodes' keys and the token, instead of
	// the token: a peer that knows the token cannot claim another
	// member's id. The peers' public keys come from SetPeerKey, and a
	// handshake with a peer whose key is not known yet waits for it
	// within HandshakeTimeout.
	Identity *ecdh.PrivateKey
	// Keyed, with Identity, chooses the peers that must prove a link key;
	// nil chooses every peer. The others prove the token (colo's
	// provisional registration ids, whose keys nobody has published).
	Keyed func(peer transport.NodeID) bool
	// TLS, when not nil, runs every link over TLS 1.3 with a certificate
	// on both sides, verified against the cluster's CA, and the handshake
	// inside it. It needs Certificates (this node's) and RootCAs (the CA
	// that signs every node's certificate; ClientCAs, when nil, is
	// RootCAs). Certificates are checked against the CA, not against host
	// names, unless ServerName is set: then every node's certificate must
	// carry that name. LoadTLS makes one from PEM files.
	TLS *tls.Config
	// Frame sets the frame limit and key encoding.
	Frame transport.FrameOptions
	// Rate, when not nil, gives the rate of the link to each peer in
	// bytes per second, 0 for unlimited. It is called once per peer.
	Rate func(peer transport.NodeID) float64
	// Shared, when not nil, returns the wires that the traffic with peer
	// crosses besides its link's own rate (Rate), shared with other
	// links and possibly other endpoints: out for the frames sent to
	// peer (the egress of this endpoint's host's network interface, the
	// path between two hosts), each frame written as they carry it; in
	// for the frames received from it (the host's ingress), each
	// delivered once they carried it (see the package doc). It is called
	// once per outgoing link and once per incoming connection; nil
	// slices cross nothing.
	Shared func(peer transport.NodeID) (out, in []*transport.Wire)
	// Burst is the size of the writes of a rate-limited link, the part
	// of a frame that its wires carry before it is written, and the
	// token-bucket size of its own rate (Rate).
	Burst int
	// InboxSize is the capacity of the Recv channel.
	InboxSize int
	// DialTimeout bounds dialing a peer.
	DialTimeout time.Duration
	// HandshakeTimeout bounds the handshake, on both sides.
	HandshakeTimeout time.Duration
	// WriteTimeout, when positive, bounds the write of one frame (of one
	// chunk on a rate-limited link); a peer that does not read in that
	// time is declared dead.
	WriteTimeout time.Duration
	// IdleTimeout, when positive, declares dead a peer whose link carries
	// nothing for that long. The layer above sends heartbeats more often.
	IdleTimeout time.Duration
	// KeepAlive is the TCP keep-alive period; negative disables it.
	KeepAlive time.Duration
	// UserTimeout is how long data written to a connection may stay
	// unacknowledged by the peer's host before the link is declared
	// broken (Linux's TCP_USER_TIMEOUT, tcp(7); elsewhere ignored). It
	// ends a link into a black hole (the peer's host down or cut off,
	// its packets dropped), which keep-alive never probes while data is
	// outstanding and the kernel gives up on only after about 15 minutes
	// of retransmissions. A peer that is alive but reads nothing (a
	// stopped process, a full window) acknowledges the kernel's probes
	// and is not ended by it: that is the heartbeats' to judge. Zero
	// takes keep-alive's own time to declare a silent peer dead (twice
	// KeepAlive: its idle time and three probes a third of it apart; 150 s
	// for a KeepAlive of zero, Go's defaults), or the kernel's default
	// when keep-alive is off; negative leaves the kernel's default.
	UserTimeout time.Duration
	// SocketBuffer, when positive, sets the kernel's send and receive
	// buffers of every connection, in bytes.
	SocketBuffer int
	// LocalSendBuffer, when positive and SocketBuffer is not, sets the
	// kernel's send buffer (SO_SNDBUF) of a connection to a peer on the
	// same host (a loopback address, or the connection's own local
	// address), in bytes; zero leaves the kernel's autotuning. The
	// kernel caps the size at net.core.wmem_max (212992 bytes, 208 KiB,
	// on a stock Linux kernel; SocketBuffer's likewise, and its receive
	// buffer at net.core.rmem_max), so a host with the stock cap gets
	// 208 KiB from DefaultConfig's 256 KiB. Between
	// two processes of one host, or two nodes of one process, there is
	// no wire to keep full: the kernel hands each segment to the
	// receiver's queue as it is written, so an autotuned buffer of
	// megabytes only lets the writer run far ahead of the reader, into
	// memory no cache holds any more. DefaultConfig's 256 KiB cut the
	// CPU of a dense push of 4 MB between two nodes over loopback to less
	// than half (docs/ps.md). Connections to other hosts keep the
	// autotuning that their bandwidth and round trip need.
	LocalSendBuffer int
	// Early, when not nil, chooses the received frames that are delivered
	// before their values are read (see transport.Decoder.SetEarly): the
	// link's reader reads the values into the message while the receiver
	// already works on the first ones (transport.Message.Await).
	Early func(h *transport.Header, nvals int) bool
	// Refused, when not nil, is told of every incoming connection that
	// did not complete the handshake: refused for a wrong token or node
	// id, not a colo node, or too slow to say who it is. addr is the
	// remote address, claimed the node id the peer claimed (0 when it
	// sent no valid hello). Such a connection is closed and never
	// reported on Down. It is called from the connection's goroutine and
	// must not block.
	Refused func(addr string, claimed transport.NodeID, err error)
}

// DefaultConfig returns a configuration listening on a free loopback port
// with default limits; set ID and Token.
func DefaultConfig() Config {
	return Config{
		Addr:             "127.0.0.1:0",
		Burst:            64 << 10,
		InboxSize:        256,
		DialTimeout:      5 * time.Second,
		HandshakeTimeout: 5 * time.Second,
		KeepAlive:        15 * time.Second,
		LocalSendBuffer:  256 << 10,
		Frame:            transport.FrameOptions{KeyCache: transport.DefaultKeyCache},
	}
}

// Validate checks c; errors name the field and the bound.
func (c Config) Validate() error {
	if c.Listener == nil && c.Addr == "" {
		return errors.New("tcp: Addr is empty and Listener is nil")
	}
	if len(c.Token) > MaxTokenLen {
		return fmt.Errorf("tcp: Token of %d bytes, at most %d", len(c.Token), MaxTokenLen)
	}
	if c.TLS != nil {
		if len(c.TLS.Certificates) == 0 && c.TLS.GetCertificate == nil {
			return errors.New("tcp: TLS has no Certificates: this node's certificate and key")
		}
		if c.TLS.RootCAs == nil {
			return errors.New("tcp: TLS.RootCAs is nil: the CA that signs the cluster's certificates")
		}
	}
	if err := c.Frame.Validate(); err != nil {
		return fmt.Errorf("tcp: Frame.%w", err)
	}
	if c.Burst < 1024 {
		return fmt.Errorf("tcp: Burst %d, at least 1024", c.Burst)
	}
	if c.InboxSize < 0 {
		return fmt.Errorf("tcp: InboxSize %d is negative", c.InboxSize)
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"DialTimeout", c.DialTimeout}, {"HandshakeTimeout", c.HandshakeTimeout}} {
		if d.v <= 0 {
			return fmt.Errorf("tcp: %s %v, must be positive", d.name, d.v)
		}
	}
	if c.WriteTimeout < 0 || c.IdleTimeout < 0 {
		return fmt.Errorf("tcp: WriteTimeout %v and IdleTimeout %v must not be negative", c.WriteTimeout, c.IdleTimeout)
	}
	if c.SocketBuffer < 0 {
		return fmt.Errorf("tcp: SocketBuffer %d is negative", c.SocketBuffer)
	}
	if c.LocalSendBuffer < 0 {
		return fmt.Errorf("tcp: LocalSendBuffer %d is negative", c.LocalSendBuffer)
	}
	return nil
}

// Endpoint is a TCP endpoint. It implements transport.Endpoint.
type Endpoint struct {
	cfg    Config
	ln     net.Listener
	inbox  chan *transport.Message
	down   *peers.DownQueue
	stats  peers.Table
	pool   transport.Pool
	berths transport.Berths
	sink   atomic.Pointer[func(*transport.Message) bool] // SetSink's
	ctx    context.Context                               // cancelled by Close
	stop   context.CancelFunc
	done   <-chan struct{} // ctx.Done()
	wg     sync.WaitGroup  // goroutines and Sends in progress
	once   sync.Once
	// serverTLS and clientTLS are cfg.TLS for each end of a link; nil
	// without TLS.
	serverTLS, clientTLS *tls.Config
	// keys holds the peers' public and link keys (Config.Identity).
	keys keyRing

	mu     sync.Mutex
	closed bool
	addrs  map[transport.NodeID]string
	links  map[transport.NodeID]*link
	conns  map[*conn]struct{}
	isDown map[transport.NodeID]bool
	// gen counts the links to each peer that came up (conn.gen).
	gen map[transport.NodeID]uint64
}

var _ transport.Endpoint = (*Endpoint)(nil)

// link is the outgoing half of the link to one peer.
type link struct {
	peer transport.NodeID
	sem  chan struct{} // one slot: the holder owns c and enc
	c    *conn
	enc  *transport.Encoder
	// buckets is the link's own rate (Rate), wires what it shares
	// (Shared); both empty when the link is not limited.
	buckets []*transport.TokenBucket
	wires   []*transport.Wire
	stats   *peers.Counters
}

// conn is one TCP connection, in either direction.
type conn struct {
	sock *net.TCPConn
	// rw is what the handshake and the frames use: sock, or TLS over it.
	rw  io.ReadWriter
	tls *tls.Conn
	// under is the socket as TLS sees it, bw gathers the pieces of a frame
	// into TLS records; both nil without TLS.
	under *tlsSocket
	bw    *bufio.Writer
	peer  transport.NodeID
	addr  string
	// gen numbers the links to peer in the order their handshakes
	// completed (up); 0 before.
	gen  uint64
	dead atomic.Bool
	// cause is why fail ended the link (a failCause), for a Send whose
	// write met the socket fail closed.
	cause atomic.Value
	// broken: a write on TLS failed, which leaves the stream unusable
	// even when no byte of it went out. Owned by the link's holder.
	broken bool
}

// newConn wraps an established socket.
func newConn(sock *net.TCPConn, peer transport.NodeID, addr string) *conn {
	return &conn{sock: sock, rw: sock, peer: peer, addr: addr}
}

// Close closes the socket. On TLS no close_notify is sent: it could block
// on a peer that does not read, and a peer reads the end of the socket at
// a record boundary as the end of the stream anyway.
func (c *conn) Close() error { return c.sock.Close() }

// startTLS runs the TLS handshake on c, as the client or the server, and
// makes c carry everything after it inside TLS.
func (c *conn) startTLS(ctx context.Context, cfg *tls.Config, client bool) error {
	c.under = &tlsSocket{TCPConn: c.sock, r: bufio.NewReaderSize(c.sock, tlsReadBuffer)}
	if client {
		c.tls = tls.Client(c.under, cfg)
	} else {
		c.tls = tls.Server(c.under, cfg)
	}
	if err := c.tls.HandshakeContext(ctx); err != nil {
		var op *net.OpError
		if client && errors.As(err, &op) && op.Op == "remote error" && op.Err.Error() == "tls: handshake failure" {
			// What an endpoint without TLS answers (tlsAlertHandshakeFailure).
			return fmt.Errorf("TLS handshake: %w (the peer runs without TLS?)", err)
		}
		return fmt.Errorf("TLS handshake: %w", err)
	}
	c.rw = c.tls
	c.bw = bufio.NewWriterSize(c.tls, 64<<10)
	return nil
}

// writeBuffers writes bufs: with one vectored write on a plain socket,
// through bw on TLS.
func (c *conn) writeBuffers(bufs net.Buffers) (int64, error) {
	if c.bw == nil {
		return bufs.WriteTo(c.sock)
	}
	var n int64
	for _, b := range bufs {
		w, err := c.bw.Write(b)
		n += int64(w)
		if err != nil {
			c.broken = true
			return n, err
		}
	}
	if err := c.bw.Flush(); err != nil {
		c.broken = true
		return n - int64(c.bw.Buffered()), err
	}
	if err := c.under.flush(); err != nil {
		c.broken = true
		return 0, err
	}
	return n, nil
}

// Buffers of a TLS connection's socket: what one read takes, and how much
// gathered output one write sends. Each is held per connection, for as
// long as the link lives.
const (
	tlsReadBuffer = 128 << 10
	tlsGather     = 256 << 10
)

// tlsSocket is the socket under a TLS connection. It reads through a
// buffer, and once gather is set (on an outgoing link after its
// handshake) it keeps what TLS writes until flush, so that the records of
// a frame, 16 KiB each, leave in a few large writes instead of one
// system call each.
type tlsSocket struct {
	*net.TCPConn
	r *bufio.Reader

	mu     sync.Mutex // TLS may write an alert from its reader
	gather bool
	out    []byte
}

// Read reads from the socket through the buffer.
func (s *tlsSocket) Read(p []byte) (int, error) { return s.r.Read(p) }

// Write writes p, or keeps it for flush.
func (s *tlsSocket) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.gather {
		return s.TCPConn.Write(p)
	}
	s.out = append(s.out, p...)
	if len(s.out) >= tlsGather {
		if err := s.flushLocked(); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

// flush writes what Write kept.
func (s *tlsSocket) flush() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.flushLocked()
}

func (s *tlsSocket) flushLocked() error {
	if len(s.out) == 0 {
		return nil
	}
	_, err := s.TCPConn.Write(s.out)
	s.out = s.out[:0]
	return err
}

// Listen starts an endpoint: it listens on cfg.Addr (or takes
// cfg.Listener) and accepts peers until Close.
func Listen(cfg Config) (*Endpoint, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	ln := cfg.Listener
	if ln == nil {
		var err error
		if ln, err = net.Listen("tcp", cfg.Addr); err != nil {
			return nil, fmt.Errorf("tcp: node %d: %w", cfg.ID, err)
		}
	}
	ctx, stop := context.WithCancel(context.Background())
	e := &Endpoint{
		cfg:    cfg,
		ln:     ln,
		inbox:  make(chan *transport.Message, cfg.InboxSize),
		down:   peers.NewDownQueue(),
		ctx:    ctx,
		stop:   stop,
		done:   ctx.Done(),
		addrs:  make(map[transport.NodeID]string),
		links:  make(map[transport.NodeID]*link),
		conns:  make(map[*conn]struct{}),
		isDown: make(map[transport.NodeID]bool),
		gen:    make(map[transport.NodeID]uint64),
	}
	if cfg.TLS != nil {
		e.serverTLS, e.clientTLS = tlsConfigs(cfg.TLS)
	}
	e.wg.Add(1)
	go e.accept()
	return e, nil
}

// ID returns the node id.
func (e *Endpoint) ID() transport.NodeID { return e.cfg.ID }

// Addr returns the address the endpoint listens on.
func (e *Endpoint) Addr() net.Addr { return e.ln.Addr() }

// Recv returns the channel of received messages.
func (e *Endpoint) Recv() <-chan *transport.Message { return e.inbox }

// SetSink hands received messages to sink on the link's reader; see
// transport.Sinker.
func (e *Endpoint) SetSink(sink func(*transport.Message) bool) { e.sink.Store(&sink) }

// Down returns the channel of link failures.
func (e *Endpoint) Down() <-chan *transport.PeerError { return e.down.C() }

// Stats returns the per-link counters.
func (e *Endpoint) Stats() transport.Stats { return e.stats.Snapshot() }

// Berths returns the destinations registered for the values of expected
// messages (see transport.Berths): the reader of a link reads such values
// straight into them. Cancelling a berth whose values are being read
// closes that link.
func (e *Endpoint) Berths() *transport.Berths { return &e.berths }

// SetPeer records the address of a peer. A changed address takes effect
// at the next Send, which closes a link established to the old address
// (without a report on Down: it goes to whoever had that address, such
// as the process of a failed node that a replacement took the place of)
// and dials the new one.
func (e *Endpoint) SetPeer(id transport.NodeID, addr string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.addrs[id] = addr
}

// enter registers an operation that Close must wait for; it fails after
// Close.
func (e *Endpoint) enter() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return false
	}
	e.wg.Add(1)
	return true
}

// Close shuts the endpoint down; see transport.Endpoint.
func (e *Endpoint) Close() error {
	e.once.Do(func() {
		e.mu.Lock()
		e.closed = true
		conns := make([]*conn, 0, len(e.conns))
		for c := range e.conns {
			conns = append(conns, c)
		}
		e.mu.Unlock()
		e.stop()
		e.ln.Close()
		for _, c := range conns {
			c.dead.Store(true)
			c.Close()
		}
		e.wg.Wait()
		close(e.inbox)
		e.down.Close()
	})
	return nil
}

// closing reports whether Close has started.
func (e *Endpoint) closing() bool { return e.ctx.Err() != nil }

// track adds c to the connections closed by Close; it fails after Close.
func (e *Endpoint) track(c *conn) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return false
	}
	e.conns[c] = struct{}{}
	return true
}

// fail ends connection c. When report is set and the endpoint is not
// closing, it reports err on Down, once per peer until the peer's link is
// re-established.
func (e *Endpoint) fail(c *conn, op string, err error, report bool) {
	if !c.dead.CompareAndSwap(false, true) {
		return
	}
	if err != nil {
		c.cause.Store(failCause{err})
	}
	c.Close()
	e.mu.Lock()
	delete(e.conns, c)
	e.mu.Unlock()
	if report {
		e.report(c, &transport.PeerError{Peer: c.peer, Addr: c.addr, Op: op, Err: err})
	}
}

// report queues the failure of link c on Down, deduplicated per peer: one
// report until a link to the peer comes up again. The end of a stale link,
// one that a newer link to the same peer (a process that took its place)
// came up after, is reported too, but leaves the peer's next failure
// reported as well: else the late end of a replaced process's link would
// silence its replacement's.
func (e *Endpoint) report(c *conn, pe *transport.PeerError) {
	if e.closing() {
		return
	}
	e.mu.Lock()
	stale := c.gen != 0 && c.gen < e.gen[c.peer]
	seen := e.isDown[pe.Peer]
	if !stale {
		e.isDown[pe.Peer] = true
	}
	e.mu.Unlock()
	if !seen || stale {
		e.down.Push(pe)
	}
}

// up records a successful handshake on link c.
func (e *Endpoint) up(c *conn) {
	e.mu.Lock()
	e.gen[c.peer]++
	c.gen = e.gen[c.peer]
	delete(e.isDown, c.peer)
	e.mu.Unlock()
}

// failCause holds the error fail ended a link with (conn.cause).
type failCause struct{ err error }

// peerErr wraps err for a Send to peer.
func peerErr(peer transport.NodeID, addr, op string, err error) error {
	return &transport.PeerError{Peer: peer, Addr: addr, Op: op, Err: err}
}

// Send delivers m to peer to; see transport.Endpoint. Errors are
// *transport.PeerError.
func (e *Endpoint) Send(ctx context.Context, to transport.NodeID, m *transport.Message) error {
	return e.send(ctx, to, m, nil)
}

// SendLent is Send for a message whose values lent lends
// (transport.LentSender): on a link without a rate limit they are
// written in parts that lent.Reclaim waits for at most; on a
// rate-limited one, whose parts wait for the wire, they are reclaimed
// (copied) first.
func (e *Endpoint) SendLent(ctx context.Context, to transport.NodeID, m *transport.Message, lent *transport.Lent) error {
	return e.send(ctx, to, m, lent)
}

// send is Send, or SendLent when lent is not nil.
func (e *Endpoint) send(ctx context.Context, to transport.NodeID, m *transport.Message, lent *transport.Lent) error {
	if !e.enter() {
		return peerErr(to, "", "send", transport.ErrClosed)
	}
	defer e.wg.Done()
	if to == e.cfg.ID {
		return e.sendSelf(ctx, m)
	}
	l, addr, err := e.link(to)
	if err != nil {
		return err
	}
	select {
	case l.sem <- struct{}{}:
	case <-ctx.Done():
		return peerErr(to, addr, "send", ctx.Err())
	case <-e.done:
		return peerErr(to, addr, "send", transport.ErrClosed)
	}
	defer func() { <-l.sem }()
	// The address now, not when the send began to wait: a Send that
	// read it before SetPeer must not take the link back to the old one.
	return e.sendHeld(ctx, l, to, e.addrOf(to, addr), m, lent)
}

// addrOf returns peer's address now (SetPeer), or addr if it has none.
func (e *Endpoint) addrOf(peer transport.NodeID, addr string) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	if a, ok := e.addrs[peer]; ok {
		return a
	}
	return addr
}

// TrySend sends m to peer to only if it can do so at once
// (transport.TrySender): no other send holds the link, its connection
// is up and not rate-limited (whose writes wait for its wires), and its
// socket holds so little not yet acknowledged by the peer's host that a
// frame of a few hundred bytes, and over TLS the record around it, goes
// to the kernel without waiting for room (Linux; elsewhere it never
// sends). It reports whether it sent m; false with a nil error sent
// nothing, and the caller sends it another way. A write that fails all
// the same ends the link as Send's would.
func (e *Endpoint) TrySend(to transport.NodeID, m *transport.Message) (bool, error) {
	size := transport.FrameSize(m, e.cfg.Frame)
	if to == e.cfg.ID || size > trySendMax || !e.enter() {
		return false, nil
	}
	defer e.wg.Done()
	l, addr, err := e.link(to)
	if err != nil {
		return false, nil
	}
	select {
	case l.sem <- struct{}{}:
	default:
		return false, nil
	}
	defer func() { <-l.sem }()
	c := l.c
	addr = e.addrOf(to, addr)
	if c == nil || c.dead.Load() || c.addr != addr || len(l.buckets) > 0 || len(l.wires) > 0 || !c.takes(size) {
		return false, nil
	}
	return true, e.sendHeld(context.Background(), l, to, addr, m, nil)
}

// trySendMax is the largest frame TrySend sends.
const trySendMax = 512

// sendHeld is send once the link is held (l.sem), to the peer's
// address addr now.
func (e *Endpoint) sendHeld(ctx context.Context, l *link, to transport.NodeID, addr string, m *transport.Message, lent *transport.Lent) error {
	// A frame for a new connection names no key slot: its reader has
	// none (see transport.KeyCache).
	clean := l.c == nil || l.c.dead.Load() || l.c.addr != addr
	if clean {
		l.enc.ResetKeys()
	}
	bufs, size, err := l.enc.Encode(m, e.cfg.ID, to)
	if err != nil {
		return peerErr(to, addr, "send", err)
	}
	dialed := false
	if l.c != nil && l.c.addr != addr {
		// The peer moved (SetPeer). The link goes to the old address,
		// often a process that left without this endpoint having
		// noticed yet, and a socket whose far end closed still takes
		// a write: the frame would be lost without an error.
		e.fail(l.c, "send", fmt.Errorf("peer %d moved to %s", to, addr), false)
		l.c = nil
	}
	if l.c == nil || l.c.dead.Load() {
		l.c = nil
		c, err := e.dial(ctx, to, addr)
		if err != nil {
			return err
		}
		l.c, dialed = c, true
	}
	if dialed && !clean {
		// The connection died after the frame was encoded for it.
		l.enc.ResetKeys()
		if bufs, size, err = l.enc.Encode(m, e.cfg.ID, to); err != nil {
			return peerErr(to, addr, "send", err)
		}
	}
	// The buffers reference m's arrays: drop them once written, so that
	// the link keeps no reference to m after Send.
	defer clear(bufs)
	// Counted before the write, so that a peer that has the message (and
	// anything that follows from it) never sees a counter without it.
	l.stats.Sent(size)
	if written, err := e.write(ctx, l, bufs, lent); err != nil {
		c := l.c
		if written == 0 && ctx.Err() != nil && !e.closing() && !c.dead.Load() && !c.broken {
			// Cancelled before the first byte: the link is intact.
			return peerErr(to, c.addr, "send", ctx.Err())
		}
		l.c = nil
		switch {
		case e.closing():
			err = transport.ErrClosed
			e.fail(c, "send", err, false)
		case ctx.Err() != nil:
			err = fmt.Errorf("%w (link broken mid-frame)", ctx.Err())
			e.fail(c, "send", err, false)
		default:
			if f, ok := c.cause.Load().(failCause); ok && errors.Is(err, net.ErrClosed) {
				// The link's watcher ended it while this write was on
				// its way (it saw the peer's end): say why.
				err = f.err
			}
			if errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET) {
				// The peer's end is gone: what a reader sees as EOF.
				err = fmt.Errorf("%w: %w", transport.ErrPeerClosed, err)
			}
			e.fail(c, "send", err, true)
		}
		return peerErr(to, c.addr, "send", err)
	}
	l.enc.Sent()
	return nil
}

// sendSelf delivers a copy of m to this endpoint's own inbox.
func (e *Endpoint) sendSelf(ctx context.Context, m *transport.Message) error {
	size := transport.FrameSize(m, e.cfg.Frame)
	if max := e.maxFrame(); size > max {
		return peerErr(e.cfg.ID, "", "send", fmt.Errorf("%w: %d bytes, limit %d", transport.ErrFrameTooLarge, size, max))
	}
	c := e.pool.Clone(m)
	c.Sender, c.Receiver = e.cfg.ID, e.cfg.ID
	select {
	case e.inbox <- c:
	case <-ctx.Done():
		return peerErr(e.cfg.ID, "", "send", ctx.Err())
	case <-e.done:
		return peerErr(e.cfg.ID, "", "send", transport.ErrClosed)
	}
	st := e.stats.Get(e.cfg.ID)
	st.Sent(size)
	st.Recv(size)
	return nil
}

// maxFrame returns the effective frame limit.
func (e *Endpoint) maxFrame() int {
	if e.cfg.Frame.MaxFrame == 0 {
		return transport.DefaultMaxFrame
	}
	return e.cfg.Frame.MaxFrame
}

// link returns the outgoing link to peer, creating it, and the peer's
// address.
func (e *Endpoint) link(peer transport.NodeID) (*link, string, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	addr, ok := e.addrs[peer]
	if !ok {
		return nil, "", peerErr(peer, "", "send", transport.ErrUnknownPeer)
	}
	l := e.links[peer]
	if l == nil {
		l = &link{
			peer:  peer,
			sem:   make(chan struct{}, 1),
			enc:   transport.NewEncoder(e.cfg.Frame),
			stats: e.stats.Get(peer),
		}
		if e.cfg.Rate != nil {
			if r := e.cfg.Rate(peer); r > 0 {
				l.buckets = append(l.buckets, transport.NewTokenBucket(r, e.cfg.Burst))
			}
		}
		if e.cfg.Shared != nil {
			l.wires, _ = e.cfg.Shared(peer)
		}
		e.links[peer] = l
	}
	return l, addr, nil
}

// dial connects to peer at addr and runs the handshake. The connection is
// watched by a goroutine that reports the peer's end of it.
func (e *Endpoint) dial(ctx context.Context, peer transport.NodeID, addr string) (*conn, error) {
	ctx, cancel := context.WithTimeout(ctx, e.cfg.DialTimeout)
	defer cancel()
	stop := context.AfterFunc(e.ctx, cancel)
	defer stop()
	d := net.Dialer{KeepAliveConfig: e.keepAlive()}
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		switch {
		case e.closing():
			err = transport.ErrClosed
		case errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET):
			// Nothing listens there, or the peer went as it accepted: the
			// peer closed its endpoint.
			err = fmt.Errorf("%w: %w", transport.ErrPeerClosed, err)
		}
		return nil, peerErr(peer, addr, "dial", err)
	}
	c := newConn(nc.(*net.TCPConn), peer, addr)
	if !e.track(c) {
		nc.Close()
		return nil, peerErr(peer, addr, "dial", transport.ErrClosed)
	}
	e.tune(c)
	fail := func(err error) (*conn, error) {
		e.fail(c, "handshake", err, false)
		if e.closing() {
			err = transport.ErrClosed
		}
		return nil, peerErr(peer, addr, "handshake", err)
	}
	// One deadline bounds every step of the handshake, TLS's included.
	c.sock.SetDeadline(time.Now().Add(e.cfg.HandshakeTimeout))
	hs := context.AfterFunc(ctx, func() { c.sock.SetDeadline(time.Unix(1, 0)) })
	if e.clientTLS != nil {
		err = c.startTLS(ctx, e.clientTLS, true)
	}
	if err == nil {
		if e.keyed(peer) {
			// A wait for the peer's key leaves a quarter of the time to
			// tell it why none came.
			keyDeadline := time.Now().Add(e.cfg.HandshakeTimeout * 3 / 4)
			err = handshake(c.rw, e.cfg.ID, peer, e.cfg.Token, e.PublicKey(), func(pubA []byte) ([]byte, error) {
				return e.keys.wait(peer, pubA, keyDeadline, e.done)
			})
		} else {
			err = Handshake(c.rw, e.cfg.ID, peer, e.cfg.Token)
		}
	}
	if !hs() {
		return fail(fmt.Errorf("%w: %w", ctx.Err(), err))
	}
	if err != nil {
		switch {
		case e.clientTLS != nil && tlsRefused(err):
			// The peer's certificate, or this one, is not the cluster's,
			// or the peer does not run TLS: trying again will not help.
			err = fmt.Errorf("%w: %w", transport.ErrRefused, err)
		case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET):
			// Most often the peer left (was killed) while the link was
			// opened: a peer that closed its link, whose failure its
			// scheduler sees too. Less often the two disagree on TLS.
			err = fmt.Errorf("%w: %w (closed by the peer during the handshake: it left, or one of the two uses TLS and the other not)", transport.ErrPeerClosed, err)
		}
		return fail(err)
	}
	c.sock.SetDeadline(time.Time{})
	if c.under != nil {
		c.under.mu.Lock()
		c.under.gather = true // only Send writes from now on
		c.under.mu.Unlock()
	}
	e.up(c)
	e.wg.Add(1)
	go e.watch(c)
	return c, nil
}

// keepAlive returns the keep-alive settings of connections.
func (e *Endpoint) keepAlive() net.KeepAliveConfig {
	if e.cfg.KeepAlive < 0 {
		return net.KeepAliveConfig{Enable: false}
	}
	return net.KeepAliveConfig{Enable: true, Idle: e.cfg.KeepAlive, Interval: e.cfg.KeepAlive / 3, Count: 3}
}

// userTimeout is the TCP_USER_TIMEOUT to set (see UserTimeout); 0 for
// the kernel's default.
func (c Config) userTimeout() time.Duration {
	switch {
	case c.UserTimeout != 0:
		return max(c.UserTimeout, 0)
	case c.KeepAlive > 0:
		// keepAlive's Idle plus Count probes Interval apart.
		return 2 * c.KeepAlive
	case c.KeepAlive == 0:
		// Go's defaults for a keep-alive of zeros: 15 s idle, then 9
		// probes 15 s apart.
		return 150 * time.Second
	}
	return 0
}

// tune sets the socket options of c. Each is best effort, as
// setUserTimeout is: they tune latency, failure detection and memory,
// and a connection whose socket refuses one still carries frames with
// the kernel's default, so their errors are not returned. (The kernel
// caps a buffer size rather than refusing it.)
func (e *Endpoint) tune(c *conn) {
	c.sock.SetNoDelay(true)
	if d := e.cfg.userTimeout(); d > 0 {
		setUserTimeout(c.sock, d)
	}
	switch {
	case e.cfg.SocketBuffer > 0:
		c.sock.SetReadBuffer(e.cfg.SocketBuffer)
		c.sock.SetWriteBuffer(e.cfg.SocketBuffer)
	case e.cfg.LocalSendBuffer > 0 && sameHost(c.sock):
		c.sock.SetWriteBuffer(e.cfg.LocalSendBuffer)
	}
}

// sameHost reports whether sock's peer is on this host: its address is a
// loopback one, or the socket's own local address.
func sameHost(sock *net.TCPConn) bool {
	local, lok := sock.LocalAddr().(*net.TCPAddr)
	remote, rok := sock.RemoteAddr().(*net.TCPAddr)
	if !lok || !rok {
		return false
	}
	return remote.IP.IsLoopback() || remote.IP.Equal(local.IP)
}

// watch waits for the peer's end of an outgoing connection, which never
// carries data back, and reports it.
func (e *Endpoint) watch(c *conn) {
	defer e.wg.Done()
	var b [1]byte
	_, err := c.rw.Read(b[:])
	switch {
	case err == nil:
		err = fmt.Errorf("%w: data on a send-only connection", transport.ErrBadFrame)
	case errors.Is(err, io.EOF):
		err = transport.ErrPeerClosed
	}
	e.fail(c, "send", err, true)
}

// write writes one frame on l's connection, honouring ctx, the write
// timeout and the link's rate, and returns the bytes written; lent, when
// not nil, lends the frame's values (SendLent).
func (e *Endpoint) write(ctx context.Context, l *link, bufs net.Buffers, lent *transport.Lent) (int64, error) {
	c := l.c
	fired := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		c.sock.SetWriteDeadline(time.Unix(1, 0))
		close(fired)
	})
	defer func() {
		if !stop() {
			// ctx ended: if the frame got out anyway, the link is fine
			// and must not keep the expired deadline.
			<-fired
			c.sock.SetWriteDeadline(time.Time{})
		}
	}()
	if len(l.buckets) == 0 && len(l.wires) == 0 {
		if e.cfg.WriteTimeout > 0 {
			c.sock.SetWriteDeadline(time.Now().Add(e.cfg.WriteTimeout))
		}
		if lent != nil {
			return c.writeLent(bufs, lent)
		}
		return c.writeBuffers(bufs)
	}
	if lent != nil {
		lent.Detach(bufs)
	}
	// Rate-limited: chunks of at most Burst bytes, each written once the
	// wires carried it (with wires, the prefix first, alone: carry) and
	// paid for in the link's own bucket; Close interrupts the wait.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(e.ctx, cancel)()
	carried := e.carry(l, bufs)
	chunk := make(net.Buffers, 0, len(bufs))
	var written int64
	for i := 0; len(bufs) > 0; i++ {
		chunk = chunk[:0]
		n := 0
		limit := e.cfg.Burst
		if i == 0 && len(carried) > 0 {
			limit = transport.PrefixSize
		}
		for len(bufs) > 0 && n < limit {
			b := bufs[0]
			if take := limit - n; len(b) > take {
				chunk = append(chunk, b[:take])
				bufs[0] = b[take:]
				n += take
				break
			}
			chunk = append(chunk, b)
			bufs = bufs[1:]
			n += len(b)
		}
		if len(carried) > 0 {
			select {
			case <-carried[i]:
			case <-ctx.Done():
				return written, ctx.Err()
			}
		}
		if err := transport.WaitAll(ctx, l.buckets, n); err != nil {
			return written, err
		}
		if e.cfg.WriteTimeout > 0 {
			c.sock.SetWriteDeadline(time.Now().Add(e.cfg.WriteTimeout))
		}
		w, err := c.writeBuffers(chunk)
		written += w
		if err != nil {
			return written, err
		}
	}
	return written, nil
}

// carry puts the frame of bufs on l's outgoing wires as the parts that
// write sends (the length prefix, then chunks of Burst bytes), one
// stream of the link's flow, all at once, and returns a channel per part
// closed once every wire has carried it; none without wires.
func (e *Endpoint) carry(l *link, bufs net.Buffers) []chan struct{} {
	if len(l.wires) == 0 {
		return nil
	}
	var size int
	for _, b := range bufs {
		size += len(b)
	}
	parts := []int{min(size, transport.PrefixSize)}
	for rest := size - parts[0]; rest > 0; rest -= parts[len(parts)-1] {
		parts = append(parts, min(rest, e.cfg.Burst))
	}
	carried := make([]chan struct{}, len(parts))
	flow := transport.Flow{From: e.cfg.ID, To: l.peer}
	now := time.Now()
	for i, n := range parts {
		ch := make(chan struct{})
		carried[i] = ch
		left := int32(len(l.wires))
		for _, w := range l.wires {
			w.Add(now, flow, n, func(time.Time) {
				if atomic.AddInt32(&left, -1) == 0 {
					close(ch)
				}
			})
		}
	}
	return carried
}

// accept accepts connections until Close.
func (e *Endpoint) accept() {
	defer e.wg.Done()
	backoff := 5 * time.Millisecond
	for {
		nc, err := e.ln.Accept()
		if err != nil {
			if e.closing() || errors.Is(err, net.ErrClosed) {
				return
			}
			// A transient failure such as running out of file
			// descriptors: wait and retry.
			select {
			case <-time.After(backoff):
				backoff = min(2*backoff, time.Second)
			case <-e.done:
				return
			}
			continue
		}
		backoff = 5 * time.Millisecond
		tc, ok := nc.(*net.TCPConn)
		if !ok {
			nc.Close()
			continue
		}
		c := newConn(tc, 0, nc.RemoteAddr().String())
		if !e.track(c) {
			nc.Close()
			return
		}
		e.wg.Add(1)
		go e.serve(c)
	}
}

// serve runs the handshake of an incoming connection and reads its
// frames.
func (e *Endpoint) serve(c *conn) {
	defer e.wg.Done()
	e.tune(c)
	if e.cfg.KeepAlive >= 0 {
		c.sock.SetKeepAliveConfig(e.keepAlive())
	}
	// One deadline bounds every step of the handshake, TLS's included.
	deadline := time.Now().Add(e.cfg.HandshakeTimeout)
	c.sock.SetDeadline(deadline)
	if e.serverTLS != nil {
		if err := c.startTLS(e.ctx, e.serverTLS, false); err != nil {
			// No certificate of the cluster's CA, or not TLS at all.
			var rh tls.RecordHeaderError
			if errors.As(err, &rh) && rh.Conn != nil && rh.RecordHeader[0] == transport.Magic {
				// A colo node without TLS: tell it in its own terms.
				rh.Conn.Write(appendReply(nil, reply{id: e.cfg.ID, reason: reasonNeedTLS}))
				err = fmt.Errorf("%w (a colo node without TLS)", err)
			}
			e.refuse(c, 0, err)
			return
		}
	}
	// A wait for a peer's key leaves a quarter of the time to tell the
	// dialer why none came, counted from when the wait ended: a loaded
	// machine wakes the wait late, and the refusal then missed the
	// handshake's deadline (the dialer read EOF, not the reason).
	keyDeadline := deadline.Add(-e.cfg.HandshakeTimeout / 4)
	from, err := accept(c.rw, e.cfg.ID, e.cfg.Token, e.PublicKey(), func(peer transport.NodeID, pub []byte) ([]byte, error) {
		key, err := e.keyFor(peer, pub, keyDeadline)
		if err != nil {
			c.sock.SetDeadline(time.Now().Add(e.cfg.HandshakeTimeout / 4))
		}
		return key, err
	})
	if errors.Is(err, errTLSClient) {
		// A node with TLS: a TLS alert is all it understands.
		c.sock.Write(tlsAlertHandshakeFailure)
	}
	if err != nil {
		// Until the dialer proved the token, from is only a claim: the
		// node it names is not at fault.
		e.refuse(c, from, err)
		return
	}
	c.peer = from
	c.sock.SetDeadline(time.Time{})
	e.up(c)
	e.read(c)
}

// refuse ends an incoming connection that did not complete the
// handshake, claiming to be node claimed, without reporting it on Down,
// and tells Config.Refused.
func (e *Endpoint) refuse(c *conn, claimed transport.NodeID, err error) {
	e.fail(c, "handshake", err, false)
	if e.cfg.Refused != nil && !e.closing() {
		e.cfg.Refused(c.addr, claimed, err)
	}
}

// idleReader sets a read deadline before every read.
type idleReader struct {
	c    *conn
	idle time.Duration
}

// Read reads from the connection with a fresh deadline.
func (r idleReader) Read(p []byte) (int, error) {
	r.c.sock.SetReadDeadline(time.Now().Add(r.idle))
	return r.c.rw.Read(p)
}

// ingressReader reads the frames of a connection through the wires of
// its receiver's ingress: it puts each frame on them, whole, as soon as
// its length prefix is read, returns its bytes as they come but the last,
// and that one only once every wire has carried the frame. So the
// decoder completes a frame when both the sender's side and the ingress
// carried it, and the connection is read on meanwhile: the sender is
// not held back. A prefix over the frame limit goes on no wire (the
// decoder refuses the frame).
type ingressReader struct {
	r     io.Reader
	wires []*transport.Wire
	flow  transport.Flow
	max   int
	ctx   context.Context
	// prefix holds the bytes of a length prefix read so far (have of
	// them); rest is the bytes of the current frame after the prefix
	// not yet returned, and carried is closed once its wires carried it.
	prefix  [transport.PrefixSize]byte
	have    int
	rest    int
	carried chan struct{}
}

// Read reads the next bytes of the stream, at most up to the end of a
// length prefix, and waits for the ingress before the last byte of a
// frame.
func (p *ingressReader) Read(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	if p.rest == 0 {
		n, err := p.r.Read(b[:min(len(b), transport.PrefixSize-p.have)])
		p.have += copy(p.prefix[p.have:], b[:n])
		if p.have == transport.PrefixSize {
			p.have = 0
			p.rest = int(binary.LittleEndian.Uint32(p.prefix[:]))
			p.carried = nil
			if size := transport.PrefixSize + p.rest; size <= p.max {
				p.carried = p.enter(size)
			}
		}
		return n, err
	}
	limit := p.rest
	if p.carried != nil {
		select {
		case <-p.carried:
			p.carried = nil
		default:
			if limit--; limit == 0 {
				select {
				case <-p.carried:
					p.carried, limit = nil, 1
				case <-p.ctx.Done():
					return 0, p.ctx.Err()
				}
			}
		}
	}
	n, err := p.r.Read(b[:min(len(b), limit)])
	p.rest -= n
	return n, err
}

// enter puts a frame of size bytes on the wires and returns a channel
// closed once they all carried it; nil without wires.
func (p *ingressReader) enter(size int) chan struct{} {
	if len(p.wires) == 0 {
		return nil
	}
	ch := make(chan struct{})
	left := int32(len(p.wires))
	now := time.Now()
	for _, w := range p.wires {
		w.Add(now, p.flow, size, func(time.Time) {
			if atomic.AddInt32(&left, -1) == 0 {
				close(ch)
			}
		})
	}
	return ch
}

// read decodes frames from an accepted connection until it fails.
func (e *Endpoint) read(c *conn) {
	r := io.Reader(c.rw)
	if e.cfg.IdleTimeout > 0 {
		r = idleReader{c: c, idle: e.cfg.IdleTimeout}
	}
	// stopPaying ends a wait for the ingress: a berth's Cancel breaks
	// the link, and returns only once the reader has left it.
	stopPaying := func() {}
	if e.cfg.Shared != nil {
		if _, in := e.cfg.Shared(c.peer); len(in) > 0 {
			ctx, cancel := context.WithCancel(e.ctx)
			defer cancel()
			stopPaying = cancel
			r = &ingressReader{r: r, wires: in, flow: transport.Flow{From: c.peer, To: e.cfg.ID}, max: e.maxFrame(), ctx: ctx}
		}
	}
	dec := transport.NewDecoder(bufio.NewReaderSize(r, 64<<10), e.maxFrame())
	dec.SetKeyCache(e.cfg.Frame.KeyCache)
	dec.SetPool(&e.pool)
	if e.cfg.Early != nil {
		dec.SetEarly(e.cfg.Early)
		defer dec.Stop()
	}
	dec.SetBerths(&e.berths, c.peer, func() {
		e.fail(c, "recv", errors.New("read into a cancelled destination"), false)
		stopPaying()
	})
	st := e.stats.Get(c.peer)
	for {
		m := new(transport.Message)
		n, err := dec.Decode(m)
		if err == nil && (m.Sender != c.peer || m.Receiver != e.cfg.ID) {
			err = fmt.Errorf("%w: frame from %d to %d on the link from %d to %d", transport.ErrBadFrame, m.Sender, m.Receiver, c.peer, e.cfg.ID)
		}
		if err != nil {
			var ne net.Error
			switch {
			case e.closing() || c.dead.Load():
				err = transport.ErrClosed
			case errors.Is(err, io.EOF):
				err = transport.ErrPeerClosed
			case errors.Is(err, syscall.ECONNRESET):
				err = fmt.Errorf("%w: %w", transport.ErrPeerClosed, err)
			case errors.As(err, &ne) && ne.Timeout():
				err = fmt.Errorf("nothing received for %v: %w", e.cfg.IdleTimeout, err)
			}
			e.fail(c, "recv", err, true)
			return
		}
		st.Recv(n)
		if s := e.sink.Load(); s != nil && (*s)(m) {
			continue
		}
		select {
		case e.inbox <- m:
		case <-e.done:
			return
		}
	}
}
