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

// The handshake is a mutual challenge–response over the cluster token:
// each side proves that it knows the token with an HMAC-SHA256 keyed by
// it, over both node ids and a fresh random nonce from each side, so the
// token never crosses the wire and a recorded handshake cannot be
// replayed. Its messages, little-endian, each starting with a 4-byte
// preamble (magic 0xC6, handshakeVersion, kind, flags):
//
//	hello     dialer → acceptor  0xC6 2 'H' flags  from u32, to u32, nonce_d [32]
//	challenge acceptor → dialer  0xC6 2 'C' flags  id u32, nonce_a [32], mac_a [32]
//	proof     dialer → acceptor  0xC6 2 'P' 0      mac_d [32]
//	accept    acceptor → dialer  0xC6 2 'A' 0      id u32, 0 u16
//	refusal   either way         0xC6 2 'R' 0      id u32, reason length u16, reason
//
// flags bit 0 says that the sender has a non-empty token (so that a
// node with a token and one without are told why they differ); other
// bits are zero. The MACs are
//
//	mac_a = HMAC-SHA256(token, "colo acceptor\x00" ‖ 2 ‖ from ‖ to ‖ nonce_d ‖ nonce_a)
//	mac_d = HMAC-SHA256(token, "colo dialer\x00"   ‖ 2 ‖ from ‖ to ‖ nonce_d ‖ nonce_a)
//
// with from and to as u32. The labels keep one side's MAC from serving as
// the other's. The acceptor answers a hello with a challenge, or with a
// refusal when it is not node to or the token flags differ; the dialer
// checks mac_a (the acceptor proves the token first: a stranger listening
// at a peer's address learns nothing and cannot pose as the peer) and
// sends its proof, or a refusal when mac_a is wrong; the acceptor checks
// mac_d and accepts, or refuses. Every message has a fixed size except a
// refusal's reason, at most maxReasonLen bytes.
const (
	// handshakeVersion is the version byte of the handshake messages
	// (1 sent the token itself in the hello).
	handshakeVersion = 2

	kindHello     = 'H'
	kindChallenge = 'C'
	kindProof     = 'P'
	kindAccept    = 'A'
	kindRefuse    = 'R'

	// flagToken: the sender has a non-empty cluster token.
	flagToken = 1

	nonceLen = 32
	macLen   = sha256.Size

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
}

// challenge is the acceptor's answer to a hello.
type challenge struct {
	id    transport.NodeID
	token bool // the acceptor has a token
	nonce [nonceLen]byte
	mac   [macLen]byte
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

func tokenFlag(has bool) byte {
	if has {
		return flagToken
	}
	return 0
}

// appendHello encodes h.
func appendHello(dst []byte, h hello) []byte {
	dst = preamble(dst, kindHello, tokenFlag(h.token))
	dst = binary.LittleEndian.AppendUint32(dst, uint32(h.from))
	dst = binary.LittleEndian.AppendUint32(dst, uint32(h.to))
	return append(dst, h.nonce[:]...)
}

// appendChallenge encodes c.
func appendChallenge(dst []byte, c challenge) []byte {
	dst = preamble(dst, kindChallenge, tokenFlag(c.token))
	dst = binary.LittleEndian.AppendUint32(dst, uint32(c.id))
	dst = append(dst, c.nonce[:]...)
	return append(dst, c.mac[:]...)
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
func mac(token, label string, from, to transport.NodeID, nd, na *[nonceLen]byte) [macLen]byte {
	h := hmac.New(sha256.New, []byte(token))
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
// Flags other than flagToken, or any on a kind that has none, are an
// error.
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
			allowed = flagToken
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
// and tests that speak to a node without an endpoint.
func Handshake(rw io.ReadWriter, from, to transport.NodeID, token string) error {
	h := hello{from: from, to: to, token: token != "", nonce: newNonce()}
	if _, err := rw.Write(appendHello(nil, h)); err != nil {
		return err
	}
	c, refusal, ok, err := readChallenge(rw)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%w: %s", transport.ErrRefused, refusal.reason)
	}
	if c.id != to {
		// The acceptor refuses a hello for another node, so this one
		// misbehaves; tell it, and give up.
		rw.Write(appendReply(nil, reply{id: from, reason: fmt.Sprintf("this is node %d, which reached node %d", from, c.id)}))
		return fmt.Errorf("%w: reached node %d", transport.ErrRefused, c.id)
	}
	want := mac(token, labelAcceptor, from, to, &h.nonce, &c.nonce)
	if !hmac.Equal(c.mac[:], want[:]) {
		reason := reasonBadChallenge
		switch {
		case h.token && !c.token:
			reason = "wrong cluster token: the acceptor has none and this node has one"
		case !h.token && c.token:
			reason = "wrong cluster token: this node has none and the acceptor has one"
		}
		rw.Write(appendReply(nil, reply{id: from, reason: reason}))
		return fmt.Errorf("%w: %s (node %d did not prove the cluster token: the tokens differ, or it is not a node of this cluster)", transport.ErrRefused, reason, to)
	}
	proof := mac(token, labelDialer, from, to, &h.nonce, &c.nonce)
	if _, err := rw.Write(appendProof(nil, proof)); err != nil {
		return err
	}
	r, err := readReply(rw)
	switch {
	case err != nil:
		return err
	case !r.accepted:
		return fmt.Errorf("%w: %s", transport.ErrRefused, r.reason)
	case r.id != to:
		return fmt.Errorf("%w: reached node %d", transport.ErrRefused, r.id)
	}
	return nil
}

// accept runs the acceptor's half of the handshake on rw as node self
// with token. It returns the dialer's id once the dialer proved the
// token, and otherwise the id the dialer claimed (0 when it sent no
// valid hello), which is only a claim, and the error. A refusal that
// this side decided was sent to the dialer with its reason.
func accept(rw io.ReadWriter, self transport.NodeID, token string) (transport.NodeID, error) {
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
	c := challenge{id: self, token: has, nonce: newNonce()}
	c.mac = mac(token, labelAcceptor, h.from, h.to, &h.nonce, &c.nonce)
	if _, err := rw.Write(appendChallenge(nil, c)); err != nil {
		return h.from, err
	}
	proof, refusal, ok, err := readProof(rw)
	if err != nil {
		return h.from, err
	}
	if !ok {
		return h.from, fmt.Errorf("%w by the dialer: %s", transport.ErrRefused, refusal.reason)
	}
	want := mac(token, labelDialer, h.from, h.to, &h.nonce, &c.nonce)
	if !hmac.Equal(proof[:], want[:]) {
		return refuse(reasonBadProof)
	}
	if _, err := rw.Write(appendReply(nil, reply{accepted: true, id: self})); err != nil {
		return h.from, err
	}
	return h.from, nil
}
