package tcp

import (
	"encoding/binary"
	"fmt"
	"io"

	"colo/transport"
)

// Handshake messages, little-endian. The dialer sends a hello:
//
//	magic 0xC6, version, 'H', 0, from u32, to u32, token length u16, token
//
// and the acceptor answers:
//
//	magic 0xC6, version, 'A' (accepted) or 'R' (refused), 0, its id u32,
//	reason length u16, reason
const (
	kindHello  = 'H'
	kindAccept = 'A'
	kindRefuse = 'R'
	// maxReasonLen bounds a refusal's reason.
	maxReasonLen = 1024
)

// MaxTokenLen is the longest cluster token.
const MaxTokenLen = 1024

// hello is the dialer's half of the handshake.
type hello struct {
	from, to transport.NodeID
	token    string
}

// reply is the acceptor's half of the handshake.
type reply struct {
	accepted bool
	id       transport.NodeID
	reason   string
}

// appendHello encodes h.
func appendHello(dst []byte, h hello) []byte {
	dst = append(dst, transport.Magic, transport.Version, kindHello, 0)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(h.from))
	dst = binary.LittleEndian.AppendUint32(dst, uint32(h.to))
	dst = binary.LittleEndian.AppendUint16(dst, uint16(len(h.token)))
	return append(dst, h.token...)
}

// appendReply encodes r.
func appendReply(dst []byte, r reply) []byte {
	kind := byte(kindRefuse)
	if r.accepted {
		kind = kindAccept
	}
	reason := r.reason
	if len(reason) > maxReasonLen {
		reason = reason[:maxReasonLen]
	}
	dst = append(dst, transport.Magic, transport.Version, kind, 0)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(r.id))
	dst = binary.LittleEndian.AppendUint16(dst, uint16(len(reason)))
	return append(dst, reason...)
}

// readPreamble reads the 4-byte preamble and checks magic, version and
// that the kind is one of kinds.
func readPreamble(r io.Reader, kinds ...byte) (byte, error) {
	var b [4]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return 0, err
	}
	if b[0] != transport.Magic {
		return 0, fmt.Errorf("not a colo node: magic %#x, want %#x", b[0], transport.Magic)
	}
	if b[1] != transport.Version {
		return 0, fmt.Errorf("protocol version %d, want %d", b[1], transport.Version)
	}
	for _, k := range kinds {
		if b[2] == k && b[3] == 0 {
			return k, nil
		}
	}
	return 0, fmt.Errorf("unexpected handshake message %q", b[2:4])
}

// readString reads a 2-byte length and that many bytes, at most maxLen.
func readString(r io.Reader, what string, maxLen int) (string, error) {
	var b [2]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return "", err
	}
	n := int(binary.LittleEndian.Uint16(b[:]))
	if n > maxLen {
		return "", fmt.Errorf("%s of %d bytes, limit %d", what, n, maxLen)
	}
	buf := make([]byte, n)
	if _, err := io.ReadFull(r, buf); err != nil {
		return "", err
	}
	return string(buf), nil
}

// readHello reads a dialer's hello.
func readHello(r io.Reader) (hello, error) {
	if _, err := readPreamble(r, kindHello); err != nil {
		return hello{}, err
	}
	var ids [8]byte
	if _, err := io.ReadFull(r, ids[:]); err != nil {
		return hello{}, err
	}
	token, err := readString(r, "token", MaxTokenLen)
	if err != nil {
		return hello{}, err
	}
	return hello{
		from:  transport.NodeID(binary.LittleEndian.Uint32(ids[:])),
		to:    transport.NodeID(binary.LittleEndian.Uint32(ids[4:])),
		token: token,
	}, nil
}

// readReply reads an acceptor's reply.
func readReply(r io.Reader) (reply, error) {
	kind, err := readPreamble(r, kindAccept, kindRefuse)
	if err != nil {
		return reply{}, err
	}
	var id [4]byte
	if _, err := io.ReadFull(r, id[:]); err != nil {
		return reply{}, err
	}
	reason, err := readString(r, "reason", maxReasonLen)
	if err != nil {
		return reply{}, err
	}
	return reply{accepted: kind == kindAccept, id: transport.NodeID(binary.LittleEndian.Uint32(id[:])), reason: reason}, nil
}
