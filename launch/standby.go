package launch

import (
	"crypto/ecdh"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"net"

	"colo/transport/tcp"
)

// StandbyFlags are the flags of a scheduler whose job another scheduler
// takes over if it dies (sched.Config.Standby and Takeover): colo node
// --role scheduler --standby, and, once it died, the same command with
// --takeover and its address. Both must have the same identity, the key
// the nodes' links to the scheduler prove: Cluster passes it to both in
// the environment (COLO_SCHEDULER_IDENTITY, as the token), never on a
// command line.
type StandbyFlags struct {
	// Standby tells the nodes to wait for a scheduler that takes the
	// job over if this one dies (--standby); for a replacement
	// (--recover), that its scheduler may be such a one, not listening
	// yet (node.Config.Standby).
	Standby bool
	// Takeover starts the scheduler that takes over the running job of
	// one that died, at its address (--takeover).
	Takeover bool
	// Identity is the scheduler's X25519 private key in hex
	// (--scheduler-identity); "" for a fresh one.
	Identity string
}

// Register adds --standby, --takeover and --scheduler-identity to fs.
func (s *StandbyFlags) Register(fs *flag.FlagSet) {
	fs.BoolVar(&s.Standby, "standby", false, "scheduler: if it dies, a scheduler started with --takeover at its address takes the job over; the nodes wait for it (up to --timeout) instead of ending the job; with --recover: the scheduler may be such a one, not listening yet (retried within --join-timeout)")
	fs.BoolVar(&s.Takeover, "takeover", false, "scheduler: take over the running job of a --standby scheduler that died, at its address (--scheduler HOST:PORT) and with its identity: the nodes report to it, and the job goes on without a restart")
	fs.StringVar(&s.Identity, "scheduler-identity", "", "scheduler: its X25519 private key in hex, the same for --standby and --takeover (set COLO_SCHEDULER_IDENTITY, not the flag; default a fresh key)")
}

// identity returns the scheduler's key: Identity's, or a fresh one.
func (s StandbyFlags) identity() (*ecdh.PrivateKey, error) {
	if s.Identity == "" {
		return tcp.NewIdentity(), nil
	}
	b, err := hex.DecodeString(s.Identity)
	if err != nil {
		return nil, fmt.Errorf("launch: --scheduler-identity (%s): not hex: %v", EnvName("scheduler-identity"), err)
	}
	k, err := ecdh.X25519().NewPrivateKey(b)
	if err != nil {
		return nil, fmt.Errorf("launch: --scheduler-identity (%s): %v", EnvName("scheduler-identity"), err)
	}
	return k, nil
}

// check refuses a takeover without the address of the scheduler it
// takes over.
func (s StandbyFlags) check(addr string) error {
	if !s.Takeover {
		return nil
	}
	if _, port, err := net.SplitHostPort(addr); err != nil || port == "0" || port == "" {
		return errors.New("launch: --takeover needs the address of the scheduler whose job it takes over (--scheduler HOST:PORT, not port 0)")
	}
	return nil
}

// NewSchedulerIdentity returns a fresh scheduler key in the form of
// --scheduler-identity.
func NewSchedulerIdentity() string { return hex.EncodeToString(tcp.NewIdentity().Bytes()) }
