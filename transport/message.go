package transport

import (
	"fmt"

	"colo/kv"
)

// NodeID names a node of the cluster: the scheduler, a server or a
// worker. The transport gives ids no meaning; the scheduler assigns them.
type NodeID uint32

// MsgType is the coarse kind of a message. The transport carries it
// without interpreting it.
type MsgType uint8

// Message types used by colo.
const (
	// TypeData is a key–value request or response: a push, a pull or
	// their answers.
	TypeData MsgType = 0
	// TypeControl is a control message (registration, barrier,
	// heartbeat, …) whose command is in Header.Cmd and arguments in Body.
	TypeControl MsgType = 1
)

// Flags qualify a message. The transport carries them without
// interpreting them; the named bits are the parameter server's.
type Flags uint16

// Flag bits.
const (
	// FlagRequest marks a request; a message without it is a response.
	FlagRequest Flags = 1 << iota
	// FlagPush marks a push (values travel to the server).
	FlagPush
	// FlagPull marks a pull (values travel back to the worker).
	FlagPull
	// FlagBorrowed marks a message that did not travel: its arrays are
	// the sender's, valid only until the request is answered, so it must
	// not be answered before its values are used (a worker's push to the
	// server of its own machine).
	FlagBorrowed
)

// Header is the fixed part of a message.
type Header struct {
	Type  MsgType
	Flags Flags
	// Cmd is the command of a control message, or an application code
	// (such as the update rule) of a data message.
	Cmd uint16
	// Sender and Receiver are filled in by the transport: Send ignores
	// them and sets them on the message the receiver gets.
	Sender, Receiver NodeID
	// App and Customer identify the application and the object within it
	// (a worker's KV store, the scheduler's barrier, …) that the message
	// is for, so one node can run several.
	App, Customer uint32
	// ID is the request id (ps-lite's timestamp): a response carries the
	// id of its request.
	ID uint64
}

// Message is a header, an opaque body for control messages and raw
// key–value segments. On the wire the segments are little-endian arrays
// sent without copying; keys are gap-encoded (see kv.AppendKeys) when
// they are strictly increasing and that is smaller, unless the transport
// is configured for raw keys.
//
// A message passed to Send is not modified, and the transport keeps no
// reference to it once Send returns. A received message belongs to the
// receiver, which may hand its arrays back with Release when done.
type Message struct {
	Header
	Body []byte
	KV   kv.Batch
	pool *Pool // where Release returns the arrays, if anywhere
	// landed marks KV.Vals as a berth (see Berths): the receiver's own
	// memory, never handed to a pool.
	landed bool
	// sharedKeys marks KV.Keys as a key slot's (see KeyCache): shared
	// with other messages of the stream, never handed to a pool.
	sharedKeys bool
	// ascending: the Decoder found KV.Keys strictly increasing.
	ascending bool
	// arrival, when not nil, tells how much of KV.Vals has been read (see
	// Message.Early).
	arrival *arrival
}

// KeysAscending reports whether the transport knows KV.Keys to be
// strictly increasing: the keys of a key slot (see KeyCache), checked
// once when the slot was stored, so that a receiver that needs them in
// order (a server) need not check them again at every frame. False says
// nothing about them.
func (m *Message) KeysAscending() bool { return m.ascending }

// Clone returns a deep copy of m; nil segments stay nil. The copy owns
// its arrays (Release does nothing on it).
func (m *Message) Clone() *Message {
	c := &Message{Header: m.Header, KV: m.KV.Clone()}
	if m.Body != nil {
		c.Body = append(make([]byte, 0, len(m.Body)), m.Body...)
	}
	return c
}

// String summarises m for logs and test failures.
func (m *Message) String() string {
	return fmt.Sprintf("msg{type %d flags %#x cmd %d %d→%d app %d cust %d id %d body %dB keys %d vals %d lens %d}",
		m.Type, uint16(m.Flags), m.Cmd, m.Sender, m.Receiver, m.App, m.Customer, m.ID,
		len(m.Body), len(m.KV.Keys), len(m.KV.Vals), len(m.KV.Lens))
}
