// Package proto is the vocabulary that the scheduler, servers and workers
// of colo's parameter server share: node roles and ids, the control
// messages of membership, barriers and failure handling, the metadata of
// data messages, and the error that names a failed node.
//
// # Node ids
//
// The scheduler is node 1. Server rank r is node 2+2r and worker rank r
// node 3+2r, so an id tells its role and rank without a lookup (ps-lite
// uses the same trick with other constants). Evaluator rank r is node
// 2^30+r: an evaluator reads the model (seed 004's evaluator task) but
// is no worker, so it joins no barrier and no consistency clock. Ids
// from 2^31 on are
// provisional: a node registers under a random provisional id, learns its
// real id from the scheduler and only then opens the endpoint it trains
// with.
//
// # Control messages
//
// Control messages are transport.TypeControl messages whose Header.Cmd is
// one of the Cmd constants and whose Body is the JSON of the matching
// struct (Register, Assign, …). They are small and rare, so readability
// wins over compactness; the hot path (pushes and pulls) is binary.
//
// # Data messages
//
// A push or pull is a transport.TypeData message: FlagRequest plus
// FlagPush or FlagPull, Header.ID the worker's request id, Header.Cmd
// DataSparse (KV holds the keys) or DataRange (KV.Keys is {begin, end}),
// and an 8-byte Body carrying the worker's round for the consistency
// clock. The answer carries the request's id and, for a pull, the
// values.
package proto

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"colo/transport"
)

// Role is what a node does.
type Role uint8

// Roles. A machine is a server and a worker in one process, the
// deployment of the papers colo follows: worker i and server i share
// machine i. An evaluator pulls the model while the workers train and
// scores it (validation curves), outside the workers' clock: its pulls
// are answered at once with the servers' current values, and it may not
// push.
const (
	RoleScheduler Role = iota + 1
	RoleServer
	RoleWorker
	RoleMachine
	RoleEvaluator
)

// String returns the role's name as the CLI spells it.
func (r Role) String() string {
	switch r {
	case RoleScheduler:
		return "scheduler"
	case RoleServer:
		return "server"
	case RoleWorker:
		return "worker"
	case RoleMachine:
		return "machine"
	case RoleEvaluator:
		return "evaluator"
	}
	return fmt.Sprintf("role(%d)", uint8(r))
}

// ParseRole reads a role name.
func ParseRole(s string) (Role, error) {
	for _, r := range []Role{RoleScheduler, RoleServer, RoleWorker, RoleMachine, RoleEvaluator} {
		if r.String() == s {
			return r, nil
		}
	}
	return 0, fmt.Errorf("unknown role %q (scheduler, server, worker, machine or evaluator)", s)
}

// MarshalText writes the role's name.
func (r Role) MarshalText() ([]byte, error) { return []byte(r.String()), nil }

// UnmarshalText reads a role's name.
func (r *Role) UnmarshalText(b []byte) error {
	v, err := ParseRole(string(b))
	if err == nil {
		*r = v
	}
	return err
}

// SchedulerID is the scheduler's node id.
const SchedulerID transport.NodeID = 1

// MaxRank bounds the number of servers and of workers.
const MaxRank = 1 << 20

// MaxEvaluators bounds the number of evaluators.
const MaxEvaluators = 64

// A node logs at most RefusalBurst refused connections or registrations
// per RefusalPeriod, and counts the others (a stranger dialing a port in
// a loop costs a few lines and a count, not a line a connection).
const (
	RefusalBurst  = 5
	RefusalPeriod = 30 * time.Second
)

// provisional is the first provisional id, evaluators the first
// evaluator's.
const (
	provisional = 1 << 31
	evaluators  = 1 << 30
)

// ServerID returns the node id of server rank r.
func ServerID(r int) transport.NodeID { return transport.NodeID(2 + 2*r) }

// WorkerID returns the node id of worker rank r.
func WorkerID(r int) transport.NodeID { return transport.NodeID(3 + 2*r) }

// EvaluatorID returns the node id of evaluator rank r.
func EvaluatorID(r int) transport.NodeID { return transport.NodeID(evaluators + r) }

// IsProvisional reports whether id is a provisional registration id.
func IsProvisional(id transport.NodeID) bool { return id >= provisional }

// Provisional returns the provisional id numbered x (any 31-bit value).
func Provisional(x uint32) transport.NodeID { return transport.NodeID(provisional | x&(provisional-1)) }

// Identify returns the role and rank of a node id: the scheduler has rank
// 0, a provisional or invalid id role 0 and rank -1.
func Identify(id transport.NodeID) (Role, int) {
	switch {
	case id == SchedulerID:
		return RoleScheduler, 0
	case id < 2 || IsProvisional(id):
		return 0, -1
	case id >= evaluators:
		if id >= evaluators+MaxEvaluators {
			return 0, -1
		}
		return RoleEvaluator, int(id - evaluators)
	case id%2 == 0:
		return RoleServer, int(id-2) / 2
	default:
		return RoleWorker, int(id-3) / 2
	}
}

// Name returns "server 3", "worker 0", "scheduler" or "node 123".
func Name(id transport.NodeID) string {
	role, rank := Identify(id)
	switch role {
	case RoleScheduler:
		return "scheduler"
	case RoleServer, RoleWorker, RoleEvaluator:
		return fmt.Sprintf("%s %d", role, rank)
	}
	return fmt.Sprintf("node %d", id)
}

// Control commands (Header.Cmd of a TypeControl message).
const (
	CmdRegister  uint16 = iota + 1 // node → scheduler: Register
	CmdAssign                      // scheduler → node: Assign
	CmdRefuse                      // scheduler → node: Refuse
	CmdReady                       // node → scheduler: Ready, handlers running
	CmdStart                       // scheduler → node: Start, the job runs
	CmdHeartbeat                   // both ways, empty
	CmdBarrier                     // node → scheduler: Barrier
	CmdRelease                     // scheduler → node: Barrier (released)
	CmdDone                        // worker or evaluator → scheduler: Done
	CmdShutdown                    // scheduler → node: the job ended well
	CmdAbort                       // scheduler → node: Abort, the job failed
	CmdTrained                     // scheduler → evaluator: every worker is done
	CmdPause                       // scheduler → node: Pause, a node failed and is being replaced
	CmdResume                      // scheduler → node: Resume, the replacement is ready
	CmdFailover                    // scheduler → node: Failover, a server's backup takes over its ranges
	CmdRejoin                      // node → scheduler: Rejoin, what the node knows of a job whose scheduler died
	CmdRejoined                    // scheduler → node: Rejoined, its report was read
	CmdBackup                      // scheduler → server: Backup, copy your ranges to a new backup
	CmdBackedUp                    // server → scheduler: Backup, the new backup holds the copy
)

// Data commands (Header.Cmd of a TypeData message).
const (
	// DataSparse: KV holds the keys (and values of a push).
	DataSparse uint16 = 0
	// DataRange: KV.Keys is {begin, end}, the range [begin, end).
	DataRange uint16 = 1
	// DataError: the answer to a request that failed; Body is the
	// reason.
	DataError uint16 = 2
	// DataTable (a push): KV.Keys is the version, the number of keys and
	// the start of every server of a new Ranges routing table, which the
	// server switches to (keys moving between servers, see package
	// server). DataTake (a pull): KV.Keys is {begin, end}, keys the server
	// owned before its last table, answered with their values and update
	// rule states. DataPut (a push): KV.Keys is {begin, end}, keys the
	// server gained, KV.Vals a Take's answer.
	DataTable uint16 = 3
	DataTake  uint16 = 4
	DataPut   uint16 = 5
	// DataSave (a pull): KV.Keys is {begin, end}, slots of the server's
	// store, answered with their snapshot: keys, lengths (width 0), values
	// and update rule states (see package server, snapshot.go). DataLoad
	// (a push): KV is such a snapshot, which the server installs. They
	// write and restore checkpoints. A DataSave of four keys, the first
	// SaveBegin, SaveChanged or SaveEnd, is a request of an incremental
	// capture (package server, snapshot.go).
	DataSave uint16 = 6
	DataLoad uint16 = 7
	// DataFamily (a push): KV.Keys is {base, stride, n}, the keys base +
	// i·stride for i < n of a table a client spread over the key space;
	// each server finds those it owns by arithmetic instead of a hash map
	// (see package server, family.go).
	DataFamily uint16 = 8
	// DataReplicate (server → its backup, package ps/replica): a request
	// that changes the server's store, forwarded as the server applied
	// it: the request's flags, id and KV, and a Body of the request's
	// meta (MetaSize bytes), then ReplicaSize bytes: the update's
	// sequence number, the worker's rank and the request's data
	// command (AppendReplica). DataReplicaAck (backup → server): Header.ID
	// is the sequence number of the last update the backup has, the body
	// the meta of the updates' epoch (round 0), so that an
	// acknowledgement from before a rollback acknowledges nothing after.
	DataReplicate  uint16 = 9
	DataReplicaAck uint16 = 10
	// DataRound is the data command of a DataReplicate that carries a
	// round's sum under BSP (replication after aggregation): the round is
	// in the meta, KV the keys and their summed gradients, and the
	// worker's rank 0. The acknowledgement of a push of a server that
	// replicates sums has a meta body whose round is the number of rounds
	// every live backup has: the worker keeps its pushes of later rounds
	// to send them again should the server fail.
	DataRound uint16 = 11
	// DataCopy is the data command of a DataReplicate that carries a
	// whole copy of a server's ranges to a new backup (proto.Backup):
	// KV a snapshot of the store (package server, snapshot.go), the
	// update's sequence number that of the last update the copy holds,
	// and after the replication fields of the body the state of the
	// server's clock (AppendCopyState).
	DataCopy uint16 = 12
)

// The kinds of an incremental capture's DataSave requests (KV.Keys[0]).
const (
	SaveBegin   = 1
	SaveChanged = 2
	SaveEnd     = 3
)

// FlagResent marks a worker's request to a server whose ranges a backup
// took over (Failover), sent once the worker knows it: the backup
// serves only such requests, so that the ones sent before, which the
// worker sends again, reach it in order.
const FlagResent transport.Flags = 1 << 8

// ReplicaSize is the size of what DataReplicate adds to a request's
// meta.
const ReplicaSize = 8 + 4 + 2

// AppendReplica appends to the meta of a request of worker rank worker
// and data command cmd the fields of its replication as update seq.
func AppendReplica(meta []byte, seq uint64, worker int, cmd uint16) []byte {
	meta = binary.LittleEndian.AppendUint64(meta, seq)
	meta = binary.LittleEndian.AppendUint32(meta, uint32(worker))
	return binary.LittleEndian.AppendUint16(meta, cmd)
}

// ParseReplica reads the body of a DataReplicate message: the request's
// round and epoch, the update's sequence number, the worker's rank and
// the request's data command.
func ParseReplica(m *transport.Message) (round int64, epoch, seq uint64, worker int, cmd uint16, err error) {
	if len(m.Body) < MetaSize+ReplicaSize || len(m.Body) > MetaSize+ReplicaSize && binary.LittleEndian.Uint16(m.Body[MetaSize+12:]) != DataCopy {
		return 0, 0, 0, 0, 0, fmt.Errorf("%s: replicated update with a %d-byte body, want %d", Name(m.Sender), len(m.Body), MetaSize+ReplicaSize)
	}
	meta := transport.Message{Header: m.Header, Body: m.Body[:MetaSize]}
	if round, epoch, err = ParseMetaEpoch(&meta); err != nil {
		return 0, 0, 0, 0, 0, err
	}
	b := m.Body[MetaSize:]
	return round, epoch, binary.LittleEndian.Uint64(b), int(binary.LittleEndian.Uint32(b[8:])), binary.LittleEndian.Uint16(b[12:]), nil
}

// AppendCopyState appends to the body of a DataCopy the Backup.Seq it
// was asked with and the state of the copied server's clock: the
// pushes it counted, and the number of rounds each worker pushed.
func AppendCopyState(body []byte, seq int, pushes uint64, done []int64) []byte {
	body = binary.LittleEndian.AppendUint64(body, uint64(seq))
	body = binary.LittleEndian.AppendUint64(body, pushes)
	for _, d := range done {
		body = binary.LittleEndian.AppendUint64(body, uint64(d))
	}
	return body
}

// ParseCopyState reads the clock state of a DataCopy of a job of
// workers workers (AppendCopyState).
func ParseCopyState(m *transport.Message, workers int) (seq int, pushes uint64, done []int64, err error) {
	b := m.Body[min(len(m.Body), MetaSize+ReplicaSize):]
	if len(b) != 8*(2+workers) {
		return 0, 0, nil, fmt.Errorf("%s: copy of a server's ranges with %d bytes of clock state, want %d for %d workers", Name(m.Sender), len(b), 8*(2+workers), workers)
	}
	if s := binary.LittleEndian.Uint64(b); s > math.MaxInt32 {
		return 0, 0, nil, fmt.Errorf("%s: copy of a server's ranges asked after %d failovers", Name(m.Sender), s)
	} else {
		seq = int(s)
	}
	b = b[8:]
	pushes = binary.LittleEndian.Uint64(b)
	done = make([]int64, workers)
	for w := range done {
		if done[w] = int64(binary.LittleEndian.Uint64(b[8+8*w:])); done[w] < 0 {
			return 0, 0, nil, fmt.Errorf("%s: copy of a server's ranges: worker %d pushed %d rounds", Name(m.Sender), w, done[w])
		}
	}
	return seq, pushes, done, nil
}

// Register is a node's request to join: sent from its provisional id.
type Register struct {
	Role Role
	// Token is TokenDigest of the node's cluster token, never the token:
	// over TCP the handshake has already proved the token, and this check
	// refuses, on transports without a handshake, a node configured for
	// another cluster.
	Token string
	// Addr is where the scheduler reaches the provisional endpoint.
	Addr string
	// Rank asks for a server (and, for a machine, worker) rank; -1 for
	// any.
	Rank int
	// NumServers and NumWorkers, when positive, are the node's idea of
	// the cluster's size, checked against the scheduler's.
	NumServers, NumWorkers int
	// Host names the machine, for the address book and logs.
	Host string
	// Recover asks for the rank of a failed node of a running job: the
	// node replaces it (the scheduler's Config.RecoverWait).
	Recover bool `json:",omitempty"`
	// Key is the node's public key (X25519, 32 bytes) on transports that
	// authenticate members with link keys (tcp.Config.Identity): the
	// scheduler publishes it under the ids it assigns, so that only this
	// node can prove them. Required by a scheduler whose own endpoint has
	// an identity.
	Key []byte `json:",omitempty"`
	// Job is the JobDigest of the job the node runs, when it read one
	// (colo node --job-file), checked against the scheduler's: nodes of
	// one cluster given different job files would train on different
	// settings, each server with its own rule, and fail later at a
	// barrier or, worse, not at all.
	Job string `json:",omitempty"`
	// JobFields are the JobFields of the job whose digest is Job, by
	// which the scheduler names the fields in which a refused node's job
	// is not its own.
	JobFields map[string]string `json:",omitempty"`
}

// JobDigest returns what Register carries for a job of kind whose value
// is the JSON job: the hex SHA-256 of a label, the kind and the job
// without its insignificant white space (the same file written with
// other indentation has the same digest).
func JobDigest(kind string, job []byte) string {
	var b bytes.Buffer
	if json.Compact(&b, job) != nil {
		b.Reset()
		b.Write(job)
	}
	sum := sha256.Sum256(append([]byte("colo job\x00"+kind+"\x00"), b.Bytes()...))
	return hex.EncodeToString(sum[:])
}

// fieldDigestLen is the length of a field's digest in JobFields, in hex
// digits: enough to tell fields apart, while the job's own digest
// decides.
const fieldDigestLen = 16

// JobFields returns a short digest of each value of the JSON object job,
// by the path of its field, its names joined by dots ("config.rule.lr"):
// each value that is no object with fields of its own (a number, a
// string, an array, an empty object) is one. Nil when job is no JSON
// object.
func JobFields(job []byte) map[string]string {
	var v map[string]json.RawMessage
	if json.Unmarshal(job, &v) != nil {
		return nil
	}
	out := map[string]string{}
	var walk func(prefix string, obj map[string]json.RawMessage)
	walk = func(prefix string, obj map[string]json.RawMessage) {
		for name, raw := range obj {
			path := prefix + name
			var inner map[string]json.RawMessage
			if json.Unmarshal(raw, &inner) == nil && len(inner) > 0 {
				walk(path+".", inner)
				continue
			}
			var b bytes.Buffer
			if json.Compact(&b, raw) != nil {
				b.Reset()
				b.Write(raw)
			}
			sum := sha256.Sum256(append([]byte("colo job field\x00"+path+"\x00"), b.Bytes()...))
			out[path] = hex.EncodeToString(sum[:])[:fieldDigestLen]
		}
	}
	walk("", v)
	return out
}

// JobFieldsDiffer returns the paths, sorted, of the fields whose values
// in the JobFields a and b differ, or that only one of them has.
func JobFieldsDiffer(a, b map[string]string) []string {
	var out []string
	for p, d := range a {
		if e, ok := b[p]; !ok || e != d {
			out = append(out, p)
		}
	}
	for p := range b {
		if _, ok := a[p]; !ok {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

// TokenDigest returns what Register carries for a cluster token: the
// hex SHA-256 of a label and the token, "" for no token. It is no
// secret to whoever passed the handshake, which needs the token itself.
func TokenDigest(token string) string {
	if token == "" {
		return ""
	}
	sum := sha256.Sum256([]byte("colo register token\x00" + token))
	return hex.EncodeToString(sum[:])
}

// Assign is the scheduler's answer to Register.
type Assign struct {
	// Server and Worker are the node ids to use; 0 when the role has
	// none. An evaluator's id is in Worker: it reads the model through a
	// worker's client.
	Server, Worker transport.NodeID
	// Machine is the machine index, for traffic accounting.
	Machine                int
	NumServers, NumWorkers int
	// Job is what the node needs to start its handlers.
	Job Job
	// Epoch is the job's membership epoch: how many times a failed node
	// was replaced (see Pause).
	Epoch uint64 `json:",omitempty"`
	// SchedulerKey is the scheduler's public key when its endpoint has
	// an identity: the node's endpoints then prove link keys to the
	// scheduler and to every member (Peer.Key).
	SchedulerKey []byte `json:",omitempty"`
	// Failovers is the number of failovers of replicated key ranges the
	// job had (the last Failover.Seq), and Moved the server ranks whose
	// own processes failed and whose ranges another server's process
	// serves since: a replacement (Register.Recover) neither sends
	// copies to them nor keeps copies of their ranges (the process
	// serving them does not replicate to it).
	Failovers int   `json:",omitempty"`
	Moved     []int `json:",omitempty"`
	// Held are the server ranks, besides those whose Chain a
	// replacement is in, whose servers replicated to the failed process
	// (new copies made after failovers) and go on doing so to the
	// replacement: it keeps copies of them too, from an empty store (a
	// rollback starts every store again), and reports each once its
	// first update arrives (CmdBackedUp).
	Held []int `json:",omitempty"`
}

// Refuse is the scheduler's refusal of a registration.
type Refuse struct{ Reason string }

// Ready tells the scheduler a node's handlers run and where to reach it.
type Ready struct{ Addr string }

// Peer is one entry of the address book.
type Peer struct {
	ID      transport.NodeID
	Addr    string
	Machine int
	Host    string `json:",omitempty"`
	// Key is the public key the node registered with (Register.Key).
	Key []byte `json:",omitempty"`
}

// Start is the address book, sent to every node once all are ready.
type Start struct {
	Peers []Peer
	// Epoch is the membership epoch (a replacement starts in the epoch
	// of the pause it ends).
	Epoch uint64 `json:",omitempty"`
}

// Pause tells the nodes that Node failed and that the job waits for a
// replacement, in membership epoch Epoch: every call in flight fails
// with ErrPaused, and data messages of earlier epochs are ignored from
// then on. Peers are the nodes that failed with it (a machine's server
// and worker).
type Pause struct {
	Node   transport.NodeID
	Addr   string
	Reason string
	Epoch  uint64
	Peers  []transport.NodeID `json:",omitempty"`
}

// Resume tells the nodes that every failed node of a Pause was replaced:
// the address book of epoch Epoch, with the replacements' addresses.
type Resume struct {
	Epoch uint64
	Peers []Peer
}

// Job is what servers and workers must agree on, set at the scheduler.
type Job struct {
	// Table is the binary routing table (route.Table.MarshalBinary).
	Table []byte
	// Width is the number of values of every key; 0 means per-key
	// lengths.
	Width int
	// Mode and Tau are the consistency model (clock.Config).
	Mode string
	Tau  int
	// Heartbeat and Timeout are the failure detector's settings.
	Heartbeat, Timeout time.Duration
	// Recover is set when the scheduler replaces failed nodes (Pause)
	// instead of ending the job.
	Recover bool `json:",omitempty"`
	// Replicas is the number of backups of each server's ranges
	// (package ps/replica): a failed server's first live backup takes
	// over its ranges (Failover) without a pause. 0: none.
	Replicas int `json:",omitempty"`
	// Standby is set when a scheduler that dies is taken over by another
	// at the same address (sched.Config.Takeover): a node that loses the
	// scheduler reports to it (Rejoin) for up to Timeout instead of
	// ending the job.
	Standby bool `json:",omitempty"`
}

// Rejoin is a node's report to a scheduler that takes over the running
// job of one that died (sched.Config.Takeover): what that scheduler
// knew of the node and the node alone still knows. The node sends it
// from a provisional id, every heartbeat, from when it lost the
// scheduler until a scheduler answers it (Rejoined); the new
// scheduler rebuilds its membership and barriers from the reports of
// every node (sched.Rebuild).
type Rejoin struct {
	// Token is TokenDigest of the node's cluster token.
	Token string
	// Host and Machine are the node's, as in its Assign; Key its public
	// key (Register.Key).
	Host    string
	Machine int
	Key     []byte `json:",omitempty"`
	// Epoch is the node's membership epoch; Paused is set between a
	// Pause and its Resume.
	Epoch  uint64
	Paused bool `json:",omitempty"`
	// Failovers is the number of server failovers the node has the
	// second announcement of (the highest Failover.Seq with an address,
	// or Assign.Failovers for a replacement); Announced the highest
	// Failover.Seq it had the first announcement of. Announced above
	// Failovers is a failover the scheduler died in the middle of.
	Failovers int `json:",omitempty"`
	Announced int `json:",omitempty"`
	// Members are the node's endpoints: its server's and its worker's,
	// then those of the servers its server took over (Moved).
	Members []RejoinMember
	// Released is the last release (with its sum) of each barrier group
	// the node had in epoch Epoch.
	Released []Barrier `json:",omitempty"`
}

// Rejoined is a scheduler's answer to a Rejoin, sent to every endpoint
// of the node: the node stops reporting. TakenOver is set by a scheduler
// that took the job over (it had the reports of every node), clear for
// one that was running the job all along (the node had lost a link to
// it, not the scheduler).
type Rejoined struct {
	Epoch     uint64
	TakenOver bool `json:",omitempty"`
}

// RejoinMember is one endpoint of a node in its Rejoin.
type RejoinMember struct {
	ID   transport.NodeID
	Addr string
	// Done is set once a worker or an evaluator sent Done, with its
	// error, if any, in Err.
	Done bool   `json:",omitempty"`
	Err  string `json:",omitempty"`
	// Trained is set for an evaluator that had Trained.
	Trained bool `json:",omitempty"`
	// Waiting are the member's barrier arrivals not released yet.
	Waiting []Barrier `json:",omitempty"`
	// Moved is set for a server whose ranges the node's server took
	// over (Failover): the node serves them at Addr.
	Moved bool `json:",omitempty"`
	// With replicated key ranges (Job.Replicas), for a server: Backups
	// are the server ranks its ranges are replicated to (the live
	// backups its updates wait for, a new one whose copy is on its way
	// included), Joining the new backups asked for (Backup) whose copy
	// is not sent yet, and Copies the server ranks whose ranges it
	// holds a copy of (its own server's only).
	Backups []int `json:",omitempty"`
	Joining []int `json:",omitempty"`
	Copies  []int `json:",omitempty"`
}

// Failover tells the nodes that server rank Server failed and that
// server rank Backup, which holds a copy of its ranges, serves them in
// its place: first with no Addr (the backup takes over; the servers that
// Server backed up stop waiting for it), then, once the backup listens as
// Server, with the address and key of Server's new endpoint, where the
// workers send again every request Server has not answered.
type Failover struct {
	Server, Backup int
	// Seq numbers the job's failovers from 1.
	Seq    int
	Reason string `json:",omitempty"`
	Addr   string `json:",omitempty"`
	Key    []byte `json:",omitempty"`
}

// Heartbeat is a node's heartbeat (CmdHeartbeat): the address of the
// endpoint it comes from, as in Ready, so that the scheduler counts
// only those of the node that holds the id now, not those of a node
// replaced after a stall that wakes up and sends its own. Empty (an
// older node, or the scheduler's), it counts.
type Heartbeat struct {
	Addr string `json:",omitempty"`
}

// Backup is the scheduler's request to the node serving server rank
// Server's ranges (CmdBackup) to copy them, with their update rules'
// states, to a new backup, server rank Backup's process, while the job
// runs; and the new backup's report to the scheduler (CmdBackedUp)
// that it holds the copy: from then on it takes the ranges over should
// their server fail.
type Backup struct {
	Server, Backup int
	// Seq is the number of failovers of the job when the copy was
	// asked for (Failover.Seq): a Failover numbered after it is of the
	// ranges' server the copy follows, one numbered up to it is of a
	// server before, whose own copies it does not drop.
	Seq int `json:",omitempty"`
}

// Barrier is a node's arrival at, or the scheduler's release of, barrier
// number Seq of a group ("workers", "servers" or "all", or a subgroup of
// the workers, "workers/NAME", see InGroup). A barrier is
// also an all-reduce: each member's Bits are float64 values (their IEEE
// 754 bits, so that NaN and infinities survive the JSON exactly), and the
// release carries their element-wise sum over the group. A plain barrier
// has no values.
type Barrier struct {
	Group string
	Seq   uint64
	Bits  []uint64 `json:",omitempty"`
	// Epoch is the membership epoch of the arrival: the scheduler ignores
	// arrivals of an earlier epoch, and sequence numbers start again at 1
	// in each epoch.
	Epoch uint64 `json:",omitempty"`
}

// InGroup reports whether a node of role r is a member of barrier group
// g: "workers" and "servers" hold the nodes of that role, "all" both, and
// "workers/NAME" the workers again under a sequence of its own, so that
// barriers of one part of a worker (a checkpoint's writer) run beside
// those of another (the training loop) without taking each other's
// numbers. Any other group has no member.
func InGroup(g string, r Role) bool {
	switch {
	case g == "all":
		return r == RoleServer || r == RoleWorker
	case g == "workers" || strings.HasPrefix(g, "workers/") && len(g) > len("workers/"):
		return r == RoleWorker
	case g == "servers":
		return r == RoleServer
	}
	return false
}

// SetValues stores vals in b.Bits, reusing its array.
func (b *Barrier) SetValues(vals []float64) {
	b.Bits = b.Bits[:0]
	for _, v := range vals {
		b.Bits = append(b.Bits, math.Float64bits(v))
	}
	if len(b.Bits) == 0 {
		b.Bits = nil
	}
}

// Values appends the values of b.Bits to dst and returns it.
func (b *Barrier) Values(dst []float64) []float64 {
	for _, x := range b.Bits {
		dst = append(dst, math.Float64frombits(x))
	}
	return dst
}

// Done is a worker's end of job; Err, when set, fails the job.
type Done struct{ Err string }

// Abort ends the job with an error; Node names the failed node, 0 when
// none did.
type Abort struct {
	Node   transport.NodeID
	Addr   string
	Reason string
}

// Control returns a control message with cmd and the JSON of v as body.
func Control(cmd uint16, v any) *transport.Message {
	m := &transport.Message{Header: transport.Header{Type: transport.TypeControl, Cmd: cmd}}
	if v != nil {
		b, err := json.Marshal(v)
		if err != nil {
			panic(fmt.Sprintf("proto: %T does not marshal: %v", v, err))
		}
		m.Body = b
	}
	return m
}

// Decode reads the body of a control message into v.
func Decode(m *transport.Message, v any) error {
	if err := json.Unmarshal(m.Body, v); err != nil {
		return fmt.Errorf("%s: bad %T message: %w", Name(m.Sender), v, err)
	}
	return nil
}

// MetaSize is the size of a data message's body. The answer to an
// evaluator's pull carries one too: the number of pushes the server's
// clock has counted (the workers' steps so far, as that server sees
// them).
const MetaSize = 8

// The body is one little-endian uint64: the round in its low RoundBits
// bits, the membership epoch of the request (see Pause) in the bits
// above, the sign bit clear.
const (
	RoundBits = 48
	MaxRound  = 1<<RoundBits - 1
	MaxEpoch  = 1<<(63-RoundBits) - 1
)

// AppendMeta appends the body of a data message of the given round, in
// epoch 0.
func AppendMeta(dst []byte, round int64) []byte {
	return AppendMetaEpoch(dst, round, 0)
}

// AppendMetaEpoch appends the body of a data message of the given round
// and membership epoch; the epoch must be at most MaxEpoch and the
// round in [0, MaxRound].
func AppendMetaEpoch(dst []byte, round int64, epoch uint64) []byte {
	return binary.LittleEndian.AppendUint64(dst, epoch<<RoundBits|uint64(round)&MaxRound)
}

// ParseMeta reads the round of a data message (the step count of the
// answer to an evaluator's pull).
func ParseMeta(m *transport.Message) (int64, error) {
	r, _, err := ParseMetaEpoch(m)
	return r, err
}

// ParseMetaEpoch reads the round and the membership epoch of a data
// message.
func ParseMetaEpoch(m *transport.Message) (round int64, epoch uint64, err error) {
	if len(m.Body) != MetaSize {
		return 0, 0, fmt.Errorf("%s: data message with a %d-byte body, want %d", Name(m.Sender), len(m.Body), MetaSize)
	}
	x := binary.LittleEndian.Uint64(m.Body)
	if int64(x) < 0 {
		return 0, 0, fmt.Errorf("%s: negative round %d", Name(m.Sender), int64(x))
	}
	return int64(x & MaxRound), x >> RoundBits, nil
}

// NodeError is the failure of one node, as every other node reports it.
type NodeError struct {
	ID   transport.NodeID
	Addr string
	Err  error
}

// Error returns "server 1 (node 4 at 127.0.0.1:7001) failed: ERR".
func (e *NodeError) Error() string {
	where := fmt.Sprintf("node %d", e.ID)
	if e.Addr != "" {
		where += " at " + e.Addr
	}
	return fmt.Sprintf("%s (%s) failed: %v", Name(e.ID), where, e.Err)
}

// Unwrap returns the cause.
func (e *NodeError) Unwrap() error { return e.Err }

// ErrAborted is wrapped by the error of a job that the scheduler aborted.
var ErrAborted = errors.New("job aborted")

// ErrPaused is wrapped by the error of calls that a pause failed: a
// node failed and the scheduler waits for its replacement, after which
// the job goes on from its last checkpoint (see Pause).
var ErrPaused = errors.New("job paused")

// ErrShutdown is returned by operations after the job ended normally.
var ErrShutdown = errors.New("job finished")
