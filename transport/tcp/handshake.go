package tcp

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"colo/transport"
)

// The handshake is a mutual challenge–response over a shared key: each
// side proves that it knows the key with an HMAC-SHA256 keyed by it, over
// both node ids and a fresh random nonce from each side, so the key never
// crosses the wire and a recorded handshake cannot be replayed. The key
// is the cluster token, or, between endpoints with an identity
// (Config.Identity), the link key of the pair: an X25519 agreement of
// the two nodes' keys, bound to the token and both ids (linkKey), which
// only the two nodes can compute. Its messages, little-endian, each
// starting with a 4-byte preamble (magic 0xC6, handshakeVersion, kind,
// flags):
//
//	hello     dialer → acceptor  0xC6 3 'H' flags  from u32, to u32, nonce_d [32], [pub_d [32]]
//	challenge acceptor → dialer  0xC6 3 'C' flags  id u32, nonce_a [32], mac_a [32], [pub_a [32]]
//	proof     dialer → acceptor  0xC6 3 'P' 0      mac_d [32]
//	accept    acceptor → dialer  0xC6 3 'A' 0      id u32, 0 u16
//	refusal   either way         0xC6 3 'R' 0      id u32, reason length u16, reason
//
// flags bit 0 says that the sender has a non-empty token (so that a
// node with a token and one without are told why they differ); bit 1
// (flagKey) that the MACs are keyed by the link key, and that the
// sender's public key follows (pub_d, pub_a); other bits are zero. The
// MACs are
//
//	mac_a = HMAC-SHA256(key, "colo acceptor\x00" ‖ 3 ‖ from ‖ to ‖ nonce_d ‖ nonce_a)
//	mac_d = HMAC-SHA256(key, "colo dialer\x00"   ‖ 3 ‖ from ‖ to ‖ nonce_d ‖ nonce_a)
//
// with from and to as u32. The labels keep one side's MAC from serving as
// the other's. The acceptor answers a hello with a challenge, or with a
// refusal when it is not node to, the token flags differ, or the key
// does not fit: a hello without a key from a peer whose id needs one
// (Config.Keyed), or with a public key other than the one published for
// node from (Endpoint.SetPeerKey; the acceptor waits for it within the
// handshake's deadline, since the dialer may have learnt it first, and
// so does the dialer for pub_a: a node replaced by a new process has a
// new key, which the other may learn a moment after the first message
// of the new one). The dialer
// checks mac_a (the acceptor proves the token first: a stranger listening
// at a peer's address learns nothing and cannot pose as the peer) and
// sends its proof, or a refusal when mac_a is wrong; the acceptor checks
// mac_d and accepts, or refuses. Every message has a fixed size except a
// refusal's reason, at most maxReasonLen bytes.
const (
	// handshakeVersion is the version byte of the handshake messages
	// (1 sent the token itself in the hello, 2 had no link keys).
	handshakeVersion = 3

	kindHello     = 'H'
	kindChallenge = 'C'
	kindProof     = 'P'
	kindAccept    = 'A'
	kindRefuse    = 'R'

	// flagToken: the sender has a non-empty cluster token.
	flagToken = 1
	// flagKey: the MACs are keyed by the link key; a hello carries the
	// dialer's public key.
	flagKey = 2

	nonceLen = 32
	macLen   = sha256.Size
	// pubLen is the length of an X25519 public key.
	pubLen = 32

	helloLen     = 4 + 8 + nonceLen
	challengeLen = 4 + 4 + nonceLen + macLen
	proofLen     = 4 + macLen

	// maxReasonLen bounds a refusal's reason.
	maxReasonLen = 1024
)

// MaxTokenLen is the longest cluster token.
const MaxTokenLen = 1024

// Labels of the two MACs.
const (
	labelAcceptor = "colo acceptor\x00"
	labelDialer   = "colo dialer\x00"
)

// Reasons for a refusal, as the refusing side says them.
const (
	reasonBadProof     = "wrong cluster token: the dialer's proof did not match"
	reasonBadChallenge = "wrong cluster token: the acceptor's proof did not match"
	reasonDialerNone   = "wrong cluster token: the dialer has none and this node has one"
	reasonAcceptorNone = "wrong cluster token: this node has none (an insecure cluster) and the dialer has one"
	reasonNeedTLS      = "this node runs TLS and the dialer does not (--tls-cert, --tls-key, --tls-ca)"
	reasonBadKey       = "wrong link key: the acceptor's proof did not match (it is not the node the scheduler published, or the tokens differ)"
	reasonBadKeyProof  = "wrong link key: the dialer's proof did not match (it does not hold the key the scheduler published for it, or the tokens differ)"
	reasonNoKeys       = "this node has no link keys (it is not a member of a job that gives them): prove the cluster token instead"
)

// errTLSClient is readPreamble's error for the start of a TLS handshake
// (a record of type handshake, version 3.x): a node with TLS dialled one
// without. The acceptor answers it with tlsAlertHandshakeFailure.
var errTLSClient = errors.New("not a colo node: a TLS client (this node runs without TLS)")

// errVersion is wrapped by readPreamble's error for another version of
// the handshake; the acceptor tells such a dialer in a refusal.
var errVersion = errors.New("handshake version")

// tlsAlertHandshakeFailure is a plaintext TLS record holding a fatal
// handshake_failure alert, which a TLS client reports as "remote error:
// tls: handshake failure".
var tlsAlertHandshakeFailure = []byte{21, 3, 1, 0, 2, 2, 40}

// hello is the dialer's first message.
type hello struct {
	from, to transport.NodeID
	token    bool // the dialer has a token
	nonce    [nonceLen]byte
	// pub is the dialer's public key when it proves a link key, nil when
	// it proves the token.
	pub []byte
}

// challenge is the acceptor's answer to a hello.
type challenge struct {
	id    transport.NodeID
	token bool // the acceptor has a token
	nonce [nonceLen]byte
	mac   [macLen]byte
	// pub is the acceptor's public key when the MACs are keyed by the
	// link key, nil when by the token.
	pub []byte
}

// reply is an acceptance or a refusal, from either side (a dialer's
// refusal answers a challenge it does not believe).
type reply struct {
	accepted bool
	id       transport.NodeID
	reason   string
}

// preamble returns the 4-byte preamble of a message of kind.
func preamble(dst []byte, kind, flags byte) []byte {
	return append(dst, transport.Magic, handshakeVersion, kind, flags)
}

// flagsOf returns the flags of a hello or challenge.
func flagsOf(token, key bool) byte {
	var f byte
	if token {
		f |= flagToken
	}
	if key {
		f |= flagKey
	}
	return f
}

// appendHello encodes h.
func appendHello(dst []byte, h hello) []byte {
	dst = preamble(dst, kindHello, flagsOf(h.token, h.pub != nil))
	dst = binary.LittleEndian.AppendUint32(dst, uint32(h.from))
	dst = binary.LittleEndian.AppendUint32(dst, uint32(h.to))
	dst = append(dst, h.nonce[:]...)
	return append(dst, h.pub...)
}

// appendChallenge encodes c.
func appendChallenge(dst []byte, c challenge) []byte {
	dst = preamble(dst, kindChallenge, flagsOf(c.token, c.pub != nil))
	dst = binary.LittleEndian.AppendUint32(dst, uint32(c.id))
	dst = append(dst, c.nonce[:]...)
	dst = append(dst, c.mac[:]...)
	return append(dst, c.pub...)
}

// appendProof encodes a dialer's proof.
func appendProof(dst []byte, mac [macLen]byte) []byte {
	return append(preamble(dst, kindProof, 0), mac[:]...)
}

// appendReply encodes r; a reason longer than maxReasonLen is cut.
func appendReply(dst []byte, r reply) []byte {
	kind := byte(kindRefuse)
	if r.accepted {
		kind = kindAccept
	}
	reason := r.reason
	if len(reason) > maxReasonLen {
		reason = reason[:maxReasonLen]
	}
	dst = preamble(dst, kind, 0)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(r.id))
	dst = binary.LittleEndian.AppendUint16(dst, uint16(len(reason)))
	return append(dst, reason...)
}

// mac returns the MAC of one side of the handshake between from and to
// with the nonces nd (the dialer's) and na (the acceptor's).
func mac(key []byte, label string, from, to transport.NodeID, nd, na *[nonceLen]byte) [macLen]byte {
	h := hmac.New(sha256.New, key)
	var b [len(labelAcceptor) + 1 + 8]byte
	n := copy(b[:], label)
	b[n] = handshakeVersion
	binary.LittleEndian.PutUint32(b[n+1:], uint32(from))
	binary.LittleEndian.PutUint32(b[n+5:], uint32(to))
	h.Write(b[:n+9])
	h.Write(nd[:])
	h.Write(na[:])
	var out [macLen]byte
	h.Sum(out[:0])
	return out
}

// newNonce returns a fresh random nonce.
func newNonce() [nonceLen]byte {
	var n [nonceLen]byte
	rand.Read(n[:]) // never fails (crypto/rand)
	return n
}

// readPreamble reads the 4-byte preamble, checks magic and version and
// that the kind is one of kinds, and returns the kind and the flags.
// Flags other than flagToken and flagKey, or any on a kind that has none,
// are an error.
func readPreamble(r io.Reader, kinds ...byte) (kind, flags byte, err error) {
	var b [4]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return 0, 0, err
	}
	if b[0] == 22 && b[1] == 3 {
		return 0, 0, errTLSClient
	}
	if b[0] != transport.Magic {
		return 0, 0, fmt.Errorf("not a colo node: magic %#x, want %#x", b[0], transport.Magic)
	}
	if b[1] != handshakeVersion {
		return 0, 0, fmt.Errorf("%w %d, want %d", errVersion, b[1], handshakeVersion)
	}
	for _, k := range kinds {
		if b[2] != k {
			continue
		}
		allowed := byte(0)
		if k == kindHello || k == kindChallenge {
			allowed = flagToken | flagKey
		}
		if b[3]&^allowed != 0 {
			return 0, 0, fmt.Errorf("handshake message %q with flags %#x", b[2], b[3])
		}
		return k, b[3], nil
	}
	return 0, 0, fmt.Errorf("unexpected handshake message %q", b[2:4])
}

// readHello reads a dialer's hello.
func readHello(r io.Reader) (hello, error) {
	_, flags, err := readPreamble(r, kindHello)
	if err != nil {
		return hello{}, err
	}
	var b [helloLen - 4]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return hello{}, err
	}
	h := hello{
		from:  transport.NodeID(binary.LittleEndian.Uint32(b[:])),
		to:    transport.NodeID(binary.LittleEndian.Uint32(b[4:])),
		token: flags&flagToken != 0,
	}
	copy(h.nonce[:], b[8:])
	if flags&flagKey != 0 {
		h.pub = make([]byte, pubLen)
		if _, err := io.ReadFull(r, h.pub); err != nil {
			return hello{}, err
		}
	}
	return h, nil
}

// readChallenge reads an acceptor's answer to a hello: a challenge, or a
// refusal (ok false).
func readChallenge(r io.Reader) (c challenge, refusal reply, ok bool, err error) {
	kind, flags, err := readPreamble(r, kindChallenge, kindRefuse)
	if err != nil {
		return c, refusal, false, err
	}
	if kind == kindRefuse {
		refusal, err = readReplyBody(r, kind)
		return c, refusal, false, err
	}
	var b [challengeLen - 4]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return c, refusal, false, err
	}
	c.id = transport.NodeID(binary.LittleEndian.Uint32(b[:]))
	c.token = flags&flagToken != 0
	copy(c.nonce[:], b[4:])
	copy(c.mac[:], b[4+nonceLen:])
	if flags&flagKey != 0 {
		c.pub = make([]byte, pubLen)
		if _, err := io.ReadFull(r, c.pub); err != nil {
			return c, refusal, false, err
		}
	}
	return c, refusal, true, nil
}

// readProof reads a dialer's answer to a challenge: a proof, or a refusal
// (ok false).
func readProof(r io.Reader) (m [macLen]byte, refusal reply, ok bool, err error) {
	kind, _, err := readPreamble(r, kindProof, kindRefuse)
	if err != nil {
		return m, refusal, false, err
	}
	if kind == kindRefuse {
		refusal, err = readReplyBody(r, kind)
		return m, refusal, false, err
	}
	if _, err := io.ReadFull(r, m[:]); err != nil {
		return m, refusal, false, err
	}
	return m, refusal, true, nil
}

// readReply reads an acceptance or a refusal.
func readReply(r io.Reader) (reply, error) {
	kind, _, err := readPreamble(r, kindAccept, kindRefuse)
	if err != nil {
		return reply{}, err
	}
	return readReplyBody(r, kind)
}

// readReplyBody reads what follows the preamble of an acceptance or a
// refusal: the id and the reason, at most maxReasonLen bytes.
func readReplyBody(r io.Reader, kind byte) (reply, error) {
	var b [6]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return reply{}, err
	}
	n := int(binary.LittleEndian.Uint16(b[4:]))
	if n > maxReasonLen {
		return reply{}, fmt.Errorf("reason of %d bytes, limit %d", n, maxReasonLen)
	}
	reason := make([]byte, n)
	if _, err := io.ReadFull(r, reason); err != nil {
		return reply{}, err
	}
	return reply{accepted: kind == kindAccept, id: transport.NodeID(binary.LittleEndian.Uint32(b[:])), reason: printable(reason)}, nil
}

// printable returns b with every byte that is not printable ASCII
// replaced by '?': a reason is the peer's text and goes into log lines,
// where a stranger's line breaks or escape sequences must not forge
// others.
func printable(b []byte) string {
	for i, c := range b {
		if c < 0x20 || c > 0x7e {
			b[i] = '?'
		}
	}
	return string(b)
}

// Handshake runs the dialer's half of the handshake on rw, a fresh
// connection to node to (inside TLS when the cluster uses it): node from
// proves that it knows token and checks that the other side knows it too
// and is node to. Deadlines are the caller's. An error wraps
// transport.ErrRefused when either side refused the other (a wrong token
// or node id). The endpoints run it themselves; it is exported for tools
// and tests that speak to a node without an endpoint. A node whose
// endpoint has an identity refuses it from a peer whose id needs a link
// key (Config.Keyed).
func Handshake(rw io.ReadWriter, from, to transport.NodeID, token string) error {
	return handshake(rw, from, to, token, nil, nil)
}

// handshake is Handshake, offering the public key pub when it is not nil
// and proving the link key that keyFor returns for the acceptor's public
// key, or the reason to refuse it.
func handshake(rw io.ReadWriter, from, to transport.NodeID, token string, pub []byte, keyFor func(pubA []byte) ([]byte, error)) error {
	h := hello{from: from, to: to, token: token != "", nonce: newNonce(), pub: pub}
	if _, err := rw.Write(appendHello(nil, h)); err != nil {
		return err
	}
	c, refusal, ok, err := readChallenge(rw)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%w: %q", transport.ErrRefused, refusal.reason)
	}
	if c.id != to {
		// The acceptor refuses a hello for another node, so this one
		// misbehaves; tell it, and give up.
		rw.Write(appendReply(nil, reply{id: from, reason: fmt.Sprintf("this is node %d, which reached node %d", from, c.id)}))
		return fmt.Errorf("%w: reached node %d", transport.ErrRefused, c.id)
	}
	secret, what := []byte(token), "the cluster token"
	if pub != nil {
		what = "its link key"
		if c.pub == nil {
			rw.Write(appendReply(nil, reply{id: from, reason: "no link key in the challenge"}))
			return fmt.Errorf("%w: node %d proves the cluster token, not a link key (it has no identity)", transport.ErrRefused, to)
		}
		key, err := keyFor(c.pub)
		if err != nil {
			rw.Write(appendReply(nil, reply{id: from, reason: err.Error()}))
			return fmt.Errorf("%w: %w", transport.ErrRefused, err)
		}
		secret = key
	}
	want := mac(secret, labelAcceptor, from, to, &h.nonce, &c.nonce)
	if (c.pub != nil) != (pub != nil) || !hmac.Equal(c.mac[:], want[:]) {
		reason := reasonBadChallenge
		switch {
		case h.token && !c.token:
			reason = "wrong cluster token: the acceptor has none and this node has one"
		case !h.token && c.token:
			reason = "wrong cluster token: this node has none and the acceptor has one"
		case pub != nil:
			reason = reasonBadKey
		}
		rw.Write(appendReply(nil, reply{id: from, reason: reason}))
		return fmt.Errorf("%w: %s (node %d did not prove %s: the tokens differ, or it is not that node of this cluster)", transport.ErrRefused, reason, to, what)
	}
	proof := mac(secret, labelDialer, from, to, &h.nonce, &c.nonce)
	if _, err := rw.Write(appendProof(nil, proof)); err != nil {
		return err
	}
	r, err := readReply(rw)
	switch {
	case err != nil:
		return err
	case !r.accepted:
		return fmt.Errorf("%w: %q", transport.ErrRefused, r.reason)
	case r.id != to:
		return fmt.Errorf("%w: reached node %d", transport.ErrRefused, r.id)
	}
	return nil
}

// accept runs the acceptor's half of the handshake on rw as node self
// with token. It returns the dialer's id once the dialer proved the key,
// and otherwise the id the dialer claimed (0 when it sent no valid
// hello), which is only a claim, and the error. keyFor, when not nil,
// chooses the key for the hello's dialer and public key (nil: the
// token), or refuses it with a reason; pub is this side's public key,
// sent with a challenge keyed by a link key. A refusal that this side
// decided was sent to the dialer with its reason.
func accept(rw io.ReadWriter, self transport.NodeID, token string, pub []byte, keyFor func(from transport.NodeID, pub []byte) ([]byte, error)) (transport.NodeID, error) {
	h, err := readHello(rw)
	if errors.Is(err, errVersion) {
		// A colo node of another version: it can read this much.
		rw.Write(appendReply(nil, reply{id: self, reason: err.Error() + " (nodes of different versions of colo)"}))
	}
	if err != nil {
		return 0, err
	}
	refuse := func(reason string) (transport.NodeID, error) {
		rw.Write(appendReply(nil, reply{id: self, reason: reason}))
		return h.from, fmt.Errorf("%w: %s", transport.ErrRefused, reason)
	}
	has := token != ""
	switch {
	case h.to != self:
		return refuse(fmt.Sprintf("this is node %d, not node %d", self, h.to))
	case has && !h.token:
		return refuse(reasonDialerNone)
	case !has && h.token:
		return refuse(reasonAcceptorNone)
	}
	secret := []byte(token)
	switch {
	case keyFor != nil:
		k, err := keyFor(h.from, h.pub)
		if err != nil {
			return refuse(err.Error())
		}
		if k != nil {
			secret = k
		}
	case h.pub != nil:
		return refuse(reasonNoKeys)
	}
	c := challenge{id: self, token: has, nonce: newNonce()}
	if h.pub != nil {
		c.pub = pub
	}
	c.mac = mac(secret, labelAcceptor, h.from, h.to, &h.nonce, &c.nonce)
	if _, err := rw.Write(appendChallenge(nil, c)); err != nil {
		return h.from, err
	}
	proof, refusal, ok, err := readProof(rw)
	if err != nil {
		return h.from, err
	}
	if !ok {
		return h.from, fmt.Errorf("%w by the dialer: %q", transport.ErrRefused, refusal.reason)
	}
	want := mac(secret, labelDialer, h.from, h.to, &h.nonce, &c.nonce)
	if !hmac.Equal(proof[:], want[:]) {
		if h.pub != nil {
			return refuse(reasonBadKeyProof)
		}
		return refuse(reasonBadProof)
	}
	if _, err := rw.Write(appendReply(nil, reply{accepted: true, id: self})); err != nil {
		return h.from, err
	}
	return h.from, nil
}
